/* test_eval_stats.c - eval's statistics against published and
 * independently computed values.
 *
 * Wilson: Newcombe, "Two-sided confidence intervals for the single
 * proportion: comparison of seven methods", Statistics in Medicine 17
 * (1998) 857-872, Table I, method 3 (score, no continuity correction):
 * 81/263 -> 0.2553-0.3662, 15/148 -> 0.0624-0.1605, 0/20 -> 0-0.1611,
 * 1/29 -> 0.0061-0.1718; more digits and the other rows from the closed
 * form in Python (statistics.NormalDist).  McNemar: the exact two-sided
 * binomial p (b=2, c=8 -> 0.1094; b=0, c=5 -> 0.0625, as in Agresti,
 * Categorical Data Analysis, 10.1), others by Python's exact integer sums
 * (math.comb, fractions) -- up to b + c = 40,500.  Judge and Welch
 * intervals: Python's statistics with t quantiles from mpmath's betainc.
 * Coverage: seeded binomial runs (deterministic, never flaky). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>

#include "eval/estats.h"

#define near(a, b, eps) near_at((a), (b), (eps), #a, __FILE__, __LINE__)
static void near_at(double a, double b, double eps, const char *what, const char *file, int line)
{
    if (fabs(a - b) <= eps) return;
    print_error("%s = %.12g, expected %.12g (within %g)\n", what, a, b, eps);
    _fail(file, line);
}

static void wilson_newcombe(void **state)
{
    static const double tab[][4] = {
        /* k, n, lo, hi */
        {81, 263, 0.255289, 0.366210}, {15, 148, 0.062386, 0.160487}, {0, 20, 0, 0.161125},
        {1, 29, 0.006113, 0.171755},   {29, 29, 0.883030, 1},         {0, 1, 0, 0.793451},
        {1, 1, 0.206549, 1},           {50, 100, 0.403832, 0.596168},
    };
    double z = conf_z(0.95);
    near(z, 1.959963984540054, 1e-12);
    for (size_t i = 0; i < sizeof tab / sizeof *tab; i++) {
        eci ci;
        assert_int_equal(wilson(tab[i][0], tab[i][1], z, &ci), 0);
        near(ci.est, tab[i][0] / tab[i][1], 1e-12);
        near(ci.lo, tab[i][2], 5e-7);
        near(ci.hi, tab[i][3], 5e-7);
    }
    /* the table's own 4 decimals */
    eci ci;
    wilson(81, 263, z, &ci);
    near(ci.lo, 0.2553, 5e-5);
    near(ci.hi, 0.3662, 5e-5);
    /* a wider z is a wider interval: 99 % */
    eci w99;
    wilson(81, 263, conf_z(0.99), &w99);
    assert_true(w99.lo < ci.lo && w99.hi > ci.hi);
    /* refusals */
    assert_int_equal(wilson(1, 0, z, &ci), -1);
    assert_true(isnan(ci.est) && isnan(ci.lo) && isnan(ci.hi));
    assert_int_equal(wilson(5, 4, z, &ci), -1);
    assert_int_equal(wilson(-1, 4, z, &ci), -1);
    assert_int_equal(wilson(1, 4, 0, &ci), -1);
}

/* splitmix64, the tests' own */
static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double unit(uint64_t *s)
{
    return (double)(mix(s) >> 11) / 9007199254740992.0;
}

/* 2000 seeded runs of 100 trials at p = 0.8: the 95 % interval holds p in
 * 93-97 % of them (Wilson's actual coverage there is about 95 %) */
static void wilson_coverage(void **state)
{
    uint64_t seed = 20240917;
    double z = conf_z(0.95);
    int covered = 0, runs = 2000;
    for (int r = 0; r < runs; r++) {
        int k = 0;
        for (int i = 0; i < 100; i++) k += unit(&seed) < 0.8;
        eci ci;
        wilson(k, 100, z, &ci);
        covered += ci.lo <= 0.8 && 0.8 <= ci.hi;
    }
    double cov = (double)covered / runs;
    if (cov < 0.93 || cov > 0.97) fail_msg("coverage %.4f outside 0.93..0.97", cov);
    /* small n at an extreme p, where p +- z se fails badly: still >= 90 % */
    covered = 0;
    for (int r = 0; r < runs; r++) {
        int k = 0;
        for (int i = 0; i < 20; i++) k += unit(&seed) < 0.95;
        eci ci;
        wilson(k, 20, z, &ci);
        covered += ci.lo <= 0.95 && 0.95 <= ci.hi;
    }
    cov = (double)covered / runs;
    if (cov < 0.90) fail_msg("coverage at n=20, p=0.95: %.4f", cov);
}

