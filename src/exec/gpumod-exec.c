/* gpumod-exec.c - the chain-loaded exec helper every service runs under.
 *
 *   gpumod-exec [--parent-pid PID] [--cwd DIR] [--log FILE]
 *               [--oom-score-adj N] [--no-kill-group-on-exit]
 *               [--forward-signals] [--reap-timeout MS] -- PROGRAM ARGS...
 *
 * libuv's uv_spawn has no pre-exec hook, so what must happen between fork
 * and exec happens here, in a separate tiny executable with no libraries:
 * it becomes a session and process-group leader, asks for a death signal
 * from the daemon (PR_SET_PDEATHSIG), becomes the subreaper of its subtree,
 * and forks the engine into its own group.  It then stays as the group's
 * supervisor (s6-supervise in miniature) until the engine is gone.
 *
 * Design decisions (docs/exec.md has the long form):
 *
 * - The daemon's death.  PR_SET_PDEATHSIG fires when the parent *thread*
 *   that forked us exits, not the parent process.  uv_spawn forks from the
 *   loop thread, which lives as long as the daemon, but we never trust the
 *   signal alone: on it (and on a 200 ms poll, in case it was lost) we
 *   compare getppid() with the daemon's pid.  A thread exit reparents us to
 *   another thread of the same process, so getppid() is unchanged and the
 *   signal is ignored; the kernel arms it again for the new parent thread.
 *   The death signal is SIGRTMIN: nothing else sends it, and it must be
 *   catchable (SIGKILL would kill us and leave the workers behind).
 *
 * - --parent-pid closes the race where the daemon dies between fork and
 *   prctl: after prctl we check that the parent is still the one that
 *   spawned us, and exit 125 without running anything if not.
 *
 * - Killing the group.  We are a member of the group we must kill, so
 *   kill(-pgid, SIGKILL) would kill us before we could reap and report.
 *   Instead we scan /proc and SIGKILL every other member of the group and
 *   every descendant (a worker that left the group with setsid is still our
 *   descendant; as a subreaper, orphans are reparented to us), through a
 *   pidfd checked after opening so that a recycled pid is never hit.  We
 *   repeat until we have no child left (ECHILD: every group member is our
 *   descendant, since the session is ours) or --reap-timeout passes.
 *
 * - SIGTERM/SIGINT/SIGHUP/SIGQUIT never kill the helper: the daemon stops a
 *   service with SIGTERM to the whole group, and the helper must outlive
 *   the engine to reap it, kill the leftovers and report the status.  They
 *   are not forwarded by default, because a group signal has already
 *   reached the engine and a second copy is harmful (llama-server exits 1
 *   on a second SIGTERM/SIGINT, "Received second interrupt"; uvicorn forces
 *   its exit).  --forward-signals forwards them, for runners that signal
 *   the main pid only (systemd's KillMode=mixed).  Only SIGKILL to the group
 *   (the daemon's last step) ends the helper early, and it ends the whole
 *   group with it in one kernel operation.
 *
 * - A signal that came before the engine existed (a stop right after the
 *   start) reached only the helper, and fork does not pass pending signals
 *   on.  So the child waits, signals still blocked, for a go-ahead on a
 *   pipe; the helper first forwards to it every signal it holds, then says
 *   go.  A group signal sent after the fork reached the child too, but a
 *   blocked standard signal is pending once however often it is sent: the
 *   engine sees one copy either way, and dies of it before its exec.
 *
 * - Exit status: the engine's exit code, or 128+N when a signal N killed
 *   it; 125 the helper itself failed (usage, --cwd, --log, --oom-score-adj,
 *   the parent already gone); 126 PROGRAM found but not executable; 127
 *   PROGRAM not found.  The exec failure is reported over a close-on-exec
 *   pipe, so an engine that itself exits 127 is not mistaken for it.
 *
 * - PROGRAM is searched in PATH like execvp, but with execve and never a
 *   shell: glibc's execvp runs a file without a #! line through /bin/sh,
 *   which is exactly the shell string gpumod must never build.
 *
 * - stdio: stdin/stdout/stderr are left as the daemon gave them (pipes that
 *   feed its ring buffer and log) unless --log names a file, which then
 *   takes stdout and stderr (O_APPEND, mode 0640). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef GPUMOD_VERSION
#define GPUMOD_VERSION "0.0.0"
#endif

#define EXIT_HELPER 125
#define EXIT_NOEXEC 126
#define EXIT_NOTFOUND 127

#define PARENT_POLL_MS 200      /* fallback check of getppid() */
#define KILL_SCAN_MS 20         /* rescan /proc this often while killing */
#define DEFAULT_REAP_MS 5000    /* CUDA teardown in D state can take seconds */
#define SCAN_MAX_PIDS (1 << 22) /* pid_max's ceiling: the scan is bounded */
#define GO_TIMEOUT_MS 10000     /* the helper says go right after the fork */

