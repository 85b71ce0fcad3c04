/* sup_reconcile.c - what a previous daemon left (supervisor.h
 * sup_reconcile): the groups its run files name, killed and confirmed
 * gone; then the holders of the configured ports, killed when they are
 * orphans of a previous gpumod, else only reported; and, with a runner
 * that can (systemd), the units that still run, adopted as this daemon's
 * own (again when the bus comes back).
 *
 * Only /proc is read here, never the host monitor: a leftover's memory
 * is the start-up's business (daemon/startup.c waits for it when
 * sup_left_behind says a previous daemon did not stop its services). */
#include "daemon/sup_internal.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drivers/check.h"
#include "drivers/driver.h"
#include "drivers/hash.h"
#include "host/ports.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/slurp.h"

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


void sv_recon_release(sup *s)
{
    for (size_t i = 0; i < s->nrecon; i++) {
        free(s->recon[i].id);
        free(s->recon[i].cmdline);
    }
    free(s->recon);
    s->recon = NULL;
    s->nrecon = 0;
}

static void recon_finish(sup *s)
{
    sv_recon_release(s);
    uv_timer_stop(&s->t_recon);
    void (*cb)(void *) = s->recon_cb;
    s->recon_cb = NULL;
    if (cb) cb(s->recon_ud);
    sv_maybe_shutdown_done(s);
}

/* SIGKILL every group the reconcile still waits for (shutdown, hurry). */
void sv_recon_kill_now(sup *s)
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
            sv_emit(s, r->id, "exit", NULL, NULL, words, d.p);
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
            sv_emit(s, r->id, "exit", NULL, NULL, words, data);
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
    const settings *st = sv_set_of(s);
    bool real = sv_ports_read_real_proc(s);
    bool killing = false;
    pid_t seen[64];
    size_t nseen = 0;
    for (size_t i = 0; i < cfg->n_presets; i++) {
        const preset *p = &cfg->presets[i];
        if (!p->id || p->driver == DRV_REMOTE || p->port == 0 || p->port > 65535) continue;
        svc *adopted = sv_find(s, p->id);
        if (adopted && adopted->h) continue; /* held by its own adopted unit */
        const char *host = driver_host(p);
        if (sv_port_surely_free(s, host, (int)p->port)) continue;
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
            sv_emit(s, p->id, "gate", NULL, NULL, words, d.p);
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
    const settings *st = sv_set_of(s);
    for (size_t i = 0; i < s->cfg->n_presets; i++) {
        const preset *p = &s->cfg->presets[i];
        if (!p->id || p->driver == DRV_REMOTE) continue;
        svc *v = sv_find(s, p->id);
        if (!v) v = sv_add_svc(s, p->id);
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
        runner_spec rs = {.argv = l.argv.n ? &l.argv : NULL, .id = v->id, .on_output = sv_on_output,
                          .on_exit = sv_on_exit_cb, .on_respawn = sv_on_respawn_cb, .ud = v};
        v->canary_embed = driver_argv_embeds(&l.argv);
        run_handle *h = s->run->adopt(s->run, &rs, err, sizeof err);
        launch_release(&l);
        if (!h) {
            if (err[0]) log_warn("supervisor: '%s': reconcile: %s", v->id, err);
            continue;
        }
        if (v->state == SVC_FAILED) sv_feed(v, EV_RESET, "its unit runs: adopted again");
        sv_ensure_timers(v);
        overrides_release(&v->ov); /* a unit runs what is installed: the preset */
        sv_copy_running(v, p, st);
        const char *older = s->run->adopt_note ? s->run->adopt_note(h) : NULL;
        if (older)
            snprintf(v->run_hash, sizeof v->run_hash, "%s", RUN_HASH_OLDER);
        else if (config_hash(p, st, v->run_hash, NULL, err, sizeof err) != 0)
            v->run_hash[0] = 0;
        sv_open_log(v, st);
        logscan_init(&v->ls, p->driver);
        v->ready_said = 0;
        v->h = h;
        v->exited = false;
        v->pgid = v->pid = 0;
        v->seq = ++s->seq;
        snprintf(v->origin, sizeof v->origin, "reconcile");
        v->outcome = "pending";
        v->start_at_ms = sv_wall_ms();
        char *w = older ? xasprintf("found running as its systemd unit: adopted, but it runs an older configuration "
                                    "(%s): a switch restarts it", older)
                        : xasprintf("found running as %s of a previous daemon: adopted", "its systemd unit");
        log_info("supervisor: '%s': %s", v->id, w);
        sv_feed(v, EV_RESPAWNED, w);
        free(w);
        sv_loading_again(v);
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
        svc *adopted = sv_find(s, id);
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
        r->term_ms = sv_set_of(s)->supervisor.stop_timeout_ms > 0 ? sv_set_of(s)->supervisor.stop_timeout_ms : 30000;
        r->killed = false;
        r->members = members;
        kill(-pgid, SIGTERM);
    }
    if (d) closedir(d);
    uv_timer_start(&s->t_recon, recon_poll, 0, KILL_POLL_MS);
}


/* The systemd runner reconnected after it lost the bus: the units that
 * ran on are adopted again. */
void sv_bus_back(void *ud)
{
    adopt_units(ud, true);
}

bool sup_left_behind(const sup *s)
{
    return s->left_behind;
}

