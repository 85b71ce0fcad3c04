/* test_lifecycle.c - the state x event table and the restart policy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "core/lifecycle.h"

static void step(svc_state s, svc_event e, svc_state want, svc_action act)
{
    svc_transition t;
    if (!lifecycle_step(s, e, &t))
        fail_msg("%s + %s: not allowed, expected -> %s", svc_state_names[s], svc_event_names[e], svc_state_names[want]);
    if (t.next != want || t.action != act)
        fail_msg("%s + %s: -> %s (%s), expected -> %s (%s)", svc_state_names[s], svc_event_names[e],
                 svc_state_names[t.next], svc_action_names[t.action], svc_state_names[want], svc_action_names[act]);
}

static void refuse(svc_state s, svc_event e)
{
    svc_transition t = {SVC_DOWN, ACT_NONE};
    if (lifecycle_step(s, e, &t))
        fail_msg("%s + %s: allowed (-> %s), expected refused", svc_state_names[s], svc_event_names[e],
                 svc_state_names[t.next]);
}

static void happy_path(void **state)
{
    step(SVC_DOWN, EV_START, SVC_STARTING, ACT_ADMIT);
    step(SVC_DOWN, EV_GIVE_UP, SVC_FAILED, ACT_RECORD); /* restarts exhausted */
    step(SVC_STARTING, EV_READY, SVC_READY, ACT_RECORD);
    step(SVC_READY, EV_STOP, SVC_STOPPING, ACT_KILL);
    step(SVC_STOPPING, EV_STOPPED, SVC_DOWN, ACT_RECORD);
}

static void failures_during_start(void **state)
{
    step(SVC_STARTING, EV_REFUSED, SVC_DOWN, ACT_RECORD);
    step(SVC_STARTING, EV_START_TIMEOUT, SVC_FAILED, ACT_KILL);
    step(SVC_STARTING, EV_EXITED, SVC_FAILED, ACT_KILL);
    step(SVC_STARTING, EV_WATCHDOG, SVC_FAILED, ACT_KILL);
    /* 503 "Loading model" while starting is not a health failure */
    step(SVC_STARTING, EV_HEALTH_FAILED, SVC_STARTING, ACT_NONE);
}

static void crash_and_health(void **state)
{
    step(SVC_READY, EV_EXITED, SVC_DOWN, ACT_RESTART);
    step(SVC_READY, EV_HEALTH_FAILED, SVC_UNHEALTHY, ACT_RESTART);
    step(SVC_UNHEALTHY, EV_HEALTH_OK, SVC_READY, ACT_RECORD);
    step(SVC_UNHEALTHY, EV_STOPPED, SVC_DOWN, ACT_RESTART);
}

/* systemd's Restart= restarts it: loading again, no policy or admission of
 * ours; never out of a state a person asked to leave */
static void runner_owned_restarts(void **state)
{
    step(SVC_READY, EV_RESPAWNED, SVC_STARTING, ACT_RECORD);
    step(SVC_UNHEALTHY, EV_RESPAWNED, SVC_STARTING, ACT_RECORD);
    step(SVC_STARTING, EV_RESPAWNED, SVC_STARTING, ACT_RECORD);
    step(SVC_DOWN, EV_RESPAWNED, SVC_STARTING, ACT_RECORD); /* a unit found running at reconcile */
    refuse(SVC_STOPPING, EV_RESPAWNED);
    refuse(SVC_FAILED, EV_RESPAWNED);
    assert_string_equal(svc_event_names[EV_RESPAWNED], "respawned");
}

/* a wrong canary answer fails the start for good: no restart of ours,
 * and only a loading service has a canary */
static void canary_failure_is_sticky(void **state)
{
    step(SVC_STARTING, EV_CANARY_FAILED, SVC_FAILED, ACT_KILL);
    refuse(SVC_READY, EV_CANARY_FAILED);
    refuse(SVC_DOWN, EV_CANARY_FAILED);
    refuse(SVC_FAILED, EV_CANARY_FAILED);
    assert_string_equal(svc_event_names[EV_CANARY_FAILED], "canary_failed");
}

/* sleep: only a confirmed sleep of a ready service sleeps; a start wakes
 * (admitted like a start); a refused wake sleeps on; a sleeper is never
 * unhealthy, its exit is not restarted, a stop and the watchdog kill it */
