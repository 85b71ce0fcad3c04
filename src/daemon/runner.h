/* runner.h - how the supervisor starts a service's process and signals
 * its group: an interface (a table of functions), so the lifecycle tests
 * run against the spawn runner now and a systemd runner later (issue 8).
 *
 * A handle lives from spawn until close.  Its callbacks run on the loop:
 * on_output for each chunk of the service's stdout and stderr (interleaved
 * as they arrive), then on_exit exactly once, after the process exited and
 * its output was drained (or a short grace passed), never after close. */
#ifndef GPUMOD_RUNNER_H
#define GPUMOD_RUNNER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "util/strv.h"

typedef struct run_handle run_handle;

typedef void (*runner_output_cb)(const char *data, size_t len, void *ud);
/* code: the engine's exit code, or -1; sig: the signal that ended it, or
 * 0.  Under gpumod-exec a status 128+N is the engine killed by signal N. */
typedef void (*runner_exit_cb)(int code, int sig, void *ud);

typedef struct runner_spec {
    const strv *argv;     /* argv[0] resolved (a path) */
    const strv *env;      /* KEY=VALUE on top of the daemon's environment */
    const char *cwd;      /* NULL: the daemon's */
    const char *id;       /* the service, for names (systemd units) and messages */
    runner_output_cb on_output;
    runner_exit_cb on_exit;
    void *ud;
} runner_spec;

typedef struct runner runner;
struct runner {
    const char *name; /* "spawn" */
    /* NULL with err (nothing runs then). */
    run_handle *(*spawn)(runner *r, const runner_spec *spec, char *err, size_t errlen);
    /* The main pid (the engine when known, else the group leader) and the
     * process group. */
    pid_t (*pid)(run_handle *h);
    pid_t (*pgid)(run_handle *h);
    /* kill(-pgid, sig); 0 or -1 (errno). */
    int (*signal_group)(run_handle *h, int sig);
    /* No more callbacks; frees once its handles are closed.  Close only
     * after on_exit, or at shutdown. */
    void (*close)(run_handle *h);
    void (*free)(runner *r);
};

/* The spawn runner: gpumod-exec --parent-pid <getpid()> -- ARGV...,
 * stdout and stderr as pipes.  exec_helper is copied. */
runner *runner_spawn_new(uv_loop_t *loop, const char *exec_helper);

#endif
