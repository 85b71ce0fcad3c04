/* test_watchdog.c - the memory watchdog's decision on plain structs: each
 * trigger (floor, PSI full, over-need) with its exact reason, the victim
 * order (sleepers, loading, furthest over need, largest user), ties (newest start,
 * then id), services already stopping, nobody running, unreadable
 * meminfo and PSI (no action from them, but noted), the boundaries
 * (equal to the floor, the PSI max and the over-need limit passes; one
 * byte / one hundredth past fails) and saturation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/watchdog.h"

#define MIB ((uint64_t)1 << 20)
#define GIB ((uint64_t)1 << 30)

static wd_host host_fine(void)
{
    return (wd_host){
        .meminfo_ok = true, .mem_available_bytes = 64 * GIB, .psi_ok = true, .psi_full_avg10 = 0.5};
}

/* docs/interfaces.md memory.watchdog defaults */
static wd_policy policy_default(void)
{
    return (wd_policy){.floor_bytes = 2048 * MIB,
                       .psi_full_avg10_max = 20,
                       .over_need_factor = 1.25,
                       .over_need_margin_bytes = 1024 * MIB};
}

static wd_service svc(const char *id, uint64_t need_mib, uint64_t used_mib, int64_t started)
{
    return (wd_service){.id = id,
                        .need_known = true,
                        .need_bytes = need_mib * MIB,
                        .used_known = true,
                        .used_bytes = used_mib * MIB,
                        .started_ms = started};
}

static void nothing_running(void **state)
{
    wd_host h = host_fine();
    wd_policy p = policy_default();
    wd_decision d;
    watchdog_decide(&h, NULL, 0, &p, &d);
    assert_false(d.stop);
    assert_string_equal(d.trigger, "");
    assert_string_equal(d.note, "");
}

static void all_within_need(void **state)
{
    wd_host h = host_fine();
    wd_policy p = policy_default();
    wd_service v[] = {svc("a", 4000, 4500, 1), svc("b", 1000, 900, 2)};
    wd_decision d;
    watchdog_decide(&h, v, 2, &p, &d);
    assert_false(d.stop);
    assert_string_equal(d.note, "");
}

static void floor_stops_loading(void **state)
{
    wd_host h = host_fine();
    h.mem_available_bytes = 1500 * MIB;
    wd_policy p = policy_default();
    /* b is far over its need, but a is loading: a goes */
    wd_service v[] = {svc("a", 3000, 2000, 5), svc("b", 1000, 9000, 1)};
    v[0].loading = true;
    wd_decision d;
    watchdog_decide(&h, v, 2, &p, &d);
    assert_true(d.stop);
    assert_int_equal(d.index, 0);
    assert_string_equal(d.service, "a");
    assert_string_equal(d.trigger, "host.mem_available");
    assert_string_equal(d.reason, "MemAvailable 1500 MiB < floor 2048 MiB: stopping 'a' (loading; "
                                  "uses 2000 MiB, need 3000 MiB)");
}

static void floor_stops_sleeper_first(void **state)
{
    wd_host h = host_fine();
    h.mem_available_bytes = 1500 * MIB;
    wd_policy p = policy_default();
    /* a loads, b is far over its need; c and d sleep: the larger sleeper goes */
    wd_service v[] = {svc("a", 3000, 2000, 5), svc("b", 1000, 9000, 1), svc("c", 500, 400, 2),
                      svc("d", 6000, 6100, 3)};
    v[0].loading = true;
    v[2].asleep = v[3].asleep = true;
    wd_decision d;
    watchdog_decide(&h, v, 4, &p, &d);
    assert_true(d.stop);
    assert_string_equal(d.service, "d");
    assert_string_equal(d.reason, "MemAvailable 1500 MiB < floor 2048 MiB: stopping 'd' (asleep: "
                                  "it serves nothing; uses 6100 MiB, need 6000 MiB)");
    /* a sleeper that uses nothing frees nothing: the loading one goes */
    v[2].used_bytes = v[3].used_bytes = 0;
    watchdog_decide(&h, v, 4, &p, &d);
    assert_string_equal(d.service, "a");
    /* a sleeper already stopping is never chosen */
    v[3].used_bytes = 6100 * MIB;
    v[3].stopping = true;
    watchdog_decide(&h, v, 4, &p, &d);
    assert_string_equal(d.service, "a");
}

