/* rhost.c - the router's view of the daemon (rhost.h): each member of the
 * router_host table turned into a call on the supervisor, the switch or
 * the host monitor, and each answer turned back into the router's value
 * types (no JSON between them).  While a tune lease is held
 * (tunelease.h) the router's switches are refused and the tuned
 * service's requests too, unless the lease allows traffic. */
#include "daemon/rhost.h"
#include "daemon/hostmon.h"
#include "daemon/rmodels.h"
#include "daemon/supervisor.h"
#include "daemon/switch.h"
#include "daemon/tunelease.h"

#include <stdio.h>
#include <stdlib.h>

struct rhost_glue {
    gpumodd *g;
    rh_drain_fn drain;
    rh_undrain_fn undrain;
    void *hook_ud;
    struct rh_late *late; /* load_model's answers without rmodels, not yet given */
    uint64_t late_seq;
};

/* A callback of the router's, carried through a supervisor or switch call. */
typedef struct rh_call {
    rh_done done;
    rh_ranked ranked;
    void *ud;
} rh_call;

static rh_call *call_new(rh_done done, rh_ranked ranked, void *ud)
{
    rh_call *c = xcalloc(1, sizeof *c);
    c->done = done;
    c->ranked = ranked;
    c->ud = ud;
    return c;
}

static size_t states(void *ud, const char *id, rh_state *out, size_t max)
{
    rhost_glue *gl = ud;
    if (!gl->g->sup || !max) return 0;
    sup_state_info *in = xcalloc(max, sizeof *in);
    size_t n = sup_states(gl->g->sup, id, in, max);
    for (size_t i = 0; i < n; i++) out[i] = (rh_state){in[i].id, in[i].state, in[i].progress_pct};
    free(in);
    return n;
}

static size_t usages(void *ud, rh_usage *out, size_t max)
{
    rhost_glue *gl = ud;
    if (!gl->g->sup || !max) return 0;
    sup_usage *in = xcalloc(max, sizeof *in);
    size_t n = sup_usages(gl->g->sup, in, max);
    for (size_t i = 0; i < n; i++)
        out[i] = (rh_usage){in[i].id, in[i].state, in[i].pgid, in[i].loading, in[i].admitted, in[i].started_ms};
    free(in);
    return n;
}

static void started(const sup_result *r, void *ud)
{
    rh_call *c = ud;
    rh_result res = {sup_outcome_status(r->outcome), sup_outcome_code(r->outcome), r->message,
                     r->outcome == SUP_NEEDS_PERSON};
    c->done(&res, c->ud);
    free(c);
}

/* The router's rh_svc is the supervisor's record. */
static rh_svc *lookup(void *ud, const char *id)
{
    rhost_glue *gl = ud;
    return gl->g->sup ? (rh_svc *)sup_lookup(gl->g->sup, id) : NULL;
}

static bool state(void *ud, rh_svc *svc, rh_state *out)
{
    sup_state_info i;
    if (!sup_svc_state((sup_svc *)svc, &i)) return false;
    *out = (rh_state){i.id, i.state, i.progress_pct};
    return true;
}

static void start(void *ud, rh_svc *svc, const char *origin, rh_done cb, void *cb_ud)
{
    rhost_glue *gl = ud;
    sup_start_svc(gl->g->sup, (sup_svc *)svc, origin, started, call_new(cb, NULL, cb_ud));
}

static int model_state(void *ud, const char *service, const char *model)
{
    rhost_glue *gl = ud;
    return rmodels_state(gl->g->rm, service, model);
}

/* No rmodels (the daemon starts or shuts down): answered 503 on the next
 * loop turn, never inside load_model; cancel_load finds it by its ticket
 * (the high bit set: never an rmodels ticket). */
typedef struct rh_late {
    uv_timer_t t;
    rhost_glue *gl;
    uint64_t ticket;
    rh_done cb;
    void *cb_ud;
    struct rh_late *next;
} rh_late;

#define LATE_BIT (1ULL << 63)

static void late_closed(uv_handle_t *h)
{
    free(h->data);
}

