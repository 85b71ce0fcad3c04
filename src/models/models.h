/* models.h - `gpumod model fit|pull|search` and `gpumod preset new
 * --from`: which GGUF file fits this host, fetched safely, turned into a
 * preset (docs/models.md).  They run in the libcurl helper (gpumod-bench
 * as gpumod-model / gpumod-preset); the lean gpumod execs it. */
#ifndef GPUMOD_MODELS_H
#define GPUMOD_MODELS_H

#include <stdbool.h>

#include "config/config.h"

/* What every subcommand gets: the settings (gpumod.yaml: models_dir,
 * hf_endpoint, the memory margins), --json, and the SIGINT flag. */
typedef struct mctx {
    config cfg; /* config_load_settings: settings only */
    bool json;
    bool quiet; /* GPUMOD_QUIET: no progress on stderr */
    volatile int *interrupted;
} mctx;

int models_main(int argc, char **argv);     /* gpumod-model */
int preset_new_main(int argc, char **argv); /* gpumod-preset */

int model_fit_cmd(mctx *c, int argc, char **argv);
int model_pull_cmd(mctx *c, int argc, char **argv);
int model_search_cmd(mctx *c, int argc, char **argv);
int model_config_cmd(mctx *c, int argc, char **argv);
int preset_new_cmd(mctx *c, int argc, char **argv);

#endif