static void sleeper_within_its_asleep_need(void **state)
{
    /* with the host fine, a sleeper is judged against what it holds asleep */
    wd_host h = host_fine();
    wd_policy p = policy_default();
    wd_service v[] = {svc("a", 600, 1800, 1), svc("b", 600, 1900, 2)};
    v[0].asleep = v[1].asleep = true;
    wd_decision d;
    watchdog_decide(&h, v, 2, &p, &d);
    assert_true(d.stop); /* b: 1900 > 600 x 1.25 + 1024 */
    assert_string_equal(d.service, "b");
    assert_string_equal(d.trigger, "service.over_need");
}

static void floor_equal_is_fine(void **state)
{
    wd_host h = host_fine();
    wd_policy p = policy_default();
    h.mem_available_bytes = p.floor_bytes;
    wd_service v[] = {svc("a", 3000, 2000, 5)};
    v[0].loading = true;
    wd_decision d;
    watchdog_decide(&h, v, 1, &p, &d);
    assert_false(d.stop);
    h.mem_available_bytes = p.floor_bytes - 1;
    watchdog_decide(&h, v, 1, &p, &d);
    assert_true(d.stop);
    /* one byte short reads 2047 < 2048, never "2048 < 2048" */
    assert_non_null(strstr(d.reason, "MemAvailable 2047 MiB < floor 2048 MiB"));
}

static void floor_zero_never_triggers(void **state)
{
    wd_host h = host_fine();
    h.mem_available_bytes = 0;
    wd_policy p = policy_default();
    p.floor_bytes = 0;
    wd_service v[] = {svc("a", 3000, 2000, 5)};
    wd_decision d;
    watchdog_decide(&h, v, 1, &p, &d);
    assert_false(d.stop);
}

static void floor_furthest_over_need(void **state)
{
    wd_host h = host_fine();
    h.mem_available_bytes = 100 * MIB;
    wd_policy p = policy_default();
    /* nobody loading: b is 500 over, c 800 over (both within their limit),
     * a is the largest user but within its need */
    wd_service v[] = {svc("a", 20000, 19000, 1), svc("b", 1000, 1500, 2), svc("c", 4000, 4800, 3)};
    wd_decision d;
    watchdog_decide(&h, v, 3, &p, &d);
    assert_true(d.stop);
    assert_string_equal(d.service, "c");
    assert_int_equal(d.index, 2);
    assert_string_equal(d.trigger, "host.mem_available");
    assert_string_equal(
        d.reason, "MemAvailable 100 MiB < floor 2048 MiB: stopping 'c' (furthest over its need; "
                  "uses 4800 MiB, need 4000 MiB)");
}

static void floor_largest_user(void **state)
{
    wd_host h = host_fine();
    h.mem_available_bytes = 100 * MIB;
    wd_policy p = policy_default();
    wd_service v[] = {svc("a", 5000, 3000, 1), svc("b", 20000, 12000, 2), svc("c", 1000, 1000, 3)};
    wd_decision d;
    watchdog_decide(&h, v, 3, &p, &d);
    assert_true(d.stop);
    assert_string_equal(d.service, "b");
    assert_string_equal(
        d.reason, "MemAvailable 100 MiB < floor 2048 MiB: stopping 'b' (largest user, none is over "
                  "its need; uses 12000 MiB, need 20000 MiB)");
}

static void psi_full_triggers(void **state)
{
    wd_host h = host_fine();
    h.psi_full_avg10 = 34.5;
    wd_policy p = policy_default();
    wd_service v[] = {svc("a", 1000, 900, 1), svc("b", 1000, 1000, 2)};
    v[1].loading = true;
    wd_decision d;
    watchdog_decide(&h, v, 2, &p, &d);
    assert_true(d.stop);
    assert_string_equal(d.service, "b");
    assert_string_equal(d.trigger, "host.psi_full");
    assert_string_equal(
        d.reason, "memory PSI full avg10 34.5% > 20%: stopping 'b' (loading; uses 1000 MiB, need "
                  "1000 MiB)");
}

