/* strategy.c (tune) - grid and coordinate descent (strategy.h). */
#include "tune/strategy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

const char *const strat_names[] = {"grid", "coord", "propose", NULL};

int strat_init(tune_strat *st, strat_kind k, const tune_space *s, int max_passes, size_t max_grid)
{
    memset(st, 0, sizeof *st);
    st->kind = k;
    st->s = s;
    st->max_passes = max_passes < 1 ? 1 : max_passes;
    st->inc = variant_base();
    st->best = variant_base();
    st->dim_best = variant_base();
    st->val = 0;
    if (k == STRAT_GRID) {
        size_t n = space_grid_size(s);
        if (n > max_grid) return -1;
        st->grid = xcalloc(n ? n : 1, sizeof *st->grid);
        st->n_grid = space_grid(s, st->grid, n);
    }
    return 0;
}

void strat_release(tune_strat *st)
{
    free(st->grid);
    st->grid = NULL;
}

int strat_planned(const tune_strat *st, int max_props)
{
    if (st->kind == STRAT_GRID) return st->n_grid ? (int)st->n_grid : 1;
    if (st->kind == STRAT_PROPOSE) return max_props > 0 ? max_props : 1;
    int n = 0;
    for (size_t i = 0; i < st->s->n; i++) n += (int)st->s->dims[i].values.n;
    return n * st->max_passes > 0 ? n * st->max_passes : 1;
}

/* coord: the end of a dimension's sweep adopts its best; the end of a
 * pass decides whether another runs */
static void coord_advance_dim(tune_strat *st)
{
    if (st->dim_best_gain > 0 && !variant_eq(&st->dim_best, &st->inc)) {
        st->inc = st->dim_best;
        st->best = st->inc;
        st->has_best = true;
        st->changed = true;
    }
    st->dim_best = variant_base();
    st->dim_best_gain = 0;
    st->val = 0;
    if (++st->dim < st->s->n) return;
    st->dim = 0;
    st->pass++;
    if (!st->changed || st->pass >= st->max_passes) st->done = true;
    st->changed = false;
}

static int coord_next(tune_strat *st, tune_variant *var, tune_variant *ref)
{
    while (!st->done && st->s->n) {
        const tune_dim *d = &st->s->dims[st->dim];
        if ((size_t)st->val >= d->values.n) {
            coord_advance_dim(st);
            continue;
        }
        int j = st->val++;
        if (st->inc.idx[st->dim] == j) continue; /* the incumbent's own value */
        *var = st->inc;
        var->idx[st->dim] = j;
        *ref = st->inc;
        return 1;
    }
    return 0;
}

int strat_next(tune_strat *st, tune_variant *var, tune_variant *ref)
{
    switch (st->kind) {
    case STRAT_GRID:
        if (st->next >= st->n_grid) return 0;
        *var = st->grid[st->next++];
        *ref = variant_base();
        return 1;
    case STRAT_COORD:
        return coord_next(st, var, ref);
    case STRAT_PROPOSE:
        return 0;
    }
    return 0;
}

void strat_report(tune_strat *st, const tune_variant *var, tune_outcome o, double gain)
{
    if (o != TO_IMPROVEMENT) return;
    switch (st->kind) {
    case STRAT_GRID:
        if (!st->has_best || gain > st->best_gain) {
            st->best = *var;
            st->best_gain = gain;
            st->has_best = true;
        }
        break;
    case STRAT_COORD:
        if (gain > st->dim_best_gain) {
            st->dim_best = *var;
            st->dim_best_gain = gain;
        }
        break;
    case STRAT_PROPOSE: /* each improvement over the incumbent is adopted at once */
        st->inc = *var;
        st->best = *var;
        st->best_gain = gain;
        st->has_best = true;
        break;
    }
}

bool strat_winner(const tune_strat *st, tune_variant *w)
{
    if (!st->has_best || variant_is_base(&st->best)) return false;
    *w = st->best;
    return true;
}
