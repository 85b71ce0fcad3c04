/* activate.h - activation on demand: a request for a service that is not
 * ready waits here while the service is brought up, per the service's
 * `activation` (else router.activation):
 *   switch  start it beside the current services when the gate allows,
 *           else switch to the best mode containing it whose plan fits
 *           (the daemon's rank: fewest stops, then smallest), else 503 naming
 *           each mode and why
 *   start   start it beside the others only if the gate allows, else 503
 *   reject  503 with Retry-After
 * Waiters of one service share one load; each service has a bounded
 * queue (router.queue_max: overflow 429) and every waiter a deadline
 * (router.queue_timeout: 504).  Progress (llama.cpp load percentage) is
 * reported to waiters so a streaming client can get `: loading 42%`
 * comments.  Everything on the daemon's loop. */
#ifndef GPUMOD_ACTIVATE_H
#define GPUMOD_ACTIVATE_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "config/config.h"
#include "router/rhost.h"
#include "router/rmetrics.h"
#include "store/db.h"
#include "util/buf.h"

typedef struct activator activator;
typedef struct act_wait act_wait;

/* The outcome for one waiter: status 200 (ready: go ahead), else an
 * error to answer with: 429 queue_full, 503 unavailable (reject, or the
 * gate said no and no switch can help; retry_after_s > 0 then; a FAILED
 * service is 503 unavailable with retry_after_s 0: "service 'X' failed; a
 * person must start it (gpumod service start X)"), 503 shutting_down,
 * 504 timeout, 404 not_found (no such service), 409 (switch_in_progress
 * that could not be queued, ambiguous), 422 (start_failed, need_unknown,
 * with the reason).  Strings borrowed for the call; the act_wait is freed
 * after it (no act_cancel then). */
typedef void (*act_done_cb)(void *ud, int status, const char *code, const char *message, int retry_after_s);
/* Progress while waiting: pct -1 when unknown; state the service's state
 * name.  Called once within ~100 ms of a request that has to wait, then
 * whenever either changes (not per tick).  May call act_cancel. */
typedef void (*act_progress_cb)(void *ud, int pct, const char *state);

/* h copied (what the daemon lends: rhost.h; NULL: nothing); cfg
 * borrowed (act_set_config on reload); m may be NULL. */
activator *act_new(uv_loop_t *loop, const router_host *h, const config *cfg, rmetrics *m);
void act_set_config(activator *a, const config *cfg);

/* The event sink (optional; none until set): one `router.activation`
 * event per activation, stored in st (NULL: not stored) and passed to
 * on_event (NULL: nobody), both borrowed.  An activation is one shared
 * load (a start, or a switch to a mode, with every waiter it served) or
 * a refusal without a load (activation reject, a failed service).
 * reason: "'chat': start (activation switch): ready after 812 ms, 2
 * waiter(s) served"; data: {service, policy, action ("start", "switch",
 * "refused"), mode (the switch's, else null), tried_start (a switch
 * after the gate refused a start beside the others), waiters (answered
 * by the activation), timed_out (waiters that hit router.queue_timeout
 * meanwhile), duration_ms, outcome ("ready", else the error code the
 * waiters got), status, message}. */
typedef void (*act_event_fn)(const store_event *e, void *ud);
void act_set_events(activator *a, store *st, act_event_fn on_event, void *ud);

/* Wait until service (configured id) is ready.  The callback is never
 * called from inside this call (a ready service answers on the next loop
 * turn).  Returns a handle for act_cancel (NULL only if out of memory,
 * then done is called with 503). */
act_wait *act_request(activator *a, const char *service, act_done_cb done, act_progress_cb progress, void *ud);
/* The client went away: no callback after this. */
void act_cancel(act_wait *w);

/* Queue depth per service and totals, as JSON for status and the metrics. */
void act_json(activator *a, buf *out);
size_t act_queue_depth(activator *a, const char *service);

/* Answers every waiter 503 shutting_down, frees. */
void act_free(activator *a);

#endif
