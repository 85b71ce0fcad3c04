/* estats.c - eval statistics (see estats.h).
 *
 * Design: closed forms only; nothing here draws a random number, so a
 * report is a function of its counts.  The binomial tail of McNemar's
 * test is summed in log space (lgamma and log-sum-exp): the direct sum of
 * C(n, i) / 2^n underflows past n of about 1,000. */
#include "eval/estats.h"

#include <math.h>

#include "util/distrib.h"

static void nan_ci(eci *o)
{
    o->est = o->lo = o->hi = NAN;
}

double conf_z(double conf)
{
    return normal_quantile(1 - (1 - conf) / 2);
}

int wilson(double k, double n, double z, eci *out)
{
    nan_ci(out);
    if (!(n > 0) || !(k >= 0) || k > n || !(z > 0)) return -1;
    double p = k / n, z2 = z * z, d = 1 + z2 / n;
    double center = (p + z2 / (2 * n)) / d;
    double half = z / d * sqrt(p * (1 - p) / n + z2 / (4 * n * n));
    out->est = p;
    out->lo = fmax(0, center - half);
    out->hi = fmin(1, center + half);
    if (k == 0) out->lo = 0; /* exact in theory; rounding must not lift it */
    if (k == n) out->hi = 1;
    return 0;
}

int pass1(const unsigned *passes, size_t n, unsigned k, double z, eci *out)
{
    nan_ci(out);
    if (!n || !k) return -1;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (passes[i] > k) return -1;
        sum += (double)passes[i] / k;
    }
    return wilson(sum, (double)n, z, out);
}

double pass_at_k(unsigned n, unsigned c, unsigned k)
{
    if (!k || k > n || c > n) return NAN;
    if (n - c < k) return 1;
    double prod = 1;
    for (unsigned i = n - c + 1; i <= n; i++) prod *= 1 - (double)k / i;
    return 1 - prod;
}

double pass_at_k_mean(const unsigned *passes, size_t items, unsigned n, unsigned k)
{
    if (!items) return NAN;
    double sum = 0;
    for (size_t i = 0; i < items; i++) sum += pass_at_k(n, passes[i], k);
    return sum / (double)items;
}

int judge_summary(const int *scores, size_t n, double conf, judge_stats *out)
{
    *out = (judge_stats){0, NAN, NAN, NAN, NAN, NAN, NAN};
    if (!n) return -1;
    double sum = 0;
    size_t ge4 = 0, eq5 = 0;
    for (size_t i = 0; i < n; i++) {
        if (scores[i] < 1 || scores[i] > 5) return -1;
        sum += scores[i];
        ge4 += scores[i] >= 4;
        eq5 += scores[i] == 5;
    }
    out->n = n;
    out->mean = sum / (double)n;
    out->share4 = (double)ge4 / (double)n;
    out->share5 = (double)eq5 / (double)n;
    if (n < 2) return 0;
    double ss = 0;
    for (size_t i = 0; i < n; i++) ss += (scores[i] - out->mean) * (scores[i] - out->mean);
    out->sd = sqrt(ss / (double)(n - 1));
    double h = t_quantile(1 - (1 - conf) / 2, (double)(n - 1)) * out->sd / sqrt((double)n);
    out->lo = out->mean - h;
    out->hi = out->mean + h;
    return 0;
}

/* log C(n, i) */
static double log_choose(double n, double i)
{
    return lgamma(n + 1) - lgamma(i + 1) - lgamma(n - i + 1);
}

double mcnemar_exact(uint64_t b, uint64_t c)
{
    uint64_t n = b + c, m = b < c ? b : c;
    if (!n) return 1;
    /* log-sum-exp of log C(n, i), i = 0..m; the largest term is i = m
     * (m <= n/2) */
    double top = log_choose((double)n, (double)m), sum = 0;
    for (uint64_t i = 0; i <= m; i++) sum += exp(log_choose((double)n, (double)i) - top);
    double logp = log(2) + top + log(sum) - (double)n * log(2);
    return logp >= 0 ? 1 : exp(logp);
}

int welch_diff(const judge_stats *a, const judge_stats *b, double conf, eci *out)
{
    nan_ci(out);
    if (a->n < 2 || b->n < 2 || isnan(a->sd) || isnan(b->sd)) return -1;
    double va = a->sd * a->sd / (double)a->n, vb = b->sd * b->sd / (double)b->n, se = sqrt(va + vb);
    out->est = b->mean - a->mean;
    if (se == 0) {
        out->lo = out->hi = out->est;
        return 0;
    }
    double df = (va + vb) * (va + vb) / (va * va / (double)(a->n - 1) + vb * vb / (double)(b->n - 1));
    double h = t_quantile(1 - (1 - conf) / 2, df) * se;
    out->lo = out->est - h;
    out->hi = out->est + h;
    return 0;
}

const char *verdict_name(int v)
{
    switch (v) {
    case VERDICT_WORSE: return "worse";
    case VERDICT_SAME: return "not distinguishable";
    case VERDICT_BETTER: return "better";
    default: return "not testable";
    }
}

int verdict_paired(uint64_t b, uint64_t c, double alpha, double *p)
{
    double pv = mcnemar_exact(b, c);
    if (p) *p = pv;
    if (pv >= alpha || b == c) return VERDICT_SAME;
    return c > b ? VERDICT_BETTER : VERDICT_WORSE;
}

int verdict_interval(const eci *d)
{
    if (isnan(d->lo) || isnan(d->hi)) return VERDICT_NA;
    if (d->lo > 0) return VERDICT_BETTER;
    if (d->hi < 0) return VERDICT_WORSE;
    return VERDICT_SAME;
}
