/* activate.c - activation on demand (activate.h; docs/router.md
 * "Activation on demand").
 *
 * Per service: a list of waiters and at most one load in flight (a
 * supervisor start, or a mode switch), which every waiter shares.  The
 * load's callback answers every waiter of the service with its outcome.
 * Waiters are never answered from inside a call into this file or the
 * supervisor: an answer is decided, the waiter moves to a done list, and a
 * zero-delay timer delivers the callbacks on the next loop turn.  That
 * keeps act_request's promise and lets a callback call act_request or
 * act_cancel freely.
 *
 * While any waiter exists a 100 ms timer looks at each waited-for
 * service's state and load percentage (the daemon's states: a few
 * compares), tells waiters when they change, and answers the waiters
 * whose deadline has passed (504).  With no waiters it is stopped.
 *
 * The `switch` rule tries a start beside the running services first (the
 * supervisor's admission asks the gate on fresh figures and spawns
 * nothing when it says no), and only on the gate's refusal switches to a
 * mode containing the service: the one whose plan fits, with the fewest
 * stops, then the smallest (the daemon's rank, on one snapshot; a mode the
 * plan refuses is never tried, and when none fits the 503 names each and
 * why).  A load in flight holds an op
 * whose activator pointer is cleared by act_free, so a late callback from
 * the supervisor or the switch finds nothing to answer and frees the op.
 * The supervisor and the switch are reached only through the table the
 * daemon lends (rhost.h). */
#include "router/activate.h"

#include "util/log.h"
#include "util/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACT_TICK_MS 100
#define ACT_RETRY_AFTER_S 30 /* reject, a gate refusal, a blocked start: documented in docs/router.md */

typedef struct act_svc act_svc;
typedef struct act_op act_op;

struct act_wait {
    act_wait *prev, *next; /* in its service's queue, or in the done list */
    activator *a;
    act_svc *v;            /* NULL once in the done list */
    act_done_cb done;
    act_progress_cb progress;
    void *ud;
    int64_t t0_ms, deadline_ms;
    bool queued; /* waited in a queue: counts in the queue wait histogram */
    int last_pct, last_state; /* what progress last said (last_state -1: nothing yet) */
    /* the answer, once decided */
    int status, retry_after;
    char code[24];
    char *message;
};

struct act_svc {
    char *id;
    rh_svc *h; /* the daemon's record, looked up once (NULL until it is configured) */
    act_wait *head, *tail;
    size_t n;
    act_op *op; /* the load in flight */
};

typedef enum { OP_START_FIRST, OP_START_ONLY, OP_SWITCH } op_stage;

struct act_op {
    activator *a; /* NULL: the activator is gone; the callback only frees */
    act_svc *v;
    op_stage stage;
    int64_t t0_ms, switch_t0_ms;
    char *mode;
    /* for the router.activation event */
    int policy;
    bool tried_start;   /* a start beside the others came first (then the switch) */
    size_t served, timed_out;
    int status;         /* the last answer given to its waiters */
    char code[24];
    char *message;
};

struct activator {
    uv_loop_t *loop;
    router_host h; /* what the daemon lends (rhost.h) */
    const config *cfg;
    rmetrics *m;
    act_svc **svcs;
    size_t nsvcs;
    act_wait *done_head, *done_tail;
    uv_timer_t *tick, *flush; /* heap: freed in their close callbacks */
    bool tick_on, flush_on;
    act_wait *iter_next; /* the waiter a progress walk visits next (act_cancel moves it) */
    bool closing;
    /* the event sink (act_set_events) */
    store *st;
    act_event_fn on_event;
    void *ev_ud;
};

/* ---- small things --------------------------------------------------------- */

static const preset *preset_for(activator *a, const char *id)
{
    return a->cfg ? config_preset(a->cfg, id) : NULL;
}

static int policy_of(activator *a, const preset *p)
{
    if (p && p->activation != ACT_INHERIT) return p->activation;
    return a->cfg ? a->cfg->set.router.activation : ACT_SWITCH;
}

