/* runner_systemd.c - the systemd runner: service ID is the unit
 * gpumod-ID.service (written by `gpumod template install ID`), started,
 * stopped and signalled through org.freedesktop.systemd1 over sd-bus
 * (src/systemd/sdbus.h, dlopen'd, driven by the daemon's loop).
 *
 * Only the documented subset of systemd's API is used (Manager LoadUnit,
 * StartUnit, StopUnit, KillUnit, ResetFailedUnit, Subscribe, JobRemoved;
 * the unit's Unit and Service properties and PropertiesChanged), so the
 * same code runs against systemd and the test's fake.
 *
 * Signals only say "look again": every PropertiesChanged of the unit, and
 * a slow poll besides, reads the unit's properties (GetAll of the Unit and
 * Service interfaces) and the handle acts on what they say, so a signal
 * that carries no values (systemd's invalidations) or that was lost
 * changes nothing.  systemd owns restarts: a main pid that changes is
 * reported through on_respawn; on_exit comes once, when the unit ended
 * for good (inactive or failed, and not in auto-restart) after the start
 * job was removed.
 *
 * spawn() returns at once: its checks (LoadUnit, the Unit properties, the
 * unit file against the preset's argv, ResetFailedUnit) and StartUnit are
 * a chain of asynchronous calls under one deadline (CHECK_MS); a missing
 * or stale unit fails the start through on_exit with the fix.  adopt()
 * is synchronous: it runs at reconcile, before the daemon listens, and
 * after a reconnect, all adoptions of one round under one deadline
 * (ADOPT_MS).
 *
 * When the bus goes, every handle ends (on_exit, detached: the units run
 * on and no signal may go to their processes) and the runner reconnects
 * with backoff (1 s doubling to 30 s); runner.on_reconnect then lets the
 * supervisor adopt the units again. */
#include "daemon/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/unit.h"
#include "util/slurp.h"
#include "util/clock.h"
#include "util/log.h"
#include "systemd/install.h"
#include "systemd/sdbus.h"
#include "util/buf.h"
#include "util/errf.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define SD_UNIT "org.freedesktop.systemd1.Unit"
#define SD_SERVICE "org.freedesktop.systemd1.Service"
#define PROPS_IFACE "org.freedesktop.DBus.Properties"
#define SYNC_MS 2000  /* Subscribe at the start */
#define CHECK_MS 10000 /* spawn's checks and StartUnit's reply, together */
#define ADOPT_MS 5000  /* every adoption of one round, together */
#define ADOPT_CALL_MS 1500
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 30000
#define CALL_MS 10000 /* StartUnit, StopUnit, KillUnit, reads: systemd answers at once, a job runs on */
#define POLL_MS 1000  /* the properties, should a signal be lost */
#define TAIL_MS 50    /* the unit's output file */
#define EARLY_MAX 8

typedef struct sd_runner {
    runner r;
    uv_loop_t *loop;
    sdbus *bus;
    bool user;
    char *log_dir;
    sdbus_slot *m_jobs;
    run_handle *handles;
    char lost[256]; /* why the bus went; empty while connected */
    bool freeing;   /* sd_free came: the last handle frees it */
    uv_timer_t t_reconnect;
    bool t_reconnect_init;
    int64_t backoff_ms;
    int64_t adopt_until; /* this round's adoptions' deadline (mono ms) */
} sd_runner;

struct run_handle {
    sd_runner *sr;
    run_handle *next;
    runner_spec spec;
    char *unit, *path, *job;
    struct {
        char *job, *result;
    } early[EARLY_MAX]; /* JobRemoved before StartUnit's reply named the job */
    size_t nearly;
    sdbus_slot *m_props;
    int refs; /* async calls in flight, the two timers */
    bool closing, job_done, delivered;
    bool reading, reread;
    bool seen_main, restarting, have_n0;
    bool checking;     /* the checks before StartUnit run */
    bool cancelled;    /* stopped before StartUnit went out */
    bool start_sent, start_unknown, start_timed_out;
    bool stop_sent, stop_failed;
    bool exit_told;    /* the main process's exit was reported (on_respawn 0, -1) */
    int told_code, told_sig;
    bool detached;     /* the bus went: the unit runs on untracked */
    int64_t deadline;  /* the checks' and StartUnit's (mono ms) */
    strv argv;         /* the preset's, for the stale check */
    char *stale_why;   /* adopt: the unit runs another configuration */
    off_t tail_start;  /* the output file's size at spawn */
    dev_t tail_dev;
    ino_t tail_ino;
    int tail_ticks;
    pid_t main;
    int64_t n0;
    bool failed;
    char *reason;
    int code, sig;
    uv_timer_t poll, tail;
    int tail_fd;
    char *tail_path;
    off_t tail_off;
};

static void maybe_free(sd_runner *sr)
{
    if (sr->freeing && !sr->handles && !sr->t_reconnect_init) {
        free(sr->log_dir);
        free(sr);
    }
}

static void h_unref(run_handle *h)
{
    if (--h->refs > 0) return;
    for (run_handle **pp = &h->sr->handles; *pp; pp = &(*pp)->next)
        if (*pp == h) {
            *pp = h->next;
            break;
        }
    for (size_t i = 0; i < h->nearly; i++) {
        free(h->early[i].job);
        free(h->early[i].result);
    }
    if (h->tail_fd >= 0) close(h->tail_fd);
    free(h->tail_path);
    strv_release(&h->argv);
    free(h->stale_why);
    free(h->unit);
    free(h->path);
    free(h->job);
    free(h->reason);
    free((char *)h->spec.id);
    sd_runner *sr = h->sr;
    free(h);
    maybe_free(sr);
}

