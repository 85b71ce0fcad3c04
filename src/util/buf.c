/* buf.c - growable buffer and allocation wrappers.  Out of memory is fatal
 * (the only exit outside main), with a message, never a NULL deref later. */
#include "util/buf.h"
#include "util/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void oom(size_t n)
{
    fprintf(stderr, "gpumod: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) oom(n);
    return p;
}

void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) oom(n * sz);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
    buf b = BUF_INIT;
    buf_vprintf(&b, fmt, ap);
    return buf_detach(&b);
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

void buf_init(buf *b)
{
    b->p = (char *)"";
    b->len = b->cap = 0;
}

void buf_release(buf *b)
{
    if (b->cap) free(b->p);
    buf_init(b);
}

void buf_clear(buf *b)
{
    b->len = 0;
    if (b->cap) b->p[0] = '\0';
}

void buf_grow(buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    if (b->cap) {
        b->p = xrealloc(b->p, cap);
    } else {
        b->p = xmalloc(cap);
        b->p[0] = '\0';
    }
    b->cap = cap;
}

void buf_add(buf *b, const void *p, size_t n)
{
    buf_grow(b, n);
    memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void buf_adds(buf *b, const char *s)
{
    buf_add(b, s, strlen(s));
}

void buf_addc(buf *b, char c)
{
    buf_add(b, &c, 1);
}

void buf_vprintf(buf *b, const char *fmt, va_list ap)
{
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0) return;
    buf_grow(b, (size_t)n);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void buf_printf(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void buf_json_str(buf *b, const char *s)
{
    buf_addc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': buf_adds(b, "\\\""); break;
        case '\\': buf_adds(b, "\\\\"); break;
        case '\n': buf_adds(b, "\\n"); break;
        case '\r': buf_adds(b, "\\r"); break;
        case '\t': buf_adds(b, "\\t"); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                buf_printf(b, "\\u%04x", *p);
            else
                buf_addc(b, (char)*p);
        }
    }
    buf_addc(b, '"');
}

char *buf_detach(buf *b)
{
    char *p = b->cap ? b->p : xstrdup("");
    buf_init(b);
    return p;
}

void buf_json_str_or_null(buf *b, const char *s)
{
    if (s)
        buf_json_str(b, s);
    else
        buf_adds(b, "null");
}

void buf_json_time(buf *b, int64_t unix_ms)
{
    char ts[40];
    clock_rfc3339(unix_ms, ts, sizeof ts);
    buf_json_str(b, ts);
}

bool view_ieq(view v, const char *s)
{
    size_t n = strlen(s);
    return v.len == n && strncasecmp(v.p, s, n) == 0;
}

void buf_csv_field(buf *b, const char *s)
{
    if (!s) return;
    if (!strpbrk(s, ",\"\r\n")) {
        buf_adds(b, s);
        return;
    }
    buf_addc(b, '"');
    for (; *s; s++) {
        if (*s == '"') buf_addc(b, '"');
        buf_addc(b, *s);
    }
    buf_addc(b, '"');
}

#define BYTES_MIB (1024.0 * 1024.0)

void buf_bytes(buf *b, uint64_t v)
{
    if (v >= 10ull * 1024 * 1024 * 1024)
        buf_printf(b, "%.1f GiB", (double)v / (1024.0 * BYTES_MIB));
    else if (v >= 1024ull * 1024 * 1024)
        buf_printf(b, "%.2f GiB", (double)v / (1024.0 * BYTES_MIB));
    else if (v >= 1024ull * 1024)
        buf_printf(b, "%.0f MiB", (double)v / BYTES_MIB);
    else if (v >= 1024)
        buf_printf(b, "%.0f KiB", (double)v / 1024);
    else
        buf_printf(b, "%llu B", (unsigned long long)v);
}
