/* runner_spawn.c - the spawn runner: uv_spawn of gpumod-exec (docs/exec.md),
 * the leader of a new session and process group, so the helper's pid is
 * the pgid and kill(-pgid) reaches the engine and every worker it forks.
 * libuv makes the session (UV_PROCESS_DETACHED: setsid before exec, and
 * uv_spawn returns only after the exec), so the group exists as soon as
 * the spawn returns: a stop a millisecond later finds it.  Left to the
 * helper, the group would not exist until the helper ran, and a stop in
 * between would signal nothing.
 *
 * on_exit waits for both pipes to reach EOF (the output's last lines are
 * what explains an exit during load) but never longer than a short grace
 * after the exit: a descendant that escaped the group could hold a pipe
 * open for ever. */
#include "daemon/runner.h"

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/errf.h"

extern char **environ;

#define EXIT_GRACE_MS 250

typedef struct spawn_runner {
    runner r;
    uv_loop_t *loop;
    char *helper;
    struct run_handle *lingering; /* closed before their exit: reaped when it comes */
} spawn_runner;

struct run_handle {
    spawn_runner *sr;
    struct run_handle *next_linger;
    bool lingering;
    uv_process_t proc;
    uv_pipe_t out[2];
    uv_timer_t grace;
    int open_handles;
    int eofs;
    bool exited, delivered, closing;
    int code, sig;
    pid_t pid, engine;
    runner_spec spec;
};

static void handle_closed(uv_handle_t *h)
{
    run_handle *rh = h->data;
    if (--rh->open_handles == 0) free(rh);
}

static void deliver(run_handle *h)
{
    if (h->delivered || h->closing) return;
    h->delivered = true;
    uv_timer_stop(&h->grace);
    h->spec.on_exit(h->code, h->sig, h->spec.ud);
}

static void maybe_deliver(run_handle *h)
{
    if (h->exited && h->eofs >= 2) deliver(h);
}

static void on_alloc(uv_handle_t *h, size_t sugg, uv_buf_t *b)
{
    static char chunk[65536]; /* the loop is single-threaded; consumed before the next read */
    (void)h, (void)sugg;
    b->base = chunk;
    b->len = sizeof chunk;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    run_handle *h = s->data;
    if (n > 0) {
        if (!h->closing) h->spec.on_output(b->base, (size_t)n, h->spec.ud);
        return;
    }
    if (n < 0) {
        uv_read_stop(s);
        h->eofs++;
        maybe_deliver(h);
    }
}

static void on_grace(uv_timer_t *t)
{
    deliver(t->data);
}

static void unlinger(run_handle *h)
{
    for (run_handle **pp = &h->sr->lingering; *pp; pp = &(*pp)->next_linger)
        if (*pp == h) {
            *pp = h->next_linger;
            break;
        }
    h->lingering = false;
    uv_close((uv_handle_t *)&h->proc, handle_closed);
}

static void proc_exited(uv_process_t *p, int64_t status, int term_signal)
{
    run_handle *h = p->data;
    h->exited = true;
    if (h->lingering) { /* closed already: libuv has reaped it, let the handle go */
        unlinger(h);
        return;
    }
    if (term_signal) {
        h->code = -1;
        h->sig = term_signal;
    } else if (status > 128 && status < 128 + 65) {
        h->code = -1;
        h->sig = (int)(status - 128);
    } else {
        h->code = (int)status;
        h->sig = 0;
    }
    maybe_deliver(h);
    if (!h->delivered) uv_timer_start(&h->grace, on_grace, EXIT_GRACE_MS, 0);
}

