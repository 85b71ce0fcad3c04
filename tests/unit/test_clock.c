/* test_clock.c - RFC 3339 in and out: the strict parser refuses what
 * strptime/atoi used to let through (single-digit fields, "+0a:00"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testenv.h"
#include "util/clock.h"

static void round_trip(void **state)
{
    char b[40];
    clock_rfc3339(1764118923456LL, b, sizeof b);
    int64_t t = 0;
    assert_int_equal(clock_parse_rfc3339(b, &t), 0);
    assert_int_equal(t, 1764118923456LL);
}

static void accepted_forms(void **state)
{
    int64_t t = 0;
    assert_int_equal(clock_parse_rfc3339("1970-01-01T00:00:00Z", &t), 0);
    assert_int_equal(t, 0);
    assert_int_equal(clock_parse_rfc3339("1970-01-01T01:00:00+01:00", &t), 0);
    assert_int_equal(t, 0);
    assert_int_equal(clock_parse_rfc3339("1969-12-31T23:30:00-00:30", &t), 0);
    assert_int_equal(t, 0);
    assert_int_equal(clock_parse_rfc3339("1970-01-01T00:00:01.5z", &t), 0);
    assert_int_equal(t, 1500);
    assert_int_equal(clock_parse_rfc3339("2024-02-29T00:00:00Z", &t), 0);
}

static void refused_forms(void **state)
{
    static const char *const bad[] = {
        "", "2025-01-02", "2025-1-02T00:00:00Z", "2025-01-2T00:00:00Z", "2025-01-02T0:00:00Z",
        "2025-01-02T00:00:0Z", "2025-01-02T00:00:00", "2025-01-02T00:00:00+0a:00",
        "2025-01-02T00:00:00+01:0a", "2025-01-02T00:00:00+0100", "2025-01-02T00:00:00+1:00",
        "2025-13-02T00:00:00Z", "2025-00-02T00:00:00Z", "2025-02-30T00:00:00Z", "2025-02-29T00:00:00Z",
        "2025-01-02T24:00:00Z", "2025-01-02T00:60:00Z", "2025-01-02T00:00:00.Z", "2025-01-02T00:00:00Zx",
        " 2025-01-02T00:00:00Z", "+025-01-02T00:00:00Z", "2025-01-02 00:00:00Z", "2025-01-02T00:00:00+24:00",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int64_t t = 42;
        if (clock_parse_rfc3339(bad[i], &t) != -1) fail_msg("'%s' was accepted", bad[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(accepted_forms),
        cmocka_unit_test(refused_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
