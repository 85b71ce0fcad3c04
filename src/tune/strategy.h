/* strategy.h (tune) - which variant to measure next, against which
 * reference, and which one won.  Pure: the caller measures and reports
 * each outcome back.
 *
 *   grid   every combination of the menus, each against the baseline (the
 *          preset as configured); the winner is the IMPROVEMENT with the
 *          largest gain.
 *   coord  coordinate descent, as the seeds did by hand: one dimension at
 *          a time, every value of it against the best configuration so
 *          far (the incumbent); after a dimension the best IMPROVEMENT
 *          becomes the incumbent; passes over all dimensions repeat until
 *          one changes nothing or max_passes ran.  The winner is the last
 *          incumbent (none when it is still the baseline).
 *   propose  the caller's proposer picks each variant (propose.h); the
 *          reference is the incumbent, as coord.
 * An UNSAFE, FAILED or SKIPPED variant never becomes the incumbent or the
 * winner. */
#ifndef GPUMOD_TUNE_STRATEGY_H
#define GPUMOD_TUNE_STRATEGY_H

#include <stdbool.h>
#include <stddef.h>

#include "tune/decide.h"
#include "tune/space.h"

typedef enum { STRAT_GRID, STRAT_COORD, STRAT_PROPOSE } strat_kind;
extern const char *const strat_names[]; /* "grid", "coord", "propose", NULL */

typedef struct tune_strat {
    strat_kind kind;
    const tune_space *s;
    int max_passes;          /* coord */
    /* grid */
    tune_variant *grid;
    size_t n_grid, next;
    /* coord / propose */
    tune_variant inc;        /* the incumbent */
    size_t dim;              /* the dimension being swept */
    int val;                 /* the next value index of it */
    int pass;
    bool changed;            /* this pass adopted something */
    tune_variant dim_best;   /* the best IMPROVEMENT of the dimension swept */
    double dim_best_gain;
    /* the winner so far */
    tune_variant best;
    double best_gain;
    bool has_best;
    bool done;
} tune_strat;

/* max_grid: the most variants a grid may have (more is an error: -1). */
int strat_init(tune_strat *st, strat_kind k, const tune_space *s, int max_passes, size_t max_grid);
void strat_release(tune_strat *st);
/* The comparisons the run plans (the Bonferroni m): grid its size; coord
 * every value of every dimension, times max_passes; propose max_props. */
int strat_planned(const tune_strat *st, int max_props);
/* The next variant and its reference: 1, or 0 when the search is over.
 * (propose: always 0 here; the caller asks its proposer.) */
int strat_next(tune_strat *st, tune_variant *var, tune_variant *ref);
/* The outcome of var (gain in the objective's good direction, as
 * tune_decision.gain). */
void strat_report(tune_strat *st, const tune_variant *var, tune_outcome o, double gain);
/* The winner: true with *w, false when nothing beat the baseline. */
bool strat_winner(const tune_strat *st, tune_variant *w);

#endif
