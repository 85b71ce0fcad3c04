/* daemon.c - `gpumod serve`: set up, run and tear down the one loop.
 *
 * Order matters and is the design:
 *   config (errors: exit 2, nothing touched) -> directories -> the state
 *   dir's lock (a second daemon exits 1 naming the first) -> the store ->
 *   host monitor and supervisor -> reconcile what a previous daemon left
 *   -> watchdog -> listen -> READY=1.
 * Nothing listens before reconcile has finished, so no client can start a
 * service on a port a leftover still holds.  Shutdown is the same in
 * reverse: STOPPING=1, no new connections, watchdog off, every service
 * stopped and verified (sup_shutdown), then the monitor and the store;
 * only then exit 0.  Under the spawn runner no child outlives the daemon,
 * and gpumod-exec makes that true even for kill -9 (docs/exec.md). */
#include "daemon/daemon.h"
#include "core/policy.h"
#include "daemon/api.h"
#include "daemon/api_ebench.h"
#include "daemon/api_events.h"
#include "util/log.h"
#include "daemon/notify.h"
#include "daemon/pidlock.h"
#include "daemon/rhost.h"
#include "daemon/rmodels.h"
#include "daemon/switch.h"
#include "daemon/tunelease.h"
#include "router/router.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/exitcode.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct dmn {
    gpumodd g;
    rhost_glue *rglue; /* what the router is lent (daemon/rhost.c) */
    uv_loop_t loop;
    uv_signal_t sig_term, sig_int, sig_hup;
    uv_timer_t wd_timer; /* systemd's WATCHDOG=1 */
    bool wd_timer_on;
    uv_timer_t prune_timer; /* event and journal retention: at start, then hourly */
    bool prune_timer_on;
    int lock_fd;
    char *exec_helper, *run_dir;
    bool listening;
    bool reconciled;
    bool stop_requested; /* a signal came before the daemon was up */
    int pending_closes;  /* shutdown steps not yet finished */
    int exit_code;
    char *group_name; /* socket_group resolved at start */
    gid_t group_gid;
    bool group_ok;
    int64_t refused_logged_ms; /* the last "refused a client" line */
    unsigned long long refused_quiet;
    int signals; /* SIGTERM/SIGINT received */
    daemon_opts opts; /* the router's flags */
} dmn;

int daemon_mkdirs(const char *path, unsigned perm, char *err, size_t errlen)
{
    char *p = xstrdup(path);
    for (char *s = p + 1;; s++) {
        if (*s == '/' || !*s) {
            char c = *s;
            *s = '\0';
            if (mkdir(p, (mode_t)perm) && errno != EEXIST) {
                snprintf(err, errlen, "cannot create directory '%s': %s", p, strerror(errno));
                free(p);
                return -1;
            }
            *s = c;
            if (!c) break;
        }
    }
    free(p);
    struct stat st;
    if (stat(path, &st) || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "'%s' is not a directory", path);
        return -1;
    }
    return 0;
}

int daemon_group_can_reach(const char *path, gid_t gid, char *why, size_t whylen)
{
    char *p = xstrdup(path);
    int ok = 1;
    for (char *slash = strrchr(p, '/'); slash; slash = strrchr(p, '/')) {
        if (slash == p) slash[1] = '\0'; /* "/" itself */
        else *slash = '\0';
        struct stat st;
        if (stat(p, &st)) {
            snprintf(why, whylen, "cannot stat '%s': %s", p, strerror(errno));
            ok = -1;
            break;
        }
        bool x = (st.st_mode & S_IXOTH) || (st.st_gid == gid && (st.st_mode & S_IXGRP));
        if (!x) {
            snprintf(why, whylen, "directory '%s' (mode %04o, group %ld) is not searchable by group %ld", p,
                     (unsigned)(st.st_mode & 07777), (long)st.st_gid, (long)gid);
            ok = 0;
            break;
        }
        if (slash == p) break;
    }
    free(p);
    return ok;
}

