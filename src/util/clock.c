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

/* n digits at *p exactly, as a number; -1 when one is not a digit */
static int digits(const char **p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9') return -1;
        v = v * 10 + (c - '0');
    }
    *p += n;
    return v;
}

/* Strict: YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM), every field its
 * full width and in range (strptime would take "2025-1-2" and atoi
 * "+0a:00"). */
int clock_parse_rfc3339(const char *s, int64_t *unix_ms)
{
    const char *p = s;
    int Y = digits(&p, 4);
    if (Y < 0 || *p++ != '-') return -1;
    int M = digits(&p, 2);
    if (M < 1 || M > 12 || *p++ != '-') return -1;
    int D = digits(&p, 2);
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (D < 1 || D > mdays[M - 1]) return -1;
    if (M == 2 && D == 29 && !(Y % 4 == 0 && (Y % 100 != 0 || Y % 400 == 0))) return -1;
    if (*p != 'T' && *p != 't') return -1;
    p++;
    int h = digits(&p, 2);
    if (h < 0 || h > 23 || *p++ != ':') return -1;
    int mi = digits(&p, 2);
    if (mi < 0 || mi > 59 || *p++ != ':') return -1;
    int sec = digits(&p, 2);
    if (sec < 0 || sec > 60) return -1; /* 60: a leap second, counted as the next one */
    int ms = 0;
    if (*p == '.') {
        int nd = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, nd++)
            if (nd < 3) ms = ms * 10 + (*p - '0');
        if (!nd) return -1;
        for (; nd < 3; nd++) ms *= 10;
    }
    long off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1;
        int oh = digits(&p, 2);
        if (oh < 0 || oh > 23 || *p++ != ':') return -1;
        int om = digits(&p, 2);
        if (om < 0 || om > 59) return -1;
        off = (oh * 60L + om) * 60L * sign;
    } else {
        return -1;
    }
    if (*p) return -1;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    time_t t = timegm(&tm);
    *unix_ms = ((int64_t)t - off) * 1000 + ms;
    return 0;
}