static void psi_equal_is_fine(void **state)
{
    wd_host h = host_fine();
    wd_policy p = policy_default();
    h.psi_full_avg10 = p.psi_full_avg10_max;
    wd_service v[] = {svc("a", 1000, 900, 1)};
    v[0].loading = true;
    wd_decision d;
    watchdog_decide(&h, v, 1, &p, &d);
    assert_false(d.stop);
    h.psi_full_avg10 = 20.01;
    watchdog_decide(&h, v, 1, &p, &d);
    assert_true(d.stop);
    assert_string_equal(d.trigger, "host.psi_full");
}

static void floor_binds_before_psi(void **state)
{
    wd_host h = host_fine();
    h.mem_available_bytes = 10 * MIB;
    h.psi_full_avg10 = 99;
    wd_policy p = policy_default();
    wd_service v[] = {svc("a", 1000, 900, 1)};
    wd_decision d;
    watchdog_decide(&h, v, 1, &p, &d);
    assert_true(d.stop);
    assert_string_equal(d.trigger, "host.mem_available");
}

static void over_need_host_fine(void **state)
{
    wd_host h = host_fine();
    wd_policy p = policy_default();
    /* limit = 4000 x 1.25 + 1024 = 6024 MiB */
    wd_service v[] = {svc("a", 1000, 1000, 1), svc("big", 4000, 7000, 2)};
    wd_decision d;
    watchdog_decide(&h, v, 2, &p, &d);
    assert_true(d.stop);
    assert_string_equal(d.service, "big");
    assert_int_equal(d.index, 1);
    assert_string_equal(d.trigger, "service.over_need");
    assert_string_equal(d.reason, "'big' uses 7000 MiB > limit 6024 MiB (admitted need 4000 MiB x "
                                  "1.25 + 1024 MiB): stopping it");
}

static void over_need_boundary(void **state)
{
    wd_host h = host_fine();
    wd_policy p = policy_default();
    wd_service v[] = {svc("a", 4000, 0, 1)};
    v[0].used_bytes = watchdog_limit(v[0].need_bytes, &p);
    assert_int_equal(v[0].used_bytes, 6024 * MIB);
    wd_decision d;
    watchdog_decide(&h, v, 1, &p, &d);
    assert_false(d.stop); /* equal to the limit is fine */
    v[0].used_bytes++;
    watchdog_decide(&h, v, 1, &p, &d);
    assert_true(d.stop);
    assert_string_equal(d.trigger, "service.over_need");
    /* one byte over shows usage rounded up, the limit rounded down */
    assert_non_null(strstr(d.reason, "uses 6025 MiB > limit 6024 MiB"));
}

static void over_need_loading_too(void **state)
{
    /* a loading service past its limit is stopped even with the host fine */
    wd_host h = host_fine();
    wd_policy p = policy_default();
    wd_service v[] = {svc("a", 1000, 3000, 1)};
    v[0].loading = true;
    wd_decision d;
    watchdog_decide(&h, v, 1, &p, &d);
    assert_true(d.stop);
    assert_string_equal(d.trigger, "service.over_need");
}

static void over_need_picks_furthest(void **state)
{
    wd_host h = host_fine();
    wd_policy p = policy_default();
    /* both past their limits; b is 5000 over its need, a 3000 */
    wd_service v[] = {svc("a", 1000, 4000, 1), svc("b", 10000, 15000, 2), svc("c", 100, 300, 3)};
    wd_decision d;
    watchdog_decide(&h, v, 3, &p, &d);
    assert_true(d.stop);
    assert_string_equal(d.service, "b");
}

static void over_need_unknown_need_or_usage(void **state)
{
    wd_host h = host_fine();
    wd_policy p = policy_default();
    wd_service v[] = {svc("a", 1000, 9000, 1), svc("b", 1000, 9000, 2)};
    v[0].need_known = false;
    v[1].used_known = false;
    wd_decision d;
    watchdog_decide(&h, v, 2, &p, &d);
    assert_false(d.stop);
}

