/* supervisor.c - the services of one daemon (supervisor.h).
 *
 * Every change of a service's state goes through feed(), which asks the
 * table of src/core/lifecycle.c and carries out the action the row names;
 * nothing here assigns a state.  Work that must wait (a snapshot on the
 * thread pool, a health probe, a process exit, a timer) carries the
 * service's generation, bumped whenever a start or a kill begins, so a
 * late answer for an operation that was overtaken is dropped.
 *
 * The load slot: one start at a time from admission (need + gate + port)
 * until the start ends (ready and measured, refused, or failed and its
 * group verified gone).  Restarts queue on it like any other start.
 *
 * Stops are verified: SIGTERM to the group, SIGKILL after stop_timeout,
 * then /proc scanned at once, again when the exec helper's exit is
 * reported (it exits only once its group is killed and reaped), and polled
 * after 2, 5, 10 and 20 ms, then every 50 ms (one proctree_scan per loop
 * turn shared by every service being stopped) until no member of the
 * group is left and a
 * fresh snapshot shows none of the pids seen in it holding GPU memory,
 * bounded by verify_freed_timeout (past it: a warning event, down anyway;
 * 0: no NVML wait).  A kill has its own generation (kill_gen): a stop
 * joining a kill already on its way changes nothing the kill waits for.
 * A group is signalled only when a scan just found members in it, so a
 * reaped helper's pgid (maybe reused) is never signalled.
 *
 * Docker presets are stopped by signals to the group like every other
 * driver (the `docker run` client in the group forwards them); the
 * `docker stop`/`docker rm` commands of driver_stop_argv are not run yet. */
#include "daemon/supervisor.h"
#include "core/policy.h"
#include "daemon/verdict.h"
#include "util/slurp.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "drivers/check.h"
#include "daemon/health.h"
#include "util/log.h"
#include "daemon/logring.h"
#include "daemon/runner.h"
#include "drivers/driver.h"
#include "drivers/hash.h"
#include "drivers/logscan.h"
#include "host/ports.h"
#include "host/proctree.h"
#include "daemon/need.h"
#include "util/clock.h"
#include "util/errf.h"
#include "util/redact.h"

#define PROBE_FIRST_MS 5
/* run_hash of an adopted unit that runs an older configuration than its
 * preset's (config_changed: a switch restarts it; no footprint stored) */
#define RUN_HASH_OLDER "older"
#define PROBE_CAP_MS 500
#define PROBE_LOAD_DEADLINE_MS 2000
#define KILL_POLL_MS 50 /* the steady poll; the first ones come sooner (kill_next_ms) */
#define KILL_AFTER_SIGKILL_MS 10000 /* verify_freed_timeout 0: how long SIGKILL gets */
#define VERIFY_RETRY_MS 100
#define MAX_SEEN 256
#define TAIL_LINES 10

typedef struct waiter {
    sup_cb cb;
    void *ud;
    struct waiter *next;
} waiter;

typedef struct sup_svc svc; /* a service's record: the handle supervisor.h lends */

struct sup_log_watch {
    char *id;
    sup_log_cb cb;
    void *ud;
    bool dead;
    sup_log_watch *next;
};

struct sup_svc {
    sup *s;
    char *id;
    const preset *p; /* its preset in s->cfg (bind_presets), NULL when no longer configured */
    svc *next_q; /* load-slot queue */
    uint64_t gen;

    bool timers;
    uv_timer_t t_start, t_probe, t_kill, t_restart;

    svc_state state;
    int64_t since_ms; /* wall clock */

    /* what it was started with (copied at admission) */
    int driver;
    char *host;
    int port;
    char *health_path;
    int64_t startup_timeout_ms, stop_timeout_ms, health_interval_ms, health_failures, verify_ms;
    restart_policy_v pol;
    char run_hash[65];

    /* the process */
    run_handle *h;
    bool exited;       /* on_exit came for h */
    bool exit_told;    /* systemd: the main process's exit was reported, its restart (or end) not yet */
    pid_t pgid, pid;
    uint64_t starttime;
    int64_t spawn_mono;
    logring *log;
    bool ran;          /* the start in progress (or the last one) spawned */
    uint64_t run_from; /* the ring's end when it did: where its output begins */
    logscan ls;
    int progress;
    health_probe *probe;
    uint64_t probe_gen; /* gen when the probe started; the probe's ud is the svc */
    int64_t probe_delay;
    int64_t ready_said;   /* mono ms when the engine's log said it is ready (this load); 0: not yet */
    int64_t expect_load_ms; /* the last measured load of this service; 0: none yet */
    int64_t fails;
    int64_t last_ok_ms;
    char probe_err[160];

    /* the start in progress (or the last one) */
    uint64_t seq;
    char origin[16];
    const char *outcome; /* static: pending ready refused failed cancelled */
    char *res_code, *res_msg;
    int64_t start_at_ms;
    waiter *starts, *stops;
    bool queued, slot, admitting;
    bool reserved;
    need admitted;
    bool has_admitted;
    /* MemAvailable of the admission snapshot (taken while this start held
     * the load slot): a unified device's footprint is the drop from it */
    uint64_t adm_mem_available;
    bool adm_meminfo_ok;
    /* the result a start gets when its kill completes (failed, stopped) */
    int pend_status;
    char *pend_code, *pend_msg;

    bool has_fp;
    footprint fp;
    int64_t load_ms;

    restart_history hist;
    int64_t next_restart_ms; /* wall; 0: none scheduled */
    int64_t attempt;

    bool has_exit;
    int exit_code, exit_sig;
    int64_t exit_ms;
    bool end_failed; /* the runner says the run ended failed (systemd gave up) */

    /* the kill in progress */
    bool killing;
    uint64_t kill_gen; /* bumped when a kill begins; the kill's snapshots carry it */
    int kill_phase; /* 0 SIGTERM sent, 1 SIGKILL sent, 2 verifying GPU memory */
    int kill_polls; /* polls since the last signal: picks the next delay */
    int64_t kill_t0, kill_deadline;
    pid_t seen[MAX_SEEN];
    size_t nseen;
};

struct sup {
    sup_env env;
    char *exec_helper, *proc_root, *run_dir;
    const config *cfg;
    runner *run;
    svc **svcs;
    size_t nsvcs;
    svc *q_head, *q_tail; /* waiting for the slot */
    svc *holder;
    uint64_t seq;
    int takes; /* hostmon takes in flight */
    sup_log_watch *watches;
    int watch_iter;
    bool shutting;
    bool hurry; /* sup_hurry: SIGKILL at once, no NVML wait */
    sup_guard_fn guard;
    void *guard_ud;
    int shut_pending;
    bool shut_closing;
    int closing_handles;
    void (*shut_cb)(void *ud);
    void *shut_ud;
    /* reconcile */
    bool recon_timer;
    uv_timer_t t_recon;
    struct recon_item *recon;
    size_t nrecon;
    bool recon_ports_done; /* the port pass ran (after the run files' groups were gone) */
    bool left_behind;      /* reconcile found run files: a previous daemon did not stop its services */
    void (*recon_cb)(void *ud);
    void *recon_ud;
    /* the /proc scan of this loop turn, shared by the kill polls */
    uint64_t scan_now;
    bool scan_valid;
    proctree_group_info *scan;
    size_t nscan;
};

/* ------------------------------------------------------------------ */
/* small things */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void json_ts(buf *b, int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char s[40];
    strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
    buf_printf(b, "\"%s.%03dZ\"", s, (int)(ms % 1000));
}

static void json_ts_or_null(buf *b, int64_t ms)
{
    if (ms > 0)
        json_ts(b, ms);
    else
        buf_adds(b, "null");
}

static void set_str(char **dst, const char *src)
{
    free(*dst);
    *dst = src ? xstrdup(src) : NULL;
}

static const preset *preset_of(const svc *v)
{
    return v->p;
}

static const settings *set_of(const sup *s)
{
    return &s->cfg->set;
}

static svc *find(sup *s, const char *id)
{
    for (size_t i = 0; i < s->nsvcs; i++)
        if (!strcmp(s->svcs[i]->id, id)) return s->svcs[i];
    return NULL;
}

static svc *add_svc(sup *s, const char *id)
{
    svc *v = xcalloc(1, sizeof *v);
    v->s = s;
    v->id = xstrdup(id);
    v->state = SVC_DOWN;
    v->since_ms = wall_ms();
    v->progress = -1;
    v->p = config_preset(s->cfg, id);
    s->svcs = xrealloc(s->svcs, (s->nsvcs + 1) * sizeof *s->svcs);
    s->svcs[s->nsvcs++] = v;
    return v;
}

static void ensure_timers(svc *v)
{
    if (v->timers) return;
    uv_loop_t *l = v->s->env.loop;
    uv_timer_init(l, &v->t_start);
    uv_timer_init(l, &v->t_probe);
    uv_timer_init(l, &v->t_kill);
    uv_timer_init(l, &v->t_restart);
    v->t_start.data = v->t_probe.data = v->t_kill.data = v->t_restart.data = v;
    v->timers = true;
}

/* ------------------------------------------------------------------ */
/* events */

static void emit(sup *s, const char *service, const char *kind, const char *from, const char *to,
                 const char *reason, const char *data)
{
    store_event e = {.ts_ms = wall_ms(), .service = service, .kind = kind, .from = from, .to = to,
                     .reason = reason, .data = data};
    if (s->env.st) {
        char err[256];
        if (store_event_add(s->env.st, &e, &e.id, err, sizeof err) != 0)
            log_warn("supervisor: cannot store a '%s' event of '%s': %s", kind, service ? service : "-", err);
    }
    if (s->env.on_event) s->env.on_event(&e, s->env.ud);
}

/* ------------------------------------------------------------------ */
/* results */

static void call_waiters(waiter *w, int status, const char *code, const char *msg, const char *detail)
{
    sup_result r = {.status = status, .code = code, .message = msg, .detail = detail};
    while (w) {
        waiter *n = w->next;
        if (w->cb) w->cb(&r, w->ud);
        free(w);
        w = n;
    }
}

static waiter *waiter_new(sup_cb cb, void *ud)
{
    waiter *w = xcalloc(1, sizeof *w);
    w->cb = cb;
    w->ud = ud;
    return w;
}

static void push_waiter(waiter **list, sup_cb cb, void *ud)
{
    waiter *w = waiter_new(cb, ud);
    while (*list) list = &(*list)->next;
    *list = w;
}

static void answer_now(sup_cb cb, void *ud, int status, const char *code, const char *msg, const char *detail)
{
    sup_result r = {.status = status, .code = code, .message = msg, .detail = detail};
    if (cb) cb(&r, ud);
}

static void slot_next(sup *s);
static void probe_step(uv_timer_t *t);
static void maybe_shutdown_done(sup *s);

/* The start ends: the ticket's outcome, the waiters, the slot. */
static void end_start(svc *v, const char *outcome, int status, const char *code, const char *msg,
                      const char *detail)
{
    sup *s = v->s;
    v->outcome = outcome;
    /* ready-and-measured released it already; any other end frees it too
     * (nothing of this start will load any more) */
    if (strcmp(outcome, "ready") != 0) v->reserved = false;
    set_str(&v->res_code, code);
    set_str(&v->res_msg, msg);
    if (v->queued) { /* still waiting in the queue: take it out */
        svc **pp = &s->q_head;
        while (*pp && *pp != v) pp = &(*pp)->next_q;
        if (*pp) *pp = v->next_q;
        s->q_tail = NULL;
        for (svc *q = s->q_head; q; q = q->next_q) s->q_tail = q;
        v->next_q = NULL;
        v->queued = false;
    }
    v->admitting = false;
    bool held = v->slot;
    v->slot = false;
    if (held && s->holder == v) s->holder = NULL;
    waiter *w = v->starts;
    v->starts = NULL;
    call_waiters(w, status, code, msg, detail);
    if (held) slot_next(s);
}

static void set_pending(svc *v, int status, const char *code, const char *msg)
{
    v->pend_status = status;
    set_str(&v->pend_code, code);
    set_str(&v->pend_msg, msg);
}

static void release_reservation(svc *v)
{
    v->reserved = false;
}

/* ------------------------------------------------------------------ */
/* the lifecycle */

static void act(svc *v, svc_state from, svc_event ev, svc_action a);

static bool feed(svc *v, svc_event ev, const char *words)
{
    svc_transition t;
    if (!lifecycle_step(v->state, ev, &t)) {
        log_warn("supervisor: '%s': event '%s' is not allowed in state '%s'; ignored", v->id, svc_event_names[ev],
                 svc_state_names[v->state]);
        return false;
    }
    svc_state from = v->state;
    v->state = t.next;
    if (t.next != from) {
        v->since_ms = wall_ms();
        buf r = BUF_INIT;
        buf_printf(&r, "%s: %s", svc_event_names[ev], words ? words : "");
        emit(v->s, v->id, "state", svc_state_names[from], svc_state_names[t.next], r.p, NULL);
        buf_release(&r);
    }
    act(v, from, ev, t.action);
    return true;
}

/* ------------------------------------------------------------------ */
/* run files: <run_dir>/<id>.pid holding "pgid starttime" */

static char *run_file(sup *s, const char *id)
{
    return s->run_dir ? xasprintf("%s/%s.pid", s->run_dir, id) : NULL;
}

static void run_file_write(svc *v)
{
    char *p = run_file(v->s, v->id);
    if (!p) return;
    mkdir(v->s->run_dir, 0700);
    char *tmp = xasprintf("%s.new", p);
    char why[128];
    /* on the loop: a FIFO planted at tmp must fail, not wait for a reader */
    int fd = slurp_open_append(tmp, O_CREAT | O_TRUNC, 0600, why, sizeof why);
    FILE *f = fd >= 0 ? fdopen(fd, "we") : NULL;
    if (f) {
        fprintf(f, "%d %llu\n", (int)v->pgid, (unsigned long long)v->starttime);
        if (fclose(f) == 0 && rename(tmp, p) == 0) {
            free(tmp);
            free(p);
            return;
        }
        snprintf(why, sizeof why, "%s", strerror(errno));
    } else if (fd >= 0) {
        snprintf(why, sizeof why, "%s", strerror(errno));
        close(fd);
    }
    log_warn("supervisor: cannot write run file '%s': %s", p, why);
    struct stat st; /* a leftover of ours goes; whatever else sits there stays */
    if (lstat(tmp, &st) == 0 && S_ISREG(st.st_mode)) unlink(tmp);
    free(tmp);
    free(p);
}

