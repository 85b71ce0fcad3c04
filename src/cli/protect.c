/* protect.c - `gpumod protect UNIT`: a drop-in that keeps an operator's
 * own service (sshd, an IDE server) alive when a model load drives the
 * host into memory pressure: MemoryMin/MemoryLow shield its memory from
 * reclaim, OOMScoreAdjust steers the kernel's OOM killer elsewhere, and
 * ManagedOOMPreference=avoid does the same for systemd-oomd where it runs.
 *
 * The drop-in is <unitdir>/<UNIT>.d/50-gpumod-protect.conf, printed, or
 * with --install written like the templates (diff, marker, --yes,
 * --force, Reload).  Nothing here reads the configuration.
 *
 * The scope is never guessed: without --user or --system it is the
 * manager whose unit directories hold the unit's file (a drop-in for a
 * user unit named like a system one protects nothing), and a unit found
 * in both, or in neither, is refused. */
#include "cli/cli.h"
#include "cli/template.h"
#include "core/unit.h"
#include "systemd/install.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PROTECT_FILE "50-gpumod-protect.conf"

static const char *const system_dirs[] = {"/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system",
                                           "/lib/systemd/system", NULL};
static const char *const user_dirs[] = {"/etc/systemd/user", "/usr/lib/systemd/user", NULL};

/* The first directory holding name (or, for an instance a@b.type, its
 * template a@.type) in one scope's search path; NULL.  Caller frees.
 * GPUMOD_UNIT_SEARCH_ROOT prefixes every directory (tests). */
static char *find_unit(const char *name, bool user)
{
    const char *root = getenv("GPUMOD_UNIT_SEARCH_ROOT");
    if (!root) root = "";
    char *tmpl = NULL;
    const char *at = strchr(name, '@'), *dot = strrchr(name, '.');
    if (at && dot && at + 1 < dot) tmpl = xasprintf("%.*s%s", (int)(at - name + 1), name, dot);
    char *own = NULL;
    if (user) {
        const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
        if (xdg && xdg[0] == '/')
            own = xasprintf("%s/systemd/user", xdg);
        else if (home && home[0] == '/')
            own = xasprintf("%s/.config/systemd/user", home);
    }
    const char *const *dirs = user ? user_dirs : system_dirs;
    char *found = NULL;
    for (int i = -1; !found && (i < 0 || dirs[i]); i++) {
        const char *d = i < 0 ? own : dirs[i];
        if (!d) continue;
        for (int k = 0; k < 2 && !found; k++) {
            const char *f = k ? tmpl : name;
            if (!f) continue;
            char *path = xasprintf("%s%s/%s", root, d, f);
            struct stat st;
            if (!lstat(path, &st))
                found = path;
            else
                free(path);
        }
    }
    free(own);
    free(tmpl);
    return found;
}

/* --user / --system when neither was given: where the unit's file is. */
static int pick_scope(const char *name, bool *user)
{
    char *sys = find_unit(name, false), *usr = find_unit(name, true);
    int rc = 0;
    if (sys && usr) {
        fprintf(stderr, "gpumod: protect: %s is both a system unit (%s) and a user unit (%s): give --system or "
                        "--user\n", name, sys, usr);
        rc = -1;
    } else if (!sys && !usr) {
        fprintf(stderr, "gpumod: protect: no unit file for %s in the system unit directories (/etc/systemd/system, "
                        "/run/systemd/system, /usr/lib/systemd/system, /lib/systemd/system) or the user ones "
                        "(~/.config/systemd/user, /etc/systemd/user, /usr/lib/systemd/user): check the name "
                        "(systemctl status %s), or give --system or --user\n", name, name);
        rc = -1;
    } else {
        *user = usr != NULL;
    }
    free(sys);
    free(usr);
    return rc;
}

int cmd_protect(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("protect");
    tpl_install_opts o = {0};
    bool scope_given = false;
    const char *unit = NULL, *unit_dir = NULL;
    unit_protect u = {.version = GPUMOD_VERSION, .memory_min = "128M", .memory_low = "512M", .oom_score_adjust = -900};
    bool install = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "--user"))
            o.user = true, scope_given = true;
        else if (!strcmp(a, "--system"))
            o.user = false, scope_given = true;
        else if (!strcmp(a, "--install"))
            install = true;
        else if (!strcmp(a, "--yes"))
            o.yes = true;
        else if (!strcmp(a, "--force"))
            o.force = true;
        else if (!strcmp(a, "--no-reload"))
            o.no_reload = true;
        else if (!strcmp(a, "--unit-dir") && has_val)
            unit_dir = argv[++i];
        else if (!strcmp(a, "--memory-min") && has_val)
            u.memory_min = argv[++i];
        else if (!strcmp(a, "--memory-low") && has_val)
            u.memory_low = argv[++i];
        else if (!strcmp(a, "--oom-score-adjust") && has_val) {
            int64_t v;
            if (cli_int_arg(c, k, a, argv[++i], -1000, 1000, &v)) return EXIT_USAGE;
            u.oom_score_adjust = (int)v;
        } else if (a[0] != '-' && !unit)
            unit = a;
        else
            return cli_usage_error(c, k, "protect: unexpected argument '%s'", a);
    }
    if (!unit) return cli_usage_error(c, k, "protect: which unit? give its name (sshd.service)");
    if (!install && (o.yes || o.force || o.no_reload || unit_dir))
        return cli_usage_error(c, k, "protect: --yes, --force, --no-reload and --unit-dir go with --install");
    /* a bare name means its service */
    char *name = strchr(unit, '.') ? xstrdup(unit) : xasprintf("%s.service", unit);
    u.unit = name;
    buf text = BUF_INIT;
    char err[512];
    int rc = EXIT_OK;
    if (unit_render_protect(&text, &u, err, sizeof err)) {
        fprintf(stderr, "gpumod: protect: %s\n", err);
        rc = EXIT_USAGE;
        goto out;
    }
    if (!install) {
        fputs(text.p, stdout);
        goto out;
    }
    if (!scope_given && pick_scope(name, &o.user)) {
        rc = EXIT_USAGE;
        goto out;
    }
    char *dir = install_unit_dir(o.user, unit_dir, err, sizeof err);
    if (!dir) {
        fprintf(stderr, "gpumod: protect: %s\n", err);
        rc = EXIT_USAGE;
        goto out;
    }
    char *path = xasprintf("%s/%s.d/%s", dir, name, PROTECT_FILE);
    bool wrote = false;
    rc = tpl_install_one("protect", path, text.p, &o, &wrote);
    rc = tpl_finish("protect", &o, wrote, rc);
    free(path);
    free(dir);
out:
    buf_release(&text);
    free(name);
    return rc;
}
