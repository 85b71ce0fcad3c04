/* supervisor.c - the services of one daemon (supervisor.h): the public
 * entry points (start, stop, restart, the watchdog's stop), construction
 * and configuration, shutdown, the events, the waiters and the start's
 * ticket, and the read-only views (holdings, usages, states, and the
 * sup_svc_view the control API renders: the supervisor writes no API
 * JSON and no HTTP status).  The rest lives by concern beside it,
 * sharing the records of sup_internal.h: sup_admit.c (the load slot,
 * admission, the ledger), sup_spawn.c (spawn, output, readiness,
 * footprints, exits, restarts), sup_kill.c (verified stops),
 * sup_reconcile.c (what a previous daemon left, adoption).
 *
 * Every change of a service's state goes through sv_feed(), which asks
 * the table of src/core/lifecycle.c and carries out the action the row
 * names; nothing here assigns a state.  Work that must wait (a snapshot
 * on the thread pool, a health probe, a process exit, a timer) carries
 * the service's generation, bumped whenever a start or a kill begins, so
 * a late answer for an operation that was overtaken is dropped. */
#include "daemon/sup_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/preset.h"
#include "drivers/driver.h"
#include "drivers/hash.h"
#include "util/clock.h"
#include "util/errf.h"
#include "util/log.h"

/* ------------------------------------------------------------------ */
/* small things */

int64_t sv_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sv_set_str(char **dst, const char *src)
{
    free(*dst);
    *dst = src ? xstrdup(src) : NULL;
}

const preset *sv_preset_of(const svc *v)
{
    return v->p;
}

const preset *sv_run_preset(const svc *v, preset *tmp, char *err, size_t errlen)
{
    memset(tmp, 0, sizeof *tmp); /* sv_run_preset_done on it is a no-op */
    if (!v->p) {
        errf(err, errlen, "service '%s' is not configured any more", v->id);
        return NULL;
    }
    if (!overrides_any(&v->ov)) return v->p;
    if (overrides_apply(v->p, &v->ov, tmp, err, errlen) == 0) return tmp;
    overrides_applied_release(tmp);
    return NULL;
}

void sv_run_preset_done(preset *tmp)
{
    overrides_applied_release(tmp);
}

const settings *sv_set_of(const sup *s)
{
    return &s->cfg->set;
}

svc *sv_find(sup *s, const char *id)
{
    for (size_t i = 0; i < s->nsvcs; i++)
        if (!strcmp(s->svcs[i]->id, id)) return s->svcs[i];
    return NULL;
}

svc *sv_add_svc(sup *s, const char *id)
{
    svc *v = xcalloc(1, sizeof *v);
    v->s = s;
    v->id = xstrdup(id);
    v->state = SVC_DOWN;
    v->since_ms = sv_wall_ms();
    v->progress = -1;
    v->p = config_preset(s->cfg, id);
    s->svcs = xrealloc(s->svcs, (s->nsvcs + 1) * sizeof *s->svcs);
    s->svcs[s->nsvcs++] = v;
    return v;
}

void sv_ensure_timers(svc *v)
{
    if (v->timers) return;
    uv_loop_t *l = v->s->env.loop;
    uv_timer_init(l, &v->t_start);
    uv_timer_init(l, &v->t_probe);
    uv_timer_init(l, &v->t_kill);
    uv_timer_init(l, &v->t_restart);
    v->t_start.data = v->t_probe.data = v->t_kill.data = v->t_restart.data = v;
    v->timers = true;
}

/* ------------------------------------------------------------------ */
/* events */

void sv_emit(sup *s, const char *service, const char *kind, const char *from, const char *to,
             const char *reason, const char *data)
{
    store_event e = {.ts_ms = sv_wall_ms(), .service = service, .kind = kind, .from = from, .to = to,
                     .reason = reason, .data = data};
    if (s->env.st) {
        char err[256];
        if (store_event_add(s->env.st, &e, &e.id, err, sizeof err) != 0)
            log_warn("supervisor: cannot store a '%s' event of '%s': %s", kind, service ? service : "-", err);
    }
    if (s->env.on_event) s->env.on_event(&e, s->env.ud);
}

/* ------------------------------------------------------------------ */
/* results */

void sv_call_waiters(waiter *w, const sup_result *r)
{
    while (w) {
        waiter *n = w->next;
        if (w->cb) w->cb(r, w->ud);
        free(w);
        w = n;
    }
}

static waiter *waiter_new(sup_cb cb, void *ud)
{
    waiter *w = xcalloc(1, sizeof *w);
    w->cb = cb;
    w->ud = ud;
    return w;
}

static void push_waiter(waiter **list, sup_cb cb, void *ud)
{
    waiter *w = waiter_new(cb, ud);
    while (*list) list = &(*list)->next;
    *list = w;
}

static void answer_now(sup_cb cb, void *ud, sup_outcome res, const char *msg)
{
    sup_result r = {.outcome = res, .message = msg};
    if (cb) cb(&r, ud);
}

