/* bench.c - `gpumod bench ...`: exec the gpumod-bench helper.
 *
 * bench is the only part of gpumod that needs libcurl, so it lives in its
 * own executable (git-style) and this binary never links it.  The helper
 * is looked for next to /proc/self/exe (a build tree, or a prefix whose
 * libexec is beside bin), else in GPUMOD_LIBEXECDIR.  The global options
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

#define HELPER "gpumod-bench"

int cmd_bench(cli *c, int argc, char **argv); /* src/main.c's table */

int cmd_bench(cli *c, int argc, char **argv)
{
    char self[PATH_MAX];
    char *dir1 = NULL, *path = NULL;
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            dir1 = xstrdup(self);
            char *p = xasprintf("%s/%s", dir1, HELPER);
            if (access(p, X_OK) == 0)
                path = p;
            else
                free(p);
        }
    }
    if (!path) {
        char *p = xasprintf("%s/%s", GPUMOD_LIBEXECDIR, HELPER);
        if (access(p, X_OK) == 0)
            path = p;
        else
            free(p);
    }
    if (!path) {
        fprintf(stderr, "gpumod: bench: the %s helper is not installed (looked in %s, %s)\n", HELPER,
                dir1 ? dir1 : "(this program's directory is unknown)", GPUMOD_LIBEXECDIR);
        free(dir1);
        return EXIT_USAGE;
    }
    free(dir1);
    if ((c->paths.config_dir && setenv("GPUMOD_CONFIG_DIR", c->paths.config_dir, 1)) ||
        (c->paths.state_dir && setenv("GPUMOD_STATE_DIR", c->paths.state_dir, 1)) ||
        (c->paths.socket && setenv("GPUMOD_SOCKET", c->paths.socket, 1)) ||
        (c->verbose < 0 && setenv("GPUMOD_QUIET", "1", 1))) {
        fprintf(stderr, "gpumod: bench: setenv: %s\n", strerror(errno));
        free(path);
        return EXIT_REFUSED;
    }
    char **av = xcalloc((size_t)argc + 1, sizeof *av);
    av[0] = path;
    for (int i = 1; i < argc; i++) av[i] = argv[i];
    av[argc] = NULL;
    fflush(NULL);
    execv(path, av);
    fprintf(stderr, "gpumod: bench: cannot run '%s': %s\n", path, strerror(errno));
    free(av);
    free(path);
    return EXIT_REFUSED;
}
