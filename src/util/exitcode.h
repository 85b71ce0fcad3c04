/* exitcode.h - the exit codes of docs/interfaces.md, one set for every
 * executable: the CLI, the daemon's `serve`, the helpers. */
#ifndef GPUMOD_EXITCODE_H
#define GPUMOD_EXITCODE_H

enum {
    EXIT_OK = 0,
    EXIT_REFUSED = 1,  /* refused or failed: a gate said no, a switch rolled back */
    EXIT_USAGE = 2,    /* usage or configuration error */
    EXIT_DAEMON = 3,   /* daemon unreachable */
    EXIT_TIMEOUT = 4,  /* timed out */
};

#endif
