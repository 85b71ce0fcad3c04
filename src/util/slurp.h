/* slurp.h - read a small regular text file whole (/proc, /sys, unit and
 * configuration files): opened O_NONBLOCK (a FIFO planted under a test root
 * cannot hang the reader), regular files only, no NUL byte, at most max
 * bytes. */
#ifndef GPUMOD_SLURP_H
#define GPUMOD_SLURP_H

#include <stddef.h>

#include "util/buf.h"

/* Appends the file to b.  0, or -1 with err ("'PATH': reason") and errno
 * kept (EINVAL: not a regular file or a NUL byte; EFBIG: over max). */
int slurp_text(const char *path, size_t max, buf *b, char *err, size_t errlen);

#endif
