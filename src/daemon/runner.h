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

#include <stdbool.h>
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
/* Only from a runner that owns restarts (systemd): the main process
 * changed.  pid > 0: a new main process runs (restarts 0: the first one
 * of this handle, known only now; else the unit's restarts since the
 * start); pid 0: the main process exited and the runner restarts it
 * (code/sig as on_exit).  on_exit still ends the handle, once, when the
 * unit ended for good. */
typedef void (*runner_respawn_cb)(pid_t pid, int64_t restarts, int code, int sig, void *ud);

typedef struct runner_spec {
    const strv *argv;     /* argv[0] resolved (a path) */
    const strv *env;      /* KEY=VALUE on top of the daemon's environment */
    const char *cwd;      /* NULL: the daemon's */
    const char *id;       /* the service, for names (systemd units) and messages */
    runner_output_cb on_output;
    runner_exit_cb on_exit;
    runner_respawn_cb on_respawn; /* NULL unless the runner owns restarts */
    void *ud;
} runner_spec;

typedef struct runner runner;
struct runner {
    const char *name; /* "spawn", "systemd" */
    /* The runner restarts an exited service itself (systemd's Restart=,
     * with the numbers rendered into the unit): the supervisor observes
     * (on_respawn) instead of applying its restart policy. */
    bool owns_restarts;
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
    /* May be NULL.  After on_exit: why the run ended, in words (borrowed
     * until close), and whether it ended failed (systemd gave up: start
     * limit, RestartPreventExitStatus, the gate refused in ExecStartPre);
     * NULL: nothing to add to the exit code. */
    const char *(*end_reason)(run_handle *h, bool *failed);
    /* May be NULL.  A service found running (a unit a previous daemon
     * started): a handle as if spawn had started it and its main process
     * had come (on_respawn with restarts 0 follows), or NULL: nothing
     * runs (err empty) or err. */
    run_handle *(*adopt)(runner *r, const runner_spec *spec, char *err, size_t errlen);
    /* May be NULL.  After adopt: why the unit runs another configuration
     * than spec's argv (a stale unit file, NeedDaemonReload), or NULL. */
    const char *(*adopt_note)(run_handle *h);
    /* May be NULL.  After on_exit: the runner lost sight of the run (the
     * bus went) while it runs on; its processes are not the daemon's to
     * signal. */
    bool (*detached)(run_handle *h);
    /* Set by the user (may stay NULL): the runner can adopt again after
     * it lost its connection (systemd's bus is back). */
    void (*on_reconnect)(void *ud);
    void *reconnect_ud;
};

/* The spawn runner: gpumod-exec --parent-pid <getpid()> -- ARGV...,
 * stdout and stderr as pipes.  exec_helper is copied. */
runner *runner_spawn_new(uv_loop_t *loop, const char *exec_helper);

/* The systemd runner (docs/systemd.md "systemd runner"): service ID runs
 * as gpumod-ID.service of the user manager (user) or the system manager,
 * started and stopped over sd-bus; its output is read from log_dir/ID.unit.log,
 * where the rendered unit appends it.  NULL with err when the bus cannot
 * be reached. */
runner *runner_systemd_new(uv_loop_t *loop, bool user, const char *log_dir, char *err, size_t errlen);

#endif
