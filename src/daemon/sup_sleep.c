/* sup_sleep.c - residency tiers (supervisor.h sup_sleep_svc, and the wake
 * of a start on a sleeping record): the tier a service runs at, the sleep
 * (the gate for l1, the engine's calls through daemon/tiercall.c, the
 * confirmation, the measured asleep footprint), the wake and its fallback
 * (a verified stop, then one cold start), and the residency fields of
 * sup_holdings and the service's view.
 *
 * A sleep runs while the service is ready (its health probe stopped): the
 * state becomes sleeping only when the engine confirmed it (EV_SLEPT).  A
 * wake is a start: SLEEPING + EV_START is admitted on the load slot like
 * one (its need minus what it holds asleep), then the tier's wake calls
 * stand where a spawn would, and the readiness probe and the canary
 * follow as after a spawn. */
#include "daemon/sup_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/preset.h"
#include "core/policy.h"
#include "daemon/tiercall.h"
#include "drivers/driver.h"
#include "util/clock.h"
#include "util/log.h"

#define SLEEP_CONFIRM_MS 10000

typedef struct sleep_op {
    svc *v;
    uint64_t gen;
    tiercall *tc;
    int tier;
    int64_t t0; /* mono */
    char origin[16];
    char *why;      /* a fallback's reason */
    bool fell_back; /* the stop is a fallback (not the tier stop of sleep_mode none) */
    bool left;      /* it left ready meanwhile: a stop's waiter ends the sleep */
    uint64_t res;   /* l1: the host copy's reservation (sup_reserve_extra); 0 none */
    bool crashed;   /* it left ready because its engine exited (not a stop) */
    bool wake;      /* a wake's calls (sv_wake_it), not a sleep */
} sleep_op;

static bool snap_unified(const snapshot *snap)
{
    for (size_t g = 0; snap && g < snap->ngpus; g++)
        if (snap->gpus[g].unified) return true;
    return false;
}

static bool last_unified(const svc *v)
{
    return snap_unified(hostmon_last(v->s->env.hm, NULL));
}

int sv_tier_of(const svc *v)
{
    const preset *p = sv_preset_of(v);
    if (!p) return TIER_STOP;
    return tier_for(p->sleep, p->driver, last_unified(v), sv_set_of(v->s)->memory.unified_sleep);
}

/* What v holds (or will hold) awake: its footprint of the hash it runs, else its admission. */
static void awake_need(const svc *v, need *out)
{
    memset(out, 0, sizeof *out);
    if (v->has_fp && v->run_hash[0] && !strcmp(v->fp.hash, v->run_hash)) {
        snprintf(out->source, sizeof out->source, "measured");
        out->host_bytes = v->fp.host_bytes;
        out->ngpu = v->fp.ngpu < HOST_MAX_GPUS ? v->fp.ngpu : HOST_MAX_GPUS;
        for (size_t g = 0; g < out->ngpu; g++) {
            out->gpu[g].index = v->fp.gpu[g].index;
            out->gpu[g].bytes = v->fp.gpu[g].bytes;
        }
    } else if (v->has_admitted) {
        *out = v->admitted;
    }
}

static void need_of_fp(const footprint *f, need *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->source, sizeof out->source, "measured");
    out->host_bytes = f->host_bytes;
    out->ngpu = f->ngpu < HOST_MAX_GPUS ? f->ngpu : HOST_MAX_GPUS;
    for (size_t g = 0; g < out->ngpu; g++) {
        out->gpu[g].index = f->gpu[g].index;
        out->gpu[g].bytes = f->gpu[g].bytes;
    }
}

/* The stored sleep row of v's running hash at tier t: 1 found. */
static int stored(const svc *v, int t, sleep_fp *out)
{
    char err[256];
    if (!v->s->env.st || !v->run_hash[0] || t == TIER_STOP) return 0;
    int rc = store_sleep_get(v->s->env.st, v->run_hash, t, out, err, sizeof err);
    if (rc < 0) log_warn("supervisor: '%s': %s", v->id, err);
    return rc;
}