static void factor_below_one_is_one(void **state)
{
    wd_policy p = policy_default();
    p.over_need_factor = 0.5;
    p.over_need_margin_bytes = 0;
    assert_int_equal(watchdog_limit(1000 * MIB, &p), 1000 * MIB);
    p.over_need_factor = 1.1; /* inexact in binary: 1.1 x 10 bytes is 11 */
    assert_int_equal(watchdog_limit(10, &p), 11);
}

static void tie_newest_start_wins(void **state)
{
    wd_host h = host_fine();
    h.mem_available_bytes = 0;
    wd_policy p = policy_default();
    /* nobody over need, equal users: the one started last goes */
    wd_service v[] = {svc("old", 5000, 3000, 10), svc("new", 5000, 3000, 20),
                      svc("mid", 5000, 3000, 15)};
    wd_decision d;
    watchdog_decide(&h, v, 3, &p, &d);
    assert_string_equal(d.service, "new");
    /* equal over-need too */
    wd_service w[] = {svc("x", 1000, 1500, 20), svc("y", 2000, 2500, 30)};
    watchdog_decide(&h, w, 2, &p, &d);
    assert_string_equal(d.service, "y");
    /* and in the over-need rule with the host fine */
    h = host_fine();
    wd_service o[] = {svc("x", 1000, 9000, 30), svc("y", 2000, 10000, 20)};
    watchdog_decide(&h, o, 2, &p, &d);
    assert_string_equal(d.service, "x");
}

static void tie_same_start_smaller_id(void **state)
{
    wd_host h = host_fine();
    h.mem_available_bytes = 0;
    wd_policy p = policy_default();
    wd_service v[] = {svc("zeta", 5000, 3000, 10), svc("alpha", 5000, 3000, 10)};
    wd_decision d;
    watchdog_decide(&h, v, 2, &p, &d);
    assert_string_equal(d.service, "alpha");
    wd_service w[] = {svc("alpha", 5000, 3000, 10), svc("zeta", 5000, 3000, 10)};
    watchdog_decide(&h, w, 2, &p, &d);
    assert_string_equal(d.service, "alpha"); /* the order of the input does not matter */
}

static void stopping_never_chosen(void **state)
{
    wd_host h = host_fine();
    h.mem_available_bytes = 0;
    wd_policy p = policy_default();
    wd_service v[] = {svc("a", 1000, 9000, 1), svc("b", 1000, 500, 2)};
    v[0].stopping = true;
    v[0].loading = true;
    wd_decision d;
    watchdog_decide(&h, v, 2, &p, &d);
    assert_true(d.stop);
    assert_string_equal(d.service, "b");
    /* with the host fine, a stopping service past its limit is left alone */
    h = host_fine();
    watchdog_decide(&h, v, 1, &p, &d);
    assert_false(d.stop);
}

static void floor_crossed_nothing_to_stop(void **state)
{
    wd_host h = host_fine();
    h.mem_available_bytes = 1000 * MIB;
    wd_policy p = policy_default();
    wd_decision d;
    watchdog_decide(&h, NULL, 0, &p, &d);
    assert_false(d.stop);
    assert_string_equal(d.trigger, "");
    assert_string_equal(
        d.note,
        "MemAvailable 1000 MiB < floor 2048 MiB, but no service can be stopped (none is running)");
    wd_service v[] = {svc("a", 1000, 900, 1)};
    v[0].stopping = true;
    watchdog_decide(&h, v, 1, &p, &d);
    assert_false(d.stop);
    assert_string_equal(
        d.note, "MemAvailable 1000 MiB < floor 2048 MiB, but no service can be stopped (every one "
                "is already stopping)");
}

static void meminfo_unreadable(void **state)
{
    wd_host h = host_fine();
    h.meminfo_ok = false;
    h.mem_available_bytes = 0; /* garbage: must not count */
    wd_policy p = policy_default();
    wd_service v[] = {svc("a", 1000, 900, 1)};
    v[0].loading = true;
    wd_decision d;
    watchdog_decide(&h, v, 1, &p, &d);
    assert_false(d.stop);
    assert_string_equal(
        d.note,
        "MemAvailable unknown (meminfo unreadable): the floor of 2048 MiB cannot be checked");
    /* PSI still applies */
    h.psi_full_avg10 = 50;
    watchdog_decide(&h, v, 1, &p, &d);
    assert_true(d.stop);
    assert_string_equal(d.trigger, "host.psi_full");
    assert_non_null(strstr(d.note, "meminfo unreadable"));
    /* and so does over-need */
    h.psi_full_avg10 = 0;
    v[0].used_bytes = 9000 * MIB;
    watchdog_decide(&h, v, 1, &p, &d);
    assert_true(d.stop);
    assert_string_equal(d.trigger, "service.over_need");
}