static void run_file_remove(svc *v)
{
    char *p = run_file(v->s, v->id);
    if (p) unlink(p);
    free(p);
}

/* ------------------------------------------------------------------ */
/* snapshots */

typedef struct take_ctx {
    svc *v;
    bool kill; /* compared with kill_gen, not gen */
    uint64_t gen;
    void (*fn)(svc *v, const snapshot *snap);
} take_ctx;

static void took(const snapshot *snap, void *ud)
{
    take_ctx *c = ud;
    sup *s = c->v->s;
    s->takes--;
    if (c->gen == (c->kill ? c->v->kill_gen : c->v->gen)) c->fn(c->v, snap);
    free(c);
    maybe_shutdown_done(s);
}

static void take_gen(svc *v, bool kill, void (*fn)(svc *v, const snapshot *snap))
{
    take_ctx *c = xcalloc(1, sizeof *c);
    c->v = v;
    c->kill = kill;
    c->gen = kill ? v->kill_gen : v->gen;
    c->fn = fn;
    v->s->takes++;
    hostmon_take(v->s->env.hm, took, c);
}

static void take(svc *v, void (*fn)(svc *v, const snapshot *snap))
{
    take_gen(v, false, fn);
}

/* ------------------------------------------------------------------ */
/* output */

static void on_output(const char *data, size_t len, void *ud)
{
    svc *v = ud;
    sup *s = v->s;
    if (v->log) logring_write(v->log, data, len);
    s->watch_iter++;
    for (sup_log_watch *w = s->watches; w; w = w->next)
        if (!w->dead && !strcmp(w->id, v->id)) w->cb(v->id, data, len, w->ud);
    s->watch_iter--;
    if (s->watch_iter == 0) {
        sup_log_watch **pp = &s->watches;
        while (*pp) {
            if ((*pp)->dead) {
                sup_log_watch *d = *pp;
                *pp = d->next;
                free(d->id);
                free(d);
            } else {
                pp = &(*pp)->next;
            }
        }
    }
    if (v->state != SVC_STARTING) return;
    unsigned bits = logscan_feed(&v->ls, data, len);
    if (bits & LOGSCAN_PROGRESS) v->progress = v->ls.progress_pct;
    if ((bits & LOGSCAN_READY) && v->timers) {
        /* the engine says it is ready: probe now instead of at the next
         * step (a probe already on its way is repeated at once should it
         * find the engine still loading: load_probed) */
        if (!v->ready_said) v->ready_said = clock_mono_ms();
        if (!v->probe) uv_timer_start(&v->t_probe, probe_step, 0, 0);
    }
}

/* The last lines of the output, redacted, as one string (caller frees):
 * real newlines and tabs kept (an API message shows the lines as lines;
 * the daemon's own log escapes them), other control bytes escaped. */
static char *log_tail(svc *v)
{
    if (!v->log) return xstrdup("");
    buf b = BUF_INIT;
    logring_tail(v->log, TAIL_LINES, &b);
    size_t n;
    char *red = redact_text(b.p, b.len, &n);
    buf_release(&b);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)red[i];
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
            buf_printf(&b, "\\x%02x", c);
        else
            buf_addc(&b, (char)c);
    }
    free(red);
    return buf_detach(&b);
}

/* ------------------------------------------------------------------ */
/* killing */

static void kill_poll(uv_timer_t *t);
static void kill_done(svc *v, const char *warning);

static void note_members(svc *v, const pid_t *pids, int n)
{
    for (int i = 0; i < n && i < 1024; i++) {
        bool have = false;
        for (size_t k = 0; k < v->nseen; k++)
            if (v->seen[k] == pids[i]) have = true;
        if (!have && v->nseen < MAX_SEEN) v->seen[v->nseen++] = pids[i];
    }
}

/* Signal the group only when a scan just found n > 0 members: the group
 * exists, so its pgid is still ours (a pgid stays taken while any member
 * lives). */
static void signal_group(svc *v, int sig, int n)
{
    /* a unit is stopped through systemd even while its main pid is not
     * known yet (ExecStartPre runs) */
    bool unit = v->s->run->owns_restarts && v->h && !v->exited;
    if (!unit && (v->pgid <= 1 || n <= 0)) return;
    int rc = -1;
    errno = ESRCH;
    if (v->h && !v->exited) rc = v->s->run->signal_group(v->h, sig);
    /* the helper is gone, members are not; a unit's processes are
     * systemd's, never signalled behind it (after a bus loss they run on) */
    if (rc != 0 && errno == ESRCH && v->pgid > 1 && n > 0 && !v->s->run->owns_restarts)
        rc = kill(-v->pgid, sig);
    if (rc != 0 && errno != ESRCH)
        log_warn("supervisor: '%s': cannot signal process group %d: %s", v->id, (int)v->pgid, strerror(errno));
}

static void stop_probe(svc *v)
{
    if (v->probe) health_cancel(v->probe);
    v->probe = NULL;
    if (v->timers) uv_timer_stop(&v->t_probe);
}

static void scan_drop(sup *s)
{
    proctree_scan_release(s->scan, s->nscan);
    free(s->scan);
    s->scan = NULL;
    s->nscan = 0;
    s->scan_valid = false;
}

/* The live members of v's group (at most max into pids), from one /proc
 * scan per loop turn covering every group being killed: at shutdown the
 * polls of all services fire together and share it. */
static int group_members(svc *v, pid_t *pids, int max)
{
    sup *s = v->s;
    if (v->pgid <= 0) return 0;
    uint64_t now = uv_now(s->env.loop);
    bool have = s->scan_valid && s->scan_now == now;
    size_t k = 0;
    if (have) {
        while (k < s->nscan && s->scan[k].pgid != v->pgid) k++;
        have = k < s->nscan;
    }
    if (!have) {
        scan_drop(s);
        pid_t *pg = xcalloc(s->nsvcs + 1, sizeof *pg);
        size_t n = 0;
        pg[n++] = v->pgid;
        for (size_t i = 0; i < s->nsvcs; i++)
            if (s->svcs[i] != v && s->svcs[i]->killing && s->svcs[i]->pgid > 0) pg[n++] = s->svcs[i]->pgid;
        s->scan = xcalloc(n, sizeof *s->scan);
        s->nscan = n;
        char err[256];
        if (proctree_scan(NULL, pg, n, s->scan, err, sizeof err) != 0) {
            log_warn("supervisor: '%s': %s", v->id, err);
            free(pg);
            scan_drop(s);
            /* fall back to the one group */
            int r = proctree_group(NULL, v->pgid, pids, (size_t)max, NULL, 0);
            return r < 0 ? 0 : r;
        }
        free(pg);
        s->scan_valid = true;
        s->scan_now = now;
        k = 0;
    }
    const proctree_group_info *g = &s->scan[k];
    int n = (int)g->n;
    for (int i = 0; i < n && i < max; i++) pids[i] = g->pids[i];
    return n;
}

/* The delay before the next kill poll: short right after a signal (a
 * group that heeds SIGTERM is gone within a few ms), then KILL_POLL_MS. */
static uint64_t kill_next_ms(svc *v)
{
    static const uint64_t first[] = {0, 2, 5, 10, 20};
    int k = v->kill_polls++;
    return k < (int)(sizeof first / sizeof *first) ? first[k] : KILL_POLL_MS;
}

static void kill_arm(svc *v)
{
    uv_timer_start(&v->t_kill, kill_poll, kill_next_ms(v), 0);
}

static int64_t after_sigkill_ms(const svc *v)
{
    return v->verify_ms > 0 ? v->verify_ms : KILL_AFTER_SIGKILL_MS;
}

static void begin_kill(svc *v)
{
    ensure_timers(v);
    /* Already on its way: nothing to add, and nothing the kill waits for
     * may be made stale (its snapshots carry kill_gen). */
    if (v->killing) return;
    v->gen++; /* answers for the start or health checks are stale now */
    v->kill_gen++;
    stop_probe(v);
    uv_timer_stop(&v->t_start);
    v->killing = true;
    v->kill_phase = 0;
    v->kill_t0 = clock_mono_ms();
    v->kill_polls = 0;
    v->nseen = 0;
    if (v->pgid > 1 || (v->s->run->owns_restarts && v->h)) {
        pid_t pids[1024];
        int n = v->pgid > 1 ? proctree_group(NULL, v->pgid, pids, 1024, NULL, 0) : 0;
        if (n < 0) n = 0;
        note_members(v, pids, n);
        if (v->s->hurry) {
            signal_group(v, SIGKILL, n);
            v->kill_phase = 1;
            v->kill_deadline = v->kill_t0 + after_sigkill_ms(v);
        } else {
            signal_group(v, SIGTERM, n);
        }
    }
    kill_arm(v); /* the first scan on the next loop turn */
}

static bool gpu_holds(const snapshot *snap, const svc *v, char *what, size_t len)
{
    for (size_t g = 0; g < snap->ngpus; g++)
        for (size_t i = 0; i < snap->gpus[g].nprocs; i++)
            for (size_t k = 0; k < v->nseen; k++)
                if ((pid_t)snap->gpus[g].procs[i].pid == v->seen[k]) {
                    snprintf(what, len, "pid %d still holds %llu MiB on GPU %d", (int)v->seen[k],
                             (unsigned long long)(snap->gpus[g].procs[i].used_bytes == UINT64_MAX
                                                      ? 0
                                                      : snap->gpus[g].procs[i].used_bytes >> 20),
                             snap->gpus[g].index);
                    return true;
                }
    return false;
}

static void verified(svc *v, const snapshot *snap)
{
    char what[160];
    if (v->s->hurry || !gpu_holds(snap, v, what, sizeof what)) {
        kill_done(v, NULL);
        return;
    }
    if (clock_mono_ms() >= v->kill_deadline) {
        char *w = xasprintf("stopped, but after verify_freed_timeout (%lld ms) %s", (long long)v->verify_ms, what);
        kill_done(v, w);
        free(w);
        return;
    }
    uv_timer_start(&v->t_kill, kill_poll, VERIFY_RETRY_MS, 0);
}

static void kill_poll(uv_timer_t *t)
{
    svc *v = t->data;
    sup *s = v->s;
    int64_t now = clock_mono_ms();
    if (v->kill_phase == 2) { /* the retry of a GPU memory check */
        if (s->hurry) {
            kill_done(v, NULL);
            return;
        }
        take_gen(v, true, verified);
        return;
    }
    pid_t pids[1024];
    int n = group_members(v, pids, 1024);
    if (n > 1024) n = 1024;
    note_members(v, pids, n);
    bool gone = n == 0 && (!v->h || v->exited);
    if (gone) {
        uv_timer_stop(&v->t_kill);
        const snapshot *last = hostmon_last(s->env.hm, NULL);
        if (v->nseen > 0 && last && last->nvml == NVML_OK && v->verify_ms > 0 && !s->hurry) {
            v->kill_phase = 2;
            v->kill_deadline = now + v->verify_ms;
            take_gen(v, true, verified);
        } else {
            kill_done(v, NULL);
        }
        return;
    }
    if (v->kill_phase == 0 && (s->hurry || now - v->kill_t0 >= v->stop_timeout_ms)) {
        if (n > 0)
            log_info("supervisor: '%s': still running %lld ms after SIGTERM: SIGKILL to process group %d", v->id,
                     (long long)(now - v->kill_t0), (int)v->pgid);
        signal_group(v, SIGKILL, n);
        v->kill_phase = 1;
        v->kill_polls = 1; /* the next scans come soon again */
        v->kill_deadline = now + after_sigkill_ms(v);
    } else if (v->kill_phase == 1 && now >= v->kill_deadline) {
        char *w = n > 0 ? xasprintf("stopped, but %d process(es) of group %d survived SIGKILL for %lld ms (pid %d)",
                                    n, (int)v->pgid, (long long)after_sigkill_ms(v), (int)pids[0])
                        : xasprintf("stopped, but the exec helper of group %d never reported its exit",
                                    (int)v->pgid);
        uv_timer_stop(&v->t_kill);
        kill_done(v, w);
        free(w);
        return;
    }
    kill_arm(v);
}

static void policy_restart(svc *v);
static void do_start(svc *v, const char *origin);

static void kill_done(svc *v, const char *warning)
{
    sup *s = v->s;
    int64_t took_ms = clock_mono_ms() - v->kill_t0;
    uv_timer_stop(&v->t_kill);
    v->killing = false;
    v->kill_gen++; /* a verify still in flight is over */
    v->kill_phase = 0;
    if (warning) {
        char *d = xasprintf("{\"pid\":%d,\"code\":null,\"signal\":null,\"warning\":true}", (int)v->pgid);
        emit(s, v->id, "exit", NULL, NULL, warning, d);
        free(d);
        log_warn("supervisor: '%s': %s", v->id, warning);
    }
    /* the runner reaps a helper that has not reported its exit yet */
    if (v->h) s->run->close(v->h);
    v->h = NULL;
    if (v->pgid > 0) run_file_remove(v);
    pid_t old = v->pgid;
    v->pgid = v->pid = 0;
    v->progress = -1;
    release_reservation(v);
    char words[128];
    if (old > 0)
        snprintf(words, sizeof words, "process group %d gone after %lld ms", (int)old, (long long)took_ms);
    else
        snprintf(words, sizeof words, "nothing was running");
    svc_state before = v->state;
    feed(v, EV_STOPPED, words);
    if (v->slot && before == SVC_UNHEALTHY) /* health failed while the footprint was being measured */
        end_start(v, "failed", 422, "start_failed", "health failed right after it became ready", NULL);
    /* what the stop ends */
    if (before == SVC_STOPPING || before == SVC_FAILED) {
        if (v->starts || v->slot || v->queued) {
            const char *outcome = before == SVC_FAILED || v->pend_status == 422 ? "failed" : "cancelled";
            end_start(v, outcome, v->pend_status ? v->pend_status : 409, v->pend_code ? v->pend_code : "conflict",
                      v->pend_msg ? v->pend_msg : "stopped before it was ready", NULL);
        }
        waiter *w = v->stops;
        v->stops = NULL;
        call_waiters(w, 200, NULL, NULL, NULL);
    }
    maybe_shutdown_done(s);
}