void sv_holding_tiers(svc *v, sup_holding *h)
{
    bool uni = last_unified(v);
    h->tier = v->state == SVC_SLEEPING ? (tier)v->zz_tier : (tier)sv_tier_of(v);
    awake_need(v, &h->awake_need);
    h->asleep = v->state == SVC_SLEEPING;
    sleep_fp f;
    int have = stored(v, h->tier, &f);
    if (h->asleep) {
        h->asleep_need = v->zz_held;
        h->asleep_measured = v->zz_measured;
    } else if (have == 1 && !uni) {
        need_of_fp(&f.fp, &h->asleep_need);
        h->asleep_measured = true;
    } else {
        tier_asleep_need(h->tier, &h->awake_need, 0, uni, &h->asleep_need);
    }
    h->wake_measured = have == 1 && f.wake_ms >= 0;
    h->wake_ms = h->wake_measured ? f.wake_ms
                                  : tier_wake_prior_ms(h->tier, &h->awake_need, 0,
                                                       v->load_ms > 0 ? v->load_ms : -1);
}

void sv_sleep_view(svc *v, sup_svc_view *o)
{
    o->tier = v->state == SVC_SLEEPING ? v->zz_tier : sv_tier_of(v);
    o->asleep = v->state == SVC_SLEEPING;
    o->asleep_held = v->zz_held;
    o->asleep_measured = v->zz_measured;
    o->asleep_since_ms = v->zz_since_ms;
    sleep_fp f;
    o->wake_ms = stored(v, o->tier, &f) == 1 ? f.wake_ms : -1;
}

/* ------------------------------------------------------------------ */
/* the sleep */

/* A snapshot, then fn whatever happened meanwhile (fn checks the op is
 * still v's and current: a sleep's waiters must be answered). */
typedef struct zz_take {
    svc *v;
    void (*fn)(svc *v, const snapshot *snap);
} zz_take;

static void zz_took(const snapshot *snap, void *ud)
{
    zz_take *c = ud;
    sup *s = c->v->s;
    s->takes--;
    c->fn(c->v, snap);
    free(c);
    sv_maybe_shutdown_done(s);
}

static void zz_take_then(svc *v, void (*fn)(svc *v, const snapshot *snap))
{
    zz_take *c = xcalloc(1, sizeof *c);
    c->v = v;
    c->fn = fn;
    v->s->takes++;
    hostmon_take(v->s->env.hm, zz_took, c);
}

static void op_free(sleep_op *op)
{
    sup_unreserve(op->v->s, op->res);
    if (op->v->sop == op) op->v->sop = NULL;
    free(op->why);
    free(op);
}

/* The sleep's end: its waiters, a `sleep` event. */
static void sleep_end(svc *v, const sup_result *r, int t, int64_t ms, const char *why)
{
    char data[700];
    buf d = BUF_INIT;
    buf_printf(&d, "{\"tier\":\"%s\",\"ms\":%lld,\"fell_back\":%s,\"why\":", tier_names[t],
               (long long)ms, r->fell_back ? "true" : "false");
    buf_json_str_or_null(&d, why);
    buf_addc(&d, '}');
    snprintf(data, sizeof data, "%s", d.p);
    buf_release(&d);
    char words[600];
    if (r->slept)
        snprintf(words, sizeof words, "asleep (%s) after %lld ms", tier_names[t], (long long)ms);
    else
        snprintf(words, sizeof words, "%s", r->message ? r->message : "stopped");
    if (r->outcome == SUP_OK) sv_emit(v->s, v->id, "sleep", NULL, NULL, words, data);
    waiter *w = v->sleeps;
    v->sleeps = NULL;
    sv_call_waiters(w, r);
}

/* Stopped (or restarted) while it went to sleep: the sleep's waiters hear
 * it.  Stopped: a stop instead of the sleep, so fell_back with its reason. */
