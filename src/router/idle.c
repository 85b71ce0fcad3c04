/* idle.c - idle unload (docs/router.md "Idle unload"): a service with no
 * request for its idle timeout is put to sleep at its tier, or stopped,
 * by the daemon (router_host.sleep); the next request wakes it through
 * the activator like a down one.
 *
 * Activity is what the router forwards (a request forwarded, a request
 * ended; one in flight keeps the service busy, and so does one waiting for
 * a router-mode service's list or a gated model load: s->n_waiting, kept
 * by relay.c) and what the engine says
 * on its own /metrics (keepalive.h: request and token counters that grow
 * with every completion, gauges of requests running), so clients that
 * call the engine's port directly keep it awake too.  A 1 s timer looks
 * at each ready service with an idle timeout: while it is not yet due the
 * counters are read every quarter of the timeout (1 s to 60 s); once due
 * one more read confirms (nothing grew, nothing runs) before the sleep.
 * An engine that says it has no such counters (a 200 without them, a
 * 404, 405 or 501) is judged on the router's requests alone for the rest
 * of its run.  A read that fails otherwise (an error, another status, a
 * body over 4 MiB, no answer in 5 s) counts as activity (no unload on it)
 * and is tried again; after IDLE_METRICS_FAILS in a row the router judges
 * alone until a read succeeds again.  Nothing is unloaded
 * while a mode switch moves memory or the router drains.
 *
 * keep_alive (a request's, relay.c) overrides the configured timeout for
 * its service until the service leaves (sleeps, stops, fails) or a later
 * routed request gives another or none (none, or null: the configured
 * timeout again, Ollama's rule): 0 unloads it once no request runs,
 * negative never, positive is the timeout.
 *
 * While a sleep is in flight new requests for the service park (as in a
 * drain) and go on when it ends: they wake it again. */
#include "router/keepalive.h"
#include "router/rint.h"
#include "util/clock.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDLE_TICK_MS 1000
#define IDLE_METRICS_MAX ((size_t)4 << 20)
#define IDLE_METRICS_DEADLINE_MS 5000
#define IDLE_POLL_MIN_MS 1000
#define IDLE_POLL_MAX_MS 60000
#define IDLE_METRICS_FAILS 5

/* A sleep asked of the daemon.  rt NULL: the router closed; the callback
 * only frees. */
typedef struct idle_op {
    router *rt;
    rsvc *s; /* a reference */
    char origin[16];
    int64_t idle_ms, timeout_ms;
} idle_op;

int64_t idle_timeout_of(router *rt, const rsvc *s)
{
    if (s->ka_set) return s->ka_ms == KA_KEEP ? -1 : s->ka_ms;
    const preset *p = rt->cfg ? config_preset(rt->cfg, s->id) : NULL;
    if (!p) return -1;
    int64_t t = p->idle_timeout_ms >= 0 ? p->idle_timeout_ms : rt->cfg->set.router.idle_timeout_ms;
    return t > 0 ? t : -1;
}

void idle_touch(rsvc *s)
{
    s->idle_last_ms = clock_mono_ms();
}

/* ---- the sleep ---- */

static void slept(const rh_result *r, void *ud)
{
    idle_op *op = ud;
    rsvc *s = op->s;
    router *rt = op->rt;
    if (rt) {
        s->idle_op = NULL;
        if (r->status == 200) {
            log_info("router: '%s' %s (%s, idle %lld ms, timeout %lld ms)%s%s", s->id,
                     r->slept ? "is asleep" : "was stopped", op->origin, (long long)op->idle_ms,
                     (long long)op->timeout_ms, r->message ? ": " : "",
                     r->message ? r->message : "");
            /* the supervisor's state now, should its event come later */
            rh_svc *h = rt->h.lookup ? rt->h.lookup(rt->h.ud, s->id) : NULL;
            rh_state i;
            if (h && rt->h.state && rt->h.state(rt->h.ud, h, &i)) s->state = i.state;
        } else {
            log_warn(
                "router: '%s': the %s unload failed (%d %s): %s; tried again after another idle "
                "timeout",
                s->id, op->origin, r->status, r->code ? r->code : "",
                r->message ? r->message : "no message");
            idle_touch(s);
            if (s->ka_set && s->ka_ms == 0) s->ka_set = false;
        }
        if (!s->draining)
            while (s->parked)
                relay_redispatch(s->parked); /* they wake it again */
    }
    rsvc_unref(s);
    free(op);
}

