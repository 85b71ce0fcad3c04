/* daemon.h - `gpumod serve`: the one process that owns the GPU host.
 * One libuv loop runs the control API (src/daemon/api.c), the supervisor,
 * the host monitor and the memory watchdog. */
#ifndef GPUMOD_DAEMON_H
#define GPUMOD_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config/config.h"

typedef struct daemon_opts {
    config_paths paths; /* borrowed; strings must outlive daemon_run */
    bool verbose;       /* debug lines in the log */
    bool chdir_root;    /* detached: chdir("/") once every path is made absolute */
    const char *listen; /* --listen HOST:PORT for the router, or NULL: router.listen */
    bool no_router;     /* --no-router */
    bool insecure;      /* --insecure: a non-loopback router without API keys */
} daemon_opts;

/* Run until SIGTERM/SIGINT (or a fatal error before listening).  Returns
 * the process exit code: 0 after an orderly shutdown (every child stopped
 * and verified), 1 when another daemon owns the state dir or the socket
 * cannot be bound, 2 for a configuration error.  What went wrong is on
 * stderr. */
int daemon_run(const daemon_opts *o);

/* mkdir -p, perm for every directory it creates.  0, or -1 with err. */
int daemon_mkdirs(const char *path, unsigned perm, char *err, size_t errlen);

/* Whether members of group gid can traverse every directory above path
 * (search permission for "other", or for the group on a directory of
 * that group): 1 yes, 0 no (why says which directory), -1 unknown (why
 * says what failed). */
int daemon_group_can_reach(const char *path, gid_t gid, char *why, size_t whylen);

#endif
