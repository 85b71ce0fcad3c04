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
 * The one synchronous part is spawn()'s check that the unit is installed
 * and current (LoadUnit and two property reads, 2 s each): a start must
 * fail at once, with the fix, when the unit is missing or stale. */
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
#include "daemon/log.h"
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
#define SYNC_MS 2000  /* spawn's checks */
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
    free(h->unit);
    free(h->path);
    free(h->job);
    free(h->reason);
    free((char *)h->spec.id);
    sd_runner *sr = h->sr;
    free(h);
    if (sr->freeing && !sr->handles) {
        free(sr->log_dir);
        free(sr);
    }
}

static void timer_closed(uv_handle_t *t)
{
    h_unref(t->data);
}

/* ------------------------------------------------------------------ */
/* output: the file the unit appends to */

static void tail_read(run_handle *h)
{
    if (h->tail_fd < 0) {
        h->tail_fd = open(h->tail_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (h->tail_fd < 0) return;
        struct stat st;
        /* created after the spawn: all of it is this run's */
        if (h->tail_off > 0 && fstat(h->tail_fd, &st) == 0 && st.st_size < h->tail_off) h->tail_off = 0;
    }
    char chunk[65536];
    for (int i = 0; i < 16; i++) {
        ssize_t n = pread(h->tail_fd, chunk, sizeof chunk, h->tail_off);
        if (n <= 0) break;
        h->tail_off += n;
        if (!h->closing) h->spec.on_output(chunk, (size_t)n, h->spec.ud);
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

/* What the properties say, acted on. */
static void evaluate(run_handle *h, const sdbus_props *p)
{
    if (h->delivered || h->closing) return;
    const char *active = pstr(p, "ActiveState"), *sub = pstr(p, "SubState"), *result = pstr(p, "Result");
    const sdbus_prop *mp = sdbus_props_get(p, "MainPID"), *nr = sdbus_props_get(p, "NRestarts");
    pid_t mainpid = mp ? (pid_t)mp->i : 0;
    int64_t n = nr ? nr->i : 0;
    if (!h->have_n0 || n < h->n0) {
        h->n0 = n;
        h->have_n0 = true;
    }
    bool auto_restart = !strcmp(sub, "auto-restart");
    if (mainpid > 0 && mainpid != h->main) {
        bool first = !h->seen_main;
        h->main = mainpid;
        h->seen_main = true;
        h->restarting = false;
        int64_t k = first ? 0 : (n - h->n0 > 0 ? n - h->n0 : 1);
        if (h->spec.on_respawn) h->spec.on_respawn(mainpid, k, -1, 0, h->spec.ud);
    } else if (mainpid == 0 && h->main > 0 && auto_restart && !h->restarting) {
        int code, sig;
        main_status(p, &code, &sig);
        h->main = 0;
        h->restarting = true;
        if (h->spec.on_respawn) h->spec.on_respawn(0, n - h->n0 + 1, code, sig, h->spec.ud);
    } else if (mainpid == 0 && h->main > 0) {
        h->main = 0; /* exited; the end (or the restart) is decided below or on the next read */
    }
    if (h->delivered || h->closing || !h->job_done) return;
    if ((strcmp(active, "inactive") != 0 && strcmp(active, "failed") != 0) || auto_restart) return;
    int code, sig;
    main_status(p, &code, &sig);
    bool failed = !strcmp(active, "failed");
    char why[512];
    bool limit = !strcmp(result, "start-limit-hit");
    if (!h->seen_main && failed)
        /* ExecStartPre failed (every retry systemd made, when Restart=
         * applied): its output, the gate's verdict, is in the log tail */
        snprintf(why, sizeof why, "%s failed before its main process ran (Result %s): the preflight gate in "
                 "ExecStartPre refused the start%s",
                 h->unit, *result ? result : "?", limit ? " (systemd retried until the start limit)" : "");
    else if (limit)
        snprintf(why, sizeof why, "systemd gave up on %s: start limit hit (StartLimitBurst within StartLimitIntervalSec)",
                 h->unit);
    else if (failed)
        snprintf(why, sizeof why, "%s failed (Result %s)%s", h->unit, *result ? result : "?",
                 code == 2 ? ": exit status 2 is RestartPreventExitStatus, no restart" : "");
    else
        snprintf(why, sizeof why, "%s is %s", h->unit, active);
    if (!h->seen_main && code < 0 && !sig) code = 1;
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
        h->job_done = true;
        char *w = xasprintf("cannot start %s: %s", h->unit, err);
        deliver(h, -1, 0, true, w);
        free(w);
    } else if (sdbus_msg_read_basic(m, 'o', &job, e, sizeof e) == 0 && job) {
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
    if (err) log_warn("systemd runner: %s: %s: %s", c->h->unit, c->what, err);
    read_props(c->h);
    h_unref(c->h);
    free(c);
}

/* ------------------------------------------------------------------ */
/* the runner's functions */

static bool lost(sd_runner *sr, const char *id, char *err, size_t errlen)
{
    if (!sr->lost[0]) return false;
    errf(err, errlen, "cannot run '%s' as a systemd unit: %s", id ? id : "?", sr->lost);
    return true;
}

/* A string property through Get, synchronously; caller frees. */
static char *get_str(sd_runner *sr, const char *path, const char *iface, const char *name, char *err, size_t errlen)
{
    sdbus_msg *rep = NULL;
    if (sdbus_call(sr->bus, SD_DEST, path, PROPS_IFACE, "Get", SYNC_MS, &rep, err, errlen, "ss", iface, name))
        return NULL;
    sdbus_props p = {0};
    char *out = NULL;
    if (sdbus_msg_read_variant(rep, name, &p, err, errlen) == 0) {
        const sdbus_prop *v = sdbus_props_get(&p, name);
        out = xstrdup(v && v->s ? v->s : "");
    }
    sdbus_props_release(&p);
    sdbus_msg_free(rep);
    return out;
}

/* The unit file's ExecStart= against the argv it should run: 0 (same, or
 * the file is not readable: nothing to compare), 1 stale with why. */
static int stale(sd_runner *sr, const char *unit, const char *path, const runner_spec *spec, char *why, size_t len)
{
    char e[256];
    char *frag = get_str(sr, path, SD_UNIT, "FragmentPath", e, sizeof e);
    if (!frag || !*frag) {
        free(frag);
        char *dir = install_unit_dir(sr->user, NULL, e, sizeof e);
        frag = dir ? xasprintf("%s/%s", dir, unit) : NULL;
        free(dir);
        if (!frag) return 0;
    }
    FILE *f = fopen(frag, "re");
    if (!f) {
        log_info("systemd runner: %s: cannot read '%s' to compare its ExecStart: %s", unit, frag, strerror(errno));
        free(frag);
        return 0;
    }
    buf want = BUF_INIT;
    buf_adds(&want, "ExecStart=");
    for (size_t i = 0; i < spec->argv->n; i++) {
        if (i) buf_addc(&want, ' ');
        if (unit_exec_word(&want, spec->argv->v[i], "argument", e, sizeof e)) {
            buf_release(&want);
            free(frag);
            fclose(f);
            return 0;
        }
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 1;
    bool found = false;
    while ((n = getline(&line, &cap, f)) > 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (strncmp(line, "ExecStart=", 10) != 0) continue;
        found = true;
        if (!strcmp(line, want.p)) rc = 0;
        break;
    }
    if (rc)
        snprintf(why, len, "%s: %s", frag,
                 found ? "its ExecStart= differs from the preset's command" : "it has no ExecStart= line");
    free(line);
    fclose(f);
    buf_release(&want);
    free(frag);
    return rc;
}

static run_handle *h_new(sd_runner *sr, const runner_spec *spec, const char *unit, const char *path)
{
    run_handle *h = xcalloc(1, sizeof *h);
    h->sr = sr;
    h->spec = *spec;
    h->spec.argv = NULL; /* borrowed for the call only */
    h->spec.env = NULL;
    h->spec.cwd = NULL;
    h->spec.id = xstrdup(spec->id);
    h->unit = xstrdup(unit);
    h->path = xstrdup(path);
    h->tail_fd = -1;
    h->tail_path = xasprintf("%s/%s.unit.log", sr->log_dir, spec->id);
    struct stat st;
    h->tail_off = stat(h->tail_path, &st) == 0 ? st.st_size : 0;
    uv_timer_init(sr->loop, &h->poll);
    uv_timer_init(sr->loop, &h->tail);
    h->poll.data = h->tail.data = h;
    h->refs = 2; /* the timers */
    h->next = sr->handles;
    sr->handles = h;
    char e[256];
    if (sdbus_match_signal(sr->bus, &h->m_props, NULL, path, PROPS_IFACE, "PropertiesChanged", on_props_changed, h, e,
                           sizeof e))
        log_warn("systemd runner: %s: %s (the properties are polled every %d ms)", unit, e, POLL_MS);
    uv_timer_start(&h->poll, on_poll, POLL_MS, POLL_MS);
    uv_timer_start(&h->tail, on_tail, 0, TAIL_MS);
    return h;
}

/* LoadUnit and the checks: the unit's name and path, or -1 with err. */
static int check_unit(sd_runner *sr, const runner_spec *spec, char **unit, char **path, char **active, char *err,
                      size_t errlen)
{
    *unit = unit_service_name(spec->id);
    *path = NULL;
    *active = NULL;
    sdbus_msg *rep = NULL;
    const char *p = NULL;
    char e[512];
    if (sdbus_call(sr->bus, SD_DEST, SD_PATH, SD_MANAGER, "LoadUnit", SYNC_MS, &rep, e, sizeof e, "s", *unit) ||
        sdbus_msg_read_basic(rep, 'o', &p, e, sizeof e)) {
        errf(err, errlen, "cannot start '%s' as %s: %s", spec->id, *unit, e);
        sdbus_msg_free(rep);
        return -1;
    }
    *path = xstrdup(p);
    sdbus_msg_free(rep);
    char *load = get_str(sr, *path, SD_UNIT, "LoadState", e, sizeof e);
    if (!load) {
        errf(err, errlen, "cannot start '%s' as %s: %s", spec->id, *unit, e);
        return -1;
    }
    if (strcmp(load, "loaded") != 0) {
        errf(err, errlen, "unit %s is not installed (LoadState %s): run gpumod template install %s --yes", *unit,
             load, spec->id);
        free(load);
        return -1;
    }
    free(load);
    *active = get_str(sr, *path, SD_UNIT, "ActiveState", e, sizeof e);
    if (!*active) {
        errf(err, errlen, "cannot start '%s' as %s: %s", spec->id, *unit, e);
        return -1;
    }
    return 0;
}

static run_handle *sd_spawn(runner *r, const runner_spec *spec, char *err, size_t errlen)
{
    sd_runner *sr = (sd_runner *)r;
    if (lost(sr, spec->id, err, errlen)) return NULL;
    char *unit, *path, *active;
    run_handle *h = NULL;
    if (check_unit(sr, spec, &unit, &path, &active, err, errlen)) goto out;
    char why[512];
    if (spec->argv && stale(sr, unit, path, spec, why, sizeof why)) {
        errf(err, errlen, "unit %s is stale (%s): run gpumod template install %s --yes", unit, why, spec->id);
        goto out;
    }
    char e[512];
    /* systemd's start limit counts every start, a person's too: reset it
     * (and a failed state) before each start the daemon decides, so that
     * quick start/stop cycles are not refused; StartLimitBurst still ends
     * systemd's own restart loop after this start */
    if ((!strcmp(active, "failed") || !strcmp(active, "inactive")) &&
        sdbus_call(sr->bus, SD_DEST, SD_PATH, SD_MANAGER, "ResetFailedUnit", SYNC_MS, NULL, e, sizeof e, "s", unit))
        log_warn("systemd runner: %s", e); /* StartUnit says what matters */
    h = h_new(sr, spec, unit, path);
    if (sdbus_call_async(sr->bus, SD_DEST, SD_PATH, SD_MANAGER, "StartUnit", CALL_MS, started, h, e, sizeof e, "ss", unit,
                         "replace")) {
        errf(err, errlen, "cannot start '%s' as %s: %s", spec->id, unit, e);
        h->closing = true;
        sdbus_slot_free(h->m_props);
        h->m_props = NULL;
        uv_close((uv_handle_t *)&h->poll, timer_closed);
        uv_close((uv_handle_t *)&h->tail, timer_closed);
        h = NULL;
        goto out;
    }
    h->refs++;
out:
    free(unit);
    free(path);
    free(active);
    return h;
}

static run_handle *sd_adopt(runner *r, const runner_spec *spec, char *err, size_t errlen)
{
    sd_runner *sr = (sd_runner *)r;
    if (err && errlen) err[0] = 0;
    if (lost(sr, spec->id, err, errlen)) return NULL;
    char *unit, *path, *active;
    run_handle *h = NULL;
    char e[512];
    if (check_unit(sr, spec, &unit, &path, &active, e, sizeof e)) goto out; /* not installed: nothing runs */
    if (strcmp(active, "active") != 0 && strcmp(active, "activating") != 0 && strcmp(active, "reloading") != 0)
        goto out;
    h = h_new(sr, spec, unit, path);
    h->job_done = true; /* no job of ours: its end is the unit's */
    read_props(h);
out:
    free(unit);
    free(path);
    free(active);
    return h;
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
 * 0 once sent. */
static int sd_signal_group(run_handle *h, int sig)
{
    sd_runner *sr = h->sr;
    if (h->delivered || sr->lost[0]) {
        errno = ESRCH;
        return -1;
    }
    act_ctx *c = xcalloc(1, sizeof *c);
    c->h = h;
    char e[512];
    int rc;
    if (sig == SIGTERM) {
        snprintf(c->what, sizeof c->what, "StopUnit");
        rc = sdbus_call_async(sr->bus, SD_DEST, SD_PATH, SD_MANAGER, "StopUnit", CALL_MS, acted, c, e, sizeof e, "ss",
                              h->unit, "replace");
    } else {
        snprintf(c->what, sizeof c->what, "KillUnit %d", sig);
        rc = sdbus_call_async(sr->bus, SD_DEST, SD_PATH, SD_MANAGER, "KillUnit", CALL_MS, acted, c, e, sizeof e, "ssi",
                              h->unit, "all", (int32_t)sig);
    }
    if (rc) {
        log_warn("systemd runner: %s", e);
        free(c);
        errno = ESRCH; /* the caller signals the group itself */
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

static void sd_close(run_handle *h)
{
    if (!h || h->closing) return;
    h->closing = true;
    sdbus_slot_free(h->m_props);
    h->m_props = NULL;
    uv_close((uv_handle_t *)&h->poll, timer_closed);
    uv_close((uv_handle_t *)&h->tail, timer_closed);
}

static void sd_free(runner *r)
{
    sd_runner *sr = (sd_runner *)r;
    sdbus_slot_free(sr->m_jobs);
    /* answers every call still in flight ("connection closed"): the
     * handles they hold go with them */
    sdbus_close(sr->bus);
    sr->bus = NULL;
    if (sr->handles) { /* closed, their timers' close callbacks still to come */
        sr->freeing = true;
        return;
    }
    free(sr->log_dir);
    free(sr);
}

static void on_lost(const char *why, void *ud)
{
    sd_runner *sr = ud;
    snprintf(sr->lost, sizeof sr->lost, "%s", why);
    log_warn("systemd runner: %s; the units keep running, their services are marked failed", why);
    /* every handle ends: nothing more will be heard of its unit */
    for (run_handle *h = sr->handles; h; h = h->next) {
        if (h->closing || h->delivered) continue;
        h->refs++;
        deliver(h, -1, 0, true, why);
        h_unref(h);
    }
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
    /* without Subscribe systemd sends no JobRemoved (nor, before v253,
     * PropertiesChanged) */
    if (sdbus_call(bus, SD_DEST, SD_PATH, SD_MANAGER, "Subscribe", SYNC_MS, NULL, e, sizeof e, NULL) ||
        sdbus_match_signal(bus, &sr->m_jobs, NULL, SD_PATH, SD_MANAGER, "JobRemoved", on_job_removed, sr, e,
                           sizeof e) ||
        sdbus_attach(bus, loop, on_lost, sr, e, sizeof e)) {
        errf(err, errlen, "systemd runner: %s", e);
        sdbus_slot_free(sr->m_jobs);
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
    return &sr->r;
}
