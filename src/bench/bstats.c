/* bstats.c - summaries, type-7 quantiles, bootstrap intervals and the
 * bench RNG.  Every figure bench prints goes through here, so the method is
 * fixed in one place (docs/bench.md "Statistics").  The bootstrap is the
 * plain percentile bootstrap: with the 3-10 iterations bench runs it is
 * honest about how little such samples say, and it needs no distribution.
 * The RNG is splitmix64 with the caller's state: runs are reproducible
 * from --seed and nothing here keeps global state. */
#include "bench/bstats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

const double bsum_pcts[BSUM_NP] = {50, 90, 95, 99, 99.9};
const char *const bsum_pct_names[BSUM_NP] = {"p50", "p90", "p95", "p99", "p99_9"};

/* samples percentile pcts[i] needs: 1/(1-p), computed so that 1 - 0.9 in
 * binary (0.0999...98) still asks for 10, not 11 */
static size_t pct_need(double pct)
{
    return (size_t)ceil(100.0 / (100.0 - pct) - 1e-6);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the non-NaN values of v, sorted, in a new array (caller frees) */
static double *sorted_copy(const double *v, size_t n, size_t *out_n)
{
    double *s = xmalloc((n ? n : 1) * sizeof *s);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(v[i])) s[m++] = v[i];
    qsort(s, m, sizeof *s, cmp_double);
    *out_n = m;
    return s;
}

double bstat_quantile_sorted(const double *sorted, size_t n, double q)
{
    if (n == 0 || isnan(q)) return NAN;
    if (q <= 0) return sorted[0];
    if (q >= 1) return sorted[n - 1];
    double h = (double)(n - 1) * q, fl = floor(h);
    size_t lo = (size_t)fl;
    if (lo + 1 >= n) return sorted[n - 1];
    return sorted[lo] + (h - fl) * (sorted[lo + 1] - sorted[lo]);
}

double bstat_median(const double *v, size_t n)
{
    size_t m;
    double *s = sorted_copy(v, n, &m);
    double r = bstat_quantile_sorted(s, m, 0.5);
    free(s);
    return r;
}

static void bsum_empty(bsum *s)
{
    memset(s, 0, sizeof *s);
    s->mean = s->sd = s->min = s->max = s->median = NAN;
    for (int i = 0; i < BSUM_NP; i++) s->p[i] = NAN;
}

void bsum_compute(bsum *s, const double *v, size_t n)
{
    bsum_empty(s);
    size_t m;
    double *x = sorted_copy(v, n, &m);
    s->n = m;
    if (m == 0) {
        free(x);
        return;
    }
    double sum = 0;
    for (size_t i = 0; i < m; i++) sum += x[i];
    s->mean = sum / (double)m;
    if (m >= 2) {
        double ss = 0;
        for (size_t i = 0; i < m; i++) ss += (x[i] - s->mean) * (x[i] - s->mean);
        s->sd = sqrt(ss / (double)(m - 1));
    }
    s->min = x[0];
    s->max = x[m - 1];
    s->median = bstat_quantile_sorted(x, m, 0.5);
    for (int i = 0; i < BSUM_NP; i++) {
        s->p_ok[i] = m >= pct_need(bsum_pcts[i]);
        if (s->p_ok[i]) s->p[i] = bstat_quantile_sorted(x, m, bsum_pcts[i] / 100.0);
    }
    free(x);
}

typedef struct wpair {
    double v, w;
} wpair;

static int cmp_wpair(const void *a, const void *b)
{
    return cmp_double(&((const wpair *)a)->v, &((const wpair *)b)->v);
}

/* first value whose cumulative weight reaches q of the total */
static double wquantile(const wpair *x, size_t m, double total, double q)
{
    double target = q * total - 1e-12 * total, cum = 0;
    for (size_t i = 0; i < m; i++) {
        cum += x[i].w;
        if (cum >= target) return x[i].v;
    }
    return x[m - 1].v;
}

void bsum_compute_weighted(bsum *s, const double *v, const double *w, size_t n)
{
    bsum_empty(s);
    wpair *x = xmalloc((n ? n : 1) * sizeof *x);
    size_t m = 0;
    double total = 0, wsum = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(v[i]) || !(w[i] > 0) || !isfinite(w[i])) continue;
        x[m].v = v[i];
        x[m].w = w[i];
        total += w[i];
        wsum += w[i] * v[i];
        m++;
    }
    s->n = m;
    if (m == 0) {
        free(x);
        return;
    }
    qsort(x, m, sizeof *x, cmp_wpair);
    s->mean = wsum / total;
    if (m >= 2) {
        double ss = 0;
        for (size_t i = 0; i < m; i++) ss += x[i].w * (x[i].v - s->mean) * (x[i].v - s->mean);
        s->sd = sqrt(ss / total);
    }
    s->min = x[0].v;
    s->max = x[m - 1].v;
    s->median = wquantile(x, m, total, 0.5);
    for (int i = 0; i < BSUM_NP; i++) {
        s->p_ok[i] = m >= pct_need(bsum_pcts[i]);
        if (s->p_ok[i]) s->p[i] = wquantile(x, m, total, bsum_pcts[i] / 100.0);
    }
    free(x);
}

