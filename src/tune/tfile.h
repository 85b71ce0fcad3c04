/* tfile.h (tune) - a `tune:` section of a YAML file: the menu and the
 * options the command line would give, for a search kept beside the
 * preset.
 *
 *   tune:
 *     params: {threads: [8, 10, 16], batch_size: [512, 1024, 2048]}
 *     env: {VLLM_MARLIN_USE_ATOMIC_ADD: ["0", "1"]}
 *     strategy: coord          # and any other option by its long name:
 *     objective: engine_tps    # min_gain, rounds, concurrency, budget...
 *
 * Options given on the command line after --file win; before it, the
 * file's.  Unknown keys are errors naming the file and line. */
#ifndef GPUMOD_TUNE_TFILE_H
#define GPUMOD_TUNE_TFILE_H

#include "tune/tune.h"

/* 0, or the exit code after a message (2: the file's error). */
int tfile_read(tune_opts *o, const char *path);

#endif