/* path made absolute against the current directory (caller frees) */
static char *abs_path(const char *path)
{
    if (path[0] == '/') return xstrdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return xstrdup(path);
    return xasprintf("%s/%s", cwd, path);
}

/* gpumod-exec next to this binary (a build tree, or a prefix whose
 * libexec is beside bin), else the configured LIBEXECDIR. */
static char *find_exec_helper(void)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            char *p = xasprintf("%s/gpumod-exec", self);
            if (access(p, X_OK) == 0) return p;
            free(p);
        }
    }
    return xasprintf("%s/gpumod-exec", GPUMOD_LIBEXECDIR);
}

/* ---- who may use the socket -------------------------------------------- */

/* Fallback for a kernel without SO_PEERGROUPS: the Groups: line of
 * /proc/PID/status, read whole (getline: no line length limit).  1 a
 * member, 0 not, -1 unknown (unreadable, or a malformed number: never
 * guess from a cut one). */
static int proc_in_group(pid_t pid, gid_t gid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    char *line = NULL;
    size_t cap = 0;
    int found = -1;
    while (getline(&line, &cap, f) > 0) {
        if (strncmp(line, "Groups:", 7)) continue;
        found = 0;
        char *p = line + 7, *end;
        for (;;) {
            while (*p == ' ' || *p == '\t') p++;
            if (!*p || *p == '\n') break;
            errno = 0;
            unsigned long g = strtoul(p, &end, 10);
            if (end == p || errno || (*end && *end != ' ' && *end != '\t' && *end != '\n')) {
                found = -1;
                break;
            }
            if ((gid_t)g == gid) found = 1;
            p = end;
        }
        break;
    }
    free(line);
    fclose(f);
    return found;
}

/* Whether the peer is in group gid: its primary group, else its
 * supplementary groups as the kernel gave them at accept
 * (SO_PEERGROUPS), else (older kernels) /proc. */
static bool peer_in_group(const srv_peer *peer, gid_t gid)
{
    if (peer->gid == gid) return true;
    if (peer->groups_known) {
        for (size_t i = 0; i < peer->ngroups; i++)
            if (peer->groups[i] == gid) return true;
        return false;
    }
    return proc_in_group(peer->pid, gid) == 1;
}

#define REFUSED_LOG_EVERY_MS 10000

static bool allow_peer(const srv_peer *peer, void *ud)
{
    dmn *m = ud;
    if (peer->uid == 0 || peer->uid == geteuid()) return true;
    if (m->group_ok && peer_in_group(peer, m->group_gid)) return true;
    /* a client retrying in a loop must not flood the log: one line per
     * REFUSED_LOG_EVERY_MS, with how many were not logged */
    int64_t now = clock_mono_ms();
    if (m->refused_logged_ms && now - m->refused_logged_ms < REFUSED_LOG_EVERY_MS) {
        m->refused_quiet++;
        return false;
    }
    log_warn("control socket: refused a client with uid %ld gid %ld (pid %ld): not the daemon's user, root or "
             "a member of socket_group%s",
             (long)peer->uid, (long)peer->gid, (long)peer->pid, m->group_ok ? "" : " (none is set)");
    if (m->refused_quiet)
        log_warn("control socket: %llu more refused clients were not logged in the last %d s",
                 (unsigned long long)m->refused_quiet, REFUSED_LOG_EVERY_MS / 1000);
    m->refused_quiet = 0;
    m->refused_logged_ms = now;
    return false;
}

static void request_cb(srv_conn *c, const http_msg *msg, const view *body, void *ud)
{
    dmn *m = ud;
    api_request(c, msg, body, &m->g);
}

static void body_cb(srv_conn *c, const view *chunk, bool last, void *ud)
{
    dmn *m = ud;
    api_body(c, chunk, last, &m->g);
}

static void abort_cb(srv_conn *c, void *ud)
{
    dmn *m = ud;
    api_abort(c, &m->g);
}

static void drain_cb(srv_conn *c, void *ud)
{
    dmn *m = ud;
    api_events_drain(&m->g, c);
}

/* ---- shutdown ---------------------------------------------------------- */