static void stale_sleep(sleep_op *op)
{
    svc *v = op->v;
    /* the engine died meanwhile (failed, or down with a restart scheduled):
     * not a clean leave, whoever asked must not count it as one */
    bool crashed =
        op->crashed || v->state == SVC_FAILED || (v->state == SVC_DOWN && v->next_restart_ms);
    bool gone = v->state == SVC_DOWN || v->state == SVC_STOPPING;
    char *m;
    if (crashed) {
        char ex[96] = "it exited";
        if (v->has_exit && v->exit_sig)
            snprintf(ex, sizeof ex, "killed by signal %d", v->exit_sig);
        else if (v->has_exit)
            snprintf(ex, sizeof ex, "exited with code %d", v->exit_code);
        m = xasprintf("'%s' died while it went to sleep (%s)%s", v->id, ex,
                      v->state == SVC_FAILED ? ": failed"
                      : v->next_restart_ms   ? ": a restart is scheduled"
                                             : "");
    } else {
        m = xasprintf("'%s' was %s while it went to sleep", v->id, gone ? "stopped" : "restarted");
    }
    sup_result r = {.outcome = crashed ? SUP_START_FAILED
                               : gone  ? SUP_OK
                                       : SUP_CONFLICT,
                    .message = m,
                    .tier = TIER_STOP,
                    .fell_back = gone || crashed};
    int t = op->tier;
    int64_t ms = clock_mono_ms() - op->t0;
    op_free(op); /* before the waiters: one that asks for a sleep again starts a new one */
    sleep_end(v, &r, t, ms, m);
    free(m);
}

static void fallback_stopped(const sup_result *r, void *ud)
{
    sleep_op *op = ud;
    svc *v = op->v;
    sup_result out = {.outcome = r->outcome,
                      .message = r->outcome == SUP_OK ? op->why : r->message,
                      .fell_back = op->fell_back,
                      .tier = TIER_STOP,
                      .ms = clock_mono_ms() - op->t0};
    int t = op->tier;
    char *why = op->why;
    op->why = NULL;
    op_free(op); /* before the waiters: one that asks for a sleep again starts a new one */
    sleep_end(v, &out, t, out.ms, why);
    free(why);
}

/* Stop instead (the verified stop of sup_stop); why says so.  fb: a
 * fallback (false: the tier is stop by configuration). */
static void fall_back(sleep_op *op, const char *why, bool fb)
{
    free(op->why);
    op->why = xstrdup(why);
    sup_unreserve(op->v->s, op->res); /* no host copy is made */
    op->res = 0;
    op->fell_back = fb;
    op->gen = 0;
    sup_stop_svc(op->v->s, op->v, op->origin, fallback_stopped, op);
}

/* What the group holds now: host RSS of the group, GPU per process from NVML. */
static void measure_group(const svc *v, const snapshot *snap, footprint *f)
{
    pid_t pids[1024];
    size_t np = 0;
    memset(f, 0, sizeof *f);
    snprintf(f->hash, sizeof f->hash, "%s", v->run_hash);
    snprintf(f->service, sizeof f->service, "%s", v->id);
    f->measured_at_ms = sv_wall_ms();
    f->host_bytes = proctree_group_rss(NULL, v->pgid, pids, 1024, &np);
    for (size_t g = 0; g < snap->ngpus && f->ngpu < HOST_MAX_GPUS; g++) {
        const gpu_dev *dev = &snap->gpus[g];
        uint64_t sum = 0;
        for (size_t i = 0; i < dev->nprocs; i++)
            for (size_t k = 0; k < np; k++)
                if ((pid_t)dev->procs[i].pid == pids[k] && dev->procs[i].used_bytes != UINT64_MAX)
                    sum += dev->procs[i].used_bytes;
        f->gpu[f->ngpu].index = dev->index;
        f->gpu[f->ngpu].bytes = sum;
        f->ngpu++;
    }
}

