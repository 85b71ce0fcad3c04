/* measure.h (tune) - one measurement of a running variant: gpumod-bench
 * run against the engine's own port (not the router, which the lease
 * keeps closed to outside traffic), its result document read back, the
 * objective taken from it.  The bench is this same helper executable
 * (/proc/self/exe) run as gpumod-bench, never through a shell.
 *
 * Objectives (docs/tune.md):
 *   throughput  the client's output tokens/s at the concurrency (out_tput)
 *   engine_tps  the engine's own decode speed: the median over requests of
 *               its timings (predicted_n / predicted_ms), as llama-server
 *               reports them; a busy client machine cannot move it
 *   tpot, ttft  the client's median TPOT / TTFT, ms (lower is better)
 *   goodput     requests/s meeting every --slo
 *   score       sum of weight x ln(metric) over --weights, each metric
 *               turned so that higher is better */
#ifndef GPUMOD_TUNE_MEASURE_H
#define GPUMOD_TUNE_MEASURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* prefill: llama-bench's pp tokens/s, with --engine-bench only (ebench.h) */
typedef enum { OBJ_THROUGHPUT, OBJ_ENGINE_TPS, OBJ_TPOT, OBJ_TTFT, OBJ_GOODPUT, OBJ_SCORE, OBJ_PREFILL, OBJ_N } tune_obj;
extern const char *const tune_obj_names[];  /* NULL-terminated */
extern const char *const tune_obj_units[];
bool tune_obj_higher_better(tune_obj o);

typedef struct tune_weights {
    double w[OBJ_SCORE]; /* per metric (not score itself); 0: unused */
} tune_weights;
/* "throughput=1,ttft=0.5": 0, or -1 with err. */
int tune_parse_weights(const char *s, tune_weights *out, char *err, size_t errlen);

typedef struct tune_load {
    const char *url;          /* http://host:port of the engine */
    const char *model;        /* NULL: the first the engine lists */
    int concurrency;
    long requests, warmup;
    long prompt_tokens, gen_tokens;
    const char *slo;          /* bench's --slo value, or NULL */
    double timeout_s;
    tune_obj obj;
    const tune_weights *weights;
} tune_load;

typedef struct tune_meas {
    double obj;               /* the objective's value */
    double p90;               /* TTFT p90 ms for ttft, else TPOT p90 ms (NaN when unknown) */
    double v[OBJ_SCORE];      /* every metric read (NaN when absent) */
    long completed, failed;
} tune_meas;

/* Run one measurement (seed: bench's --seed, so every run sends prompts of
 * its own).  0 with *m, or -1 with err (bench could not run, failed
 * requests, the objective missing from the document). */
int tune_measure(const tune_load *l, uint64_t seed, const char *tmpdir, volatile int *interrupted, tune_meas *m,
                 char *err, size_t errlen);

#endif