static void close_handle_cb(uv_handle_t *h)
{
}

static void noop_cb(void *ud)
{
}

static void final_close(dmn *m)
{
    uv_close((uv_handle_t *)&m->sig_term, close_handle_cb);
    uv_close((uv_handle_t *)&m->sig_int, close_handle_cb);
    uv_close((uv_handle_t *)&m->sig_hup, close_handle_cb);
    if (m->wd_timer_on) uv_close((uv_handle_t *)&m->wd_timer, close_handle_cb);
    if (m->prune_timer_on) uv_close((uv_handle_t *)&m->prune_timer, close_handle_cb);
}

static void hostmon_closed(void *ud)
{
    dmn *m = ud;
    m->g.hm = NULL;
    final_close(m);
}

static void step_done(void *ud)
{
    dmn *m = ud;
    if (--m->pending_closes > 0) return;
    sup_free(m->g.sup);
    m->g.sup = NULL;
    log_info("every service is stopped; shutting down");
    hostmon_close(m->g.hm, hostmon_closed, m);
}

static void srv_closed(void *ud)
{
    dmn *m = ud;
    m->g.srv = NULL;
    step_done(m);
}

static void router_closed(void *ud)
{
    step_done(ud);
}

static void wd_closed(void *ud)
{
    dmn *m = ud;
    m->g.wd = NULL;
    step_done(m);
}

static void rm_closed(void *ud)
{
    dmn *m = ud;
    m->g.rm = NULL;
    step_done(m);
}

static void shutdown_daemon(dmn *m, const char *why)
{
    if (m->g.shutting_down) {
        log_info("%s: already shutting down", why);
        return;
    }
    m->g.shutting_down = true;
    if (!m->reconciled) { /* finish reconcile first; its callback comes back here */
        m->stop_requested = true;
        log_info("%s: shutting down once the leftovers of the previous daemon are handled", why);
        return;
    }
    log_info("%s: shutting down: stopping every service", why);
    char err[256];
    if (notify_send("STOPPING=1", err, sizeof err) < 0) log_warn("%s", err);
    m->pending_closes = 1; /* sup_shutdown */
    api_close_follows(&m->g);
    if (m->g.router) { /* first: waiting requests answered, streams ended, pools closed */
        m->pending_closes++;
        router_close(m->g.router, router_closed, m);
    }
    if (m->g.srv) {
        m->pending_closes++;
        srv_close(m->g.srv, srv_closed, m);
    }
    if (m->g.wd) {
        m->pending_closes++;
        watchdog_close(m->g.wd, wd_closed, m);
    }
    if (m->g.rm) {
        m->pending_closes++;
        sup_set_json_ext(m->g.sup, NULL, NULL);
        rmodels_close(m->g.rm, rm_closed, m);
    }
    if (m->g.sw) switch_shutdown(m->g.sw); /* a switch in flight is abandoned: journal `interrupted` */
    tunelease_close(m->g.tl);              /* a lease held stays recorded: the next daemon says daemon_restart */
    api_ebench_shutdown();                 /* a llama-bench that runs is killed, not waited for */
    sup_shutdown(m->g.sup, step_done, m);
}

static void on_signal(uv_signal_t *h, int signum)
{
    dmn *m = h->data;
    if (signum == SIGHUP) {
        if (m->g.shutting_down) return;
        buf out = BUF_INIT;
        int status;
        api_reload(&m->g, "signal", &out, &status);
        buf_release(&out);
        return;
    }
    const char *name = signum == SIGTERM ? "SIGTERM" : "SIGINT";
    if (++m->signals >= 2 && m->g.shutting_down) {
        /* the operator insists: no more grace periods */
        log_warn("%s again: hurrying the shutdown: SIGKILL to every service group now, no NVML verify", name);
        if (m->g.sup) sup_hurry(m->g.sup);
        return;
    }
    shutdown_daemon(m, name);
}

/* Retention (docs/interfaces.md "Events"): events beyond events_keep or
 * older than events_max_age, switches beyond the last 1000.  Each call
 * deletes a bounded batch; a full one comes back in a second. */
