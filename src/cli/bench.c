/* bench.c - the helper executables: `gpumod bench ...`, `gpumod eval ...`
 * and `gpumod tune ...` exec gpumod-bench, `gpumod mcp` gpumod-mcp and
 * `gpumod tui` gpumod-tui.
 *
 * bench, eval and tune are the parts of gpumod that need libcurl, so they live
 * in their own executable (git-style) and this binary never links it; eval
 * runs it under the name gpumod-eval (argv[0], src/helper.c).  The MCP
 * server and the terminal dashboard (ncurses) are helpers of their own for
 * the same reason: `gpumod` stays lean.  A helper
 * is looked for next to /proc/self/exe (a build tree), then in
 * <that directory>/../libexec/gpumod (an install under any prefix), then
 * in GPUMOD_LIBEXECDIR (the prefix it was built for).  The global options
 * travel as the environment every gpumod program reads (GPUMOD_CONFIG_DIR,
 * GPUMOD_STATE_DIR, GPUMOD_SOCKET, GPUMOD_QUIET). */
#include "cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"

int cmd_bench(cli *c, int argc, char **argv); /* src/main.c's table */
int cmd_eval(cli *c, int argc, char **argv);
int cmd_tune(cli *c, int argc, char **argv);
int cmd_mcp(cli *c, int argc, char **argv);
int cmd_tui(cli *c, int argc, char **argv);

/* dir/helper when it is executable (caller frees), else NULL; dir is
 * added to the list of places looked in */
static char *try_dir(const char *dir, const char *helper, buf *looked)
{
    buf_printf(looked, "%s%s", looked->len ? ", " : "", dir);
    char *p = xasprintf("%s/%s", dir, helper);
    if (access(p, X_OK) == 0) return p;
    free(p);
    return NULL;
}

/* exec the executable helper as name (its argv[0]) with argv[1..] */
static int run_helper(cli *c, const char *what, const char *helper, const char *name, int argc,
                      char **argv)
{
    char self[PATH_MAX];
    char *path = NULL;
    buf looked = BUF_INIT;
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    char *slash = n > 0 ? (self[n] = '\0', strrchr(self, '/')) : NULL;
    if (slash) {
        *slash = '\0';
        /* a build tree (beside gpumod), then an install: PREFIX/bin and
         * PREFIX/libexec/gpumod, whatever PREFIX (relocatable, DESTDIR) */
        path = try_dir(self, helper, &looked);
        if (!path) {
            char *lx = xasprintf("%s/../libexec/gpumod", self);
            path = try_dir(lx, helper, &looked);
            free(lx);
        }
    } else {
        buf_printf(&looked, "(this program's directory is unknown: /proc/self/exe)");
    }
    if (!path) path = try_dir(GPUMOD_LIBEXECDIR, helper, &looked);
    if (!path) {
        fprintf(stderr, "gpumod: %s: the %s helper is not installed (looked in %s)\n", what, helper,
                looked.p);
        buf_release(&looked);
        return EXIT_USAGE;
    }
    buf_release(&looked);
    if ((c->paths.config_dir && setenv("GPUMOD_CONFIG_DIR", c->paths.config_dir, 1)) ||
        (c->paths.state_dir && setenv("GPUMOD_STATE_DIR", c->paths.state_dir, 1)) ||
        (c->paths.socket && setenv("GPUMOD_SOCKET", c->paths.socket, 1)) ||
        (c->verbose < 0 && setenv("GPUMOD_QUIET", "1", 1)) ||
        (c->verbose > 0 && setenv("GPUMOD_VERBOSE", "1", 1))) {
        fprintf(stderr, "gpumod: %s: setenv: %s\n", what, strerror(errno));
        free(path);
        return EXIT_REFUSED;
    }
    char **av = xcalloc((size_t)argc + 1, sizeof *av);
    av[0] = (char *)(name ? name : path);
    for (int i = 1; i < argc; i++)
        av[i] = argv[i];
    av[argc] = NULL;
    fflush(NULL);
    execv(path, av);
    fprintf(stderr, "gpumod: %s: cannot run '%s': %s\n", what, path, strerror(errno));
    free(av);
    free(path);
    return EXIT_REFUSED;
}

int cmd_bench(cli *c, int argc, char **argv)
{
    return run_helper(c, "bench", "gpumod-bench", NULL, argc, argv);
}

int cmd_eval(cli *c, int argc, char **argv)
{
    return run_helper(c, "eval", "gpumod-bench", "gpumod-eval", argc, argv);
}

int cmd_tune(cli *c, int argc, char **argv)
{
    return run_helper(c, "tune", "gpumod-bench", "gpumod-tune", argc, argv);
}

/* `model fit|pull|search` and `preset new` need libcurl: the helper runs
 * them.  A global --json (main.c took it) is handed on. */
int cmd_model_helper(cli *c, const char *name, int argc, char **argv)
{
    char **av = xcalloc((size_t)argc + 2, sizeof *av);
    for (int i = 0; i < argc; i++)
        av[i] = argv[i];
    if (c->json) av[argc++] = "--json";
    int rc = run_helper(c, name + 7, "gpumod-bench", name, argc, av);
    free(av);
    return rc;
}

int cmd_mcp(cli *c, int argc, char **argv)
{
    return run_helper(c, "mcp", "gpumod-mcp", NULL, argc, argv);
}

int cmd_tui(cli *c, int argc, char **argv)
{
    return run_helper(c, "tui", "gpumod-tui", NULL, argc, argv);
}