/* Confirmed asleep: measure, store, state sleeping. */
static void asleep_measured(svc *v, const snapshot *snap)
{
    sleep_op *op = v->sop;
    if (!op || op->left || op->wake) return; /* left ready: the stop's waiter ends it */
    if (op->gen != v->gen || v->state != SVC_READY) {
        stale_sleep(op);
        return;
    }
    int64_t ms = clock_mono_ms() - op->t0;
    bool uni = snap_unified(snap);
    need awake;
    awake_need(v, &awake);
    if (uni) { /* the group's figures say nothing of the pool it still holds: the prediction */
        tier_asleep_need(op->tier, &awake, 0, true, &v->zz_held);
        v->zz_measured = false;
    } else {
        footprint f;
        measure_group(v, snap, &f);
        need_of_fp(&f, &v->zz_held);
        v->zz_measured = true;
        sleep_fp row = {.tier = op->tier, .fp = f, .sleep_ms = ms, .wake_ms = -1};
        snprintf(row.hash, sizeof row.hash, "%s", v->run_hash);
        char err[256];
        if (v->s->env.st && v->run_hash[0] &&
            store_sleep_put(v->s->env.st, &row, err, sizeof err) != 0)
            log_warn("supervisor: '%s': cannot store the sleep footprint: %s", v->id, err);
    }
    v->zz_tier = op->tier;
    v->zz_ms = ms;
    v->zz_since_ms = sv_wall_ms();
    char words[96];
    snprintf(words, sizeof words, "asleep (%s) after %lld ms", tier_names[op->tier], (long long)ms);
    sv_feed(v, EV_SLEPT, words);
    sup_result r = {.outcome = SUP_OK, .slept = true, .tier = op->tier, .ms = ms};
    int t = op->tier;
    op_free(op);
    sleep_end(v, &r, t, ms, NULL);
}

static void stale_sleep(sleep_op *op);

static void left_stopped(const sup_result *r, void *ud)
{
    (void)r;
    stale_sleep(ud);
}

void sv_sleep_left(svc *v)
{
    sleep_op *op = v->sop;
    if (!op || !op->gen || op->left || v->waking) return; /* none, a fallback's stop, a wake */
    op->left = true;
    op->crashed = v->exited;             /* a stop leaves ready before the exit; a crash after it */
    if (op->tc) tiercall_cancel(op->tc); /* the engine's answer no longer matters */
    op->tc = NULL;
    if (v->state != SVC_STOPPING) { /* a crash, or a restart (unhealthy): no stop to wait for */
        stale_sleep(op);
        return;
    }
    waiter *w = xcalloc(1, sizeof *w), **pp = &v->stops; /* answered once the stop is done */
    w->cb = left_stopped;
    w->ud = op;
    while (*pp)
        pp = &(*pp)->next;
    *pp = w;
}

static void slept(tc_result res, const char *why, const char *models, int64_t ms, void *ud)
{
    sleep_op *op = ud;
    svc *v = op->v;
    (void)ms;
    op->tc = NULL;
    if (op->gen != v->gen || v->state != SVC_READY) {
        stale_sleep(op);
        return;
    }
    char msg[600];
    if (res == TC_OK) {
        snprintf(v->zz_models, sizeof v->zz_models, "%s", models ? models : "");
        zz_take_then(v, asleep_measured);
        return;
    }
    if (res == TC_UNSUPPORTED) {
        v->zz_unsupported = true;
        snprintf(msg, sizeof msg, "the engine does not support sleep (%s); stopped instead", why);
    } else if (strncmp(why, "the engine did not confirm", 26) == 0)
        snprintf(msg, sizeof msg, "%s; stopped instead", why);
    else
        snprintf(msg, sizeof msg, "the sleep failed (%s); stopped instead", why);
    fall_back(op, msg, true);
}

static void sleep_calls(sleep_op *op)
{
    svc *v = op->v;
    tiercall_spec sp = {.host = v->host,
                        .port = v->port,
                        .tier = op->tier,
                        .timeout_ms = v->startup_timeout_ms + SLEEP_CONFIRM_MS,
                        .confirm_ms = SLEEP_CONFIRM_MS};
    sv_stop_probe(v); /* no health probes while it goes to sleep and sleeps */
    op->tc = tiercall_sleep(v->s->env.loop, &sp, slept, op);
}

