/* rhost.h - what the router asks of the daemon: a table of functions the
 * daemon fills (daemon/rhost.c) over its supervisor, its mode switch and
 * its host monitor.  The router includes no daemon header: only daemon ->
 * router remains, and the router's tests fill the table with fakes.
 *
 * Everything on the daemon's loop; strings are borrowed for the call.  A
 * NULL member means the daemon lends no such part (no switch: the router
 * starts services beside the others and never switches). */
#ifndef GPUMOD_RHOST_H
#define GPUMOD_RHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/gate.h"
#include "core/lifecycle.h"
#include "core/plan.h"
#include "host/types.h"

/* A service's record in the daemon: looked up once by id (lookup) and
 * held; it lives as long as the daemon's supervisor, longer than the
 * router. */
typedef struct rh_svc rh_svc;

/* One service as the activator sees it. */
typedef struct rh_state {
    const char *id;
    svc_state state;
    int progress_pct; /* starting: the load percentage the log shows, else -1 */
} rh_state;

/* One service with what it holds (the route flags, the metrics). */
typedef struct rh_usage {
    const char *id;
    svc_state state;
    pid_t pgid;         /* 0 when no process */
    bool loading;       /* starting: holds the load slot */
    need admitted;      /* the need it was admitted with */
    int64_t started_ms; /* clock_mono_ms at spawn */
} rh_usage;

/* How a start or a switch ended: status 200, else the error code of
 * docs/interfaces.md (gate_refused, start_failed, ...) and a message.
 * needs_person: the service failed and only a person may start it again
 * (409 conflict); no automatic start will. */
typedef struct rh_result {
    int status;
    const char *code;
    const char *message;
    bool needs_person;
    bool slept; /* sleep: confirmed asleep (false: stopped instead, or already down) */
} rh_result;
typedef void (*rh_done)(const rh_result *r, void *ud);

/* The modes that contain a service, each judged by its plan on one
 * snapshot, best first (plan_rank); r->status 200, else why none could be
 * judged (n 0). */
typedef void (*rh_ranked)(const rh_result *r, const plan_choice *c, size_t n, void *ud);

/* A switch drains the services it stops (see switch.h's drain hooks):
 * drain is told which and until when; the router calls drained(ticket)
 * when nothing runs on them any more; undrain ends the drain. */
typedef void (*rh_drain_fn)(uint64_t ticket, const char *const *leaving, size_t n, int64_t timeout_ms, void *ud);
typedef void (*rh_undrain_fn)(uint64_t ticket, const char *const *names, size_t n, void *ud);

typedef struct router_host {
    void *ud; /* every member's first argument */
    /* the services (id NULL: all), at most max; how many were written */
    size_t (*states)(void *ud, const char *id, rh_state *out, size_t max);
    size_t (*usages)(void *ud, rh_usage *out, size_t max);
    /* the record of id (configured, or known from a run), or NULL */
    rh_svc *(*lookup)(void *ud, const char *id);
    /* a record's state: false when it is no longer listed (no preset, not running) */
    bool (*state)(void *ud, rh_svc *svc, rh_state *out);
    /* start one beside the others (the gate decides); cb exactly once */
    void (*start)(void *ud, rh_svc *svc, const char *origin, rh_done cb, void *cb_ud);
    /* put one to sleep at its tier, or stop it where it has none or the
     * sleep falls back (the supervisor decides); cb exactly once */
    void (*sleep)(void *ud, rh_svc *svc, const char *origin, rh_done cb, void *cb_ud);
    /* the host monitor's last snapshot, or NULL */
    const snapshot *(*last_snapshot)(void *ud);
    /* the mode of the switch in progress (true), or none (false) */
    bool (*switching)(void *ud, char *mode_id, size_t len);
    /* the last committed mode (true), or none (false) */
    bool (*committed)(void *ud, char *mode_id, size_t len);
    /* switch to mode, queued behind a switch in progress; cb exactly once */
    void (*switch_to)(void *ud, const char *mode_id, const char *origin, rh_done cb, void *cb_ud);
    /* judge the modes containing service; cb exactly once */
    void (*rank)(void *ud, const char *service, rh_ranked cb, void *cb_ud);
    /* the drain hooks (NULL fns: none), and the router's "drained" */
    void (*set_drain)(void *ud, rh_drain_fn drain, rh_undrain_fn undrain, void *hook_ud);
    void (*drained)(void *ud, uint64_t ticket);
    /* a request routed to service must be refused now (a tune run holds
     * it): true with the message (at most len) and Retry-After seconds */
    bool (*refused)(void *ud, const char *service, char *msg, size_t len, int *retry_after_s);
    /* llama.cpp router mode: the state of model in service as last polled
     * (0 unloaded, 1 loading, 2 loaded; -1 unknown), and its gated load (cb
     * exactly once unless cancelled with the ticket the load returned) */
    int (*model_state)(void *ud, const char *service, const char *model);
    uint64_t (*load_model)(void *ud, const char *service, const char *model, rh_done cb, void *cb_ud);
    void (*cancel_load)(void *ud, uint64_t ticket);
} router_host;

#endif