static void pass1_repetitions(void **state)
{
    const unsigned passes[] = {5, 5, 0, 3, 4};
    eci ci;
    double z = conf_z(0.95);
    assert_int_equal(pass1(passes, 5, 5, z, &ci), 0);
    near(ci.est, (1 + 1 + 0 + 0.6 + 0.8) / 5, 1e-12);
    eci w;
    wilson(ci.est * 5, 5, z, &w);
    near(ci.lo, w.lo, 1e-12);
    near(ci.hi, w.hi, 1e-12);
    /* k = 1 is plain Wilson on pass counts */
    const unsigned once[] = {1, 0, 1, 1};
    pass1(once, 4, 1, z, &ci);
    wilson(3, 4, z, &w);
    near(ci.est, 0.75, 1e-12);
    near(ci.lo, w.lo, 1e-12);
    near(ci.hi, w.hi, 1e-12);
    assert_int_equal(pass1(passes, 5, 4, z, &ci), -1); /* 5 passes of 4 */
    assert_true(isnan(ci.est));
    assert_int_equal(pass1(passes, 0, 5, z, &ci), -1);
    assert_int_equal(pass1(passes, 5, 0, z, &ci), -1);
}

/* items drawn afresh each run (difficulty uniform in [0, 1], population
 * pass@1 0.5), 5 repetitions each: the conservative interval covers the
 * population value at least 95 % of the time */
static void pass1_coverage(void **state)
{
    uint64_t seed = 7;
    double z = conf_z(0.95);
    int covered = 0, runs = 1000;
    unsigned passes[60];
    for (int r = 0; r < runs; r++) {
        for (int i = 0; i < 60; i++) {
            double p = unit(&seed);
            passes[i] = 0;
            for (int k = 0; k < 5; k++) passes[i] += unit(&seed) < p;
        }
        eci ci;
        pass1(passes, 60, 5, z, &ci);
        covered += ci.lo <= 0.5 && 0.5 <= ci.hi;
    }
    if (covered < 0.95 * runs) fail_msg("pass@1 coverage %.4f < 0.95", (double)covered / runs);
}

static void pass_at_k_unbiased(void **state)
{
    near(pass_at_k(10, 3, 1), 0.3, 1e-12);
    near(pass_at_k(10, 3, 5), 1 - 21.0 / 252, 1e-12); /* 1 - C(7,5)/C(10,5) */
    near(pass_at_k(10, 0, 3), 0, 0);
    near(pass_at_k(10, 10, 3), 1, 0);
    near(pass_at_k(5, 2, 4), 1, 0); /* n - c < k: every draw of 4 holds a pass */
    near(pass_at_k(200, 13, 10), 0.4975511147306061, 1e-12);
    assert_true(isnan(pass_at_k(5, 2, 6)));
    assert_true(isnan(pass_at_k(5, 6, 1)));
    assert_true(isnan(pass_at_k(5, 2, 0)));
    const unsigned c[] = {3, 0, 10};
    near(pass_at_k_mean(c, 3, 10, 1), (0.3 + 0 + 1) / 3, 1e-12);
    assert_true(isnan(pass_at_k_mean(c, 0, 10, 1)));
}

static void judge_scores(void **state)
{
    const int s[] = {5, 4, 4, 3, 5, 2, 4, 5, 3, 4};
    judge_stats j;
    assert_int_equal(judge_summary(s, 10, 0.95, &j), 0);
    assert_int_equal(j.n, 10);
    near(j.mean, 3.9, 1e-12);
    near(j.sd, 0.9944289260117531, 1e-12);
    near(j.lo, 3.188628400280501, 1e-9); /* t_{0.975,9} = 2.262157 */
    near(j.hi, 4.611371599719499, 1e-9);
    near(j.share4, 0.7, 1e-12);
    near(j.share5, 0.3, 1e-12);
    /* one score: a mean, no spread */
    const int one[] = {4};
    assert_int_equal(judge_summary(one, 1, 0.95, &j), 0);
    near(j.mean, 4, 0);
    assert_true(isnan(j.sd) && isnan(j.lo) && isnan(j.hi));
    /* all alike: a zero-width interval, not NaN */
    const int same[] = {5, 5, 5};
    judge_summary(same, 3, 0.95, &j);
    near(j.lo, 5, 0);
    near(j.hi, 5, 0);
    const int bad[] = {4, 6};
    assert_int_equal(judge_summary(bad, 2, 0.95, &j), -1);
    assert_true(isnan(j.mean));
    assert_int_equal(judge_summary(s, 0, 0.95, &j), -1);
}

