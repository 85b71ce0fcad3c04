/* ecompare.h - two eval runs of one suite, item by item, and the golden
 * file of a run (docs/eval.md "Compare", "Golden").  Pure: documents in,
 * figures and text out.
 *
 * compare pairs the records of A and B by (id, repetition): b records
 * passed in A only, c in B only; McNemar's exact test on b and c says
 * whether B is better, worse or not distinguishable (estats.h).  Judge
 * scores compare by the difference of their means with Welch's interval.
 *
 * A golden file holds each item's output bytes (content, reasoning, tool
 * calls) and the server's identity; a later run is compared byte for
 * byte. */
#ifndef GPUMOD_EVAL_ECOMPARE_H
#define GPUMOD_EVAL_ECOMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "eval/eresult.h"
#include "eval/estats.h"
#include "util/buf.h"

typedef struct ecmp {
    size_t paired, only_a, only_b; /* records in both, in one only */
    uint64_t b, c;                 /* passed in A only, in B only */
    double p;                      /* McNemar's exact p */
    int verdict;                   /* pass/fail: everdict */
    eacc a, bb;                    /* each run's own figures */
    eci judge_diff;                /* mean B - mean A with Welch's interval (NaN: not testable) */
    int judge_verdict;             /* everdict; VERDICT_NA without two judge scores a side */
} ecmp;

/* 0, or -1 with err (not an eval document, nothing paired). */
int ecompare(const cJSON *a, const cJSON *b, ecmp *out, char *err, size_t errlen);
/* "B is worse than A: ..." and the figures; names label A and B. */
void ecompare_render(buf *out, const ecmp *m, const char *name_a, const char *name_b);
cJSON *ecompare_json(const ecmp *m);
/* Whether B is worse by either test (the exit code's 1). */
bool ecompare_worse(const ecmp *m);

/* ---- golden ---------------------------------------------------------------- */

#define GOLDEN_SCHEMA "gpumod.golden/1"

/* The golden file of a run: {schema, suite, seed, max_tokens, identity
 * (taken), items: [{id, state, content, reasoning, tool_calls}]}; recs
 * item-major with k = 1.  Caller frees. */
cJSON *golden_doc(const eval_suite *s, const erec *recs, size_t n, uint64_t seed, long max_tokens, cJSON *identity);
/* Compare a run's golden document (now) with the recorded one (was): a
 * line per item that is no longer byte-identical (where its output first
 * differs, what it was and is there), per item missing or new, and the
 * identity's fields that changed.  *n_diff: the items that differ (a
 * missing or new item counts); *ident_changed: whether the identity did.
 * 0, or -1 with err when was is not a golden file. */
int golden_diff(const cJSON *was, const cJSON *now, buf *report, size_t *n_diff, bool *ident_changed, char *err,
                size_t errlen);

#endif
