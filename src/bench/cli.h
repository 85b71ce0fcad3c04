/* cli.h (bench) - what gpumod-bench's own parts share: the parsed options
 * of a run, the prompts, the target's resolution and the result document.
 * Internal to src/bench/ (bench.h is the contract between helpers). */
#ifndef GPUMOD_BENCH_CLI_H
#define GPUMOD_BENCH_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "bench/bench.h"
#include "bench/bagg.h"
#include "bench/bserver.h"

/* ---- the options of a run (main.c parses them; docs/bench.md) ---------- */

typedef struct bopts {
    const char *target;
    const char *model;        /* --model or NULL */
    const char *api_key_env;  /* --api-key-env or NULL */
    long *conc;               /* --concurrency values */
    size_t n_conc;
    double *rate;             /* --rate values (open loop) or NULL */
    size_t n_rate;
    double burstiness;        /* 1 */
    long max_concurrency;     /* 0: none */
    long requests;            /* -1: default (10 x concurrency, >= 20) */
    double duration_s;        /* 0: --requests */
    long warmup;              /* -1: the concurrency */
    long iterations;          /* 3 */
    long prompt_tokens;       /* -1: default (--prompts absent: 128) */
    const char *prompts_file;
    long gen_tokens;          /* 128 */
    bool completions;         /* --endpoint completions */
    bool ctx_sweep;
    long ctx_start, ctx_max, ctx_step;
    bslo slo;                 /* NaN: not set */
    double timeout_s;         /* 600 */
    uint64_t seed;            /* 1 */
    const char *json_path, *csv_path, *svg_path;
    bool raw, md, no_store, quiet;
    int argc;
    char **argv;              /* as given, for the document */
} bopts;

/* ---- prompts.c ---------------------------------------------------------- */

/* The token count of text as the server counts it (its /tokenize), 0 with
 * *n, or -1 with err.  A function pointer so that tests can give a fake. */
typedef int (*btok_fn)(void *ud, const char *text, long *n, char *err, size_t errlen);

/* A deterministic text of words drawn from seed: the first m words. */
char *bprompt_words(uint64_t seed, size_t m);
/* The text (prefix + the first m words of seed's stream) with exactly
 * n_tokens as tok counts, searched with a few calls (at most ~16), or the
 * largest below it when no word count hits n exactly.  tok NULL: about 4
 * characters per token and *exact false.  *got is the count tok gave
 * (n_tokens when approximate).  Caller frees the text.  NULL with err when
 * tok failed. */
char *bprompt_synth(const char *prefix, long n_tokens, uint64_t seed, btok_fn tok, void *ud, long *got,
                    bool *exact, char *err, size_t errlen);

typedef struct bprompt {
    char *text;       /* {"prompt"} (or NULL) */
    cJSON *messages;  /* {"messages"} (or NULL); owned */
    long max_tokens;  /* -1: --gen-tokens */
} bprompt;

typedef struct bprompts {
    bprompt *v;
    size_t n;
} bprompts;

/* Read a JSONL file: every line {"prompt": string} or {"messages": array
 * of {"role","content"}}, optional "max_tokens" (a positive integer);
 * blank lines skipped.  0, or -1 with err naming file:line and what was
 * expected (every bad line, one per line of err). */
int bprompts_load_jsonl(bprompts *out, const char *path, char *err, size_t errlen);
void bprompts_release(bprompts *p);

/* What a request body holds besides the prompt. */
typedef struct bbody_opts {
    const char *model;
    bool chat;           /* /v1/chat/completions: messages; else prompt */
    long max_tokens;
    bool llamacpp;       /* timings_per_token */
    int cache_prompt;    /* -1 not sent, 0 false, 1 true */
} bbody_opts;

/* One request body (caller frees): prefix (may be "") is put before the
 * prompt text (or the first message's string content). */
char *bbody_json(const bbody_opts *o, const char *prefix, const bprompt *p);
/* The distinct prefix of request i of a run ("[00000042] "): the same
 * width for every i, so every prompt has the same token count. */
void bprompt_prefix(char *out, size_t n, uint64_t i);

/* /tokenize of a target through bfetch (ud: a btarget). */
int bprompt_tokenize_http(void *ud, const char *text, long *n, char *err, size_t errlen);
/* Whether t's /tokenize answers; when not, t->tokenize_url is cleared. */
bool bprompt_has_tokenizer(btarget *t);

/* ---- result.c ----------------------------------------------------------- */

/* One load iteration as the document's object: aggregates, values,
 * server deltas (NULL when no scrape), self-check, memory (taken), errors,
 * and with raw every request. */
cJSON *bresult_iteration(const bload_result *r, const bagg *a, const bserver_delta *sd, cJSON *memory, bool raw);
/* points[].summary: every "values" entry's median over iterations with
 * a bootstrap interval (conf 0.95, 2000 resamples, seed). */
cJSON *bresult_summary(const cJSON *iterations, uint64_t seed);
/* The settings object of docs/bench.md. */
cJSON *bresult_settings(const bopts *o, bool prompt_exact, long prompt_measured);
/* The document's skeleton: schema, kind, started, version, argv. */
cJSON *bresult_new(const char *kind, const bopts *o, int64_t started_unix_ms);
/* JSON number or null for NaN/Inf. */
void bresult_warn(cJSON *doc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- ctxsweep.c ---------------------------------------------------------- */

/* The context-depth sweep: fills doc's points; 0, or -1 with err when it
 * could not run at all. */
int bctx_run(cJSON *doc, const bopts *o, const btarget *t, volatile int *interrupted, char *err, size_t errlen);

#endif
