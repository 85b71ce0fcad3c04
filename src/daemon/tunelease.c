/* tunelease.c - the tune lease (tunelease.h).
 *
 * Design: a lease is a record of where the host was and a timer; nothing
 * else holds the host.  Its end (a release, or a timer that no heartbeat
 * renewed) plans the restore at once, so the caller can say what will be
 * done, then runs it as a chain of asynchronous steps: the tuned service
 * (restart as configured, or stop), then the mode.  Each step decides
 * again when it begins, on what runs at that moment (a person may have
 * acted meanwhile): the switch back happens only when the running set is
 * not the mode the lease found.  From its end the lease is "last" in
 * GET /tune, its restore's progress with it; a new lease waits until the
 * restore is done.  The store keeps the lease (held, or the last) as
 * JSON text, one row, written at each change of the run's state. */
#include "daemon/tunelease.h"
#include "daemon/api_services.h"
#include "daemon/switch.h"
#include "util/clock.h"
#include "util/log.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define MAX_RUN 64
#define MAX_STEPS 2

typedef struct tl_step {
    const char *action; /* "restart", "stop", "switch" */
    char *target;       /* the service, or the mode */
    int ok;             /* 1, 0; -1 not done yet */
    char *message;      /* why it failed, or a note; NULL */
} tl_step;

typedef struct lease {
    tunelease *t;
    char id[32];
    char *service;
    bool allow_traffic;
    int64_t ttl_ms;
    char *mode_before; /* NULL: the running set was no mode */
    strv running_before;
    svc_state was;
    char *overrides_before; /* JSON text, NULL: none */
    int64_t created_ms, renewed_ms, renewed_mono;
    char *state;        /* JSON text */
    const char *ended;  /* NULL while held: "released", "expired" */
    int64_t ended_ms;
    const char *restore; /* NULL while held: "running", "done", "failed" */
    tl_step steps[MAX_STEPS];
    size_t nsteps, at; /* the step running */
    int phase;         /* of the restore: 0 the service, 1 the mode, 2 done */
} lease;

struct tunelease {
    gpumodd *d;
    uv_timer_t timer;
    bool closing;
    lease *cur;            /* held */
    lease *ending;         /* ended, its restore running */
    char *last;            /* the last lease that ended, its restore done: JSON text */
    char last_id[32];
    char *last_words;      /* how it ended, for a 404 */
};

/* ---- pure -------------------------------------------------------------- */

bool tl_state_runs(svc_state st)
{
    return st == SVC_STARTING || st == SVC_READY || st == SVC_UNHEALTHY;
}

tl_action tl_restore_action(bool ran_before, svc_state now, bool same_overrides)
{
    if (ran_before) return tl_state_runs(now) && same_overrides ? TL_KEEP : TL_RESTART;
    return now == SVC_DOWN ? TL_KEEP : TL_STOP;
}

void tl_take_release(tl_take *t)
{
    free(t->service);
    free(t->state);
    memset(t, 0, sizeof *t);
}

/* ---- the record -------------------------------------------------------- */

static void lease_free(lease *l)
{
    if (!l) return;
    free(l->service);
    free(l->mode_before);
    strv_release(&l->running_before);
    free(l->overrides_before);
    free(l->state);
    for (size_t i = 0; i < l->nsteps; i++) {
        free(l->steps[i].target);
        free(l->steps[i].message);
    }
    free(l);
}

static void time_or_null(buf *b, int64_t ms)
{
    if (ms > 0)
        buf_json_time(b, ms);
    else
        buf_adds(b, "null");
}

static void steps_json(buf *b, const lease *l)
{
    buf_addc(b, '[');
    for (size_t i = 0; i < l->nsteps; i++) {
        const tl_step *s = &l->steps[i];
        buf_adds(b, i ? ",{\"action\":" : "{\"action\":");
        buf_json_str(b, s->action);
        buf_adds(b, strcmp(s->action, "switch") ? ",\"service\":" : ",\"mode\":");
        buf_json_str(b, s->target);
        buf_printf(b, ",\"ok\":%s,\"message\":", s->ok < 0 ? "null" : s->ok ? "true" : "false");
        buf_json_str_or_null(b, s->message);
        buf_addc(b, '}');
    }
    buf_addc(b, ']');
}

