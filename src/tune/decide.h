/* decide.h (tune) - the outcome of one variant against its reference,
 * from paired measurements: the reference A and the variant B measured
 * in turn (A B B A A B ...), so that a slow drift of the host adds the
 * same to both and cancels in each pair's difference.
 *
 * The difference d_i = B_i - A_i of each pair; its mean and a Student t
 * interval at 1 - alpha / m (Bonferroni: m comparisons in the run, so
 * that the chance of any false IMPROVEMENT in the whole run stays under
 * alpha).  The direction follows the objective: for one where lower is
 * better (TTFT, TPOT) a negative difference is the gain.
 *
 *   IMPROVEMENT  the interval excludes zero on the good side and the
 *                gain exceeds min_gain (% of A's mean, or absolute);
 *   REGRESSION   the interval lies wholly on the bad side;
 *   NO CHANGE    otherwise.
 * Pure. */
#ifndef GPUMOD_TUNE_DECIDE_H
#define GPUMOD_TUNE_DECIDE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum tune_outcome {
    TO_BASELINE,
    TO_IMPROVEMENT,
    TO_NO_CHANGE,
    TO_REGRESSION,
    TO_FAILED,
    TO_SKIPPED,
    TO_UNSAFE,
    TO_FINAL,
    TO_N
} tune_outcome;
extern const char *const tune_outcome_names[]; /* "BASELINE", "IMPROVEMENT", "NO CHANGE", ... */

typedef struct tune_rule_in {
    bool higher_better;
    double alpha;     /* family-wise, e.g. 0.05 */
    int m;            /* comparisons in the run (>= 1) */
    double min_gain;  /* >= 0 */
    bool min_gain_pct;
} tune_rule_in;

typedef struct tune_decision {
    tune_outcome outcome;
    double a_mean, b_mean;
    double delta, lo, hi;   /* mean of B - A and its interval, in the objective's units */
    double delta_pct, lo_pct, hi_pct; /* the same as % of A's mean */
    double gain;            /* delta in the good direction (> 0 better), as min_gain is given */
    size_t n;
} tune_decision;

/* a[i], b[i]: pair i (n >= 2, every value finite).  0, or -1 when the
 * input cannot be judged (fewer than 2 pairs, a value not finite). */
int tune_decide(const double *a, const double *b, size_t n, const tune_rule_in *r, tune_decision *out);

/* "5" (absolute) or "2%" / "2.5%" (relative): 0 with *v and *pct, -1. */
int tune_parse_gain(const char *s, double *v, bool *pct);

#endif