/* v's state through its record (looked up once: the first time it is
 * asked, or again while it is not configured yet). */
static bool state_of(activator *a, act_svc *v, svc_state *st, int *pct)
{
    rh_state i;
    if (!v->h && a->h.lookup) v->h = a->h.lookup(a->h.ud, v->id);
    if (!v->h || !a->h.state || !a->h.state(a->h.ud, v->h, &i)) return false;
    *st = i.state;
    if (pct) *pct = i.progress_pct;
    return true;
}

static act_svc *svc_find(activator *a, const char *id)
{
    for (size_t i = 0; i < a->nsvcs; i++)
        if (!strcmp(a->svcs[i]->id, id)) return a->svcs[i];
    return NULL;
}

static act_svc *svc_get(activator *a, const char *id)
{
    act_svc *v = svc_find(a, id);
    if (v) return v;
    a->svcs = xrealloc(a->svcs, (a->nsvcs + 1) * sizeof *a->svcs);
    v = xcalloc(1, sizeof *v);
    v->id = xstrdup(id);
    a->svcs[a->nsvcs++] = v;
    return v;
}

static void tick_cb(uv_timer_t *t);
static void flush_cb(uv_timer_t *t);

static void tick_arm(activator *a)
{
    if (a->tick_on || a->closing) return;
    a->tick_on = true;
    uv_timer_start(a->tick, tick_cb, ACT_TICK_MS, ACT_TICK_MS);
}

static void flush_arm(activator *a)
{
    if (a->flush_on || a->closing) return;
    a->flush_on = true;
    uv_timer_start(a->flush, flush_cb, 0, 0);
}

static void unlink_queued(act_wait *w)
{
    act_svc *v = w->v;
    if (w->prev)
        w->prev->next = w->next;
    else
        v->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        v->tail = w->prev;
    if (w->a->iter_next == w) w->a->iter_next = w->next;
    w->prev = w->next = NULL;
    w->v = NULL;
    v->n--;
    rm_queue_depth(w->a->m, v->id, (int64_t)v->n);
}

static void unlink_done(act_wait *w)
{
    activator *a = w->a;
    if (w->prev)
        w->prev->next = w->next;
    else
        a->done_head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        a->done_tail = w->prev;
    w->prev = w->next = NULL;
}

static void wait_free(act_wait *w)
{
    free(w->message);
    free(w);
}

/* Decide w's answer: out of its queue, onto the done list, delivered on
 * the next loop turn.  message copied. */
static void finish(act_wait *w, int status, const char *code, const char *message, int retry_after)
{
    activator *a = w->a;
    if (w->v) unlink_queued(w);
    if (w->queued) rm_queue_wait(a->m, (double)(clock_mono_ms() - w->t0_ms) / 1000.0);
    w->status = status;
    snprintf(w->code, sizeof w->code, "%s", code ? code : "");
    free(w->message);
    w->message = message ? xstrdup(message) : NULL;
    w->retry_after = retry_after;
    w->prev = a->done_tail;
    w->next = NULL;
    if (a->done_tail)
        a->done_tail->next = w;
    else
        a->done_head = w;
    a->done_tail = w;
    flush_arm(a);
}

/* Every waiter of v gets the same answer; a load in flight counts them
 * and keeps the answer for its event. */
static void finish_all(act_svc *v, int status, const char *code, const char *message, int retry_after)
{
    size_t n = 0;
    while (v->head) {
        finish(v->head, status, code, message, retry_after);
        n++;
    }
    if (v->op) {
        act_op *op = v->op;
        op->served += n;
        op->status = status;
        snprintf(op->code, sizeof op->code, "%s", code ? code : "");
        free(op->message);
        op->message = message ? xstrdup(message) : NULL;
    }
}

/* ---- events ----------------------------------------------------------------- */