/* The lease as docs/api.md shows it; with_state false: its size only. */
static void lease_json(buf *b, const lease *l, bool with_state)
{
    buf_adds(b, "{\"id\":");
    buf_json_str(b, l->id);
    buf_adds(b, ",\"service\":");
    buf_json_str(b, l->service);
    buf_printf(b, ",\"allow_traffic\":%s,\"ttl_ms\":%lld,\"mode_before\":", l->allow_traffic ? "true" : "false",
               (long long)l->ttl_ms);
    buf_json_str_or_null(b, l->mode_before);
    buf_adds(b, ",\"running_before\":[");
    for (size_t i = 0; i < l->running_before.n; i++) {
        if (i) buf_addc(b, ',');
        buf_json_str(b, l->running_before.v[i]);
    }
    buf_adds(b, "],\"service_was\":");
    buf_json_str(b, svc_state_names[l->was]);
    buf_adds(b, ",\"overrides_before\":");
    buf_adds(b, l->overrides_before ? l->overrides_before : "null");
    buf_adds(b, ",\"created\":");
    buf_json_time(b, l->created_ms);
    buf_adds(b, ",\"renewed\":");
    buf_json_time(b, l->renewed_ms);
    buf_adds(b, ",\"expires\":");
    time_or_null(b, l->ended ? 0 : l->renewed_ms + l->ttl_ms);
    buf_printf(b, ",\"state_bytes\":%zu", strlen(l->state));
    if (with_state) {
        buf_adds(b, ",\"state\":");
        buf_adds(b, l->state);
    }
    buf_adds(b, ",\"ended\":");
    buf_json_str_or_null(b, l->ended);
    buf_adds(b, ",\"ended_at\":");
    time_or_null(b, l->ended ? l->ended_ms : 0);
    buf_adds(b, ",\"restore\":");
    if (!l->restore) {
        buf_adds(b, "null}");
        return;
    }
    buf_adds(b, "{\"state\":");
    buf_json_str(b, l->restore);
    buf_adds(b, ",\"steps\":");
    steps_json(b, l);
    buf_adds(b, "}}");
}

static void persist_text(tunelease *t, const char *doc, bool held)
{
    char err[256];
    if (t->d->st && store_tune_put(t->d->st, doc, held, err, sizeof err)) log_warn("tune lease: %s", err);
}

static void persist(tunelease *t, const lease *l)
{
    buf b = BUF_INIT;
    lease_json(&b, l, true);
    persist_text(t, b.p, !l->ended);
    buf_release(&b);
}

/* A `tune` event of the lease's service: data {"lease", "what"} and more. */
static void tl_event(tunelease *t, const char *service, const char *id, const char *what, const char *reason,
                     const char *more)
{
    buf data = BUF_INIT;
    buf_adds(&data, "{\"lease\":");
    buf_json_str(&data, id);
    buf_adds(&data, ",\"what\":");
    buf_json_str(&data, what);
    if (more) buf_printf(&data, ",%s", more);
    buf_addc(&data, '}');
    store_event e = {.ts_ms = clock_unix_ms(), .service = service, .kind = "tune", .reason = reason,
                     .data = data.p};
    char err[256];
    if (t->d->st && store_event_add(t->d->st, &e, NULL, err, sizeof err)) log_warn("tune lease: %s", err);
    log_info("tune %s: %s", service ? service : "-", reason);
    buf_release(&data);
}

/* ---- what runs --------------------------------------------------------- */

/* The service's overrides as JSON text (its service view), NULL: none. */
static char *svc_overrides(gpumodd *d, const char *id)
{
    buf b = BUF_INIT;
    char *out = NULL;
    if (api_service_json(d->sup, id, &b) == 0) {
        cJSON *j = cJSON_Parse(b.p);
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, "overrides");
        if (o && !cJSON_IsNull(o)) out = cJSON_PrintUnformatted(o);
        cJSON_Delete(j);
    }
    buf_release(&b);
    return out;
}