#define PRUNE_EVERY_MS 3600000
static void on_prune_timer(uv_timer_t *t)
{
    dmn *m = t->data;
    const settings *set = &m->g.cfg->set;
    store_retention r = {.events_keep = set->events_keep, .events_max_age_ms = set->events_max_age_ms,
                         .switches_keep = STORE_SWITCHES_KEEP, .now_ms = clock_unix_ms()};
    int64_t ne = 0, nsw = 0;
    char err[256];
    int rc = store_prune(m->g.st, &r, &ne, &nsw, err, sizeof err);
    if (rc < 0)
        log_warn("retention: %s", err);
    else if (ne || nsw)
        log_info("retention: pruned %lld event(s) and %lld switch(es) (events_keep %lld, events_max_age %lld s)",
                 (long long)ne, (long long)nsw, (long long)set->events_keep,
                 (long long)(set->events_max_age_ms / 1000));
    uv_timer_start(t, on_prune_timer, rc == 1 ? 1000 : PRUNE_EVERY_MS, 0);
}

static void on_wd_timer(uv_timer_t *t)
{
    char err[256];
    if (notify_send("WATCHDOG=1", err, sizeof err) < 0) log_warn("%s", err);
}

/* ---- start-up ---------------------------------------------------------- */

static void on_event(const store_event *e, void *ud)
{
    dmn *m = ud;
    if (m->g.router) router_on_event(m->g.router, e);
    if (m->g.rm) rmodels_on_event(m->g.rm, e);
    if (e->from || e->to)
        log_info("%s %s: %s -> %s%s%s", e->kind, e->service ? e->service : "-", e->from ? e->from : "-",
                 e->to ? e->to : "-", e->reason ? ": " : "", e->reason ? e->reason : "");
    else
        log_info("%s %s%s%s", e->kind, e->service ? e->service : "-", e->reason ? ": " : "",
                 e->reason ? e->reason : "");
}

/* Every switch's duration into the router's metrics (a person's too, not
 * only those the activator asked for). */
static void on_switch_end(swx *x, int64_t id, const char *to_mode, const char *origin, const char *outcome,
                          int64_t duration_ms, void *ud)
{
    dmn *m = ud;
    if (m->g.router)
        rm_switch(router_metrics(m->g.router), (double)duration_ms / 1000.0, !strcmp(outcome, "committed"));
}

static int start_listening(dmn *m)
{
    gpumodd *g = &m->g;
    char err[512];
    srv_opts so = {.on_request = request_cb,
                   .allow = allow_peer,
                   .on_abort = abort_cb,
                   .on_drain = drain_cb, /* an event stream catching up */
                   .on_head = api_head, /* route body limits (api.h) */
                   .on_body = body_cb,
                   .limits = {.max_body = API_SERVER_MAX_BODY},
                   .ud = m};
    g->srv = srv_new(&m->loop, &so);
    char *dir = xstrdup(g->socket_path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        struct stat st;
        if (stat(dir, &st)) {
            /* ours to create: with socket_group, its members must be able
             * to enter every directory we make (0750, that group); else
             * only us */
            for (char *q = dir + 1;; q++) {
                if (*q != '/' && *q) continue;
                char c = *q;
                *q = '\0';
                if (mkdir(dir, m->group_ok ? 0750 : 0700) == 0) {
                    if (m->group_ok && (chown(dir, (uid_t)-1, m->group_gid) || chmod(dir, 0750)))
                        log_warn("control socket: cannot give directory '%s' to group '%s': %s", dir, m->group_name,
                                 strerror(errno));
                } else if (errno != EEXIST) {
                    log_error("control socket: cannot create directory '%s': %s", dir, strerror(errno));
                    free(dir);
                    return -1;
                }
                *q = c;
                if (!c) break;
            }
        }
    }
    free(dir);
    if (srv_listen_unix(g->srv, g->socket_path, err, sizeof err)) {
        log_error("control socket: %s", err);
        fprintf(stderr, "gpumod: %s\n", err);
        return -1;
    }
    if (m->group_ok) { /* members of socket_group may connect: 0660, that group */
        if (chown(g->socket_path, (uid_t)-1, m->group_gid) || chmod(g->socket_path, 0660))
            log_warn("control socket '%s': cannot give it to group '%s': %s", g->socket_path, m->group_name,
                     strerror(errno));
        char why[512];
        if (daemon_group_can_reach(g->socket_path, m->group_gid, why, sizeof why) == 0)
            log_warn("control socket '%s': members of socket_group '%s' cannot reach it: %s; set `socket:` to a "
                     "path in a directory they can enter (e.g. /run/gpumod/gpumod.sock)",
                     g->socket_path, m->group_name, why);
    }
    if (router_listen(g->router, err, sizeof err)) {
        log_error("%s", err);
        fprintf(stderr, "gpumod: %s\n", err);
        return -1;
    }
    m->listening = true;
    return 0;
}