/* ------------------------------------------------------------------ */
/* readiness and health */

static void probe_step(uv_timer_t *t);

/* The footprint of a start that became ready.  Host: the summed RSS of
 * the process group.  Per GPU, how the figure is obtained (db.h
 * fp_gpu_how): NVML's per-process memory of the group's pids; where the
 * device has no such figure for them (NOT_AVAILABLE, or none listed) and
 * the admission counted it, a unified device's figure is the drop in
 * MemAvailable since the admission snapshot (one load at a time: the
 * start held the load slot) minus the RSS already counted, floored at 0,
 * and a discrete one's is the admitted bytes, which makes the footprint
 * partial.  Never a measured 0 that was not measured. */
static void measured(svc *v, const snapshot *snap)
{
    sup *s = v->s;
    /* one walk of /proc for the group's pids and RSS (a walk reads every
     * pid's stat: ~1-2 ms on a host with a few hundred processes) */
    pid_t pids[1024];
    size_t np = 0;
    uint64_t host = proctree_group_rss(NULL, v->pgid, pids, 1024, &np);
    int n = (int)np;
    footprint *f = &v->fp;
    memset(f, 0, sizeof *f);
    snprintf(f->hash, sizeof f->hash, "%s", v->run_hash);
    snprintf(f->service, sizeof f->service, "%s", v->id);
    f->measured_at_ms = wall_ms();
    f->host_bytes = host;
    bool delta_used = false; /* the pool's drop is counted once, on the first unified device */
    buf why = BUF_INIT;      /* per device, for the event's reason and the stored detail */
    for (size_t g = 0; g < snap->ngpus && f->ngpu < HOST_MAX_GPUS; g++) {
        const gpu_dev *dev = &snap->gpus[g];
        uint64_t sum = 0;
        bool any = false;
        for (size_t i = 0; i < dev->nprocs; i++)
            for (int k = 0; k < n; k++)
                if ((pid_t)dev->procs[i].pid == pids[k] && dev->procs[i].used_bytes != UINT64_MAX) {
                    sum += dev->procs[i].used_bytes;
                    any = true;
                }
        bool admitted = false;
        uint64_t adm_bytes = 0;
        for (size_t a = 0; v->has_admitted && a < v->admitted.ngpu; a++)
            if (v->admitted.gpu[a].index == dev->index) {
                admitted = true;
                adm_bytes = v->admitted.gpu[a].bytes;
            }
        if (!any && !admitted) continue;
        size_t j = f->ngpu++;
        f->gpu[j].index = dev->index;
        if (any) {
            f->gpu[j].bytes = sum;
            f->gpu[j].how = FP_GPU_NVML;
            buf_printf(&why, ", gpu %d %llu MiB (NVML per-process)", dev->index, (unsigned long long)(sum >> 20));
        } else if (dev->unified && !delta_used && v->adm_meminfo_ok && snap->host.meminfo_ok) {
            uint64_t before = v->adm_mem_available, after = snap->host.mem_available;
            uint64_t drop = before > after ? before - after : 0;
            f->gpu[j].bytes = drop > host ? drop - host : 0;
            f->gpu[j].how = FP_GPU_UNIFIED;
            delta_used = true;
            buf_printf(&why,
                       ", gpu %d %llu MiB (unified: MemAvailable delta: %llu MiB at admission - %llu MiB at ready"
                       " - %llu MiB RSS)",
                       dev->index, (unsigned long long)(f->gpu[j].bytes >> 20), (unsigned long long)(before >> 20),
                       (unsigned long long)(after >> 20), (unsigned long long)(host >> 20));
        } else {
            f->gpu[j].bytes = adm_bytes;
            f->gpu[j].how = FP_GPU_ADMITTED;
            buf_printf(&why, ", gpu %d %llu MiB (admitted: %s)", dev->index, (unsigned long long)(adm_bytes >> 20),
                       !dev->unified        ? "no per-process figure"
                       : delta_used         ? "unified, the pool's drop is counted on another device"
                                            : "unified, MemAvailable unreadable");
        }
    }
    snprintf(f->detail, sizeof f->detail, "%s%s", footprint_partial(f) ? "partial: " : "",
             why.len > 2 ? why.p + 2 : "no GPU");
    v->has_fp = true;
    char err[256];
    if (s->env.st && v->run_hash[0] && strcmp(v->run_hash, RUN_HASH_OLDER) != 0 &&
        store_footprint_put(s->env.st, f, err, sizeof err) != 0)
        log_warn("supervisor: '%s': cannot store the footprint: %s", v->id, err);
    buf d = BUF_INIT;
    buf_printf(&d, "{\"host_bytes\":%llu,\"gpu_bytes\":{", (unsigned long long)f->host_bytes);
    for (size_t g = 0; g < f->ngpu; g++)
        buf_printf(&d, "%s\"%d\":%llu", g ? "," : "", f->gpu[g].index, (unsigned long long)f->gpu[g].bytes);
    buf_adds(&d, "},\"gpu_how\":{");
    for (size_t g = 0; g < f->ngpu; g++)
        buf_printf(&d, "%s\"%d\":\"%s\"", g ? "," : "", f->gpu[g].index, fp_gpu_how_names[f->gpu[g].how]);
    buf_printf(&d, "},\"partial\":%s,\"detail\":", footprint_partial(f) ? "true" : "false");
    buf_json_str(&d, f->detail);
    if (v->adm_meminfo_ok)
        buf_printf(&d, ",\"admission_mem_available_bytes\":%llu", (unsigned long long)v->adm_mem_available);
    else
        buf_adds(&d, ",\"admission_mem_available_bytes\":null");
    if (snap->host.meminfo_ok)
        buf_printf(&d, ",\"ready_mem_available_bytes\":%llu", (unsigned long long)snap->host.mem_available);
    else
        buf_adds(&d, ",\"ready_mem_available_bytes\":null");
    buf_printf(&d, ",\"load_ms\":%lld,\"config_hash\":", (long long)v->load_ms);
    buf_json_str(&d, v->run_hash);
    buf_adds(&d, "}");
    char *words = xasprintf("measured %llu MiB host over %d process(es)%s%s", (unsigned long long)(host >> 20), n,
                            why.p ? why.p : "", footprint_partial(f) ? " (partial)" : "");
    emit(s, v->id, "footprint", NULL, NULL, words, d.p);
    free(words);
    buf_release(&why);
    buf_release(&d);
    release_reservation(v);
    end_start(v, "ready", 200, NULL, NULL, NULL);
}

static void health_tick(svc *v);

static void became_ready(svc *v)
{
    v->load_ms = clock_mono_ms() - v->spawn_mono;
    v->expect_load_ms = v->load_ms;
    uv_timer_stop(&v->t_start);
    if (v->h) v->pid = v->s->run->pid(v->h); /* the engine, for the exit event and the JSON */
    v->fails = 0;
    v->last_ok_ms = wall_ms();
    v->progress = 100;
    char words[64];
    snprintf(words, sizeof words, "ready after %lld ms", (long long)v->load_ms);
    feed(v, EV_READY, words);
    if (v->state != SVC_READY) return;
    health_tick(v);
    take(v, measured);
}

/* The wait before the next probe of a loading engine (probe_wait_ms,
 * core/lifecycle.h: short near the load's end). */
static int64_t probe_wait(const svc *v)
{
    int64_t now = clock_mono_ms();
    return probe_wait_ms(v->probe_delay, now - v->spawn_mono, v->expect_load_ms,
                         v->ready_said ? now - v->ready_said : -1);
}

/* A probe's ud is its svc (nothing to free when it is cancelled); gen
 * says whether the answer is still wanted. */
static void load_probed(int status, const char *err, void *ud)
{
    svc *v = ud;
    if (v->probe_gen != v->gen) return;
    v->probe = NULL;
    if (v->state != SVC_STARTING) return;
    if (status == 200 && v->pgid > 0) {
        became_ready(v);
        return;
    }
    if (status == 200) /* a unit's main pid is not known yet: the footprint would have no group */
        snprintf(v->probe_err, sizeof v->probe_err, "status 200, main pid not known yet");
    else if (status)
        snprintf(v->probe_err, sizeof v->probe_err, "status %d", status);
    else
        snprintf(v->probe_err, sizeof v->probe_err, "%s", err ? err : "no answer");
    v->probe_delay = v->probe_delay * 2 > PROBE_CAP_MS ? PROBE_CAP_MS : v->probe_delay * 2;
    uv_timer_start(&v->t_probe, probe_step, (uint64_t)probe_wait(v), 0);
}

static void ready_probed(int status, const char *err, void *ud);

static void fail_spawn(svc *v, const char *msg);

static void probe_step(uv_timer_t *t)
{
    svc *v = t->data;
    if (v->probe) return;
    char e[256];
    bool loading = v->state == SVC_STARTING;
    int64_t deadline = loading ? PROBE_LOAD_DEADLINE_MS : (v->health_interval_ms < 5000 ? v->health_interval_ms : 5000);
    v->probe_gen = v->gen;
    v->probe = health_get(v->s->env.loop, v->host, v->port, v->health_path, deadline,
                          loading ? load_probed : ready_probed, v, e, sizeof e);
    if (v->probe) return;
    /* admission checked the host; should it still be unusable, say so now
     * instead of holding the load slot until startup_timeout */
    char *m = xasprintf("cannot probe the health of '%s': %s", v->id, e);
    log_warn("supervisor: %s", m);
    if (loading)
        fail_spawn(v, m);
    else if (v->state == SVC_READY || v->state == SVC_UNHEALTHY)
        ready_probed(0, m, v);
    free(m);
}

static void health_tick(svc *v)
{
    if (v->driver == DRV_REMOTE) return;
    uv_timer_start(&v->t_probe, probe_step, (uint64_t)v->health_interval_ms, 0);
}

static void ready_probed(int status, const char *err, void *ud)
{
    svc *v = ud;
    if (v->probe_gen != v->gen) return;
    v->probe = NULL;
    if (v->state != SVC_READY && v->state != SVC_UNHEALTHY) return;
    if (status == 200) {
        v->fails = 0;
        v->last_ok_ms = wall_ms();
        feed(v, EV_HEALTH_OK, "health probe answered 200");
    } else {
        v->fails++;
        char why[200];
        if (status)
            snprintf(why, sizeof why, "status %d", status);
        else
            snprintf(why, sizeof why, "%s", err ? err : "no answer");
        log_info("supervisor: '%s': health probe %lld/%lld failed: %s", v->id, (long long)v->fails,
                 (long long)v->health_failures, why);
        if (v->fails >= v->health_failures) {
            char words[320];
            snprintf(words, sizeof words, "%lld health probes in a row failed (last: %s)", (long long)v->fails, why);
            v->fails = 0;
            feed(v, EV_HEALTH_FAILED, words);
            return;
        }
    }
    if (v->state == SVC_READY) health_tick(v);
}

static void start_timed_out(uv_timer_t *t)
{
    svc *v = t->data;
    if (v->state != SVC_STARTING || !v->h) return;
    char *tail = log_tail(v);
    char *msg = xasprintf("'%s' was not ready after startup_timeout %lld ms (last probe: %s); log tail:\n%s", v->id,
                          (long long)v->startup_timeout_ms, v->probe_err[0] ? v->probe_err : "none", tail);
    set_pending(v, 422, "start_failed", msg);
    char words[96];
    snprintf(words, sizeof words, "not ready after %lld ms", (long long)v->startup_timeout_ms);
    feed(v, EV_START_TIMEOUT, words);
    free(tail);
    free(msg);
}

/* ------------------------------------------------------------------ */
/* exits */

static void on_exit_cb(int code, int sig, void *ud)
{
    svc *v = ud;
    sup *s = v->s;
    v->exited = true;
    v->has_exit = true;
    v->exit_code = code;
    v->exit_sig = sig;
    v->exit_ms = wall_ms();
    char fixed[128], cs[16] = "null", ss[16] = "null";
    if (code >= 0) snprintf(cs, sizeof cs, "%d", code);
    if (sig) snprintf(ss, sizeof ss, "%d", sig);
    snprintf(fixed, sizeof fixed, "{\"code\":%s,\"signal\":%s,\"pid\":%d}", cs, ss, (int)(v->pid ? v->pid : v->pgid));
    char words[640];
    const char *why = s->run->end_reason ? s->run->end_reason(v->h, &v->end_failed) : NULL;
    if (!why) v->end_failed = false;
    bool detached = s->run->detached && s->run->detached(v->h);
    if (why && sig)
        snprintf(words, sizeof words, "killed by signal %d (%s): %s", sig, strsignal(sig), why);
    else if (why && code >= 0)
        snprintf(words, sizeof words, "exited with code %d: %s", code, why);
    else if (why)
        snprintf(words, sizeof words, "%s", why);
    else if (sig)
        snprintf(words, sizeof words, "killed by signal %d (%s)", sig, strsignal(sig));
    else
        snprintf(words, sizeof words, "exited with code %d", code);
    emit(s, v->id, "exit", NULL, NULL, words, fixed);
    v->exit_told = false;
    if (detached) {
        /* the unit runs on (systemd's bus went): its processes are not
         * ours to wait for nor to signal */
        run_file_remove(v);
        v->pgid = v->pid = 0;
    }

    if (v->killing) {
        /* expected: the helper exits only once its group is killed and
         * reaped (docs/exec.md), so look now rather than at the next poll
         * (on the next loop turn, outside the runner's callback; a scan
         * of this loop turn is stale now) */
        s->scan_valid = false;
        if (v->kill_phase != 2 && v->timers) {
            v->kill_polls = 1;
            uv_timer_start(&v->t_kill, kill_poll, 0, 0);
        }
        return;
    }
    if (v->state == SVC_STARTING) {
        char *tail = log_tail(v);
        char *msg = xasprintf("'%s' %s during load; log tail:\n%s", v->id, words, tail);
        set_pending(v, 422, "start_failed", msg);
        char w2[700];
        snprintf(w2, sizeof w2, "%s during load", words);
        feed(v, EV_EXITED, w2);
        free(tail);
        free(msg);
        return;
    }
    if (v->state == SVC_READY || v->state == SVC_UNHEALTHY) {
        /* the helper killed and reaped what was left of the group before
         * it exited (docs/exec.md): the process is over */
        v->gen++;
        stop_probe(v);
        if (v->slot) /* it exited while its footprint was being measured */
            end_start(v, "failed", 422, "start_failed", "exited right after it became ready", NULL);
        s->run->close(v->h);
        v->h = NULL;
        run_file_remove(v);
        v->pgid = v->pid = 0;
        char w2[700];
        snprintf(w2, sizeof w2, "%s while %s", words, svc_state_names[v->state]);
        feed(v, EV_EXITED, w2);
        return;
    }
    /* failed already, or down: nothing else to do */
}