/* l1's gate: the weights' copy into pinned host RAM must fit. */
static void gated(svc *v, const snapshot *snap)
{
    sleep_op *op = v->sop;
    if (!op || op->left || op->wake) return; /* left ready: the stop's waiter ends it */
    if (op->gen != v->gen || v->state != SVC_READY) {
        stale_sleep(op);
        return;
    }
    need awake, adm;
    awake_need(v, &awake);
    if (tier_sleep_admission(op->tier, &awake, 0, snap_unified(snap), &adm)) {
        reservation res[64];
        size_t nres = sup_reservations(v->s, res, 64);
        gate_policy pol;
        policy_from_settings(sv_set_of(v->s), &pol);
        verdict vd;
        gate_check(snap, &adm, res, nres, v->id, &pol, &vd);
        if (!vd.ok) {
            char msg[600];
            snprintf(msg, sizeof msg, "sleep refused by the gate: %s; stopped instead", vd.reason);
            sv_emit(v->s, v->id, "gate", NULL, NULL, vd.reason, NULL);
            fall_back(op, msg, true);
            return;
        }
        /* the copy is the sleep's until the asleep measurement shows it:
         * every other gate counts it meanwhile */
        op->res = sup_reserve_extra(v->s, v->id, &adm);
    }
    sleep_calls(op);
}

/* A sleep answered at once (no op). */
static void answer(sup_cb cb, void *ud, sup_outcome o, const char *msg, bool was_asleep, int t)
{
    sup_result r = {.outcome = o, .message = msg, .slept = was_asleep, .tier = t};
    if (cb) cb(&r, ud);
}

static void push_sleeper(svc *v, sup_cb cb, void *ud)
{
    waiter *w = xcalloc(1, sizeof *w), **pp = &v->sleeps;
    w->cb = cb;
    w->ud = ud;
    while (*pp)
        pp = &(*pp)->next;
    *pp = w;
}

/* A state a sleep cannot begin from: answered (true). */
static bool refused_now(sup *s, svc *v, sup_cb cb, void *ud)
{
    char m[400];
    if (s->shutting) {
        answer(cb, ud, SUP_SHUTTING_DOWN, "the daemon is shutting down", false, TIER_STOP);
        return true;
    }
    if (v->state == SVC_SLEEPING) {
        answer(cb, ud, SUP_OK, NULL, true, v->zz_tier);
        return true;
    }
    if (v->state == SVC_DOWN && !v->killing) {
        snprintf(m, sizeof m, "'%s' is down", v->id);
        answer(cb, ud, SUP_OK, m, false, TIER_STOP);
        return true;
    }
    if (v->state == SVC_READY && v->model_ops > 0) {
        snprintf(m, sizeof m,
                 "service '%s': a model load or unload runs in its engine: it can sleep once that "
                 "ends",
                 v->id);
        answer(cb, ud, SUP_CONFLICT, m, false, TIER_STOP);
        return true;
    }
    if (v->state != SVC_READY || v->slot || v->killing) {
        snprintf(m, sizeof m, "service '%s' is %s: it can sleep once it is ready", v->id,
                 v->killing ? "being stopped" : svc_state_names[v->state]);
        answer(cb, ud, SUP_CONFLICT, m, false, TIER_STOP);
        return true;
    }
    return false;
}

