/* run.h - run a short-lived program (never a shell) under a deadline and
 * capture what it prints: `llama-server --help`, `docker stop`,
 * `nvidia-smi`.  Long-lived services are the supervisor's business, not
 * this module's. */
#ifndef GPUMOD_RUN_H
#define GPUMOD_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/strv.h"

typedef struct run_opts {
    int64_t timeout_ms; /* > 0; the whole run, output included */
    size_t max_output;  /* bytes kept in out; 0: 1 MiB.  The rest is read
                           and dropped, so the child never blocks on a
                           full pipe */
    const char *cwd;    /* NULL: inherit */
    const strv *env;    /* KEY=VALUE set on top of environ; NULL: none */
    const char *file;   /* the program to run, argv[0] then only its name
                           (a git-style helper told apart by argv[0]);
                           NULL: argv[0] */
    buf *err_out;       /* stderr kept apart here (capped as out); NULL:
                           stderr goes to out with stdout */
    const volatile int *cancel; /* when it turns non-zero the run ends as at
                           the deadline (the group gets SIGKILL), within
                           100 ms, res->cancelled set; NULL: never */
} run_opts;

typedef struct run_result {
    bool exited; /* exit_code is valid */
    int exit_code;
    int term_signal; /* the signal that ended it, 0 if none */
    bool timed_out;  /* the deadline passed: the group got SIGKILL */
    bool cancelled;  /* opts->cancel turned non-zero: the group got SIGKILL */
    bool truncated;  /* output went over max_output */
    int start_errno; /* could not be started (ENOENT, EACCES, ...), else 0 */
    int64_t elapsed_ms;
} run_result;

/* Run argv (argv[0] looked up in PATH when it has no '/') in its own
 * process group, stdin from /dev/null, stdout and stderr both appended to
 * out (which may be NULL: output discarded), or stderr to opts->err_out.  At the deadline the whole
 * group is killed with SIGKILL; the child is always reaped.
 *
 * Returns 0 when the program exited with status 0, else -1 with err saying
 * why ("'x': no such file or directory", "'x' exited with status 2",
 * "'x' was killed by signal 9", "'x' timed out after 200 ms").  res (may
 * be NULL) tells the cases apart for callers to whom a non-zero exit is
 * an answer, not a failure.  Needs SIGCHLD not set to SIG_IGN. */
int run_capture(char *const argv[], const run_opts *opts, buf *out, run_result *res, char *err,
                size_t errlen);

/* The file that running `name` would execute: name itself when it holds a
 * '/', else the first executable regular file of that name in $PATH.
 * Returns a malloc'ed path (caller frees), or NULL with *errnum set
 * (ENOENT, EACCES). */
char *run_which(const char *name, int *errnum);

#endif