static run_handle *sp_spawn(runner *r, const runner_spec *spec, char *err, size_t errlen)
{
    spawn_runner *sr = (spawn_runner *)r;
    strv args = STRV_INIT;
    strv_push(&args, sr->helper);
    strv_push(&args, "--parent-pid");
    strv_pushf(&args, "%d", (int)getpid());
    strv_push(&args, "--");
    strv_extend(&args, spec->argv);

    /* The daemon's own service-manager plumbing is not the service's: an
     * engine that saw NOTIFY_SOCKET could report READY=1 or STOPPING=1 for
     * gpumod, and one that saw LISTEN_FDS would take our sockets. */
    static const char *const not_inherited[] = {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS",
                                                "LISTEN_PID", "LISTEN_FDNAMES", NULL};
    strv env = STRV_INIT;
    for (char **e = environ; e && *e; e++) {
        bool skip = false;
        for (size_t k = 0; not_inherited[k]; k++) {
            size_t kl = strlen(not_inherited[k]);
            if (!strncmp(*e, not_inherited[k], kl) && (*e)[kl] == '=') skip = true;
        }
        if (!skip) strv_push(&env, *e);
    }
    for (size_t i = 0; i < spec->env->n; i++) {
        const char *kv = spec->env->v[i], *eq = strchr(kv, '=');
        if (!eq) continue;
        char *k = xstrndup(kv, (size_t)(eq - kv));
        strv_setenv(&env, k, eq + 1);
        free(k);
    }

    run_handle *h = xcalloc(1, sizeof *h);
    h->sr = sr;
    h->spec = *spec;
    uv_pipe_init(sr->loop, &h->out[0], 0);
    uv_pipe_init(sr->loop, &h->out[1], 0);
    uv_timer_init(sr->loop, &h->grace);
    h->out[0].data = h->out[1].data = h->grace.data = h->proc.data = h;
    h->open_handles = 3;

    uv_stdio_container_t stdio[3];
    stdio[0].flags = UV_IGNORE;
    stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[1].data.stream = (uv_stream_t *)&h->out[0];
    stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[2].data.stream = (uv_stream_t *)&h->out[1];
    uv_process_options_t o;
    memset(&o, 0, sizeof o);
    o.exit_cb = proc_exited;
    o.file = args.v[0];
    o.args = args.v;
    o.env = env.v;
    o.cwd = spec->cwd;
    o.stdio = stdio;
    o.stdio_count = 3;
    o.flags = UV_PROCESS_DETACHED; /* setsid in the child: the group exists on return */
    int rc = uv_spawn(sr->loop, &h->proc, &o);
    strv_release(&args);
    strv_release(&env);
    if (rc != 0) {
        errf(err, errlen, "cannot spawn '%s' for '%s': %s", sr->helper, spec->id ? spec->id : "?", uv_strerror(rc));
        h->closing = true;
        h->open_handles++; /* uv_spawn initialised the process handle: close it too */
        uv_close((uv_handle_t *)&h->proc, handle_closed);
        uv_close((uv_handle_t *)&h->out[0], handle_closed);
        uv_close((uv_handle_t *)&h->out[1], handle_closed);
        uv_close((uv_handle_t *)&h->grace, handle_closed);
        return NULL;
    }
    h->open_handles++;
    h->pid = h->proc.pid;
    uv_read_start((uv_stream_t *)&h->out[0], on_alloc, on_read);
    uv_read_start((uv_stream_t *)&h->out[1], on_alloc, on_read);
    return h;
}

static pid_t sp_pgid(run_handle *h)
{
    return h->pid;
}

/* The engine: the helper's only child (docs/exec.md). */
static pid_t sp_pid(run_handle *h)
{
    if (h->engine) return h->engine;
    char path[96], b[64] = "";
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)h->pid, (int)h->pid);
    FILE *f = fopen(path, "re");
    if (f) {
        if (!fgets(b, sizeof b, f)) b[0] = 0;
        fclose(f);
    }
    int e = atoi(b);
    if (e > 0) h->engine = e;
    return e > 0 ? e : h->pid;
}

/* Once the helper was reaped its pid (the pgid) may name another group:
 * ESRCH then, and the caller decides from a fresh /proc scan. */
static int sp_signal_group(run_handle *h, int sig)
{
    if (h->exited || h->pid <= 1) {
        errno = ESRCH;
        return -1;
    }
    return kill(-h->pid, sig);
}

static void sp_close(run_handle *h)
{
    if (!h || h->closing) return;
    h->closing = true;
    if (!h->exited) {
        /* closing the process handle now would take it off libuv's list of
         * children and leave the helper a zombie when it exits: keep it,
         * unreferenced (it holds no loop open), until its exit comes */
        h->lingering = true;
        h->next_linger = h->sr->lingering;
        h->sr->lingering = h;
        uv_unref((uv_handle_t *)&h->proc);
    } else {
        uv_close((uv_handle_t *)&h->proc, handle_closed);
    }
    uv_close((uv_handle_t *)&h->out[0], handle_closed);
    uv_close((uv_handle_t *)&h->out[1], handle_closed);
    uv_close((uv_handle_t *)&h->grace, handle_closed);
}

static void sp_free(runner *r)
{
    spawn_runner *sr = (spawn_runner *)r;
    while (sr->lingering) /* never exited: give the handles back to the loop */
        unlinger(sr->lingering);
    free(sr->helper);
    free(sr);
}

runner *runner_spawn_new(uv_loop_t *loop, const char *exec_helper)
{
    spawn_runner *sr = xcalloc(1, sizeof *sr);
    sr->loop = loop;
    sr->helper = xstrdup(exec_helper);
    sr->r.name = "spawn";
    sr->r.spawn = sp_spawn;
    sr->r.pid = sp_pid;
    sr->r.pgid = sp_pgid;
    sr->r.signal_group = sp_signal_group;
    sr->r.close = sp_close;
    sr->r.free = sp_free;
    return &sr->r;
}
