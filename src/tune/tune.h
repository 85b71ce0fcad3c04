/* tune.h (tune) - `gpumod tune SERVICE`: faster settings, searched
 * safely and judged with statistics (docs/tune.md).  It runs in the
 * libcurl helper as gpumod-tune (src/helper.c) and reaches the daemon
 * only through the control-API client (link.h).
 *
 * The parts: space (the menu, the variants), strategy (grid, coordinate
 * descent, the proposer's turns), decide (paired differences, the
 * outcome), measure (gpumod-bench run and read), link (the lease, the
 * restarts, the gate's dry run), propose (an OpenAI-compatible model
 * choosing the next change), report (table, TSV, JSON, SVG), apply (the
 * winner written into the preset), run (the loop), tmain (options). */
#ifndef GPUMOD_TUNE_TUNE_H
#define GPUMOD_TUNE_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "tune/decide.h"
#include "tune/link.h"
#include "tune/measure.h"
#include "tune/space.h"
#include "tune/strategy.h"
#include "util/strv.h"

typedef struct tune_opts {
    const char *service;
    tune_space space;
    strat_kind strat;
    int max_passes;           /* coord */
    int max_props;            /* propose: proposals asked at most */
    tune_obj obj;
    tune_weights weights;
    double min_gain;
    bool min_gain_pct;
    double alpha;             /* family-wise */
    int rounds;               /* pairs per comparison (>= 2) */
    tune_load load;           /* url and model filled once the service is known */
    int64_t start_timeout_ms;
    const char *quality;      /* an eval suite: quality no worse than the reference */
    double max_mem_mb;        /* GPU memory budget (0: none) */
    double budget_s;          /* time budget (0: none) */
    int64_t ttl_ms;           /* the lease's renewal deadline */
    bool allow_traffic, resume, apply, yes, no_store, quiet;
    bool engine_bench, obj_given; /* --engine-bench: llama-bench measures (ebench.h) */
    long n_prompt, n_gen;         /* its -p and -n */
    const char *tsv, *json, *svg;
    const char *proposer;     /* URL of an OpenAI-compatible endpoint (base or full) */
    const char *proposer_model, *proposer_key_env;
    uint64_t seed;
    int argc;
    char **argv;
    strv owned;               /* values read from a `tune:` file */
} tune_opts;

/* one comparison's row (docs/tune.md "The log") */
typedef struct tune_row {
    int seq;
    char *key, *ref_key;      /* variant_key of the variant and of its reference */
    char *var, *val;          /* the label */
    tune_outcome outcome;
    bool has_decision;
    tune_decision d;
    double median, p90;       /* the variant's objective median and latency p90 over its runs */
    double mem_peak_mb, start_ms;
    char *reason;             /* why SKIPPED / FAILED / UNSAFE; the rules' warnings; NULL */
    bool flagged;             /* a warn rule fired, or traffic was allowed */
} tune_row;

void tune_row_release(tune_row *r);
cJSON *tune_row_json(const tune_row *r);
/* A row kept in the daemon's state read back (for --resume): 0, -1. */
int tune_row_from_json(const cJSON *j, tune_row *r);

typedef struct tune_result {
    tune_row *rows;
    size_t n, cap;
    bool has_winner, confirmed;
    tune_variant winner;
    char *stopped;            /* why the search ended early (budget, Ctrl-C, lease lost), or NULL */
    double started_ms, wall_s;
} tune_result;

tune_row *tune_result_add(tune_result *res);
void tune_result_release(tune_result *res);

/* report.c */
void tune_print_header(const tune_opts *o);
void tune_print_row(const tune_opts *o, const tune_row *r);
void tune_tsv(const tune_opts *o, const tune_result *res, buf *out);
cJSON *tune_doc(const tune_opts *o, const tune_result *res, int64_t started_unix_ms);
void tune_svg(const tune_opts *o, const tune_result *res, buf *out);

/* run.c: the search; 0 done (the result filled), else an exit code with
 * a message printed */
int tune_run(tune_opts *o, tune_result *res);

/* apply.c: the winner into the preset's file (diff shown, asked). */
int tune_apply(const tune_opts *o, const tune_result *res, const char *preset_file);

#endif