static void adopt_units(sup *s, bool again);

/* The systemd runner reconnected after it lost the bus: the units that
 * ran on are adopted again. */
static void bus_back(void *ud)
{
    adopt_units(ud, true);
}

/* A runner that owns restarts (systemd): the main process changed. */
static void loading_again(svc *v)
{
    v->spawn_mono = clock_mono_ms();
    v->probe_err[0] = 0;
    v->progress = -1;
    logscan_init(&v->ls, v->driver);
    v->ready_said = 0;
    ensure_timers(v);
    uv_timer_start(&v->t_start, start_timed_out, (uint64_t)v->startup_timeout_ms, 0);
    v->probe_delay = PROBE_FIRST_MS;
    uv_timer_start(&v->t_probe, probe_step, PROBE_FIRST_MS, 0);
}

static void on_respawn_cb(pid_t pid, int64_t restarts, int code, int sig, void *ud)
{
    svc *v = ud;
    sup *s = v->s;
    if (v->killing) {
        if (pid > 0) v->pgid = s->run->pgid(v->h);
        return;
    }
    if (pid > 0) {
        v->exit_told = false;
        v->pid = pid;
        v->pgid = s->run->pgid(v->h);
        if (v->pgid <= 0) v->pgid = pid;
        v->starttime = proctree_starttime(NULL, v->pgid);
        run_file_write(v);
        if (restarts == 0) return; /* the first main process of this start */
        char words[128];
        snprintf(words, sizeof words, "systemd restarted it: main pid %d (NRestarts +%lld)", (int)pid,
                 (long long)restarts);
        if (v->state != SVC_STARTING) { /* the exit went unseen between two reads */
            v->gen++;
            stop_probe(v);
            feed(v, EV_RESPAWNED, words);
        }
        loading_again(v);
        return;
    }
    /* the main process exited: systemd restarts the unit (restarts > 0)
     * or decides still (restarts < 0: other processes of the unit linger,
     * it deactivates; the restart or the end follows) */
    char fixed[128], cs[16] = "null", ss[16] = "null", words[160];
    if (code >= 0) snprintf(cs, sizeof cs, "%d", code);
    if (sig) snprintf(ss, sizeof ss, "%d", sig);
    snprintf(fixed, sizeof fixed, "{\"code\":%s,\"signal\":%s,\"pid\":%d}", cs, ss, (int)(v->pid ? v->pid : v->pgid));
    if (sig)
        snprintf(words, sizeof words, "killed by signal %d (%s)", sig, strsignal(sig));
    else
        snprintf(words, sizeof words, "exited with code %d", code);
    if (!v->exit_told) {
        v->has_exit = true;
        v->exit_code = code;
        v->exit_sig = sig;
        v->exit_ms = wall_ms();
        emit(s, v->id, "exit", NULL, NULL, words, fixed);
    }
    if (restarts < 0) {
        v->exit_told = true;
        run_file_remove(v);
        v->pgid = v->pid = 0;
        v->gen++;
        stop_probe(v);
        if (v->slot && v->state == SVC_READY)
            end_start(v, "failed", 422, "start_failed", "exited right after it became ready", NULL);
        if (v->timers) uv_timer_stop(&v->t_start);
        char dw[240];
        snprintf(dw, sizeof dw, "%s; the unit deactivates (its other processes end): systemd restarts it or gives up",
                 words);
        feed(v, EV_RESPAWNED, dw);
        return;
    }
    v->exit_told = false;
    char data[160], rw[200];
    snprintf(data, sizeof data, "{\"attempt\":%lld,\"by\":\"systemd\"}", (long long)restarts);
    snprintf(rw, sizeof rw, "%s; systemd restarts it (restart %lld, Restart=on-failure)", words, (long long)restarts);
    emit(s, v->id, "restart", NULL, NULL, rw, data);
    v->attempt = restarts;
    run_file_remove(v);
    v->pgid = v->pid = 0;
    v->gen++;
    stop_probe(v);
    if (v->slot && v->state == SVC_READY) /* it exited while its footprint was being measured */
        end_start(v, "failed", 422, "start_failed", "exited right after it became ready", NULL);
    if (v->timers) uv_timer_stop(&v->t_start); /* the new main process gets its own startup_timeout */
    feed(v, EV_RESPAWNED, rw);
}

/* ------------------------------------------------------------------ */
/* admission and spawning */

static void fail_spawn(svc *v, const char *msg)
{
    set_pending(v, 422, "start_failed", msg);
    feed(v, EV_EXITED, msg); /* starting -> failed; the kill finds nothing and ends the start */
}

static void copy_running(svc *v, const preset *p, const settings *st)
{
    v->driver = p->driver;
    set_str(&v->host, driver_host(p));
    v->port = (int)p->port;
    set_str(&v->health_path, driver_health_path(p));
    v->startup_timeout_ms = p->startup_timeout_ms > 0 ? p->startup_timeout_ms : st->supervisor.startup_timeout_ms;
    v->stop_timeout_ms = st->supervisor.stop_timeout_ms;
    v->health_interval_ms = st->supervisor.health_interval_ms > 0 ? st->supervisor.health_interval_ms : 5000;
    v->health_failures = st->supervisor.health_failures > 0 ? st->supervisor.health_failures : 1;
    v->verify_ms = st->memory.verify_freed_timeout_ms > 0 ? st->memory.verify_freed_timeout_ms : 60000;
    const restart_policy *pr = &p->restart, *sr = &st->supervisor.restart;
    v->pol.max_restarts = pr->max_restarts >= 0 ? pr->max_restarts : sr->max_restarts;
    v->pol.window_ms = pr->window_ms >= 0 ? pr->window_ms : sr->window_ms;
    v->pol.backoff_initial_ms = pr->backoff_initial_ms >= 0 ? pr->backoff_initial_ms : sr->backoff_initial_ms;
    v->pol.backoff_max_ms = pr->backoff_max_ms >= 0 ? pr->backoff_max_ms : sr->backoff_max_ms;
}

static void open_log(svc *v, const settings *st)
{
    if (v->log) return;
    const char *dir = st->log_dir;
    char *d = dir ? xstrdup(dir) : xasprintf("%s/logs", st->state_dir ? st->state_dir : ".");
    mkdir(d, 0750);
    char *path = xasprintf("%s/%s.log", d, v->id);
    v->log = logring_new(path, st->supervisor.log_max_mb * 1024 * 1024, st->supervisor.log_keep);
    if (logring_error(v->log)[0]) log_warn("supervisor: '%s': %s", v->id, logring_error(v->log));
    free(path);
    free(d);
}

static void spawn_it(svc *v, const preset *p)
{
    sup *s = v->s;
    const settings *st = set_of(s);
    char err[512];
    launch l = LAUNCH_INIT;
    if (driver_launch(p, st, &l, err, sizeof err) != 0) {
        char *m = xasprintf("cannot build the command of '%s': %s", v->id, err);
        fail_spawn(v, m);
        free(m);
        return;
    }
    char *bin = find_program(l.argv.v[0]);
    if (!bin) {
        char *m = xasprintf("cannot start '%s': program '%s' not found in PATH", v->id, l.argv.v[0]);
        fail_spawn(v, m);
        free(m);
        launch_release(&l);
        return;
    }
    free(l.argv.v[0]);
    l.argv.v[0] = bin;

    open_log(v, st);
    v->ran = true;
    v->run_from = v->log ? logring_end(v->log) : 0;
    logscan_init(&v->ls, p->driver);
    v->ready_said = 0;
    v->progress = -1;
    v->exited = false;
    v->probe_err[0] = 0;
    runner_spec rs = {.argv = &l.argv, .env = &l.env, .cwd = l.cwd, .id = v->id,
                      .on_output = on_output, .on_exit = on_exit_cb,
                      .on_respawn = s->run->owns_restarts ? on_respawn_cb : NULL, .ud = v};
    v->h = s->run->spawn(s->run, &rs, err, sizeof err);
    if (!v->h) {
        fail_spawn(v, err);
        launch_release(&l);
        return;
    }
    v->pgid = s->run->pgid(v->h);
    v->pid = v->pgid;
    v->starttime = proctree_starttime(NULL, v->pgid);
    v->spawn_mono = clock_mono_ms();
    run_file_write(v);

    strv shown = STRV_INIT;
    strv_copy(&shown, &l.argv);
    redact_argv(&shown);
    for (size_t i = 0; i < shown.n; i++) { /* "sh -c '... HF_TOKEN=x ...'", "-H 'Authorization: Bearer x'" */
        char *t = redact_text(shown.v[i], strlen(shown.v[i]), NULL);
        free(shown.v[i]);
        shown.v[i] = t;
    }
    buf d = BUF_INIT;
    buf_printf(&d, "{\"pid\":%d,\"pgid\":%d,\"argv\":[", (int)v->pgid, (int)v->pgid);
    for (size_t i = 0; i < shown.n; i++) {
        if (i) buf_addc(&d, ',');
        buf_json_str(&d, shown.v[i]);
    }
    buf_adds(&d, "],\"origin\":");
    buf_json_str(&d, v->origin);
    buf_adds(&d, "}");
    char words[96];
    if (v->pgid > 0)
        snprintf(words, sizeof words, "spawned process group %d", (int)v->pgid);
    else /* a unit: its main pid comes once systemd ran ExecStartPre */
        snprintf(words, sizeof words, "started as a %s unit", s->run->name);
    emit(s, v->id, "spawn", NULL, NULL, words, d.p);
    buf_release(&d);
    strv_release(&shown);
    launch_release(&l);

    uv_timer_start(&v->t_start, start_timed_out, (uint64_t)v->startup_timeout_ms, 0);
    v->probe_delay = PROBE_FIRST_MS;
    uv_timer_start(&v->t_probe, probe_step, PROBE_FIRST_MS, 0);
}

/* ports_owner reads /proc/net/tcp and tcp6, which the kernel makes by
 * walking its whole connection hash (~5 ms each on a VM with a big one)
 * even when the port is free.  A bind test tells "free" in microseconds:
 * bind(2) with SO_REUSEADDR fails with EADDRINUSE while any LISTEN socket
 * holds the port on this address or a wildcard covering it.  Only "both
 * binds worked" is trusted, and only where ports_owner would read the real
 * /proc (not a GPUMOD_PROC_ROOT fixture with a net/ directory); every
 * other outcome (in use, EACCES below 1024, an IPv6 literal, a name) goes
 * to ports_owner as before.  The second bind, [::] IPv6-only, makes it
 * conservative: any IPv6 listener on the port sends the check to /proc. */
static bool bind_ok(int family, const void *addr, uint16_t port)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return family == AF_INET6 && errno == EAFNOSUPPORT; /* no IPv6: no IPv6 listener */
    int one = 1;
    bool ok = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0;
    if (ok && family == AF_INET) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
        memcpy(&sa.sin_addr, addr, 4);
        ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    } else if (ok) {
        struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = in6addr_any};
        ok = setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) == 0 &&
             bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    }
    close(fd);
    return ok;
}

/* ports_owner reads the real /proc (not a GPUMOD_PROC_ROOT fixture with
 * a net/ directory): the pids it names are real processes. */
static bool ports_read_real_proc(const sup *s)
{
    if (s->proc_root && *s->proc_root) return false;
    const char *e = getenv("GPUMOD_PROC_ROOT");
    if (e && *e) {
        char net[4096];
        struct stat st;
        snprintf(net, sizeof net, "%s/net", e);
        if (stat(net, &st) == 0) return false;
    }
    return true;
}

static bool port_surely_free(const sup *s, const char *host, int port)
{
    if (port <= 0 || port > 65535) return false;
    if (!ports_read_real_proc(s)) return false; /* a fixture: ports_owner reads it */
    struct in_addr a4 = {.s_addr = htonl(INADDR_ANY)};
    if (host && *host && strcmp(host, "::") != 0 && inet_pton(AF_INET, host, &a4) != 1) return false;
    return bind_ok(AF_INET, &a4, (uint16_t)port) && bind_ok(AF_INET6, NULL, (uint16_t)port);
}

static void refuse(svc *v, int status, const char *code, const char *msg, const char *detail, const char *words)
{
    feed(v, EV_REFUSED, words);
    release_reservation(v);
    end_start(v, "refused", status, code, msg, detail);
}

