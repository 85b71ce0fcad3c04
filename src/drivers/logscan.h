/* logscan.h - what an engine's own log says while it loads and runs:
 * load progress as a percentage, the readiness line, and the first line
 * that explains a failure (out of memory, a port in use, a model that does
 * not load).  The supervisor feeds the child's output as it arrives (any
 * split, partial lines included) and reads the fields; health probes stay
 * the authority on readiness, the log only makes it fast and explains
 * failures. */
#ifndef GPUMOD_LOGSCAN_H
#define GPUMOD_LOGSCAN_H

#include <stdbool.h>
#include <stddef.h>

enum {
    LOGSCAN_PROGRESS = 1 << 0, /* progress_pct changed */
    LOGSCAN_READY = 1 << 1,    /* the engine said it is ready */
    LOGSCAN_FATAL = 1 << 2,    /* a line explaining a failure (first one kept) */
};

typedef struct logscan {
    int driver;         /* driver_kind */
    char line[1024];    /* the current line, up to its first 1023 bytes */
    size_t len;
    size_t full_len;    /* the line's real length so far */
    bool in_tensors;    /* llama.cpp: after "load_tensors:", before the dots end */
    int dots;
    int progress_pct;   /* -1: nothing seen */
    bool ready;
    char fatal[256];    /* "" until a failure line is seen */
} logscan;

void logscan_init(logscan *ls, int driver);
/* Returns the LOGSCAN_* bits of what this chunk changed. */
unsigned logscan_feed(logscan *ls, const char *data, size_t n);

#endif
