/* errf.c - the one way deep code reports: into the caller's buffer. */
#include "util/errf.h"

#include <stdio.h>

void verrf(char *err, size_t errlen, const char *fmt, va_list ap)
{
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
}

void errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrf(err, errlen, fmt, ap);
    va_end(ap);
}

int errf_ret(int rc, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrf(err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}