#define DEATH_SIG (SIGRTMIN)

extern char **environ;

typedef struct opts {
    pid_t parent; /* 0: getppid() at start */
    const char *cwd;
    const char *log;
    bool set_oom;
    int oom_adj;
    bool kill_group;
    bool forward;
    int reap_ms;
    char **argv; /* PROGRAM ARGS..., NULL-terminated */
} opts;

/* What the child reports over the close-on-exec pipe when it fails before
 * or at exec. */
enum { STAGE_EXEC = 1, STAGE_OOM = 2, STAGE_PARENT = 3 };
typedef struct child_fail {
    int stage;
    int err;
} child_fail;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n > sizeof msg - 2) n = (int)sizeof msg - 2;
    msg[n++] = '\n';
    /* one write, so lines of the helper and the engine do not interleave
     * mid-line; an EPIPE from a dead daemon is ignored (SIGPIPE is too) */
    ssize_t w = write(2, "gpumod-exec: ", 13);
    if (w >= 0) w = write(2, msg, (size_t)n);
    (void)w;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void usage(FILE *f)
{
    fputs("usage: gpumod-exec [options] -- PROGRAM [ARGS...]\n"
          "  --parent-pid PID         the daemon's pid; exit 125 at once if it is not our parent\n"
          "  --cwd DIR                run PROGRAM in DIR\n"
          "  --log FILE               append PROGRAM's stdout and stderr to FILE (mode 0640)\n"
          "  --oom-score-adj N        PROGRAM's oom_score_adj (-1000..1000)\n"
          "  --no-kill-group-on-exit  when PROGRAM exits, wait for the rest of the group\n"
          "                           instead of killing it\n"
          "  --forward-signals        forward SIGTERM/SIGINT/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2\n"
          "                           received by the helper to PROGRAM\n"
          "  --reap-timeout MS        how long to wait for killed processes (default 5000)\n"
          "exit: PROGRAM's code, 128+N if signal N killed it; 125 helper error;\n"
          "      126 not executable; 127 not found\n",
          f);
}

static bool parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* 0 ok, 1 --help/--version done, -1 usage error (printed) */
static int parse_opts(int argc, char **argv, opts *o)
{
    enum {
        O_PARENT = 256,
        O_CWD,
        O_LOG,
        O_OOM,
        O_KILL,
        O_NOKILL,
        O_FWD,
        O_REAP,
        O_HELP,
        O_VERSION
    };
    static const struct option longopts[] = {
        {"parent-pid", required_argument, NULL, O_PARENT},
        {"cwd", required_argument, NULL, O_CWD},
        {"log", required_argument, NULL, O_LOG},
        {"oom-score-adj", required_argument, NULL, O_OOM},
        {"kill-group-on-exit", no_argument, NULL, O_KILL},
        {"no-kill-group-on-exit", no_argument, NULL, O_NOKILL},
        {"forward-signals", no_argument, NULL, O_FWD},
        {"reap-timeout", required_argument, NULL, O_REAP},
        {"help", no_argument, NULL, O_HELP},
        {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0},
    };
    *o = (opts){.kill_group = true, .reap_ms = DEFAULT_REAP_MS};
    opterr = 0;
    int c, idx = 0;
    long v;
    /* "+": stop at PROGRAM, whose own options are not ours; ":": report a
     * missing value as such */
    while ((c = getopt_long(argc, argv, "+:", longopts, &idx)) != -1) {
        switch (c) {
        case O_PARENT:
            if (!parse_int(optarg, 1, INT_MAX, &v)) goto bad_value;
            o->parent = (pid_t)v;
            break;
        case O_CWD:
            o->cwd = optarg;
            break;
        case O_LOG:
            o->log = optarg;
            break;
        case O_OOM:
            if (!parse_int(optarg, -1000, 1000, &v)) goto bad_value;
            o->set_oom = true;
            o->oom_adj = (int)v;
            break;
        case O_KILL:
            o->kill_group = true;
            break;
        case O_NOKILL:
            o->kill_group = false;
            break;
        case O_FWD:
            o->forward = true;
            break;
        case O_REAP:
            if (!parse_int(optarg, 0, 3600000, &v)) goto bad_value;
            o->reap_ms = (int)v;
            break;
        case O_HELP:
            usage(stdout);
            return 1;
        case O_VERSION:
            printf("gpumod-exec %s\n", GPUMOD_VERSION);
            return 1;
        case ':':
            say("option '%s' needs a value", argv[optind - 1]); /* no value: it was the last word */
            return -1;
        default:
            say("unknown option '%s'", argv[optind - 1]);
            return -1;
        }
        continue;
    bad_value:
        say("bad value '%s' for option '--%s'", optarg, longopts[idx].name);
        return -1;
    }
    if (optind >= argc) {
        say("no program given");
        usage(stderr);
        return -1;
    }
    o->argv = argv + optind;
    return 0;
}

