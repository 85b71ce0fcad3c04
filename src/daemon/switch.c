/* switch.c - the mode-switch executor (switch.h, docs/modes.md).
 *
 * One switch at a time: a run is a small state machine driven by the
 * callbacks of the host monitor (snapshots) and the supervisor (stops and
 * starts), each of which comes exactly once, so the run counts what it
 * waits for and is freed only when nothing is outstanding.  Every phase
 * is written to the journal when it begins and when it ends, so a daemon
 * that dies mid-switch leaves an open entry the next daemon closes.
 *
 * Verify-freed: the supervisor's stop already waits until NVML lists none
 * of the stopped pids; that is not the same as the memory being back (a
 * driver that hides per-process figures, memory freed lazily, unified
 * memory returning to MemAvailable late).  So before the first start the
 * gate itself is asked on freshly measured figures, polled until it says
 * yes, bounded by memory.verify_freed_timeout; past the bound the start
 * goes ahead and the supervisor's own gate decides.
 *
 * Failure: stop what this switch started, bring back what it stopped
 * (each start through the gate, after its own verify-freed), and if that
 * fails too, stop everything and commit `none`: the host is never left
 * half in one mode and half in the other while a mode is reported. */
#include "daemon/switch.h"
#include "daemon/reply.h"
#include "daemon/verdict.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/overrides.h"
#include "core/plan.h"
#include "core/policy.h"
#include "util/log.h"
#include "daemon/startup.h"
#include "daemon/need.h"
#include "util/clock.h"
#include "util/strv.h"

#define VF_POLL_MS 50
#define MAX_SVC 64
#define TAIL_LINES 10

typedef enum {
    ST_PLAN,
    ST_DRAIN,
    ST_STOP,
    ST_FREED,
    ST_START,
    ST_HEALTHY,
    ST_RB_STOP,
    ST_RB_FREED,
    ST_RB_START,
    ST_SETTLE,
    ST_DONE
} stage;

typedef struct run run;

/* A service a switch touches, resolved once, at its plan: its record in
 * the supervisor (a handle that outlives the switch), what its preset
 * said then, and where it stands in this switch.  The plan's ids are the
 * records' ids, so a plan step finds its service by pointer (sw_of). */
typedef struct sw_svc {
    sup_svc *h;
    const char *id; /* the record's */
    bool has_preset, remote, start_first; /* its preset at plan time */
    bool target;   /* in the mode */
    need tneed;    /* the target's need (the plan's, and a verify-freed's) */
    char thash[65];
    bool running;  /* held memory at plan time */
    need rneed;    /* what it held then (a rollback's need) */
    char rhash[65];
    bool rback;    /* a rollback brings it back (it was starting, ready, unhealthy or waiting for a restart) */
    bool stopped;  /* stopped by this switch */
    bool joined;   /* a kept target still starting whose start this switch joined */
    /* tiers */
    bool was_asleep; /* asleep at plan time */
    bool sleep_step; /* the plan puts it to sleep (PLAN_SLEEP) */
    bool wake_step;  /* the plan wakes it (PLAN_WAKE) */
    need wneed;      /* wake_step: the gate's need (tneed minus what it holds asleep) */
} sw_svc;

typedef struct sw_list {
    sw_svc *v[MAX_SVC];
    size_t n;
} sw_list;

/* The answers of the last switches, for GET /switches/ID (a client that
 * asked with wait=0 polls it). */
#define RESULTS_KEPT 16
typedef struct kept_result {
    int64_t id;
    int status;
    char *body; /* the answer's body, as the blocking request gets it */
} kept_result;

typedef struct queued {
    switch_req rq; /* strings owned */
    switch_cb cb;
    void *ud;
    struct queued *next;
} queued;

struct swx {
    switch_env env;
    run *cur;
    bool own_start; /* inside the switch's own sup_start: the guard lets it through */
    startup *su;    /* the start-up mode being brought up, or NULL */
    queued *q_head;
    bool closing;
    uv_timer_t t_deadline, t_poll, t_drain;
    bool timers;
    switch_drain_fn drain_fn;
    void *drain_ud;
    switch_undrain_fn undrain_fn;
    void *undrain_ud;
    switch_end_fn end_fn;
    void *end_ud;
    uint64_t drain_ticket;
    run *dry_head;                     /* dry runs waiting for their snapshot */
    kept_result results[RESULTS_KEPT]; /* a ring */
    size_t nresults;
};

struct run {
    swx *x;
    char *mode, *origin, *from;
    const char *sup_origin; /* what the supervisor's events say */
    bool dry;
    int64_t timeout_ms;
    switch_cb cb;
    void *ud;
    bool answered, abandoned;
    bool end_reported; /* the end hook was called */
    int refs; /* callbacks outstanding */
    run *next_dry;
    char *rank_for; /* switch_rank: the service whose modes are judged (a dry run) */
    switch_sim sim;  /* a dry run's what-if (copied from the request) */
    bool has_sim;
    strv sim_added, sim_removed, sim_warn; /* at its plan: what applied, and what did not */

    int64_t id;
    int64_t t0_mono;
    store_switch rec; /* the journal entry, mirrored in memory */
    int seq;
    stage st;

    /* the plan, and every service it names, resolved once (make_plan) */
    plan pl;
    int gpu_index[HOST_MAX_GPUS];
    size_t ngpus;
    sw_svc sv[2 * MAX_SVC]; /* the running set (plan time), then the targets not running */
    size_t nsv;
    sw_list targets;        /* the mode's services, in its order */
    size_t nrun;            /* sv[0..nrun): what ran at plan time */
    char *plan_json;

    sw_list stops, starts; /* from the plan, in order */
    size_t nstopped;       /* stopped by this switch (sw_svc.stopped) */
    sw_list started;       /* starts asked by this switch (the failing one too) */
    sw_list rb_starts;     /* rollback: what to bring back, in start order */
    size_t idx;
    int pending;         /* stops in flight in the current stage */
    bool stage_failed;
    sup_svc *round[MAX_SVC]; /* the stage's services: its stops first, then its sleeps */
    size_t nround;
    const char *round_phase; /* the stops' phase name (a literal) */
    bool sleep_round; /* the stage's stops are back: its sleeps run */
    sw_svc *cur_start;   /* the start in flight */

    /* verify-freed */
    const sw_svc *vf_svc;
    int vf_seq, vf_polls;
    int64_t vf_t0;
    bool vf_first_done;
    verdict vf_first;
    stage vf_next;

    /* the failure */
    bool failed, timed_out;
    char *fail_service, *fail_reason, *fail_tail;
    int fail_status;
    char *rb_note;
    int drain_seq;
    uint64_t drain_ticket;  /* the drain in progress (0 when none) */
    uint64_t drained_ticket; /* the ticket given to the drain hook, until undrained */
    const char *drained[MAX_SVC]; /* the names it was given (the records' ids) */
    size_t ndrained;
};

/* ------------------------------------------------------------------ */
/* small things */

static const config *cfg_of(swx *x)
{
    return *x->env.cfg;
}

static const char *sup_origin_for(const char *origin)
{
    if (!strcmp(origin, "cli") || !strcmp(origin, "api")) return origin; /* a person acted */
    if (!strcmp(origin, "router")) return "router";
    return "switch";
}

static bool is_running_state(svc_state st)
{
    return st == SVC_STARTING || st == SVC_READY || st == SVC_UNHEALTHY;
}

/* The running set: services starting, ready or unhealthy (as `mode
 * current` counts them). */
static size_t running_ids(swx *x, const char **ids, size_t max)
{
    sup_holding h[MAX_SVC];
    size_t n = sup_holdings(x->env.sup, h, MAX_SVC), k = 0;
    for (size_t i = 0; i < n && k < max; i++)
        if (is_running_state(h[i].state)) ids[k++] = h[i].id;
    return k;
}

/* The running set as "a, b" (or "nothing"). */
static void running_words(swx *x, buf *b)
{
    const char *ids[MAX_SVC];
    size_t n = running_ids(x, ids, MAX_SVC);
    for (size_t i = 0; i < n; i++) buf_printf(b, "%s'%s'", i ? ", " : "", ids[i]);
    if (!n) buf_adds(b, "nothing");
}

/* The mode whose set equals the running set; "none" when nothing runs;
 * NULL when the running set is no mode. */
static const char *mode_of_running(swx *x)
{
    const char *ids[MAX_SVC];
    size_t n = running_ids(x, ids, MAX_SVC);
    if (!n) return "none";
    const config *cfg = cfg_of(x);
    for (size_t i = 0; i < cfg->n_modes; i++) {
        const mode *m = &cfg->modes[i];
        if (m->services.n != n) continue;
        bool all = true;
        for (size_t k = 0; k < n && all; k++) all = strv_find(&m->services, ids[k]) >= 0;
        if (all) return m->id;
    }
    return NULL;
}

static void running_json(swx *x, buf *b)
{
    const char *ids[MAX_SVC];
    size_t n = running_ids(x, ids, MAX_SVC);
    buf_addc(b, '[');
    for (size_t i = 0; i < n; i++) {
        if (i) buf_addc(b, ',');
        buf_json_str(b, ids[i]);
    }
    buf_addc(b, ']');
}

/* ------------------------------------------------------------------ */
/* the journal */

static void emit_event(run *r, const char *service, const char *reason, const char *data)
{
    swx *x = r->x;
    store_event e = {.ts_ms = clock_unix_ms(),
                     .service = service,
                     .kind = "switch.phase",
                     .from = r->from ? r->from : "-",
                     .to = r->mode,
                     .reason = reason,
                     .data = data};
    char err[256];
    if (store_event_add(x->env.st, &e, &e.id, err, sizeof err)) {
        log_warn("switch: %s", err);
        return;
    }
    if (x->env.on_event) x->env.on_event(&e, x->env.ud);
}

static store_phase *phase_of(run *r, int seq)
{
    for (size_t i = 0; i < r->rec.nphases; i++)
        if (r->rec.phases[i].seq == seq) return &r->rec.phases[i];
    return NULL;
}

static int phase_begin(run *r, const char *phase, const char *service)
{
    int seq = ++r->seq;
    int64_t now = clock_unix_ms();
    r->rec.phases = xrealloc(r->rec.phases, (r->rec.nphases + 1) * sizeof *r->rec.phases);
    store_phase *p = &r->rec.phases[r->rec.nphases++];
    memset(p, 0, sizeof *p);
    p->seq = seq;
    p->phase = xstrdup(phase);
    p->service = service ? xstrdup(service) : NULL;
    p->started_ms = now;
    p->ok = -1;
    char err[256];
    if (r->id > 0 && store_phase_begin(r->x->env.st, r->id, seq, phase, service, now, err, sizeof err))
        log_warn("switch %" PRId64 ": %s", r->id, err);
    return seq;
}

/* detail: a JSON object's members without braces ("" for none); the
 * phase's duration goes in front. */
static void phase_end(run *r, int seq, bool ok, const char *detail_members)
{
    store_phase *p = phase_of(r, seq);
    if (!p) return;
    int64_t now = clock_unix_ms();
    p->ended_ms = now;
    p->ok = ok;
    int64_t dur = now - p->started_ms;
    buf d = BUF_INIT;
    buf_printf(&d, "{\"duration_ms\":%lld%s%s}", (long long)dur, detail_members && *detail_members ? "," : "",
               detail_members ? detail_members : "");
    free(p->detail);
    p->detail = xstrdup(d.p);
    char err[256];
    if (r->id > 0 && store_phase_end(r->x->env.st, r->id, seq, now, ok, d.p, err, sizeof err))
        log_warn("switch %" PRId64 ": %s", r->id, err);
    buf data = BUF_INIT, reason = BUF_INIT;
    buf_printf(&data, "{\"switch_id\":%" PRId64 ",\"seq\":%d,\"phase\":", r->id, seq);
    buf_json_str(&data, p->phase);
    buf_adds(&data, ",\"service\":");
    buf_json_str_or_null(&data, p->service);
    buf_printf(&data, ",\"duration_ms\":%lld,\"ok\":%s,\"detail\":%s}", (long long)dur, ok ? "true" : "false", d.p);
    buf_printf(&reason, "switch %" PRId64 " to '%s': %s%s%s%s %s in %lld ms", r->id, r->mode, p->phase,
               p->service ? " '" : "", p->service ? p->service : "", p->service ? "'" : "", ok ? "done" : "failed",
               (long long)dur);
    emit_event(r, p->service, reason.p, data.p);
    buf_release(&data);
    buf_release(&reason);
    buf_release(&d);
}

