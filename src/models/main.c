/* main.c (models) - the entry of gpumod-model and gpumod-preset: the
 * settings, --json, SIGINT, then the subcommand. */
#include "models/models.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/exitcode.h"

static volatile int interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* --json anywhere (the lean gpumod appends it for `gpumod --json model
 * ...`) is taken out; the rest stays in order. */
static int setup(mctx *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    c->interrupted = &interrupted;
    const char *q = getenv("GPUMOD_QUIET");
    c->quiet = q && *q && strcmp(q, "0");
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && !strcmp(argv[i], "--json"))
            c->json = true;
        else
            argv[n++] = argv[i];
    }
    argv[n] = NULL;
    config_paths paths = {getenv("GPUMOD_CONFIG_DIR"), getenv("GPUMOD_STATE_DIR"),
                          getenv("GPUMOD_SOCKET")};
    if (config_load_settings(&c->cfg, &paths) < 0) {
        buf b = BUF_INIT;
        diags_text(&b, &c->cfg.diags, NULL);
        fprintf(stderr, "%s", b.p ? b.p : "gpumod: cannot read the settings\n");
        buf_release(&b);
        config_release(&c->cfg);
        return -1;
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return n;
}

int models_main(int argc, char **argv)
{
    mctx c;
    argc = setup(&c, argc, argv);
    if (argc < 0) return EXIT_USAGE;
    int rc;
    const char *sub = argc > 1 ? argv[1] : "";
    if (!strcmp(sub, "fit"))
        rc = model_fit_cmd(&c, argc - 1, argv + 1);
    else if (!strcmp(sub, "pull"))
        rc = model_pull_cmd(&c, argc - 1, argv + 1);
    else if (!strcmp(sub, "search"))
        rc = model_search_cmd(&c, argc - 1, argv + 1);
    else if (!strcmp(sub, "config"))
        rc = model_config_cmd(&c, argc - 1, argv + 1);
    else {
        fprintf(stderr,
                "gpumod: model: unknown subcommand '%s' (fit, pull, search, config, inspect)\n",
                sub);
        rc = EXIT_USAGE;
    }
    config_release(&c.cfg);
    return rc;
}

int preset_new_main(int argc, char **argv)
{
    mctx c;
    argc = setup(&c, argc, argv);
    if (argc < 0) return EXIT_USAGE;
    int rc;
    if (argc > 1 && !strcmp(argv[1], "new"))
        rc = preset_new_cmd(&c, argc - 1, argv + 1);
    else {
        fprintf(stderr, "gpumod: preset: unknown subcommand '%s' (new)\n", argc > 1 ? argv[1] : "");
        rc = EXIT_USAGE;
    }
    config_release(&c.cfg);
    return rc;
}