/* ---- the child: reset, then execve with our own PATH search ---- */

static _Noreturn void child_fail_exit(int fd, int stage, int err)
{
    child_fail f = {stage, err};
    ssize_t w = write(fd, &f, sizeof f);
    (void)w;
    _exit(EXIT_HELPER);
}

static int write_oom_adj(int v)
{
    char s[16];
    int n = snprintf(s, sizeof s, "%d", v);
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t w = write(fd, s, (size_t)n);
    int e = errno;
    close(fd);
    errno = e;
    return w == n ? 0 : -1;
}

/* execvp's search without its /bin/sh fallback for ENOEXEC.  Returns only
 * on failure, with the errno a shell would report. */
static int exec_search(char **argv)
{
    const char *file = argv[0];
    if (!*file) return ENOENT;
    if (strchr(file, '/')) {
        execve(file, argv, environ);
        return errno;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/bin:/usr/bin"; /* glibc's confstr default */
    int saved = ENOENT;
    size_t flen = strlen(file);
    for (const char *p = path;; p++) {
        const char *e = strchrnul(p, ':');
        size_t dlen = (size_t)(e - p);
        char full[PATH_MAX];
        if (dlen + 1 + flen + 1 > sizeof full) {
            saved = ENAMETOOLONG;
        } else {
            if (dlen == 0) { /* an empty element is the current directory */
                full[0] = '.';
                dlen = 1;
            } else {
                memcpy(full, p, dlen);
            }
            full[dlen] = '/';
            memcpy(full + dlen + 1, file, flen + 1);
            execve(full, argv, environ);
            switch (errno) {
            case EACCES:
                saved = EACCES;
                break; /* keep looking, report it at the end */
            case ENOENT:
            case ENOTDIR:
            case ELOOP:
            case ENAMETOOLONG:
                break;
            default:
                return errno; /* ENOEXEC, ETXTBSY, E2BIG...: found, but broken */
            }
        }
        if (!*e) break;
        p = e;
    }
    return saved;
}

/* Wait for the helper's go-ahead (it has forwarded what came before the
 * fork by then).  False when the helper died or never said it. */
static bool await_go(int gofd)
{
    struct pollfd p = {gofd, POLLIN, 0};
    int r;
    do
        r = poll(&p, 1, GO_TIMEOUT_MS);
    while (r < 0 && errno == EINTR);
    char c;
    return r == 1 && read(gofd, &c, 1) == 1;
}

static _Noreturn void run_child(const opts *o, pid_t helper, int errfd, int gofd)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &dfl, NULL); /* glibc-reserved ones fail: fine */
    /* the engine itself dies with us; its workers are the helper's job */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != helper) child_fail_exit(errfd, STAGE_PARENT, ESRCH);
    if (!await_go(gofd)) child_fail_exit(errfd, STAGE_PARENT, ESRCH);
    close(gofd);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (o->set_oom && write_oom_adj(o->oom_adj) < 0) child_fail_exit(errfd, STAGE_OOM, errno);
    child_fail_exit(errfd, STAGE_EXEC, exec_search(o->argv));
}

/* ---- /proc scan: kill the group and the subtree, never ourselves ---- */

typedef struct proc_ent {
    pid_t pid, ppid, pgid;
    char state;
} proc_ent;