static void journal_state(run *r, const char *state, bool end, const char *error)
{
    free(r->rec.state);
    r->rec.state = xstrdup(state);
    if (end) r->rec.ended_ms = clock_unix_ms();
    if (error) {
        free(r->rec.error);
        r->rec.error = xstrdup(error);
    }
    if (r->plan_json && !r->rec.plan) r->rec.plan = xstrdup(r->plan_json);
    char err[256];
    if (r->id > 0 &&
        store_switch_update(r->x->env.st, r->id, state, end ? r->rec.ended_ms : 0, error, r->plan_json, err,
                            sizeof err))
        log_warn("switch %" PRId64 ": %s", r->id, err);
}

/* ------------------------------------------------------------------ */
/* JSON */

static void mem_json(buf *b, const run *r, const plan_mem *m)
{
    buf_printf(b, "{\"host_available_bytes\":%llu,\"reserved_host_bytes\":%llu,\"gpus\":[",
               (unsigned long long)m->host_available_bytes, (unsigned long long)m->reserved_host_bytes);
    for (size_t g = 0; g < r->ngpus; g++)
        buf_printf(b, "%s{\"index\":%d,\"free_bytes\":%llu,\"reserved_bytes\":%llu}", g ? "," : "", r->gpu_index[g],
                   (unsigned long long)m->gpu_free_bytes[g], (unsigned long long)m->reserved_bytes[g]);
    buf_adds(b, "]}");
}

/* The service of the plan's id (a record's id: compared by pointer). */
static sw_svc *sw_of(run *r, const char *id)
{
    for (size_t i = 0; i < r->nsv; i++)
        if (r->sv[i].id == id) return &r->sv[i];
    return NULL;
}

static void ids_json(buf *b, const strv *ids)
{
    buf_addc(b, '[');
    for (size_t i = 0; i < ids->n; i++) {
        buf_adds(b, i ? "," : "");
        buf_json_str(b, ids->v[i]);
    }
    buf_addc(b, ']');
}

/* ,"simulated": what of the what-if applied (the rest: warnings) */
static void sim_json(buf *b, const run *r)
{
    buf_adds(b, ",\"simulated\":{\"add_services\":");
    ids_json(b, &r->sim_added);
    buf_adds(b, ",\"remove_services\":");
    ids_json(b, &r->sim_removed);
    buf_adds(b, ",\"context_overrides\":{");
    for (size_t i = 0; i < r->sim.ctx_id.n; i++) {
        buf_adds(b, i ? "," : "");
        buf_json_str(b, r->sim.ctx_id.v[i]);
        buf_printf(b, ":%lld", (long long)r->sim.ctx[i]);
    }
    buf_adds(b, "}}");
}

/* "key":[ids of the steps of kind k] */
static void steps_ids_json(buf *b, const plan *p, plan_step_kind k, const char *key)
{
    buf_printf(b, "\"%s\":[", key);
    int n = 0;
    for (size_t i = 0; i < p->nsteps; i++)
        if (p->steps[i].kind == k) {
            buf_adds(b, n++ ? "," : "");
            buf_json_str(b, p->steps[i].id);
        }
    buf_addc(b, ']');
}

static void plan_to_json(buf *b, run *r)
{
    const plan *p = &r->pl;
    buf_adds(b, "{\"mode\":");
    buf_json_str(b, r->mode);
    buf_adds(b, ",\"from\":");
    buf_json_str_or_null(b, r->from);
    buf_printf(b, ",\"ok\":%s,\"refused\":", p->ok ? "true" : "false");
    buf_json_str_or_null(b, p->refused);
    buf_adds(b, ",\"reason\":");
    buf_json_str_or_null(b, p->ok ? NULL : p->reason);
    buf_adds(b, ",\"binding\":");
    const char *binding = NULL;
    for (size_t i = 0; i < p->nsteps; i++)
        if ((p->steps[i].kind == PLAN_START || p->steps[i].kind == PLAN_WAKE) && !p->steps[i].v.ok) {
            binding = p->steps[i].v.binding;
            break;
        }
    buf_json_str_or_null(b, binding);
    buf_adds(b, ",\"stops\":[");
    int k = 0;
    for (size_t i = 0; i < p->nsteps; i++)
        if (p->steps[i].kind == PLAN_STOP) {
            buf_adds(b, k++ ? "," : "");
            buf_json_str(b, p->steps[i].id);
        }
    buf_adds(b, "],\"keeps\":[");
    for (size_t i = 0; i < p->nkeep; i++) {
        buf_adds(b, i ? "," : "");
        buf_json_str(b, p->keep[i]);
    }
    buf_adds(b, "],\"starts\":[");
    k = 0;
    for (size_t i = 0; i < p->nsteps; i++)
        if (p->steps[i].kind == PLAN_START) {
            buf_adds(b, k++ ? "," : "");
            buf_json_str(b, p->steps[i].id);
        }
    buf_adds(b, "],");
    steps_ids_json(b, p, PLAN_SLEEP, "sleeps");
    buf_adds(b, ",");
    steps_ids_json(b, p, PLAN_WAKE, "wakes");
    buf_adds(b, ",\"asleep\":[");
    for (size_t i = 0; i < p->nasleep; i++) {
        buf_adds(b, i ? "," : "");
        buf_json_str(b, p->asleep[i]);
    }
    buf_printf(b, "],\"expect_ms\":%lld,\"expect_partial\":%s,\"before\":", (long long)p->expect_ms,
               p->expect_partial ? "true" : "false");
    mem_json(b, r, &p->before);
    buf_adds(b, ",\"steps\":[");
    for (size_t i = 0; i < p->nsteps; i++) {
        const plan_step *s = &p->steps[i];
        buf_adds(b, i ? ",{\"kind\":" : "{\"kind\":");
        buf_json_str(b, plan_step_names[s->kind]);
        buf_adds(b, ",\"service\":");
        buf_json_str(b, s->id);
        buf_printf(b, ",\"tier\":\"%s\",\"expect_ms\":", tier_names[s->tier]);
        if (s->expect_ms >= 0)
            buf_printf(b, "%lld", (long long)s->expect_ms);
        else
            buf_adds(b, "null");
        if (s->note[0]) {
            buf_adds(b, ",\"note\":");
            buf_json_str(b, s->note);
        }
        if (s->kind == PLAN_START || s->kind == PLAN_WAKE) {
            buf_printf(b, ",\"verdict\":{\"ok\":%s,\"reason\":", s->v.ok ? "true" : "false");
            buf_json_str_or_null(b, s->v.ok ? NULL : s->v.reason);
            buf_adds(b, ",\"binding\":");
            buf_json_str_or_null(b, s->v.ok ? NULL : s->v.binding);
            buf_printf(b, ",\"deferred\":%s", s->deferred ? "true" : "false");
            if (s->deferred) {
                buf_adds(b, ",\"deferred_binding\":");
                buf_json_str(b, s->deferred_binding);
                buf_adds(b, ",\"deferred_reason\":");
                buf_json_str(b, s->deferred_why);
            }
            buf_adds(b, "},\"need\":");
            const sw_svc *v = sw_of(r, s->id);
            if (v && v->target)
                need_json(b, &v->tneed);
            else
                buf_adds(b, "null");
        }
        buf_adds(b, ",\"after\":");
        mem_json(b, r, &s->after);
        buf_addc(b, '}');
    }
    buf_adds(b, "],\"warnings\":[");
    for (size_t i = 0; i < p->nwarnings; i++) {
        buf_adds(b, i ? "," : "");
        buf_json_str(b, p->warnings[i]);
    }
    for (size_t i = 0; i < r->sim_warn.n; i++) {
        buf_adds(b, i || p->nwarnings ? "," : "");
        buf_json_str(b, r->sim_warn.v[i]);
    }
    buf_addc(b, ']');
    if (r->has_sim) sim_json(b, r);
    buf_addc(b, '}');
}

static void switch_to_json(buf *b, const store_switch *w)
{
    buf_printf(b, "{\"id\":%" PRId64 ",\"from\":", w->id);
    buf_json_str_or_null(b, w->from_mode);
    buf_adds(b, ",\"to\":");
    buf_json_str(b, w->mode);
    buf_adds(b, ",\"origin\":");
    buf_json_str(b, w->origin);
    buf_adds(b, ",\"outcome\":");
    buf_json_str(b, w->state);
    buf_adds(b, ",\"started\":");
    buf_json_time(b, w->started_ms);
    buf_adds(b, ",\"ended\":");
    if (w->ended_ms)
        buf_json_time(b, w->ended_ms);
    else
        buf_adds(b, "null");
    if (w->ended_ms)
        buf_printf(b, ",\"duration_ms\":%lld", (long long)(w->ended_ms - w->started_ms));
    else
        buf_adds(b, ",\"duration_ms\":null");
    buf_adds(b, ",\"error\":");
    buf_json_str_or_null(b, w->error);
    buf_adds(b, ",\"phases\":[");
    for (size_t i = 0; i < w->nphases; i++) {
        const store_phase *p = &w->phases[i];
        buf_printf(b, "%s{\"seq\":%d,\"phase\":", i ? "," : "", p->seq);
        buf_json_str(b, p->phase);
        buf_adds(b, ",\"service\":");
        buf_json_str_or_null(b, p->service);
        buf_adds(b, ",\"started\":");
        buf_json_time(b, p->started_ms);
        if (p->ended_ms)
            buf_printf(b, ",\"duration_ms\":%lld", (long long)(p->ended_ms - p->started_ms));
        else
            buf_adds(b, ",\"duration_ms\":null");
        buf_printf(b, ",\"ok\":%s,\"detail\":%s}", p->ok < 0 ? "null" : p->ok ? "true" : "false",
                   p->detail && *p->detail ? p->detail : "null");
    }
    buf_adds(b, "],\"plan\":");
    buf_adds(b, w->plan && *w->plan ? w->plan : "null");
    buf_addc(b, '}');
}

/* ------------------------------------------------------------------ */
/* runs */

static int64_t run_begin(swx *x, run *r);
static void next_stage(run *r);
static void fail(run *r, const char *service, const char *reason, const char *tail);

static void ensure_timers(swx *x)
{
    if (x->timers) return;
    uv_timer_init(x->env.loop, &x->t_deadline);
    uv_timer_init(x->env.loop, &x->t_poll);
    uv_timer_init(x->env.loop, &x->t_drain);
    x->t_deadline.data = x->t_poll.data = x->t_drain.data = x;
    x->timers = true;
}

static run *run_new(swx *x, const switch_req *rq, switch_cb cb, void *ud)
{
    run *r = xcalloc(1, sizeof *r);
    r->x = x;
    r->mode = xstrdup(rq->mode);
    r->origin = xstrdup(rq->origin ? rq->origin : "api");
    r->sup_origin = sup_origin_for(r->origin);
    r->dry = rq->dry_run;
    if (rq->sim && switch_sim_any(rq->sim)) {
        r->has_sim = true;
        strv_copy(&r->sim.add, &rq->sim->add);
        strv_copy(&r->sim.remove, &rq->sim->remove);
        strv_copy(&r->sim.ctx_id, &rq->sim->ctx_id);
        memcpy(r->sim.ctx, rq->sim->ctx, sizeof r->sim.ctx);
    }
    r->timeout_ms = rq->timeout_ms > 0 ? rq->timeout_ms : cfg_of(x)->set.sw.timeout_ms;
    r->cb = cb;
    r->ud = ud;
    return r;
}