static void admit_with(svc *v, const snapshot *snap)
{
    sup *s = v->s;
    v->admitting = false;
    if (v->state != SVC_STARTING) return;
    const preset *p = preset_of(v);
    if (!p) {
        char *m = xasprintf("service '%s' is not configured any more", v->id);
        refuse(v, 404, "not_found", m, NULL, "no longer configured");
        free(m);
        return;
    }
    const settings *st = set_of(s);
    copy_running(v, p, st);
    char err[512];
    if (health_check_host(v->host, err, sizeof err) != 0) {
        char *m = xasprintf("cannot start '%s': %s", v->id, err);
        refuse(v, 422, "start_failed", m, NULL, "host not usable");
        free(m);
        return;
    }
    if (config_hash(p, st, v->run_hash, NULL, err, sizeof err) != 0) v->run_hash[0] = 0;

    need_detail nd;
    memset(&nd, 0, sizeof nd);
    if (service_need(p, st, snap, s->env.st, &nd, err, sizeof err) != 0) {
        char *m = xasprintf("cannot tell what '%s' needs: %s", v->id, err);
        refuse(v, 422, "need_unknown", m, NULL, "need unknown");
        free(m);
        return;
    }
    reservation res[64];
    size_t nres = sup_reservations(s, res, 64);
    gate_policy pol;
    policy_from_settings(st, &pol);
    verdict vd;
    gate_check(snap, &nd.n, res, nres, v->id, &pol, &vd);
    buf vj = BUF_INIT;
    verdict_json(&vj, "daemon", v->id, &vd, &nd, snap);
    emit(s, v->id, "gate", NULL, NULL, vd.ok ? "admitted" : vd.reason, vj.p);
    if (!vd.ok) {
        char *m = xasprintf("refused: '%s': %s", v->id, vd.reason);
        char *w = xasprintf("gate refused: %s", vd.reason);
        refuse(v, 409, "gate_refused", m, vj.p, w);
        free(m);
        free(w);
        buf_release(&vj);
        return;
    }
    buf_release(&vj);

    port_owner o;
    int held = v->port > 0 && !port_surely_free(s, v->host, v->port)
                   ? ports_owner(s->proc_root, v->host, (uint16_t)v->port, &o, err, sizeof err)
                   : 0;
    if (held < 0) log_warn("supervisor: '%s': cannot check port %d: %s", v->id, v->port, err);
    if (held == 1) {
        char desc[512];
        ports_describe(&o, desc, sizeof desc);
        char *m = xasprintf("refused: '%s': %s", v->id, desc);
        buf d = BUF_INIT;
        buf_printf(&d, "{\"pid\":%d,\"cmdline\":", (int)o.pid);
        buf_json_str(&d, o.cmdline);
        buf_printf(&d, ",\"port\":%d}", v->port);
        refuse(v, 409, "port_held", m, d.p, desc);
        buf_release(&d);
        free(m);
        return;
    }
    v->admitted = nd.n;
    v->has_admitted = true;
    v->adm_mem_available = snap->host.mem_available;
    v->adm_meminfo_ok = snap->host.meminfo_ok;
    v->reserved = true;
    spawn_it(v, p);
}

static void admit(svc *v)
{
    sup *s = v->s;
    const preset *p = preset_of(v);
    if (p && p->driver == DRV_REMOTE) {
        /* remote: no process, no port, no gate; ready as soon as asked */
        copy_running(v, p, set_of(s));
        v->run_hash[0] = 0;
        v->spawn_mono = clock_mono_ms();
        v->load_ms = 0;
        if (!feed(v, EV_READY, "remote service: nothing runs here") || v->state != SVC_READY) {
            char *m = xasprintf("'%s' is %s, not ready", v->id, svc_state_names[v->state]);
            end_start(v, "cancelled", 409, "conflict", m, NULL);
            free(m);
            return;
        }
        end_start(v, "ready", 200, NULL, NULL, NULL);
        return;
    }
    v->admitting = true;
    take(v, admit_with);
}

static void slot_next(sup *s)
{
    while (!s->holder && s->q_head) {
        svc *v = s->q_head;
        s->q_head = v->next_q;
        if (!s->q_head) s->q_tail = NULL;
        v->next_q = NULL;
        v->queued = false;
        s->holder = v;
        v->slot = true;
        admit(v);
    }
}

static void enqueue(svc *v)
{
    sup *s = v->s;
    const preset *p = preset_of(v);
    if (p && p->driver == DRV_REMOTE) { /* nothing loads: no slot */
        admit(v);
        return;
    }
    v->queued = true;
    v->next_q = NULL;
    if (s->q_tail)
        s->q_tail->next_q = v;
    else
        s->q_head = v;
    s->q_tail = v;
    slot_next(s);
}

/* ------------------------------------------------------------------ */
/* restarts */

/* The restart timer is cancelled (a stop, the watchdog, shutdown): a
 * start that joined while the service was unhealthy waits on that restart
 * and is answered here, or never. */
static void cancel_restart(svc *v, int status, const char *code, const char *msg)
{
    if (v->timers) uv_timer_stop(&v->t_restart);
    v->next_restart_ms = 0;
    if (v->starts && (v->state == SVC_DOWN || v->state == SVC_FAILED) && !v->killing)
        end_start(v, "cancelled", status, code, msg, NULL);
}

static void cancel_restart_for(svc *v, const char *by)
{
    if (v->s->shutting) {
        cancel_restart(v, 503, "shutting_down", "the daemon is shutting down");
        return;
    }
    char *m = xasprintf("the restart of '%s' was cancelled by %s", v->id, by);
    cancel_restart(v, 409, "conflict", m);
    free(m);
}

static void restart_fire(uv_timer_t *t)
{
    svc *v = t->data;
    v->next_restart_ms = 0;
    if (v->state != SVC_DOWN || v->s->shutting) {
        cancel_restart_for(v, "a state change");
        return;
    }
    do_start(v, "restart");
}

static void policy_restart(svc *v)
{
    restart_decision d;
    restart_decide(&v->pol, &v->hist, clock_mono_ms(), &d);
    if (!d.restart || v->s->shutting) {
        char words[160];
        snprintf(words, sizeof words, "restarts exhausted: %lld in %lld ms (max_restarts %lld)", (long long)d.in_window,
                 (long long)v->pol.window_ms, (long long)v->pol.max_restarts);
        if (v->s->shutting) snprintf(words, sizeof words, "daemon shutting down: no restart");
        if (!v->s->shutting) feed(v, EV_GIVE_UP, words);
        /* a start waiting on the restart (joined while unhealthy) ends here */
        if (v->starts) {
            if (v->s->shutting)
                end_start(v, "cancelled", 503, "shutting_down", "the daemon is shutting down", NULL);
            else
                end_start(v, "failed", 422, "start_failed", words, NULL);
        }
        return;
    }
    v->attempt++;
    char data[160], words[96];
    snprintf(data, sizeof data, "{\"attempt\":%lld,\"in_window\":%lld,\"delay_ms\":%lld}", (long long)v->attempt,
             (long long)d.in_window + 1, (long long)d.delay_ms);
    snprintf(words, sizeof words, "restart %lld in %lld ms", (long long)v->attempt, (long long)d.delay_ms);
    emit(v->s, v->id, "restart", NULL, NULL, words, data);
    v->next_restart_ms = wall_ms() + d.delay_ms;
    ensure_timers(v);
    uv_timer_start(&v->t_restart, restart_fire, (uint64_t)d.delay_ms, 0);
}

/* ------------------------------------------------------------------ */

static void act(svc *v, svc_state from, svc_event ev, svc_action a)
{
    switch (a) {
    case ACT_ADMIT:
        enqueue(v);
        break;
    case ACT_KILL:
        begin_kill(v);
        break;
    case ACT_RESTART:
        if (v->state == SVC_UNHEALTHY)
            begin_kill(v); /* the restart: kill first; the policy asks when the group is gone */
        else if (ev == EV_EXITED && v->s->run->owns_restarts) {
            /* systemd saw the exit and did not restart it (on_respawn
             * would have come): it ended for good */
            if (v->end_failed) feed(v, EV_GIVE_UP, "systemd gave up on the unit");
        } else
            policy_restart(v); /* a health failure: systemd cannot see it, the daemon restarts */
        break;
    default:
        break;
    }
}

/* A new start (ticket) through the lifecycle. */
static void do_start(svc *v, const char *origin)
{
    sup *s = v->s;
    ensure_timers(v);
    v->gen++;
    uv_timer_stop(&v->t_restart);
    v->next_restart_ms = 0;
    bool joined = !strcmp(origin, "restart") && v->starts && v->outcome && !strcmp(v->outcome, "pending");
    if (!joined) { /* else: the ticket of a start that joined while unhealthy carries on */
        v->seq = ++s->seq;
        snprintf(v->origin, sizeof v->origin, "%s", origin);
    }
    v->outcome = "pending";
    set_str(&v->res_code, NULL);
    set_str(&v->res_msg, NULL);
    set_pending(v, 0, NULL, NULL);
    v->start_at_ms = wall_ms();
    v->run_hash[0] = 0; /* set at admission, from the config of that moment */
    v->ran = false;
    if (strcmp(origin, "restart") != 0) { /* a person (or a switch) asked: a fresh policy window */
        memset(&v->hist, 0, sizeof v->hist);
        v->attempt = 0;
    }
    char words[64];
    snprintf(words, sizeof words, "requested by %s", origin);
    feed(v, EV_START, words);
}

bool sup_left_behind(const sup *s)
{
    return s->left_behind;
}

void sup_set_start_guard(sup *s, sup_guard_fn fn, void *ud)
{
    s->guard = fn;
    s->guard_ud = ud;
}

/* The guard said no: cb answered with its refusal.  True then. */
static bool guarded(sup *s, const char *id, const char *origin, sup_cb cb, void *ud)
{
    sup_refusal r = {0};
    if (!s->guard || s->guard(id, origin, &r, s->guard_ud) == 0) return false;
    answer_now(cb, ud, r.status, r.code, r.message, r.detail);
    free(r.message);
    free(r.detail);
    return true;
}

bool sup_origin_is_person(const char *origin)
{
    return !origin || !strcmp(origin, "cli") || !strcmp(origin, "api");
}

sup_svc *sup_lookup(sup *s, const char *id)
{
    return id ? find(s, id) : NULL;
}

const char *sup_svc_id(const sup_svc *v)
{
    return v->id;
}

static void answer_not_configured(sup_cb cb, void *ud, const char *id)
{
    char *m = xasprintf("no service '%s' is configured", id);
    answer_now(cb, ud, 404, "not_found", m, NULL);
    free(m);
}

uint64_t sup_start(sup *s, const char *id, const char *origin, sup_cb cb, void *ud)
{
    svc *v = find(s, id);
    if (!v) {
        answer_not_configured(cb, ud, id);
        return 0;
    }
    return sup_start_svc(s, v, origin, cb, ud);
}

uint64_t sup_start_svc(sup *s, sup_svc *v, const char *origin, sup_cb cb, void *ud)
{
    const char *id = v->id;
    if (!v->p && (v->state == SVC_DOWN || v->state == SVC_FAILED)) {
        answer_not_configured(cb, ud, id);
        return 0;
    }
    if (s->shutting) {
        answer_now(cb, ud, 503, "shutting_down", "the daemon is shutting down", NULL);
        return 0;
    }
    switch (v->state) {
    case SVC_READY: {
        v->seq = ++s->seq;
        v->outcome = "ready";
        set_str(&v->res_code, NULL);
        set_str(&v->res_msg, NULL);
        v->start_at_ms = wall_ms();
        answer_now(cb, ud, 200, NULL, NULL, NULL);
        return v->seq;
    }
    case SVC_STARTING:
        push_waiter(&v->starts, cb, ud);
        return v->seq;
    case SVC_UNHEALTHY:
        /* joins the restart under way: a ticket of its own (the last one
         * says "ready" already), which the restart's start keeps */
        if (!v->outcome || strcmp(v->outcome, "pending") != 0) {
            v->seq = ++s->seq;
            snprintf(v->origin, sizeof v->origin, "%s", origin ? origin : "api");
            v->outcome = "pending";
            set_str(&v->res_code, NULL);
            set_str(&v->res_msg, NULL);
            v->start_at_ms = wall_ms();
        }
        push_waiter(&v->starts, cb, ud);
        return v->seq;
    case SVC_STOPPING: {
        char *m = xasprintf("'%s' is stopping; start it again once it is down", id);
        answer_now(cb, ud, 409, "conflict", m, NULL);
        free(m);
        return 0;
    }
    default:
        break;
    }
    if (v->killing) { /* failed and its group is still being killed */
        char *m = xasprintf("'%s' failed and is still being cleaned up; try again in a moment", id);
        answer_now(cb, ud, 409, "conflict", m, NULL);
        free(m);
        return 0;
    }
    if (v->state == SVC_FAILED && !sup_origin_is_person(origin)) {
        char *m = xasprintf("service '%s' failed; a person must start it", id);
        answer_now(cb, ud, 409, "conflict", m, NULL);
        free(m);
        return 0;
    }
    if (guarded(s, id, origin, cb, ud)) return 0;
    push_waiter(&v->starts, cb, ud);
    do_start(v, origin ? origin : "api");
    return v->seq;
}

void sup_stop(sup *s, const char *id, const char *origin, sup_cb cb, void *ud)
{
    svc *v = find(s, id);
    if (!v)
        answer_not_configured(cb, ud, id);
    else
        sup_stop_svc(s, v, origin, cb, ud);
}

void sup_stop_svc(sup *s, sup_svc *v, const char *origin, sup_cb cb, void *ud)
{
    const char *id = v->id;
    char words[64], by[48];
    snprintf(by, sizeof by, "a stop (%s)", origin ? origin : "api");
    cancel_restart_for(v, by);
    snprintf(words, sizeof words, "requested by %s", origin ? origin : "api");
    switch (v->state) {
    case SVC_DOWN:
        feed(v, EV_STOP, words);
        answer_now(cb, ud, 200, NULL, NULL, NULL);
        return;
    case SVC_FAILED:
        if (v->killing) {
            push_waiter(&v->stops, cb, ud);
        } else {
            feed(v, EV_STOP, words);
            answer_now(cb, ud, 200, NULL, NULL, NULL);
        }
        return;
    case SVC_STOPPING:
        push_waiter(&v->stops, cb, ud);
        return;
    case SVC_STARTING:
        if (!v->h) {
            set_pending(v, s->shutting ? 503 : 409, s->shutting ? "shutting_down" : "conflict",
                        s->shutting ? "the daemon is shutting down" : "stopped before it started");
        } else {
            char *m = xasprintf("'%s' was stopped during load (by %s)", id, origin ? origin : "api");
            set_pending(v, s->shutting ? 503 : 409, s->shutting ? "shutting_down" : "conflict", m);
            free(m);
        }
        break;
    default:
        break;
    }
    push_waiter(&v->stops, cb, ud);
    feed(v, EV_STOP, words);
}

typedef struct restart_ctx {
    sup *s;
    char *id, *origin;
    sup_cb cb;
    void *ud;
} restart_ctx;

