/* run.c - run a short program with a deadline, capture its output.
 *
 * fork + execve rather than posix_spawn, because the child needs more set
 * up than spawn attributes give portably: its own process group (so the
 * deadline kill reaches grandchildren too), default signal dispositions
 * and an empty mask (the daemon ignores SIGPIPE and blocks signals for
 * libuv), every inherited descriptor above 2 closed, and an error channel
 * that tells "could not exec" (ENOENT, EACCES) apart from "ran and
 * failed".  PATH is searched in the parent, before fork, so the child only
 * calls async-signal-safe functions.  The parent waits on a pidfd (Linux
 * 5.3) together with the output pipe; without one it polls waitpid every
 * 10 ms. */
#include "util/clock.h"
#include "util/errf.h"
#include "util/run.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { STAGE_DUP = 1, STAGE_CHDIR, STAGE_EXEC };

struct child_fail {
    int stage;
    int errnum;
};

/* strerror() in the project's lowercase style. */
static const char *errtext(int e, char *tmp, size_t n)
{
    snprintf(tmp, n, "%s", strerror(e));
    tmp[0] = (char)tolower((unsigned char)tmp[0]);
    return tmp;
}

static int exec_file(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0) return errno;
    if (!S_ISREG(st.st_mode)) return EACCES;
    if (access(path, X_OK) < 0) return errno;
    return 0;
}

char *run_which(const char *name, int *errnum)
{
    int dummy;
    if (!errnum) errnum = &dummy;
    if (!name || !*name) {
        *errnum = ENOENT;
        return NULL;
    }
    if (strchr(name, '/')) {
        int e = exec_file(name);
        if (e) {
            *errnum = e;
            return NULL;
        }
        return xstrdup(name);
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    int best = ENOENT;
    for (const char *p = path;;) {
        const char *end = strchrnul(p, ':');
        char *cand =
            end == p ? xasprintf("./%s", name) : xasprintf("%.*s/%s", (int)(end - p), p, name);
        int e = exec_file(cand);
        if (!e) return cand;
        if (e == EACCES) best = EACCES; /* like execvp: keep looking, remember */
        free(cand);
        if (!*end) break;
        p = end + 1;
    }
    *errnum = best;
    return NULL;
}

static void child_fail(int fd, int stage) __attribute__((noreturn));

static void child_fail(int fd, int stage)
{
    struct child_fail f = {stage, errno};
    ssize_t r = write(fd, &f, sizeof f);
    (void)r;
    _exit(127);
}

static void child_exec(const char *path, char *const argv[], char *const envp[], const char *cwd,
                       int devnull, int outw, int errw, int failw) __attribute__((noreturn));

/* After fork: only async-signal-safe calls from here on. */
static void child_exec(const char *path, char *const argv[], char *const envp[], const char *cwd,
                       int devnull, int outw, int errw, int failw)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setpgid(0, 0);
    if (dup2(devnull, 0) < 0 || dup2(outw, 1) < 0 || dup2(errw >= 0 ? errw : outw, 2) < 0)
        child_fail(failw, STAGE_DUP);
    if (cwd && chdir(cwd) < 0) child_fail(failw, STAGE_CHDIR);
#ifdef SYS_close_range
    /* CLOSE_RANGE_CLOEXEC (4): failw must survive until execve. */
    if (syscall(SYS_close_range, 3u, ~0u, 4u) < 0)
#endif
    {
        long max = sysconf(_SC_OPEN_MAX);
        if (max < 0 || max > 65536) max = 65536;
        for (int fd = 3; fd < max; fd++)
            fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    execve(path, argv, envp);
    child_fail(failw, STAGE_EXEC);
}

static int build_env(const strv *add, strv *envv, char *err, size_t errlen)
{
    for (char **e = environ; e && *e; e++)
        strv_push(envv, *e);
    for (size_t i = 0; add && i < add->n; i++) {
        const char *eq = strchr(add->v[i], '=');
        if (!eq || eq == add->v[i]) {
            errf(err, errlen, "environment entry '%s' is not KEY=VALUE", add->v[i]);
            return -1;
        }
        char *key = xstrndup(add->v[i], (size_t)(eq - add->v[i]));
        strv_setenv(envv, key, eq + 1);
        free(key);
    }
    return 0;
}

static void read_ready(int fd, buf *out, size_t cap, size_t *kept, bool *eof, bool *truncated)
{
    char chunk[16384];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK) *eof = true;
            return;
        }
        if (n == 0) {
            *eof = true;
            return;
        }
        size_t room = cap - *kept, take = (size_t)n < room ? (size_t)n : room;
        if (take && out) buf_add(out, chunk, take);
        *kept += take;
        if (take < (size_t)n) *truncated = true;
    }
}