static int read_stat(pid_t pid, proc_ent *e)
{
    char path[64], b[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, b, sizeof b - 1);
    close(fd);
    if (n <= 0) return -1;
    b[n] = 0;
    /* comm may hold ')' and spaces: the fields start after the last ')' */
    char *r = strrchr(b, ')');
    int ppid, pgid;
    char st;
    if (!r || sscanf(r + 1, " %c %d %d", &st, &ppid, &pgid) != 3) return -1;
    e->pid = pid;
    e->ppid = ppid;
    e->pgid = pgid;
    e->state = st;
    return 0;
}

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

static bool marked(const pid_t *set, size_t n, pid_t p)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == p) return true;
    return false;
}

/* SIGKILL e->pid if it is still what the scan saw: through a pidfd opened
 * before the check, so that a pid recycled since the scan is never hit. */
static void kill_checked(const proc_ent *e, pid_t self, const pid_t *desc, size_t ndesc)
{
    int fd = pidfd_open_(e->pid);
    if (fd < 0 && errno != ENOSYS) return; /* gone */
    proc_ent now;
    if (read_stat(e->pid, &now) == 0 && (now.pgid == self || marked(desc, ndesc, now.ppid))) {
#ifdef SYS_pidfd_send_signal
        if (fd >= 0)
            syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
        else
            kill(e->pid, SIGKILL);
#else
        kill(e->pid, SIGKILL);
#endif
    }
    if (fd >= 0) close(fd);
}

/* One pass: SIGKILL every live process of our group or subtree but us.
 * Returns how many it signalled. */
static int kill_others(pid_t self)
{
    DIR *d = opendir("/proc");
    if (!d) return 0;
    proc_ent *ents = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < SCAN_MAX_PIDS) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0 || pid == self) continue;
        proc_ent e;
        if (read_stat((pid_t)pid, &e) < 0) continue; /* vanished */
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            proc_ent *ne = realloc(ents, cap * sizeof *ents);
            if (!ne) break;
            ents = ne;
        }
        ents[n++] = e;
    }
    closedir(d);

    /* descendants: our children, theirs, ... (a fixed point over ppid) */
    pid_t *desc = malloc((n + 1) * sizeof *desc);
    size_t ndesc = 0;
    int killed = 0;
    if (desc) {
        desc[ndesc++] = self;
        for (bool grew = true; grew;) {
            grew = false;
            for (size_t i = 0; i < n; i++) {
                if (!marked(desc, ndesc, ents[i].ppid) || marked(desc, ndesc, ents[i].pid))
                    continue;
                desc[ndesc++] = ents[i].pid;
                grew = true;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        const proc_ent *e = &ents[i];
        if (e->state == 'Z' || e->state == 'X') continue;
        bool ours = e->pgid == self || (desc && marked(desc, ndesc, e->pid));
        if (!ours) continue;
        kill_checked(e, self, desc ? desc : &self, desc ? ndesc : 1);
        killed++;
    }
    free(desc);
    free(ents);
    return killed;
}

/* ---- the supervisor loop ---- */

typedef struct sup {
    opts o;
    pid_t self, parent, child;
    int sfd;   /* signalfd */
    int errfd; /* read end of the exec-failure pipe, -1 once closed */
    bool child_done;
    int child_status;
    bool exec_failed;
    child_fail fail;
} sup;

/* Reap every child that has exited.  True when we have no child left. */
static bool reap(sup *s)
{
    for (;;) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p > 0) {
            if (p == s->child) {
                s->child_done = true;
                s->child_status = st;
            }
            continue;
        }
        return p < 0 && errno == ECHILD;
    }
}

static bool parent_gone(const sup *s)
{
    return getppid() != s->parent;
}

static void read_errpipe(sup *s)
{
    if (s->errfd < 0) return;
    child_fail f;
    ssize_t n;
    do
        n = read(s->errfd, &f, sizeof f);
    while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN) return;
    if (n == (ssize_t)sizeof f) {
        s->exec_failed = true;
        s->fail = f;
    }
    close(s->errfd); /* EOF: exec succeeded (close-on-exec) */
    s->errfd = -1;
}

/* Wait up to ms for a signal or the exec pipe; handle what came.
 * Forwarding applies only while the main child runs. */
