/* test_distrib.c - the quantiles every interval is built from: Student's
 * t against table values (to 6 decimals; fractional df against mpmath's
 * betainc inverted by findroot), the normal quantile against Python's
 * statistics.NormalDist().inv_cdf, and the refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>

#include "util/distrib.h"

static void t_table(void **state)
{
    static const double tab[][3] = {
        {0.975, 2, 4.302653},   {0.975, 10, 2.228139}, {0.995, 4, 4.604095},  {0.999, 30, 3.385185},
        {0.975, 1, 12.706205},  {0.95, 5, 2.015048},   {0.975, 1e9, 1.959964}, {0.025, 10, -2.228139},
        {0.975, 2.5, 3.574655}, {0.975, 7.3, 2.345067}, {0.975, INFINITY, 1.959964},
    };
    for (size_t i = 0; i < sizeof tab / sizeof *tab; i++) {
        double t = t_quantile(tab[i][0], tab[i][1]);
        if (!(fabs(t - tab[i][2]) < 2e-6))
            fail_msg("t_{%g,%g} = %.7f, want %.6f", tab[i][0], tab[i][1], t, tab[i][2]);
    }
    assert_true(t_quantile(0.5, 3) == 0);
    assert_true(isnan(t_quantile(0, 3)));
    assert_true(isnan(t_quantile(1, 3)));
    assert_true(isnan(t_quantile(0.9, 0)));
    assert_true(isnan(t_quantile(0.9, NAN)));
}

static void normal(void **state)
{
    static const double tab[][2] = {
        {0.975, 1.9599639845400536}, {0.995, 2.5758293035489},    {0.9, 1.2815515655446008},
        {0.001, -3.090232306167813}, {0.0001, -3.71901648545568}, {0.99999, 4.26489079392384},
        {1e-10, -6.361340902404056},
    };
    for (size_t i = 0; i < sizeof tab / sizeof *tab; i++) {
        double z = normal_quantile(tab[i][0]);
        if (!(fabs(z - tab[i][1]) < 1e-12 * fabs(tab[i][1])))
            fail_msg("z_{%g} = %.17g, want %.17g", tab[i][0], z, tab[i][1]);
    }
    assert_true(normal_quantile(0.5) == 0);
    assert_true(isnan(normal_quantile(0)));
    assert_true(isnan(normal_quantile(1)));
    assert_true(isnan(normal_quantile(NAN)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_table),
        cmocka_unit_test(normal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