static void reconciled(void *ud)
{
    dmn *m = ud;
    gpumodd *g = &m->g;
    m->reconciled = true;
    if (m->stop_requested) {
        g->shutting_down = false;
        shutdown_daemon(m, "signal during start-up");
        return;
    }
    g->wd = watchdog_new(&m->loop, g->sup, g->hm, &g->cfg->set, NULL);
    switch_env se = {.loop = &m->loop, .sup = g->sup, .hm = g->hm, .st = g->st, .cfg = &g->cfg,
                     .on_event = on_event, .ud = m};
    g->sw = switch_new(&se);
    g->tl = tunelease_new(g);
    g->rm = rmodels_new(&m->loop, g->sup, g->hm, (const config *const *)&g->cfg);
    sup_set_json_ext(g->sup, rmodels_json, g->rm);
    router_env re = {.loop = &m->loop, .state_dir = g->state_dir, .listen = m->opts.listen,
                     .no_router = m->opts.no_router, .insecure = m->opts.insecure};
    m->rglue = rhost_fill(&re.host, g);
    g->router = router_new(&re, g->cfg);
    act_set_events(router_activator(g->router), g->st, on_event, m);
    switch_set_end(g->sw, on_switch_end, m);
    if (start_listening(m)) {
        m->exit_code = 1;
        shutdown_daemon(m, "cannot listen");
        return;
    }
    api_refresh_snapshot(g, 0);
    uv_timer_init(&m->loop, &m->prune_timer);
    m->prune_timer.data = m;
    m->prune_timer_on = true;
    on_prune_timer(&m->prune_timer);
    char err[256];
    if (notify_send("READY=1", err, sizeof err) < 0) log_warn("%s", err);
    long long wms = notify_watchdog_ms();
    if (wms > 0) {
        uv_timer_init(&m->loop, &m->wd_timer);
        m->wd_timer.data = m;
        m->wd_timer_on = true;
        uv_timer_start(&m->wd_timer, on_wd_timer, (uint64_t)(wms / 2 > 0 ? wms / 2 : 1),
                       (uint64_t)(wms / 2 > 0 ? wms / 2 : 1));
        on_wd_timer(&m->wd_timer);
    }
    log_info("gpumod %s ready: pid %ld, socket %s, config %s, state %s, %zu presets, %zu modes", GPUMOD_VERSION,
             (long)getpid(), g->socket_path, g->cfg->config_dir, g->state_dir, g->cfg->n_presets, g->cfg->n_modes);
    /* a journal a crash left open, then switch.startup_mode, through a switch (docs/modes.md) */
    switch_startup(g->sw);
}

/* serve's configuration: loaded (its warnings logged), the router's
 * listen address checked.  0, or an exit code after a message. */