/* The start ends: the ticket's outcome, the waiters, the slot. */
void sv_end_result(svc *v, const char *outcome, const sup_result *r)
{
    sup *s = v->s;
    v->outcome = outcome;
    /* ready-and-measured released it already; any other end frees it too
     * (nothing of this start will load any more) */
    if (strcmp(outcome, "ready") != 0) v->reserved = false;
    v->res = r->outcome;
    sv_set_str(&v->res_msg, r->message);
    if (v->queued) { /* still waiting in the queue: take it out */
        svc **pp = &s->q_head;
        while (*pp && *pp != v) pp = &(*pp)->next_q;
        if (*pp) *pp = v->next_q;
        s->q_tail = NULL;
        for (svc *q = s->q_head; q; q = q->next_q) s->q_tail = q;
        v->next_q = NULL;
        v->queued = false;
    }
    v->admitting = false;
    bool held = v->slot;
    v->slot = false;
    if (held && s->holder == v) s->holder = NULL;
    sup_result rr = *r;
    if (sv_wake_end(v, outcome, &rr)) { /* a failed wake: its waiters wait for the cold start */
        char origin[sizeof v->origin];
        snprintf(origin, sizeof origin, "%s", v->origin);
        sv_do_start(v, origin, NULL);
    } else {
        v->st_woke = rr.woke;
        v->st_fell_back = rr.fell_back;
        waiter *w = v->starts;
        v->starts = NULL;
        sv_call_waiters(w, &rr);
    }
    if (held) sv_slot_next(s);
}

void sv_end_start(svc *v, const char *outcome, sup_outcome res, const char *msg)
{
    sup_result r = {.outcome = res, .message = msg};
    sv_end_result(v, outcome, &r);
}

void sv_set_pending(svc *v, sup_outcome res, const char *msg)
{
    v->pend = res;
    sv_set_str(&v->pend_msg, msg);
}

/* ------------------------------------------------------------------ */
/* the lifecycle */

static void act(svc *v, svc_state from, svc_event ev, svc_action a);

bool sv_feed(svc *v, svc_event ev, const char *words)
{
    svc_transition t;
    if (!lifecycle_step(v->state, ev, &t)) {
        log_warn("supervisor: '%s': event '%s' is not allowed in state '%s'; ignored", v->id, svc_event_names[ev],
                 svc_state_names[v->state]);
        return false;
    }
    svc_state from = v->state;
    v->state = t.next;
    if (t.next != from) {
        v->since_ms = sv_wall_ms();
        buf r = BUF_INIT;
        buf_printf(&r, "%s: %s", svc_event_names[ev], words ? words : "");
        sv_emit(v->s, v->id, "state", svc_state_names[from], svc_state_names[t.next], r.p, NULL);
        buf_release(&r);
    }
    act(v, from, ev, t.action);
    if (from == SVC_READY && v->state != SVC_READY && v->state != SVC_SLEEPING) sv_sleep_left(v);
    return true;
}

/* ------------------------------------------------------------------ */
/* snapshots */

typedef struct take_ctx {
    svc *v;
    bool kill; /* compared with kill_gen, not gen */
    uint64_t gen;
    void (*fn)(svc *v, const snapshot *snap);
} take_ctx;

static void took(const snapshot *snap, void *ud)
{
    take_ctx *c = ud;
    sup *s = c->v->s;
    s->takes--;
    if (c->gen == (c->kill ? c->v->kill_gen : c->v->gen)) c->fn(c->v, snap);
    free(c);
    sv_maybe_shutdown_done(s);
}

void sv_take_gen(svc *v, bool kill, void (*fn)(svc *v, const snapshot *snap))
{
    take_ctx *c = xcalloc(1, sizeof *c);
    c->v = v;
    c->kill = kill;
    c->gen = kill ? v->kill_gen : v->gen;
    c->fn = fn;
    v->s->takes++;
    hostmon_take(v->s->env.hm, took, c);
}

void sv_take(svc *v, void (*fn)(svc *v, const snapshot *snap))
{
    sv_take_gen(v, false, fn);
}

/* ------------------------------------------------------------------ */

static void act(svc *v, svc_state from, svc_event ev, svc_action a)
{
    switch (a) {
    case ACT_ADMIT:
        sv_enqueue(v);
        break;
    case ACT_KILL:
        v->slots_save = from == SVC_READY && ev == EV_STOP; /* sup_slots.c saves first */
        sv_begin_kill(v);
        break;
    case ACT_RESTART:
        if (v->state == SVC_UNHEALTHY)
            sv_begin_kill(v); /* the restart: kill first; the policy asks when the group is gone */
        else if (ev == EV_EXITED && v->s->run->owns_restarts) {
            /* systemd saw the exit and did not restart it (on_respawn
             * would have come): it ended for good */
            if (v->end_failed) sv_feed(v, EV_GIVE_UP, "systemd gave up on the unit");
        } else
            sv_policy_restart(v); /* a health failure: systemd cannot see it, the daemon restarts */
        break;
    default:
        break;
    }
}