void sup_sleep_svc(sup *s, sup_svc *v, const char *origin, sup_cb cb, void *ud)
{
    if (v->sop && !v->sop->wake) { /* a sleep in flight: join it */
        push_sleeper(v, cb, ud);
        return;
    }
    if (refused_now(s, v, cb, ud)) return;
    push_sleeper(v, cb, ud);
    sleep_op *op = xcalloc(1, sizeof *op);
    op->v = v;
    op->gen = v->gen;
    op->t0 = clock_mono_ms();
    op->tier = sv_tier_of(v);
    snprintf(op->origin, sizeof op->origin, "%s", origin ? origin : "api");
    v->sop = op;
    if (op->tier == TIER_STOP) {
        const preset *p = sv_preset_of(v);
        bool off = p && p->sleep != SLEEP_NONE; /* it would sleep, but not on this host */
        fall_back(op,
                  off ? "sleep is off on a unified-memory host (memory.unified_sleep: false): "
                        "stopped"
                      : "its tier is stop (sleep_mode none): stopped",
                  off);
    } else if (v->zz_unsupported) {
        fall_back(op, "the engine does not support sleep (it answered 404 before); stopped instead",
                  true);
    } else if (op->tier == TIER_L1) {
        zz_take_then(v, gated);
    } else {
        sleep_calls(op);
    }
}

void sup_model_op_mark(sup_svc *v, bool begin)
{
    v->model_ops += begin ? 1 : v->model_ops > 0 ? -1 : 0;
}

bool sup_sleep_in_flight(const sup_svc *v)
{
    return (v->sop && !v->sop->wake) || v->sleeps;
}

void sup_sleep(sup *s, const char *id, const char *origin, sup_cb cb, void *ud)
{
    sup_svc *v = sup_lookup(s, id);
    if (!v) {
        char m[300];
        snprintf(m, sizeof m, "no service '%s' is configured", id);
        answer(cb, ud, SUP_NOT_FOUND, m, false, TIER_STOP);
        return;
    }
    sup_sleep_svc(s, v, origin, cb, ud);
}

/* ------------------------------------------------------------------ */
/* the wake */

void sv_wake_need(const svc *v, need *n)
{
    n->host_bytes =
        n->host_bytes > v->zz_held.host_bytes ? n->host_bytes - v->zz_held.host_bytes : 0;
    for (size_t i = 0; i < n->ngpu; i++)
        for (size_t k = 0; k < v->zz_held.ngpu; k++)
            if (v->zz_held.gpu[k].index == n->gpu[i].index)
                n->gpu[i].bytes = n->gpu[i].bytes > v->zz_held.gpu[k].bytes
                                      ? n->gpu[i].bytes - v->zz_held.gpu[k].bytes
                                      : 0;
}

static void woke(tc_result res, const char *why, const char *models, int64_t ms, void *ud)
{
    sleep_op *op = ud;
    svc *v = op->v;
    (void)models;
    (void)ms;
    op->tc = NULL;
    bool current = op->gen == v->gen && v->state == SVC_STARTING && v->waking;
    op_free(op);
    if (!current) return; /* stopped or exited meanwhile: the kill ends the start */
    if (res == TC_OK) {
        sv_loading_again(v); /* the readiness probe and the canary, as after a spawn */
        return;
    }
    free(v->wake_fail);
    v->wake_fail = xstrdup(why);
    char *m = xasprintf("'%s': the wake failed (%s)", v->id, why);
    sv_set_pending(v, SUP_START_FAILED, m);
    sv_feed(v, EV_EXITED, m); /* starting -> failed: the verified stop, then the cold start */
    free(m);
}

void sv_wake_it(svc *v, const preset *p)
{
    sleep_op *op = xcalloc(1, sizeof *op);
    op->v = v;
    op->gen = v->gen;
    op->t0 = clock_mono_ms();
    op->tier = v->zz_tier;
    op->wake = true;
    v->sop = op;
    v->ran = true;
    v->run_from = v->log ? logring_end(v->log) : 0;
    v->probe_err[0] = 0;
    const char *models = v->zz_models;
    if (p->llama.default_model && *p->llama.default_model) models = p->llama.default_model;
    tiercall_spec sp = {.host = v->host,
                        .port = v->port,
                        .tier = op->tier,
                        .timeout_ms = v->startup_timeout_ms,
                        .models = models};
    sv_emit(v->s, v->id, "spawn", NULL, NULL, "waking: the engine's wake calls", NULL);
    op->tc = tiercall_wake(v->s->env.loop, &sp, woke, op);
}