static void late_fire(uv_timer_t *t)
{
    rh_late *l = t->data;
    for (rh_late **pp = &l->gl->late; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    if (l->cb) l->cb(&(rh_result){503, "shutting_down", "the daemon is shutting down"}, l->cb_ud);
    uv_close((uv_handle_t *)&l->t, late_closed);
}

static uint64_t load_model(void *ud, const char *service, const char *model, rh_done cb, void *cb_ud)
{
    rhost_glue *gl = ud;
    if (!gl->g->rm) {
        rh_late *l = xcalloc(1, sizeof *l);
        l->gl = gl;
        l->ticket = LATE_BIT | ++gl->late_seq;
        l->cb = cb;
        l->cb_ud = cb_ud;
        l->next = gl->late;
        gl->late = l;
        uv_timer_init(gl->g->loop, &l->t);
        l->t.data = l;
        uv_timer_start(&l->t, late_fire, 0, 0);
        return l->ticket;
    }
    return rmodels_op(gl->g->rm, service, model, true, "router", started, call_new(cb, NULL, cb_ud));
}

static void cancel_load(void *ud, uint64_t ticket)
{
    rhost_glue *gl = ud;
    if (ticket & LATE_BIT) {
        for (rh_late *l = gl->late; l; l = l->next)
            if (l->ticket == ticket) l->cb = NULL;
        return;
    }
    if (gl->g->rm) free(rmodels_cancel(gl->g->rm, ticket));
}

static void slept(const sup_result *r, void *ud)
{
    rh_call *c = ud;
    rh_result res = {sup_outcome_status(r->outcome), sup_outcome_code(r->outcome), r->message,
                     r->outcome == SUP_NEEDS_PERSON, r->slept};
    c->done(&res, c->ud);
    free(c);
}

static void sleep_svc(void *ud, rh_svc *svc, const char *origin, rh_done cb, void *cb_ud)
{
    rhost_glue *gl = ud;
    sup_sleep_svc(gl->g->sup, (sup_svc *)svc, origin, slept, call_new(cb, NULL, cb_ud));
}

static const snapshot *last_snapshot(void *ud)
{
    rhost_glue *gl = ud;
    return gl->g->hm ? hostmon_last(gl->g->hm, NULL) : NULL;
}

static bool switching(void *ud, char *mode_id, size_t len)
{
    rhost_glue *gl = ud;
    return gl->g->sw && switch_current_mode(gl->g->sw, mode_id, len);
}

static bool committed(void *ud, char *mode_id, size_t len)
{
    rhost_glue *gl = ud;
    return gl->g->sw && switch_committed(gl->g->sw, mode_id, len) == 1;
}

static void switched(const switch_result *r, void *ud)
{
    rh_call *c = ud;
    rh_result res = {r->status, r->code, r->message};
    c->done(&res, c->ud);
    free(c);
}

static void switch_to(void *ud, const char *mode_id, const char *origin, rh_done cb, void *cb_ud)
{
    rhost_glue *gl = ud;
    char msg[600];
    if (gl->g->tl && tunelease_refuses_switch(gl->g->tl, msg, sizeof msg, NULL)) {
        /* a tune run holds the host: no activation switches it away */
        rh_result res = {409, "tune_in_progress", msg};
        cb(&res, cb_ud);
        return;
    }
    switch_req rq = {.mode = mode_id, .origin = origin, .queue = true};
    switch_request(gl->g->sw, &rq, switched, call_new(cb, NULL, cb_ud));
}

static void ranked(const switch_result *r, const plan_choice *pc, size_t n, void *ud)
{
    rh_call *c = ud;
    rh_result res = {r->status, r->code, r->message};
    c->ranked(&res, pc, n, c->ud);
    free(c);
}

static void rank(void *ud, const char *service, rh_ranked cb, void *cb_ud)
{
    rhost_glue *gl = ud;
    switch_rank(gl->g->sw, service, ranked, call_new(NULL, cb, cb_ud));
}

static void on_drain(swx *x, uint64_t ticket, const char *const *leaving, size_t n, int64_t timeout_ms, void *ud)
{
    rhost_glue *gl = ud;
    if (gl->drain) gl->drain(ticket, leaving, n, timeout_ms, gl->hook_ud);
}

static void on_undrain(swx *x, uint64_t ticket, const char *const *names, size_t n, void *ud)
{
    rhost_glue *gl = ud;
    if (gl->undrain) gl->undrain(ticket, names, n, gl->hook_ud);
}

static void set_drain(void *ud, rh_drain_fn drain, rh_undrain_fn undrain, void *hook_ud)
{
    rhost_glue *gl = ud;
    gl->drain = drain;
    gl->undrain = undrain;
    gl->hook_ud = hook_ud;
    if (!gl->g->sw) return;
    switch_set_drain(gl->g->sw, drain ? on_drain : NULL, drain ? gl : NULL);
    switch_set_undrain(gl->g->sw, undrain ? on_undrain : NULL, undrain ? gl : NULL);
}

static void drained(void *ud, uint64_t ticket)
{
    rhost_glue *gl = ud;
    if (gl->g->sw) switch_drained(gl->g->sw, ticket);
}

static bool refused(void *ud, const char *service, char *msg, size_t len, int *retry_after_s)
{
    rhost_glue *gl = ud;
    return gl->g->tl && tunelease_refuses_traffic(gl->g->tl, service, msg, len, retry_after_s);
}

rhost_glue *rhost_fill(router_host *h, gpumodd *g)
{
    rhost_glue *gl = xcalloc(1, sizeof *gl);
    gl->g = g;
    *h = (router_host){.ud = gl,
                       .states = states,
                       .usages = usages,
                       .lookup = lookup,
                       .state = state,
                       .start = start,
                       .sleep = sleep_svc,
                       .last_snapshot = last_snapshot,
                       .switching = switching,
                       .committed = committed,
                       .switch_to = switch_to,
                       .rank = rank,
                       .set_drain = set_drain,
                       .drained = drained,
                       .refused = refused,
                       .model_state = model_state,
                       .load_model = load_model,
                       .cancel_load = cancel_load};
    return gl;
}

void rhost_free(rhost_glue *gl)
{
    free(gl);
}