/* A new start (ticket) through the lifecycle. */
void sv_do_start(svc *v, const char *origin, const overrides *ov)
{
    sup *s = v->s;
    sv_ensure_timers(v);
    v->gen++;
    uv_timer_stop(&v->t_restart);
    v->next_restart_ms = 0;
    bool joined = !strcmp(origin, "restart") && v->starts && v->outcome && !strcmp(v->outcome, "pending");
    if (!joined) { /* else: the ticket of a start that joined while unhealthy carries on */
        v->seq = ++s->seq;
        snprintf(v->origin, sizeof v->origin, "%s", origin);
    }
    v->outcome = "pending";
    v->res = SUP_OK;
    sv_set_str(&v->res_msg, NULL);
    sv_set_pending(v, SUP_OK, NULL);
    v->start_at_ms = sv_wall_ms();
    if (!v->waking) v->run_hash[0] = 0; /* set at admission, from the config of that moment (a wake compares) */
    v->run_ctx = 0;
    if (ov) overrides_copy(&v->ov, ov);
    v->ran = false;
    if (strcmp(origin, "restart") != 0) { /* a person (or a switch) asked: a fresh policy window */
        memset(&v->hist, 0, sizeof v->hist);
        v->attempt = 0;
    }
    char words[64];
    snprintf(words, sizeof words, "requested by %s", origin);
    sv_feed(v, EV_START, words);
}

void sup_set_start_guard(sup *s, sup_guard_fn fn, void *ud)
{
    s->guard = fn;
    s->guard_ud = ud;
}

/* The guard said no: cb answered with its refusal.  True then. */
static bool guarded(sup *s, const char *id, const char *origin, sup_cb cb, void *ud)
{
    sup_refusal r = {0};
    if (!s->guard || s->guard(id, origin, &r, s->guard_ud) == 0) return false;
    sup_result res = {.outcome = r.outcome, .message = r.message, .detail = r.detail};
    if (cb) cb(&res, ud);
    free(r.message);
    free(r.detail);
    return true;
}

bool sup_origin_is_person(const char *origin)
{
    return !origin || !strcmp(origin, "cli") || !strcmp(origin, "api");
}

sup_svc *sup_lookup(sup *s, const char *id)
{
    return id ? sv_find(s, id) : NULL;
}

const char *sup_svc_id(const sup_svc *v)
{
    return v->id;
}

static void answer_not_configured(sup_cb cb, void *ud, const char *id)
{
    char *m = xasprintf("no service '%s' is configured", id);
    answer_now(cb, ud, SUP_NOT_FOUND, m);
    free(m);
}

uint64_t sup_start(sup *s, const char *id, const char *origin, sup_cb cb, void *ud)
{
    return sup_start_with(s, id, origin, NULL, cb, ud);
}

static uint64_t sup_start_svc_with(sup *s, sup_svc *v, const char *origin, const overrides *ov, sup_cb cb,
                                   void *ud);

uint64_t sup_start_with(sup *s, const char *id, const char *origin, const overrides *ov, sup_cb cb, void *ud)
{
    svc *v = sv_find(s, id);
    if (!v) {
        answer_not_configured(cb, ud, id);
        return 0;
    }
    return sup_start_svc_with(s, v, origin, ov, cb, ud);
}

uint64_t sup_start_svc(sup *s, sup_svc *v, const char *origin, sup_cb cb, void *ud)
{
    return sup_start_svc_with(s, v, origin, NULL, cb, ud);
}

/* The overrides asked cannot run: the runner runs what is installed, or
 * the preset's driver takes no such key.  True when cb was answered. */
static bool overrides_refused(sup *s, const svc *v, const overrides *ov, sup_cb cb, void *ud)
{
    char err[512];
    char *m = NULL;
    if (!strcmp(s->run->name, "systemd")) {
        m = xasprintf("cannot start '%s' with overrides: the systemd runner starts its installed unit "
                      "gpumod-%s.service as written (overrides need supervisor.runner: spawn)",
                      v->id, v->id);
    } else if (v->p) {
        preset tmp;
        if (overrides_apply(v->p, ov, &tmp, err, sizeof err) != 0)
            m = xasprintf("cannot start '%s' with overrides: %s", v->id, err);
        overrides_applied_release(&tmp);
    }
    if (!m) return false;
    answer_now(cb, ud, SUP_BAD_REQUEST, m);
    free(m);
    return true;
}

/* A start asks ov of a service starting, ready or unhealthy: the same
 * settings as it has (its preset with its own overrides, at the context
 * size it was admitted with), or a conflict (cb answered, true) that says
 * what runs. */
static bool overrides_conflict(const svc *v, const overrides *ov, sup_cb cb, void *ud)
{
    if (!overrides_any(ov) || !v->p) return false;
    preset run;
    char err[512];
    if (overrides_apply(v->p, &v->ov, &run, err, sizeof err) != 0) {
        overrides_applied_release(&run);
        return false; /* what runs no longer applies: a restart will say so */
    }
    if (v->run_ctx > 0) run.context_size = run.vllm.max_model_len = v->run_ctx;
    buf have = BUF_INIT, want = BUF_INIT;
    bool differ = overrides_differ(&run, ov, &have, &want);
    overrides_applied_release(&run);
    if (differ) {
        char *m = xasprintf("'%s' is %s with %s; stop it first to start it with %s", v->id,
                            svc_state_names[v->state], have.p, want.p);
        answer_now(cb, ud, SUP_CONFLICT, m);
        free(m);
    }
    buf_release(&have);
    buf_release(&want);
    return differ;
}

