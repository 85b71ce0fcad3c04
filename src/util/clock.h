/* clock.h - the monotonic clock every deadline is measured on. */
#ifndef GPUMOD_CLOCK_H
#define GPUMOD_CLOCK_H

#include <stdint.h>

int64_t clock_mono_ms(void);
double clock_mono_ms_f(void); /* with the fraction, for timings */

#endif