uint64_t brng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double brng_unit(uint64_t *state)
{
    return (double)(brng_next(state) >> 11) * 0x1.0p-53;
}

/* a uniform index below n (n >= 1); Lemire's multiply, bias < n / 2^64 */
static size_t brng_index(uint64_t *state, size_t n)
{
    return (size_t)(((unsigned __int128)brng_next(state) * n) >> 64);
}

/* standard normal (polar Box-Muller; the second value is dropped to keep
 * the state the only state) */
static double brng_normal(uint64_t *state)
{
    for (;;) {
        double u = 2 * brng_unit(state) - 1, v = 2 * brng_unit(state) - 1;
        double s = u * u + v * v;
        if (s > 0 && s < 1) return u * sqrt(-2 * log(s) / s);
    }
}

double brng_gamma(uint64_t *state, double shape, double scale)
{
    if (isinf(shape) && shape > 0) return scale;
    if (!(shape > 0) || !(scale >= 0)) return NAN;
    double boost = 1;
    if (shape < 1) {
        /* Gamma(a) = Gamma(a + 1) * U^(1/a) */
        double u;
        do u = brng_unit(state);
        while (u == 0);
        boost = pow(u, 1 / shape);
        shape += 1;
    }
    double d = shape - 1.0 / 3, c = 1 / sqrt(9 * d);
    for (;;) {
        double x, v;
        do {
            x = brng_normal(state);
            v = 1 + c * x;
        } while (v <= 0);
        v = v * v * v;
        double u = brng_unit(state);
        if (u < 1 - 0.0331 * x * x * x * x) return d * v * scale * boost;
        if (u > 0 && log(u) < 0.5 * x * x + d * (1 - v + log(v))) return d * v * scale * boost;
    }
}

double brng_gap(uint64_t *state, double rate, double shape)
{
    if (!(rate > 0)) return NAN;
    if (isinf(shape) && shape > 0) return 1 / rate;
    return brng_gamma(state, shape, 1 / (rate * shape));
}

/* median of n values drawn with replacement from x[0..n-1]; tmp has room
 * for n */
static double resample_median(const double *x, size_t n, double *tmp, uint64_t *st)
{
    for (size_t i = 0; i < n; i++) tmp[i] = x[brng_index(st, n)];
    qsort(tmp, n, sizeof *tmp, cmp_double);
    return bstat_quantile_sorted(tmp, n, 0.5);
}

static void bci_nan(bci *out)
{
    out->est = out->lo = out->hi = NAN;
    out->n = 0;
}

/* lo/hi of a percentile interval from the B estimates in est (sorted here) */
static void percentile_interval(double *est, size_t m, double conf, bci *out)
{
    if (m == 0) {
        out->lo = out->hi = NAN;
        return;
    }
    qsort(est, m, sizeof *est, cmp_double);
    out->lo = bstat_quantile_sorted(est, m, (1 - conf) / 2);
    out->hi = bstat_quantile_sorted(est, m, 1 - (1 - conf) / 2);
}

int bstat_median_ci(const double *v, size_t n, double conf, unsigned B, uint64_t seed, bci *out)
{
    bci_nan(out);
    if (!(conf > 0 && conf < 1) || B == 0) return -1;
    size_t m;
    double *x = sorted_copy(v, n, &m);
    out->n = m;
    out->est = bstat_quantile_sorted(x, m, 0.5);
    if (m <= 1) {
        out->lo = out->hi = out->est;
        free(x);
        return 0;
    }
    double *tmp = xmalloc(m * sizeof *tmp), *est = xmalloc(B * sizeof *est);
    uint64_t st = seed;
    for (unsigned b = 0; b < B; b++) est[b] = resample_median(x, m, tmp, &st);
    percentile_interval(est, B, conf, out);
    free(est);
    free(tmp);
    free(x);
    return 0;
}

int bstat_ratio_ci(const double *a, size_t na, const double *b, size_t nb, double conf, unsigned B,
                   uint64_t seed, bci *out)
{
    bci_nan(out);
    if (!(conf > 0 && conf < 1) || B == 0) return -1;
    size_t ma, mb;
    double *xa = sorted_copy(a, na, &ma), *xb = sorted_copy(b, nb, &mb);
    out->n = ma < mb ? ma : mb;
    double meda = bstat_quantile_sorted(xa, ma, 0.5), medb = bstat_quantile_sorted(xb, mb, 0.5);
    if (ma == 0 || mb == 0 || meda == 0) {
        free(xa);
        free(xb);
        return 0;
    }
    out->est = medb / meda;
    if (ma == 1 && mb == 1) {
        out->lo = out->hi = out->est;
    } else {
        double *tmp = xmalloc((ma > mb ? ma : mb) * sizeof *tmp), *est = xmalloc(B * sizeof *est);
        uint64_t st = seed;
        size_t k = 0;
        for (unsigned i = 0; i < B; i++) {
            double ra = resample_median(xa, ma, tmp, &st), rb = resample_median(xb, mb, tmp, &st);
            double r = rb / ra;
            if (isfinite(r)) est[k++] = r; /* a resample with median(a) 0 says nothing */
        }
        percentile_interval(est, k, conf, out);
        free(est);
        free(tmp);
    }
    free(xa);
    free(xb);
    return 0;
}
