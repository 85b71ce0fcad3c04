/* bstats.h (core) - the statistics every bench figure is reported with.
 * Pure: no I/O, no clock, no global state (the RNG is a caller's seed).
 *
 * Percentiles use linear interpolation between closest ranks (numpy's
 * default "linear", Hyndman-Fan type 7): q-quantile of sorted x[0..n-1]
 * at h = (n-1)q, x[floor h] + (h - floor h)(x[floor h + 1] - x[floor h]).
 * A percentile p is reported only when n >= 1/(1-p) (p99 needs 100
 * samples, p99.9 1000); otherwise its p_ok is false and it prints as null.
 * sd is the sample standard deviation (n-1).  NaN inputs are skipped (a
 * metric undefined for a request, e.g. TPOT with one output token). */
#ifndef GPUMOD_CORE_BSTATS_H
#define GPUMOD_CORE_BSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BSUM_NP 5
extern const double bsum_pcts[BSUM_NP]; /* 50, 90, 95, 99, 99.9 */
extern const char *const bsum_pct_names[BSUM_NP]; /* "p50","p90","p95","p99","p99_9" */

typedef struct bsum {
    size_t n;                  /* samples that were not NaN */
    double mean, sd, min, max, median; /* NaN when n == 0; sd NaN when n < 2 */
    double p[BSUM_NP];         /* NaN when !p_ok */
    bool p_ok[BSUM_NP];        /* n >= 1/(1-p) */
} bsum;

/* Summary of v[0..n-1] (not modified; sorted in a copy). */
void bsum_compute(bsum *s, const double *v, size_t n);
/* Weighted summary (each v[i] counts w[i] > 0 times, w may be fractional):
 * n is the number of samples, mean is weighted, quantiles are of the
 * weighted empirical distribution (the first value whose cumulative weight
 * reaches q of the total); sd is the weighted population sd.  For per-token
 * ITL: a chunk of k tokens after a gap g gives v = g/k with weight k. */
void bsum_compute_weighted(bsum *s, const double *v, const double *w, size_t n);
/* Type-7 quantile of an already sorted array; NaN when n == 0. */
double bstat_quantile_sorted(const double *sorted, size_t n, double q);
double bstat_median(const double *v, size_t n); /* NaN skipped; NaN when none */

/* A point estimate with a two-sided interval. */
typedef struct bci {
    double est, lo, hi; /* NaN when not computable */
    size_t n;           /* samples behind est (for ratios: the smaller side) */
} bci;

/* The median of v with a percentile-bootstrap interval at confidence conf
 * (0.95): B resamples (2000 is plenty) from a splitmix64 stream seeded with
 * seed, so a result is reproducible.  n == 1: lo = hi = est.  n == 0: all
 * NaN.  Returns 0, or -1 for bad arguments (conf outside (0,1), B == 0). */
int bstat_median_ci(const double *v, size_t n, double conf, unsigned B, uint64_t seed, bci *out);
/* The ratio median(b) / median(a) with a two-sample percentile-bootstrap
 * interval (each side resampled independently).  est NaN when either
 * median is 0 or a side is empty. */
int bstat_ratio_ci(const double *a, size_t na, const double *b, size_t nb, double conf, unsigned B,
                   uint64_t seed, bci *out);

/* splitmix64: the one RNG of bench (schedules, bootstrap, prompt text). */
uint64_t brng_next(uint64_t *state);
double brng_unit(uint64_t *state); /* uniform in [0, 1) (53 bits) */
/* Gamma(shape, scale) by Marsaglia-Tsang (shape < 1 boosted): mean
 * shape*scale.  shape = +Inf returns scale itself (no randomness); NaN for
 * shape <= 0 or scale < 0. */
double brng_gamma(uint64_t *state, double shape, double scale);
/* An inter-arrival gap with mean 1/rate: Gamma(shape, 1/(rate*shape)), so
 * shape 1 is exponential (Poisson arrivals), < 1 burstier, > 1 more
 * regular, INFINITY the constant 1/rate (no draw).  NaN for rate <= 0.
 * (1/(rate*Inf) is 0, so a caller of brng_gamma could not ask for
 * constant gaps; the load generator calls this.) */
double brng_gap(uint64_t *state, double rate, double shape);

#endif