static uint64_t sup_start_svc_with(sup *s, sup_svc *v, const char *origin, const overrides *ov, sup_cb cb, void *ud)
{
    const char *id = v->id;
    static const overrides none;
    if (!overrides_any(ov)) ov = &none;
    if (!v->p && (v->state == SVC_DOWN || v->state == SVC_FAILED)) {
        answer_not_configured(cb, ud, id);
        return 0;
    }
    if (s->shutting) {
        answer_now(cb, ud, SUP_SHUTTING_DOWN, "the daemon is shutting down");
        return 0;
    }
    if (overrides_any(ov) && overrides_refused(s, v, ov, cb, ud)) return 0;
    if ((v->state == SVC_READY || v->state == SVC_STARTING || v->state == SVC_UNHEALTHY) &&
        overrides_conflict(v, ov, cb, ud))
        return 0;
    switch (v->state) {
    case SVC_READY: {
        v->seq = ++s->seq;
        v->outcome = "ready";
        v->res = SUP_OK;
        sv_set_str(&v->res_msg, NULL);
        v->start_at_ms = sv_wall_ms();
        answer_now(cb, ud, SUP_OK, NULL);
        return v->seq;
    }
    case SVC_STARTING:
        push_waiter(&v->starts, cb, ud);
        return v->seq;
    case SVC_UNHEALTHY:
        /* joins the restart under way: a ticket of its own (the last one
         * says "ready" already), which the restart's start keeps */
        if (!v->outcome || strcmp(v->outcome, "pending") != 0) {
            v->seq = ++s->seq;
            snprintf(v->origin, sizeof v->origin, "%s", origin ? origin : "api");
            v->outcome = "pending";
            v->res = SUP_OK;
            sv_set_str(&v->res_msg, NULL);
            v->start_at_ms = sv_wall_ms();
        }
        push_waiter(&v->starts, cb, ud);
        return v->seq;
    case SVC_STOPPING: {
        char *m = xasprintf("'%s' is stopping; start it again once it is down", id);
        answer_now(cb, ud, SUP_CONFLICT, m);
        free(m);
        return 0;
    }
    default:
        break;
    }
    if (v->killing) { /* failed and its group is still being killed */
        char *m = xasprintf("'%s' failed and is still being cleaned up; try again in a moment", id);
        answer_now(cb, ud, SUP_CONFLICT, m);
        free(m);
        return 0;
    }
    if (v->state == SVC_FAILED && !sup_origin_is_person(origin)) {
        char *m = xasprintf("service '%s' failed; a person must start it", id);
        answer_now(cb, ud, SUP_NEEDS_PERSON, m);
        free(m);
        return 0;
    }
    if (guarded(s, id, origin, cb, ud)) return 0;
    push_waiter(&v->starts, cb, ud);
    if (v->state == SVC_SLEEPING) { /* a wake: admitted, then the tier's wake calls (sup_sleep.c) */
        v->waking = true;
        v->wake_t0 = clock_mono_ms();
        v->zz_load_ms = v->load_ms;
        sv_set_str(&v->wake_fail, NULL);
    }
    sv_do_start(v, origin ? origin : "api", ov);
    return v->seq;
}

void sup_stop(sup *s, const char *id, const char *origin, sup_cb cb, void *ud)
{
    svc *v = sv_find(s, id);
    if (!v)
        answer_not_configured(cb, ud, id);
    else
        sup_stop_svc(s, v, origin, cb, ud);
}

void sup_stop_svc(sup *s, sup_svc *v, const char *origin, sup_cb cb, void *ud)
{
    const char *id = v->id;
    char words[64], by[48];
    snprintf(by, sizeof by, "a stop (%s)", origin ? origin : "api");
    sv_cancel_restart_for(v, by);
    snprintf(words, sizeof words, "requested by %s", origin ? origin : "api");
    switch (v->state) {
    case SVC_DOWN:
        sv_feed(v, EV_STOP, words);
        answer_now(cb, ud, SUP_OK, NULL);
        return;
    case SVC_FAILED:
        if (v->killing) {
            push_waiter(&v->stops, cb, ud);
        } else {
            sv_feed(v, EV_STOP, words);
            answer_now(cb, ud, SUP_OK, NULL);
        }
        return;
    case SVC_STOPPING:
        push_waiter(&v->stops, cb, ud);
        return;
    case SVC_STARTING:
        if (!v->h) {
            sv_set_pending(v, s->shutting ? SUP_SHUTTING_DOWN : SUP_CONFLICT,
                           s->shutting ? "the daemon is shutting down" : "stopped before it started");
        } else {
            char *m = xasprintf("'%s' was stopped during load (by %s)", id, origin ? origin : "api");
            sv_set_pending(v, s->shutting ? SUP_SHUTTING_DOWN : SUP_CONFLICT, m);
            free(m);
        }
        break;
    default:
        break;
    }
    push_waiter(&v->stops, cb, ud);
    sv_feed(v, EV_STOP, words);
}