static bool same_json(const char *a, const char *b)
{
    if (!a || !b) return !a && !b;
    cJSON *x = cJSON_Parse(a), *y = cJSON_Parse(b);
    bool same = x && y && cJSON_Compare(x, y, true);
    cJSON_Delete(x);
    cJSON_Delete(y);
    return same;
}

static svc_state state_now(gpumodd *d, const char *id)
{
    sup_state_info i;
    sup_svc *v = sup_lookup(d->sup, id);
    return v && sup_svc_state(v, &i) ? i.state : SVC_DOWN;
}


/* The mode the running set would be with id's running changed to runs. */
static const char *mode_with(gpumodd *d, const char *id, bool runs)
{
    const char *ids[MAX_RUN + 1];
    size_t n = api_running_set(d, ids, MAX_RUN), k = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(ids[i], id)) ids[k++] = ids[i];
    if (runs) ids[k++] = id;
    return api_current_mode(d, ids, k);
}

static bool mode_differs(const lease *l, const char *now)
{
    return l->mode_before && (!now || strcmp(now, l->mode_before));
}

/* ---- answers ----------------------------------------------------------- */

static void answer_error(tl_answer *a, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void answer_error(tl_answer *a, int status, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->message, sizeof a->message, fmt, ap);
    va_end(ap);
    a->status = status;
    a->code = code;
}

static int64_t secs_left(const lease *l)
{
    int64_t left = l->renewed_mono + l->ttl_ms - clock_mono_ms();
    return left > 0 ? (left + 999) / 1000 : 0;
}

/* The length of a message's first line, without a log tail (a failed
 * start's message ends with one). */
static int first_line(const char *m)
{
    if (!m) return 6; /* "failed" */
    const char *tail = strstr(m, "; log tail"), *nl = strchr(m, '\n');
    size_t n = tail ? (size_t)(tail - m) : nl ? (size_t)(nl - m) : strlen(m);
    return n > 300 ? 300 : (int)n;
}

/* How the lease that ended ended: "expired: no heartbeat within 1000 ms;
 * the host was restored" (for a 404 and the events). */
static char *end_words(const lease *l)
{
    buf b = BUF_INIT;
    if (!strcmp(l->ended, "expired"))
        buf_printf(&b, "it expired: no heartbeat within %lld ms", (long long)l->ttl_ms);
    else
        buf_adds(&b, "it was released");
    const tl_step *bad = NULL;
    for (size_t i = 0; i < l->nsteps && !bad; i++)
        if (l->steps[i].ok == 0) bad = &l->steps[i];
    if (!strcmp(l->restore, "running"))
        buf_adds(&b, "; the host is being restored");
    else if (bad)
        buf_printf(&b, "; restoring the host failed: %s %s: %.*s", bad->action, bad->target, first_line(bad->message),
                   bad->message ? bad->message : "failed");
    else
        buf_adds(&b, "; the host was restored");
    return buf_detach(&b);
}

/* A 404 for a lease that is not held: ended (how), or never known. */
static void answer_gone(tunelease *t, const char *id, tl_answer *a)
{
    if (t->ending && !strcmp(t->ending->id, id)) {
        char *w = end_words(t->ending);
        answer_error(a, 404, "not_found", "tune lease '%s' has ended (%s); GET /tune shows it as last", id, w);
        free(w);
    } else if (t->last && !strcmp(t->last_id, id)) {
        answer_error(a, 404, "not_found", "tune lease '%s' has ended (%s); GET /tune shows it as last", id,
                     t->last_words ? t->last_words : "see GET /tune");
    } else if (t->cur) {
        answer_error(a, 404, "not_found", "no tune lease '%s' (the lease held is '%s')", id, t->cur->id);
    } else {
        answer_error(a, 404, "not_found", "no tune lease '%s' (none is held)", id);
    }
}

/* 409 tune_in_progress naming the lease held (detail: the lease), or the
 * one whose restore runs; 503 when the daemon is not up or stopping;
 * 409 switch_in_progress.  true when answered. */