static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
#else
    (void)pid;
    return -1;
#endif
}

static void reap_blocking(pid_t pid, int *status)
{
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
    }
}

/* Fork and exec argv[0] (found in PATH) with o's env and cwd, stdin
 * /dev/null, stdout a pipe: the child's pid with *outfd the pipe's read
 * end once the exec succeeded, or -1 with err and res->start_errno (an
 * exec that failed is reaped here). */
static pid_t spawn_child(char *const argv[], const run_opts *o, int *outfd, int *errfd, run_result *res,
                         int64_t t0, char *err, size_t errlen)
{
    const char *name = o->file ? o->file : argv[0];
    char et[128];
    int e = 0;
    char *path = run_which(name, &e);
    if (!path) {
        res->start_errno = e;
        errf(err, errlen, "'%s': %s", name, errtext(e, et, sizeof et));
        return -1;
    }
    strv envv = STRV_INIT;
    if (o->env && o->env->n && build_env(o->env, &envv, err, errlen) < 0) {
        res->start_errno = EINVAL;
        strv_release(&envv);
        free(path);
        return -1;
    }
    char *const *envp = envv.n ? envv.v : environ;

    int devnull = -1, outp[2] = {-1, -1}, errp[2] = {-1, -1}, failp[2] = {-1, -1};
    pid_t pid = -1;
    const char *what = "open /dev/null";
    if ((devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) goto sys_fail;
    what = "pipe";
    if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(failp, O_CLOEXEC) < 0) goto sys_fail;
    if (o->err_out && pipe2(errp, O_CLOEXEC) < 0) goto sys_fail;
    what = "fork";
    if ((pid = fork()) < 0) goto sys_fail;
    if (pid == 0) child_exec(path, argv, envp, o->cwd, devnull, outp[1], errp[1], failp[1]);

    setpgid(pid, pid); /* also in the parent: no window where -pid misses */
    close(devnull);
    close(outp[1]);
    if (errp[1] >= 0) close(errp[1]);
    close(failp[1]);
    free(path);
    strv_release(&envv);

    struct child_fail cf;
    ssize_t got;
    while ((got = read(failp[0], &cf, sizeof cf)) < 0 && errno == EINTR) {
    }
    close(failp[0]);
    if (got == (ssize_t)sizeof cf) {
        int status;
        close(outp[0]);
        if (errp[0] >= 0) close(errp[0]);
        reap_blocking(pid, &status);
        res->start_errno = cf.errnum;
        res->elapsed_ms = clock_mono_ms() - t0;
        if (cf.stage == STAGE_CHDIR)
            errf(err, errlen, "'%s': cannot change directory to '%s': %s", name, o->cwd,
                 errtext(cf.errnum, et, sizeof et));
        else
            errf(err, errlen, "'%s': %s", name, errtext(cf.errnum, et, sizeof et));
        return -1;
    }
    *outfd = outp[0];
    *errfd = errp[0];
    return pid;

sys_fail:
    e = errno;
    res->start_errno = e;
    errf(err, errlen, "'%s': %s: %s", name, what, errtext(e, et, sizeof et));
    if (devnull >= 0) close(devnull);
    for (int i = 0; i < 2; i++) {
        if (outp[i] >= 0) close(outp[i]);
        if (errp[i] >= 0) close(errp[i]);
        if (failp[i] >= 0) close(failp[i]);
    }
    free(path);
    strv_release(&envv);
    return -1;
}

/* One output pipe being drained into its buffer (up to the cap). */
typedef struct drain {
    int fd;
    buf *into;
    size_t kept;
    bool eof;
} drain;

