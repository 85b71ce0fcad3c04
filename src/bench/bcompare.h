/* bcompare.h (core) - `gpumod bench compare A.json B.json`: every headline
 * metric of every load point both results share, as the ratio B/A of the
 * geometric means over iterations with a Welch t interval on the log
 * values, and whether the difference is significant.  Pure (cJSON in, rows
 * out).  Values <= 0 make a row not testable ("non-positive values").
 *
 * Points are matched by (x_name, x).  A metric is testable when each side
 * has >= 2 finite per-iteration values (docs/bench.md: points[].iterations
 * [].values); otherwise its row says "one iteration: use --iterations 3 or
 * more" and is never called significant.  The family of testable rows is
 * corrected for multiple comparisons (Bonferroni): each row's interval is
 * at confidence 1 - (1 - conf)/k for k testable rows, and a row is
 * significant when that interval excludes 1.  verdict: +1 B is better,
 * -1 B is worse (by the metric's direction), 0 no significant difference,
 * 2 not testable.  Results of different kinds or schemas are refused.
 * A metric with no finite value on either side (goodput without --slo, a
 * p99 of too few requests) gives no row. */
#ifndef GPUMOD_CORE_BCOMPARE_H
#define GPUMOD_CORE_BCOMPARE_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "bench/bstats.h"
#include "util/buf.h"

typedef struct bcmp_row {
    char point[48];   /* "concurrency=8", "depth=4096" */
    char metric[32];  /* a headline name (bagg_values) */
    double a, b;      /* medians over iterations */
    size_t na, nb;
    bci ratio;        /* b / a (geometric means), interval at the corrected confidence */
    double conf;      /* that confidence */
    bool higher_better;
    int verdict;
    char note[96];
} bcmp_row;

/* 0 with *rows (caller frees) and *n, or -1 with err (not bench results,
 * different kinds, no point in common). */
/* seed is unused (the Welch interval draws nothing); kept for callers. */
int bcompare(const cJSON *a, const cJSON *b, double conf, uint64_t seed, bcmp_row **rows, size_t *n, char *err,
             size_t errlen);

/* The table people read: point, metric, A, B, B/A, [lo, hi], verdict word
 * ("better", "worse", "same", "n/a" with the row's note), columns aligned,
 * and a last line saying the corrected confidence and k. */
void bcompare_render(buf *out, const bcmp_row *rows, size_t n);
/* {"comparisons": k, "conf": corrected confidence|null, "rows": [{"point",
 * "metric", "a", "b", "na", "nb", "ratio", "lo", "hi", "conf",
 * "higher_is_better", "significant", "verdict": word, "note"|null}]};
 * NaN prints as null.  Caller frees (cJSON_Delete). */
cJSON *bcompare_json(const bcmp_row *rows, size_t n);

#endif