typedef struct restart_ctx {
    sup *s;
    char *id, *origin;
    overrides ov;
    sup_cb cb;
    void *ud;
} restart_ctx;

static void restart_stopped(const sup_result *r, void *ud)
{
    restart_ctx *c = ud;
    if (r->outcome == SUP_OK)
        sup_start_with(c->s, c->id, c->origin, &c->ov, c->cb, c->ud);
    else if (c->cb)
        c->cb(r, c->ud); /* the stop's result, detail and all */
    overrides_release(&c->ov);
    free(c->id);
    free(c->origin);
    free(c);
}

void sup_restart(sup *s, const char *id, const char *origin, sup_cb cb, void *ud)
{
    sup_restart_with(s, id, origin, NULL, cb, ud);
}

void sup_restart_with(sup *s, const char *id, const char *origin, const overrides *ov, sup_cb cb, void *ud)
{
    svc *v = sv_find(s, id);
    if (v && guarded(s, id, origin, cb, ud)) return;
    /* overrides that cannot run are refused before anything is stopped */
    if (v && overrides_any(ov) && overrides_refused(s, v, ov, cb, ud)) return;
    restart_ctx *c = xcalloc(1, sizeof *c);
    c->s = s;
    c->id = xstrdup(id);
    c->origin = xstrdup(origin ? origin : "api");
    overrides_copy(&c->ov, ov);
    c->cb = cb;
    c->ud = ud;
    sup_stop(s, id, origin, restart_stopped, c);
}

void sup_watchdog_stop(sup *s, const char *id, const char *reason, const char *data_json)
{
    svc *v = sv_find(s, id);
    sv_emit(s, id, "watchdog", NULL, NULL, reason, data_json);
    if (!v) return;
    if (v->state == SVC_STARTING || (v->state == SVC_READY && v->slot)) {
        /* during load, or while its footprint is measured: the start ends
         * SUP_START_FAILED with the watchdog's reason */
        char *m = xasprintf("'%s' was stopped by the memory watchdog during load: %s", id, reason);
        sv_set_pending(v, SUP_START_FAILED, m);
        free(m);
    }
    {
        char *m = xasprintf("'%s' was stopped by the memory watchdog: %s", id, reason);
        sv_cancel_restart(v, s->shutting ? SUP_SHUTTING_DOWN : SUP_START_FAILED,
                          s->shutting ? "the daemon is shutting down" : m);
        free(m);
    }
    char *w = xasprintf("memory watchdog: %s", reason);
    sv_feed(v, EV_WATCHDOG, w);
    free(w);
}

/* ------------------------------------------------------------------ */
/* construction, config */

/* Every configured preset has a record (a handle that lives until
 * sup_free), and every record its preset of s->cfg: the one place a
 * service's id is looked up in the configuration. */
static void bind_presets(sup *s)
{
    for (size_t i = 0; i < s->nsvcs; i++) s->svcs[i]->p = NULL;
    for (size_t i = 0; i < s->cfg->n_presets; i++) {
        const preset *p = &s->cfg->presets[i];
        if (!p->id) continue;
        svc *v = sv_find(s, p->id);
        if (!v) v = sv_add_svc(s, p->id);
        v->p = p;
    }
}

sup *sup_new(const sup_env *env, const config *cfg, char *err, size_t errlen)
{
    if (!env || !env->loop || !env->hm || !env->exec_helper || !cfg) {
        errf(err, errlen, "supervisor: loop, hostmon, exec helper and config are required");
        return NULL;
    }
    sup *s = xcalloc(1, sizeof *s);
    s->env = *env;
    s->exec_helper = xstrdup(env->exec_helper);
    s->proc_root = env->proc_root ? xstrdup(env->proc_root) : NULL;
    s->run_dir = env->run_dir ? xstrdup(env->run_dir) : NULL;
    s->env.exec_helper = s->exec_helper;
    s->env.proc_root = s->proc_root;
    s->env.run_dir = s->run_dir;
    s->cfg = cfg;
    if (cfg->set.supervisor.runner == RUNNER_SYSTEMD) {
        /* the user manager; a daemon of root with no session bus: the system one */
        bool user = geteuid() != 0 || (getenv("DBUS_SESSION_BUS_ADDRESS") && *getenv("DBUS_SESSION_BUS_ADDRESS"));
        const settings *st = &cfg->set;
        char *d = st->log_dir ? xstrdup(st->log_dir) : xasprintf("%s/logs", st->state_dir ? st->state_dir : ".");
        mkdir(d, 0750);
        s->run = runner_systemd_new(env->loop, user, d, err, errlen);
        free(d);
        if (!s->run) {
            free(s->exec_helper);
            free(s->proc_root);
            free(s->run_dir);
            free(s);
            return NULL;
        }
        s->run->on_reconnect = sv_bus_back;
        s->run->reconnect_ud = s;
    } else {
        s->run = runner_spawn_new(env->loop, s->exec_helper);
    }
    bind_presets(s);
    return s;
}