static void drain_init(drain *d, int fd, buf *into)
{
    d->fd = fd;
    d->into = into;
    d->kept = 0;
    d->eof = fd < 0;
    if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Read the child's output (up to the cap; stderr apart when errfd >= 0)
 * until it is done and reaped or the deadline passes (res->timed_out:
 * its group is killed and reaped).  *status is the wait status; *lost
 * when SIGCHLD was ignored and the status is gone.  Closes the fds. */
static void collect(pid_t pid, int outfd, int errfd, const run_opts *o, int64_t t0, buf *out, run_result *res,
                    int *status, bool *lost)
{
    drain d[2];
    drain_init(&d[0], outfd, out);
    drain_init(&d[1], errfd, o->err_out);
    int pidfd = open_pidfd(pid);
    size_t cap = o->max_output ? o->max_output : (size_t)1 << 20;
    int64_t deadline = t0 + o->timeout_ms;
    bool reaped = false;
    *status = 0;
    *lost = false;

    while (!(d[0].eof && d[1].eof && reaped)) {
        int64_t left = deadline - clock_mono_ms();
        if (left <= 0) {
            res->timed_out = true;
            break;
        }
        if (o->cancel && *o->cancel) {
            res->cancelled = true;
            break;
        }
        if (o->cancel && left > 100) left = 100; /* to see the flag turn */
        struct pollfd pf[3];
        int n = 0, di[2] = {-1, -1};
        int tmo = left > INT_MAX ? INT_MAX : (int)left;
        for (int k = 0; k < 2; k++)
            if (!d[k].eof) {
                pf[n] = (struct pollfd){.fd = d[k].fd, .events = POLLIN};
                di[k] = n++;
            }
        if (!reaped) {
            if (pidfd >= 0)
                pf[n++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
            else if (tmo > 10)
                tmo = 10;
        }
        if (poll(pf, (nfds_t)n, tmo) < 0 && errno != EINTR) {
            res->timed_out = true; /* cannot wait any more: treat as the deadline */
            break;
        }
        for (int k = 0; k < 2; k++)
            if (di[k] >= 0 && pf[di[k]].revents)
                read_ready(d[k].fd, d[k].into, cap, &d[k].kept, &d[k].eof, &res->truncated);
        if (!reaped) {
            pid_t w = waitpid(pid, status, WNOHANG);
            if (w == pid) {
                reaped = true;
            } else if (w < 0 && errno != EINTR) {
                reaped = *lost = true; /* SIGCHLD ignored: the status is gone */
            }
        }
    }
    if (res->timed_out || res->cancelled) {
        kill(-pid, SIGKILL);
        if (!reaped) {
            kill(pid, SIGKILL);
            reap_blocking(pid, status);
        }
    }
    close(outfd);
    if (errfd >= 0) close(errfd);
    if (pidfd >= 0) close(pidfd);
}

int run_capture(char *const argv[], const run_opts *o, buf *out, run_result *res, char *err,
                size_t errlen)
{
    run_result local;
    if (!res) res = &local;
    memset(res, 0, sizeof *res);
    if (!argv || !argv[0] || !argv[0][0]) {
        res->start_errno = EINVAL;
        errf(err, errlen, "empty command");
        return -1;
    }
    if (!o || o->timeout_ms <= 0) {
        res->start_errno = EINVAL;
        errf(err, errlen, "'%s': no deadline given", argv[0]);
        return -1;
    }
    const char *name = argv[0];
    int64_t t0 = clock_mono_ms();
    int outfd = -1, errfd = -1;
    pid_t pid = spawn_child(argv, o, &outfd, &errfd, res, t0, err, errlen);
    if (pid < 0) return -1;
    int status;
    bool lost;
    collect(pid, outfd, errfd, o, t0, out, res, &status, &lost);
    res->elapsed_ms = clock_mono_ms() - t0;

    if (res->cancelled) {
        errf(err, errlen, "'%s' was cancelled after %lld ms (its group killed)", name, (long long)res->elapsed_ms);
        return -1;
    }
    if (res->timed_out) {
        errf(err, errlen, "'%s' timed out after %lld ms", name, (long long)o->timeout_ms);
        return -1;
    }
    if (lost) {
        errf(err, errlen, "'%s': its exit status was lost (SIGCHLD ignored?)", name);
        return -1;
    }
    if (WIFEXITED(status)) {
        res->exited = true;
        res->exit_code = WEXITSTATUS(status);
        if (res->exit_code == 0) return 0;
        errf(err, errlen, "'%s' exited with status %d", name, res->exit_code);
        return -1;
    }
    res->term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    errf(err, errlen, "'%s' was killed by signal %d", name, res->term_signal);
    return -1;
}