static void restart_stopped(const sup_result *r, void *ud)
{
    restart_ctx *c = ud;
    if (r->status != 200)
        answer_now(c->cb, c->ud, r->status, r->code, r->message, r->detail);
    else
        sup_start(c->s, c->id, c->origin, c->cb, c->ud);
    free(c->id);
    free(c->origin);
    free(c);
}

void sup_restart(sup *s, const char *id, const char *origin, sup_cb cb, void *ud)
{
    if (find(s, id) && guarded(s, id, origin, cb, ud)) return;
    restart_ctx *c = xcalloc(1, sizeof *c);
    c->s = s;
    c->id = xstrdup(id);
    c->origin = xstrdup(origin ? origin : "api");
    c->cb = cb;
    c->ud = ud;
    sup_stop(s, id, origin, restart_stopped, c);
}

void sup_watchdog_stop(sup *s, const char *id, const char *reason, const char *data_json)
{
    svc *v = find(s, id);
    emit(s, id, "watchdog", NULL, NULL, reason, data_json);
    if (!v) return;
    if (v->state == SVC_STARTING || (v->state == SVC_READY && v->slot)) {
        /* during load, or while its footprint is measured: the start ends
         * 422 with the watchdog's reason */
        char *m = xasprintf("'%s' was stopped by the memory watchdog during load: %s", id, reason);
        set_pending(v, 422, "start_failed", m);
        free(m);
    }
    {
        char *m = xasprintf("'%s' was stopped by the memory watchdog: %s", id, reason);
        cancel_restart(v, s->shutting ? 503 : 422, s->shutting ? "shutting_down" : "start_failed",
                       s->shutting ? "the daemon is shutting down" : m);
        free(m);
    }
    char *w = xasprintf("memory watchdog: %s", reason);
    feed(v, EV_WATCHDOG, w);
    free(w);
}

/* ------------------------------------------------------------------ */
/* construction, config */

/* Every configured preset has a record (a handle that lives until
 * sup_free), and every record its preset of s->cfg: the one place a
 * service's id is looked up in the configuration. */
static void bind_presets(sup *s)
{
    for (size_t i = 0; i < s->nsvcs; i++) s->svcs[i]->p = NULL;
    for (size_t i = 0; i < s->cfg->n_presets; i++) {
        const preset *p = &s->cfg->presets[i];
        if (!p->id) continue;
        svc *v = find(s, p->id);
        if (!v) v = add_svc(s, p->id);
        v->p = p;
    }
}

sup *sup_new(const sup_env *env, const config *cfg, char *err, size_t errlen)
{
    if (!env || !env->loop || !env->hm || !env->exec_helper || !cfg) {
        errf(err, errlen, "supervisor: loop, hostmon, exec helper and config are required");
        return NULL;
    }
    sup *s = xcalloc(1, sizeof *s);
    s->env = *env;
    s->exec_helper = xstrdup(env->exec_helper);
    s->proc_root = env->proc_root ? xstrdup(env->proc_root) : NULL;
    s->run_dir = env->run_dir ? xstrdup(env->run_dir) : NULL;
    s->env.exec_helper = s->exec_helper;
    s->env.proc_root = s->proc_root;
    s->env.run_dir = s->run_dir;
    s->cfg = cfg;
    if (cfg->set.supervisor.runner == RUNNER_SYSTEMD) {
        /* the user manager; a daemon of root with no session bus: the system one */
        bool user = geteuid() != 0 || (getenv("DBUS_SESSION_BUS_ADDRESS") && *getenv("DBUS_SESSION_BUS_ADDRESS"));
        const settings *st = &cfg->set;
        char *d = st->log_dir ? xstrdup(st->log_dir) : xasprintf("%s/logs", st->state_dir ? st->state_dir : ".");
        mkdir(d, 0750);
        s->run = runner_systemd_new(env->loop, user, d, err, errlen);
        free(d);
        if (!s->run) {
            free(s->exec_helper);
            free(s->proc_root);
            free(s->run_dir);
            free(s);
            return NULL;
        }
        s->run->on_reconnect = bus_back;
        s->run->reconnect_ud = s;
    } else {
        s->run = runner_spawn_new(env->loop, s->exec_helper);
    }
    bind_presets(s);
    return s;
}

static bool live(const svc *v)
{
    return v->state == SVC_STARTING || v->state == SVC_READY || v->state == SVC_UNHEALTHY ||
           v->state == SVC_STOPPING || v->killing;
}

int sup_set_config(sup *s, const config *cfg, strv *changed, char *err, size_t errlen)
{
    if (!cfg) {
        errf(err, errlen, "supervisor: no configuration given");
        return -1;
    }
    s->cfg = cfg;
    bind_presets(s);
    for (size_t i = 0; i < s->nsvcs; i++) {
        svc *v = s->svcs[i];
        if (!live(v) || !v->run_hash[0]) continue;
        const preset *p = v->p;
        if (!p) continue;
        char h[65], e[256];
        if (config_hash(p, &cfg->set, h, NULL, e, sizeof e) != 0 || strcmp(h, v->run_hash) != 0) {
            if (changed) strv_push(changed, v->id);
        }
    }
    return 0;
}

size_t sup_reservations(sup *s, reservation *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nsvcs && n < max; i++) {
        svc *v = s->svcs[i];
        if (!v->reserved) continue;
        out[n].service = v->id;
        out[n].need = v->admitted;
        n++;
    }
    return n;
}

size_t sup_usages(sup *s, sup_usage *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nsvcs && n < max; i++) {
        svc *v = s->svcs[i];
        if (!(v->state == SVC_STARTING || v->state == SVC_READY || v->state == SVC_UNHEALTHY ||
              v->state == SVC_STOPPING))
            continue;
        memset(&out[n], 0, sizeof out[n]);
        out[n].id = v->id;
        out[n].state = v->state;
        out[n].pgid = v->pgid;
        out[n].loading = v->state == SVC_STARTING && v->slot;
        if (v->has_admitted) out[n].admitted = v->admitted;
        out[n].started_ms = v->spawn_mono;
        n++;
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* JSON */

static void need_json_of(buf *b, const need *n)
{
    buf_adds(b, "{\"source\":");
    buf_json_str(b, n->source);
    buf_printf(b, ",\"host_bytes\":%llu,\"gpu_bytes\":{", (unsigned long long)n->host_bytes);
    for (size_t i = 0; i < n->ngpu; i++)
        buf_printf(b, "%s\"%d\":%llu", i ? "," : "", n->gpu[i].index, (unsigned long long)n->gpu[i].bytes);
    buf_adds(b, "}}");
}

static int queue_pos(sup *s, const svc *v)
{
    int k = 1;
    for (svc *q = s->q_head; q; q = q->next_q, k++)
        if (q == v) return k;
    return 0;
}

static void service_json(sup *s, svc *v, buf *out)
{
    const preset *p = preset_of(v);
    const settings *st = set_of(s);
    bool has_proc = v->pgid > 0;
    buf_adds(out, "{\"id\":");
    buf_json_str(out, v->id);
    buf_adds(out, ",\"driver\":");
    int drv = p ? p->driver : v->driver;
    buf_json_str_or_null(out, drv >= 0 && drv < DRV__COUNT ? driver_names[drv] : NULL);
    int port = p ? (int)p->port : v->port;
    if (port > 0)
        buf_printf(out, ",\"port\":%d", port);
    else
        buf_adds(out, ",\"port\":null");
    buf_printf(out, ",\"configured\":%s,\"state\":\"%s\",\"since\":", p ? "true" : "false",
               svc_state_names[v->state]);
    json_ts(out, v->since_ms);
    if (has_proc) {
        pid_t pid = s->run && v->h && !v->exited ? s->run->pid(v->h) : v->pgid;
        v->pid = pid;
        buf_printf(out, ",\"pid\":%d,\"pgid\":%d", (int)pid, (int)v->pgid);
    } else {
        buf_adds(out, ",\"pid\":null,\"pgid\":null");
    }
    if (v->state == SVC_STARTING && v->progress >= 0)
        buf_printf(out, ",\"progress_pct\":%d", v->progress);
    else
        buf_adds(out, ",\"progress_pct\":null");
    char h[65] = "";
    char e[256];
    bool hok = p && config_hash(p, st, h, NULL, e, sizeof e) == 0;
    buf_adds(out, ",\"config_hash\":");
    buf_json_str_or_null(out, hok ? h : NULL);
    bool running = live(v) && v->run_hash[0];
    buf_adds(out, ",\"running_hash\":");
    buf_json_str_or_null(out, running ? v->run_hash : NULL);
    buf_printf(out, ",\"config_changed\":%s", running && hok && strcmp(h, v->run_hash) != 0 ? "true" : "false");
    buf_adds(out, ",\"admitted\":");
    if (v->reserved || (live(v) && v->has_admitted))
        need_json_of(out, &v->admitted);
    else
        buf_adds(out, "null");
    buf_adds(out, ",\"footprint\":");
    if (v->has_fp) {
        buf_printf(out, "{\"host_bytes\":%llu,\"gpu_bytes\":{", (unsigned long long)v->fp.host_bytes);
        for (size_t g = 0; g < v->fp.ngpu; g++)
            buf_printf(out, "%s\"%d\":%llu", g ? "," : "", v->fp.gpu[g].index, (unsigned long long)v->fp.gpu[g].bytes);
        buf_adds(out, "},\"gpu_how\":{");
        for (size_t g = 0; g < v->fp.ngpu; g++)
            buf_printf(out, "%s\"%d\":\"%s\"", g ? "," : "", v->fp.gpu[g].index, fp_gpu_how_names[v->fp.gpu[g].how]);
        buf_printf(out, "},\"partial\":%s,\"detail\":", footprint_partial(&v->fp) ? "true" : "false");
        buf_json_str(out, v->fp.detail);
        buf_printf(out, ",\"load_ms\":%lld,\"measured_at\":", (long long)v->load_ms);
        json_ts(out, v->fp.measured_at_ms);
        buf_adds(out, "}");
    } else {
        buf_adds(out, "null");
    }
    restart_policy_v pol = v->pol;
    if (!running && p) {
        svc tmp;
        memset(&tmp, 0, sizeof tmp);
        copy_running(&tmp, p, st);
        pol = tmp.pol;
        free(tmp.host);
        free(tmp.health_path);
    }
    int64_t inwin = 0, now = clock_mono_ms();
    for (size_t i = 0; i < v->hist.n; i++)
        if (now - v->hist.at_ms[i] < pol.window_ms) inwin++;
    buf_printf(out, ",\"restarts\":{\"in_window\":%lld,\"max\":%lld,\"window_ms\":%lld,\"next_at\":", (long long)inwin,
               (long long)pol.max_restarts, (long long)pol.window_ms);
    json_ts_or_null(out, v->next_restart_ms);
    buf_printf(out, "},\"health\":{\"failures\":%lld,\"last_ok\":", (long long)v->fails);
    json_ts_or_null(out, v->last_ok_ms);
    buf_adds(out, "},\"last_exit\":");
    if (v->has_exit) {
        if (v->exit_sig)
            buf_printf(out, "{\"code\":null,\"signal\":%d,\"at\":", v->exit_sig);
        else
            buf_printf(out, "{\"code\":%d,\"signal\":null,\"at\":", v->exit_code);
        json_ts(out, v->exit_ms);
        buf_adds(out, "}");
    } else {
        buf_adds(out, "null");
    }
    buf_adds(out, ",\"last_start\":");
    if (v->seq) {
        buf_printf(out, "{\"seq\":%llu,\"origin\":", (unsigned long long)v->seq);
        buf_json_str(out, v->origin);
        buf_adds(out, ",\"outcome\":");
        buf_json_str(out, v->outcome ? v->outcome : "pending");
        buf_adds(out, ",\"code\":");
        buf_json_str_or_null(out, v->res_code);
        buf_adds(out, ",\"message\":");
        buf_json_str_or_null(out, v->res_msg);
        buf_adds(out, ",\"at\":");
        json_ts(out, v->start_at_ms);
        buf_adds(out, "}");
    } else {
        buf_adds(out, "null");
    }
    int qp = queue_pos(s, v);
    if (qp)
        buf_printf(out, ",\"queued\":%d", qp);
    else
        buf_adds(out, ",\"queued\":null");
    buf_adds(out, ",\"log_file\":");
    char *d = st->log_dir ? xstrdup(st->log_dir) : xasprintf("%s/logs", st->state_dir ? st->state_dir : ".");
    char *lf = xasprintf("%s/%s.log", d, v->id);
    buf_json_str(out, lf);
    free(lf);
    free(d);
    buf_adds(out, "}");
}

static bool listed(sup *s, const svc *v)
{
    return v->p || (v->state != SVC_DOWN && v->state != SVC_FAILED) || v->killing;
}

int sup_service_json(sup *s, const char *id, buf *out)
{
    svc *v = find(s, id);
    if (!v || !listed(s, v)) return -1;
    service_json(s, v, out);
    return 0;
}

void sup_services_json(sup *s, buf *out)
{
    buf_addc(out, '[');
    bool first = true;
    /* configured order first, then what runs without a preset */
    for (size_t i = 0; i < s->cfg->n_presets; i++) {
        const char *id = s->cfg->presets[i].id;
        if (!id) continue;
        svc *v = find(s, id);
        if (!first) buf_addc(out, ',');
        first = false;
        service_json(s, v, out);
    }
    for (size_t i = 0; i < s->nsvcs; i++) {
        svc *v = s->svcs[i];
        if (v->p || !listed(s, v)) continue;
        if (!first) buf_addc(out, ',');
        first = false;
        service_json(s, v, out);
    }
    buf_addc(out, ']');
}

void sup_slot_json(sup *s, buf *out)
{
    buf_adds(out, "{\"holder\":");
    buf_json_str_or_null(out, s->holder ? s->holder->id : NULL);
    buf_adds(out, ",\"waiting\":[");
    for (svc *q = s->q_head; q; q = q->next_q) {
        if (q != s->q_head) buf_addc(out, ',');
        buf_json_str(out, q->id);
    }
    buf_adds(out, "]}");
}

/* ------------------------------------------------------------------ */
/* logs */

int sup_log_read(sup *s, const char *id, uint64_t after, size_t n_lines, buf *out, uint64_t *next)
{
    svc *v = find(s, id);
    if (!v) return -1;
    if (!v->log) {
        if (next) *next = 0;
        return 0;
    }
    logring_read(v->log, after, n_lines, out, next);
    return 0;
}

int sup_run_tail(sup *s, const char *id, size_t n_lines, buf *out)
{
    svc *v = find(s, id);
    if (!v) return -1;
    sup_svc_run_tail(v, n_lines, out);
    return 0;
}

void sup_svc_run_tail(const sup_svc *v, size_t n_lines, buf *out)
{
    if (!v->log || !v->ran) return;
    buf b = BUF_INIT;
    uint64_t next = 0;
    logring_read(v->log, UINT64_MAX, n_lines, &b, &next);
    uint64_t from = next - b.len, skip = from < v->run_from ? v->run_from - from : 0;
    if (skip < b.len) buf_add(out, b.p + skip, b.len - (size_t)skip);
    buf_release(&b);
}

sup_log_watch *sup_log_watch_add(sup *s, const char *id, sup_log_cb cb, void *ud)
{
    sup_log_watch *w = xcalloc(1, sizeof *w);
    w->id = xstrdup(id);
    w->cb = cb;
    w->ud = ud;
    w->next = s->watches;
    s->watches = w;
    return w;
}

void sup_log_watch_remove(sup *s, sup_log_watch *w)
{
    if (!w) return;
    if (s->watch_iter > 0) {
        w->dead = true;
        return;
    }
    for (sup_log_watch **pp = &s->watches; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            free(w->id);
            free(w);
            return;
        }
}

/* ------------------------------------------------------------------ */
/* reconcile: what a previous daemon left */

typedef struct recon_item {
    char *id;
    pid_t pgid;
    int64_t t0, term_ms;
    bool killed;
    int members;
    /* a port holder (the port pass): pid, and whether its group is
     * signalled (pgid) or the pid alone */
    pid_t pid;
    bool group;
    int port;
    uint64_t starttime;
    char *cmdline; /* redacted */
} recon_item;

/* /proc/PID/stat: state, parent, process group, start time.  false when
 * the process is gone. */
typedef struct proc_stat {
    char state;
    pid_t ppid, pgid;
    uint64_t starttime;
} proc_stat;

static bool read_proc_stat(pid_t pid, proc_stat *o)
{
    char path[64], b[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f) return false;
    size_t n = fread(b, 1, sizeof b - 1, f);
    fclose(f);
    b[n] = 0;
    char *p = strrchr(b, ')'); /* the command name may hold anything but ends at the last ')' */
    if (!p) return false;
    int ppid, pgid;
    unsigned long long st;
    if (sscanf(p + 1, " %c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &o->state,
               &ppid, &pgid, &st) != 4)
        return false;
    o->ppid = ppid;
    o->pgid = pgid;
    o->starttime = st;
    return true;
}

/* /proc/PID/cmdline as an argv (at most 64 KiB read); 0 or -1. */
static int read_proc_argv(pid_t pid, strv *out)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    char *b = xcalloc(1, 65537);
    size_t n = fread(b, 1, 65536, f);
    fclose(f);
    for (size_t i = 0; i < n;) {
        size_t e = i;
        while (e < n && b[e]) e++;
        strv_push_own(out, xstrndup(b + i, e - i));
        i = e + 1;
    }
    free(b);
    return 0;
}