static void timer_closed(uv_handle_t *t)
{
    h_unref(t->data);
}

/* ------------------------------------------------------------------ */
/* output: the file the unit appends to */

static void tail_drain(run_handle *h)
{
    char chunk[65536];
    for (int i = 0; i < 16; i++) {
        ssize_t n = pread(h->tail_fd, chunk, sizeof chunk, h->tail_off);
        if (n <= 0) break;
        h->tail_off += n;
        if (!h->closing) h->spec.on_output(chunk, (size_t)n, h->spec.ud);
    }
}

/* Rotation: truncated in place (copytruncate: read again from 0), or
 * renamed and a new file made at the path (finish the old one, then
 * read the new one from its start). */
static void tail_read(run_handle *h)
{
    struct stat st;
    if (h->tail_fd < 0) {
        h->tail_fd = open(h->tail_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (h->tail_fd < 0) return;
        /* created after the spawn: all of it is this run's */
        if (fstat(h->tail_fd, &st) == 0) {
            if (h->tail_off > 0 && st.st_size < h->tail_off) h->tail_off = 0;
            h->tail_dev = st.st_dev;
            h->tail_ino = st.st_ino;
        }
    }
    if (fstat(h->tail_fd, &st) == 0 && st.st_size < h->tail_off) {
        h->tail_off = 0;
        h->tail_start = 0;
    }
    tail_drain(h);
    if (++h->tail_ticks % 4 == 0 && stat(h->tail_path, &st) == 0 &&
        (st.st_ino != h->tail_ino || st.st_dev != h->tail_dev)) {
        close(h->tail_fd);
        h->tail_fd = -1;
        h->tail_off = 0;
        h->tail_start = 0;
        tail_read(h);
    }
}

static void on_tail(uv_timer_t *t)
{
    tail_read(t->data);
}

/* ------------------------------------------------------------------ */
/* the end */

static void deliver(run_handle *h, int code, int sig, bool failed, const char *reason)
{
    if (h->delivered) return;
    h->delivered = true;
    h->code = code;
    h->sig = sig;
    h->failed = failed;
    free(h->reason);
    h->reason = reason ? xstrdup(reason) : NULL;
    if (!h->closing) {
        uv_timer_stop(&h->poll);
        tail_read(h); /* the last lines explain the end */
        h->spec.on_exit(code, sig, h->spec.ud);
    }
}

/* ExecMainCode is a CLD_* code: 1 exited, 2 killed, 3 dumped. */
static void main_status(const sdbus_props *p, int *code, int *sig)
{
    const sdbus_prop *c = sdbus_props_get(p, "ExecMainCode"), *s = sdbus_props_get(p, "ExecMainStatus");
    int cc = c ? (int)c->i : 0, st = s ? (int)s->i : 0;
    *code = -1;
    *sig = 0;
    if (cc == 2 || cc == 3)
        *sig = st;
    else if (cc == 1)
        *code = st;
}

static const char *pstr(const sdbus_props *p, const char *name)
{
    const sdbus_prop *v = sdbus_props_get(p, name);
    return v && v->s ? v->s : "";
}

/* Whether the unit's output since the spawn holds the preflight gate's
 * refusal line for this service ("refused: 'ID': ..."). */
static bool gate_refused(run_handle *h)
{
    char why[128];
    int fd = slurp_open(h->tail_path, why, sizeof why); /* on the loop: never wait on a FIFO */
    if (fd < 0) return false;
    struct stat st;
    bool found = false;
    if (fstat(fd, &st) == 0 && st.st_size > h->tail_start) {
        off_t from = st.st_size - h->tail_start > 65536 ? st.st_size - 65536 : h->tail_start;
        size_t len = (size_t)(st.st_size - from);
        char *b = xmalloc(len + 1);
        ssize_t n = pread(fd, b, len, from);
        if (n > 0) {
            b[n] = 0;
            char *pat = xasprintf("refused: '%s'", h->spec.id);
            found = memmem(b, (size_t)n, pat, strlen(pat)) != NULL;
            free(pat);
        }
        free(b);
    }
    close(fd);
    return found;
}

static bool state_is(const char *a, const char *b, const char *c, const char *x)
{
    return !strcmp(x, a) || (b && !strcmp(x, b)) || (c && !strcmp(x, c));
}

/* What the properties say, acted on. */
static void evaluate(run_handle *h, const sdbus_props *p)
{
    if (h->delivered || h->closing) return;
    const char *active = pstr(p, "ActiveState"), *sub = pstr(p, "SubState"), *result = pstr(p, "Result");
    const sdbus_prop *mp = sdbus_props_get(p, "MainPID"), *nr = sdbus_props_get(p, "NRestarts");
    pid_t mainpid = mp ? (pid_t)mp->i : 0;
    int64_t n = nr ? nr->i : 0;
    if (h->start_unknown) {
        /* StartUnit's reply did not come in time: the unit's Job says
         * whether the start is still queued */
        const sdbus_prop *j = sdbus_props_get(p, "Job");
        h->start_unknown = false;
        if (j && j->type == 'r' && j->i > 0 && j->s && !h->job) {
            h->job = xstrdup(j->s);
            for (size_t i = 0; i < h->nearly; i++)
                if (!strcmp(h->early[i].job, j->s)) h->job_done = true;
        } else {
            h->job_done = true;
        }
    }
    if (h->stop_failed) {
        /* StopUnit failed: unless the unit stops anyway, end its group */
        h->stop_failed = false;
        if (state_is("active", "activating", "reloading", active) && h->main > 0) {
            pid_t g = getpgid(h->main);
            log_warn("systemd runner: %s: StopUnit failed and the unit is %s: SIGTERM to process group %d", h->unit,
                     active, (int)(g > 0 ? g : h->main));
            if (kill(-(g > 0 ? g : h->main), SIGTERM) != 0)
                log_warn("systemd runner: %s: cannot signal process group %d: %s", h->unit, (int)(g > 0 ? g : h->main),
                         strerror(errno));
        }
    }
    if (!h->have_n0 || n < h->n0) {
        h->n0 = n;
        h->have_n0 = true;
    }
    bool auto_restart = !strcmp(sub, "auto-restart");
    if (mainpid > 0 && mainpid != h->main) {
        bool first = !h->seen_main;
        int64_t k = first ? 0 : (n - h->n0 > 0 ? n - h->n0 : 1);
        if (h->exit_told && !h->restarting && h->spec.on_respawn) /* the restart went unseen between two reads */
            h->spec.on_respawn(0, k, h->told_code, h->told_sig, h->spec.ud);
        h->main = mainpid;
        h->seen_main = true;
        h->restarting = false;
        h->exit_told = false;
        if (h->spec.on_respawn) h->spec.on_respawn(mainpid, k, -1, 0, h->spec.ud);
    } else if (mainpid == 0 && (h->main > 0 || h->exit_told) && auto_restart && !h->restarting) {
        int code, sig;
        main_status(p, &code, &sig);
        if (h->exit_told) code = h->told_code, sig = h->told_sig;
        h->main = 0;
        h->restarting = true;
        if (h->spec.on_respawn) h->spec.on_respawn(0, n - h->n0 + 1, code, sig, h->spec.ud);
    } else if (mainpid == 0 && h->main > 0 && !h->stop_sent && !strcmp(active, "deactivating")) {
        /* the main process exited while other processes of the unit
         * linger (final-sigterm): report the exit now; systemd's restart
         * or its end follows */
        main_status(p, &h->told_code, &h->told_sig);
        h->main = 0;
        h->exit_told = true;
        if (h->spec.on_respawn) h->spec.on_respawn(0, -1, h->told_code, h->told_sig, h->spec.ud);
    } else if (mainpid == 0 && h->main > 0) {
        h->main = 0; /* exited; the end (or the restart) is decided below or on the next read */
    }
    if (h->delivered || h->closing || !h->job_done) return;
    if ((strcmp(active, "inactive") != 0 && strcmp(active, "failed") != 0) || auto_restart) return;
    int code, sig;
    main_status(p, &code, &sig);
    bool failed = !strcmp(active, "failed");
    char why[768];
    bool limit = !strcmp(result, "start-limit-hit");
    const char *late = h->start_timed_out ? " (StartUnit's answer did not come in time)" : "";
    if (!h->seen_main && failed && gate_refused(h))
        /* the gate's verdict is in the log tail */
        snprintf(why, sizeof why, "%s failed before its main process ran (Result %s): the preflight gate in "
                 "ExecStartPre refused the start%s",
                 h->unit, *result ? result : "?", limit ? " (systemd retried until the start limit)" : "");
    else if (!h->seen_main && failed)
        snprintf(why, sizeof why, "%s failed before its main process ran: ExecStartPre failed (Result %s%s); systemd "
                 "says why in journalctl %s-u %s",
                 h->unit, *result ? result : "?", limit ? ", systemd retried until the start limit" : "",
                 h->sr->user ? "--user " : "", h->unit);
    else if (limit)
        snprintf(why, sizeof why, "systemd gave up on %s: start limit hit (StartLimitBurst within StartLimitIntervalSec)",
                 h->unit);
    else if (failed)
        snprintf(why, sizeof why, "%s failed (Result %s)%s", h->unit, *result ? result : "?",
                 code == 2 ? ": exit status 2 is RestartPreventExitStatus, no restart" : "");
    else
        snprintf(why, sizeof why, "%s is %s%s", h->unit, active, late);
    if (h->exit_told && code < 0 && !sig) code = h->told_code, sig = h->told_sig;
    deliver(h, code, sig, failed, why);
}

/* ------------------------------------------------------------------ */
/* reading the properties */

typedef struct rd_ctx {
    run_handle *h;
    sdbus_props p;
} rd_ctx;

static void read_props(run_handle *h);

static void read_done(run_handle *h)
{
    h->reading = false;
    if (h->reread && !h->delivered && !h->closing) {
        h->reread = false;
        read_props(h);
    }
}

static void got_service(sdbus_msg *m, const char *err, void *ud)
{
    rd_ctx *c = ud;
    run_handle *h = c->h;
    char e[256];
    if (err)
        log_warn("systemd runner: %s", err);
    else if (sdbus_msg_read_props(m, &c->p, e, sizeof e))
        log_warn("systemd runner: %s: the Service properties: %s", h->unit, e);
    else
        evaluate(h, &c->p);
    sdbus_props_release(&c->p);
    free(c);
    read_done(h);
    h_unref(h);
}

static void got_unit(sdbus_msg *m, const char *err, void *ud)
{
    rd_ctx *c = ud;
    run_handle *h = c->h;
    char e[256];
    if (err || h->closing || h->delivered || sdbus_msg_read_props(m, &c->p, e, sizeof e)) {
        if (err) log_warn("systemd runner: %s", err);
        sdbus_props_release(&c->p);
        free(c);
        read_done(h);
        h_unref(h);
        return;
    }
    if (sdbus_call_async(h->sr->bus, SD_DEST, h->path, PROPS_IFACE, "GetAll", CALL_MS, got_service, c, e, sizeof e,
                         "s", SD_SERVICE) == 0)
        return; /* the ref goes on */
    log_warn("systemd runner: %s", e);
    sdbus_props_release(&c->p);
    free(c);
    read_done(h);
    h_unref(h);
}

static void read_props(run_handle *h)
{
    if (h->closing || h->delivered) return;
    if (h->reading) {
        h->reread = true;
        return;
    }
    rd_ctx *c = xcalloc(1, sizeof *c);
    c->h = h;
    char e[256];
    if (sdbus_call_async(h->sr->bus, SD_DEST, h->path, PROPS_IFACE, "GetAll", CALL_MS, got_unit, c, e, sizeof e, "s",
                         SD_UNIT)) {
        log_warn("systemd runner: %s", e);
        free(c);
        return;
    }
    h->reading = true;
    h->refs++;
}

static void on_poll(uv_timer_t *t)
{
    read_props(t->data);
}

static void on_props_changed(sdbus_msg *m, void *ud)
{
    (void)m;
    read_props(ud);
}

/* ------------------------------------------------------------------ */
/* jobs */

static void job_removed(run_handle *h, const char *result)
{
    h->job_done = true;
    if (strcmp(result, "done") != 0)
        log_info("systemd runner: %s: the start job ended '%s'", h->unit, result);
    read_props(h);
}

static void on_job_removed(sdbus_msg *m, void *ud)
{
    sd_runner *sr = ud;
    uint32_t id;
    const char *job = NULL, *unit = NULL, *result = NULL;
    char e[128];
    if (sdbus_msg_read_basic(m, 'u', &id, e, sizeof e) || sdbus_msg_read_basic(m, 'o', &job, e, sizeof e) ||
        sdbus_msg_read_basic(m, 's', &unit, e, sizeof e) || sdbus_msg_read_basic(m, 's', &result, e, sizeof e))
        return;
    for (run_handle *h = sr->handles; h; h = h->next) {
        if (h->closing || h->job_done || strcmp(h->unit, unit) != 0) continue;
        if (h->job) {
            if (!strcmp(h->job, job)) job_removed(h, result);
        } else if (h->nearly < EARLY_MAX) {
            h->early[h->nearly].job = xstrdup(job);
            h->early[h->nearly].result = xstrdup(result);
            h->nearly++;
        }
    }
}

static void started(sdbus_msg *m, const char *err, void *ud)
{
    run_handle *h = ud;
    const char *job = NULL;
    char e[128];
    if (err) {
        sdbus_errkind k = sdbus_reply_kind();
        if (h->delivered || h->closing || k == SDBUS_E_CLOSED) {
            /* the bus went: on_lost ends the handle */
        } else if (k == SDBUS_E_TIMEOUT) {
            /* systemd queues the job before it answers: a late answer is
             * no failure by itself; the unit's state (and Job) decides */
            log_warn("systemd runner: %s; reading %s's state to decide", err, h->unit);
            h->start_unknown = h->start_timed_out = true;
            read_props(h);
        } else {
            h->job_done = true;
            char *w = xasprintf("cannot start %s: %s", h->unit, err);
            deliver(h, -1, 0, true, w);
            free(w);
        }
    } else if (sdbus_msg_read_basic(m, 'o', &job, e, sizeof e) == 0 && job && !h->job) {
        h->job = xstrdup(job);
        for (size_t i = 0; i < h->nearly; i++)
            if (!strcmp(h->early[i].job, job)) job_removed(h, h->early[i].result);
    }
    h_unref(h);
}

typedef struct act_ctx {
    run_handle *h;
    char what[32];
} act_ctx;

static void acted(sdbus_msg *m, const char *err, void *ud)
{
    act_ctx *c = ud;
    (void)m;
    if (err && sdbus_reply_kind() != SDBUS_E_CLOSED) {
        log_warn("systemd runner: %s: %s: %s; reading the unit's state", c->h->unit, c->what, err);
        if (!strcmp(c->what, "StopUnit")) c->h->stop_failed = true; /* evaluate() decides */
    }
    read_props(c->h);
    h_unref(c->h);
    free(c);
}

/* ------------------------------------------------------------------ */
/* the checks before a start */

static bool lost(sd_runner *sr, const char *id, char *err, size_t errlen)
{
    if (!sr->lost[0]) return false;
    errf(err, errlen, "cannot run '%s' as a systemd unit: %s", id ? id : "?", sr->lost);
    return true;
}

/* ExecStart='s words as systemd splits them (quotes, backslash escapes,
 * %% and $$), the prefixes (-@:+!) of the first word dropped. */
static void exec_split(const char *p, strv *out)
{
    while (*p == ' ' || *p == '\t') p++;
    while (*p == '-' || *p == '@' || *p == ':' || *p == '+' || *p == '!') p++;
    for (;;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        buf w = BUF_INIT;
        buf_adds(&w, "");
        char q = 0;
        while (*p) {
            if (!q && (*p == ' ' || *p == '\t')) break;
            if (!q && (*p == '"' || *p == '\'')) {
                q = *p++;
            } else if (q && *p == q) {
                q = 0;
                p++;
            } else if (*p == '\\' && p[1]) {
                buf_addc(&w, p[1]);
                p += 2;
            } else if ((*p == '%' && p[1] == '%') || (*p == '$' && p[1] == '$')) {
                buf_addc(&w, *p);
                p += 2;
            } else {
                buf_addc(&w, *p++);
            }
        }
        strv_push_own(out, buf_detach(&w));
    }
}

/* The same file (device and inode, symlinks followed). */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The unit file's ExecStart= against the argv it should run: argv[1..]
 * word for word, argv[0] by identity of the file it names (template
 * install keeps the name as PATH gives it, the daemon resolves it).  0:
 * the same (or the file is not readable: nothing to compare); 1: stale,
 * with the first differing word in why. */
static int stale(sd_runner *sr, const char *unit, const char *fragment, const strv *argv, char *why, size_t len)
{
    char e[256];
    char *frag = NULL;
    if (fragment && *fragment) {
        frag = xstrdup(fragment);
    } else {
        char *dir = install_unit_dir(sr->user, NULL, e, sizeof e);
        frag = dir ? xasprintf("%s/%s", dir, unit) : NULL;
        free(dir);
        if (!frag) return 0;
    }
    char rerr[128];
    int fd = slurp_open(frag, rerr, sizeof rerr); /* on the loop: never wait on a FIFO */
    FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
    if (!f) {
        if (fd >= 0) {
            snprintf(rerr, sizeof rerr, "%s", strerror(errno));
            close(fd);
        }
        log_info("systemd runner: %s: cannot read '%s' to compare its ExecStart: %s", unit, frag, rerr);
        free(frag);
        return 0;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 1;
    bool found = false;
    strv words = STRV_INIT;
    while ((n = getline(&line, &cap, f)) > 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (strncmp(line, "ExecStart=", 10) != 0) continue;
        found = true;
        exec_split(line + 10, &words);
        break;
    }
    if (!found) {
        snprintf(why, len, "%s: it has no ExecStart= line", frag);
    } else {
        rc = 0;
        size_t max = words.n > argv->n ? words.n : argv->n;
        for (size_t i = 0; i < max && !rc; i++) {
            const char *u = i < words.n ? words.v[i] : NULL, *w = i < argv->n ? argv->v[i] : NULL;
            if (u && w && (!strcmp(u, w) || (i == 0 && same_file(u, w)))) continue;
            rc = 1;
            snprintf(why, len, "%s: word %zu of its ExecStart= is %s%s%s, the preset's is %s%s%s", frag, i,
                     u ? "'" : "", u ? u : "missing", u ? "'" : "", w ? "'" : "", w ? w : "missing", w ? "'" : "");
        }
    }
    strv_release(&words);
    free(line);
    fclose(f);
    free(frag);
    return rc;
}

static run_handle *h_new(sd_runner *sr, const runner_spec *spec, const char *unit, const char *path)
{
    run_handle *h = xcalloc(1, sizeof *h);
    h->sr = sr;
    h->spec = *spec;
    if (spec->argv) strv_copy(&h->argv, spec->argv);
    h->spec.argv = NULL; /* borrowed for the call only */
    h->spec.env = NULL;
    h->spec.cwd = NULL;
    h->spec.id = xstrdup(spec->id);
    h->unit = xstrdup(unit);
    h->path = xstrdup(path);
    h->tail_fd = -1;
    h->tail_path = xasprintf("%s/%s.unit.log", sr->log_dir, spec->id);
    struct stat st;
    h->tail_off = h->tail_start = stat(h->tail_path, &st) == 0 ? st.st_size : 0;
    uv_timer_init(sr->loop, &h->poll);
    uv_timer_init(sr->loop, &h->tail);
    h->poll.data = h->tail.data = h;
    h->refs = 2; /* the timers */
    h->next = sr->handles;
    sr->handles = h;
    char e[256];
    if (sdbus_match_signal(sr->bus, &h->m_props, SD_DEST, path, PROPS_IFACE, "PropertiesChanged", on_props_changed,
                           h, e, sizeof e))
        log_warn("systemd runner: %s: %s (the properties are polled every %d ms)", unit, e, POLL_MS);
    uv_timer_start(&h->tail, on_tail, 0, TAIL_MS);
    return h;
}

static void h_drop(run_handle *h)
{
    h->closing = true;
    sdbus_slot_free(h->m_props);
    h->m_props = NULL;
    uv_close((uv_handle_t *)&h->poll, timer_closed);
    uv_close((uv_handle_t *)&h->tail, timer_closed);
}

static int64_t left_ms(run_handle *h, int64_t at_least)
{
    int64_t l = h->deadline - clock_mono_ms();
    return l > at_least ? l : at_least;
}

static void check_fail(run_handle *h, const char *msg)
{
    h->checking = false;
    h->job_done = true;
    deliver(h, -1, 0, true, msg);
}

/* The chain ends here: closed, delivered, or stopped before StartUnit. */
static bool check_over(run_handle *h)
{
    if (h->closing || h->delivered) {
        h->checking = false;
        return true;
    }
    if (h->cancelled) {
        h->checking = false;
        h->job_done = true;
        deliver(h, -1, 0, false, "stopped before its start was sent to systemd");
        return true;
    }
    if (clock_mono_ms() > h->deadline) {
        char *w = xasprintf("cannot start '%s' as %s: systemd did not answer the checks within %d ms", h->spec.id,
                            h->unit, CHECK_MS);
        check_fail(h, w);
        free(w);
        return true;
    }
    return false;
}

static void check_err(run_handle *h, const char *e)
{
    char *w = xasprintf("cannot start '%s' as %s: %s", h->spec.id, h->unit, e);
    check_fail(h, w);
    free(w);
}

static void start_unit(run_handle *h)
{
    char e[512];
    h->checking = false;
    if (sdbus_call_async(h->sr->bus, SD_DEST, SD_PATH, SD_MANAGER, "StartUnit", left_ms(h, 2000), started, h, e,
                         sizeof e, "ss", h->unit, "replace")) {
        check_err(h, e);
        return;
    }
    h->refs++;
    h->start_sent = true;
    uv_timer_start(&h->poll, on_poll, POLL_MS, POLL_MS);
}

static void ck_reset(sdbus_msg *m, const char *err, void *ud)
{
    run_handle *h = ud;
    (void)m;
    if (err) log_warn("systemd runner: %s", err); /* StartUnit says what matters */
    if (!check_over(h)) start_unit(h);
    h_unref(h);
}

static void ck_unit(sdbus_msg *m, const char *err, void *ud)
{
    run_handle *h = ud;
    sdbus_props p = {0};
    char e[512];
    if (check_over(h)) goto out;
    if (err || sdbus_msg_read_props(m, &p, e, sizeof e)) {
        check_err(h, err ? err : e);
        goto out;
    }
    const char *load = pstr(&p, "LoadState"), *active = pstr(&p, "ActiveState");
    const sdbus_prop *ndr = sdbus_props_get(&p, "NeedDaemonReload");
    if (strcmp(load, "loaded") != 0) {
        char *w = xasprintf("unit %s is not installed (LoadState %s): run gpumod template install %s --yes", h->unit,
                            *load ? load : "?", h->spec.id);
        check_fail(h, w);
        free(w);
        goto out;
    }
    char why[1024];
    if (ndr && ndr->i) {
        char *w = xasprintf("unit %s is stale (its file changed since systemd loaded it: NeedDaemonReload): run gpumod "
                            "template install %s --yes",
                            h->unit, h->spec.id);
        check_fail(h, w);
        free(w);
        goto out;
    }
    if (h->argv.n && stale(h->sr, h->unit, pstr(&p, "FragmentPath"), &h->argv, why, sizeof why)) {
        char *w = xasprintf("unit %s is stale (%s): run gpumod template install %s --yes", h->unit, why, h->spec.id);
        check_fail(h, w);
        free(w);
        goto out;
    }
    /* systemd's start limit counts every start, a person's too: reset it
     * (and a failed state) before each start the daemon decides, so that
     * quick start/stop cycles are not refused; StartLimitBurst still ends
     * systemd's own restart loop after this start */
    if (!strcmp(active, "failed") || !strcmp(active, "inactive")) {
        if (sdbus_call_async(h->sr->bus, SD_DEST, SD_PATH, SD_MANAGER, "ResetFailedUnit", left_ms(h, 1), ck_reset, h,
                             e, sizeof e, "s", h->unit) == 0) {
            h->refs++;
            goto out;
        }
        log_warn("systemd runner: %s", e);
    }
    start_unit(h);
out:
    sdbus_props_release(&p);
    h_unref(h);
}

static void ck_loaded(sdbus_msg *m, const char *err, void *ud)
{
    run_handle *h = ud;
    const char *path = NULL;
    char e[512];
    if (check_over(h)) goto out;
    if (err || sdbus_msg_read_basic(m, 'o', &path, e, sizeof e)) {
        check_err(h, err ? err : e);
        goto out;
    }
    if (strcmp(path, h->path) != 0) {
        free(h->path);
        h->path = xstrdup(path);
    }
    if (sdbus_call_async(h->sr->bus, SD_DEST, h->path, PROPS_IFACE, "GetAll", left_ms(h, 1), ck_unit, h, e, sizeof e,
                         "s", SD_UNIT)) {
        check_err(h, e);
        goto out;
    }
    h->refs++;
out:
    h_unref(h);
}

/* ------------------------------------------------------------------ */
/* the runner's functions */

static run_handle *sd_spawn(runner *r, const runner_spec *spec, char *err, size_t errlen)
{
    sd_runner *sr = (sd_runner *)r;
    if (lost(sr, spec->id, err, errlen)) return NULL;
    char *unit = unit_service_name(spec->id), *path = sdbus_unit_path(unit);
    run_handle *h = h_new(sr, spec, unit, path);
    h->checking = true;
    h->deadline = clock_mono_ms() + CHECK_MS;
    char e[512];
    if (sdbus_call_async(sr->bus, SD_DEST, SD_PATH, SD_MANAGER, "LoadUnit", CHECK_MS, ck_loaded, h, e, sizeof e, "s",
                         unit)) {
        errf(err, errlen, "cannot start '%s' as %s: %s", spec->id, unit, e);
        h_drop(h);
        h = NULL;
    } else {
        h->refs++;
    }
    free(unit);
    free(path);
    return h;
}

/* adopt: synchronous, every adoption of one round within ADOPT_MS */
static int64_t adopt_left(sd_runner *sr)
{
    int64_t now = clock_mono_ms();
    if (!sr->adopt_until) sr->adopt_until = now + ADOPT_MS;
    int64_t l = sr->adopt_until - now;
    return l < ADOPT_CALL_MS ? l : ADOPT_CALL_MS;
}

static run_handle *sd_adopt(runner *r, const runner_spec *spec, char *err, size_t errlen)
{
    sd_runner *sr = (sd_runner *)r;
    if (err && errlen) err[0] = 0;
    if (lost(sr, spec->id, err, errlen)) return NULL;
    char *unit = unit_service_name(spec->id), *path = NULL;
    run_handle *h = NULL;
    sdbus_msg *rep = NULL;
    sdbus_props p = {0};
    const char *op = NULL;
    char e[512];
    int64_t t = adopt_left(sr);
    if (t <= 0) {
        errf(err, errlen, "not adopted: no time left to ask systemd about %s (every adoption together within %d ms)",
             unit, ADOPT_MS);
        goto out;
    }
    if (sdbus_call(sr->bus, SD_DEST, SD_PATH, SD_MANAGER, "LoadUnit", t, &rep, e, sizeof e, "s", unit) ||
        sdbus_msg_read_basic(rep, 'o', &op, e, sizeof e)) {
        errf(err, errlen, "cannot ask systemd about %s: %s", unit, e);
        goto out;
    }
    path = xstrdup(op);
    sdbus_msg_free(rep);
    rep = NULL;
    t = adopt_left(sr);
    if (t <= 0 || sdbus_call(sr->bus, SD_DEST, path, PROPS_IFACE, "GetAll", t, &rep, e, sizeof e, "s", SD_UNIT) ||
        sdbus_msg_read_props(rep, &p, e, sizeof e)) {
        errf(err, errlen, "cannot read %s's state: %s", unit, t <= 0 ? "no time left" : e);
        goto out;
    }
    const char *active = pstr(&p, "ActiveState");
    if (strcmp(pstr(&p, "LoadState"), "loaded") != 0 ||
        (strcmp(active, "active") != 0 && strcmp(active, "activating") != 0 && strcmp(active, "reloading") != 0))
        goto out; /* not installed or not running: nothing runs */
    h = h_new(sr, spec, unit, path);
    h->job_done = true; /* no job of ours: its end is the unit's */
    h->start_sent = true;
    const sdbus_prop *ndr = sdbus_props_get(&p, "NeedDaemonReload");
    char why[1024];
    if (ndr && ndr->i)
        h->stale_why = xasprintf("%s's file changed since systemd loaded it (NeedDaemonReload): it may run an older "
                                 "command", unit);
    else if (h->argv.n && stale(sr, unit, pstr(&p, "FragmentPath"), &h->argv, why, sizeof why))
        h->stale_why = xasprintf("%s is stale (%s)", unit, why);
    if (h->stale_why)
        log_warn("systemd runner: '%s': adopted, but it runs an older configuration: %s", spec->id, h->stale_why);
    read_props(h);
    uv_timer_start(&h->poll, on_poll, POLL_MS, POLL_MS);
out:
    sdbus_msg_free(rep);
    sdbus_props_release(&p);
    free(unit);
    free(path);
    return h;
}

static const char *sd_adopt_note(run_handle *h)
{
    return h->stale_why;
}

static pid_t sd_pid(run_handle *h)
{
    return h->main;
}

/* systemd makes every service's main process a session leader */
static pid_t sd_pgid(run_handle *h)
{
    if (h->main <= 0) return 0;
    pid_t g = getpgid(h->main);
    return g > 0 ? g : h->main;
}

/* SIGTERM is a stop (StopUnit: systemd's TimeoutStopSec and SIGKILL
 * follow, and a stopped unit is not restarted); any other signal goes to
 * every process of the unit (KillUnit "all").  Answered asynchronously:
 * 0 once sent.  Before StartUnit went out, the start is called off.
 * After the bus went: -1 (ESRCH), and the units are not the daemon's to
 * signal (runner.owns_restarts: the supervisor never kill(2)s them). */
static int sd_signal_group(run_handle *h, int sig)
{
    sd_runner *sr = h->sr;
    if (h->delivered || h->detached || sr->lost[0]) {
        errno = ESRCH;
        return -1;
    }
    if (h->checking) {
        h->cancelled = true; /* the chain ends at its next answer */
        return 0;
    }
    act_ctx *c = xcalloc(1, sizeof *c);
    c->h = h;
    char e[512];
    int rc;
    if (sig == SIGTERM) {
        snprintf(c->what, sizeof c->what, "StopUnit");
        rc = sdbus_call_async(sr->bus, SD_DEST, SD_PATH, SD_MANAGER, "StopUnit", CALL_MS, acted, c, e, sizeof e, "ss",
                              h->unit, "replace");
        if (rc == 0) h->stop_sent = true;
    } else {
        snprintf(c->what, sizeof c->what, "KillUnit %d", sig);
        rc = sdbus_call_async(sr->bus, SD_DEST, SD_PATH, SD_MANAGER, "KillUnit", CALL_MS, acted, c, e, sizeof e, "ssi",
                              h->unit, "all", (int32_t)sig);
    }
    if (rc) {
        log_warn("systemd runner: %s", e);
        free(c);
        errno = ESRCH;
        return -1;
    }
    h->refs++;
    return 0;
}

static const char *sd_end_reason(run_handle *h, bool *failed)
{
    if (failed) *failed = h->failed;
    return h->delivered ? h->reason : NULL;
}

static bool sd_detached(run_handle *h)
{
    return h->detached;
}

static void sd_close(run_handle *h)
{
    if (!h || h->closing) return;
    h_drop(h);
}

static void reconnect_closed(uv_handle_t *t)
{
    sd_runner *sr = t->data;
    sr->t_reconnect_init = false;
    maybe_free(sr);
}

static void sd_free(runner *r)
{
    sd_runner *sr = (sd_runner *)r;
    sr->freeing = true;
    if (sr->t_reconnect_init) uv_close((uv_handle_t *)&sr->t_reconnect, reconnect_closed);
    sdbus_slot_free(sr->m_jobs);
    sr->m_jobs = NULL;
    /* answers every call still in flight ("connection closed"): the
     * handles they hold go with them; the last of them (or the reconnect
     * timer's close) frees the runner */
    sdbus_close(sr->bus);
    sr->bus = NULL;
    maybe_free(sr);
}

static void on_lost(const char *why, void *ud);

/* Subscribe, JobRemoved, onto the loop: 0 or -1 with err. */
static int bus_setup(sd_runner *sr, char *err, size_t errlen)
{
    /* without Subscribe systemd sends no JobRemoved (nor, before v253,
     * PropertiesChanged) */
    if (sdbus_call(sr->bus, SD_DEST, SD_PATH, SD_MANAGER, "Subscribe", SYNC_MS, NULL, err, errlen, NULL) ||
        sdbus_match_signal(sr->bus, &sr->m_jobs, SD_DEST, SD_PATH, SD_MANAGER, "JobRemoved", on_job_removed, sr, err,
                           errlen) ||
        sdbus_attach(sr->bus, sr->loop, on_lost, sr, err, errlen)) {
        sdbus_slot_free(sr->m_jobs);
        sr->m_jobs = NULL;
        return -1;
    }
    return 0;
}

static void on_reconnect_timer(uv_timer_t *t)
{
    sd_runner *sr = t->data;
    if (sr->freeing) return;
    char e[512];
    sdbus *bus = NULL;
    /* a bounded blocking connect: a local socket answers at once or not */
    if (sdbus_open_within(&bus, sr->user, 1000, e, sizeof e) == 0) {
        sdbus *old = sr->bus;
        sr->bus = bus;
        if (bus_setup(sr, e, sizeof e) == 0) {
            sdbus_close(old);
            sr->lost[0] = 0;
            sr->backoff_ms = 0;
            sr->adopt_until = 0; /* a new round of adoptions */
            log_info("systemd runner: reconnected to the %s bus; adopting the units that run", sr->user ? "user" : "system");
            if (sr->r.on_reconnect) sr->r.on_reconnect(sr->r.reconnect_ud);
            return;
        }
        sr->bus = old;
        sdbus_close(bus);
    }
    sr->backoff_ms = sr->backoff_ms ? sr->backoff_ms * 2 : BACKOFF_MIN_MS * 2;
    if (sr->backoff_ms > BACKOFF_MAX_MS) sr->backoff_ms = BACKOFF_MAX_MS;
    log_warn("systemd runner: reconnecting: %s; next try in %lld ms", e, (long long)sr->backoff_ms);
    uv_timer_start(&sr->t_reconnect, on_reconnect_timer, (uint64_t)sr->backoff_ms, 0);
}

static void on_lost(const char *why, void *ud)
{
    sd_runner *sr = ud;
    snprintf(sr->lost, sizeof sr->lost, "%s", why);
    log_warn("systemd runner: %s; the units keep running, their services are marked failed until the bus is back",
             why);
    /* the matches go with this connection */
    sdbus_slot_free(sr->m_jobs);
    sr->m_jobs = NULL;
    /* every handle ends: nothing more will be heard of its unit */
    for (run_handle *h = sr->handles; h; h = h->next) {
        sdbus_slot_free(h->m_props);
        h->m_props = NULL;
        if (h->closing || h->delivered) continue;
        h->detached = true;
        h->refs++;
        char *w = xasprintf("%s: the unit runs on, no longer tracked", why);
        deliver(h, -1, 0, true, w);
        free(w);
        h_unref(h);
    }
    if (!sr->t_reconnect_init) {
        uv_timer_init(sr->loop, &sr->t_reconnect);
        sr->t_reconnect.data = sr;
        sr->t_reconnect_init = true;
    }
    sr->backoff_ms = BACKOFF_MIN_MS;
    uv_timer_start(&sr->t_reconnect, on_reconnect_timer, BACKOFF_MIN_MS, 0);
}

runner *runner_systemd_new(uv_loop_t *loop, bool user, const char *log_dir, char *err, size_t errlen)
{
    sdbus *bus = NULL;
    if (sdbus_open(&bus, user, err, errlen)) return NULL;
    sd_runner *sr = xcalloc(1, sizeof *sr);
    sr->loop = loop;
    sr->bus = bus;
    sr->user = user;
    sr->log_dir = xstrdup(log_dir ? log_dir : ".");
    char e[512];
    if (bus_setup(sr, e, sizeof e)) {
        errf(err, errlen, "systemd runner: %s", e);
        sdbus_close(bus);
        free(sr->log_dir);
        free(sr);
        return NULL;
    }
    sr->r.name = "systemd";
    sr->r.owns_restarts = true;
    sr->r.spawn = sd_spawn;
    sr->r.pid = sd_pid;
    sr->r.pgid = sd_pgid;
    sr->r.signal_group = sd_signal_group;
    sr->r.close = sd_close;
    sr->r.free = sd_free;
    sr->r.end_reason = sd_end_reason;
    sr->r.adopt = sd_adopt;
    sr->r.adopt_note = sd_adopt_note;
    sr->r.detached = sd_detached;
    return &sr->r;
}
