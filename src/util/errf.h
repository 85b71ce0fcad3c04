/* errf.h - format into a caller's error buffer (which may be NULL). */
#ifndef GPUMOD_ERRF_H
#define GPUMOD_ERRF_H

#include <stddef.h>

void errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
