/* lifecycle.h - a service's lifecycle as an explicit state x event table,
 * and the restart policy.  Pure: the supervisor feeds events (a request, a
 * health result, an exit, a timer) and carries out the action the table
 * names; every transition it makes is one row here, so an impossible
 * transition is a table lookup that fails, not a bug in a callback. */
#ifndef GPUMOD_LIFECYCLE_H
#define GPUMOD_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    SVC_DOWN,
    SVC_STARTING,  /* admitted, spawned, not ready yet (loading) */
    SVC_READY,
    SVC_UNHEALTHY, /* was ready; health_failures probes in a row failed */
    SVC_STOPPING,  /* SIGTERM sent to the group, waiting for it and its memory */
    SVC_FAILED,    /* gave up: start failed or restarts exhausted; a person must act */
    SVC_SLEEPING,  /* confirmed asleep at its tier (core/tier.h): vLLM sleep, llama.cpp router unload */
    SVC__STATES
} svc_state;
extern const char *const svc_state_names[]; /* lowercase, as in the JSON */

typedef enum {
    EV_START,         /* a start was requested (CLI, API, switch, router, restart timer) */
    EV_REFUSED,       /* the gate or the port check said no: nothing was spawned */
    EV_READY,         /* the readiness signal: health 200 (and the driver's log line) */
    EV_START_TIMEOUT, /* startup_timeout passed before ready */
    EV_EXITED,        /* the main process exited or was killed unexpectedly */
    EV_HEALTH_FAILED, /* health_failures probes in a row failed */
    EV_HEALTH_OK,     /* a probe succeeded */
    EV_STOP,          /* a stop was requested */
    EV_STOPPED,       /* the group is gone (and its memory freed, or the wait gave up) */
    EV_WATCHDOG,      /* the memory watchdog chose this service */
    EV_RESET,         /* a person cleared a failed service */
    EV_GIVE_UP,       /* the restart policy said no more restarts (after an exit or health failure) */
    EV_RESPAWNED,     /* the runner runs it again on its own (systemd's Restart=), or it was found
                         running (a unit adopted at reconcile): loading, no admission of ours */
    EV_CANARY_FAILED, /* ready, but the canary's answer was wrong, empty or an error: failed, not restarted */
    EV_SLEPT,         /* the engine confirmed its sleep (GET /is_sleeping true, no model loaded); from
                         starting: a wake the gate refused, the engine sleeps on */
    EV__EVENTS
} svc_event;
extern const char *const svc_event_names[];

typedef enum {
    ACT_NONE,
    ACT_ADMIT,        /* need + gate + port check, then spawn (or feed EV_REFUSED) */
    ACT_KILL,         /* SIGTERM to the group, SIGKILL after stop_timeout, verify freed */
    ACT_RESTART,      /* ask the restart policy: schedule EV_START after its delay, or fail */
    ACT_RECORD,       /* nothing to do but record the event */
    ACT__ACTIONS
} svc_action;
extern const char *const svc_action_names[];

typedef struct svc_transition {
    svc_state next;
    svc_action action;
} svc_transition;

/* The table's row for (state, event).  Returns false for a transition the
 * table does not allow (out: unchanged); the caller reports it, it never
 * acts on it. */
bool lifecycle_step(svc_state state, svc_event ev, svc_transition *out);

/* ---- restart policy ---- */

typedef struct restart_policy_v {
    int64_t max_restarts;   /* within window_ms */
    int64_t window_ms;
    int64_t backoff_initial_ms;
    int64_t backoff_max_ms;
} restart_policy_v;

/* At least the configured maximum of max_restarts (1000, settings.c and
 * preset.c): a history that could drop an entry still in the window would
 * let a crash loop run for ever. */
#define RESTART_HISTORY_MAX 1024
typedef struct restart_history {
    int64_t at_ms[RESTART_HISTORY_MAX]; /* times of the recent restarts, oldest first */
    size_t n;
} restart_history;

typedef struct restart_decision {
    bool restart;       /* false: give up (failed) */
    int64_t delay_ms;   /* when restart: wait this long, then EV_START */
    int64_t in_window;  /* restarts already counted in the window */
} restart_decision;

/* Decide at now_ms after a failure; when it says restart, the history has
 * the restart appended.  The delay doubles from backoff_initial per
 * restart within the window, capped at backoff_max; at most max_restarts
 * restarts within window_ms, then give up.  A full history (more than
 * RESTART_HISTORY_MAX restarts in the window) counts as exhausted. */
void restart_decide(const restart_policy_v *p, restart_history *h, int64_t now_ms, restart_decision *out);

/* ---- readiness probes ---- */

/* The wait before the next probe of a loading engine.  backoff_ms: the
 * back-off's own next wait (5, 10, 20 ... 500 ms), which keeps the probes
 * of a long load few; elapsed_ms: how long the load has run; expect_ms:
 * the service's last measured load (0: none yet); line_ago_ms: how long
 * ago the engine's log said it is ready (-1: it has not).
 *
 * Near the end the wait is short, so that a start is seen ready within a
 * few ms of the engine being ready: PROBE_AFTER_LINE_MS for
 * PROBE_AFTER_LINE_FOR_MS after the log line (it can come a moment before
 * the engine's /health turns 200; an engine whose /health never does goes
 * back to the back-off), and, for an engine whose log says nothing the
 * driver knows, while the load is expected to end: from 0.9 to 1.25 times
 * expect_ms (+ 100 ms) the wait is at most max(PROBE_NEAR_MS, expect_ms /
 * PROBE_NEAR_DIV), about 70 probes in that window whatever the load's
 * length, and a wait that would overshoot the window's beginning is cut
 * to reach it. */
#define PROBE_AFTER_LINE_MS 2
#define PROBE_AFTER_LINE_FOR_MS 500
#define PROBE_NEAR_MS 5
#define PROBE_NEAR_DIV 200
int64_t probe_wait_ms(int64_t backoff_ms, int64_t elapsed_ms, int64_t expect_ms, int64_t line_ago_ms);

#endif
