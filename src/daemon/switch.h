/* switch.h - a mode switch as a transaction (docs/modes.md): one at a
 * time, every phase journaled in the store (plan, drain, stop,
 * verify-freed, start, verify-healthy, commit), a failed start rolled
 * back to the previous mode (else everything stopped: `none`), a journal
 * a crash left open closed on the next start, and the start-up mode
 * brought up through the same transaction.
 *
 * Everything runs on the daemon's loop.  The plan is src/core/plan.c's
 * (pure); this file gathers its inputs (a fresh snapshot, what each
 * running service holds, each target's need and hash, the reservations
 * in flight) and carries it out through the supervisor: stops together,
 * starts one at a time through its load slot, each start passing the
 * gate again on figures measured at that moment. */
#ifndef GPUMOD_SWITCH_H
#define GPUMOD_SWITCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "config/config.h"
#include "core/plan.h"
#include "daemon/hostmon.h"
#include "daemon/supervisor.h"
#include "store/db.h"
#include "util/buf.h"
#include "util/strv.h"

typedef struct swx swx;

typedef struct switch_env {
    uv_loop_t *loop;
    sup *sup;               /* borrowed */
    hostmon *hm;            /* borrowed */
    store *st;              /* the journal; borrowed; required */
    config *const *cfg;     /* the daemon's config pointer (reload swaps what it points to) */
    /* Called on the loop after each switch.phase event is stored (the daemon's log).  May be NULL. */
    void (*on_event)(const store_event *e, void *ud);
    void *ud;
} switch_env;

swx *switch_new(const switch_env *env);

/* A dry run's what-if (docs/api.md "POST /modes/switch"): the target
 * set is the mode's services, plus add, less remove; a service of ctx_id
 * is judged at context ctx[i] (the start override "context_size": its
 * estimate at that context, no measured footprint).  Ids are preset ids
 * (not aliases), each at most once.  Zeroed is none. */
#define SWITCH_SIM_MAX 64
typedef struct switch_sim {
    strv add, remove, ctx_id;
    int64_t ctx[SWITCH_SIM_MAX]; /* 1..16777216, ctx_id's order */
} switch_sim;
bool switch_sim_any(const switch_sim *s);
void switch_sim_release(switch_sim *s);

typedef struct switch_req {
    const char *mode;   /* a mode id, or "none" (the empty mode) */
    const char *origin; /* "cli", "api" (a person asked), "startup", "router" */
    bool dry_run;       /* the plan only: nothing is changed, no journal row */
    int64_t timeout_ms; /* 0: switch.timeout */
    bool queue;         /* wait for a switch in progress, then plan (the router); else 409 */
    const switch_sim *sim; /* dry runs only (else 400); NULL: none; copied */
} switch_req;

/* A result, borrowed for the callback only.  status 200: json is the
 * switch (docs/api.md) or, for a dry run, the plan (with "simulated" for
 * a sim).  Else code and message, and json the error's detail (or NULL):
 * 400 bad_request (a sim without dry_run, an id in both of its lists, a
 * context override for a service outside the target set or whose driver
 * takes no context_size), 404 not_found (no such mode; a sim's id that is
 * no preset), 409 switch_in_progress | gate_refused (the plan does not
 * fit; nothing was stopped), 422 start_failed (rolled back, or settled in
 * none) | need_unknown | too_many_services, 503 shutting_down |
 * journal_unavailable, 504 timeout (rolled back). */
typedef struct switch_result {
    int status;
    const char *code;
    const char *message;
    const char *json;
} switch_result;
typedef void (*switch_cb)(const switch_result *r, void *ud);

/* Strings of rq are copied.  cb exactly once (possibly before this
 * returns, for an error found at once).  Returns the switch's id (its
 * journal entry, GET /switches/ID) when the switch began in this call,
 * else 0 (a dry run, an error already answered, a request queued). */
int64_t switch_request(swx *x, const switch_req *rq, switch_cb cb, void *ud);

/* Judge every mode containing service by its plan on one fresh snapshot,
 * best first (plan_rank: fits, then fewest stops, then smallest); nothing
 * is changed and no journal row written.  cb once, with status 200 and
 * the candidates as values (n 0 when no mode contains it; c and its
 * strings borrowed for the call), or 503 shutting_down (c NULL). */
typedef void (*switch_rank_cb)(const switch_result *r, const plan_choice *c, size_t n, void *ud);
void switch_rank(swx *x, const char *service, switch_rank_cb cb, void *ud);

