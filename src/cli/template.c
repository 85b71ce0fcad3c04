/* template.c - `gpumod template render|install|daemon`: systemd units from
 * the presets, so that a start by hand (`systemctl start`), a restart loop
 * or a cron job passes the same gate as the daemon's starts: every unit
 * runs `gpumod preflight --for ID` as ExecStartPre=.
 *
 * The text comes from core/unit.c; this file gathers the values (absolute
 * binaries through PATH, the measured load time from the state database,
 * the config directory) and writes through systemd/install.c, which
 * never replaces a file gpumod did not write without --force and shows
 * the diff before anything changes.  Without --yes nothing is written. */
#include "cli/cli.h"
#include "cli/ctl.h"
#include "cli/template.h"
#include "core/unit.h"
#include "drivers/driver.h"
#include "drivers/hash.h"
#include "store/db.h"
#include "systemd/install.h"
#include "systemd/sdbus.h"
#include "util/clock.h"
#include "util/errf.h"
#include "util/run.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RELOAD_TIMEOUT_MS 15000

bool tpl_default_user(void)
{
    return geteuid() != 0;
}

/* path made absolute against the working directory, '.' and empty
 * components dropped, symlinks kept; NULL when it has a '..' (systemd
 * refuses such a path, and resolving it lexically could be wrong). */
static char *lexical_abs(const char *path)
{
    char cwd[PATH_MAX];
    char *full = path[0] == '/' ? xstrdup(path) : getcwd(cwd, sizeof cwd) ? xasprintf("%s/%s", cwd, path) : NULL;
    if (!full) return NULL;
    buf b = BUF_INIT;
    for (char *save = NULL, *w = strtok_r(full, "/", &save); w; w = strtok_r(NULL, "/", &save)) {
        if (!strcmp(w, ".")) continue;
        if (!strcmp(w, "..")) {
            free(full);
            buf_release(&b);
            return NULL;
        }
        buf_addc(&b, '/');
        buf_adds(&b, w);
    }
    free(full);
    if (!b.len) buf_addc(&b, '/');
    char *r = xstrdup(b.p);
    buf_release(&b);
    return r;
}

/* The running gpumod, absolute, as the caller named it: argv[0] when it
 * holds a '/', else the PATH entry that has it, so that a link an upgrade
 * moves (/usr/local/bin/gpumod -> /opt/gpumod/0.1/bin/gpumod) stays
 * right.  Only when that is not this very file (same device and inode)
 * /proc/self/exe, the resolved target. */