static bool refuse_take(tunelease *t, tl_answer *a)
{
    gpumodd *d = t->d;
    char swmode[128];
    if (t->closing || d->shutting_down || !d->sw) {
        answer_error(a, 503, "shutting_down", "tune: the daemon is %s", d->sw ? "shutting down" : "not up yet");
    } else if (t->cur) {
        answer_error(a, 409, "tune_in_progress",
                     "tune: a tune lease is held: '%s' for '%s' (expires in %lld s without a heartbeat); end it with "
                     "`gpumod tune --abort` (DELETE /tune/%s)",
                     t->cur->id, t->cur->service, (long long)secs_left(t->cur), t->cur->id);
        lease_json(&a->body, t->cur, false);
    } else if (t->ending) {
        answer_error(a, 409, "tune_in_progress",
                     "tune: the host is being restored after tune lease '%s' ('%s'); try again when GET /tune shows "
                     "last.restore.state done",
                     t->ending->id, t->ending->service);
        lease_json(&a->body, t->ending, false);
    } else if (switch_current_mode(d->sw, swmode, sizeof swmode)) {
        answer_error(a, 409, "switch_in_progress", "tune: a switch to mode '%s' is in progress; try again when it ends",
                     swmode);
        switch_current_json(d->sw, &a->body);
    } else {
        return false;
    }
    return true;
}

/* ---- taking, renewing -------------------------------------------------- */

static void new_id(char *out, size_t n)
{
    unsigned char r[6];
    if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        int64_t x = clock_unix_ms() ^ (int64_t)getpid() << 40;
        memcpy(r, &x, sizeof r);
    }
    snprintf(out, n, "tune-%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5]);
}

static void expired_cb(uv_timer_t *h);

void tunelease_take(tunelease *t, const tl_take *rq, tl_answer *a)
{
    gpumodd *d = t->d;
    if (refuse_take(t, a)) return;
    sup_svc *v = config_preset(d->cfg, rq->service) ? sup_lookup(d->sup, rq->service) : NULL;
    sup_state_info si;
    if (!v || !sup_svc_state(v, &si)) {
        answer_error(a, 404, "not_found", "tune: no service '%s' is configured", rq->service);
        return;
    }
    lease *l = xcalloc(1, sizeof *l);
    l->t = t;
    new_id(l->id, sizeof l->id);
    l->service = xstrdup(rq->service);
    l->allow_traffic = rq->allow_traffic;
    l->ttl_ms = rq->ttl_ms;
    l->state = xstrdup(rq->state ? rq->state : "{}");
    l->was = si.state;
    l->overrides_before = svc_overrides(d, rq->service);
    const char *ids[MAX_RUN];
    size_t n = api_running_set(d, ids, MAX_RUN);
    for (size_t i = 0; i < n; i++) strv_push(&l->running_before, ids[i]);
    const char *m = api_current_mode(d, ids, n);
    l->mode_before = m ? xstrdup(m) : NULL;
    l->created_ms = l->renewed_ms = clock_unix_ms();
    l->renewed_mono = clock_mono_ms();
    t->cur = l;
    uv_timer_start(&t->timer, expired_cb, (uint64_t)l->ttl_ms, 0);
    persist(t, l);
    char *reason = xasprintf("tune lease %s taken for '%s' (ttl %lld ms; mode before: %s; its requests %s)", l->id,
                             l->service, (long long)l->ttl_ms, m ? m : "no mode",
                             l->allow_traffic ? "allowed" : "refused by the router");
    char *more = xasprintf("\"ttl_ms\":%lld,\"allow_traffic\":%s", (long long)l->ttl_ms,
                           l->allow_traffic ? "true" : "false");
    tl_event(t, l->service, l->id, "taken", reason, more);
    free(reason);
    free(more);
    a->status = 201;
    lease_json(&a->body, l, true);
}

