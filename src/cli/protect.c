/* protect.c - `gpumod protect UNIT`: a drop-in that keeps an operator's
 * own service (sshd, an IDE server) alive when a model load drives the
 * host into memory pressure: MemoryMin/MemoryLow shield its memory from
 * reclaim, OOMScoreAdjust steers the kernel's OOM killer elsewhere, and
 * ManagedOOMPreference=avoid does the same for systemd-oomd where it runs.
 *
 * The drop-in is <unitdir>/<UNIT>.d/50-gpumod-protect.conf, printed, or
 * with --install written like the templates (diff, marker, --yes,
 * --force, Reload).  Nothing here reads the configuration. */
#include "cli/cli.h"
#include "cli/template.h"
#include "core/unit.h"
#include "systemd/install.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROTECT_FILE "50-gpumod-protect.conf"

int cmd_protect(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("protect");
    tpl_install_opts o = {.user = tpl_default_user()};
    const char *unit = NULL, *unit_dir = NULL;
    unit_protect u = {.version = GPUMOD_VERSION, .memory_min = "128M", .memory_low = "512M", .oom_score_adjust = -900};
    bool install = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "--user"))
            o.user = true;
        else if (!strcmp(a, "--system"))
            o.user = false;
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
