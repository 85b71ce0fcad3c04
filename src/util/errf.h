/* errf.h - format into a caller's error buffer (which may be NULL): the
 * one way deep code reports. */
#ifndef GPUMOD_ERRF_H
#define GPUMOD_ERRF_H

#include <stdarg.h>
#include <stddef.h>

void errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void verrf(char *err, size_t errlen, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
/* errf, then return rc: `return errf_ret(-1, err, errlen, "...", ...);` */
int errf_ret(int rc, char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
