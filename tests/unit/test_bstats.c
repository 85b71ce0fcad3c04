/* test_bstats.c - the statistics bench reports with: type-7 quantiles
 * (checked against hand computation and Python's statistics.quantiles
 * method='inclusive', which is numpy's default), percentile gating by n,
 * NaN skipping, sample sd, the weighted summary of per-token ITL, the
 * bootstrap intervals (contain the estimate, narrow with n, reproducible
 * from a seed, refusals), splitmix64 and the gamma gaps of open-loop
 * schedules (moments over 200k draws, constant gaps for INFINITY). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "bench/bstats.h"
#include "testenv.h"

#define EPS 1e-9

/* this cmocka has no assert_double_equal: |a - b| <= eps, values shown */
#define assert_double_equal(a, b, eps) assert_near_at((a), (b), (eps), #a, __FILE__, __LINE__)
static void assert_near_at(double a, double b, double eps, const char *what, const char *file, int line)
{
    if (fabs(a - b) <= eps || (a == b)) return;
    print_error("%s = %.17g, expected %.17g (within %g)\n", what, a, b, eps);
    _fail(file, line);
}

static void quantile_type7(void **state)
{
    /* sorted 1 1 2 3 3 4 5 5 6 9: p90 h = 9 * 0.9 = 8.1 -> 6 + 0.1 * (9 - 6) */
    const double d[] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
    bsum s;
    bsum_compute(&s, d, 10);
    assert_int_equal(s.n, 10);
    assert_double_equal(s.median, 3.5, EPS);
    assert_double_equal(s.mean, 3.9, EPS);
    assert_double_equal(s.sd, 2.4698178070456938, 1e-12); /* statistics.stdev */
    assert_double_equal(s.min, 1, 0);
    assert_double_equal(s.max, 9, 0);
    assert_true(s.p_ok[0] && s.p_ok[1]);
    assert_double_equal(s.p[0], 3.5, EPS);
    assert_double_equal(s.p[1], 6.3, EPS);
    /* p95 needs 20 samples, p99 100 */
    assert_false(s.p_ok[2]);
    assert_true(isnan(s.p[2]));
    assert_false(s.p_ok[3]);
    assert_true(isnan(s.p[3]));
    assert_false(s.p_ok[4]);

    double sorted[] = {15, 20, 35, 40, 50};
    assert_double_equal(bstat_quantile_sorted(sorted, 5, 0.4), 29, EPS); /* h 1.6 */
    assert_double_equal(bstat_quantile_sorted(sorted, 5, 0), 15, 0);
    assert_double_equal(bstat_quantile_sorted(sorted, 5, 1), 50, 0);
    assert_double_equal(bstat_quantile_sorted(sorted, 1, 0.99), 15, 0);
    assert_true(isnan(bstat_quantile_sorted(sorted, 0, 0.5)));
    assert_string_equal(bsum_pct_names[4], "p99_9");
    assert_double_equal(bsum_pcts[3], 99, 0);
}

static void hundred_samples(void **state)
{
    double d[100];
    for (int i = 1; i <= 100; i++) d[i - 1] = (i * 37) % 101 + 0.5 * (i % 3);
    bsum s;
    bsum_compute(&s, d, 100);
    /* statistics.quantiles(d, n=100, method='inclusive') */
    assert_true(s.p_ok[3]);
    assert_double_equal(s.p[0], 51.0, EPS);
    assert_double_equal(s.p[1], 90.2, EPS);
    assert_double_equal(s.p[2], 95.55, EPS);
    assert_double_equal(s.p[3], 99.01, EPS);
    assert_double_equal(s.mean, 51.0, EPS);
    assert_double_equal(s.sd, 29.01279759420701, 1e-10);
    assert_false(s.p_ok[4]); /* p99.9 needs 1000 */

    /* 99 samples: p99 is null */
    bsum_compute(&s, d, 99);
    assert_false(s.p_ok[3]);
    assert_true(isnan(s.p[3]));
    assert_true(s.p_ok[2]);
}

static void gating_edges(void **state)
{
    double d[1000];
    for (int i = 0; i < 1000; i++) d[i] = i;
    bsum s;
    bsum_compute(&s, d, 1);
    assert_false(s.p_ok[0]); /* p50 needs 2 */
    assert_true(isnan(s.sd));
    assert_double_equal(s.median, 0, 0);
    bsum_compute(&s, d, 2);
    assert_true(s.p_ok[0]);
    bsum_compute(&s, d, 9);
    assert_false(s.p_ok[1]);
    bsum_compute(&s, d, 10); /* 1/(1-0.9) in binary is 10.000000000000002 */
    assert_true(s.p_ok[1]);
    bsum_compute(&s, d, 19);
    assert_false(s.p_ok[2]);
    bsum_compute(&s, d, 20);
    assert_true(s.p_ok[2]);
    bsum_compute(&s, d, 999);
    assert_false(s.p_ok[4]);
    bsum_compute(&s, d, 1000);
    assert_true(s.p_ok[4]);
    assert_double_equal(s.p[4], 998.001, 1e-9); /* h = 999 * 0.999 */
}