static void wait_events(sup *s, int ms)
{
    struct pollfd p[2] = {{s->sfd, POLLIN, 0}, {s->errfd, POLLIN, 0}};
    int r = poll(p, s->errfd >= 0 ? 2 : 1, ms);
    if (r <= 0) return;
    if (s->errfd >= 0 && p[1].revents) read_errpipe(s);
    struct signalfd_siginfo si;
    while (read(s->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD || sig == DEATH_SIG) continue; /* reap / getppid() do the work */
        if (s->o.forward && !s->child_done) kill(s->child, sig);
    }
}

/* Before the child's go-ahead: every signal the helper holds now may have
 * come before the fork, when it could not reach the engine, so it is
 * forwarded; one that came after the fork is pending in the blocked child
 * already, and the forwarded copy merges with it. */
static void pass_early_signals(sup *s)
{
    struct signalfd_siginfo si;
    while (read(s->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig != SIGCHLD && sig != DEATH_SIG) kill(s->child, sig);
    }
}

/* SIGKILL the group and subtree and reap it all, within --reap-timeout.
 * True when nothing is left. */
static bool kill_all(sup *s)
{
    int64_t deadline = now_ms() + s->o.reap_ms;
    for (;;) {
        if (reap(s)) return true;
        kill_others(s->self);
        if (reap(s)) return true;
        int64_t left = deadline - now_ms();
        if (left <= 0) return false;
        wait_events(s, left < KILL_SCAN_MS ? (int)left : KILL_SCAN_MS);
    }
}

static _Noreturn void on_parent_death(sup *s)
{
    say("parent %d died: killing process group %d", (int)s->parent, (int)s->self);
    if (!kill_all(s))
        say("processes of group %d still running after %d ms", (int)s->self, s->o.reap_ms);
    _exit(128 + SIGKILL);
}

static int status_code(int st)
{
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return EXIT_HELPER;
}

/* Make sure 0, 1 and 2 are open, so that no file we open lands on them. */
static void std_fds(void)
{
    for (int fd = 0; fd < 3; fd++) {
        if (fcntl(fd, F_GETFD) >= 0) continue;
        int n = open("/dev/null", O_RDWR);
        if (n >= 0 && n != fd) {
            dup2(n, fd);
            close(n);
        }
    }
}

/* Close every inherited fd above 2: the daemon's sockets and pipes must
 * not live on in the engine (an inherited listening socket or the other
 * end of a service's pipe would outlive the daemon). */
static void close_inherited(void)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0) return;
#endif
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        int dfd = dirfd(d);
        int fds[256];
        size_t n = 0;
        struct dirent *e;
        /* collect first: closing while reading the directory is undefined */
        while ((e = readdir(d)) && n < sizeof fds / sizeof *fds) {
            int fd = atoi(e->d_name);
            if (fd > 2 && fd != dfd) fds[n++] = fd;
        }
        closedir(d);
        for (size_t i = 0; i < n; i++)
            close(fds[i]);
        if (n < sizeof fds / sizeof *fds) return;
    }
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > (1 << 20)) max = 1 << 20;
    for (int fd = 3; fd < max; fd++)
        close(fd);
}

/* Block the signals we handle before anything can deliver them: the death
 * signal's default action would kill us before we could kill the group.
 * *set is what the signalfd will read. */
static void block_signals(sigset_t *set)
{
    sigemptyset(set);
    int handled[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof handled / sizeof *handled; i++)
        sigaddset(set, handled[i]);
    sigaddset(set, DEATH_SIG);
    sigprocmask(SIG_BLOCK, set, NULL);
    /* a dead daemon's stderr pipe must not kill us before we kill the group */
    signal(SIGPIPE, SIG_IGN);
}

/* Become the session leader, armed with the daemon's death signal and the
 * subreaper of our subtree.  0, or -1 with the reason said. */