void tunelease_renew(tunelease *t, const char *id, char *state, tl_answer *a)
{
    lease *l = t->cur;
    if (!l || strcmp(l->id, id)) {
        answer_gone(t, id, a);
        free(state);
        return;
    }
    l->renewed_ms = clock_unix_ms();
    l->renewed_mono = clock_mono_ms();
    uv_timer_start(&t->timer, expired_cb, (uint64_t)l->ttl_ms, 0);
    if (state) {
        free(l->state);
        l->state = state;
        persist(t, l);
    }
    a->status = 200;
    lease_json(&a->body, l, false);
}

/* ---- the end and the restore ------------------------------------------- */

static void add_step(lease *l, const char *action, const char *target)
{
    if (l->nsteps == MAX_STEPS) return;
    l->steps[l->nsteps++] = (tl_step){.action = action, .target = xstrdup(target), .ok = -1};
}

/* The steps as planned now (each is decided again when it begins). */
static void plan_restore(tunelease *t, lease *l)
{
    gpumodd *d = t->d;
    char *ov = svc_overrides(d, l->service);
    tl_action act = tl_restore_action(tl_state_runs(l->was), state_now(d, l->service),
                                      same_json(ov, l->overrides_before));
    free(ov);
    if (act == TL_RESTART) add_step(l, "restart", l->service);
    if (act == TL_STOP) add_step(l, "stop", l->service);
    bool runs = act == TL_RESTART || (act == TL_KEEP && tl_state_runs(state_now(d, l->service)));
    if (mode_differs(l, mode_with(d, l->service, runs))) add_step(l, "switch", l->mode_before);
}

static void steps_words(buf *b, const lease *l)
{
    if (!l->nsteps) buf_adds(b, "nothing to do");
    for (size_t i = 0; i < l->nsteps; i++) {
        const tl_step *s = &l->steps[i];
        buf_printf(b, "%s%s %s", i ? ", " : "", s->action, s->target);
        if (s->ok == 0) buf_printf(b, ": %.*s", first_line(s->message), s->message ? s->message : "failed");
    }
}

/* The lease ends (how: "released", "expired"): the timer stops, the
 * restore is planned and recorded; restore_begin runs it. */
static lease *lease_end(tunelease *t, const char *how)
{
    lease *l = t->cur;
    t->cur = NULL;
    uv_timer_stop(&t->timer);
    l->ended = how;
    l->ended_ms = clock_unix_ms();
    l->restore = "running";
    plan_restore(t, l);
    t->ending = l;
    persist(t, l);
    buf r = BUF_INIT;
    if (!strcmp(how, "expired"))
        buf_printf(&r, "tune lease %s expired: no heartbeat within %lld ms; restoring the host: ", l->id,
                   (long long)l->ttl_ms);
    else
        buf_printf(&r, "tune lease %s released; restoring the host: ", l->id);
    steps_words(&r, l);
    tl_event(t, l->service, l->id, how, r.p, NULL);
    buf_release(&r);
    return l;
}

static void restore_next(lease *l);

static void restore_done(lease *l)
{
    tunelease *t = l->t;
    bool failed = false;
    for (size_t i = 0; i < l->nsteps; i++) failed = failed || l->steps[i].ok == 0;
    l->restore = failed ? "failed" : "done";
    buf b = BUF_INIT, r = BUF_INIT;
    lease_json(&b, l, true);
    persist_text(t, b.p, false);
    free(t->last);
    t->last = buf_detach(&b);
    snprintf(t->last_id, sizeof t->last_id, "%s", l->id);
    free(t->last_words);
    t->last_words = end_words(l);
    buf_printf(&r, "tune lease %s: %s: ", l->id, failed ? "restoring the host failed" : "the host is restored");
    steps_words(&r, l);
    char *more = NULL;
    buf s = BUF_INIT;
    steps_json(&s, l);
    more = xasprintf("\"steps\":%s", s.p);
    tl_event(t, l->service, l->id, failed ? "restore_failed" : "restored", r.p, more);
    free(more);
    buf_release(&s);
    buf_release(&r);
    t->ending = NULL;
    lease_free(l);
}