static void sleeping_rows(void **state)
{
    step(SVC_READY, EV_SLEPT, SVC_SLEEPING, ACT_RECORD);
    step(SVC_STARTING, EV_SLEPT, SVC_SLEEPING, ACT_RECORD);
    step(SVC_SLEEPING, EV_START, SVC_STARTING, ACT_ADMIT);
    step(SVC_SLEEPING, EV_STOP, SVC_STOPPING, ACT_KILL);
    step(SVC_SLEEPING, EV_WATCHDOG, SVC_STOPPING, ACT_KILL);
    step(SVC_SLEEPING, EV_EXITED, SVC_DOWN, ACT_RECORD);
    step(SVC_SLEEPING, EV_HEALTH_FAILED, SVC_SLEEPING, ACT_NONE);
    step(SVC_SLEEPING, EV_HEALTH_OK, SVC_SLEEPING, ACT_NONE);
    step(SVC_SLEEPING, EV_SLEPT, SVC_SLEEPING, ACT_NONE);
    refuse(SVC_DOWN, EV_SLEPT);
    refuse(SVC_UNHEALTHY, EV_SLEPT);
    refuse(SVC_STOPPING, EV_SLEPT);
    refuse(SVC_FAILED, EV_SLEPT);
    refuse(SVC_SLEEPING, EV_READY);
    refuse(SVC_SLEEPING, EV_REFUSED);
    assert_string_equal(svc_event_names[EV_SLEPT], "slept");
    assert_string_equal(svc_state_names[SVC_SLEEPING], "sleeping");
}

static void stopping_absorbs_failures(void **state)
{
    step(SVC_STOPPING, EV_EXITED, SVC_STOPPING, ACT_NONE);
    step(SVC_STOPPING, EV_HEALTH_FAILED, SVC_STOPPING, ACT_NONE);
    step(SVC_STOPPING, EV_WATCHDOG, SVC_STOPPING, ACT_NONE);
    refuse(SVC_STOPPING, EV_START);
    refuse(SVC_STOPPING, EV_READY);
}

static void failed_is_sticky(void **state)
{
    refuse(SVC_FAILED, EV_READY);
    refuse(SVC_FAILED, EV_HEALTH_OK);
    step(SVC_FAILED, EV_EXITED, SVC_FAILED, ACT_NONE);
    step(SVC_FAILED, EV_START, SVC_STARTING, ACT_ADMIT);
    step(SVC_FAILED, EV_RESET, SVC_DOWN, ACT_RECORD);
}

static void impossible_transitions(void **state)
{
    refuse(SVC_DOWN, EV_READY);
    refuse(SVC_DOWN, EV_EXITED);
    refuse(SVC_DOWN, EV_HEALTH_FAILED);
    refuse(SVC_READY, EV_REFUSED);
    svc_transition t;
    assert_false(lifecycle_step((svc_state)99, EV_START, &t));
    assert_false(lifecycle_step(SVC_DOWN, (svc_event)99, &t));
}

static void every_state_can_be_stopped(void **state)
{
    for (int s = 0; s < SVC__STATES; s++) {
        svc_transition t;
        assert_true(lifecycle_step((svc_state)s, EV_STOP, &t));
        assert_true(t.next == SVC_STOPPING || t.next == SVC_DOWN || t.next == SVC_FAILED);
    }
}

static void names_cover_enums(void **state)
{
    for (int s = 0; s < SVC__STATES; s++) assert_non_null(svc_state_names[s]);
    assert_string_equal(svc_state_names[SVC_UNHEALTHY], "unhealthy");
    for (int e = 0; e < EV__EVENTS; e++) assert_non_null(svc_event_names[e]);
    assert_string_equal(svc_event_names[EV_RESET], "reset");
    assert_string_equal(svc_action_names[ACT_RECORD], "record");
}

static void backoff_doubles_then_caps_then_gives_up(void **state)
{
    restart_policy_v p = {.max_restarts = 5, .window_ms = 600000, .backoff_initial_ms = 1000, .backoff_max_ms = 6000};
    restart_history h = {0};
    restart_decision d;
    int64_t now = 1000000;
    const int64_t want[] = {1000, 2000, 4000, 6000, 6000};
    for (int i = 0; i < 5; i++) {
        restart_decide(&p, &h, now, &d);
        assert_true(d.restart);
        assert_int_equal(d.delay_ms, want[i]);
        assert_int_equal(d.in_window, i);
        now += d.delay_ms + 10;
    }
    restart_decide(&p, &h, now, &d);
    assert_false(d.restart);
    assert_int_equal(d.in_window, 5);
}

static void the_window_forgets(void **state)
{
    restart_policy_v p = {.max_restarts = 2, .window_ms = 10000, .backoff_initial_ms = 100, .backoff_max_ms = 1000};
    restart_history h = {0};
    restart_decision d;
    restart_decide(&p, &h, 0, &d);
    restart_decide(&p, &h, 1000, &d);
    assert_true(d.restart);
    restart_decide(&p, &h, 2000, &d);
    assert_false(d.restart);
    /* well after the window, the count starts again, and so does the backoff */
    restart_decide(&p, &h, 100000, &d);
    assert_true(d.restart);
    assert_int_equal(d.delay_ms, 100);
    assert_int_equal(d.in_window, 0);
}

static void zero_restarts_never_restarts(void **state)
{
    restart_policy_v p = {.max_restarts = 0, .window_ms = 1000, .backoff_initial_ms = 0, .backoff_max_ms = 0};
    restart_history h = {0};
    restart_decision d;
    restart_decide(&p, &h, 5, &d);
    assert_false(d.restart);
}