static char *self_path(const char *argv0, char *err, size_t errlen)
{
    struct stat self, st;
    bool have_self = stat("/proc/self/exe", &self) == 0;
    char *cand = NULL;
    if (argv0 && *argv0) {
        int e = 0;
        char *w = strchr(argv0, '/') ? xstrdup(argv0) : run_which(argv0, &e);
        if (w) cand = lexical_abs(w);
        free(w);
    }
    if (cand && have_self && !stat(cand, &st) && st.st_dev == self.st_dev && st.st_ino == self.st_ino) return cand;
    free(cand);
    char p[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", p, sizeof p - 1);
    if (n <= 0) {
        errf(err, errlen, "cannot read /proc/self/exe: %s", strerror(errno));
        return NULL;
    }
    p[n] = '\0';
    static const char deleted[] = " (deleted)";
    if ((size_t)n > sizeof deleted - 1 && !strcmp(p + n - (sizeof deleted - 1), deleted)) {
        errf(err, errlen, "the running gpumod binary '%s' was deleted or replaced: run the installed gpumod by its "
                          "path", p);
        return NULL;
    }
    return xstrdup(p);
}

/* The system daemon (gpumod.service, StateDirectory=gpumod) resolves its
 * paths in systemd's environment, not the renderer's: state directory
 * $STATE_DIRECTORY, its socket the configured one or STATE/gpumod.sock
 * (no XDG_RUNTIME_DIR there), its logs the configured log_dir or
 * STATE/logs.  The renderer's values count as configured only when they
 * are not its own defaults. */
#define SYSTEM_STATE_DIR "/var/lib/gpumod"

static bool str_is(const char *s, const char *dir, const char *leaf)
{
    if (!s || !dir) return false;
    char *v = xasprintf("%s/%s", dir, leaf);
    bool eq = !strcmp(s, v);
    free(v);
    return eq;
}

static char *system_socket(const cli *c, const config *cfg)
{
    const char *env = getenv("GPUMOD_SOCKET");
    bool overridden = c->paths.socket || (env && *env);
    const char *s = cfg->set.socket;
    if (overridden || !s || str_is(s, getenv("XDG_RUNTIME_DIR"), "gpumod.sock") ||
        str_is(s, cfg->set.state_dir, "gpumod.sock"))
        return xstrdup(SYSTEM_STATE_DIR "/gpumod.sock");
    return xstrdup(s);
}

static char *unit_log_dir(const config *cfg, bool user)
{
    const char *ld = cfg->set.log_dir;
    if (!user && (!ld || str_is(ld, cfg->set.state_dir, "logs"))) return xstrdup(SYSTEM_STATE_DIR "/logs");
    if (ld && ld[0] == '/') return xstrdup(ld);
    if (!ld && cfg->set.state_dir && cfg->set.state_dir[0] == '/') return xasprintf("%s/logs", cfg->set.state_dir);
    return NULL;
}

/* --config-dir for the unit: when this command was pointed elsewhere than
 * the default, and always for --system (the system manager's services
 * have no user HOME to find ~/.config/gpumod from). */
static const char *unit_config_dir(const cli *c, const config *cfg, bool user)
{
    const char *env = getenv("GPUMOD_CONFIG_DIR");
    bool given = c->paths.config_dir || (env && *env);
    if (!given && user) return NULL;
    return cfg->config_abs ? cfg->config_abs : cfg->config_dir;
}

/* The longest load (spawn to ready) the daemon measured for this preset as
 * configured now (its footprint events with the same config hash); -1. */
static int64_t measured_load_ms(const config *cfg, const char *state_dir, const preset *p)
{
    char hash[65], err[256];
    if (config_hash(p, &cfg->set, hash, NULL, err, sizeof err)) return -1;
    store *st;
    bool missing;
    if (store_open(&st, state_dir, false, 200, &missing, err, sizeof err)) {
        if (!missing) fprintf(stderr, "gpumod: template: measured load times unavailable: %s\n", err);
        return -1;
    }
    store_event_query q = {.service = p->id, .limit = 500, .tail = true};
    store_event *ev = NULL;
    size_t n = 0;
    int64_t best = -1;
    if (!store_events_query(st, &q, &ev, &n, err, sizeof err)) {
        for (size_t i = 0; i < n; i++) {
            if (!ev[i].kind || strcmp(ev[i].kind, "footprint") || !ev[i].data) continue;
            cJSON *d = cJSON_Parse(ev[i].data);
            const char *h = jstr(d, "config_hash");
            int64_t ms = (int64_t)jnum(d, "load_ms", -1);
            if (h && !strcmp(h, hash) && ms > best) best = ms;
            cJSON_Delete(d);
        }
        store_events_free(ev, n);
    }
    store_close(st);
    return best;
}

static int64_t pick(int64_t v, int64_t dflt)
{
    return v >= 0 ? v : dflt;
}

/* Render p's unit into out.  Returns EXIT_OK, or EXIT_USAGE with the reason
 * printed (a preset with errors, a binary not found, a value systemd
 * cannot hold). */
static int render_service(const cli *c, const config *cfg, const preset *p, bool user, bool files_check, buf *out,
                          char **log_dir_out)
{
    char err[512];
    if (p->has_errors) {
        cli_print_diags(cfg, p->pos.file);
        fprintf(stderr, "gpumod: template: preset '%s' has configuration errors\n", p->id);
        return EXIT_USAGE;
    }
    launch l = LAUNCH_INIT;
    if (driver_launch(p, &cfg->set, &l, err, sizeof err)) {
        fprintf(stderr, "gpumod: template: %s\n", err);
        return EXIT_USAGE;
    }
    int rc = EXIT_USAGE;
    char *out_file = NULL;
    char *gp = self_path(c->prog, err, sizeof err), *sys_sock = NULL, *log_dir = NULL;
    if (!gp) {
        fprintf(stderr, "gpumod: template: %s\n", err);
        goto out;
    }
    if (!l.argv.n) {
        fprintf(stderr, "gpumod: template: service '%s' (driver %s) runs no process here: no unit to write\n", p->id,
                driver_names[p->driver]);
        goto out;
    }
    /* ExecStart= names the file, absolute, as PATH resolves it now */
    int e = 0;
    char *found = run_which(l.argv.v[0], &e);
    /* absolute, but symlinks kept: a link that an upgrade moves stays right */
    char *abs = found && found[0] != '/' ? realpath(found, NULL) : found;
    if (abs != found) free(found);
    if (abs) {
        free(l.argv.v[0]);
        l.argv.v[0] = abs;
    } else if (files_check) {
        fprintf(stderr,
                "gpumod: template: service '%s': binary '%s' %s (set drivers.%s.binary to its path, or "
                "--no-files-check)\n",
                p->id, l.argv.v[0], e == EACCES ? "is not executable" : strchr(l.argv.v[0], '/') ? "does not exist" : "is not found in PATH",
                driver_names[p->driver]);
        goto out;
    }
    /* the service's output, appended where the daemon's systemd runner
     * reads it (runner.h runner_systemd_new) */
    if ((log_dir = unit_log_dir(cfg, user))) out_file = xasprintf("%s/%s.unit.log", log_dir, p->id);
    if (!user) sys_sock = system_socket(c, cfg);
    unit_service u = {
        .id = p->id,
        .description = p->name && *p->name ? p->name : p->description,
        .version = GPUMOD_VERSION,
        .gpumod = gp,
        .config_dir = unit_config_dir(c, cfg, user),
        .state_dir = user ? NULL : SYSTEM_STATE_DIR,
        .socket = sys_sock,
        .argv = &l.argv,
        .env = &l.env,
        .cwd = l.cwd,
        .output_file = out_file,
        .startup_timeout_ms = pick(p->startup_timeout_ms, cfg->set.supervisor.startup_timeout_ms),
        .measured_load_ms = measured_load_ms(cfg, user ? cfg->set.state_dir : SYSTEM_STATE_DIR, p),
        .stop_timeout_ms = cfg->set.supervisor.stop_timeout_ms,
        .restart = unit_restart(&p->restart, &cfg->set.supervisor.restart),
        .user = user,
    };
    if (unit_render_service(out, &u, err, sizeof err)) {
        fprintf(stderr, "gpumod: template: %s\n", err);
        goto out;
    }
    if (log_dir_out && log_dir) {
        *log_dir_out = log_dir;
        log_dir = NULL;
    }
    rc = EXIT_OK;
out:
    free(log_dir);
    free(sys_sock);
    free(out_file);
    free(gp);
    launch_release(&l);
    return rc;
}

static int render_daemon(const cli *c, const config *cfg, bool user, buf *out)
{
    char err[512];
    char *gp = self_path(c->prog, err, sizeof err);
    if (!gp) {
        fprintf(stderr, "gpumod: template daemon: %s\n", err);
        return EXIT_USAGE;
    }
    /* the daemon stops every service in turn, each up to its stop timeout
     * and then the wait for its memory to come back */
    int64_t total = 0;
    for (size_t i = 0; i < cfg->n_presets; i++)
        if (cfg->presets[i].driver != DRV_REMOTE)
            total += cfg->set.supervisor.stop_timeout_ms + cfg->set.memory.verify_freed_timeout_ms;
    unit_daemon u = {.version = GPUMOD_VERSION, .gpumod = gp, .config_dir = unit_config_dir(c, cfg, user),
                     .services_stop_ms = total, .user = user};
    int rc = unit_render_daemon(out, &u, err, sizeof err);
    if (rc) fprintf(stderr, "gpumod: template daemon: %s\n", err);
    free(gp);
    return rc ? EXIT_USAGE : EXIT_OK;
}

/* The log directory, and its parents, mode 0755. */
static int make_log_dir(const char *dir)
{
    char *d = xstrdup(dir);
    int rc = 0;
    for (char *p = d + 1;; p++) {
        bool last = !*p;
        if (*p == '/' || last) {
            *p = '\0';
            if (mkdir(d, 0755) && errno != EEXIST) {
                fprintf(stderr, "gpumod: template install: cannot create the log directory '%s': %s (the unit "
                                "appends its output there)\n", d, strerror(errno));
                rc = -1;
                break;
            }
            if (last) break;
            *p = '/';
        }
    }
    free(d);
    return rc;
}

int tpl_install_one(const char *what, const char *path, const char *text, const tpl_install_opts *o, bool *wrote)
{
    char err[768];
    install_change chg;
    buf diff = BUF_INIT;
    if (install_file(path, text, o->yes, o->force, &chg, &diff, err, sizeof err)) {
        fprintf(stderr, "gpumod: %s: %s\n", what, err);
        buf_release(&diff);
        return EXIT_REFUSED;
    }
    fputs(diff.p, stdout);
    buf_release(&diff);
    static const char *const verb[2][3] = {{"unchanged", "would create", "would update"},
                                           {"unchanged", "created", "updated"}};
    printf("%s: %s\n", verb[o->yes][chg], path);
    if (o->yes && chg != INSTALL_SAME) *wrote = true;
    return EXIT_OK;
}

int tpl_finish(const char *what, const tpl_install_opts *o, bool wrote, int rc)
{
    if (!o->yes) {
        printf("preview only: nothing written (run again with --yes to apply)\n");
        return rc;
    }
    if (!wrote || o->no_reload) return rc;
    char err[512];
    sdbus *b = NULL;
    /* one 15 s deadline for the connection, the authentication and the call */
    int64_t t0 = clock_mono_ms();
    if (sdbus_open_within(&b, o->user, RELOAD_TIMEOUT_MS, err, sizeof err) ||
        sdbus_systemd_reload(b, RELOAD_TIMEOUT_MS - (clock_mono_ms() - t0), err, sizeof err)) {
        fprintf(stderr, "gpumod: %s: written, but systemd was not reloaded: %s (run systemctl %sdaemon-reload)\n", what,
                err, o->user ? "--user " : "");
        sdbus_close(b);
        return rc ? rc : EXIT_REFUSED;
    }
    sdbus_close(b);
    printf("systemd (%s) reloaded\n", o->user ? "user" : "system");
    return rc;
}

int cmd_template(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("template");
    if (argc < 2) return cli_usage_error(c, k, "template: which action? render, install or daemon");
    const char *act = argv[1];
    bool install = !strcmp(act, "install"), daemon = !strcmp(act, "daemon");
    if (!install && !daemon && strcmp(act, "render"))
        return cli_usage_error(c, k, "template: unknown action '%s' (expected render, install or daemon)", act);
    tpl_install_opts o = {.user = tpl_default_user()};
    const char *id = NULL, *unit_dir = NULL;
    bool all = false, files_check = true, do_install = install;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--user"))
            o.user = true;
        else if (!strcmp(a, "--system"))
            o.user = false;
        else if (!strcmp(a, "--no-files-check"))
            files_check = false;
        else if (!strcmp(a, "--install") && daemon)
            do_install = true;
        else if (!strcmp(a, "--all") && install)
            all = true;
        else if (!strcmp(a, "--yes"))
            o.yes = true;
        else if (!strcmp(a, "--force"))
            o.force = true;
        else if (!strcmp(a, "--no-reload"))
            o.no_reload = true;
        else if (!strcmp(a, "--unit-dir") && i + 1 < argc)
            unit_dir = argv[++i];
        else if (!strncmp(a, "--unit-dir=", 11))
            unit_dir = a + 11;
        else if (a[0] != '-' && !id && !daemon)
            id = a;
        else
            return cli_usage_error(c, k, "template %s: unexpected argument '%s'", act, a);
    }
    if (!do_install && (o.yes || o.force || o.no_reload || unit_dir))
        return cli_usage_error(c, k, "template %s: --yes, --force, --no-reload and --unit-dir are for installing", act);
    if (!daemon && !id == !all)
        return cli_usage_error(c, k, install ? "template install: give a service ID or --all"
                                             : "template render: which service? give its id");

    config cfg;
    config_load(&cfg, &c->paths);
    int rc = EXIT_OK;
    char err[512];
    buf text = BUF_INIT;
    char *dir = NULL;
    if (do_install && !(dir = install_unit_dir(o.user, unit_dir, err, sizeof err))) {
        fprintf(stderr, "gpumod: template: %s\n", err);
        rc = EXIT_USAGE;
        goto out;
    }
    if (daemon) {
        if ((rc = render_daemon(c, &cfg, o.user, &text))) goto out;
        if (!do_install) {
            fputs(text.p, stdout);
            goto out;
        }
        char *path = xasprintf("%s/gpumod.service", dir);
        bool wrote = false;
        rc = tpl_install_one("template daemon", path, text.p, &o, &wrote);
        free(path);
        rc = tpl_finish("template daemon", &o, wrote, rc);
        goto out;
    }
    if (id && !config_preset(&cfg, id)) {
        fprintf(stderr, "gpumod: template: no preset '%s' in %s\n", id, cfg.config_dir);
        rc = EXIT_USAGE;
        goto out;
    }
    if (!install) {
        if ((rc = render_service(c, &cfg, config_preset(&cfg, id), o.user, files_check, &text, NULL))) goto out;
        fputs(text.p, stdout);
        goto out;
    }
    bool wrote = false;
    size_t done = 0;
    for (size_t i = 0; i < cfg.n_presets; i++) {
        const preset *p = &cfg.presets[i];
        if (id && strcmp(p->id, id)) continue;
        if (all && p->driver == DRV_REMOTE) {
            printf("skipped: '%s' (driver remote runs no process here)\n", p->id);
            continue;
        }
        buf_clear(&text);
        char *log_dir = NULL;
        int r = render_service(c, &cfg, p, o.user, files_check, &text, &log_dir);
        if (r == EXIT_OK) {
            char *name = unit_service_name(p->id), *path = xasprintf("%s/%s", dir, name);
            r = tpl_install_one("template install", path, text.p, &o, &wrote);
            /* StandardOutput=append: does not create the directory: a
             * start by hand would fail with 209/STDOUT */
            if (!r && o.yes && log_dir && make_log_dir(log_dir)) r = EXIT_REFUSED;
            free(name);
            free(path);
            done++;
        }
        free(log_dir);
        if (r && (!rc || r == EXIT_USAGE)) rc = r;
    }
    if (all && !done && !rc) printf("no service to install\n");
    rc = tpl_finish("template install", &o, wrote, rc);
out:
    free(dir);
    buf_release(&text);
    config_release(&cfg);
    return rc;
}