static void mcnemar(void **state)
{
    near(mcnemar_exact(2, 8), 0.109375, 1e-12);
    near(mcnemar_exact(0, 5), 0.0625, 1e-12);
    near(mcnemar_exact(5, 0), 0.0625, 1e-12);
    near(mcnemar_exact(6, 15), 0.0783538818359375, 1e-12);
    near(mcnemar_exact(10, 20), 0.09873714670538902, 1e-11);
    near(mcnemar_exact(100, 140), 0.011664092317677663, 1e-10);
    near(mcnemar_exact(1000, 1100), 0.030720707864242296, 1e-9);
    near(mcnemar_exact(20000, 20500), 0.013153825113143827, 1e-8); /* 2^-40500 underflows a direct sum */
    near(mcnemar_exact(3, 3), 1, 0);
    near(mcnemar_exact(0, 0), 1, 0);
    near(mcnemar_exact(0, 1), 1, 0);
    double p;
    assert_int_equal(verdict_paired(0, 8, 0.05, &p), VERDICT_BETTER);
    near(p, 0.0078125, 1e-12);
    assert_int_equal(verdict_paired(8, 0, 0.05, &p), VERDICT_WORSE);
    assert_int_equal(verdict_paired(2, 8, 0.05, &p), VERDICT_SAME);
    assert_int_equal(verdict_paired(0, 0, 0.05, NULL), VERDICT_SAME);
    assert_string_equal(verdict_name(VERDICT_BETTER), "better");
    assert_string_equal(verdict_name(VERDICT_WORSE), "worse");
    assert_string_equal(verdict_name(VERDICT_SAME), "not distinguishable");
    assert_string_equal(verdict_name(VERDICT_NA), "not testable");
}

/* Two runs of 200 items at the same 70 % pass rate, errors independent
 * (so discordant pairs abound): McNemar at 0.05 says "different" in at
 * most 5 % of 1000 seeded repetitions -- the false alarm rate the
 * issue asks of `eval compare` (the exact test is conservative: 4.8 %
 * here).  A 20-point drop (70 % -> 50 %) is found in over 95 %. */
static void mcnemar_false_alarms(void **state)
{
    uint64_t seed = 99;
    int alarms = 0, found = 0, runs = 1000;
    for (int r = 0; r < runs; r++) {
        uint64_t b = 0, c = 0, b2 = 0, c2 = 0;
        for (int i = 0; i < 200; i++) {
            bool a = unit(&seed) < 0.7, bb = unit(&seed) < 0.7;
            b += a && !bb;
            c += !a && bb;
            /* another B at 50 %: 0.7 x 5/7 */
            bool b20 = bb && unit(&seed) >= 2.0 / 7;
            b2 += a && !b20;
            c2 += !a && b20;
        }
        alarms += verdict_paired(b, c, 0.05, NULL) != VERDICT_SAME;
        found += verdict_paired(b2, c2, 0.05, NULL) == VERDICT_WORSE;
    }
    print_message("false alarms %d, drops found %d, of %d\n", alarms, found, runs);
    if (alarms > 0.05 * runs) fail_msg("false alarms %d of %d", alarms, runs);
    if (found < 0.95 * runs) fail_msg("a 20-point drop found %d of %d times", found, runs);
}

static void welch(void **state)
{
    const int a[] = {3, 4, 4, 5, 3, 4}, b[] = {5, 4, 5, 5, 4, 5, 5};
    judge_stats ja, jb;
    judge_summary(a, 6, 0.95, &ja);
    judge_summary(b, 7, 0.95, &jb);
    eci d;
    assert_int_equal(welch_diff(&ja, &jb, 0.95, &d), 0);
    near(d.est, 0.8809523809523809, 1e-12);
    near(d.lo, 0.060410227669301486, 1e-8); /* df 8.3477 */
    near(d.hi, 1.7014945342354604, 1e-8);
    assert_int_equal(verdict_interval(&d), VERDICT_BETTER);
    welch_diff(&jb, &ja, 0.95, &d);
    assert_int_equal(verdict_interval(&d), VERDICT_WORSE);
    welch_diff(&ja, &ja, 0.95, &d);
    near(d.est, 0, 0);
    assert_int_equal(verdict_interval(&d), VERDICT_SAME);
    /* zero spread on both sides: the difference itself */
    const int five[] = {5, 5}, four[] = {4, 4};
    judge_summary(five, 2, 0.95, &ja);
    judge_summary(four, 2, 0.95, &jb);
    welch_diff(&ja, &jb, 0.95, &d);
    near(d.lo, -1, 0);
    near(d.hi, -1, 0);
    assert_int_equal(verdict_interval(&d), VERDICT_WORSE);
    /* one score on a side: not testable */
    const int one[] = {4};
    judge_summary(one, 1, 0.95, &jb);
    assert_int_equal(welch_diff(&ja, &jb, 0.95, &d), -1);
    assert_true(isnan(d.est));
    assert_int_equal(verdict_interval(&d), VERDICT_NA);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(wilson_newcombe),  cmocka_unit_test(wilson_coverage), cmocka_unit_test(pass1_repetitions),
        cmocka_unit_test(pass1_coverage),   cmocka_unit_test(pass_at_k_unbiased), cmocka_unit_test(judge_scores),
        cmocka_unit_test(mcnemar),          cmocka_unit_test(mcnemar_false_alarms), cmocka_unit_test(welch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