static void run_free(run *r)
{
    switch_sim_release(&r->sim);
    strv_release(&r->sim_added);
    strv_release(&r->sim_removed);
    strv_release(&r->sim_warn);
    free(r->rank_for);
    free(r->mode);
    free(r->origin);
    free(r->from);
    free(r->plan_json);
    free(r->fail_service);
    free(r->fail_reason);
    free(r->fail_tail);
    free(r->rb_note);
    /* rec's strings: the journal mirror */
    free(r->rec.mode);
    free(r->rec.from_mode);
    free(r->rec.origin);
    free(r->rec.state);
    free(r->rec.error);
    free(r->rec.plan);
    for (size_t i = 0; i < r->rec.nphases; i++) {
        free(r->rec.phases[i].phase);
        free(r->rec.phases[i].service);
        free(r->rec.phases[i].detail);
    }
    free(r->rec.phases);
    free(r);
}

/* The body a blocking request gets: json, or the API's error envelope. */
static char *answer_body(int status, const char *code, const char *message, const char *json)
{
    buf b = BUF_INIT;
    if (status == 200) {
        buf_adds(&b, json ? json : "null");
    } else {
        api_error_body(&b, code ? code : "start_failed", message ? message : "failed", json);
    }
    return buf_detach(&b);
}

static void keep_result(swx *x, int64_t id, int status, char *body)
{
    kept_result *k = &x->results[x->nresults++ % RESULTS_KEPT];
    free(k->body);
    k->id = id;
    k->status = status;
    k->body = body;
}

static void answer(run *r, int status, const char *code, const char *message, const char *json)
{
    if (r->answered) return;
    r->answered = true;
    if (r->id > 0 && !r->dry) keep_result(r->x, r->id, status, answer_body(status, code, message, json));
    switch_result res = {.status = status, .code = code, .message = message, .json = json};
    if (r->cb) r->cb(&res, r->ud);
}

static void queue_next(swx *x);

/* The end hook, once per switch that began (switch_set_end). */
static void report_end(run *r, const char *outcome)
{
    swx *x = r->x;
    if (r->dry || r->end_reported || !x->end_fn) return;
    r->end_reported = true;
    x->end_fn(x, r->id, r->mode, r->origin, outcome, clock_mono_ms() - r->t0_mono, x->end_ud);
}

/* The run is over (answered): let the next one in, free it when nothing
 * it waits for is left. */
static void run_done(run *r)
{
    swx *x = r->x;
    /* the journal's final state; no journal entry (it could not be written): refused */
    report_end(r, r->id > 0 && r->rec.state ? r->rec.state : "refused");
    r->st = ST_DONE;
    if (x->cur == r) {
        x->cur = NULL;
        if (x->timers) {
            uv_timer_stop(&x->t_deadline);
            uv_timer_stop(&x->t_poll);
            uv_timer_stop(&x->t_drain);
        }
    }
    if (!r->refs) run_free(r);
    if (!x->closing) queue_next(x);
}

static void dry_unlink(run *r)
{
    for (run **pp = &r->x->dry_head; *pp; pp = &(*pp)->next_dry)
        if (*pp == r) {
            *pp = r->next_dry;
            return;
        }
}

/* A callback came back: false when the run was abandoned meanwhile (the
 * daemon shuts down) and the callback must do nothing more. */
static bool unref_live(run *r)
{
    r->refs--;
    if (r->abandoned || r->st == ST_DONE) {
        if (!r->refs && r->x->cur != r) {
            if (r->dry) dry_unlink(r);
            run_free(r);
        }
        return false;
    }
    return true;
}

/* ---- plan ----------------------------------------------------------- */

typedef struct gather_err {
    int status;
    const char *code;
    char msg[512];
} gather_err;

static void sw_push(sw_list *l, sw_svc *v)
{
    if (v && l->n < MAX_SVC) l->v[l->n++] = v;
}

static bool too_many(run *r, size_t nh, size_t nt, gather_err *e)
{
    if (nh <= MAX_SVC && nt <= MAX_SVC) return false;
    e->status = 422;
    e->code = "too_many_services";
    snprintf(e->msg, sizeof e->msg, "mode '%s': a switch handles at most %d services %s; %s%zu%s: nothing was changed",
             r->mode, MAX_SVC, nh > MAX_SVC ? "running (or stopping, or waiting for a restart)" : "in a mode",
             nh > MAX_SVC ? "more than " : "the mode lists ", nh > MAX_SVC ? (size_t)MAX_SVC : nt,
             nh > MAX_SVC ? " hold memory now" : "");
    return true;
}

/* The longest load measured for id with config hash `hash` (its footprint
 * events' load_ms, as `gpumod template` reads them), -1 when none. */
static int64_t measured_load_ms(run *r, const char *id, const char *hash)
{
    if (!hash || !hash[0] || !r->x->env.st) return -1;
    unsigned kinds = 0;
    for (unsigned k = 0; store_event_kinds[k]; k++)
        if (!strcmp(store_event_kinds[k], "footprint")) kinds = 1u << k;
    store_event_query q = {.service = id, .kinds = kinds, .limit = 50, .tail = true};
    store_event *ev = NULL;
    size_t n = 0;
    char err[256];
    int64_t best = -1;
    if (store_events_query(r->x->env.st, &q, &ev, &n, err, sizeof err)) return -1;
    for (size_t i = 0; i < n; i++) {
        if (!ev[i].kind || strcmp(ev[i].kind, "footprint") || !ev[i].data) continue;
        cJSON *d = cJSON_Parse(ev[i].data);
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(d, "config_hash");
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(d, "load_ms");
        if (cJSON_IsString(h) && !strcmp(h->valuestring, hash) && cJSON_IsNumber(ms) && ms->valuedouble > best)
            best = (int64_t)ms->valuedouble;
        cJSON_Delete(d);
    }
    store_events_free(ev, n);
    return best;
}

/* What runs now, into r->sv[0..nrun) and the plan's running set. */
static void gather_running(run *r, const sup_holding *h, size_t nh, plan_running *in)
{
    const config *cfg = cfg_of(r->x);
    for (size_t i = 0; i < nh; i++) {
        sw_svc *v = &r->sv[r->nsv++];
        v->h = h[i].svc;
        v->id = sup_svc_id(v->h);
        const preset *p = config_preset(cfg, v->id);
        v->has_preset = p != NULL;
        v->remote = p && p->driver == DRV_REMOTE;
        v->start_first = p && p->start_first;
        v->running = true;
        v->rneed = h[i].held;
        snprintf(v->rhash, sizeof v->rhash, "%s", h[i].hash);
        v->rback = (is_running_state(h[i].state) && !h[i].killing) || h[i].restart_pending;
        v->was_asleep = h[i].asleep; /* a sleeper this switch stops is not brought back */
        memset(&in[i], 0, sizeof in[i]);
        in[i].id = v->id;
        in[i].hash = v->rhash[0] ? v->rhash : NULL;
        in[i].held = v->rneed;
        /* only a ready, starting or sleeping service is kept (or woken); anything else on its
         * way (unhealthy, stopping, being killed, a restart pending) is
         * stopped, its restart cancelled, and started again if targeted */
        in[i].no_keep = !(h[i].state == SVC_READY || h[i].state == SVC_STARTING || h[i].asleep) ||
                        h[i].killing;
        in[i].tier = v->remote ? TIER_STOP : h[i].tier;
        in[i].asleep = h[i].asleep;
        in[i].asleep_need = h[i].asleep_need;
        in[i].wake_ms = h[i].wake_ms;
        in[i].load_ms = h[i].load_ms >= 0 ? h[i].load_ms : measured_load_ms(r, v->id, v->rhash);
        in[i].sleep_ms = -1;
    }
    r->nrun = nh;
}

/* The target set into ids: the mode's services, plus the what-if's adds
 * (one already in the mode: a warning), less its removes (one not in the
 * mode: a warning); what applied into sim_added and sim_removed. */
static void sim_targets(run *r, const mode *m, strv *ids)
{
    if (m) strv_copy(ids, &m->services);
    if (!r->has_sim) return;
    const char *mw = m ? "" : " (the empty mode)";
    for (size_t i = 0; i < r->sim.add.n; i++) {
        const char *id = r->sim.add.v[i];
        if (strv_find(ids, id) >= 0) {
            strv_pushf(&r->sim_warn, "add_services: '%s' is already in mode '%s': nothing added", id, r->mode);
            continue;
        }
        strv_push(ids, id);
        strv_push(&r->sim_added, id);
    }
    strv kept = STRV_INIT;
    for (size_t i = 0; i < ids->n; i++) {
        const char *id = ids->v[i];
        if (strv_find(&r->sim.remove, id) >= 0)
            strv_push(&r->sim_removed, id);
        else
            strv_push(&kept, id);
    }
    for (size_t i = 0; i < r->sim.remove.n; i++)
        if (strv_find(&r->sim_removed, r->sim.remove.v[i]) < 0)
            strv_pushf(&r->sim_warn, "remove_services: '%s' is not in mode '%s'%s: nothing removed",
                       r->sim.remove.v[i], r->mode, mw);
    strv_copy(ids, &kept);
    strv_release(&kept);
}

/* The start override {"context_size": ctx} for p, parsed as a start's
 * (config/overrides.c: p's driver must take it).  0, or -1 with err. */
static int ctx_override(const preset *p, int64_t ctx, overrides *ov, char *err, size_t errlen)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "context_size", (double)ctx);
    char e[400];
    int rc = overrides_parse(o, (int)p->driver, ov, e, sizeof e);
    if (rc) snprintf(err, errlen, "context_overrides.%s: %s", p->id, e);
    cJSON_Delete(o);
    return rc;
}

/* p's need on snap.  With a context override of the what-if: the need of
 * p with the start override "context_size" applied, found as preflight
 * finds a restart's with overrides (pf_restart.c), but without a measured
 * footprint: the estimate at that context, the declared floor as usual. */
static int target_need(run *r, const preset *p, const snapshot *snap, need_detail *nd, char *err, size_t errlen)
{
    const config *cfg = cfg_of(r->x);
    int k = r->has_sim ? strv_find(&r->sim.ctx_id, p->id) : -1;
    if (k < 0) return service_need(p, &cfg->set, snap, r->x->env.st, nd, err, errlen);
    overrides ov = {0};
    preset q;
    memset(&q, 0, sizeof q);
    char e[400];
    int rc = -1;
    if (ctx_override(p, r->sim.ctx[k], &ov, err, errlen)) {
        /* err says it */
    } else if (overrides_apply(p, &ov, &q, e, sizeof e)) {
        snprintf(err, errlen, "context_overrides.%s: %s", p->id, e);
    } else {
        rc = service_need(&q, &cfg->set, snap, NULL, nd, err, errlen);
    }
    overrides_applied_release(&q);
    overrides_release(&ov);
    return rc;
}

/* The target set's services (ids): each resolved once (its preset, its
 * record, its need on snap) into r->sv and r->targets, and the plan's
 * targets.  -1 with e. */
