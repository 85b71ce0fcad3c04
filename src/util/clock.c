/* clock.c - CLOCK_MONOTONIC in milliseconds: deadlines never jump with
 * the wall clock. */
#include "util/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t clock_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double clock_mono_ms_f(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int64_t clock_unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void clock_rfc3339(int64_t unix_ms, char *out, size_t n)
{
    time_t t = (time_t)(unix_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
             tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(unix_ms % 1000));
}

int clock_parse_rfc3339(const char *s, int64_t *unix_ms)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p) return -1;
    int ms = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 3) ms = ms * 10 + (*p - '0');
        if (!digits) return -1;
        for (; digits < 3; digits++) ms *= 10;
    }
    long off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
        int h = atoi(p + 1), m = atoi(p + 4);
        off = (h * 60L + m) * 60L * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return -1;
    }
    if (*p) return -1;
    time_t t = timegm(&tm);
    *unix_ms = ((int64_t)t - off) * 1000 + ms;
    return 0;
}