static const char *base_of(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* Is pid an orphan a previous gpumod left: its parent is pid 1, or a
 * gpumod-exec whose daemon (--parent-pid) is gone. */
static bool orphan_of_gpumod(const proc_stat *ps)
{
    if (ps->ppid == 1) return true;
    strv a = STRV_INIT;
    bool orphan = false;
    proc_stat exec;
    if (read_proc_stat(ps->ppid, &exec) && read_proc_argv(ps->ppid, &a) == 0 && a.n > 0 &&
        !strcmp(base_of(a.v[0]), "gpumod-exec")) {
        pid_t daemon = exec.ppid; /* without --parent-pid: the helper's parent */
        for (size_t i = 1; i + 1 < a.n; i++)
            if (!strcmp(a.v[i], "--parent-pid")) daemon = (pid_t)atoi(a.v[i + 1]);
        proc_stat d;
        /* the daemon gone, or its pid reused by a process younger than the
         * helper; never this daemon's own helper */
        orphan = daemon != getpid() && (daemon <= 1 || !read_proc_stat(daemon, &d) || d.state == 'Z' ||
                                        d.starttime > exec.starttime);
    }
    strv_release(&a);
    return orphan;
}

/* Does pid run the service's binary: argv[0]'s or /proc/PID/exe's
 * basename is the basename of what the preset launches. */
static bool runs_binary(pid_t pid, const char *binary)
{
    const char *want = base_of(binary);
    if (!*want) return false;
    strv a = STRV_INIT;
    bool yes = read_proc_argv(pid, &a) == 0 && a.n > 0 && !strcmp(base_of(a.v[0]), want);
    strv_release(&a);
    if (yes) return true;
    char path[64], exe[4096];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    if (n <= 0) return false;
    exe[n] = 0;
    char *del = strstr(exe, " (deleted)");
    if (del && del[10] == 0) *del = 0;
    return !strcmp(base_of(exe), want);
}

static void recon_signal(recon_item *r, int sig)
{
    if (r->group)
        kill(-r->pgid, sig);
    else
        kill(r->pid, sig);
}

/* How many of the item's processes live (0: gone). */
static int recon_members(recon_item *r)
{
    if (r->group) {
        pid_t pids[8];
        int n = proctree_group(NULL, r->pgid, pids, 8, NULL, 0);
        return n < 0 ? 0 : n;
    }
    proc_stat ps;
    return read_proc_stat(r->pid, &ps) && ps.state != 'Z' && ps.starttime == r->starttime ? 1 : 0;
}

static void maybe_shutdown_done(sup *s);

static void recon_finish(sup *s)
{
    for (size_t i = 0; i < s->nrecon; i++) {
        free(s->recon[i].id);
        free(s->recon[i].cmdline);
    }
    free(s->recon);
    s->recon = NULL;
    s->nrecon = 0;
    uv_timer_stop(&s->t_recon);
    void (*cb)(void *) = s->recon_cb;
    s->recon_cb = NULL;
    if (cb) cb(s->recon_ud);
    maybe_shutdown_done(s);
}

/* SIGKILL every group the reconcile still waits for (shutdown, hurry). */
static void recon_kill_now(sup *s)
{
    int64_t now = clock_mono_ms();
    for (size_t i = 0; i < s->nrecon; i++) {
        recon_item *r = &s->recon[i];
        if (r->pgid <= 1 || r->killed) continue;
        if (recon_members(r) > 0) recon_signal(r, SIGKILL);
        r->killed = true;
        r->t0 = now - r->term_ms; /* the SIGKILL wait counts from now */
    }
}

static bool recon_ports(sup *s);

static void recon_poll(uv_timer_t *t)
{
    sup *s = t->data;
    int64_t now = clock_mono_ms();
    bool pending = false;
    for (size_t i = 0; i < s->nrecon; i++) {
        recon_item *r = &s->recon[i];
        if (r->pgid == 0) continue;
        int n = recon_members(r);
        if (n <= 0 && r->port) {
            char *words = xasprintf("port %d was held by pid %d (%s), left by a previous gpumod: killed after %lld ms",
                                    r->port, (int)r->pid, r->cmdline, (long long)(now - r->t0));
            buf d = BUF_INIT;
            buf_printf(&d, "{\"code\":null,\"signal\":%d,\"pid\":%d,\"port\":%d,\"cmdline\":",
                       r->killed ? SIGKILL : SIGTERM, (int)r->pid, r->port);
            buf_json_str(&d, r->cmdline);
            buf_adds(&d, ",\"reconciled\":true}");
            emit(s, r->id, "exit", NULL, NULL, words, d.p);
            log_info("supervisor: '%s': %s", r->id, words);
            buf_release(&d);
            free(words);
            r->pgid = 0;
            continue;
        }
        if (n <= 0) {
            char words[200], data[160];
            snprintf(words, sizeof words,
                     "left running by a previous daemon: process group %d (%d process(es)) killed after %lld ms",
                     (int)r->pgid, r->members, (long long)(now - r->t0));
            snprintf(data, sizeof data, "{\"code\":null,\"signal\":%d,\"pid\":%d,\"reconciled\":true}",
                     r->killed ? SIGKILL : SIGTERM, (int)r->pgid);
            emit(s, r->id, "exit", NULL, NULL, words, data);
            log_info("supervisor: '%s': %s", r->id, words);
            r->pgid = 0;
            continue;
        }
        if (!r->killed && now - r->t0 >= r->term_ms) {
            recon_signal(r, SIGKILL); /* n > 0 just now: still what we found */
            r->killed = true;
        } else if (r->killed && now - r->t0 >= r->term_ms + 10000) {
            if (r->port)
                log_warn("supervisor: '%s': pid %d holding port %d, left by a previous gpumod, survives SIGKILL",
                         r->id, (int)r->pid, r->port);
            else
                log_warn("supervisor: '%s': process group %d left by a previous daemon survives SIGKILL", r->id,
                         (int)r->pgid);
            r->pgid = 0;
            continue;
        }
        pending = true;
    }
    /* the run files' groups are gone: then the ports (a shutdown skips them) */
    if (!pending && !s->recon_ports_done && !s->shutting) {
        s->recon_ports_done = true;
        pending = recon_ports(s);
    }
    if (!pending) recon_finish(s);
}

/* The port pass of reconcile: each configured service's port.  A holder
 * that runs the service's binary and is an orphan of a previous gpumod
 * (parent pid 1, or a gpumod-exec whose daemon is gone) is reported and
 * killed like a run file's group (SIGTERM, SIGKILL after stop_timeout,
 * confirmed gone): its group when it leads it, or when its group's
 * leader is gone or a gpumod-exec; else the pid alone.  Any other holder
 * is only reported (a `gate` event with its pid and redacted command
 * line) and left alone: a start of that service is then refused with
 * port_held.  Only where ports_owner reads the real /proc.  Returns
 * whether a kill is under way. */
static bool recon_ports(sup *s)
{
    const config *cfg = s->cfg;
    const settings *st = set_of(s);
    bool real = ports_read_real_proc(s);
    bool killing = false;
    pid_t seen[64];
    size_t nseen = 0;
    for (size_t i = 0; i < cfg->n_presets; i++) {
        const preset *p = &cfg->presets[i];
        if (!p->id || p->driver == DRV_REMOTE || p->port == 0 || p->port > 65535) continue;
        svc *adopted = find(s, p->id);
        if (adopted && adopted->h) continue; /* held by its own adopted unit */
        const char *host = driver_host(p);
        if (port_surely_free(s, host, (int)p->port)) continue;
        port_owner o;
        char err[512];
        int held = ports_owner(s->proc_root, host, (uint16_t)p->port, &o, err, sizeof err);
        if (held < 0) log_warn("supervisor: '%s': reconcile: cannot check port %d: %s", p->id, (int)p->port, err);
        if (held != 1) continue;
        bool dup = false;
        for (size_t k = 0; k < nseen; k++)
            if (o.pid > 0 && seen[k] == o.pid) dup = true;
        if (dup) continue;
        if (o.pid > 0 && nseen < 64) seen[nseen++] = o.pid;

        bool ours = false;
        proc_stat ps = {0};
        if (real && o.pid > 1 && o.pid != getpid() && read_proc_stat(o.pid, &ps) && ps.state != 'Z') {
            launch l = LAUNCH_INIT;
            if (driver_launch(p, st, &l, err, sizeof err) == 0 && l.argv.n > 0)
                ours = runs_binary(o.pid, l.argv.v[0]) && orphan_of_gpumod(&ps);
            launch_release(&l);
        }
        char desc[512];
        ports_describe(&o, desc, sizeof desc);
        if (!ours) {
            char *words = xasprintf("reconcile: %s, not left by gpumod: left alone (a start of '%s' is refused "
                                    "while it holds the port)",
                                    desc, p->id);
            buf d = BUF_INIT;
            buf_printf(&d, "{\"pid\":%d,\"cmdline\":", (int)o.pid);
            buf_json_str(&d, o.cmdline);
            buf_printf(&d, ",\"port\":%d,\"reconciled\":true,\"action\":\"reported\"}", (int)p->port);
            emit(s, p->id, "gate", NULL, NULL, words, d.p);
            log_warn("supervisor: '%s': %s", p->id, words);
            buf_release(&d);
            free(words);
            continue;
        }
        /* its group when every member is ours for sure */
        bool group = ps.pgid == o.pid;
        if (!group && ps.pgid > 1 && ps.pgid != getpgrp()) {
            proc_stat lead;
            strv a = STRV_INIT;
            if (!read_proc_stat(ps.pgid, &lead) || lead.state == 'Z')
                group = true;
            else if (read_proc_argv(ps.pgid, &a) == 0 && a.n > 0 && !strcmp(base_of(a.v[0]), "gpumod-exec"))
                group = true;
            strv_release(&a);
        }
        if (ps.pgid == getpgrp()) group = false;
        s->recon = xrealloc(s->recon, (s->nrecon + 1) * sizeof *s->recon);
        recon_item *r = &s->recon[s->nrecon++];
        memset(r, 0, sizeof *r);
        r->id = xstrdup(p->id);
        r->pgid = group ? ps.pgid : o.pid;
        r->pid = o.pid;
        r->group = group;
        r->port = (int)p->port;
        r->starttime = ps.starttime;
        r->cmdline = xstrdup(o.cmdline);
        r->t0 = clock_mono_ms();
        r->term_ms = st->supervisor.stop_timeout_ms > 0 ? st->supervisor.stop_timeout_ms : 30000;
        r->members = 1;
        log_info("supervisor: '%s': reconcile: %s, an orphan of a previous gpumod: SIGTERM to %s %d", p->id, desc,
                 group ? "process group" : "pid", (int)r->pgid);
        recon_signal(r, SIGTERM);
        killing = true;
    }
    return killing;
}

/* A runner that can (systemd): every configured service whose unit runs
 * is adopted, loading until its health says ready, and measured; a
 * previous daemon's run file or port holder for it is then its own
 * process, not a leftover. */
static void adopt_units(sup *s, bool again)
{
    if (!s->run->adopt) return;
    const settings *st = set_of(s);
    for (size_t i = 0; i < s->cfg->n_presets; i++) {
        const preset *p = &s->cfg->presets[i];
        if (!p->id || p->driver == DRV_REMOTE) continue;
        svc *v = find(s, p->id);
        if (!v) v = add_svc(s, p->id);
        /* again (the bus is back): also the services that failed when it went */
        if (v->h || (v->state != SVC_DOWN && !(again && v->state == SVC_FAILED))) continue;
        /* the argv it would start now, to tell whether the unit runs it */
        launch l = LAUNCH_INIT;
        char err[512];
        if (driver_launch(p, st, &l, err, sizeof err) == 0 && l.argv.n) {
            char *bin = find_program(l.argv.v[0]);
            if (bin) {
                free(l.argv.v[0]);
                l.argv.v[0] = bin;
            }
        } else {
            launch_release(&l);
            l = (launch)LAUNCH_INIT;
        }
        runner_spec rs = {.argv = l.argv.n ? &l.argv : NULL, .id = v->id, .on_output = on_output,
                          .on_exit = on_exit_cb, .on_respawn = on_respawn_cb, .ud = v};
        run_handle *h = s->run->adopt(s->run, &rs, err, sizeof err);
        launch_release(&l);
        if (!h) {
            if (err[0]) log_warn("supervisor: '%s': reconcile: %s", v->id, err);
            continue;
        }
        if (v->state == SVC_FAILED) feed(v, EV_RESET, "its unit runs: adopted again");
        ensure_timers(v);
        copy_running(v, p, st);
        const char *older = s->run->adopt_note ? s->run->adopt_note(h) : NULL;
        if (older)
            snprintf(v->run_hash, sizeof v->run_hash, "%s", RUN_HASH_OLDER);
        else if (config_hash(p, st, v->run_hash, NULL, err, sizeof err) != 0)
            v->run_hash[0] = 0;
        open_log(v, st);
        logscan_init(&v->ls, p->driver);
        v->ready_said = 0;
        v->h = h;
        v->exited = false;
        v->pgid = v->pid = 0;
        v->seq = ++s->seq;
        snprintf(v->origin, sizeof v->origin, "reconcile");
        v->outcome = "pending";
        v->start_at_ms = wall_ms();
        char *w = older ? xasprintf("found running as its systemd unit: adopted, but it runs an older configuration "
                                    "(%s): a switch restarts it", older)
                        : xasprintf("found running as %s of a previous daemon: adopted", "its systemd unit");
        log_info("supervisor: '%s': %s", v->id, w);
        feed(v, EV_RESPAWNED, w);
        free(w);
        loading_again(v);
    }
}

void sup_reconcile(sup *s, void (*cb)(void *ud), void *ud)
{
    s->recon_cb = cb;
    s->recon_ud = ud;
    adopt_units(s, false);
    if (!s->recon_timer) {
        uv_timer_init(s->env.loop, &s->t_recon);
        s->t_recon.data = s;
        s->recon_timer = true;
    }
    DIR *d = s->run_dir ? opendir(s->run_dir) : NULL;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 5 || strcmp(de->d_name + len - 4, ".pid") != 0) continue;
        char *path = xasprintf("%s/%s", s->run_dir, de->d_name);
        char *id = xstrndup(de->d_name, len - 4);
        char why[128];
        int fd = slurp_open(path, why, sizeof why); /* never blocks on a FIFO */
        FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
        int pgid = 0;
        unsigned long long st = 0;
        if (f) {
            if (fscanf(f, "%d %llu", &pgid, &st) != 2) pgid = 0;
            fclose(f);
        } else {
            if (fd >= 0) close(fd);
            log_warn("reconcile: '%s' is not read: %s", path, why);
        }
        unlink(path);
        free(path);
        svc *adopted = find(s, id);
        if (adopted && adopted->h) { /* its unit runs on: not a leftover */
            free(id);
            continue;
        }
        s->left_behind = true; /* its group may be gone already, its GPU memory not yet */
        int members = 0;
        if (pgid > 1) {
            pid_t pids[8];
            members = proctree_group(NULL, pgid, pids, 8, NULL, 0);
            uint64_t lead = proctree_starttime(NULL, pgid);
            /* the leader alive with another start time: the pid was reused */
            if (lead && lead != st) members = 0;
            /* the leader gone: members must have started after it */
            if (!lead && members > 0 && proctree_starttime(NULL, pids[0]) < st) members = 0;
        }
        if (members <= 0) {
            free(id);
            continue;
        }
        s->recon = xrealloc(s->recon, (s->nrecon + 1) * sizeof *s->recon);
        recon_item *r = &s->recon[s->nrecon++];
        memset(r, 0, sizeof *r);
        r->group = true;
        r->id = id;
        r->pgid = pgid;
        r->t0 = clock_mono_ms();
        r->term_ms = set_of(s)->supervisor.stop_timeout_ms > 0 ? set_of(s)->supervisor.stop_timeout_ms : 30000;
        r->killed = false;
        r->members = members;
        kill(-pgid, SIGTERM);
    }
    if (d) closedir(d);
    uv_timer_start(&s->t_recon, recon_poll, 0, KILL_POLL_MS);
}