static int gather_targets(run *r, const strv *ids, const snapshot *snap, plan_target *tg, gather_err *e)
{
    swx *x = r->x;
    const config *cfg = cfg_of(x);
    need_detail *nd = xcalloc(1, sizeof *nd);
    int rc = 0;
    for (size_t i = 0; i < ids->n && !rc; i++) {
        const char *id = ids->v[i];
        const preset *p = config_preset(cfg, id);
        sup_svc *h = p ? sup_lookup(x->env.sup, id) : NULL;
        char err[400];
        memset(nd, 0, sizeof *nd);
        if (!h) {
            *e = (gather_err){422, "config_invalid", ""};
            snprintf(e->msg, sizeof e->msg, "mode '%s' lists '%s', which is no configured preset", r->mode, id);
            rc = -1;
        } else if (target_need(r, p, snap, nd, err, sizeof err)) {
            *e = (gather_err){422, "need_unknown", ""};
            snprintf(e->msg, sizeof e->msg, "mode '%s': cannot tell what '%s' needs: %s", r->mode, id, err);
            rc = -1;
        } else {
            sw_svc *v = NULL;
            for (size_t k = 0; k < r->nrun && !v; k++)
                if (r->sv[k].h == h) v = &r->sv[k];
            if (!v) {
                v = &r->sv[r->nsv++];
                v->h = h;
                v->id = sup_svc_id(h);
            }
            v->target = true;
            v->has_preset = true;
            v->remote = p->driver == DRV_REMOTE;
            v->start_first = p->start_first;
            v->tneed = nd->n;
            snprintf(v->thash, sizeof v->thash, "%s", nd->hash);
            sw_push(&r->targets, v);
            memset(&tg[i], 0, sizeof tg[i]);
            tg[i] = (plan_target){.id = v->id, .hash = v->thash[0] ? v->thash : NULL, .need = v->tneed,
                                  .start_first = p->start_first, .vllm = p->driver == DRV_VLLM, .remote = v->remote,
                                  .expect_ms = v->remote ? 0 : measured_load_ms(r, v->id, v->thash)};
        }
    }
    free(nd);
    return rc;
}

/* Build the plan's inputs from a snapshot and make it.  -1 with e. */
static int make_plan(run *r, const snapshot *snap, gather_err *e)
{
    swx *x = r->x;
    const config *cfg = cfg_of(x);
    const mode *m = strcmp(r->mode, "none") ? config_mode(cfg, r->mode) : NULL;
    if (!m && strcmp(r->mode, "none")) {
        e->status = 404;
        e->code = "not_found";
        snprintf(e->msg, sizeof e->msg, "no mode '%s' in %s", r->mode, cfg->config_dir);
        return -1;
    }
    r->ngpus = snap->ngpus;
    for (size_t g = 0; g < snap->ngpus; g++) r->gpu_index[g] = snap->gpus[g].index;
    sup_holding h[MAX_SVC + 1];
    size_t nh = sup_holdings(x->env.sup, h, MAX_SVC + 1);
    strv ids = STRV_INIT;
    sim_targets(r, m, &ids);
    size_t nt = ids.n;
    plan_running run_in[MAX_SVC];
    plan_target tg[MAX_SVC];
    int rc = too_many(r, nh, nt, e) ? -1 : 0;
    if (!rc) gather_running(r, h, nh, run_in);
    if (!rc) rc = gather_targets(r, &ids, snap, tg, e);
    strv_release(&ids);
    if (rc) return -1;
    reservation res[PLAN_MAX];
    size_t nres = sup_reservations(x->env.sup, res, PLAN_MAX);
    gate_policy pol;
    policy_from_settings(&cfg->set, &pol);
    plan_input in = {.snap = snap,
                     .running = run_in,
                     .nrunning = nh,
                     .target = tg,
                     .ntarget = nt,
                     .res = res,
                     .nres = nres,
                     .policy = &pol};
    char err[256];
    if (plan_make(&in, &r->pl, err, sizeof err)) {
        e->status = 422;
        e->code = "start_failed";
        snprintf(e->msg, sizeof e->msg, "mode '%s': cannot plan the switch: %s", r->mode, err);
        return -1;
    }
    for (size_t i = 0; i < r->pl.nsteps; i++) {
        const plan_step *st = &r->pl.steps[i];
        sw_svc *v = sw_of(r, st->id);
        bool leave = st->kind == PLAN_STOP || st->kind == PLAN_SLEEP;
        sw_push(leave ? &r->stops : &r->starts, v);
        if (!v) continue;
        v->sleep_step = st->kind == PLAN_SLEEP;
        v->wake_step = st->kind == PLAN_WAKE;
        if (v->wake_step) plan_need_minus(&v->tneed, &v->rneed, &v->wneed);
    }
    buf b = BUF_INIT;
    plan_to_json(&b, r);
    r->plan_json = buf_detach(&b);
    return 0;
}

/* Declared memory of a mode: its presets' memory.gpu_mb (or vram_mb) and
 * memory.host_mb, in MiB; what is not declared counts 0. */
static int64_t mode_declared_mb(const config *cfg, const mode *md)
{
    int64_t sum = 0;
    for (size_t i = 0; i < md->services.n; i++) {
        const preset *p = config_preset(cfg, md->services.v[i]);
        if (!p) continue;
        for (size_t g = 0; g < p->n_mem_gpu; g++) sum += p->mem_gpu_mb[g];
        if (p->mem_host_mb > 0) sum += p->mem_host_mb;
    }
    return sum;
}

/* Judge one mode for switch_rank: its plan on snap, as a dry run would. */
static void rank_one(swx *x, const mode *md, const snapshot *snap, plan_choice *c)
{
    switch_req rq = {.mode = md->id, .origin = "router", .dry_run = true};
    run *t = run_new(x, &rq, NULL, NULL);
    memset(c, 0, sizeof *c);
    c->mode = md->id;
    c->nservices = md->services.n;
    c->declared_mb = mode_declared_mb(cfg_of(x), md);
    gather_err e = {0};
    if (make_plan(t, snap, &e)) {
        snprintf(c->why, sizeof c->why, "%s", e.msg);
    } else {
        c->ok = t->pl.ok;
        for (size_t i = 0; i < t->pl.nsteps; i++) {
            plan_step_kind k = t->pl.steps[i].kind;
            c->nstops += k == PLAN_STOP || k == PLAN_SLEEP;
            c->nsleeps += k == PLAN_SLEEP;
            c->nwakes += k == PLAN_WAKE;
        }
        c->expect_ms = t->pl.expect_partial ? -1 : t->pl.expect_ms;
        if (!c->ok)
            snprintf(c->why, sizeof c->why, "the start of '%s' is refused: %s", t->pl.refused ? t->pl.refused : "?",
                     t->pl.reason);
    }
    run_free(t);
}

/* A switch_rank's caller, behind the run's ordinary callback: errors
 * (503 at shutdown) come through rank_failed, the candidates through
 * rank_planned. */
typedef struct rank_wait {
    switch_rank_cb cb;
    void *ud;
} rank_wait;

static void rank_failed(const switch_result *res, void *ud)
{
    rank_wait *w = ud;
    w->cb(res, NULL, 0, w->ud);
    free(w);
}

/* switch_rank's answer: every mode containing r->rank_for, judged on one
 * snapshot and ranked (plan_rank), as values. */
static void rank_planned(run *r, const snapshot *snap)
{
    const config *cfg = cfg_of(r->x);
    plan_choice *c = xcalloc(cfg->n_modes ? cfg->n_modes : 1, sizeof *c);
    size_t n = 0;
    for (size_t i = 0; i < cfg->n_modes; i++)
        if (strv_find(&cfg->modes[i].services, r->rank_for) >= 0) rank_one(r->x, &cfg->modes[i], snap, &c[n++]);
    plan_rank(c, n);
    if (!r->answered) {
        r->answered = true;
        rank_wait *w = r->ud;
        switch_result ok = {.status = 200};
        w->cb(&ok, c, n, w->ud);
        free(w);
    }
    free(c);
}

static void dry_planned(const snapshot *snap, void *ud)
{
    run *r = ud;
    if (!unref_live(r)) return;
    const char *fm = mode_of_running(r->x);
    r->from = fm ? xstrdup(fm) : NULL;
    gather_err e = {0};
    if (r->rank_for)
        rank_planned(r, snap);
    else if (make_plan(r, snap, &e))
        answer(r, e.status, e.code, e.msg, NULL);
    else
        answer(r, 200, NULL, NULL, r->plan_json);
    r->st = ST_DONE;
    if (!r->refs) {
        dry_unlink(r);
        run_free(r);
    }
}

/* The switch ends at its plan: nothing was touched (journal: refused). */
static void finish_plan_error(run *r, int status, const char *code, const char *msg, const char *detail)
{
    journal_state(r, "refused", true, msg);
    buf b = BUF_INIT;
    buf_printf(&b, "{\"switch_id\":%" PRId64 "%s%s}", r->id, detail ? "," : "", detail ? detail : "");
    answer(r, status, code, msg, b.p);
    buf_release(&b);
    run_done(r);
}

static void planned(const snapshot *snap, void *ud)
{
    run *r = ud;
    if (!unref_live(r)) return;
    int seq = 1; /* the plan phase began with the run */
    gather_err e = {0};
    if (make_plan(r, snap, &e)) {
        buf d = BUF_INIT;
        buf_adds(&d, "\"error\":");
        buf_json_str(&d, e.msg);
        phase_end(r, seq, false, d.p);
        buf_release(&d);
        finish_plan_error(r, e.status, e.code, e.msg, NULL);
        return;
    }
    const plan *p = &r->pl;
    buf d = BUF_INIT;
    buf_printf(&d, "\"ok\":%s,\"stops\":%zu,\"keeps\":%zu,\"starts\":%zu", p->ok ? "true" : "false", r->stops.n,
               p->nkeep, r->starts.n);
    if (!p->ok) {
        buf_adds(&d, ",\"refused\":");
        buf_json_str(&d, p->refused);
        buf_adds(&d, ",\"reason\":");
        buf_json_str(&d, p->reason);
    }
    phase_end(r, seq, p->ok, d.p);
    buf_release(&d);
    if (!p->ok) {
        const char *binding = "";
        for (size_t i = 0; i < p->nsteps; i++)
            if (p->steps[i].kind == PLAN_START && !p->steps[i].v.ok) {
                binding = p->steps[i].v.binding;
                break;
            }
        char *msg = xasprintf("mode '%s' does not fit: '%s' would be refused (%s): %s; nothing was stopped", r->mode,
                              p->refused ? p->refused : "?", binding, p->reason);
        buf det = BUF_INIT;
        buf_adds(&det, "\"service\":");
        buf_json_str_or_null(&det, p->refused);
        buf_adds(&det, ",\"binding\":");
        buf_json_str(&det, binding);
        buf_adds(&det, ",\"reason\":");
        buf_json_str(&det, p->reason);
        buf_adds(&det, ",\"plan\":");
        buf_adds(&det, r->plan_json);
        finish_plan_error(r, 409, "gate_refused", msg, det.p);
        buf_release(&det);
        free(msg);
        return;
    }
    if (r->timed_out) {
        char *msg = xasprintf("switch to '%s' timed out after %lld ms while planning; nothing was changed", r->mode,
                              (long long)r->timeout_ms);
        finish_plan_error(r, 504, "timeout", msg, NULL);
        free(msg);
        return;
    }
    journal_state(r, "running", false, NULL);
    r->st = ST_DRAIN;
    next_stage(r);
}

/* ---- drain ---------------------------------------------------------- */

static void drain_end(run *r, bool ok, const char *why)
{
    swx *x = r->x;
    uv_timer_stop(&x->t_drain);
    r->drain_ticket = 0;
    buf d = BUF_INIT;
    buf_printf(&d, "\"hook\":%s,\"leaving\":%zu", x->drain_fn ? "true" : "false", r->stops.n);
    if (why) {
        buf_adds(&d, ",\"note\":");
        buf_json_str(&d, why);
    }
    phase_end(r, r->drain_seq, ok, d.p);
    buf_release(&d);
    r->st = ST_STOP;
    next_stage(r);
}

static void drain_timeout(uv_timer_t *t)
{
    swx *x = t->data;
    run *r = x->cur;
    if (!r || r->st != ST_DRAIN || !r->drain_ticket) return;
    drain_end(r, true, "drain_timeout passed: in-flight requests were cut off");
}

void switch_set_end(swx *x, switch_end_fn fn, void *ud)
{
    x->end_fn = fn;
    x->end_ud = ud;
}

void switch_drained(swx *x, uint64_t ticket)
{
    run *r = x->cur;
    if (!r || r->st != ST_DRAIN || !ticket || r->drain_ticket != ticket) return; /* late: the switch went on */
    drain_end(r, true, NULL);
}

void switch_set_drain(swx *x, switch_drain_fn fn, void *ud)
{
    x->drain_fn = fn;
    x->drain_ud = ud;
}

