/* erun.h - the eval runner: a suite's items sent to a model as chat
 * completions, k repetitions each, closed loop at a concurrency, scored
 * as they end (docs/eval.md "Running").
 *
 * One libuv loop drives the helpers' libcurl client (oai/client.h): the
 * model's requests on one client, the judge's on another.  A slot is held
 * by one item x repetition from its first request until its record is
 * settled (its retry and its judge included), so --concurrency is the
 * number of items in flight.  A transport error, an HTTP error or an
 * empty reply is an error, retried once; so is a judge's reply without a
 * score.  Each request is streamed (stream: true, usage included): the
 * record keeps what the model said, its tokens, TTFT and latency. */
#ifndef GPUMOD_EVAL_ERUN_H
#define GPUMOD_EVAL_ERUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eval/eresult.h"
#include "eval/suite.h"

typedef struct erun_progress {
    size_t done, total, pass, fail, error;
    double elapsed_s;
} erun_progress;

typedef struct erun_opts {
    const eval_suite *suite;
    unsigned k;                  /* repetitions (>= 1) */
    uint64_t seed;               /* repetition r sends "seed": seed + r */
    int concurrency;             /* items in flight (>= 1) */
    double timeout_s;            /* each request's deadline */
    long max_tokens;             /* for items without their own */
    double temperature;
    const char *url;             /* the chat completions endpoint */
    const char *const *headers;  /* NULL-terminated, may be NULL */
    const char *model;
    const char *judge_url;       /* NULL: no judge (judge items are errors) */
    const char *const *judge_headers;
    const char *judge_model;
    void (*progress)(void *ud, const erun_progress *p); /* about every 200 ms; may be NULL */
    void *ud;
    volatile int *interrupted;   /* set by SIGINT: nothing new is sent, what is in flight is cut */
} erun_opts;

typedef struct erun_result {
    erec *recs;                  /* item-major: recs[item * k + rep] */
    size_t n;
    size_t settled;
    double wall_s, cpu_s;        /* the run's wall time and this process's CPU time */
    long max_in_flight;          /* the most requests in flight at once */
    size_t length_hits;          /* answers that stopped at max_tokens (finish_reason "length") */
} erun_result;

/* Run every item k times.  0 when it ran (items may have failed; release
 * out), -1 with err when it could not start (libcurl, the loop, open-file
 * limits; out is empty). */
int erun(const erun_opts *o, erun_result *out, char *err, size_t errlen);
void erun_release(erun_result *r);
/* The request body of an item (caller frees): model, messages, tools,
 * max_tokens, temperature, seed, stream with usage. */
char *erun_body(const erun_opts *o, const eval_item *it, uint64_t seed);

/* `gpumod eval ...` (gpumod-bench run as gpumod-eval; argv[1] on: the
 * command's own words).  Returns the exit code (docs/eval.md). */
int eval_main(int argc, char **argv);

#endif