static void act_event(activator *a, const char *service, int policy, const char *action, const char *to_mode,
                      bool tried_start, size_t waiters, size_t timed_out, int64_t duration_ms, int status,
                      const char *code, const char *message)
{
    if (!a->st && !a->on_event) return;
    const char *pol = policy >= 0 && policy <= ACT_REJECT ? activation_names[policy] : "switch";
    const char *outcome = status == 200 ? "ready" : code && *code ? code : "failed";
    buf r = BUF_INIT;
    buf_printf(&r, "'%s': ", service);
    if (!strcmp(action, "switch"))
        buf_printf(&r, "%sswitch to '%s'", tried_start ? "start refused by the gate, then " : "",
                   to_mode ? to_mode : "?");
    else
        buf_adds(&r, action);
    buf_printf(&r, " (activation %s): ", pol);
    if (status == 200)
        buf_printf(&r, "ready after %lld ms", (long long)duration_ms);
    else
        buf_printf(&r, "%s (%d) after %lld ms", outcome, status, (long long)duration_ms);
    buf_printf(&r, ", %zu waiter(s) served", waiters);
    if (timed_out) buf_printf(&r, ", %zu timed out", timed_out);
    buf d = BUF_INIT;
    buf_adds(&d, "{\"service\":");
    buf_json_str(&d, service);
    buf_adds(&d, ",\"policy\":");
    buf_json_str(&d, pol);
    buf_adds(&d, ",\"action\":");
    buf_json_str(&d, action);
    buf_adds(&d, ",\"mode\":");
    if (to_mode)
        buf_json_str(&d, to_mode);
    else
        buf_adds(&d, "null");
    buf_printf(&d, ",\"tried_start\":%s,\"waiters\":%zu,\"timed_out\":%zu,\"duration_ms\":%lld,\"outcome\":",
               tried_start ? "true" : "false", waiters, timed_out, (long long)duration_ms);
    buf_json_str(&d, outcome);
    buf_printf(&d, ",\"status\":%d,\"message\":", status);
    if (message && status != 200)
        buf_json_str(&d, message);
    else
        buf_adds(&d, "null");
    buf_addc(&d, '}');
    store_event e = {.ts_ms = clock_unix_ms(), .service = service, .kind = "router.activation", .reason = r.p,
                     .data = d.p};
    if (a->st) {
        char err[256];
        if (store_event_add(a->st, &e, &e.id, err, sizeof err) != 0)
            log_warn("activator: cannot store a 'router.activation' event of '%s': %s", service, err);
    }
    if (a->on_event) a->on_event(&e, a->ev_ud);
    buf_release(&d);
    buf_release(&r);
}

/* A refusal without a load: one event for the waiters it answered. */
static void refused_event(activator *a, const char *service, int policy, size_t waiters, int status, const char *code,
                          const char *message)
{
    act_event(a, service, policy, "refused", NULL, false, waiters, 0, 0, status, code, message);
}

static void deliver(act_wait *w)
{
    w->done(w->ud, w->status, w->status == 200 ? NULL : w->code, w->status == 200 ? NULL : w->message,
            w->retry_after);
    wait_free(w);
}

static void flush_cb(uv_timer_t *t)
{
    activator *a = t->data;
    a->flush_on = false;
    while (a->done_head) {
        act_wait *w = a->done_head;
        unlink_done(w);
        deliver(w);
    }
}

static char *failed_message(const char *id)
{
    return xasprintf("service '%s' failed; a person must start it (gpumod service start %s)", id, id);
}

/* ---- choosing a mode ------------------------------------------------------- */

/* The mode of the switch in progress (caller frees), NULL when none. */
static char *switch_in_progress(activator *a)
{
    char id[256];
    if (!a->h.switching || !a->h.switching(a->h.ud, id, sizeof id)) return NULL;
    return xstrdup(id);
}

/* Whether the daemon lends a switch (and there is a configuration to
 * find modes in): an activation may switch modes. */
static bool can_switch(const activator *a)
{
    return a->h.switch_to && a->h.rank && a->cfg;
}

/* ---- loads ------------------------------------------------------------------ */

static void op_free(act_op *op)
{
    free(op->mode);
    free(op->message);
    free(op);
}

