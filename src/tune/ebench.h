/* ebench.h (tune) - `gpumod tune --engine-bench`: the grid measured by
 * llama.cpp's llama-bench instead of requests to a running server.  The
 * tuned service is stopped once; each measurement is one POST
 * /services/ID/engine-bench with the configuration's overrides (the
 * daemon builds llama-bench's argv, asks the gate, runs it: docs/api.md
 * "Engine bench"), its objective tg's avg_ts (engine_tps) or pp's
 * (prefill).  No restarts: a pair costs two llama-bench runs. */
#ifndef GPUMOD_TUNE_EBENCH_H
#define GPUMOD_TUNE_EBENCH_H

#include <stddef.h>
#include <stdint.h>

#include "tune/link.h"
#include "tune/measure.h"

typedef struct tune_ebench {
    long n_prompt, n_gen;  /* llama-bench's -p and -n */
    int repetitions;       /* -r: one measurement is their average */
    int64_t timeout_ms;    /* one run's deadline (the daemon's) */
    tune_obj obj;          /* OBJ_ENGINE_TPS (tg) or OBJ_PREFILL (pp) */
} tune_ebench;

/* Stop the service (POST /services/ID/stop) before the first run: 0, or
 * -1 with err. */
int tune_ebench_stop(tlink *l, int64_t timeout_ms, char *err, size_t errlen);

/* One run with overrides (JSON text, "null" for the preset): 0 with *m;
 * TSTART_REFUSED with the gate's reason in why; TSTART_FAILED with the
 * daemon's words and llama-bench's stderr tail. */
int tune_ebench_measure(tlink *l, const tune_ebench *e, const char *overrides, tune_meas *m, char *why,
                        size_t whylen);

/* The objective from the answer's "results" (reduced llama-bench entries):
 * the avg_ts of the tg entry (n_gen > 0, n_prompt 0) for engine_tps, of
 * the pp entry (n_prompt > 0, n_gen 0) for prefill.  0, or -1 with err. */
int tune_ebench_objective(const cJSON *results, tune_obj obj, double *out, char *err, size_t errlen);

#endif
