/* vcheck.h (tune) - a variant checked before anything starts: the gate's
 * dry run for its overrides (POST /preflight: the daemon validates the
 * overrides as a start would, then asks the gate as if the service were
 * stopped first).  A variant that fails is SKIPPED with the reason and
 * never started. */
#ifndef GPUMOD_TUNE_VCHECK_H
#define GPUMOD_TUNE_VCHECK_H

#include <stdbool.h>

#include "tune/tune.h"

typedef struct vcheck {
    double max_mem_mb;   /* the budget: a need over it is SKIPPED (0: none) */
} vcheck;

/* true: may start; false: row is SKIPPED with its reason. */
bool vcheck_variant(vcheck *vc, tlink *l, const tune_space *s, const tune_variant *v, tune_row *row);

#endif