static void idle_sleep(router *rt, rsvc *s, int64_t now)
{
    rh_svc *h = rt->h.lookup ? rt->h.lookup(rt->h.ud, s->id) : NULL;
    if (!h || !rt->h.sleep) return;
    idle_op *op = xcalloc(1, sizeof *op);
    op->rt = rt;
    op->s = s;
    rsvc_ref(s);
    bool ka0 = s->ka_set && s->ka_ms == 0;
    snprintf(op->origin, sizeof op->origin, "%s", ka0 ? "keep_alive" : "idle");
    op->idle_ms = now - s->idle_last_ms;
    op->timeout_ms = idle_timeout_of(rt, s);
    s->idle_op = op;
    log_info("router: '%s' had no request for %lld ms (%s %lld ms): unloading it", s->id,
             (long long)op->idle_ms,
             ka0         ? "keep_alive"
             : s->ka_set ? "keep_alive"
                         : "idle timeout",
             (long long)op->timeout_ms);
    rt->h.sleep(rt->h.ud, h, op->origin, slept, op);
}

/* ---- the engine's counters ---- */

static bool may_sleep(router *rt, rsvc *s, int64_t now)
{
    int64_t to = idle_timeout_of(rt, s);
    return s->live && s->state == SVC_READY && !s->idle_op && !s->n_inflight && !s->n_waiting &&
           !s->parked && !s->draining && to >= 0 && now - s->idle_last_ms >= to;
}

static void m_head(upstream_req *r, const http_msg *m, void *ud)
{
    ((rsvc *)ud)->m_status = m->status;
}

static void m_data(upstream_req *r, const view *d, void *ud)
{
    rsvc *s = ud;
    if (s->m_over || s->mbody.len + d->len > IDLE_METRICS_MAX)
        s->m_over = true;
    else
        buf_add(&s->mbody, d->p, d->len);
}

/* A read that failed for a reason that may pass: not idle on it (the
 * engine may be too busy to answer), tried again at the next poll; after
 * IDLE_METRICS_FAILS in a row the router's requests alone decide. */
static void metrics_failed(rsvc *s, const char *why, int64_t now)
{
    s->m_fails++;
    s->m_read_ms = now;
    if (s->m_fails < IDLE_METRICS_FAILS) {
        s->idle_last_ms = now;
        log_debug("router: '%s': GET /metrics failed (%s); not unloading on it, tried again", s->id,
                  why);
    } else if (s->m_fails == IDLE_METRICS_FAILS) {
        log_warn(
            "router: '%s': GET /metrics failed %d times in a row (last: %s); idle is judged on "
            "the router's requests alone until a read succeeds again",
            s->id, s->m_fails, why);
    }
}

static void m_end(upstream_req *r, int err, const char *msg, void *ud)
{
    rsvc *s = ud;
    router *rt = s->rt;
    s->mreq = NULL;
    engine_activity a = {0};
    bool ok = !err && s->m_status == 200 && !s->m_over;
    if (ok) engine_activity_parse(s->mbody.p, s->mbody.len, &a);
    buf_clear(&s->mbody);
    int64_t now = clock_mono_ms();
    bool go = s->m_confirm;
    bool none = !err && ((ok && !a.n) || s->m_status == 404 || s->m_status == 405 ||
                         s->m_status == 501); /* the engine says it has none */
    if (none) {
        if (!s->m_none)
            log_info("router: '%s': its engine's /metrics gives no request counters (status %d); "
                     "idle is judged on the router's requests alone until it starts again",
                     s->id, s->m_status);
        s->m_none = true;
    } else if (!ok) {
        char why[256];
        if (err)
            snprintf(why, sizeof why, "%s", msg ? msg : "failed");
        else if (s->m_over)
            snprintf(why, sizeof why, "status %d, a body over %zu bytes", s->m_status,
                     IDLE_METRICS_MAX);
        else
            snprintf(why, sizeof why, "status %d", s->m_status);
        go = go && s->m_fails >= IDLE_METRICS_FAILS;
        metrics_failed(s, why, now);
    } else {
        if (s->m_fails >= IDLE_METRICS_FAILS)
            log_info("router: '%s': GET /metrics answers again; its counters count as activity",
                     s->id);
        s->m_fails = 0;
        bool grew = s->m_known && a.total != s->m_total;
        if (grew || a.busy > 0) s->idle_last_ms = now;
        if (!s->m_known || grew || a.busy > 0) go = false; /* no baseline yet, or busy: not idle */
        s->m_known = true;
        s->m_total = a.total;
        s->m_read_ms = now;
    }
    if (go && rt && !rt->closing && may_sleep(rt, s, now)) idle_sleep(rt, s, now);
    rsvc_unref(s);
}