static void op_end(act_op *op, bool ok)
{
    activator *a = op->a;
    int64_t ms = clock_mono_ms() - op->t0_ms;
    rm_activation(a->m, (double)ms / 1000.0, ok);
    op->v->op = NULL;
    act_event(a, op->v->id, op->policy, op->stage == OP_SWITCH ? "switch" : "start",
              op->stage == OP_SWITCH ? op->mode : NULL, op->tried_start, op->served, op->timed_out, ms,
              ok ? 200 : op->status, op->code, op->message);
    op_free(op);
}

static void on_switch(const rh_result *r, void *ud);
static void begin_switch(act_op *op, const char *mode_id);

/* Why no candidate is taken: each mode and what its plan refused, after
 * the start's own refusal.  Caller frees. */
static char *no_fit_message(const char *id, const char *start_msg, const plan_choice *c, size_t n)
{
    buf b = BUF_INIT;
    buf_printf(&b, "%s; no mode containing '%s' fits:", start_msg, id);
    for (size_t i = 0; i < n; i++)
        buf_printf(&b, "%s mode '%s': %s", i ? ";" : "", c[i].mode ? c[i].mode : "?",
                   c[i].why[0] ? c[i].why : "refused");
    return buf_detach(&b);
}

/* The op a callback is for, or NULL once the activator has closed (the op
 * is freed then: nobody waits for it any more). */
static act_op *op_live(void *ud)
{
    act_op *op = ud;
    if (op->a) return op;
    op_free(op);
    return NULL;
}

/* The ranked modes for a start the gate refused: switch to the best
 * mode whose plan fits, else answer 503 naming each candidate. */
static void on_rank(const rh_result *r, const plan_choice *c, size_t n, void *ud)
{
    act_op *op = op_live(ud);
    if (!op) return;
    act_svc *v = op->v;
    if (r->status != 200) {
        finish_all(v, 503, "unavailable", r->message ? r->message : "the modes could not be judged", ACT_RETRY_AFTER_S);
        op_end(op, false);
        return;
    }
    if (n && c[0].ok && c[0].mode) {
        begin_switch(op, c[0].mode);
        return;
    }
    char *m = n ? no_fit_message(v->id, op->message ? op->message : "the start was refused", c, n)
                : xasprintf("%s; no mode contains '%s', so no switch can make room",
                            op->message ? op->message : "the start was refused", v->id);
    finish_all(v, 503, "unavailable", m, ACT_RETRY_AFTER_S);
    free(m);
    op_end(op, false);
}

static void begin_switch(act_op *op, const char *mode_id)
{
    activator *a = op->a;
    op->stage = OP_SWITCH;
    free(op->mode);
    op->mode = xstrdup(mode_id);
    op->switch_t0_ms = clock_mono_ms();
    a->h.switch_to(a->h.ud, mode_id, "router", on_switch, op);
}

static void on_sup(const rh_result *r, void *ud)
{
    act_op *op = op_live(ud);
    if (!op) return;
    activator *a = op->a;
    act_svc *v = op->v;
    const char *id = v->id;
    if (r->status == 200) {
        finish_all(v, 200, NULL, NULL, 0);
        op_end(op, true);
        return;
    }
    const char *msg = r->message ? r->message : "the start was refused";
    if (r->status == 409 && r->code && !strcmp(r->code, "gate_refused")) {
        if (op->stage == OP_START_FIRST && can_switch(a)) {
            op->tried_start = true;
            free(op->message);
            op->message = xstrdup(msg); /* for the 503 when no mode fits */
            a->h.rank(a->h.ud, id, on_rank, op);
            return;
        } else {
            finish_all(v, 503, "unavailable", msg, ACT_RETRY_AFTER_S);
        }
    } else if (r->needs_person) {
        char *m = failed_message(id);
        finish_all(v, 503, "unavailable", m, 0);
        free(m);
    } else if (r->status == 409) { /* port_held, conflict: blocked for now */
        finish_all(v, 503, "unavailable", msg, ACT_RETRY_AFTER_S);
    } else {
        finish_all(v, r->status, r->code ? r->code : "start_failed", msg, 0);
    }
    op_end(op, false);
}