/* ------------------------------------------------------------------ */
/* shutdown */

static void timer_closed(uv_handle_t *h);

static void maybe_shutdown_done(sup *s)
{
    if (!s->shutting || s->shut_closing || s->shut_pending > 0 || s->takes > 0 || s->recon_cb) return;
    for (size_t i = 0; i < s->nsvcs; i++)
        if (s->svcs[i]->killing || s->svcs[i]->h) return;
    s->shut_closing = true;
    s->closing_handles = 1; /* held until every close is issued */
    for (size_t i = 0; i < s->nsvcs; i++) {
        svc *v = s->svcs[i];
        stop_probe(v);
        if (!v->timers) continue;
        uv_timer_t *ts[] = {&v->t_start, &v->t_probe, &v->t_kill, &v->t_restart};
        for (size_t k = 0; k < 4; k++) {
            ts[k]->data = s;
            s->closing_handles++;
            uv_close((uv_handle_t *)ts[k], timer_closed);
        }
        v->timers = false;
    }
    if (s->recon_timer) {
        s->t_recon.data = s;
        s->closing_handles++;
        uv_close((uv_handle_t *)&s->t_recon, timer_closed);
        s->recon_timer = false;
    }
    if (--s->closing_handles == 0) {
        void (*cb)(void *) = s->shut_cb;
        s->shut_cb = NULL;
        if (cb) cb(s->shut_ud);
    }
}

static void timer_closed(uv_handle_t *h)
{
    sup *s = h->data;
    if (--s->closing_handles == 0) {
        void (*cb)(void *) = s->shut_cb;
        s->shut_cb = NULL;
        if (cb) cb(s->shut_ud);
    }
}

static void shut_stopped(const sup_result *r, void *ud)
{
    sup *s = ud;
    (void)r;
    s->shut_pending--;
    maybe_shutdown_done(s);
}

void sup_shutdown(sup *s, void (*cb)(void *ud), void *ud)
{
    if (s->shutting) return;
    s->shutting = true;
    s->shut_cb = cb;
    s->shut_ud = ud;
    s->shut_pending = 1;
    if (s->recon_cb) /* a reconcile in progress: what it still waits for gets SIGKILL; it ends on its timer */
        recon_kill_now(s);
    for (size_t i = 0; i < s->nsvcs; i++) {
        svc *v = s->svcs[i];
        cancel_restart(v, 503, "shutting_down", "the daemon is shutting down");
        if (v->state == SVC_STARTING || v->state == SVC_READY || v->state == SVC_UNHEALTHY ||
            v->state == SVC_STOPPING || v->killing) {
            s->shut_pending++;
            sup_stop(s, v->id, "shutdown", shut_stopped, s);
        }
    }
    s->shut_pending--;
    maybe_shutdown_done(s);
}

void sup_hurry(sup *s)
{
    if (!s) return;
    s->hurry = true;
    if (s->recon_cb) recon_kill_now(s);
    for (size_t i = 0; i < s->nsvcs; i++) {
        svc *v = s->svcs[i];
        if (!v->killing || !v->timers) continue;
        v->kill_gen++; /* a verify in flight is not waited for */
        if (v->kill_phase == 0) {
            pid_t pids[1024];
            int n = v->pgid > 1 ? proctree_group(NULL, v->pgid, pids, 1024, NULL, 0) : 0;
            if (n < 0) n = 0;
            note_members(v, pids, n);
            if (n > 0)
                log_info("supervisor: '%s': hurried: SIGKILL to process group %d", v->id, (int)v->pgid);
            signal_group(v, SIGKILL, n);
            v->kill_phase = 1;
            v->kill_deadline = clock_mono_ms() + after_sigkill_ms(v);
        }
        /* the poll confirms the group gone (phase 2: done at once) */
        v->kill_polls = 0;
        kill_arm(v);
    }
}

void sup_free(sup *s)
{
    if (!s) return;
    scan_drop(s);
    for (size_t i = 0; i < s->nsvcs; i++) {
        svc *v = s->svcs[i];
        waiter *w = v->starts;
        v->starts = NULL;
        call_waiters(w, 503, "shutting_down", "the daemon is shutting down", NULL);
        w = v->stops;
        v->stops = NULL;
        call_waiters(w, 503, "shutting_down", "the daemon is shutting down", NULL);
        logring_free(v->log);
        free(v->id);
        free(v->host);
        free(v->health_path);
        free(v->res_code);
        free(v->res_msg);
        free(v->pend_code);
        free(v->pend_msg);
        free(v);
    }
    free(s->svcs);
    while (s->watches) {
        sup_log_watch *w = s->watches;
        s->watches = w->next;
        free(w->id);
        free(w);
    }
    for (size_t i = 0; i < s->nrecon; i++) {
        free(s->recon[i].id);
        free(s->recon[i].cmdline);
    }
    free(s->recon);
    if (s->run) s->run->free(s->run);
    free(s->exec_helper);
    free(s->proc_root);
    free(s->run_dir);
    free(s);
}

/* ------------------------------------------------------------------ */
/* for a mode switch's plan (supervisor.h sup_holdings) */

size_t sup_holdings(sup *s, sup_holding *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nsvcs && n < max; i++) {
        svc *v = s->svcs[i];
        bool live = v->state == SVC_STARTING || v->state == SVC_READY || v->state == SVC_UNHEALTHY ||
                    v->state == SVC_STOPPING || v->killing;
        bool restart = v->state == SVC_DOWN && v->next_restart_ms > 0;
        if (!live && !restart) continue;
        sup_holding *h = &out[n++];
        memset(h, 0, sizeof *h);
        h->id = v->id;
        h->svc = v;
        h->state = v->state;
        snprintf(h->hash, sizeof h->hash, "%s", v->run_hash);
        h->load_ms = v->state == SVC_STARTING ? -1 : v->load_ms;
        h->restart_pending = restart;
        h->killing = v->killing;
        if (!live) continue; /* down, waiting for its restart: holds nothing yet */
        if (v->has_fp && v->run_hash[0] && !strcmp(v->fp.hash, v->run_hash) && v->state != SVC_STARTING) {
            snprintf(h->held.source, sizeof h->held.source, "measured");
            h->held.host_bytes = v->fp.host_bytes;
            for (size_t g = 0; g < v->fp.ngpu && g < HOST_MAX_GPUS; g++) {
                h->held.gpu[g].index = v->fp.gpu[g].index;
                h->held.gpu[g].bytes = v->fp.gpu[g].bytes;
            }
            h->held.ngpu = v->fp.ngpu < HOST_MAX_GPUS ? v->fp.ngpu : HOST_MAX_GPUS;
            h->measured = true;
            /* a device the admission counted but the footprint shows nothing on (a driver that
             * hides per-process figures, unified memory): what it holds there is unknown, so
             * the admitted bytes stand for it, or a switch could not count them coming back */
            for (size_t a = 0; v->has_admitted && a < v->admitted.ngpu && a < HOST_MAX_GPUS; a++) {
                if (!v->admitted.gpu[a].bytes) continue;
                size_t g = 0;
                while (g < h->held.ngpu && h->held.gpu[g].index != v->admitted.gpu[a].index) g++;
                if (g == h->held.ngpu) {
                    if (g == HOST_MAX_GPUS) continue;
                    h->held.gpu[g].index = v->admitted.gpu[a].index;
                    h->held.gpu[g].bytes = 0;
                    h->held.ngpu++;
                }
                if (!h->held.gpu[g].bytes) h->held.gpu[g].bytes = v->admitted.gpu[a].bytes;
            }
        } else if (v->has_admitted) {
            h->held = v->admitted;
        }
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* for the router (supervisor.h sup_states) */

static void state_info(const svc *v, sup_state_info *o)
{
    o->id = v->id;
    o->svc = (sup_svc *)v;
    o->state = v->state;
    o->progress_pct = v->state == SVC_STARTING && v->progress >= 0 ? v->progress : -1;
}

bool sup_svc_state(const sup_svc *v, sup_state_info *out)
{
    if (!v || !listed(v->s, v)) return false;
    state_info(v, out);
    return true;
}

size_t sup_states(sup *s, const char *id, sup_state_info *out, size_t max)
{
    if (!max) return 0;
    if (id) {
        svc *v = find(s, id);
        if (!v || !listed(s, v)) return 0;
        state_info(v, &out[0]);
        return 1;
    }
    size_t n = 0;
    for (size_t i = 0; i < s->cfg->n_presets && n < max; i++) {
        const char *pid = s->cfg->presets[i].id;
        if (pid) state_info(find(s, pid), &out[n++]);
    }
    for (size_t i = 0; i < s->nsvcs && n < max; i++) {
        svc *v = s->svcs[i];
        if (v->p || !listed(s, v)) continue;
        state_info(v, &out[n++]);
    }
    return n;
}
