/* errf.c - the one way deep code reports: into the caller's buffer. */
#include "util/errf.h"

#include <stdarg.h>
#include <stdio.h>

void errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
