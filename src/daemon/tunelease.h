/* tunelease.h - the daemon's lease for a tune run (docs/api.md "Tune
 * lease"): one at a time, on one service.  Taking it records where the
 * host was (the mode, the running set, the service's state and
 * overrides); while it is held mode switches are refused and the router
 * refuses the service's requests (unless allow_traffic); it ends when
 * released or when no heartbeat came within its ttl, and then the host
 * is restored: the service restarted as configured (or stopped), then a
 * switch back to the mode it was in.  The lease, held or the last one
 * that ended, with the run's state, is kept in the store (schema v7), so
 * a run resumes after a daemon restart.
 *
 * Everything on the daemon's loop.  The API's handlers (api_tune.c) read
 * the bodies and write the answers; this file decides. */
#ifndef GPUMOD_TUNELEASE_H
#define GPUMOD_TUNELEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/lifecycle.h"
#include "daemon/api.h"
#include "util/buf.h"

typedef struct tunelease tunelease;

#define TL_TTL_MIN_MS 1000
#define TL_TTL_MAX_MS 86400000
#define TL_TTL_DEFAULT_MS 30000
#define TL_RETRY_AFTER_S 10 /* the router's Retry-After for a tuned service */

/* What POST /tune asks (api_tune.c reads it). */
typedef struct tl_take {
    char *service;
    bool allow_traffic;
    int64_t ttl_ms;
    char *state; /* JSON text of an object ("{}" when none was given) */
} tl_take;
void tl_take_release(tl_take *t);

/* An answer: status; on success body is the JSON; else code (static),
 * message and body the error's detail (empty: none). */
typedef struct tl_answer {
    int status;
    const char *code;
    char message[768];
    buf body;
} tl_answer;

/* What the restore does to the tuned service, pure: it ran before (was
 * starting, ready or unhealthy) and runs now with the overrides it had
 * then: keep; it ran before and runs now otherwise (other overrides, or
 * down, failed, stopping): restart as configured; it did not run before
 * and is not down now: stop; else keep. */
typedef enum { TL_KEEP, TL_RESTART, TL_STOP } tl_action;
tl_action tl_restore_action(bool ran_before, svc_state now, bool same_overrides);
bool tl_state_runs(svc_state st);

/* d borrowed (its sup, sw, st, cfg are read at each call).  The last
 * lease is read from the store: one that was still held when the
 * previous daemon stopped becomes "last" with "ended": "daemon_restart". */
tunelease *tunelease_new(gpumodd *d);

/* POST /tune: 201 with the lease; 409 tune_in_progress (a lease is held,
 * or the host is being restored after one; detail the lease), 409
 * switch_in_progress, 404 not_found (no such service configured), 503
 * shutting_down.  rq's strings are copied. */
void tunelease_take(tunelease *t, const tl_take *rq, tl_answer *a);
/* PUT /tune/ID: the heartbeat; state (JSON text, ownership taken; NULL:
 * keep) replaces the run's.  200 with the lease (without its state,
 * with state_bytes), or 404 not_found saying whether it ended and how. */
void tunelease_renew(tunelease *t, const char *id, char *state, tl_answer *a);
/* DELETE /tune/ID: ends the lease and begins the restore; 200
 * {"id","restoring": [steps]}, or 404 as for renew. */
void tunelease_release(tunelease *t, const char *id, tl_answer *a);
/* GET /tune: {"lease": <lease>|null, "last": <lease>|null}. */
void tunelease_json(tunelease *t, buf *out);

/* A mode switch must be refused now (a lease is held, or its restore
 * runs): true with the message and detail (the lease, without its state). */
bool tunelease_refuses_switch(tunelease *t, char *msg, size_t len, buf *detail);
/* The router must refuse a request routed to service now: true with the
 * message and Retry-After in seconds. */
bool tunelease_refuses_traffic(tunelease *t, const char *service, char *msg, size_t len, int *retry_after_s);

/* Shutdown: the timer closed; a lease held stays recorded as held (the
 * next daemon says daemon_restart), a restore in flight is not begun
 * again.  tunelease_free after the loop has ended. */
void tunelease_close(tunelease *t);
void tunelease_free(tunelease *t);

#endif
