/* logring.h - one service's output: the last bytes in memory (a ring with
 * absolute offsets, so a follower asks "what came after byte N") and the
 * whole of it appended to <log_dir>/<id>.log, rotated by size (id.log.1
 * is the newest old file, id.log.<keep> the oldest kept).
 *
 * Writes to the file are plain write(2) on an O_APPEND descriptor: a
 * service's output arrives in pipe-sized chunks on the loop, and a log
 * file on a local disk takes them in microseconds.  A write error is
 * remembered (logring_error) and the ring keeps working. */
#ifndef GPUMOD_LOGRING_H
#define GPUMOD_LOGRING_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define LOGRING_SIZE (256 * 1024)

typedef struct logring logring;

/* path NULL: memory only.  max_bytes <= 0: never rotate.  keep: old files
 * kept (0: the file is truncated when it passes max_bytes). */
logring *logring_new(const char *path, int64_t max_bytes, int64_t keep);
void logring_free(logring *r);

void logring_write(logring *r, const char *data, size_t len);

/* Offsets: total bytes ever written (end) and the oldest still held. */
uint64_t logring_end(const logring *r);
uint64_t logring_start(const logring *r);

/* n_lines for no limit.  0 is zero lines: nothing is read, and *next is
 * where the next byte will be (the end, or `after` clamped), so a reader
 * can follow from now. */
#define LOGRING_ALL SIZE_MAX

/* The bytes after `after` (clamped to what is held; UINT64_MAX: only the
 * last n_lines lines), at most n_lines whole lines (LOGRING_ALL: no limit;
 * a last partial line counts), appended to out; *next = offset after the
 * last byte given. */
void logring_read(const logring *r, uint64_t after, size_t n_lines, buf *out, uint64_t *next);

/* The last n lines, for error messages. */
void logring_tail(const logring *r, size_t n, buf *out);

/* The last file error ("" when none). */
const char *logring_error(const logring *r);

#endif
