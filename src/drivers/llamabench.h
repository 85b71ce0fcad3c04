/* llamabench.h - llama.cpp's llama-bench for a llama.cpp preset: where it
 * is (beside the configured llama-server), its argv and environment for
 * the preset's settings, and its `-o json` output reduced to what a tune
 * reads (POST /services/ID/engine-bench, docs/api.md).
 *
 * The argv is built here from the preset alone, never taken from a
 * client: -m MODEL -p N -n N -r R -o json, then the preset's flags in
 * llama-bench's spelling (-t, -b, -ub, -ctk, -ctv, -fa 0|1, -ngl,
 * --n-cpu-moe).  The environment is the one the service itself would get
 * (driver_launch's: the devices, GGML_CUDA_NO_PINNED, the preset's env). */
#ifndef GPUMOD_LLAMABENCH_H
#define GPUMOD_LLAMABENCH_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "util/buf.h"
#include "util/strv.h"

typedef struct lbench_args {
    int64_t n_prompt, n_gen; /* -p, -n: 0 leaves that test out */
    int64_t repetitions;     /* -r */
} lbench_args;

/* The llama-bench beside the llamacpp driver's binary (found as the
 * driver's is: a name through PATH): a malloc'ed path, or NULL with err
 * naming where it looked. */
char *lbench_binary(const settings *s, char *err, size_t errlen);

/* argv (llama-bench first) and env for p, which must be a single-model
 * llama.cpp preset.  0, or -1 with err (argv and env left empty). */
int lbench_launch(const preset *p, const settings *s, const char *bin, const lbench_args *a, strv *argv, strv *env,
                  char *err, size_t errlen);

/* llama-bench's JSON array (text of len bytes) reduced to a JSON array of
 * {"n_prompt","n_gen","avg_ts","stddev_ts","samples_ts"} appended to out.
 * 0 with *n the entries, or -1 with err (not JSON, not an array, an entry
 * without numeric n_prompt/n_gen/avg_ts). */
int lbench_reduce(const char *text, size_t len, buf *out, size_t *n, char *err, size_t errlen);

#endif
