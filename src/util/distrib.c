/* distrib.c - Student's t and normal quantiles (see distrib.h).
 *
 * t: the tail P(T > t) = I_{df/(df+t^2)}(df/2, 1/2) / 2 is monotone in t,
 * so the quantile is found by bisection on it; no table to run out of
 * and any df works (Welch's is fractional).  Normal: Acklam's
 * approximation (relative error 1.15e-9) with one Halley step on the exact
 * erfc, which brings it to the precision of a double. */
#include "util/distrib.h"

#include <math.h>

/* The regularized incomplete beta I_x(a, b) by its continued fraction
 * (modified Lentz), on the side where it converges fast. */
static double betacf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double qab = a + b, qap = a + 1, qam = a - 1, c = 1, d = 1 - qab * x / qap;
    if (fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 1000; m++) {
        double m2 = 2.0 * m, aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1 + aa * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1 + aa / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1 + aa * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1 + aa / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-15) break;
    }
    return h;
}

static double ibeta(double a, double b, double x)
{
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    if (x < (a + 1) / (a + b + 2)) return exp(lbt) * betacf(a, b, x) / a;
    return 1 - exp(lbt) * betacf(b, a, 1 - x) / b;
}

/* P(T > t) for t >= 0 */
static double t_upper(double t, double df)
{
    return 0.5 * ibeta(df / 2, 0.5, df / (df + t * t));
}

double t_quantile(double p, double df)
{
    if (!(p > 0 && p < 1) || !(df > 0) || isnan(df)) return NAN;
    if (p == 0.5) return 0;
    if (isinf(df)) return normal_quantile(p);
    double q = p > 0.5 ? 1 - p : p; /* the upper tail we want */
    double lo = 0, hi = 1;
    while (t_upper(hi, df) > q) {
        lo = hi;
        hi *= 2;
        if (!isfinite(hi)) return p > 0.5 ? INFINITY : -INFINITY;
    }
    /* bisection: the tail is monotone in t; 200 halvings reach the
     * resolution of a double on any bracket */
    for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (t_upper(mid, df) > q)
            lo = mid;
        else
            hi = mid;
    }
    double t = 0.5 * (lo + hi);
    return p > 0.5 ? t : -t;
}

/* Acklam's coefficients (P. J. Acklam, "An algorithm for computing the
 * inverse normal cumulative distribution function", 2003) */
static const double ack_a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
static const double ack_b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
static const double ack_c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
static const double ack_d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};

double normal_quantile(double p)
{
    if (!(p > 0 && p < 1)) return NAN;
    const double plow = 0.02425;
    double x;
    if (p < plow || p > 1 - plow) {
        double q = sqrt(-2 * log(p < plow ? p : 1 - p));
        x = (((((ack_c[0] * q + ack_c[1]) * q + ack_c[2]) * q + ack_c[3]) * q + ack_c[4]) * q +
             ack_c[5]) /
            ((((ack_d[0] * q + ack_d[1]) * q + ack_d[2]) * q + ack_d[3]) * q + 1);
        if (p > 1 - plow) x = -x;
    } else {
        double q = p - 0.5, r = q * q;
        x = (((((ack_a[0] * r + ack_a[1]) * r + ack_a[2]) * r + ack_a[3]) * r + ack_a[4]) * r +
             ack_a[5]) *
            q /
            (((((ack_b[0] * r + ack_b[1]) * r + ack_b[2]) * r + ack_b[3]) * r + ack_b[4]) * r + 1);
    }
    /* one Halley step against the exact CDF, 0.5 erfc(-x / sqrt 2) */
    double e = 0.5 * erfc(-x / sqrt(2)) - p;
    double u = e * sqrt(2 * M_PI) * exp(x * x / 2);
    return x - u / (1 + x * u / 2);
}