static const upstream_cbs m_cbs = {m_head, m_data, m_end, NULL};

static void metrics_read(router *rt, rsvc *s, bool confirm, int64_t now)
{
    upstream_pool *pool;
    char err[512];
    if (rsvc_pool(rt, s, NULL, &pool, err, sizeof err) != 1) {
        metrics_failed(s, err, now);
        return;
    }
    upstream_head h = {.method = {"GET", 3}, .target = {"/metrics", 8}, .body_len = 0};
    buf_clear(&s->mbody);
    s->m_over = false;
    s->m_status = 0;
    s->m_confirm = confirm;
    s->m_t0_ms = now;
    s->mreq = upstream_start(pool, &h, &m_cbs, s);
    if (!s->mreq) return;
    rsvc_ref(s);
    upstream_end(s->mreq);
}

static void metrics_abort(rsvc *s)
{
    if (!s->mreq) return;
    upstream_abort(s->mreq); /* no callback after this */
    s->mreq = NULL;
    buf_clear(&s->mbody);
    rsvc_unref(s);
}

/* ---- the check ---- */

static void check(router *rt, rsvc *s, int64_t now, bool moving)
{
    if (s->mreq && now - s->m_t0_ms > IDLE_METRICS_DEADLINE_MS) {
        log_warn("router: '%s': GET /metrics did not answer within %d ms", s->id,
                 IDLE_METRICS_DEADLINE_MS);
        metrics_abort(s);
        metrics_failed(s, "no answer in time", now);
    }
    if (!s->live || s->remote || s->state != SVC_READY || s->idle_op || s->mreq) return;
    if (s->n_inflight || s->n_waiting || s->parked || s->draining) {
        s->idle_last_ms = now; /* busy */
        return;
    }
    int64_t to = idle_timeout_of(rt, s);
    if (to < 0 || moving) return;
    if (now - s->idle_last_ms >= to) {
        if (to == 0 || s->m_none || s->m_fails >= IDLE_METRICS_FAILS)
            idle_sleep(rt, s, now);
        else
            metrics_read(rt, s, true, now);
        return;
    }
    int64_t poll = to / 4 < IDLE_POLL_MIN_MS   ? IDLE_POLL_MIN_MS
                   : to / 4 > IDLE_POLL_MAX_MS ? IDLE_POLL_MAX_MS
                                               : to / 4;
    if (!s->m_none && now - s->m_read_ms >= poll) metrics_read(rt, s, false, now);
}

static void tick(uv_timer_t *t)
{
    router *rt = t->data;
    if (rt->closing || !rt->h.sleep) return;
    int64_t now = clock_mono_ms();
    char cur[256];
    bool moving = rt->draining || (rt->h.switching && rt->h.switching(rt->h.ud, cur, sizeof cur));
    for (size_t i = 0; i < rt->n_svcs; i++)
        check(rt, rt->svcs[i], now, moving);
}

void idle_request_ended(router *rt, rsvc *s)
{
    idle_touch(s);
    if (s->ka_set && s->ka_ms == 0 && !s->n_inflight && rt->idle_init && !rt->closing)
        uv_timer_start(&rt->idle_kick, tick, 0, 0); /* from a later loop turn */
}

void idle_on_state(router *rt, rsvc *s, svc_state st)
{
    if (st == SVC_READY) { /* a new run (or a wake): its counters start afresh */
        idle_touch(s);
        s->m_known = s->m_none = false;
        s->m_fails = 0;
        s->m_read_ms = 0;
    } else if (st == SVC_DOWN || st == SVC_SLEEPING || st == SVC_FAILED) {
        s->ka_set = false;
    }
}

void idle_init(router *rt)
{
    uv_timer_init(rt->loop, &rt->idle_timer);
    uv_timer_init(rt->loop, &rt->idle_kick);
    rt->idle_timer.data = rt;
    rt->idle_kick.data = rt;
    rt->idle_init = true;
    uv_timer_start(&rt->idle_timer, tick, IDLE_TICK_MS, IDLE_TICK_MS);
}

void idle_close(router *rt, void (*closed)(uv_handle_t *h))
{
    for (size_t i = 0; i < rt->n_svcs; i++) {
        rsvc *s = rt->svcs[i];
        metrics_abort(s);
        if (s->idle_op) {
            s->idle_op->rt = NULL; /* its callback only frees */
            s->idle_op = NULL;
        }
    }
    if (!rt->idle_init) return;
    rt->idle_init = false;
    uv_close((uv_handle_t *)&rt->idle_timer, closed);
    uv_close((uv_handle_t *)&rt->idle_kick, closed);
}