static bool live(const svc *v)
{
    return v->state == SVC_STARTING || v->state == SVC_READY || v->state == SVC_UNHEALTHY ||
           v->state == SVC_STOPPING || v->killing;
}

int sup_set_config(sup *s, const config *cfg, strv *changed, char *err, size_t errlen)
{
    if (!cfg) {
        errf(err, errlen, "supervisor: no configuration given");
        return -1;
    }
    s->cfg = cfg;
    bind_presets(s);
    for (size_t i = 0; i < s->nsvcs; i++) {
        svc *v = s->svcs[i];
        if (!live(v) || !v->run_hash[0] || !v->p) continue;
        /* what it would run now, with its start's overrides */
        char h[65], e[512];
        preset tmp;
        const preset *p = sv_run_preset(v, &tmp, e, sizeof e);
        if (!p || config_hash(p, &cfg->set, h, NULL, e, sizeof e) != 0 || strcmp(h, v->run_hash) != 0) {
            if (changed) strv_push(changed, v->id);
        }
        sv_run_preset_done(&tmp);
    }
    return 0;
}

size_t sup_usages(sup *s, sup_usage *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nsvcs && n < max; i++) {
        svc *v = s->svcs[i];
        if (!(v->state == SVC_STARTING || v->state == SVC_READY || v->state == SVC_UNHEALTHY ||
              v->state == SVC_STOPPING || v->state == SVC_SLEEPING))
            continue;
        memset(&out[n], 0, sizeof out[n]);
        out[n].id = v->id;
        out[n].state = v->state;
        out[n].pgid = v->pgid;
        out[n].loading = v->state == SVC_STARTING && v->slot;
        if (v->state == SVC_SLEEPING) /* judged against what it holds asleep */
            out[n].admitted = v->zz_held;
        else if (v->has_admitted)
            out[n].admitted = v->admitted;
        out[n].started_ms = v->spawn_mono;
        n++;
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* what the control API shows (supervisor.h sup_svc_view) */

static bool listed(sup *s, const svc *v)
{
    return v->p || (v->state != SVC_DOWN && v->state != SVC_FAILED) || v->killing;
}

static int queue_pos(sup *s, const svc *v)
{
    int k = 1;
    for (svc *q = s->q_head; q; q = q->next_q, k++)
        if (q == v) return k;
    return 0;
}

/* The restart policy shown: what the service runs with, else what its
 * preset would give it now. */
static restart_policy_v shown_policy(const svc *v, bool running)
{
    const preset *p = sv_preset_of(v);
    if (running || !p) return v->pol;
    svc tmp;
    memset(&tmp, 0, sizeof tmp);
    sv_copy_running(&tmp, p, sv_set_of(v->s));
    free(tmp.host);
    free(tmp.health_path);
    free(tmp.canary_prompt);
    free(tmp.canary_expect);
    return tmp.pol;
}

void sup_set_json_ext(sup *s, sup_json_ext_fn fn, void *ud)
{
    s->json_ext = fn;
    s->json_ext_ud = ud;
}

void sup_json_ext(sup *s, const char *id, buf *out)
{
    if (s->json_ext) s->json_ext(id, out, s->json_ext_ud);
}

bool sup_svc_view_of(sup_svc *v, sup_svc_view *o)
{
    sup *s = v->s;
    if (!listed(s, v)) return false;
    const preset *p = sv_preset_of(v);
    const settings *st = sv_set_of(s);
    memset(o, 0, sizeof *o);
    o->id = v->id;
    int drv = p ? p->driver : v->driver;
    o->driver = drv >= 0 && drv < DRV__COUNT ? driver_names[drv] : NULL;
    o->port = p ? (int)p->port : v->port;
    o->configured = p != NULL;
    o->state = v->state;
    sv_sleep_view(v, o);
    o->start_woke = v->st_woke;
    o->start_fell_back = v->st_fell_back;
    o->since_ms = v->since_ms;
    if (v->pgid > 0) {
        v->pid = s->run && v->h && !v->exited ? s->run->pid(v->h) : v->pgid; /* the exit event names it too */
        o->pid = v->pid;
        o->pgid = v->pgid;
    }
    o->progress_pct = v->state == SVC_STARTING && v->progress >= 0 ? v->progress : -1;
    char e[256];
    if (p && config_hash(p, st, o->hash_buf, NULL, e, sizeof e) == 0) o->config_hash = o->hash_buf;
    bool running = live(v) && v->run_hash[0];
    o->running_hash = running ? v->run_hash : NULL;
    o->overrides = (live(v) || v->next_restart_ms > 0) && overrides_any(&v->ov) ? &v->ov : NULL;
    o->admitted = v->reserved || (live(v) && v->has_admitted) ? &v->admitted : NULL;
    o->footprint = v->has_fp ? &v->fp : NULL;
    o->load_ms = v->load_ms;
    restart_policy_v pol = shown_policy(v, running);
    int64_t now = clock_mono_ms();
    for (size_t i = 0; i < v->hist.n; i++)
        if (now - v->hist.at_ms[i] < pol.window_ms) o->restarts_in_window++;
    o->max_restarts = pol.max_restarts;
    o->restart_window_ms = pol.window_ms;
    o->next_restart_ms = v->next_restart_ms;
    o->health_failures = v->fails;
    o->last_ok_ms = v->last_ok_ms;
    o->has_exit = v->has_exit;
    o->exit_code = v->exit_code;
    o->exit_sig = v->exit_sig;
    o->exit_ms = v->exit_ms;
    o->start_seq = v->seq;
    o->start_origin = v->origin;
    o->start_outcome = v->outcome ? v->outcome : "pending";
    o->start_result = v->res;
    o->start_message = v->res_msg;
    o->start_at_ms = v->start_at_ms;
    o->queued = queue_pos(s, v);
    o->canary_running = v->canary != NULL;
    o->canary = v->has_canary ? &v->last_canary : NULL;
    o->canary_at_ms = v->canary_at_ms;
    char *d = st->log_dir ? xstrdup(st->log_dir) : xasprintf("%s/logs", st->state_dir ? st->state_dir : ".");
    snprintf(o->log_file, sizeof o->log_file, "%s/%s.log", d, v->id);
    free(d);
    return true;
}

size_t sup_nsvcs(const sup *s)
{
    return s->nsvcs;
}

size_t sup_slot(sup *s, const char **holder, const char **waiting, size_t max)
{
    *holder = s->holder ? s->holder->id : NULL;
    size_t n = 0;
    for (svc *q = s->q_head; q; q = q->next_q, n++)
        if (n < max) waiting[n] = q->id;
    return n;
}

/* ------------------------------------------------------------------ */
/* shutdown */

static void timer_closed(uv_handle_t *h);

void sv_maybe_shutdown_done(sup *s)
{
    if (!s->shutting || s->shut_closing || s->shut_pending > 0 || s->takes > 0 || s->recon_cb) return;
    for (size_t i = 0; i < s->nsvcs; i++)
        if (s->svcs[i]->killing || s->svcs[i]->h) return;
    s->shut_closing = true;
    s->closing_handles = 1; /* held until every close is issued */
    for (size_t i = 0; i < s->nsvcs; i++) {
        svc *v = s->svcs[i];
        sv_stop_probe(v);
        if (!v->timers) continue;
        uv_timer_t *ts[] = {&v->t_start, &v->t_probe, &v->t_kill, &v->t_restart};
        for (size_t k = 0; k < 4; k++) {
            ts[k]->data = s;
            s->closing_handles++;
            uv_close((uv_handle_t *)ts[k], timer_closed);
        }
        v->timers = false;
    }
    if (s->recon_timer) {
        s->t_recon.data = s;
        s->closing_handles++;
        uv_close((uv_handle_t *)&s->t_recon, timer_closed);
        s->recon_timer = false;
    }
    if (--s->closing_handles == 0) {
        void (*cb)(void *) = s->shut_cb;
        s->shut_cb = NULL;
        if (cb) cb(s->shut_ud);
    }
}

static void timer_closed(uv_handle_t *h)
{
    sup *s = h->data;
    if (--s->closing_handles == 0) {
        void (*cb)(void *) = s->shut_cb;
        s->shut_cb = NULL;
        if (cb) cb(s->shut_ud);
    }
}

static void shut_stopped(const sup_result *r, void *ud)
{
    sup *s = ud;
    (void)r;
    s->shut_pending--;
    sv_maybe_shutdown_done(s);
}

void sup_shutdown(sup *s, void (*cb)(void *ud), void *ud)
{
    if (s->shutting) return;
    s->shutting = true;
    s->shut_cb = cb;
    s->shut_ud = ud;
    s->shut_pending = 1;
    if (s->recon_cb) /* a reconcile in progress: what it still waits for gets SIGKILL; it ends on its timer */
        sv_recon_kill_now(s);
    for (size_t i = 0; i < s->nsvcs; i++) {
        svc *v = s->svcs[i];
        sv_cancel_restart(v, SUP_SHUTTING_DOWN, "the daemon is shutting down");
        sv_sleep_cancel(v);
        sv_slots_cancel(v);
        if (v->state == SVC_STARTING || v->state == SVC_READY || v->state == SVC_UNHEALTHY ||
            v->state == SVC_STOPPING || v->state == SVC_SLEEPING || v->killing) {
            s->shut_pending++;
            sup_stop(s, v->id, "shutdown", shut_stopped, s);
        }
    }
    s->shut_pending--;
    sv_maybe_shutdown_done(s);
}

void sup_free(sup *s)
{
    if (!s) return;
    sv_scan_drop(s);
    sv_extras_free(s);
    sup_result down = {.outcome = SUP_SHUTTING_DOWN, .message = "the daemon is shutting down"};
    for (size_t i = 0; i < s->nsvcs; i++) {
        svc *v = s->svcs[i];
        waiter *w = v->starts;
        v->starts = NULL;
        sv_call_waiters(w, &down);
        w = v->stops;
        v->stops = NULL;
        sv_call_waiters(w, &down);
        w = v->sleeps;
        v->sleeps = NULL;
        sv_call_waiters(w, &down);
        free(v->wake_fail);
        logring_free(v->log);
        free(v->id);
        free(v->host);
        free(v->health_path);
        free(v->canary_prompt);
        free(v->canary_expect);
        free(v->res_msg);
        free(v->pend_msg);
        overrides_release(&v->ov);
        free(v);
    }
    free(s->svcs);
    while (s->watches) {
        sup_log_watch *w = s->watches;
        s->watches = w->next;
        free(w->id);
        free(w);
    }
    sv_recon_release(s);
    if (s->run) s->run->free(s->run);
    free(s->exec_helper);
    free(s->proc_root);
    free(s->run_dir);
    free(s);
}

/* ------------------------------------------------------------------ */
/* for a mode switch's plan (supervisor.h sup_holdings) */

size_t sup_holdings(sup *s, sup_holding *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nsvcs && n < max; i++) {
        svc *v = s->svcs[i];
        bool live = v->state == SVC_STARTING || v->state == SVC_READY || v->state == SVC_UNHEALTHY ||
                    v->state == SVC_STOPPING || v->killing;
        bool restart = v->state == SVC_DOWN && v->next_restart_ms > 0;
        if (!live && !restart && v->state != SVC_SLEEPING) continue;
        sup_holding *h = &out[n++];
        memset(h, 0, sizeof *h);
        h->id = v->id;
        h->svc = v;
        h->state = v->state;
        snprintf(h->hash, sizeof h->hash, "%s", v->run_hash);
        h->load_ms = v->state == SVC_STARTING ? -1 : v->load_ms;
        h->restart_pending = restart;
        h->killing = v->killing;
        sv_holding_tiers(v, h);
        if (v->state == SVC_SLEEPING) {
            h->held = h->asleep_need;
            h->measured = h->asleep_measured;
            continue;
        }
        if (!live) continue; /* down, waiting for its restart: holds nothing yet */
        if (v->has_fp && v->run_hash[0] && !strcmp(v->fp.hash, v->run_hash) && v->state != SVC_STARTING) {
            snprintf(h->held.source, sizeof h->held.source, "measured");
            h->held.host_bytes = v->fp.host_bytes;
            for (size_t g = 0; g < v->fp.ngpu && g < HOST_MAX_GPUS; g++) {
                h->held.gpu[g].index = v->fp.gpu[g].index;
                h->held.gpu[g].bytes = v->fp.gpu[g].bytes;
            }
            h->held.ngpu = v->fp.ngpu < HOST_MAX_GPUS ? v->fp.ngpu : HOST_MAX_GPUS;
            h->measured = true;
            /* a device the admission counted but the footprint shows nothing on (a driver that
             * hides per-process figures, unified memory): what it holds there is unknown, so
             * the admitted bytes stand for it, or a switch could not count them coming back */
            for (size_t a = 0; v->has_admitted && a < v->admitted.ngpu && a < HOST_MAX_GPUS; a++) {
                if (!v->admitted.gpu[a].bytes) continue;
                size_t g = 0;
                while (g < h->held.ngpu && h->held.gpu[g].index != v->admitted.gpu[a].index) g++;
                if (g == h->held.ngpu) {
                    if (g == HOST_MAX_GPUS) continue;
                    h->held.gpu[g].index = v->admitted.gpu[a].index;
                    h->held.gpu[g].bytes = 0;
                    h->held.ngpu++;
                }
                if (!h->held.gpu[g].bytes) h->held.gpu[g].bytes = v->admitted.gpu[a].bytes;
            }
        } else if (v->has_admitted) {
            h->held = v->admitted;
        }
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* for the router (supervisor.h sup_states) */

static void state_info(const svc *v, sup_state_info *o)
{
    o->id = v->id;
    o->svc = (sup_svc *)v;
    o->state = v->state;
    o->progress_pct = v->state == SVC_STARTING && v->progress >= 0 ? v->progress : -1;
}

bool sup_svc_state(const sup_svc *v, sup_state_info *out)
{
    if (!v || !listed(v->s, v)) return false;
    state_info(v, out);
    return true;
}

size_t sup_states(sup *s, const char *id, sup_state_info *out, size_t max)
{
    if (!max) return 0;
    if (id) {
        svc *v = sv_find(s, id);
        if (!v || !listed(s, v)) return 0;
        state_info(v, &out[0]);
        return 1;
    }
    size_t n = 0;
    for (size_t i = 0; i < s->cfg->n_presets && n < max; i++) {
        const char *pid = s->cfg->presets[i].id;
        if (pid) state_info(sv_find(s, pid), &out[n++]);
    }
    for (size_t i = 0; i < s->nsvcs && n < max; i++) {
        svc *v = s->svcs[i];
        if (v->p || !listed(s, v)) continue;
        state_info(v, &out[n++]);
    }
    return n;
}