static void on_switch(const rh_result *r, void *ud)
{
    act_op *op = op_live(ud);
    if (!op) return;
    activator *a = op->a;
    act_svc *v = op->v;
    /* the switch's duration is counted by the daemon's switch-end hook (every switch, not only ours) */
    if (r->status == 200) {
        svc_state st;
        if (state_of(a, v, &st, NULL) && st == SVC_READY) {
            finish_all(v, 200, NULL, NULL, 0);
            op_end(op, true);
            return;
        }
        char *m = xasprintf("switched to mode '%s' but '%s' is %s, not ready", op->mode, v->id,
                            state_of(a, v, &st, NULL) ? svc_state_names[st] : "unknown");
        finish_all(v, 503, "unavailable", m, ACT_RETRY_AFTER_S);
        free(m);
        op_end(op, false);
        return;
    }
    char *m = xasprintf("switch to mode '%s' for '%s': %s", op->mode, v->id,
                        r->message ? r->message : "failed");
    if (r->status == 409 && r->code && !strcmp(r->code, "gate_refused"))
        finish_all(v, 503, "unavailable", m, ACT_RETRY_AFTER_S);
    else
        finish_all(v, r->status, r->code ? r->code : "start_failed", m, 0);
    free(m);
    op_end(op, false);
}

/* Begin the load for v's waiters per policy; st is the service's state
 * now (never ready or stopping: the caller handles those). */
static void begin_load(activator *a, act_svc *v, int policy, svc_state st)
{
    const mode *md = NULL;
    if (policy == ACT_SWITCH && (st == SVC_DOWN || st == SVC_SLEEPING) && can_switch(a)) {
        /* a switch in progress owns the memory: ours joins it when its mode
         * has the service (a no-op once it is committed); else nothing is
         * judged on memory in motion: the tick drives again once it ended */
        char *cur = switch_in_progress(a);
        if (cur) {
            const mode *cm = config_mode(a->cfg, cur);
            free(cur);
            if (!cm || strv_find(&cm->services, v->id) < 0) return;
            md = cm;
        }
    }
    act_op *op = xcalloc(1, sizeof *op);
    op->a = a;
    op->v = v;
    op->t0_ms = clock_mono_ms();
    op->policy = policy;
    v->op = op;
    if (md) {
        begin_switch(op, md->id);
        return;
    }
    if (policy == ACT_SWITCH && (st == SVC_DOWN || st == SVC_SLEEPING) && can_switch(a)) {
        op->stage = OP_START_FIRST;
    } else {
        op->stage = policy == ACT_SWITCH ? OP_START_FIRST : OP_START_ONLY;
    }
    if (!a->h.start) {
        rh_result r = {503, "unavailable", "the daemon lends no supervisor"};
        on_sup(&r, op);
        return;
    }
    a->h.start(a->h.ud, v->h, "router", on_sup, op);
}

/* v has waiters and no load: answer them or begin one. */
static void drive(activator *a, act_svc *v)
{
    if (v->op || !v->head) return;
    svc_state st;
    if (!state_of(a, v, &st, NULL)) {
        char *m = xasprintf("no service '%s' is configured", v->id);
        finish_all(v, 404, "not_found", m, 0);
        free(m);
        return;
    }
    if (st == SVC_READY) {
        finish_all(v, 200, NULL, NULL, 0);
        return;
    }
    if (st == SVC_STOPPING) return; /* the tick comes back once it is down */
    if (st == SVC_FAILED) {
        char *m = failed_message(v->id);
        size_t n = v->n;
        finish_all(v, 503, "unavailable", m, 0);
        refused_event(a, v->id, policy_of(a, preset_for(a, v->id)), n, 503, "unavailable", m);
        free(m);
        return;
    }
    begin_load(a, v, policy_of(a, preset_for(a, v->id)), st);
}

/* ---- the tick: progress and deadlines --------------------------------------- */