void switch_set_undrain(swx *x, switch_undrain_fn fn, void *ud)
{
    x->undrain_fn = fn;
    x->undrain_ud = ud;
}

/* The end of this run's drain, once: the outcome is decided (committed,
 * a rollback begins, or the run is abandoned). */
static void undrain(run *r)
{
    swx *x = r->x;
    uint64_t t = r->drained_ticket;
    if (!t) return;
    r->drained_ticket = 0;
    if (r->drain_ticket) {
        uv_timer_stop(&x->t_drain);
        r->drain_ticket = 0;
    }
    if (x->undrain_fn) x->undrain_fn(x, t, r->drained, r->ndrained, x->undrain_ud);
}

/* ---- stops ---------------------------------------------------------- */

/* A stop or start in flight: the service it is for (sw NULL: a settle
 * stop of a service outside the plan). */
typedef struct op_ctx {
    run *r;
    int seq;
    sup_svc *h;
    sw_svc *sw;
    bool sleep; /* a sleep, not a stop */
} op_ctx;

/* A sleep's or a wake's result in a phase's detail members:
 * "tier":"l1","ms":N,"fell_back":false (and "slept" for a sleep, "woke"
 * for a start; a message when it fell back). */
static void tier_detail(buf *d, const sup_result *res, bool sleep)
{
    int t = res->tier >= 0 && res->tier < TIER__COUNT ? res->tier : TIER_STOP;
    buf_printf(d, "%s\"tier\":\"%s\",\"ms\":%lld,\"fell_back\":%s,\"%s\":%s", d->len ? "," : "", tier_names[t],
               (long long)res->ms, res->fell_back ? "true" : "false", sleep ? "slept" : "woke",
               (sleep ? res->slept : res->woke) ? "true" : "false");
    if (res->fell_back && res->message) {
        buf_adds(d, ",\"message\":");
        buf_json_str(d, res->message);
    }
}

static op_ctx *op_new(run *r, int seq, sup_svc *h)
{
    op_ctx *c = xcalloc(1, sizeof *c);
    c->r = r;
    c->seq = seq;
    c->h = h;
    for (size_t i = 0; i < r->nsv && !c->sw; i++)
        if (r->sv[i].h == h) c->sw = &r->sv[i];
    r->refs++;
    return c;
}

static void stops_over(run *r);

static void stopped_cb(const sup_result *res, void *ud)
{
    op_ctx *c = ud;
    run *r = c->r;
    if (!unref_live(r)) {
        free(c);
        return;
    }
    bool ok = res->outcome == SUP_OK;
    buf d = BUF_INIT;
    if (ok && c->sleep) tier_detail(&d, res, true);
    if (!ok) {
        buf_printf(&d, "\"status\":%d,\"message\":", sup_outcome_status(res->outcome));
        buf_json_str_or_null(&d, res->message);
        r->stage_failed = true;
        if (!r->fail_service) {
            r->fail_service = xstrdup(sup_svc_id(c->h));
            r->fail_reason = xstrdup(res->message ? res->message : "stop failed");
        }
    }
    phase_end(r, c->seq, ok, d.p);
    buf_release(&d);
    if (ok && r->st == ST_STOP && c->sw && !c->sw->stopped) {
        c->sw->stopped = true;
        r->nstopped++;
    }
    free(c);
    if (--r->pending > 0) return;
    stops_over(r);
}

static bool round_go(run *r, const char *phase, bool sleeps);

/* The stage after a stop stage has all its stops back (and then its sleeps). */
static void stops_over(run *r)
{
    bool go_on = r->st != ST_STOP || (!r->stage_failed && !r->timed_out);
    if (!r->sleep_round && go_on && round_go(r, NULL, true)) return;
    if (r->st == ST_STOP) {
        if (r->stage_failed) {
            fail(r, r->fail_service, r->fail_reason, NULL);
            return;
        }
        if (r->timed_out) {
            fail(r, NULL, NULL, NULL);
            return;
        }
        r->st = ST_FREED;
    } else if (r->st == ST_RB_STOP) {
        r->st = ST_RB_FREED;
    } else if (r->st == ST_SETTLE) {
        r->st = ST_DONE;
    }
    next_stage(r);
}

/* Whether the stage puts h to sleep: the plan's sleeps sleep; a rollback
 * puts what this switch woke back to sleep. */
static bool sleeps_in_stage(const run *r, const sup_svc *h)
{
    for (size_t i = 0; i < r->nsv; i++)
        if (r->sv[i].h == h)
            return (r->st == ST_STOP && r->sv[i].sleep_step) ||
                   (r->st == ST_RB_STOP && r->sv[i].wake_step && r->sv[i].was_asleep);
    return false;
}

/* The stage's stops (sleeps false) or its sleeps, together, each a phase;
 * false when it has none of them. */
static bool round_go(run *r, const char *phase, bool sleeps)
{
    if (phase) r->round_phase = phase;
    r->sleep_round = sleeps;
    sup_svc *copy[MAX_SVC]; /* a callback may come back before the loop ends */
    size_t n = 0;
    for (size_t i = 0; i < r->nround; i++)
        if (sleeps_in_stage(r, r->round[i]) == sleeps) copy[n++] = r->round[i];
    if (!n) return false;
    r->pending = (int)n;
    for (size_t i = 0; i < n; i++) {
        op_ctx *c = op_new(r, 0, copy[i]);
        c->sleep = sleeps;
        const char *ph = !sleeps ? r->round_phase : r->st == ST_STOP ? "sleep" : "rollback-sleep";
        c->seq = phase_begin(r, ph, sup_svc_id(copy[i]));
        if (sleeps)
            sup_sleep_svc(r->x->env.sup, copy[i], r->sup_origin, stopped_cb, c);
        else
            sup_stop_svc(r->x->env.sup, copy[i], r->sup_origin, stopped_cb, c);
    }
    return true;
}

/* Stop every service of hs, each a phase named `phase`: the stops together,
 * and once they are all back (verified stops), the sleeps together, so an
 * l1 sleep's gate no longer sees the memory of what is being stopped. */
static void stop_all(run *r, const char *phase, sup_svc *const *hs, size_t n)
{
    r->stage_failed = false;
    r->nround = n < MAX_SVC ? n : MAX_SVC;
    memcpy(r->round, hs, r->nround * sizeof *r->round);
    if (round_go(r, phase, false)) return;
    r->sleep_round = false;
    stops_over(r); /* no stop: straight to the sleeps, if any */
}

/* The records of list, for stop_all. */
static size_t handles_of(const sw_list *list, sup_svc **hs)
{
    for (size_t i = 0; i < list->n; i++) hs[i] = list->v[i]->h;
    return list->n;
}

/* ---- verify-freed --------------------------------------------------- */

static void vf_snap(const snapshot *snap, void *ud);

static void vf_poll(uv_timer_t *t)
{
    swx *x = t->data;
    run *r = x->cur;
    if (!r || (r->st != ST_FREED && r->st != ST_RB_FREED)) return;
    r->refs++;
    hostmon_take(x->env.hm, vf_snap, r);
}

static void vf_end(run *r, bool ok, const verdict *last)
{
    buf d = BUF_INIT;
    buf_printf(&d, "\"waited_ms\":%lld,\"polls\":%d,\"starts\":%zu,\"first\":{\"ok\":%s,\"binding\":",
               (long long)(clock_mono_ms() - r->vf_t0), r->vf_polls,
               (r->st == ST_RB_FREED ? &r->rb_starts : &r->starts)->n, r->vf_first.ok ? "true" : "false");
    buf_json_str_or_null(&d, r->vf_first.ok ? NULL : r->vf_first.binding);
    buf_adds(&d, ",\"reason\":");
    buf_json_str_or_null(&d, r->vf_first.ok ? NULL : r->vf_first.reason);
    buf_addc(&d, '}');
    if (!ok && last) {
        buf_adds(&d, ",\"last\":{\"binding\":");
        buf_json_str(&d, last->binding);
        buf_adds(&d, ",\"reason\":");
        buf_json_str(&d, last->reason);
        buf_addc(&d, '}');
    }
    phase_end(r, r->vf_seq, ok, d.p);
    buf_release(&d);
    r->st = r->vf_next;
    r->idx = 0;
    next_stage(r);
}

/* The need a start is judged with: a target's (computed once, at the
 * plan), else, in a rollback, what it held before this switch. */
static const need *vf_need(const run *r, const sw_svc *v)
{
    if (v->wake_step && r->st != ST_RB_FREED && v->wneed.source[0]) return &v->wneed;
    if (v->target && v->tneed.source[0]) return &v->tneed;
    if (v->running && v->rneed.source[0]) return &v->rneed;
    return NULL;
}

/* Judge every start of list still ahead together on the snapshot, as the
 * plan does (each counted as a reservation for those after it, with the
 * starts in flight outside the switch): v is the first refusal, or ok.
 * No model file is read here: the needs were computed at the plan. */
static void vf_judge(run *r, const snapshot *snap, const sw_list *list, verdict *v)
{
    swx *x = r->x;
    plan_target tg[MAX_SVC];
    size_t nt = 0;
    for (size_t i = 0; i < list->n && nt < MAX_SVC; i++) {
        const sw_svc *s = list->v[i];
        const need *n = vf_need(r, s);
        if (!s->has_preset || !n) continue; /* nothing to judge here: the start itself will say why */
        memset(&tg[nt], 0, sizeof tg[nt]);
        tg[nt].id = s->id;
        tg[nt].need = *n;
        tg[nt].remote = s->remote;
        nt++;
    }
    reservation res[PLAN_MAX];
    size_t nres = sup_reservations(x->env.sup, res, PLAN_MAX);
    gate_policy pol;
    policy_from_settings(&cfg_of(x)->set, &pol);
    plan_input in = {.snap = snap, .target = tg, .ntarget = nt, .res = res, .nres = nres, .policy = &pol};
    plan *pl = xcalloc(1, sizeof *pl);
    char err[256];
    memset(v, 0, sizeof *v);
    v->ok = true;
    if (plan_make(&in, pl, err, sizeof err) == 0 && !pl->ok)
        for (size_t i = 0; i < pl->nsteps; i++)
            if (pl->steps[i].kind == PLAN_START && !pl->steps[i].v.ok) {
                *v = pl->steps[i].v;
                break;
            }
    free(pl);
}

static void vf_snap(const snapshot *snap, void *ud)
{
    run *r = ud;
    if (!unref_live(r)) return;
    swx *x = r->x;
    const config *cfg = cfg_of(x);
    verdict v;
    vf_judge(r, snap, r->st == ST_RB_FREED ? &r->rb_starts : &r->starts, &v);
    r->vf_polls++;
    if (!r->vf_first_done) {
        r->vf_first = v;
        r->vf_first_done = true;
    }
    if (v.ok) {
        vf_end(r, true, NULL);
        return;
    }
    if (r->timed_out && r->st == ST_FREED) {
        vf_end(r, false, &v);
        return;
    }
    if (clock_mono_ms() - r->vf_t0 >= cfg->set.memory.verify_freed_timeout_ms) {
        /* go on: the supervisor's gate at the start decides, and its refusal is the failure */
        vf_end(r, false, &v);
        return;
    }
    uv_timer_start(&x->t_poll, vf_poll, VF_POLL_MS, 0);
}

/* Wait for the memory the stops gave back, judged for every start of list
 * together (named by its first start that is not remote); skipped when
 * nothing was stopped. */
static void verify_freed(run *r, const sw_list *list, bool anything_stopped, stage next)
{
    r->vf_next = next;
    r->vf_svc = NULL;
    for (size_t i = 0; i < list->n && !r->vf_svc; i++)
        if (list->v[i]->has_preset && !list->v[i]->remote) r->vf_svc = list->v[i];
    if (!r->vf_svc || !anything_stopped) {
        r->st = next;
        r->idx = 0;
        next_stage(r);
        return;
    }
    r->vf_seq = phase_begin(r, "verify-freed", r->vf_svc->id);
    r->vf_t0 = clock_mono_ms();
    r->vf_polls = 0;
    r->vf_first_done = false;
    r->refs++;
    hostmon_take(r->x->env.hm, vf_snap, r);
}

