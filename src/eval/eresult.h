/* eresult.h - an eval run as a document (schema gpumod.eval/1,
 * docs/eval.md "The result document") and everything read from one: the
 * statistics, the item table, CSV, Markdown, the SVG, and the copy the
 * daemon keeps.
 *
 * Every figure is computed from the document's "items" records, never
 * from the runner's memory, so `eval report`, `eval show` and `eval
 * compare` see exactly what a run printed.  Pure: no I/O (the caller
 * writes the buffers). */
#ifndef GPUMOD_EVAL_ERESULT_H
#define GPUMOD_EVAL_ERESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "eval/suite.h"
#include "util/buf.h"

#define EVAL_SCHEMA "gpumod.eval/1"

/* Cuts in a record: what a document keeps of the prompt, the reply and
 * its thinking (the golden file keeps the whole reply). */
#define EREC_PROMPT_MAX 2000
#define EREC_GEN_MAX 8000
#define EREC_THINK_MAX 2000

/* One item x repetition, as the runner settled it. */
typedef struct erec {
    size_t item;          /* index into the suite */
    unsigned rep;         /* 0..k-1 */
    uint64_t seed;        /* the "seed" sent: --seed + rep */
    int state;            /* score_state: SCORE_PASS, SCORE_FAIL or SCORE_ERROR */
    int rule;             /* ex_rule that found the answer */
    char *answer;         /* what was judged, NULL when nothing */
    char reason[240];     /* why it failed ("" when it passed) */
    int judge;            /* the judge's 1..5, 0 when not judged */
    char *content;        /* the reply's content as said, NULL none */
    char *reasoning;      /* its reasoning_content, NULL none */
    char *tool_calls;     /* its tool_calls as JSON text, NULL none */
    char finish_reason[16];
    long n_in, n_out;     /* usage, -1 unknown */
    double latency_ms;    /* send to the stream's end, of the last attempt; NaN none */
    double ttft_ms;       /* to the first token; NaN none */
    int attempts;         /* requests to the model (2 after a retry) */
    char *error;          /* an error's text (transport, HTTP, empty reply, the judge's), NULL none */
    bool settled;         /* false: never ran (interrupted) */
} erec;

void erec_release(erec *r);

/* The record's JSON: id, category, rep, seed, state, scorer, rule,
 * answer, expected, reason, judge, prompt, generation, reasoning (cut to
 * the limits above, with their full sizes), tool_calls, finish_reason,
 * tokens_in, tokens_out, latency_ms, ttft_ms, attempts, error. */
cJSON *erec_json(const eval_item *it, const erec *r);

/* ---- statistics of a document's items ------------------------------------- */

typedef struct eacc {
    size_t items, records, pass, fail, error;
    unsigned k;           /* repetitions (the most seen on an item) */
    double est, lo, hi;   /* pass@1 over k with Wilson's interval (accuracy when k = 1);
                           * errors count as not passed */
    double pass_at_k;     /* unbiased pass@k (NaN when k = 1 or items differ in count) */
    size_t judged;
    double j_mean, j_sd, j_lo, j_hi, j_share4, j_share5; /* NaN when none */
} eacc;

/* Over the records of items (an "items" array), all of them (category
 * NULL) or one category's.  0, or -1 when there is none. */
int eresult_acc(const cJSON *items, const char *category, eacc *out);
/* {"items","records","k","pass","fail","error","accuracy":{est,lo,hi},
 * "pass_at_k","judge":{n,mean,sd,lo,hi,share4,share5}|null} */
cJSON *eacc_json(const eacc *a);
/* The "summary" and "categories" of a document, computed from its items
 * and put in it (replacing what was there). */
void eresult_summarize(cJSON *doc);

/* ---- the copy for the daemon ----------------------------------------------- */

/* doc without the prompts, generations and thinking of its records once
 * those add up to more than cap bytes (the first records keep theirs),
 * with "detail": {"records_cut": N, "full": full_path or null}.  Caller
 * frees. */
cJSON *eresult_for_store(const cJSON *doc, size_t cap, const char *full_path);

/* ---- renderings --------------------------------------------------------------- */

/* The item table (every record up to max_rows, else the ones that did not
 * pass), the summary, the category table and the warnings. */
void ereport_table(buf *out, const cJSON *doc, size_t max_rows);
void ereport_csv(buf *out, const cJSON *doc);   /* a row per record */
void ereport_md(buf *out, const cJSON *doc);    /* summary and categories */
/* Accuracy with its interval, overall and per category, one series per
 * document (a configuration each). */
void ereport_svg(buf *out, const cJSON *const *docs, size_t n);

#endif
