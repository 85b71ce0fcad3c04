/* decide.c (tune) - paired differences, a corrected t interval, the
 * outcome (decide.h). */
#include "tune/decide.h"
#include "util/distrib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const tune_outcome_names[] = {"BASELINE", "IMPROVEMENT", "NO CHANGE", "REGRESSION",
                                          "FAILED",   "SKIPPED",     "UNSAFE",    "FINAL",     NULL};

static double mean_of(const double *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += v[i];
    return s / (double)n;
}

int tune_decide(const double *a, const double *b, size_t n, const tune_rule_in *r, tune_decision *out)
{
    memset(out, 0, sizeof *out);
    if (n < 2 || r->m < 1 || !(r->alpha > 0 && r->alpha < 1)) return -1;
    double *d = malloc(n * sizeof *d);
    if (!d) return -1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) || !isfinite(b[i])) {
            free(d);
            return -1;
        }
        d[i] = b[i] - a[i];
    }
    double md = mean_of(d, n), ss = 0;
    for (size_t i = 0; i < n; i++) ss += (d[i] - md) * (d[i] - md);
    free(d);
    double sd = sqrt(ss / (double)(n - 1));
    double t = t_quantile(1 - r->alpha / (2.0 * r->m), (double)(n - 1));
    double half = t * sd / sqrt((double)n);
    out->n = n;
    out->a_mean = mean_of(a, n);
    out->b_mean = mean_of(b, n);
    out->delta = md;
    out->lo = md - half;
    out->hi = md + half;
    double base = fabs(out->a_mean);
    out->delta_pct = base > 0 ? 100 * md / base : NAN;
    out->lo_pct = base > 0 ? 100 * out->lo / base : NAN;
    out->hi_pct = base > 0 ? 100 * out->hi / base : NAN;
    /* in the good direction */
    double g = r->higher_better ? md : -md;
    double glo = r->higher_better ? out->lo : -out->hi, ghi = r->higher_better ? out->hi : -out->lo;
    out->gain = r->min_gain_pct ? (base > 0 ? 100 * g / base : NAN) : g;
    if (glo > 0 && out->gain > r->min_gain)
        out->outcome = TO_IMPROVEMENT;
    else if (ghi < 0)
        out->outcome = TO_REGRESSION;
    else
        out->outcome = TO_NO_CHANGE;
    return 0;
}

int tune_parse_gain(const char *s, double *v, bool *pct)
{
    size_t n = strlen(s);
    bool p = n > 0 && s[n - 1] == '%';
    char *end;
    double x = strtod(s, &end);
    if (!n || end == s || end != s + n - (p ? 1 : 0) || !isfinite(x) || x < 0) return -1;
    *v = x;
    *pct = p;
    return 0;
}
