/* logring.c - see logring.h.  The ring is a flat array indexed by
 * offset % LOGRING_SIZE; reads copy out the held range in at most two
 * pieces.  Rotation renames id.log.(k-1) -> id.log.k from the oldest down,
 * then id.log -> id.log.1, and reopens. */
#include "daemon/logring.h"
#include "util/slurp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A log file that could not be (re)opened is retried on a later write, at
 * most this often: a full disk or a removed directory must not end file
 * logging for the daemon's lifetime, nor cost an open() per chunk. */
#ifndef LOGRING_RETRY_MS
#define LOGRING_RETRY_MS 1000
#endif

struct logring {
    char *data; /* LOGRING_SIZE */
    uint64_t end;
    char *path;
    int fd;
    int64_t max_bytes, keep;
    uint64_t file_size;
    int64_t retry_at_ms; /* mono: when a failed open may be tried again */
    char err[256];
};

static int64_t now_ms_(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void open_file(logring *r)
{
    char why[128];
    /* log_dir comes from the configuration: a FIFO there must not block the loop */
    r->fd = slurp_open_append(r->path, O_CREAT, 0640, why, sizeof why);
    if (r->fd < 0) {
        snprintf(r->err, sizeof r->err, "cannot open log '%s': %s", r->path, why);
        r->retry_at_ms = now_ms_() + LOGRING_RETRY_MS;
        return;
    }
    r->err[0] = 0;
    struct stat st;
    r->file_size = fstat(r->fd, &st) == 0 ? (uint64_t)st.st_size : 0;
}

logring *logring_new(const char *path, int64_t max_bytes, int64_t keep)
{
    logring *r = xcalloc(1, sizeof *r);
    r->data = xmalloc(LOGRING_SIZE);
    r->fd = -1;
    r->max_bytes = max_bytes;
    r->keep = keep < 0 ? 0 : keep;
    if (path) {
        r->path = xstrdup(path);
        open_file(r);
    }
    return r;
}

void logring_free(logring *r)
{
    if (!r) return;
    if (r->fd >= 0) close(r->fd);
    free(r->path);
    free(r->data);
    free(r);
}

static void rotate(logring *r)
{
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    if (r->keep == 0) {
        char why[128];
        r->fd = slurp_open_append(r->path, O_CREAT | O_TRUNC, 0640, why, sizeof why);
        if (r->fd < 0) {
            snprintf(r->err, sizeof r->err, "cannot truncate log '%s': %s", r->path, why);
            r->retry_at_ms = now_ms_() + LOGRING_RETRY_MS;
        }
        r->file_size = 0;
        return;
    }
    size_t plen = strlen(r->path) + 24;
    char *from = xmalloc(plen), *to = xmalloc(plen);
    for (int64_t k = r->keep; k >= 1; k--) {
        if (k == 1)
            snprintf(from, plen, "%s", r->path);
        else
            snprintf(from, plen, "%s.%lld", r->path, (long long)(k - 1));
        snprintf(to, plen, "%s.%lld", r->path, (long long)k);
        if (rename(from, to) != 0 && errno != ENOENT)
            snprintf(r->err, sizeof r->err, "cannot rotate log '%s' to '%s': %s", from, to, strerror(errno));
    }
    free(from);
    free(to);
    open_file(r);
}

void logring_write(logring *r, const char *data, size_t len)
{
    if (len == 0) return;
    /* the ring: only the last LOGRING_SIZE bytes matter */
    const char *src = data;
    size_t n = len;
    uint64_t at = r->end;
    if (n > LOGRING_SIZE) {
        src += n - LOGRING_SIZE;
        at += n - LOGRING_SIZE;
        n = LOGRING_SIZE;
    }
    size_t pos = (size_t)(at % LOGRING_SIZE);
    size_t first = n < LOGRING_SIZE - pos ? n : LOGRING_SIZE - pos;
    memcpy(r->data + pos, src, first);
    if (n > first) memcpy(r->data, src + first, n - first);
    r->end += len;

    if (r->fd < 0 && r->path && now_ms_() >= r->retry_at_ms) open_file(r);
    if (r->fd < 0) return;
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(r->fd, data + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
            snprintf(r->err, sizeof r->err, "cannot write log '%s': %s", r->path, strerror(errno));
            break;
        }
        off += (size_t)w;
    }
    r->file_size += off;
    if (r->max_bytes > 0 && r->file_size >= (uint64_t)r->max_bytes) rotate(r);
}

uint64_t logring_end(const logring *r)
{
    return r->end;
}

uint64_t logring_start(const logring *r)
{
    return r->end > LOGRING_SIZE ? r->end - LOGRING_SIZE : 0;
}

static char at(const logring *r, uint64_t off)
{
    return r->data[off % LOGRING_SIZE];
}

/* Offset where the last n lines start (a trailing newline ends the last
 * line, it does not start an empty one). */
static uint64_t last_lines_start(const logring *r, size_t n)
{
    uint64_t lo = logring_start(r), p = r->end;
    if (p == lo || n == 0) return p;
    if (at(r, p - 1) == '\n') p--;
    size_t seen = 0;
    while (p > lo) {
        if (at(r, p - 1) == '\n') {
            if (++seen == n) return p;
        }
        p--;
    }
    return lo;
}

void logring_read(const logring *r, uint64_t after, size_t n_lines, buf *out, uint64_t *next)
{
    uint64_t lo = logring_start(r);
    uint64_t from = after == UINT64_MAX ? last_lines_start(r, n_lines) : after;
    if (from < lo) from = lo;
    if (from > r->end) from = r->end;
    uint64_t to = n_lines == 0 ? from : r->end;
    if (n_lines > 0 && n_lines != LOGRING_ALL && after != UINT64_MAX) {
        size_t lines = 0;
        for (uint64_t p = from; p < r->end; p++)
            if (at(r, p) == '\n' && ++lines == n_lines) {
                to = p + 1;
                break;
            }
    }
    size_t n = (size_t)(to - from);
    buf_grow(out, n);
    size_t pos = (size_t)(from % LOGRING_SIZE);
    size_t first = n < LOGRING_SIZE - pos ? n : LOGRING_SIZE - pos;
    buf_add(out, r->data + pos, first);
    if (n > first) buf_add(out, r->data, n - first);
    if (next) *next = to;
}

void logring_tail(const logring *r, size_t n, buf *out)
{
    logring_read(r, UINT64_MAX, n, out, NULL);
}

const char *logring_error(const logring *r)
{
    return r->err;
}