/* ---- starts --------------------------------------------------------- */

/* "... ; log tail:\n<lines>" -> reason and tail (both allocated). */
static void split_tail(const char *msg, char **reason, char **tail)
{
    const char *mark = msg ? strstr(msg, "; log tail:\n") : NULL;
    if (!mark) {
        *reason = xstrdup(msg ? msg : "start failed");
        *tail = NULL;
        return;
    }
    *reason = xstrndup(msg, (size_t)(mark - msg));
    *tail = xstrdup(mark + strlen("; log tail:\n"));
}

/* A started service's phase detail: its load time and what it holds. */
static void started_detail(run *r, const sup_svc *h, buf *d)
{
    sup_holding hs[MAX_SVC];
    size_t n = sup_holdings(r->x->env.sup, hs, MAX_SVC);
    for (size_t i = 0; i < n; i++)
        if (hs[i].svc == h) {
            buf_printf(d, "\"load_ms\":%lld,\"held\":", (long long)hs[i].load_ms);
            need_json(d, &hs[i].held);
        }
}

/* A start failed: the switch fails (and rolls back), or, in a rollback,
 * the previous mode cannot come back either and the host settles. */
static void start_failed(run *r, const sup_svc *h, const char *message)
{
    const char *id = sup_svc_id(h);
    char *reason, *tail;
    split_tail(message, &reason, &tail);
    if (!tail) { /* this start's output only: a refused start has none */
        buf lb = BUF_INIT;
        sup_svc_run_tail(h, TAIL_LINES, &lb);
        if (lb.len) tail = buf_detach(&lb);
        buf_release(&lb);
    }
    if (r->st == ST_START || r->st == ST_HEALTHY) {
        if (r->timed_out) {
            char *m = xasprintf("the switch timed out (%lld ms) while '%s' was starting", (long long)r->timeout_ms, id);
            free(reason);
            reason = m;
        }
        fail(r, id, reason, tail);
    } else { /* ST_RB_START */
        if (!r->fail_service) r->fail_service = xstrdup(id);
        char *note = xasprintf("rollback: '%s' could not be started again: %s", id, reason);
        free(r->rb_note);
        r->rb_note = note;
        r->st = ST_SETTLE;
        next_stage(r);
    }
    free(reason);
    free(tail);
}

static void started_cb(const sup_result *res, void *ud)
{
    op_ctx *c = ud;
    run *r = c->r;
    sup_svc *h = c->h;
    int seq = c->seq;
    free(c);
    if (!unref_live(r)) return;
    r->cur_start = NULL;
    bool ok = res->outcome == SUP_OK;
    buf d = BUF_INIT;
    if (ok) {
        started_detail(r, h, &d);
        if (res->woke || res->fell_back) tier_detail(&d, res, false);
    } else {
        buf_printf(&d, "\"status\":%d,\"code\":", sup_outcome_status(res->outcome));
        buf_json_str_or_null(&d, sup_outcome_code(res->outcome));
        buf_adds(&d, ",\"message\":");
        buf_json_str_or_null(&d, res->message);
    }
    phase_end(r, seq, ok, d.p);
    buf_release(&d);
    if (!ok) {
        start_failed(r, h, res->message);
        return;
    }
    if (r->st != ST_HEALTHY) r->idx++; /* a join: verify-healthy looks again */
    next_stage(r);
}

static void start_one(run *r, const char *phase, sw_svc *v)
{
    if (r->st == ST_START && v->wake_step) phase = "wake";
    int seq = phase_begin(r, phase, v->id);
    if (r->st == ST_START) sw_push(&r->started, v);
    r->cur_start = v;
    r->x->own_start = true; /* past the start guard */
    sup_start_svc(r->x->env.sup, v->h, r->st == ST_RB_START ? "switch" : r->sup_origin, started_cb,
                  op_new(r, seq, v->h));
    r->x->own_start = false;
}

/* ---- verify-healthy, commit, the end ------------------------------- */

/* What hs says of v, or NULL (down, holding nothing). */
static const sup_holding *holding_of(const sup_holding *hs, size_t n, const sup_svc *v)
{
    for (size_t i = 0; i < n; i++)
        if (hs[i].svc == v) return &hs[i];
    return NULL;
}

static bool is_target(const run *r, const sup_svc *v)
{
    for (size_t t = 0; t < r->targets.n; t++)
        if (r->targets.v[t]->h == v) return true;
    return false;
}

/* The switch's outcome into the journal in one transaction with the
 * committed mode (commit_mode NULL: unchanged), and into the mirror. */
static int journal_finish(run *r, const char *state, const char *error, const char *commit_mode, char *err,
                          size_t errlen)
{
    int64_t now = clock_unix_ms();
    if (store_switch_finish(r->x->env.st, r->id, state, now, error, commit_mode, err, errlen)) return -1;
    free(r->rec.state);
    r->rec.state = xstrdup(state);
    r->rec.ended_ms = now;
    if (error) {
        free(r->rec.error);
        r->rec.error = xstrdup(error);
    }
    return 0;
}

/* Every target ready, nothing else holding memory or about to (a service
 * stopping, waiting for its restart), then the commit.  A kept target
 * still starting (started outside this switch) is joined first. */
static void verify_healthy(run *r)
{
    sup_holding h[MAX_SVC];
    size_t n = sup_holdings(r->x->env.sup, h, MAX_SVC);
    for (size_t t = 0; t < r->targets.n; t++) {
        sw_svc *v = r->targets.v[t];
        const sup_holding *o = holding_of(h, n, v->h);
        if (o && o->state == SVC_STARTING && !v->joined) {
            v->joined = true;
            start_one(r, "wait-ready", v); /* joins the start in flight */
            return;
        }
    }
    int seq = phase_begin(r, "verify-healthy", NULL);
    const char *bad = NULL, *bad_state = "down", *extra = NULL, *extra_state = NULL;
    for (size_t t = 0; t < r->targets.n && !bad; t++) {
        const sup_holding *o = holding_of(h, n, r->targets.v[t]->h);
        if (!o || o->state != SVC_READY) {
            bad = r->targets.v[t]->id;
            bad_state = o ? svc_state_names[o->state] : "down";
        }
    }
    for (size_t i = 0; i < n && !bad && !extra; i++)
        if (!is_target(r, h[i].svc) && !h[i].asleep) { /* a sleeper holds what the plan counted */
            extra = h[i].id;
            extra_state = h[i].restart_pending ? "waiting for a restart" : svc_state_names[h[i].state];
        }
    buf d = BUF_INIT;
    buf_printf(&d, "\"services\":%zu", r->targets.n);
    if (bad) {
        buf_adds(&d, ",\"not_ready\":");
        buf_json_str(&d, bad);
        buf_adds(&d, ",\"state\":");
        buf_json_str(&d, bad_state);
    }
    if (extra) {
        buf_adds(&d, ",\"not_in_mode\":");
        buf_json_str(&d, extra);
        buf_adds(&d, ",\"state\":");
        buf_json_str(&d, extra_state);
    }
    phase_end(r, seq, !bad && !extra, d.p);
    buf_release(&d);
    if (bad || extra) {
        char *why = bad ? xasprintf("'%s' is %s, not ready, after the switch's starts", bad, bad_state)
                        : xasprintf("'%s' (%s) is not in mode '%s' but holds memory or is about to, after the "
                                    "switch's stops",
                                    extra, extra_state, r->mode);
        fail(r, bad ? bad : extra, why, NULL);
        free(why);
        return;
    }
    int cseq = phase_begin(r, "commit", NULL);
    char err[256];
    if (journal_finish(r, "committed", NULL, r->mode, err, sizeof err)) {
        /* not recorded: the next start would bring back the old mode, so this is no commit */
        log_warn("switch %" PRId64 ": %s", r->id, err);
        buf dd = BUF_INIT;
        buf_adds(&dd, "\"error\":");
        buf_json_str(&dd, err);
        phase_end(r, cseq, false, dd.p);
        buf_release(&dd);
        char *why = xasprintf("the commit could not be recorded: %s", err);
        fail(r, NULL, why, NULL);
        free(why);
        return;
    }
    phase_end(r, cseq, true, NULL);
    undrain(r);
    buf b = BUF_INIT;
    switch_to_json(&b, &r->rec);
    log_info("switch %" PRId64 ": '%s' -> '%s' committed in %lld ms", r->id, r->from ? r->from : "-", r->mode,
             (long long)(clock_mono_ms() - r->t0_mono));
    answer(r, 200, NULL, NULL, b.p);
    buf_release(&b);
    run_done(r);
}

/* The failure's answer, after the rollback (or the settle in none). */
static void finish_failed(run *r, bool settled_none)
{
    const char *now = mode_of_running(r->x);
    char err[256];
    buf msg = BUF_INIT;
    if (r->fail_service)
        buf_printf(&msg, "switch %" PRId64 " to '%s' failed at '%s': %s", r->id, r->mode, r->fail_service,
                   r->fail_reason ? r->fail_reason : "failed");
    else if (r->timed_out)
        buf_printf(&msg, "switch %" PRId64 " to '%s' timed out after %lld ms", r->id, r->mode,
                   (long long)r->timeout_ms);
    else
        buf_printf(&msg, "switch %" PRId64 " to '%s' failed: %s", r->id, r->mode,
                   r->fail_reason ? r->fail_reason : "failed");
    if (settled_none)
        buf_printf(&msg, "; rollback failed too (%s): every service was stopped and the host is in mode 'none'",
                   r->rb_note ? r->rb_note : "?");
    else if (now)
        buf_printf(&msg, "; rolled back: the host is in mode '%s'", now);
    else {
        buf_adds(&msg, "; rolled back, but the host is in no mode: running ");
        running_words(r->x, &msg);
    }
    if (journal_finish(r, settled_none ? "failed" : "rolled_back", msg.p, settled_none ? "none" : NULL, err,
                       sizeof err))
        log_warn("switch %" PRId64 ": %s", r->id, err);
    if (r->fail_tail && *r->fail_tail) buf_printf(&msg, "; log tail:\n%s", r->fail_tail);
    buf d = BUF_INIT;
    buf_adds(&d, "{\"service\":");
    buf_json_str_or_null(&d, r->fail_service);
    buf_adds(&d, ",\"reason\":");
    buf_json_str_or_null(&d, r->fail_reason);
    buf_adds(&d, ",\"log_tail\":");
    buf_json_str_or_null(&d, r->fail_tail);
    buf_adds(&d, ",\"outcome\":");
    buf_json_str(&d, settled_none ? "failed" : "rolled_back");
    buf_adds(&d, ",\"now\":");
    buf_json_str_or_null(&d, now);
    buf_adds(&d, ",\"running\":");
    running_json(r->x, &d);
    buf_adds(&d, ",\"switch\":");
    switch_to_json(&d, &r->rec);
    buf_addc(&d, '}');
    log_warn("%s", msg.p);
    if (r->timed_out)
        answer(r, 504, "timeout", msg.p, d.p);
    else
        answer(r, 422, "start_failed", msg.p, d.p);
    buf_release(&d);
    buf_release(&msg);
    run_done(r);
}

static void fail(run *r, const char *service, const char *reason, const char *tail)
{
    undrain(r); /* the previous mode comes back: route to it again */
    if (!r->failed) {
        r->failed = true;
        if (service && !r->fail_service) r->fail_service = xstrdup(service);
        if (reason && !r->fail_reason) r->fail_reason = xstrdup(reason);
        if (tail && !r->fail_tail) r->fail_tail = xstrdup(tail);
    }
    /* bring back what was stopped and was running (or about to restart):
     * the plan's stops are in the reverse of the running order, whatever
     * order their parallel stops ended in; start_first presets first */
    r->rb_starts.n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = r->stops.n; i > 0; i--) {
            sw_svc *v = r->stops.v[i - 1];
            if (v->stopped && v->rback && v->start_first == (pass == 0)) sw_push(&r->rb_starts, v);
        }
    r->st = ST_RB_STOP;
    sup_svc *rev[MAX_SVC];
    for (size_t i = 0; i < r->started.n; i++) rev[i] = r->started.v[r->started.n - 1 - i]->h;
    stop_all(r, "rollback-stop", rev, r->started.n);
}