static void wake_event(svc *v, int64_t ms, bool fell_back, const char *why)
{
    buf d = BUF_INIT;
    buf_printf(&d, "{\"tier\":\"%s\",\"ms\":%lld,\"fell_back\":%s,\"why\":", tier_names[v->zz_tier],
               (long long)ms, fell_back ? "true" : "false");
    buf_json_str_or_null(&d, why);
    buf_addc(&d, '}');
    char words[700];
    if (fell_back)
        snprintf(words, sizeof words, "%s", why);
    else
        snprintf(words, sizeof words, "woke (%s) in %lld ms", tier_names[v->zz_tier],
                 (long long)ms);
    sv_emit(v->s, v->id, "wake", NULL, NULL, words, d.p);
    buf_release(&d);
}

/* A wake ready: its time stored per config hash and tier. */
static void wake_store(svc *v, int64_t ms)
{
    sleep_fp f;
    char err[256];
    if (stored(v, v->zz_tier, &f) != 1) return;
    f.wake_ms = ms;
    if (store_sleep_put(v->s->env.st, &f, err, sizeof err) != 0)
        log_warn("supervisor: '%s': cannot store the wake time: %s", v->id, err);
}

/* A wake's calls still in flight when its start ends otherwise (stopped,
 * the engine gone, a cold start after it): cancelled, the op freed, so no
 * sleep joins it and nothing counts it as a sleep in flight. */
static void wake_op_drop(svc *v)
{
    sleep_op *op = v->sop;
    if (!op || !op->wake) return;
    if (op->tc) tiercall_cancel(op->tc);
    op->tc = NULL;
    op_free(op);
}

bool sv_wake_end(svc *v, const char *outcome, sup_result *r)
{
    if (v->cold_after_stop) { /* the end of the cold start after a failed wake */
        v->cold_after_stop = false;
        r->fell_back = true;
        if (r->outcome == SUP_OK) r->message = v->wake_fail;
        return false;
    }
    if (!v->waking) return false;
    v->waking = false;
    wake_op_drop(v);
    int64_t ms = clock_mono_ms() - v->wake_t0;
    if (!strcmp(outcome, "ready")) {
        v->load_ms = v->zz_load_ms; /* the cold load's time stays what a plan compares with */
        r->woke = true;
        r->tier = v->zz_tier;
        r->ms = ms;
        wake_event(v, ms, false, NULL);
        wake_store(v, ms);
        memset(&v->zz_held, 0, sizeof v->zz_held);
        v->zz_since_ms = 0;
        return false;
    }
    if (strcmp(outcome, "failed") != 0 || v->s->shutting)
        return false; /* refused, or stopped by someone */
    char reason[320];
    if (v->wake_fail) /* the wake calls' own reason */
        snprintf(reason, sizeof reason, "%s", v->wake_fail);
    else { /* a timeout, an exit, the canary: the first line of the start's message */
        const char *m = r->message ? r->message : "no reason";
        snprintf(reason, sizeof reason, "%.*s", (int)strcspn(m, "\n"), m);
    }
    free(v->wake_fail);
    v->wake_fail = xasprintf("wake failed (%s): stopped and started cold", reason);
    wake_event(v, ms, true, v->wake_fail);
    v->cold_after_stop = true;
    return true;
}

void sv_sleep_cancel(svc *v)
{
    sleep_op *op = v->sop;
    if (!op) return;
    if (op->tc) tiercall_cancel(op->tc);
    op->tc = NULL;
    sup_result r = {.outcome = SUP_SHUTTING_DOWN, .message = "the daemon is shutting down"};
    waiter *w = v->sleeps;
    v->sleeps = NULL;
    sv_call_waiters(w, &r);
    if (op->gen && !op->left) op_free(op); /* else a stop's waiter holds it and frees it */
}