static void step_end(lease *l, bool ok, const char *message)
{
    tl_step *s = &l->steps[l->at];
    s->ok = ok;
    free(s->message);
    s->message = message ? xstrdup(message) : NULL;
    l->at++;
    restore_next(l);
}

static void svc_done(const sup_result *r, void *ud)
{
    lease *l = ud;
    bool ok = r->outcome == SUP_OK;
    step_end(l, ok, ok ? NULL : r->message ? r->message : sup_outcome_code(r->outcome));
}

static void switched(const switch_result *r, void *ud)
{
    lease *l = ud;
    step_end(l, r->status == 200, r->status == 200 ? NULL : r->message ? r->message : r->code);
}

/* The switch back, decided on the running set of now: a step is added
 * when the set is not the mode the lease found, and a planned one is
 * done already when it is. */
static void switch_back(lease *l)
{
    gpumodd *d = l->t->d;
    const char *ids[MAX_RUN];
    const char *now = api_current_mode(d, ids, api_running_set(d, ids, MAX_RUN));
    bool planned = l->at < l->nsteps;
    if (!mode_differs(l, now)) {
        if (planned) step_end(l, true, "the host is in that mode already");
        else restore_done(l);
        return;
    }
    if (!planned) add_step(l, "switch", l->mode_before);
    if (l->t->closing || !d->sw) {
        step_end(l, false, "the daemon is shutting down");
        return;
    }
    switch_req rq = {.mode = l->mode_before, .origin = "tune", .queue = true};
    switch_request(d->sw, &rq, switched, l);
}

/* The next phase: the service's step (as planned), then the mode's
 * (decided again on what runs then), then done.  A step may end inside
 * this call. */
static void restore_next(lease *l)
{
    gpumodd *d = l->t->d;
    int phase = l->phase++;
    if (phase == 0 && l->nsteps && strcmp(l->steps[0].action, "switch")) {
        if (l->t->closing)
            step_end(l, false, "the daemon is shutting down");
        else if (!strcmp(l->steps[0].action, "restart"))
            sup_restart(d->sup, l->service, "api", svc_done, l); /* as configured: no overrides */
        else
            sup_stop(d->sup, l->service, "api", svc_done, l);
    } else if (phase <= 1) {
        l->phase = 2;
        switch_back(l);
    } else {
        restore_done(l);
    }
}

static void restore_begin(lease *l)
{
    l->at = 0;
    l->phase = 0;
    restore_next(l);
}

static void expired_cb(uv_timer_t *h)
{
    tunelease *t = h->data;
    if (!t->cur || t->closing) return;
    restore_begin(lease_end(t, "expired"));
}

void tunelease_release(tunelease *t, const char *id, tl_answer *a)
{
    if (!t->cur || strcmp(t->cur->id, id)) {
        answer_gone(t, id, a);
        return;
    }
    lease *l = lease_end(t, "released");
    a->status = 200;
    buf_adds(&a->body, "{\"id\":");
    buf_json_str(&a->body, l->id);
    buf_adds(&a->body, ",\"restoring\":");
    steps_json(&a->body, l);
    buf_addc(&a->body, '}');
    restore_begin(l);
}

/* ---- what the others ask ----------------------------------------------- */

void tunelease_json(tunelease *t, buf *out)
{
    buf_adds(out, "{\"lease\":");
    if (t->cur)
        lease_json(out, t->cur, true);
    else
        buf_adds(out, "null");
    buf_adds(out, ",\"last\":");
    if (t->ending)
        lease_json(out, t->ending, true);
    else
        buf_adds(out, t->last ? t->last : "null");
    buf_addc(out, '}');
}

bool tunelease_refuses_switch(tunelease *t, char *msg, size_t len, buf *detail)
{
    if (t->cur) {
        snprintf(msg, len,
                 "mode switches are refused while '%s' is being tuned (tune lease '%s'): end the run with `gpumod tune "
                 "--abort` (DELETE /tune/%s), or the lease expires in %lld s without a heartbeat",
                 t->cur->service, t->cur->id, t->cur->id, (long long)secs_left(t->cur));
        if (detail) lease_json(detail, t->cur, false);
        return true;
    }
    if (t->ending) {
        snprintf(msg, len,
                 "mode switches are refused while the host is restored after tune lease '%s' ('%s'); try again when "
                 "GET /tune shows last.restore.state done",
                 t->ending->id, t->ending->service);
        if (detail) lease_json(detail, t->ending, false);
        return true;
    }
    return false;
}