static void tick_cb(uv_timer_t *t)
{
    activator *a = t->data;
    int64_t now = clock_mono_ms();
    bool any = false;
    for (size_t i = 0; i < a->nsvcs; i++) {
        act_svc *v = a->svcs[i];
        if (!v->head) continue;
        /* deadlines first: nothing is called back here, only decided */
        for (act_wait *w = v->head, *nx; w; w = nx) {
            nx = w->next;
            if (now >= w->deadline_ms) {
                int64_t limit = a->cfg ? a->cfg->set.router.queue_timeout_ms : 0;
                char *m = xasprintf("'%s' was not ready within router.queue_timeout (%lld ms); its activation goes on",
                                    v->id, (long long)limit);
                finish(w, 504, "timeout", m, 0);
                if (v->op) v->op->timed_out++;
                free(m);
            }
        }
        if (!v->head) continue;
        drive(a, v);
        if (!v->head) continue;
        svc_state st = SVC_DOWN;
        int pct = -1;
        if (!state_of(a, v, &st, &pct)) continue;
        if (st == SVC_READY) { /* e.g. a switch's first start: no need to wait for the rest of its mode */
            finish_all(v, 200, NULL, NULL, 0);
            continue;
        }
        any = true;
        /* a progress callback may cancel any waiter: walk with a cursor
         * that act_cancel moves on */
        for (act_wait *w = v->head; w; w = a->iter_next) {
            a->iter_next = w->next;
            if (w->progress && (w->last_state != (int)st || w->last_pct != pct)) {
                w->last_state = (int)st;
                w->last_pct = pct;
                w->progress(w->ud, pct, svc_state_names[st]);
            }
        }
        a->iter_next = NULL;
    }
    if (!any && a->tick_on) {
        a->tick_on = false;
        uv_timer_stop(a->tick);
    }
}

/* ---- the API ------------------------------------------------------------------ */

activator *act_new(uv_loop_t *loop, const router_host *h, const config *cfg, rmetrics *m)
{
    activator *a = xcalloc(1, sizeof *a);
    a->loop = loop;
    if (h) a->h = *h;
    a->cfg = cfg;
    a->m = m;
    a->tick = xcalloc(1, sizeof *a->tick);
    a->flush = xcalloc(1, sizeof *a->flush);
    uv_timer_init(loop, a->tick);
    uv_timer_init(loop, a->flush);
    a->tick->data = a;
    a->flush->data = a;
    if (cfg)
        for (size_t i = 0; i < cfg->n_presets; i++)
            if (cfg->presets[i].id) rm_queue_depth(m, cfg->presets[i].id, 0);
    return a;
}

void act_set_events(activator *a, store *st, act_event_fn on_event, void *ud)
{
    a->st = st;
    a->on_event = on_event;
    a->ev_ud = ud;
}

void act_set_config(activator *a, const config *cfg)
{
    a->cfg = cfg;
    if (cfg)
        for (size_t i = 0; i < cfg->n_presets; i++)
            if (cfg->presets[i].id && !svc_find(a, cfg->presets[i].id)) rm_queue_depth(a->m, cfg->presets[i].id, 0);
}