static void nan_skipped(void **state)
{
    const double d[] = {NAN, 2, NAN, 4, 6, NAN};
    bsum s;
    bsum_compute(&s, d, 6);
    assert_int_equal(s.n, 3);
    assert_double_equal(s.mean, 4, EPS);
    assert_double_equal(s.median, 4, EPS);
    assert_double_equal(s.sd, 2, EPS);
    assert_double_equal(bstat_median(d, 6), 4, EPS);

    const double none[] = {NAN, NAN};
    bsum_compute(&s, none, 2);
    assert_int_equal(s.n, 0);
    assert_true(isnan(s.mean) && isnan(s.median) && isnan(s.min) && isnan(s.max) && isnan(s.sd));
    assert_false(s.p_ok[0]);
    assert_true(isnan(bstat_median(none, 2)));
    bsum_compute(&s, NULL, 0);
    assert_int_equal(s.n, 0);
}

static void weighted(void **state)
{
    /* per-token ITL: one token after 10 ms, a chunk of 3 after 30 ms (3 x
     * 10 ms), one after 40 ms: token-level distribution 10 10 10 10 40 */
    const double v[] = {10, 10, 40, NAN};
    const double w[] = {1, 3, 1, 2};
    bsum s;
    bsum_compute_weighted(&s, v, w, 4);
    assert_int_equal(s.n, 3);
    assert_double_equal(s.mean, 16, EPS);       /* (10 + 30 + 40) / 5 */
    assert_double_equal(s.sd, 12, EPS);         /* sqrt((4 * 36 + 576) / 5) */
    assert_double_equal(s.median, 10, EPS);
    assert_double_equal(s.p[0], 10, EPS);
    assert_double_equal(s.min, 10, 0);
    assert_double_equal(s.max, 40, 0);
    assert_true(s.p_ok[0]);
    assert_false(s.p_ok[1]); /* 3 samples */

    /* cumulative weights 1, 2, 3, 4 of 4: q = 0.5 is reached at the 2nd */
    const double v2[] = {4, 3, 2, 1};
    const double w2[] = {1, 1, 1, 1};
    bsum_compute_weighted(&s, v2, w2, 4);
    assert_double_equal(s.median, 2, EPS);
    /* a zero or negative weight drops the sample */
    const double w3[] = {0, -1, 1, 1};
    bsum_compute_weighted(&s, v2, w3, 4);
    assert_int_equal(s.n, 2);
    assert_double_equal(s.mean, 1.5, EPS);
}

static void median_ci(void **state)
{
    double d[200];
    uint64_t st = 42;
    for (int i = 0; i < 200; i++) d[i] = 100 + 10 * (brng_unit(&st) - 0.5);
    bci small, big;
    assert_int_equal(bstat_median_ci(d, 10, 0.95, 2000, 7, &small), 0);
    assert_int_equal(bstat_median_ci(d, 200, 0.95, 2000, 7, &big), 0);
    assert_int_equal(small.n, 10);
    assert_double_equal(small.est, bstat_median(d, 10), 0);
    assert_true(small.lo <= small.est && small.est <= small.hi);
    assert_true(big.lo <= big.est && big.est <= big.hi);
    assert_true(small.hi - small.lo > 0);
    assert_true(big.hi - big.lo < (small.hi - small.lo) / 2);

    /* same seed, same interval; another seed, (almost surely) another */
    bci again, other;
    bstat_median_ci(d, 10, 0.95, 2000, 7, &again);
    assert_memory_equal(&again, &small, sizeof again);
    bstat_median_ci(d, 200, 0.95, 2000, 8, &other);
    assert_true(other.lo != big.lo || other.hi != big.hi);

    /* one sample: a point; none: NaN; bad arguments refused */
    bci one;
    assert_int_equal(bstat_median_ci(d, 1, 0.95, 2000, 1, &one), 0);
    assert_true(one.lo == d[0] && one.hi == d[0] && one.est == d[0]);
    const double nan1[] = {NAN};
    assert_int_equal(bstat_median_ci(nan1, 1, 0.95, 2000, 1, &one), 0);
    assert_true(isnan(one.est) && isnan(one.lo) && isnan(one.hi));
    assert_int_equal(one.n, 0);
    assert_int_equal(bstat_median_ci(d, 10, 1.0, 2000, 1, &one), -1);
    assert_int_equal(bstat_median_ci(d, 10, 0, 2000, 1, &one), -1);
    assert_int_equal(bstat_median_ci(d, 10, 0.95, 0, 1, &one), -1);
}

