/* tiercall.h - the engines' residency calls (docs/modes.md "Tiers"): a
 * sleep or a wake of one running engine at one tier, as the sequence of
 * HTTP requests the engine takes, each on the loop with a deadline
 * (daemon/health.h), and the confirmation polled until the engine says so
 * or the deadline passes.
 *
 *   sleep l1/l2  POST /sleep?level=N, then GET /is_sleeping until
 *                {"is_sleeping": true} (polls 50 ms doubling to 500 ms)
 *   sleep router GET /models, POST /models/unload {"model": ID} for each
 *                model loaded or loading, then GET /models until none is
 *   wake l1      POST /wake_up, then GET /is_sleeping until false
 *   wake l2      POST /wake_up?tags=weights, POST /collective_rpc
 *                {"method":"reload_weights"}, POST /wake_up?tags=kv_cache
 *                (the tags call answered 4xx: a plain POST /wake_up), then
 *                GET /is_sleeping until false
 *   wake router  POST /models/load {"model": M} for each model, then GET
 *                /models until each is "loaded"
 *
 * A 404 or 405 to the first call is TC_UNSUPPORTED (never success); any
 * other non-2xx, no answer, or a deadline passed is TC_FAILED with why
 * ("POST /sleep?level=1: 500", "GET /is_sleeping: false after 10 s"). */
#ifndef GPUMOD_TIERCALL_H
#define GPUMOD_TIERCALL_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

typedef enum { TC_OK, TC_UNSUPPORTED, TC_FAILED } tc_result;

typedef struct tiercall tiercall;

typedef struct tiercall_spec {
    const char *host; /* as health_get takes it */
    int port;
    int tier;           /* core/tier.h: TIER_L1, TIER_L2, TIER_ROUTER */
    int64_t timeout_ms; /* the whole call: requests and confirmation */
    int64_t confirm_ms; /* the confirmation's own bound after the requests (0: timeout_ms) */
    const char *models; /* router wake: the models to load, comma-separated */
} tiercall_spec;

/* r, why (NULL for TC_OK) and, for a router sleep, the models that were
 * loaded before it (comma-separated, "" when none) - borrowed for the
 * call.  ms: the call's time, request to confirmation. */
typedef void (*tiercall_cb)(tc_result r, const char *why, const char *models, int64_t ms, void *ud);

/* cb exactly once (on the loop, never from within these), unless
 * cancelled first.  The spec is copied. */
tiercall *tiercall_sleep(uv_loop_t *loop, const tiercall_spec *sp, tiercall_cb cb, void *ud);
tiercall *tiercall_wake(uv_loop_t *loop, const tiercall_spec *sp, tiercall_cb cb, void *ud);
/* No callback after this; it frees itself. */
void tiercall_cancel(tiercall *t);

#endif