/* The longest a switch asked now may take until it is answered, in ms:
 * its timeout (timeout_ms, 0: switch.timeout), then the worst rollback
 * under the configured timeouts (each stop's stop_timeout and memory
 * verification, verify_freed_timeout, and the startup_timeout of every
 * service that holds memory now: those a rollback starts again, and
 * those ahead of it for the load slot) and a margin.  A client's default
 * deadline (wait=0 answers carry it). */
int64_t switch_wait_bound(swx *x, int64_t timeout_ms);

/* One switch of the journal as JSON (as in GET /switches), with
 * "result": the answer a blocking request got ({"status", "body"}), for
 * the last switches this daemon ran, else null.  1 found, 0 no such
 * switch, -1 with err. */
int switch_get_json(swx *x, int64_t id, buf *out, char *err, size_t errlen);

/* The drain hooks (the router registers them; both optional).
 *
 * drain: leaving services must get no new requests, and in-flight ones
 * finish within timeout_ms; call switch_drained(x, ticket) when done.
 * The switch goes on after timeout_ms regardless.  Called at most once
 * per switch, only when the switch stops something.  Default (fn NULL):
 * nothing to drain.
 *
 * undrain: the end of a drain.  Called exactly once for every ticket the
 * drain hook was given, with the same ticket and the same names, on the
 * loop, when the switch's outcome is decided:
 *   - committed: the names have been stopped (the router just forgets the
 *     drain; a later start of one of them is routable again);
 *   - failed (a start failed, the switch timed out during drain, stop or
 *     start): called BEFORE the rollback brings the previous mode back,
 *     so the names must be routed to again as soon as they are ready;
 *   - abandoned (switch_shutdown): called from switch_shutdown.
 * It is never called for a ticket the drain hook was not given.  The
 * names are borrowed for the call only.  After it, switch_drained(x,
 * ticket) is a no-op.  Default (fn NULL): nothing is called.  Neither
 * hook may call switch_request or switch_shutdown. */
typedef void (*switch_drain_fn)(swx *x, uint64_t ticket, const char *const *leaving, size_t n, int64_t timeout_ms,
                                void *ud);
typedef void (*switch_undrain_fn)(swx *x, uint64_t ticket, const char *const *names, size_t n, void *ud);
void switch_set_drain(swx *x, switch_drain_fn fn, void *ud);
void switch_set_undrain(swx *x, switch_undrain_fn fn, void *ud);
void switch_drained(swx *x, uint64_t ticket);

/* The end hook (optional; the daemon feeds its metrics from it): called
 * on the loop once for every switch that began, whoever asked for it,
 * when its outcome is decided: outcome "committed", "rolled_back",
 * "failed" (also: settled in none), "refused" (ended at its plan, or the
 * journal could not be written: nothing was touched) or "interrupted"
 * (the daemon shut down during it); duration_ms from the request to the
 * answer; origin as asked ("cli", "api", "startup", "router").  Not
 * called for a dry run.  Strings borrowed for the call; the hook may not
 * call switch_request or switch_shutdown. */
typedef void (*switch_end_fn)(swx *x, int64_t id, const char *to_mode, const char *origin, const char *outcome,
                              int64_t duration_ms, void *ud);
void switch_set_end(swx *x, switch_end_fn fn, void *ud);

/* Once, after reconcile: close every journal entry a crash left open
 * (state interrupted, a switch.phase event saying so), then bring up
 * switch.startup_mode (none | last | a mode id) through a switch with
 * origin "startup" (src/daemon/startup.c: after the memory a previous
 * daemon left is released, retried within switch.startup_retry).
 * Returns at once; the switch runs on the loop. */
void switch_startup(swx *x);

/* The last committed mode into out: 1, or 0 when none was ever committed. */
int switch_committed(swx *x, char *out, size_t outlen);
/* The journal, newest first, as {"switches": [...]} into out. */
int switch_journal_json(swx *x, size_t limit, buf *out, char *err, size_t errlen);
/* The switch in progress as JSON ({"id","mode","from","origin",...}) or "null". */
void switch_current_json(swx *x, buf *out);
/* The mode of the switch in progress into out: true, or false when none. */
bool switch_current_mode(swx *x, char *out, size_t outlen);

/* A switch in progress is abandoned: its journal entry is marked
 * interrupted ("the daemon shut down"), no rollback is tried (the
 * supervisor stops every service anyway), its client and every queued
 * one get 503.  Call before sup_shutdown. */
void switch_shutdown(swx *x);
/* After the loop has ended. */
void switch_free(swx *x);

#endif
