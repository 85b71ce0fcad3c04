/* clock.h - the monotonic clock every deadline is measured on. */
#ifndef GPUMOD_CLOCK_H
#define GPUMOD_CLOCK_H

#include <stddef.h>
#include <stdint.h>

int64_t clock_mono_ms(void);
double clock_mono_ms_f(void); /* with the fraction, for timings */

/* Wall clock, for timestamps people read (never for deadlines). */
int64_t clock_unix_ms(void);
/* "2026-11-26T01:02:03.456Z" (RFC 3339, UTC, ms) into out (>= 25 bytes). */
void clock_rfc3339(int64_t unix_ms, char *out, size_t n);
/* Parse that form (also without ms, or with a numeric offset); 0 with
 * *unix_ms, or -1. */
int clock_parse_rfc3339(const char *s, int64_t *unix_ms);

#endif