static void ratio_ci(void **state)
{
    const double a[] = {100, 101, 99, 100.5, 99.5};
    const double b[] = {90, 91, 89, 90.5, 89.5};
    bci r;
    assert_int_equal(bstat_ratio_ci(a, 5, b, 5, 0.95, 2000, 3, &r), 0);
    assert_double_equal(r.est, 0.9, EPS);
    assert_int_equal(r.n, 5);
    assert_true(r.lo <= 0.9 && 0.9 <= r.hi);
    assert_true(r.hi < 1);
    /* the resampled medians stay within min/max of each side */
    assert_true(r.lo >= 89.0 / 101 - EPS && r.hi <= 91.0 / 99 + EPS);

    bci same;
    assert_int_equal(bstat_ratio_ci(a, 5, a, 5, 0.95, 2000, 3, &same), 0);
    assert_double_equal(same.est, 1, EPS);
    assert_true(same.lo < 1 && same.hi > 1);

    bci again;
    bstat_ratio_ci(a, 5, b, 5, 0.95, 2000, 3, &again);
    assert_memory_equal(&again, &r, sizeof r);

    /* undefined ratios */
    const double zero[] = {0, 0, 0};
    assert_int_equal(bstat_ratio_ci(zero, 3, b, 5, 0.95, 2000, 3, &r), 0);
    assert_true(isnan(r.est) && isnan(r.lo) && isnan(r.hi));
    assert_int_equal(bstat_ratio_ci(a, 0, b, 5, 0.95, 2000, 3, &r), 0);
    assert_true(isnan(r.est));
    assert_int_equal(r.n, 0);
    /* one each: a point */
    assert_int_equal(bstat_ratio_ci(a, 1, b, 1, 0.95, 2000, 3, &r), 0);
    assert_double_equal(r.est, 0.9, EPS);
    assert_true(r.lo == r.est && r.hi == r.est);
    assert_int_equal(bstat_ratio_ci(a, 5, b, 5, 2, 2000, 3, &r), -1);
}

static void splitmix(void **state)
{
    /* splitmix64 reference values for seed 0 (Vigna's splitmix64.c) */
    uint64_t st = 0;
    assert_true(brng_next(&st) == 0xe220a8397b1dcdafULL);
    assert_true(brng_next(&st) == 0x6e789e6aa1b965f4ULL);
    assert_true(brng_next(&st) == 0x06c45d188009454fULL);
    st = 5;
    double sum = 0;
    for (int i = 0; i < 100000; i++) {
        double u = brng_unit(&st);
        assert_true(u >= 0 && u < 1);
        sum += u;
    }
    assert_double_equal(sum / 100000, 0.5, 0.01);
}

/* mean and variance of 200k draws: Gamma(k, theta) has mean k theta and
 * variance k theta^2 */
static void gamma_moments(double shape, double scale, double *mean, double *var)
{
    uint64_t st = 12345;
    const int N = 200000;
    double s = 0, ss = 0;
    for (int i = 0; i < N; i++) {
        double x = brng_gamma(&st, shape, scale);
        assert_true(x >= 0 && isfinite(x));
        s += x;
        ss += x * x;
    }
    *mean = s / N;
    *var = ss / N - *mean * *mean;
}

static void gamma_draws(void **state)
{
    double m, v;
    /* shape 1: exponential with rate 2 -> mean 0.5, variance 0.25 */
    gamma_moments(1, 0.5, &m, &v);
    assert_double_equal(m, 0.5, 0.5 * 0.02);
    assert_double_equal(v, 0.25, 0.25 * 0.05);
    gamma_moments(0.5, 2, &m, &v); /* mean 1, variance 2 */
    assert_double_equal(m, 1, 0.02);
    assert_double_equal(v, 2, 2 * 0.05);
    gamma_moments(4, 0.25, &m, &v); /* mean 1, variance 0.25 */
    assert_double_equal(m, 1, 0.02);
    assert_double_equal(v, 0.25, 0.25 * 0.05);

    /* gaps: mean 1/rate whatever the shape */
    uint64_t st = 9;
    double s = 0;
    for (int i = 0; i < 200000; i++) s += brng_gap(&st, 4, 0.5);
    assert_double_equal(s / 200000, 0.25, 0.25 * 0.02);
    /* INFINITY: constant gaps, no draw */
    st = 9;
    for (int i = 0; i < 1000; i++) assert_double_equal(brng_gap(&st, 4, INFINITY), 0.25, 0);
    assert_true(st == 9);
    assert_double_equal(brng_gamma(&st, INFINITY, 0.125), 0.125, 0);
    assert_true(isnan(brng_gamma(&st, 0, 1)));
    assert_true(isnan(brng_gap(&st, 0, 1)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quantile_type7), cmocka_unit_test(hundred_samples), cmocka_unit_test(gating_edges),
        cmocka_unit_test(nan_skipped),    cmocka_unit_test(weighted),        cmocka_unit_test(median_ci),
        cmocka_unit_test(ratio_ci),       cmocka_unit_test(splitmix),        cmocka_unit_test(gamma_draws),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