static void huge_backoff_does_not_overflow(void **state)
{
    restart_policy_v p = {.max_restarts = 1000, .window_ms = INT64_MAX / 4, .backoff_initial_ms = INT64_MAX / 8,
                          .backoff_max_ms = INT64_MAX / 2};
    restart_history h = {0};
    restart_decision d;
    for (int i = 0; i < 70; i++) {
        restart_decide(&p, &h, i, &d);
        assert_true(d.restart);
        assert_true(d.delay_ms > 0 && d.delay_ms <= INT64_MAX / 2);
    }
    assert_int_equal(h.n, 70);
}

/* max_restarts above the old 64-entry history never gave up: the history
 * dropped its oldest entry, so the count stayed below the maximum. */
static void large_max_restarts_gives_up(void **state)
{
    const int64_t maxes[] = {100, 1000};
    for (size_t m = 0; m < 2; m++) {
        restart_policy_v p = {.max_restarts = maxes[m], .window_ms = 600000000, .backoff_initial_ms = 1,
                              .backoff_max_ms = 2};
        restart_history h;
        memset(&h, 0, sizeof h);
        restart_decision d;
        int64_t now = 0, restarts = 0;
        for (int i = 0; i < 2000; i++) {
            restart_decide(&p, &h, now, &d);
            if (!d.restart) break;
            restarts++;
            now += d.delay_ms + 1;
        }
        assert_false(d.restart);
        assert_int_equal(restarts, maxes[m]);
        assert_int_equal(d.in_window, maxes[m]);
    }
}

/* A history that fills up counts as exhausted, whatever max_restarts says. */
static void full_history_is_exhausted(void **state)
{
    restart_policy_v p = {.max_restarts = INT64_MAX, .window_ms = INT64_MAX / 4, .backoff_initial_ms = 1,
                          .backoff_max_ms = 1};
    restart_history h;
    memset(&h, 0, sizeof h);
    restart_decision d;
    int64_t n = 0;
    for (int i = 0; i < RESTART_HISTORY_MAX + 10; i++) {
        restart_decide(&p, &h, i * 2, &d);
        if (!d.restart) break;
        n++;
    }
    assert_false(d.restart);
    assert_int_equal(n, RESTART_HISTORY_MAX);
}

/* probe_wait_ms: the back-off far from the load's end, 2 ms for half a
 * second after the engine's ready line, capped near the expected end */
static void probe_wait_near_the_end(void **st)
{
    (void)st;
    /* no measured load, no line: the back-off as it is */
    assert_int_equal(probe_wait_ms(5, 0, 0, -1), 5);
    assert_int_equal(probe_wait_ms(500, 60000, 0, -1), 500);
    /* the line said ready: 2 ms, whatever the back-off, for 500 ms */
    assert_int_equal(probe_wait_ms(40, 100, 0, 0), PROBE_AFTER_LINE_MS);
    assert_int_equal(probe_wait_ms(500, 100, 30000, 499), PROBE_AFTER_LINE_MS);
    assert_int_equal(probe_wait_ms(500, 100, 0, 500), 500);
    /* expected 1000 ms: the window is 900 .. 1350 ms, the cap 5 ms */
    assert_int_equal(probe_wait_ms(40, 100, 1000, -1), 40);   /* far: the back-off */
    assert_int_equal(probe_wait_ms(500, 600, 1000, -1), 300); /* cut to reach 900 */
    assert_int_equal(probe_wait_ms(500, 900, 1000, -1), 5);
    assert_int_equal(probe_wait_ms(2, 1000, 1000, -1), 2);    /* below the cap stays */
    assert_int_equal(probe_wait_ms(500, 1349, 1000, -1), 5);
    assert_int_equal(probe_wait_ms(500, 1350, 1000, -1), 500); /* past the window */
    /* expected 60 s: the cap is 60000 / 200 = 300 ms; the window 54 .. 75.1 s */
    assert_int_equal(probe_wait_ms(500, 54000, 60000, -1), 300);
    assert_int_equal(probe_wait_ms(500, 53800, 60000, -1), 200);
    assert_int_equal(probe_wait_ms(500, 75100, 60000, -1), 500);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(happy_path),
        cmocka_unit_test(sleeping_rows),
        cmocka_unit_test(failures_during_start),
        cmocka_unit_test(crash_and_health),
        cmocka_unit_test(runner_owned_restarts),
        cmocka_unit_test(canary_failure_is_sticky),
        cmocka_unit_test(stopping_absorbs_failures),
        cmocka_unit_test(failed_is_sticky),
        cmocka_unit_test(impossible_transitions),
        cmocka_unit_test(every_state_can_be_stopped),
        cmocka_unit_test(names_cover_enums),
        cmocka_unit_test(backoff_doubles_then_caps_then_gives_up),
        cmocka_unit_test(the_window_forgets),
        cmocka_unit_test(zero_restarts_never_restarts),
        cmocka_unit_test(huge_backoff_does_not_overflow),
        cmocka_unit_test(large_max_restarts_gives_up),
        cmocka_unit_test(full_history_is_exhausted),
        cmocka_unit_test(probe_wait_near_the_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