static void psi_unreadable(void **state)
{
    wd_host h = host_fine();
    h.psi_ok = false;
    h.psi_full_avg10 = 99; /* garbage: must not count */
    wd_policy p = policy_default();
    wd_service v[] = {svc("a", 1000, 900, 1)};
    wd_decision d;
    watchdog_decide(&h, v, 1, &p, &d);
    assert_false(d.stop);
    assert_string_equal(d.note, "PSI unreadable: full avg10 cannot be checked");
    h.meminfo_ok = false;
    watchdog_decide(&h, v, 1, &p, &d);
    assert_false(d.stop);
    assert_string_equal(
        d.note,
        "MemAvailable unknown (meminfo unreadable): the floor of 2048 MiB cannot be checked; "
        "PSI unreadable: full avg10 cannot be checked");
}

static void unknown_usage_still_stoppable(void **state)
{
    /* the host is in danger and nobody's usage could be read: the
     * largest (known) user goes, else the newest */
    wd_host h = host_fine();
    h.mem_available_bytes = 0;
    wd_policy p = policy_default();
    wd_service v[] = {svc("a", 1000, 0, 1), svc("b", 1000, 0, 2)};
    v[0].used_known = v[1].used_known = false;
    wd_decision d;
    watchdog_decide(&h, v, 2, &p, &d);
    assert_true(d.stop);
    assert_string_equal(d.service, "b");
    assert_non_null(strstr(d.reason, "uses an unknown amount"));
    v[1].need_known = false;
    watchdog_decide(&h, v, 2, &p, &d);
    assert_non_null(strstr(d.reason, "need unknown"));
}

static void saturation(void **state)
{
    wd_policy p = policy_default();
    p.over_need_factor = 10;
    assert_int_equal(watchdog_limit(UINT64_MAX / 2, &p), UINT64_MAX);
    p.over_need_factor = 1;
    p.over_need_margin_bytes = UINT64_MAX;
    assert_int_equal(watchdog_limit(5, &p), UINT64_MAX);
    wd_host h = host_fine();
    wd_service v[] = {svc("a", 0, 0, 1)};
    v[0].need_bytes = UINT64_MAX;
    v[0].used_bytes = UINT64_MAX;
    wd_decision d;
    watchdog_decide(&h, v, 1, &p, &d);
    assert_false(d.stop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nothing_running),
        cmocka_unit_test(all_within_need),
        cmocka_unit_test(floor_stops_loading),
        cmocka_unit_test(floor_stops_sleeper_first),
        cmocka_unit_test(sleeper_within_its_asleep_need),
        cmocka_unit_test(floor_equal_is_fine),
        cmocka_unit_test(floor_zero_never_triggers),
        cmocka_unit_test(floor_furthest_over_need),
        cmocka_unit_test(floor_largest_user),
        cmocka_unit_test(psi_full_triggers),
        cmocka_unit_test(psi_equal_is_fine),
        cmocka_unit_test(floor_binds_before_psi),
        cmocka_unit_test(over_need_host_fine),
        cmocka_unit_test(over_need_boundary),
        cmocka_unit_test(over_need_loading_too),
        cmocka_unit_test(over_need_picks_furthest),
        cmocka_unit_test(over_need_unknown_need_or_usage),
        cmocka_unit_test(factor_below_one_is_one),
        cmocka_unit_test(tie_newest_start_wins),
        cmocka_unit_test(tie_same_start_smaller_id),
        cmocka_unit_test(stopping_never_chosen),
        cmocka_unit_test(floor_crossed_nothing_to_stop),
        cmocka_unit_test(meminfo_unreadable),
        cmocka_unit_test(psi_unreadable),
        cmocka_unit_test(unknown_usage_still_stoppable),
        cmocka_unit_test(saturation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
