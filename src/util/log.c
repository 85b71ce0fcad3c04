/* log.c - the daemon's stderr log (see log.h).
 *
 * Each message goes through redact_text (so "--api-key X", "HF_TOKEN=X"
 * on any line of a quoted log tail, "Authorization: Bearer X" never reach
 * the log whatever path built the message), then control characters are
 * escaped (a log line is one line; redaction runs first, so a newline
 * still separates the lines it judges), and
 * the whole line goes out in one write so lines of concurrent writers
 * (gpumod-exec shares no stderr with us, but a forked child might) never
 * interleave. */
#include "util/log.h"
#include "util/buf.h"
#include "util/redact.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static log_level min_level = LOG_INFO;
static const char *const level_names[] = {"debug", "info ", "warn ", "error"};

void log_set_level(log_level lv)
{
    min_level = lv;
}

char *log_clean(const char *msg)
{
    size_t n;
    char *red = redact_text(msg, strlen(msg), &n);
    buf out = BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)red[i];
        if (c < 0x20 || c == 0x7f)
            buf_printf(&out, "\\x%02x", c);
        else
            buf_addc(&out, (char)c);
    }
    free(red);
    return buf_detach(&out);
}

void log_msg(log_level lv, const char *fmt, ...)
{
    if (lv < min_level) return;
    char *msg;
    va_list ap;
    va_start(ap, fmt);
    buf b = BUF_INIT;
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    msg = log_clean(b.p);
    buf_clear(&b);

    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    buf_printf(&b, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s\n", tm.tm_year + 1900, tm.tm_mon + 1,
               tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)(tv.tv_usec / 1000),
               level_names[lv < LOG_DEBUG ? LOG_DEBUG : lv > LOG_ERROR ? LOG_ERROR : lv], msg);
    free(msg);
    const char *p = b.p;
    size_t left = b.len;
    while (left) {
        ssize_t w = write(STDERR_FILENO, p, left);
        if (w <= 0) break; /* a closed stderr loses the log, never the daemon */
        p += w;
        left -= (size_t)w;
    }
    buf_release(&b);
}