static int take_session(sup *s)
{
    s->self = getpid();
    s->parent = s->o.parent ? s->o.parent : getppid();
    if (setsid() < 0 && getsid(0) != s->self) { /* uv's DETACHED already did it */
        say("setsid: %s", strerror(errno));
        return -1;
    }
    if (prctl(PR_SET_PDEATHSIG, DEATH_SIG) < 0) {
        say("prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
        return -1;
    }
    if (parent_gone(s)) {
        say("parent %d is gone (our parent is %d): not running '%s'", (int)s->parent,
            (int)getppid(), s->o.argv[0]);
        return -1;
    }
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
        say("prctl(PR_SET_CHILD_SUBREAPER): %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* Settle the fds and directory the engine inherits: 0-2 open, --log on 1
 * and 2, --cwd, nothing else of the daemon's.  0, or -1 with the reason said. */
static int prepare_files(const opts *o)
{
    std_fds();
    if (o->log) {
        int fd = open(o->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0640);
        if (fd < 0) {
            say("cannot open log '%s': %s", o->log, strerror(errno));
            return -1;
        }
        /* dup2 clears close-on-exec on 1 and 2 */
        if (dup2(fd, 1) < 0 || dup2(fd, 2) < 0) {
            say("cannot use log '%s': %s", o->log, strerror(errno));
            return -1;
        }
        close(fd);
    }
    if (o->cwd && chdir(o->cwd) < 0) {
        say("cannot change directory to '%s': %s", o->cwd, strerror(errno));
        return -1;
    }
    close_inherited();
    return 0;
}

/* Open the signalfd and the two pipes, fork the engine, pass it the
 * signals that came early and say go.  0, or -1 with the reason said. */
static int spawn(sup *s, const sigset_t *set)
{
    s->sfd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
    int pfd[2], gfd[2];
    if (s->sfd < 0 || pipe2(pfd, O_CLOEXEC) < 0 || pipe2(gfd, O_CLOEXEC) < 0) {
        say("signalfd/pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    s->child = fork();
    if (s->child < 0) {
        say("fork: %s", strerror(errno));
        return -1;
    }
    if (s->child == 0) { /* async-signal-safe from here: no malloc, no stdio */
        close(pfd[0]);
        close(gfd[1]);
        close(s->sfd);
        run_child(&s->o, s->self, pfd[1], gfd[0]);
    }
    close(pfd[1]);
    close(gfd[0]);
    s->errfd = pfd[0];
    fcntl(s->errfd, F_SETFL, O_NONBLOCK);
    pass_early_signals(s);
    ssize_t w = write(gfd[1], "g", 1); /* a dead child: EPIPE, ignored */
    (void)w;
    close(gfd[1]);
    return 0;
}

/* The engine runs: wait for it, watching the daemon; then read whether its
 * exec failed. */
static void supervise(sup *s)
{
    while (!s->child_done) {
        wait_events(s, PARENT_POLL_MS);
        if (parent_gone(s)) on_parent_death(s);
        reap(s);
    }
    /* the child is gone, so the pipe's write end is closed: this never blocks */
    fcntl(s->errfd, F_SETFL, 0);
    read_errpipe(s);
}

/* The exit status to report: the engine's, or the exec failure's (said). */
static int exit_code(const sup *s)
{
    int code = status_code(s->child_status);
    if (s->exec_failed) {
        int e = s->fail.err;
        switch (s->fail.stage) {
        case STAGE_EXEC:
            say("cannot run '%s': %s", s->o.argv[0], strerror(e));
            code = (e == ENOENT || e == ENOTDIR || e == ENAMETOOLONG) ? EXIT_NOTFOUND : EXIT_NOEXEC;
            break;
        case STAGE_OOM:
            say("cannot set oom_score_adj to %d: %s", s->o.oom_adj, strerror(e));
            code = EXIT_HELPER;
            break;
        default:
            code = EXIT_HELPER;
            break;
        }
    }
    return code;
}

/* The engine is gone: kill the rest of the group, or with
 * --no-kill-group-on-exit wait for it to finish. */
static void end_group(sup *s)
{
    if (s->o.kill_group) {
        if (!kill_all(s))
            say("processes of group %d still running after %d ms", (int)s->self, s->o.reap_ms);
    } else {
        /* leave the rest to finish, but keep guarding it: the daemon's
         * death still kills it all */
        while (!reap(s)) {
            wait_events(s, PARENT_POLL_MS);
            if (parent_gone(s)) on_parent_death(s);
        }
    }
}

int main(int argc, char **argv)
{
    sup s = {.errfd = -1};
    int r = parse_opts(argc, argv, &s.o);
    if (r) return r > 0 ? 0 : EXIT_HELPER;

    sigset_t set;
    block_signals(&set);
    if (take_session(&s) < 0) return EXIT_HELPER;
    if (prepare_files(&s.o) < 0) return EXIT_HELPER;
    if (spawn(&s, &set) < 0) return EXIT_HELPER;
    supervise(&s);
    int code = exit_code(&s);
    end_group(&s);
    return code;
}