act_wait *act_request(activator *a, const char *service, act_done_cb done, act_progress_cb progress, void *ud)
{
    act_wait *w = xcalloc(1, sizeof *w);
    w->a = a;
    w->done = done;
    w->progress = progress;
    w->ud = ud;
    w->t0_ms = clock_mono_ms();
    w->last_state = -1;
    w->last_pct = -1;
    if (a->closing) {
        finish(w, 503, "shutting_down", "the daemon is shutting down", 0);
        return w;
    }
    const preset *p = preset_for(a, service);
    act_svc *v = p ? svc_get(a, service) : NULL;
    svc_state st;
    if (!v || !state_of(a, v, &st, NULL)) {
        char *m = xasprintf("no service '%s' is configured", service);
        finish(w, 404, "not_found", m, 0);
        free(m);
        return w;
    }
    if (st == SVC_READY) {
        finish(w, 200, NULL, NULL, 0);
        return w;
    }
    int policy = policy_of(a, p);
    if (policy == ACT_REJECT && !v->op) {
        char *m = xasprintf("'%s' is %s and its activation is reject: start it with gpumod service start %s",
                            service, svc_state_names[st], service);
        finish(w, 503, "unavailable", m, ACT_RETRY_AFTER_S);
        refused_event(a, service, policy, 1, 503, "unavailable", m);
        free(m);
        return w;
    }
    if (st == SVC_FAILED && !v->op) {
        char *m = failed_message(service);
        finish(w, 503, "unavailable", m, 0);
        refused_event(a, service, policy, 1, 503, "unavailable", m);
        free(m);
        return w;
    }
    int64_t qmax = a->cfg->set.router.queue_max;
    if ((int64_t)v->n >= qmax) {
        char *m = xasprintf("the queue for '%s' is full: %zu requests wait for it to be ready (router.queue_max %lld)",
                            service, v->n, (long long)qmax);
        finish(w, 429, "queue_full", m, 0);
        free(m);
        return w;
    }
    w->queued = true;
    w->deadline_ms = w->t0_ms + a->cfg->set.router.queue_timeout_ms;
    w->v = v;
    w->prev = v->tail;
    if (v->tail)
        v->tail->next = w;
    else
        v->head = w;
    v->tail = w;
    v->n++;
    rm_queue_depth(a->m, service, (int64_t)v->n);
    tick_arm(a);
    if (!v->op && st != SVC_STOPPING) begin_load(a, v, policy, st);
    return w;
}

void act_cancel(act_wait *w)
{
    if (!w) return;
    if (w->v)
        unlink_queued(w);
    else
        unlink_done(w);
    wait_free(w);
}

void act_json(activator *a, buf *out)
{
    size_t total = 0;
    buf_adds(out, "{\"queues\":[");
    bool first = true;
    for (size_t i = 0; i < a->nsvcs; i++) {
        act_svc *v = a->svcs[i];
        if (!v->n && !v->op) continue;
        total += v->n;
        buf_adds(out, first ? "{\"service\":" : ",{\"service\":");
        first = false;
        buf_json_str(out, v->id);
        buf_printf(out, ",\"depth\":%zu,\"load\":", v->n);
        if (!v->op) {
            buf_adds(out, "null");
        } else {
            buf_adds(out, v->op->stage == OP_SWITCH ? "{\"kind\":\"switch\",\"mode\":" : "{\"kind\":\"start\",\"mode\":");
            if (v->op->stage == OP_SWITCH && v->op->mode)
                buf_json_str(out, v->op->mode);
            else
                buf_adds(out, "null");
            buf_printf(out, ",\"elapsed_ms\":%lld}", (long long)(clock_mono_ms() - v->op->t0_ms));
        }
        buf_addc(out, '}');
    }
    buf_printf(out, "],\"waiting\":%zu}", total);
}

size_t act_queue_depth(activator *a, const char *service)
{
    act_svc *v = svc_find(a, service);
    return v ? v->n : 0;
}

static void timer_closed(uv_handle_t *h)
{
    free(h);
}

void act_free(activator *a)
{
    if (!a) return;
    a->closing = true;
    for (size_t i = 0; i < a->nsvcs; i++) {
        act_svc *v = a->svcs[i];
        while (v->head) finish(v->head, 503, "shutting_down", "the daemon is shutting down", 0);
        if (v->op) v->op->a = NULL; /* its callback only frees it */
    }
    /* answers already decided are overruled: nothing is served any more */
    while (a->done_head) {
        act_wait *w = a->done_head;
        unlink_done(w);
        if (w->status == 200) {
            w->status = 503;
            snprintf(w->code, sizeof w->code, "shutting_down");
            free(w->message);
            w->message = xstrdup("the daemon is shutting down");
        }
        deliver(w);
    }
    uv_close((uv_handle_t *)a->tick, timer_closed);
    uv_close((uv_handle_t *)a->flush, timer_closed);
    for (size_t i = 0; i < a->nsvcs; i++) {
        free(a->svcs[i]->id);
        free(a->svcs[i]);
    }
    free(a->svcs);
    free(a);
}