static int load_config(dmn *m, const daemon_opts *o)
{
    gpumodd *g = &m->g;
    char err[512];
    g->cfg = xcalloc(1, sizeof *g->cfg);
    if (config_load(g->cfg, &g->paths)) {
        buf db = BUF_INIT;
        diags_text(&db, &g->cfg->diags, NULL);
        fputs(db.p, stderr);
        buf_release(&db);
        fprintf(stderr, "gpumod: serve: the configuration in %s has %zu error%s; fix them and start again\n",
                g->cfg->config_dir, g->cfg->diags.errors, g->cfg->diags.errors == 1 ? "" : "s");
        return EXIT_USAGE;
    }
    for (size_t i = 0; i < g->cfg->diags.n; i++) {
        const diag *d = &g->cfg->diags.v[i];
        log_warn("config: %s:%d:%d: %s", d->pos.file ? d->pos.file : "-", d->pos.line, d->pos.col, d->msg);
    }
    const settings *set = &g->cfg->set;
    m->opts = *o;
    if (set->router.enabled && !o->no_router && router_check_listen(set, o->listen, o->insecure, err, sizeof err)) {
        fprintf(stderr, "gpumod: serve: %s\n", err);
        return EXIT_USAGE;
    }
    return 0;
}

/* The state, log and socket paths; a detached daemon (chdir_root) makes
 * them and what reload re-reads absolute, then leaves its directory. */
static void place_paths(dmn *m, const daemon_opts *o)
{
    gpumodd *g = &m->g;
    const settings *set = &g->cfg->set;
    g->state_dir = o->chdir_root ? abs_path(set->state_dir) : xstrdup(set->state_dir);
    g->log_dir = o->chdir_root ? abs_path(set->log_dir) : xstrdup(set->log_dir);
    g->socket_path = o->chdir_root ? abs_path(set->socket) : xstrdup(set->socket);
    if (o->chdir_root) {
        /* a detached daemon must not pin the directory it was started in */
        if (g->paths.config_dir && g->paths.config_dir[0] != '/') {
            char *cd = abs_path(g->paths.config_dir);
            free((char *)g->paths.config_dir);
            g->paths.config_dir = cd;
        }
        free((char *)g->paths.state_dir);
        g->paths.state_dir = xstrdup(g->state_dir);
        free((char *)g->paths.socket);
        g->paths.socket = xstrdup(g->socket_path);
        if (chdir("/")) fprintf(stderr, "gpumod: serve: chdir /: %s\n", strerror(errno));
    }
    m->run_dir = xasprintf("%s/run", g->state_dir);
}

/* The directories made, the state directory locked (*held 1), the store
 * opened (*held 2), the socket's group looked up.  0, or an exit code
 * after a message. */
static int claim_state(dmn *m, int *held)
{
    gpumodd *g = &m->g;
    const settings *set = &g->cfg->set;
    char err[512];
    if (daemon_mkdirs(g->state_dir, 0700, err, sizeof err) || daemon_mkdirs(g->log_dir, 0700, err, sizeof err) ||
        daemon_mkdirs(m->run_dir, 0700, err, sizeof err)) {
        fprintf(stderr, "gpumod: serve: %s\n", err);
        return EXIT_REFUSED;
    }
    pid_t holder = 0;
    int lr = pidlock_acquire(g->state_dir, &m->lock_fd, &holder, err, sizeof err);
    if (lr == 1) {
        if (holder)
            fprintf(stderr, "gpumod: another daemon (pid %ld) owns %s\n", (long)holder, g->state_dir);
        else
            fprintf(stderr, "gpumod: another daemon owns %s\n", g->state_dir);
        return EXIT_REFUSED;
    }
    if (lr < 0) {
        fprintf(stderr, "gpumod: serve: %s\n", err);
        return EXIT_REFUSED;
    }
    *held = 1;
    bool missing;
    if (store_open(&g->st, g->state_dir, true, 2000, &missing, err, sizeof err)) {
        fprintf(stderr, "gpumod: serve: %s\n", err);
        return EXIT_REFUSED;
    }
    *held = 2;
    if (set->socket_group && *set->socket_group) {
        struct group *gr = getgrnam(set->socket_group);
        if (!gr) {
            fprintf(stderr, "gpumod: serve: socket_group '%s' is not a group on this host\n", set->socket_group);
            return EXIT_USAGE;
        }
        m->group_name = xstrdup(set->socket_group);
        m->group_gid = gr->gr_gid;
        m->group_ok = true;
    }
    return 0;
}

