/* buf.h - the one growable byte buffer (always NUL-terminated) and the
 * {ptr,len} view type for zero-copy slices.  Allocation failure aborts:
 * gpumod has no partial-OOM recovery path worth the code it would cost. */
#ifndef GPUMOD_BUF_H
#define GPUMOD_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct buf {
    char *p;    /* NUL-terminated; "" (static) until the first append */
    size_t len;
    size_t cap;
} buf;

typedef struct view {
    const char *p;
    size_t len;
} view;

/* v equals s, ASCII case ignored (HTTP field names and tokens). */
bool view_ieq(view v, const char *s);

#define BUF_INIT {(char *)"", 0, 0}

void buf_init(buf *b);
void buf_release(buf *b);
void buf_clear(buf *b);
void buf_grow(buf *b, size_t extra);
void buf_add(buf *b, const void *p, size_t n);
void buf_adds(buf *b, const char *s);
void buf_addc(buf *b, char c);
void buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vprintf(buf *b, const char *fmt, va_list ap);
/* Append s as a JSON string literal, quotes included. */
void buf_json_str(buf *b, const char *s);
/* buf_json_str, or null when s is NULL. */
void buf_json_str_or_null(buf *b, const char *s);
/* A Unix time in ms as a JSON string, RFC 3339 UTC with milliseconds. */
void buf_json_time(buf *b, int64_t unix_ms);
/* Detach the string; the buffer is reset.  Caller frees. */
char *buf_detach(buf *b);
/* A byte count for people: "512 B", "12 KiB", "600 MiB", "1.50 GiB", "24.0 GiB". */
void buf_bytes(buf *b, uint64_t bytes);
/* s as one CSV field (RFC 4180): quoted, its quotes doubled, when it holds
 * a comma, a quote or a line break; nothing for NULL. */
void buf_csv_field(buf *b, const char *s);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t sz);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap);

#endif
