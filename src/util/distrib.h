/* distrib.h - the quantiles of Student's t and of the normal distribution,
 * for every interval the helpers report (bench's Welch ratios, eval's
 * Wilson and t intervals).  Pure: libm only, no state.  Here, below both
 * helpers, so that neither copies the numerics of the other. */
#ifndef GPUMOD_UTIL_DISTRIB_H
#define GPUMOD_UTIL_DISTRIB_H

/* The p-quantile of Student's t with df degrees of freedom (df > 0, not
 * necessarily an integer: Welch's df is not): the CDF through the
 * regularized incomplete beta function (continued fraction), inverted by
 * bisection to about 1e-12 relative.  t_{0.975,10} = 2.228139; df -> inf
 * tends to the normal quantile (df = INFINITY is the normal quantile).
 * NaN for p outside (0, 1) or df <= 0. */
double t_quantile(double p, double df);

/* The p-quantile of the standard normal distribution (z_{0.975} =
 * 1.959964): Acklam's rational approximation refined by one Halley step
 * on erfc, to about 1e-15.  NaN for p outside (0, 1). */
double normal_quantile(double p);

#endif