/* ---- the sequence --------------------------------------------------- */

/* drain: the router stops sending new requests to what the plan stops. */
static void phase_drain(run *r)
{
    swx *x = r->x;
    if (!r->stops.n) {
        r->st = ST_STOP;
        next_stage(r);
        return;
    }
    r->drain_seq = phase_begin(r, "drain", NULL);
    if (!x->drain_fn) {
        drain_end(r, true, NULL);
        return;
    }
    r->drain_ticket = ++x->drain_ticket;
    r->drained_ticket = r->drain_ticket;
    r->ndrained = r->stops.n;
    for (size_t i = 0; i < r->stops.n; i++) r->drained[i] = r->stops.v[i]->id;
    int64_t t = cfg_of(x)->set.sw.drain_timeout_ms;
    uv_timer_start(&x->t_drain, drain_timeout, (uint64_t)t, 0);
    x->drain_fn(x, r->drain_ticket, r->drained, r->ndrained, t, x->drain_ud);
}

/* start (or rollback-start): the next service of list, one at a time
 * through the supervisor's load slot; past the last, `after`. */
static bool phase_start_next(run *r, const sw_list *list, const char *phase)
{
    if (r->idx >= list->n) return false;
    start_one(r, phase, list->v[r->idx]);
    return true;
}

/* settle-stop: a rollback failed too; stop everything: the host settles in none. */
static void phase_settle(run *r)
{
    sup_holding h[MAX_SVC];
    size_t n = sup_holdings(r->x->env.sup, h, MAX_SVC);
    sup_svc *all[MAX_SVC];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (is_running_state(h[i].state)) all[k++] = h[i].svc;
    stop_all(r, "settle-stop", all, k);
}

/* The switch, phase by phase.  Each phase ends in a callback that sets
 * the next stage and calls this again:
 *   plan (planned) -> drain -> stop (the stops, then the sleeps) -> verify-freed -> start, one by one
 *   -> verify-healthy (joining a kept target still starting) -> commit;
 * a failure anywhere after the plan (fail) ->
 *   rollback-stop -> verify-freed -> rollback-start -> answered, rolled back;
 * a rollback start that fails -> settle-stop -> answered, in none.
 * The deadline (deadline_fired) only marks the run timed out; the phases
 * look at it here. */
static void next_stage(run *r)
{
    if (r->abandoned) return;
    bool late = r->timed_out;
    sup_svc *hs[MAX_SVC];
    switch (r->st) {
    case ST_DRAIN:
        phase_drain(r);
        return;
    case ST_STOP:
        if (late) fail(r, NULL, NULL, NULL);
        else stop_all(r, "stop", hs, handles_of(&r->stops, hs));
        return;
    case ST_FREED:
        verify_freed(r, &r->starts, r->nstopped > 0, ST_START);
        return;
    case ST_START:
        if (r->idx < r->starts.n && late) {
            fail(r, NULL, NULL, NULL);
        } else if (!phase_start_next(r, &r->starts, "start")) {
            r->st = ST_HEALTHY;
            verify_healthy(r);
        }
        return;
    case ST_HEALTHY: /* back from joining a kept target's start */
        if (late) fail(r, NULL, NULL, NULL);
        else verify_healthy(r);
        return;
    case ST_RB_FREED:
        verify_freed(r, &r->rb_starts, true, ST_RB_START);
        return;
    case ST_RB_START:
        if (!phase_start_next(r, &r->rb_starts, "rollback-start")) finish_failed(r, false);
        return;
    case ST_SETTLE:
        phase_settle(r);
        return;
    case ST_DONE:
        if (r->failed) finish_failed(r, true);
        return;
    default:
        return;
    }
}

static void ignore_result(const sup_result *res, void *ud)
{
}

static void deadline_fired(uv_timer_t *t)
{
    swx *x = t->data;
    run *r = x->cur;
    if (!r || r->failed || r->timed_out) return;
    r->timed_out = true;
    log_warn("switch %" PRId64 " to '%s': switch timeout (%lld ms) passed; rolling back", r->id, r->mode,
             (long long)r->timeout_ms);
    if (r->st == ST_START && r->cur_start) {
        /* cancel the load: its start ends, and the failure path takes over */
        sup_stop_svc(x->env.sup, r->cur_start->h, "switch", ignore_result, NULL);
    } else if (r->st == ST_DRAIN && r->drain_ticket) {
        drain_end(r, false, "the switch timed out while draining");
    }
}

/* The run becomes the current switch; its id, or 0 when it could not
 * begin (answered 503: without a journal entry a crash could not be
 * recovered, so nothing is done). */
static int64_t run_begin(swx *x, run *r)
{
    x->cur = r;
    ensure_timers(x);
    r->t0_mono = clock_mono_ms();
    const char *fm = mode_of_running(x);
    r->from = fm ? xstrdup(fm) : NULL;
    int64_t now = clock_unix_ms();
    char err[256];
    if (store_switch_begin(x->env.st, r->mode, r->from, r->origin, now, &r->id, err, sizeof err)) {
        log_warn("switch: %s", err);
        r->id = 0;
        char *m = xasprintf("switch to '%s' refused: the switch journal cannot be written (%s); nothing was changed",
                            r->mode, err);
        answer(r, 503, "journal_unavailable", m, NULL);
        free(m);
        run_done(r);
        return 0;
    }
    r->rec.id = r->id;
    r->rec.mode = xstrdup(r->mode);
    r->rec.from_mode = r->from ? xstrdup(r->from) : NULL;
    r->rec.origin = xstrdup(r->origin);
    r->rec.state = xstrdup("planned");
    r->rec.started_ms = now;
    log_info("switch %" PRId64 ": '%s' -> '%s' requested by %s", r->id, r->from ? r->from : "-", r->mode, r->origin);
    uv_timer_start(&x->t_deadline, deadline_fired, (uint64_t)(r->timeout_ms > 0 ? r->timeout_ms : 1), 0);
    r->st = ST_PLAN;
    phase_begin(r, "plan", NULL); /* seq 1 */
    r->refs++;
    hostmon_take(x->env.hm, planned, r);
    return r->id;
}

/* ------------------------------------------------------------------ */
/* requests */

static void queue_next(swx *x)
{
    while (!x->cur && x->q_head && !x->closing) {
        queued *q = x->q_head;
        x->q_head = q->next;
        run *r = run_new(x, &q->rq, q->cb, q->ud);
        free((char *)q->rq.mode);
        free((char *)q->rq.origin);
        free(q);
        (void)run_begin(x, r);
    }
}

/* "a switch is in progress: switch 13 from 'A' to 'B', requested by cli; ..." */
static void busy_words(const run *c, buf *m)
{
    buf_printf(m, "a switch is in progress: switch %" PRId64 " from %s%s%s to '%s', requested by %s; try again when it ends",
               c->id, c->from ? "'" : "", c->from ? c->from : "no mode", c->from ? "'" : "", c->mode, c->origin);
}

bool switch_sim_any(const switch_sim *s)
{
    return s && (s->add.n || s->remove.n || s->ctx_id.n);
}

void switch_sim_release(switch_sim *s)
{
    strv_release(&s->add);
    strv_release(&s->remove);
    strv_release(&s->ctx_id);
}

/* 0 when id (of the what-if's field what) is a configured preset, else
 * 404 with m ("add_services: no service 'x' in DIR"; an alias named). */
static int sim_known(const config *cfg, const char *what, const char *id, buf *m)
{
    if (config_preset(cfg, id)) return 0;
    buf_printf(m, "%s: no service '%s' in %s", what, id, cfg->config_dir);
    for (size_t i = 0; i < cfg->n_presets; i++)
        if (strv_find(&cfg->presets[i].aliases, id) >= 0) {
            buf_printf(m, " ('%s' is an alias of '%s': give the service id)", id, cfg->presets[i].id);
            return 404;
        }
    buf_adds(m, " (service ids, not aliases)");
    return 404;
}

/* The what-if, checked against the configuration when it is asked: 0, or
 * the status (400, 404) with m.  What the plan finds later (a reload in
 * between) is the plan's error. */
static int sim_check(const config *cfg, const switch_req *rq, buf *m)
{
    const switch_sim *s = rq->sim;
    if (!rq->dry_run) {
        buf_adds(m, "add_services, remove_services and context_overrides apply only with \"dry_run\": true "
                    "(a simulation): nothing was changed");
        return 400;
    }
    int st = 0;
    for (size_t i = 0; i < s->add.n && !st; i++) st = sim_known(cfg, "add_services", s->add.v[i], m);
    for (size_t i = 0; i < s->remove.n && !st; i++) {
        st = sim_known(cfg, "remove_services", s->remove.v[i], m);
        if (!st && strv_find(&s->add, s->remove.v[i]) >= 0) {
            buf_printf(m, "'%s' is in both add_services and remove_services", s->remove.v[i]);
            st = 400;
        }
    }
    const mode *md = strcmp(rq->mode, "none") ? config_mode(cfg, rq->mode) : NULL;
    for (size_t i = 0; i < s->ctx_id.n && !st; i++) {
        const char *id = s->ctx_id.v[i];
        if ((st = sim_known(cfg, "context_overrides", id, m))) break;
        bool in = (md && strv_find(&md->services, id) >= 0) || strv_find(&s->add, id) >= 0;
        if (!in || strv_find(&s->remove, id) >= 0) {
            buf_printf(m, "context_overrides: '%s' is not in the target set (mode '%s'%s, plus add_services, less "
                          "remove_services)", id, rq->mode, md ? "" : ": the empty mode");
            st = 400;
            break;
        }
        overrides ov = {0};
        char e[512];
        if (ctx_override(config_preset(cfg, id), s->ctx[i], &ov, e, sizeof e)) {
            buf_adds(m, e);
            st = 400;
        }
        overrides_release(&ov);
    }
    return st;
}

int64_t switch_request(swx *x, const switch_req *rq, switch_cb cb, void *ud)
{
    const config *cfg = cfg_of(x);
    switch_result res = {0};
    if (x->closing) {
        res = (switch_result){503, "shutting_down", "the daemon is shutting down", NULL};
        cb(&res, ud);
        return 0;
    }
    if (!rq->mode || (strcmp(rq->mode, "none") && !config_mode(cfg, rq->mode))) {
        buf m = BUF_INIT;
        buf_printf(&m, "no mode '%s' in %s (modes:", rq->mode ? rq->mode : "", cfg->config_dir);
        for (size_t i = 0; i < cfg->n_modes; i++) buf_printf(&m, " %s", cfg->modes[i].id);
        buf_adds(&m, cfg->n_modes ? ", none)" : " none)");
        res = (switch_result){404, "not_found", m.p, NULL};
        cb(&res, ud);
        buf_release(&m);
        return 0;
    }
    if (switch_sim_any(rq->sim)) {
        buf m = BUF_INIT;
        int st = sim_check(cfg, rq, &m);
        if (st) {
            res = (switch_result){st, st == 404 ? "not_found" : "bad_request", m.p, NULL};
            cb(&res, ud);
            buf_release(&m);
            return 0;
        }
        buf_release(&m);
    }
    if (rq->dry_run) {
        run *r = run_new(x, rq, cb, ud);
        r->next_dry = x->dry_head; /* answered 503 and freed at shutdown if its snapshot is late */
        x->dry_head = r;
        r->refs++;
        hostmon_take(x->env.hm, dry_planned, r);
        return 0;
    }
    if (x->cur && !rq->queue) {
        buf m = BUF_INIT, d = BUF_INIT;
        busy_words(x->cur, &m);
        switch_current_json(x, &d);
        res = (switch_result){409, "switch_in_progress", m.p, d.p};
        cb(&res, ud);
        buf_release(&m);
        buf_release(&d);
        return 0;
    }
    if (x->cur) {
        queued *q = xcalloc(1, sizeof *q);
        q->rq = *rq;
        q->rq.mode = xstrdup(rq->mode);
        q->rq.origin = xstrdup(rq->origin ? rq->origin : "router");
        q->cb = cb;
        q->ud = ud;
        queued **pp = &x->q_head;
        while (*pp) pp = &(*pp)->next;
        *pp = q;
        return 0;
    }
    run *r = run_new(x, rq, cb, ud);
    return run_begin(x, r);
}