/* The loop: the host monitor, the supervisor, the signals, then
 * reconciliation (which opens the socket and the router once it is done);
 * until the daemon stops.  The exit code. */
static int run_loop(dmn *m)
{
    gpumodd *g = &m->g;
    const settings *set = &g->cfg->set;
    char err[512];
    signal(SIGPIPE, SIG_IGN);
    uv_loop_init(&m->loop);
    g->loop = &m->loop;
    g->runner = set->supervisor.runner == RUNNER_SYSTEMD ? "systemd" : "spawn";
    g->started_unix_ms = clock_unix_ms();
    g->started_mono_ms = clock_mono_ms();
    snapshot_opts so;
    snapshot_opts_from_settings(set, &so);
    g->hm = hostmon_new(&m->loop, &so);
    m->exec_helper = find_exec_helper();
    sup_env env = {.loop = &m->loop, .st = g->st, .hm = g->hm, .exec_helper = m->exec_helper,
                   .proc_root = NULL, .run_dir = m->run_dir, .on_event = on_event, .ud = m};
    g->sup = sup_new(&env, g->cfg, err, sizeof err);
    if (!g->sup) {
        fprintf(stderr, "gpumod: serve: %s\n", err);
        hostmon_close(g->hm, noop_cb, NULL);
        uv_run(&m->loop, UV_RUN_DEFAULT);
        uv_loop_close(&m->loop);
        return EXIT_REFUSED;
    }
    uv_signal_init(&m->loop, &m->sig_term);
    uv_signal_init(&m->loop, &m->sig_int);
    uv_signal_init(&m->loop, &m->sig_hup);
    m->sig_term.data = m->sig_int.data = m->sig_hup.data = m;
    uv_signal_start(&m->sig_term, on_signal, SIGTERM);
    uv_signal_start(&m->sig_int, on_signal, SIGINT);
    uv_signal_start(&m->sig_hup, on_signal, SIGHUP);
    log_info("gpumod %s starting: pid %ld, exec helper %s, runner %s", GPUMOD_VERSION, (long)getpid(),
             m->exec_helper, g->runner);
    sup_reconcile(g->sup, reconciled, m);

    uv_run(&m->loop, UV_RUN_DEFAULT);
    router_free(g->router);
    g->router = NULL;
    rhost_free(m->rglue);
    m->rglue = NULL;
    switch_free(g->sw);
    g->sw = NULL;
    tunelease_free(g->tl);
    g->tl = NULL;
    if (uv_loop_close(&m->loop) == UV_EBUSY) log_warn("loop closed with handles still open");
    log_info("gpumod stopped (exit %d)", m->exit_code);
    return m->exit_code;
}

int daemon_run(const daemon_opts *o)
{
    if (o->verbose) log_set_level(LOG_DEBUG);
    dmn *m = xcalloc(1, sizeof *m);
    gpumodd *g = &m->g;
    m->lock_fd = -1;

    /* paths given to serve are kept for reload */
    g->paths.config_dir = o->paths.config_dir ? xstrdup(o->paths.config_dir) : NULL;
    g->paths.state_dir = o->paths.state_dir ? xstrdup(o->paths.state_dir) : NULL;
    g->paths.socket = o->paths.socket ? xstrdup(o->paths.socket) : NULL;

    int held = 0; /* 1: the lock, 2: and the store */
    int rc = load_config(m, o);
    if (!rc) {
        place_paths(m, o);
        rc = claim_state(m, &held);
    }
    if (!rc) rc = run_loop(m);

    if (held >= 2) store_close(g->st);
    if (m->lock_fd >= 0) close(m->lock_fd);
    config_release(g->cfg);
    free(g->cfg);
    free((char *)g->paths.config_dir);
    free((char *)g->paths.state_dir);
    free((char *)g->paths.socket);
    free(g->state_dir);
    free(g->log_dir);
    free(g->socket_path);
    free(m->run_dir);
    free(m->exec_helper);
    free(m->group_name);
    free(m);
    return rc;
}
