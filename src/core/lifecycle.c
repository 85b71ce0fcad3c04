/* lifecycle.c - the state x event table and the restart policy.
 *
 * The table is data: rows not listed are transitions the supervisor must
 * not make.  Two rules shape it: a service never restarts itself from a
 * state a person asked to leave (STOPPING absorbs failures), and FAILED is
 * sticky until EV_RESET or an explicit start, so a crash loop cannot
 * outlive its policy. */
#include "core/lifecycle.h"

const char *const svc_state_names[] = {"down", "starting", "ready", "unhealthy", "stopping", "failed", "sleeping"};
const char *const svc_event_names[] = {"start",   "refused",     "ready", "start_timeout", "exited", "health_failed",
                                       "health_ok", "stop", "stopped", "watchdog", "reset", "give_up",
                                       "respawned", "canary_failed", "slept"};
const char *const svc_action_names[] = {"none", "admit", "kill", "restart", "record"};

#define T(s, e, n, a) [s][e] = {n, a, 1}

typedef struct row {
    svc_state next;
    svc_action action;
    int valid;
} row;

static const row table[SVC__STATES][EV__EVENTS] = {
    /* down */
    T(SVC_DOWN, EV_START, SVC_STARTING, ACT_ADMIT),
    T(SVC_DOWN, EV_STOP, SVC_DOWN, ACT_NONE),
    T(SVC_DOWN, EV_STOPPED, SVC_DOWN, ACT_RECORD), /* a late confirmation */
    T(SVC_DOWN, EV_RESET, SVC_DOWN, ACT_NONE),
    T(SVC_DOWN, EV_GIVE_UP, SVC_FAILED, ACT_RECORD), /* restarts exhausted: sticky from here */
    T(SVC_DOWN, EV_RESPAWNED, SVC_STARTING, ACT_RECORD), /* a unit found running: adopted */

    /* starting: admitted and loading */
    T(SVC_STARTING, EV_REFUSED, SVC_DOWN, ACT_RECORD), /* the gate said no: nothing ran, no retry */
    T(SVC_STARTING, EV_READY, SVC_READY, ACT_RECORD),
    T(SVC_STARTING, EV_START_TIMEOUT, SVC_FAILED, ACT_KILL),
    T(SVC_STARTING, EV_EXITED, SVC_FAILED, ACT_KILL), /* exit during load: failed, kill leftovers */
    T(SVC_STARTING, EV_STOP, SVC_STOPPING, ACT_KILL),
    T(SVC_STARTING, EV_WATCHDOG, SVC_FAILED, ACT_KILL),
    T(SVC_STARTING, EV_START, SVC_STARTING, ACT_NONE), /* already on its way */
    T(SVC_STARTING, EV_HEALTH_OK, SVC_STARTING, ACT_NONE),
    T(SVC_STARTING, EV_HEALTH_FAILED, SVC_STARTING, ACT_NONE), /* loading: 503 is expected */
    T(SVC_STARTING, EV_RESPAWNED, SVC_STARTING, ACT_RECORD), /* exited during load, systemd restarts it */
    T(SVC_STARTING, EV_CANARY_FAILED, SVC_FAILED, ACT_KILL), /* a wrong answer: sticky, no restart loop */

    /* ready */
    T(SVC_READY, EV_HEALTH_OK, SVC_READY, ACT_NONE),
    T(SVC_READY, EV_HEALTH_FAILED, SVC_UNHEALTHY, ACT_RESTART),
    T(SVC_READY, EV_EXITED, SVC_DOWN, ACT_RESTART), /* crash: the policy decides */
    T(SVC_READY, EV_STOP, SVC_STOPPING, ACT_KILL),
    T(SVC_READY, EV_WATCHDOG, SVC_STOPPING, ACT_KILL),
    T(SVC_READY, EV_START, SVC_READY, ACT_NONE),
    T(SVC_READY, EV_READY, SVC_READY, ACT_NONE),
    T(SVC_READY, EV_RESPAWNED, SVC_STARTING, ACT_RECORD), /* crashed, systemd restarts it: no policy of ours */

    /* unhealthy: a restart is under way (kill, then the policy's EV_START) */
    T(SVC_UNHEALTHY, EV_HEALTH_OK, SVC_READY, ACT_RECORD),
    T(SVC_UNHEALTHY, EV_HEALTH_FAILED, SVC_UNHEALTHY, ACT_NONE),
    T(SVC_UNHEALTHY, EV_EXITED, SVC_DOWN, ACT_RESTART),
    T(SVC_UNHEALTHY, EV_STOPPED, SVC_DOWN, ACT_RESTART),
    T(SVC_UNHEALTHY, EV_STOP, SVC_STOPPING, ACT_KILL),
    T(SVC_UNHEALTHY, EV_WATCHDOG, SVC_STOPPING, ACT_KILL),
    T(SVC_UNHEALTHY, EV_START, SVC_UNHEALTHY, ACT_NONE),
    T(SVC_UNHEALTHY, EV_RESPAWNED, SVC_STARTING, ACT_RECORD),

    /* stopping: nothing restarts from here */
    T(SVC_STOPPING, EV_STOPPED, SVC_DOWN, ACT_RECORD),
    T(SVC_STOPPING, EV_EXITED, SVC_STOPPING, ACT_NONE), /* expected; wait for the group */
    T(SVC_STOPPING, EV_STOP, SVC_STOPPING, ACT_NONE),
    T(SVC_STOPPING, EV_HEALTH_OK, SVC_STOPPING, ACT_NONE),
    T(SVC_STOPPING, EV_HEALTH_FAILED, SVC_STOPPING, ACT_NONE),
    T(SVC_STOPPING, EV_WATCHDOG, SVC_STOPPING, ACT_NONE),

    /* failed: sticky */
    T(SVC_FAILED, EV_START, SVC_STARTING, ACT_ADMIT), /* a person asked */
    T(SVC_FAILED, EV_RESET, SVC_DOWN, ACT_RECORD),
    T(SVC_FAILED, EV_STOP, SVC_FAILED, ACT_NONE),
    T(SVC_FAILED, EV_STOPPED, SVC_FAILED, ACT_RECORD), /* the kill after a failure completed */
    T(SVC_FAILED, EV_EXITED, SVC_FAILED, ACT_NONE),

    /* sleeping: confirmed asleep; a start wakes it (admitted like a start) */
    T(SVC_READY, EV_SLEPT, SVC_SLEEPING, ACT_RECORD),
    T(SVC_STARTING, EV_SLEPT, SVC_SLEEPING, ACT_RECORD), /* a wake refused: it sleeps on */
    T(SVC_SLEEPING, EV_START, SVC_STARTING, ACT_ADMIT),
    T(SVC_SLEEPING, EV_STOP, SVC_STOPPING, ACT_KILL),
    T(SVC_SLEEPING, EV_WATCHDOG, SVC_STOPPING, ACT_KILL),
    T(SVC_SLEEPING, EV_EXITED, SVC_DOWN, ACT_RECORD), /* not restarted: nobody was using it */
    T(SVC_SLEEPING, EV_SLEPT, SVC_SLEEPING, ACT_NONE),
    T(SVC_SLEEPING, EV_HEALTH_OK, SVC_SLEEPING, ACT_NONE),
    T(SVC_SLEEPING, EV_HEALTH_FAILED, SVC_SLEEPING, ACT_NONE), /* a sleeper is not unhealthy */
    T(SVC_SLEEPING, EV_RESPAWNED, SVC_STARTING, ACT_RECORD),
};