void switch_rank(swx *x, const char *service, switch_rank_cb cb, void *ud)
{
    if (x->closing) {
        switch_result res = {503, "shutting_down", "the daemon is shutting down", NULL};
        cb(&res, NULL, 0, ud);
        return;
    }
    switch_req rq = {.mode = "none", .origin = "router", .dry_run = true};
    rank_wait *w = xcalloc(1, sizeof *w);
    w->cb = cb;
    w->ud = ud;
    run *r = run_new(x, &rq, rank_failed, w);
    r->rank_for = xstrdup(service);
    r->next_dry = x->dry_head; /* answered 503 and freed at shutdown if its snapshot is late */
    x->dry_head = r;
    r->refs++;
    hostmon_take(x->env.hm, dry_planned, r);
}

/* The supervisor's start guard: while a switch runs, the services are
 * its own, and a start beside it would change the set it verifies (it
 * would fail "'X' is not in mode 'M'" and roll back), so only the
 * switch's own starts go through; the rest are refused, naming it. */
static int start_guard(const char *id, const char *origin, sup_refusal *out, void *ud)
{
    swx *x = ud;
    (void)origin;
    if (!x->cur || x->own_start) return 0;
    buf m = BUF_INIT, d = BUF_INIT;
    buf_printf(&m, "cannot start '%s': ", id);
    busy_words(x->cur, &m);
    switch_current_json(x, &d);
    *out = (sup_refusal){SUP_SWITCH_IN_PROGRESS, buf_detach(&m), buf_detach(&d)};
    return -1;
}

void switch_current_json(swx *x, buf *out)
{
    run *r = x->cur;
    if (!r) {
        buf_adds(out, "null");
        return;
    }
    buf_printf(out, "{\"switch_id\":%" PRId64 ",\"mode\":", r->id);
    buf_json_str(out, r->mode);
    buf_adds(out, ",\"from\":");
    buf_json_str_or_null(out, r->from);
    buf_adds(out, ",\"origin\":");
    buf_json_str(out, r->origin);
    buf_adds(out, ",\"started\":");
    buf_json_time(out, r->rec.started_ms);
    const store_phase *p = r->rec.nphases ? &r->rec.phases[r->rec.nphases - 1] : NULL;
    buf_adds(out, ",\"phase\":");
    buf_json_str_or_null(out, p ? p->phase : NULL);
    buf_adds(out, ",\"service\":");
    buf_json_str_or_null(out, p ? p->service : NULL);
    buf_addc(out, '}');
}

bool switch_current_mode(swx *x, char *out, size_t outlen)
{
    if (!x->cur) return false;
    snprintf(out, outlen, "%s", x->cur->mode);
    return true;
}

int64_t switch_wait_bound(swx *x, int64_t timeout_ms)
{
    const config *cfg = cfg_of(x);
    int64_t t = timeout_ms > 0 ? timeout_ms : cfg->set.sw.timeout_ms;
    int64_t stop = cfg->set.supervisor.stop_timeout_ms + cfg->set.memory.verify_freed_timeout_ms;
    /* the load cancelled at the deadline, the rollback's stops, the settle's stops */
    int64_t bound = t + 3 * stop + cfg->set.memory.verify_freed_timeout_ms;
    sup_holding h[MAX_SVC];
    size_t n = sup_holdings(x->env.sup, h, MAX_SVC);
    for (size_t i = 0; i < n; i++) {
        const preset *p = config_preset(cfg, h[i].id);
        int64_t st = p && p->startup_timeout_ms > 0 ? p->startup_timeout_ms : cfg->set.supervisor.startup_timeout_ms;
        bound += st > 0 ? st : 0;
    }
    if (x->cur) bound += x->cur->timeout_ms; /* a queued request waits for the one running */
    return bound + 30000;
}

int switch_get_json(swx *x, int64_t id, buf *out, char *err, size_t errlen)
{
    store_switch *w = NULL;
    int rc = store_switch_get(x->env.st, id, &w, err, errlen);
    if (rc <= 0) return rc;
    switch_to_json(out, w);
    store_switches_free(w, 1);
    /* {...} -> {..., "result": ...} */
    if (out->len && out->p[out->len - 1] == '}') out->p[--out->len] = '\0';
    const kept_result *k = NULL;
    for (size_t i = 0; i < RESULTS_KEPT; i++)
        if (x->results[i].id == id && x->results[i].body) k = &x->results[i];
    if (k)
        buf_printf(out, ",\"result\":{\"status\":%d,\"body\":%s}}", k->status, k->body);
    else
        buf_adds(out, ",\"result\":null}");
    return 1;
}

int switch_committed(swx *x, char *out, size_t outlen)
{
    char err[256];
    int r = store_committed_get(x->env.st, out, outlen, err, sizeof err);
    if (r < 0) log_warn("switch: %s", err);
    return r > 0;
}

int switch_journal_json(swx *x, size_t limit, buf *out, char *err, size_t errlen)
{
    store_switch *w = NULL;
    size_t n = 0;
    if (store_switches(x->env.st, limit, false, &w, &n, err, errlen)) return -1;
    buf_adds(out, "{\"switches\":[");
    for (size_t i = 0; i < n; i++) {
        if (i) buf_addc(out, ',');
        switch_to_json(out, &w[i]);
    }
    buf_adds(out, "]}");
    store_switches_free(w, n);
    return 0;
}

/* ------------------------------------------------------------------ */
/* start-up, shutdown */

/* Close the entries a crash left open; each becomes `interrupted`. */
static void recover(swx *x, const char *bringing)
{
    store_switch *w = NULL;
    size_t n = 0;
    char err[256];
    if (store_switches(x->env.st, 100, true, &w, &n, err, sizeof err)) {
        log_warn("switch: cannot read the journal: %s", err);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const store_phase *last = w[i].nphases ? &w[i].phases[w[i].nphases - 1] : NULL;
        buf why = BUF_INIT;
        buf_printf(&why, "the daemon stopped during this switch (at phase '%s%s%s%s'); the previous daemon's services "
                         "were stopped at start-up, and the host is brought to %s",
                   last ? last->phase : "plan", last && last->service ? " " : "",
                   last && last->service ? last->service : "", "", bringing);
        if (store_switch_update(x->env.st, w[i].id, "interrupted", clock_unix_ms(), why.p, NULL, err, sizeof err))
            log_warn("switch: %s", err);
        run tmp;
        memset(&tmp, 0, sizeof tmp);
        tmp.x = x;
        tmp.id = w[i].id;
        tmp.mode = w[i].mode;
        tmp.from = w[i].from_mode;
        buf reason = BUF_INIT, data = BUF_INIT;
        buf_printf(&reason, "switch %" PRId64 " to '%s' was interrupted: %s", w[i].id, w[i].mode, why.p);
        buf_printf(&data, "{\"switch_id\":%" PRId64 ",\"phase\":\"recover\",\"state\":\"interrupted\",\"last_phase\":",
                   w[i].id);
        buf_json_str_or_null(&data, last ? last->phase : NULL);
        buf_adds(&data, ",\"last_service\":");
        buf_json_str_or_null(&data, last ? last->service : NULL);
        buf_adds(&data, ",\"bringing\":");
        buf_json_str(&data, bringing);
        buf_addc(&data, '}');
        emit_event(&tmp, NULL, reason.p, data.p);
        log_warn("%s", reason.p);
        buf_release(&reason);
        buf_release(&data);
        buf_release(&why);
    }
    store_switches_free(w, n);
}

void switch_startup(swx *x)
{
    const config *cfg = cfg_of(x);
    const char *sm = cfg->set.sw.startup_mode ? cfg->set.sw.startup_mode : "last";
    char last[128] = "";
    const char *target = NULL;
    if (!strcmp(sm, "none")) {
        target = "none";
    } else if (!strcmp(sm, "last")) {
        target = switch_committed(x, last, sizeof last) ? last : "none";
    } else {
        target = sm;
    }
    buf bringing = BUF_INIT;
    if (strcmp(target, "none") && !config_mode(cfg, target))
        buf_printf(&bringing, "no mode: mode '%s' (startup_mode %s) is not configured, so nothing is started",
                   target, sm);
    else
        buf_printf(&bringing, "mode '%s' (startup_mode %s)", target, sm);
    recover(x, bringing.p);
    buf_release(&bringing);
    if (!strcmp(target, "none")) return; /* reconcile left nothing running: already none */
    if (!config_mode(cfg, target)) {
        log_warn("start-up mode: no mode '%s' in %s; nothing is started", target, cfg->config_dir);
        store_event e = {.ts_ms = clock_unix_ms(), .kind = "switch.phase", .to = target,
                         .reason = "start-up mode: no such mode is configured; nothing is started"};
        char err[256];
        if (store_event_add(x->env.st, &e, &e.id, err, sizeof err) == 0 && x->env.on_event)
            x->env.on_event(&e, x->env.ud);
        return;
    }
    x->su = startup_begin(x, &x->env, target); /* waits for what a previous daemon left, retries */
}

swx *switch_new(const switch_env *env)
{
    swx *x = xcalloc(1, sizeof *x);
    x->env = *env;
    if (x->env.sup) sup_set_start_guard(x->env.sup, start_guard, x);
    return x;
}

static void timer_closed(uv_handle_t *h)
{
}

void switch_shutdown(swx *x)
{
    if (x->closing) return;
    x->closing = true;
    startup_stop(x->su);
    if (x->env.sup) sup_set_start_guard(x->env.sup, NULL, NULL); /* the supervisor outlives us a while */
    run *r = x->cur;
    if (r) {
        undrain(r);
        r->abandoned = true;
        journal_state(r, "interrupted", true,
                      "the daemon shut down during the switch; no rollback was tried (every service is stopped)");
        report_end(r, "interrupted");
        answer(r, 503, "shutting_down", "the daemon is shutting down; the switch was abandoned", NULL);
        r->st = ST_DONE;
        x->cur = NULL;
        if (!r->refs) run_free(r);
        else x->cur = r; /* freed by switch_free or its last callback */
    }
    for (run *d = x->dry_head; d; d = d->next_dry) {
        if (d->abandoned) continue;
        d->abandoned = true;
        answer(d, 503, "shutting_down", "the daemon is shutting down; the dry run was not answered", NULL);
    }
    while (x->q_head) {
        queued *q = x->q_head;
        x->q_head = q->next;
        switch_result res = {503, "shutting_down", "the daemon is shutting down", NULL};
        q->cb(&res, q->ud);
        free((char *)q->rq.mode);
        free((char *)q->rq.origin);
        free(q);
    }
    if (x->timers) {
        uv_timer_stop(&x->t_deadline);
        uv_timer_stop(&x->t_poll);
        uv_timer_stop(&x->t_drain);
        uv_close((uv_handle_t *)&x->t_deadline, timer_closed);
        uv_close((uv_handle_t *)&x->t_poll, timer_closed);
        uv_close((uv_handle_t *)&x->t_drain, timer_closed);
    }
}

void switch_free(swx *x)
{
    if (!x) return;
    startup_free(x->su);
    if (x->cur) run_free(x->cur); /* a snapshot it waited for never came back */
    while (x->dry_head) {
        run *d = x->dry_head;
        x->dry_head = d->next_dry;
        run_free(d);
    }
    for (size_t i = 0; i < RESULTS_KEPT; i++) free(x->results[i].body);
    free(x);
}
