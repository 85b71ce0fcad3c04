/* estats.h - the statistics of an eval run and of a comparison of two
 * (docs/eval.md "Statistics", with the formulas).  Pure: libm only, no
 * state, no I/O.
 *
 *   accuracy    passes / n with a Wilson score interval (never outside
 *               [0, 1], honest at 0 % and 100 %, unlike p +- z se)
 *   pass@1      over k repetitions: the mean of the items' pass rates,
 *               with the Wilson interval over the n items (conservative:
 *               an item's rate varies no more than one pass/fail does)
 *   pass@k      unbiased (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)
 *   judge       mean, sample sd, Student's t interval, shares >= 4 and 5
 *   comparison  paired pass/fail: McNemar's exact test on the discordant
 *               items; judge means: Welch's interval of the difference
 *
 * Intervals are two-sided at confidence conf (0.95); a value that cannot
 * be computed is NaN, never 0. */
#ifndef GPUMOD_EVAL_ESTATS_H
#define GPUMOD_EVAL_ESTATS_H

#include <stddef.h>
#include <stdint.h>

/* An estimate with its interval. */
typedef struct eci {
    double est, lo, hi;
} eci;

/* The normal quantile for a two-sided interval at conf: 1.959964 at 0.95. */
double conf_z(double conf);

/* Wilson's score interval for k successes of n trials at quantile z
 * (conf_z(0.95)).  k need not be an integer (pass@1 over repetitions).
 * 0, or -1 with NaNs when n <= 0, k outside [0, n] or z <= 0. */
int wilson(double k, double n, double z, eci *out);

/* pass@1 over k repetitions of n items: passes[i] of k for item i.
 * est = mean of passes[i] / k; the interval is wilson(est * n, n, z).
 * 0, or -1 with NaNs when n == 0, k == 0 or some passes[i] > k. */
int pass1(const unsigned *passes, size_t n, unsigned k, double z, eci *out);

/* The unbiased pass@k of one item with c passes among n samples:
 * 1 - C(n-c, k) / C(n, k), as the stable product 1 - prod_{i=n-c+1}^{n}
 * (1 - k / i).  NaN when k == 0, k > n or c > n. */
double pass_at_k(unsigned n, unsigned c, unsigned k);
/* Its mean over items (passes[i] of n samples each); NaN as above. */
double pass_at_k_mean(const unsigned *passes, size_t items, unsigned n, unsigned k);

typedef struct judge_stats {
    size_t n;
    double mean, sd;    /* sd: sample (n-1); NaN when n < 2 */
    double lo, hi;      /* mean +- t_{(1+conf)/2, n-1} sd / sqrt n; NaN when n < 2 */
    double share4, share5; /* shares of scores >= 4 and == 5 */
} judge_stats;

/* Summary of judge scores (1..5 each).  0, or -1 when n == 0 or a score
 * is outside 1..5 (out all NaN, n 0). */
int judge_summary(const int *scores, size_t n, double conf, judge_stats *out);

/* McNemar's exact test, two-sided: b items passed only in A, c only in B;
 * p = min(1, 2 P(X <= min(b, c))) for X ~ Binomial(b + c, 1/2), summed in
 * log space so that counts in the millions work.  1 when b + c == 0. */
double mcnemar_exact(uint64_t b, uint64_t c);

/* B - A of two judge means with Welch's interval at conf (df by
 * Welch-Satterthwaite).  0, or -1 with NaNs when a side has fewer than 2
 * scores.  Both sds 0: the interval is the difference itself. */
int welch_diff(const judge_stats *a, const judge_stats *b, double conf, eci *out);

typedef enum {
    VERDICT_WORSE = -1,
    VERDICT_SAME = 0, /* not distinguishable */
    VERDICT_BETTER = 1,
    VERDICT_NA = 2,   /* not testable */
} everdict;

/* "worse" "not distinguishable" "better" "not testable" */
const char *verdict_name(int v);
/* B against A on paired pass/fail (b, c as for mcnemar_exact): better
 * when p < alpha and c > b, worse when p < alpha and b > c.  *p (when not
 * NULL) is the p-value. */
int verdict_paired(uint64_t b, uint64_t c, double alpha, double *p);
/* B against A on an interval of B - A: better when it lies above 0,
 * worse below, not testable when it is NaN. */
int verdict_interval(const eci *d);

#endif