bool lifecycle_step(svc_state state, svc_event ev, svc_transition *out)
{
    if ((unsigned)state >= SVC__STATES || (unsigned)ev >= EV__EVENTS) return false;
    const row *r = &table[state][ev];
    if (!r->valid) return false;
    out->next = r->next;
    out->action = r->action;
    return true;
}

void restart_decide(const restart_policy_v *p, restart_history *h, int64_t now_ms, restart_decision *out)
{
    /* forget restarts that left the window */
    size_t keep = 0;
    for (size_t i = 0; i < h->n; i++)
        if (now_ms - h->at_ms[i] < p->window_ms) h->at_ms[keep++] = h->at_ms[i];
    h->n = keep;
    out->in_window = (int64_t)h->n;
    if ((int64_t)h->n >= p->max_restarts || h->n >= RESTART_HISTORY_MAX) {
        out->restart = false;
        out->delay_ms = 0;
        return;
    }
    int64_t d = p->backoff_initial_ms;
    for (size_t i = 0; i < h->n && d < p->backoff_max_ms; i++) d = d > INT64_MAX / 2 ? INT64_MAX : d * 2;
    if (d > p->backoff_max_ms) d = p->backoff_max_ms;
    out->restart = true;
    out->delay_ms = d;
    h->at_ms[h->n++] = now_ms + d;
}

int64_t probe_wait_ms(int64_t backoff_ms, int64_t elapsed_ms, int64_t expect_ms, int64_t line_ago_ms)
{
    if (line_ago_ms >= 0 && line_ago_ms < PROBE_AFTER_LINE_FOR_MS) return PROBE_AFTER_LINE_MS;
    if (expect_ms <= 0) return backoff_ms;
    int64_t from = expect_ms * 9 / 10, to = expect_ms + expect_ms / 4 + 100;
    int64_t cap = expect_ms / PROBE_NEAR_DIV > PROBE_NEAR_MS ? expect_ms / PROBE_NEAR_DIV : PROBE_NEAR_MS;
    if (elapsed_ms >= to) return backoff_ms;
    if (elapsed_ms >= from) return backoff_ms < cap ? backoff_ms : cap;
    return elapsed_ms + backoff_ms > from ? from - elapsed_ms : backoff_ms;
}