bool tunelease_refuses_traffic(tunelease *t, const char *service, char *msg, size_t len, int *retry_after_s)
{
    const lease *l = t->cur;
    if (!l || l->allow_traffic || !service || strcmp(service, l->service)) return false;
    snprintf(msg, len,
             "'%s' is being tuned (gpumod tune, lease %s): its requests are refused until the run ends; retry later",
             l->service, l->id);
    *retry_after_s = TL_RETRY_AFTER_S;
    return true;
}

/* ---- the daemon's life ------------------------------------------------- */

/* The row the previous daemon left: the last lease, or one still held
 * then, which ended with that daemon (nothing was restored: the services
 * stopped with it, and the start-up mode decides what runs); a restore
 * cut short is marked interrupted. */
static void load_last(tunelease *t)
{
    char *doc = NULL, err[256];
    bool held = false;
    int rc = t->d->st ? store_tune_get(t->d->st, &doc, &held, err, sizeof err) : 0;
    if (rc < 0) log_warn("tune lease: %s", err);
    if (rc != 1) return;
    cJSON *j = cJSON_Parse(doc);
    const char *id = j ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "id")) : NULL;
    const char *svc = j ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "service")) : NULL;
    cJSON *rs = j ? cJSON_GetObjectItemCaseSensitive(j, "restore") : NULL;
    const char *rstate = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rs, "state"));
    if (!j || !id) {
        log_warn("tune lease: the stored lease is not a lease; forgotten");
        cJSON_Delete(j);
        free(doc);
        return;
    }
    snprintf(t->last_id, sizeof t->last_id, "%s", id);
    if (held) {
        char at[40];
        clock_rfc3339(clock_unix_ms(), at, sizeof at);
        cJSON_ReplaceItemInObjectCaseSensitive(j, "ended", cJSON_CreateString("daemon_restart"));
        cJSON_ReplaceItemInObjectCaseSensitive(j, "ended_at", cJSON_CreateString(at));
        cJSON_ReplaceItemInObjectCaseSensitive(j, "expires", cJSON_CreateNull());
        t->last_words = xstrdup("the daemon restarted while it was held; nothing was restored");
    } else if (rstate && !strcmp(rstate, "running")) {
        cJSON_ReplaceItemInObjectCaseSensitive(rs, "state", cJSON_CreateString("interrupted"));
        t->last_words = xstrdup("the daemon stopped while the host was being restored");
    } else {
        const char *how = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "ended"));
        t->last_words = xasprintf("%s; restore %s", how ? how : "ended", rstate ? rstate : "none");
    }
    t->last = cJSON_PrintUnformatted(j);
    if (held || (rstate && !strcmp(rstate, "running"))) persist_text(t, t->last, false);
    if (held) {
        char *r = xasprintf("tune lease %s was held when the previous daemon stopped: ended (daemon_restart); "
                            "nothing was restored",
                            id);
        tl_event(t, svc, id, "daemon_restart", r, NULL);
        free(r);
    }
    cJSON_Delete(j);
    free(doc);
}

tunelease *tunelease_new(gpumodd *d)
{
    tunelease *t = xcalloc(1, sizeof *t);
    t->d = d;
    uv_timer_init(d->loop, &t->timer);
    t->timer.data = t;
    load_last(t);
    return t;
}

void tunelease_close(tunelease *t)
{
    if (!t || t->closing) return;
    t->closing = true;
    uv_timer_stop(&t->timer);
    uv_close((uv_handle_t *)&t->timer, NULL);
}

void tunelease_free(tunelease *t)
{
    if (!t) return;
    lease_free(t->cur);
    lease_free(t->ending);
    free(t->last);
    free(t->last_words);
    free(t);
}
