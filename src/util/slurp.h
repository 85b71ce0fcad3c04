/* slurp.h - read a small regular text file whole (/proc, /sys, unit and
 * configuration files): opened O_NONBLOCK (a FIFO planted under a test root
 * cannot hang the reader), regular files only, no NUL byte, at most max
 * bytes. */
#ifndef GPUMOD_SLURP_H
#define GPUMOD_SLURP_H

#include <stddef.h>
#include <sys/types.h>

#include "util/buf.h"

/* Appends the file to b.  0, or -1 with err ("'PATH': reason") and errno
 * kept (EINVAL: not a regular file or a NUL byte; EFBIG: over max). */
int slurp_text(const char *path, size_t max, buf *b, char *err, size_t errlen);

/* Opens path O_RDONLY|O_NONBLOCK|O_CLOEXEC and keeps it only when the
 * descriptor is a regular file: open() of a FIFO without O_NONBLOCK waits
 * for a writer, which on the daemon's loop freezes everything.  The fd,
 * or -1 with err holding the reason without the path ("a FIFO, not a
 * regular file", "a broken symlink (No such file or directory)", or
 * strerror) and errno kept (EINVAL: not a regular file). */
int slurp_open(const char *path, char *err, size_t errlen);
/* The write side of the same rule, for logs: opens path O_WRONLY|O_APPEND
 * (| flags, e.g. O_CREAT, O_TRUNC) without blocking and keeps it only when
 * it is a regular file (a FIFO without a reader would block open(), one
 * with a reader would swallow the log).  The fd, or -1 with err as for
 * slurp_open. */
int slurp_open_append(const char *path, int flags, mode_t mode, char *err, size_t errlen);
/* "a FIFO", "a socket", "a directory", ... for a non-regular st_mode */
const char *slurp_kind(mode_t mode);

#endif
