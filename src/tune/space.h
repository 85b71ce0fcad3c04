/* space.h (tune) - the search space of `gpumod tune`: the menu of values
 * each flag or environment variable may take (--param K=a,b, --env
 * NAME=a,b, or a `tune:` section in a file), and the variants drawn from
 * it.  A variant holds, per dimension, the index of its value, or -1 for
 * the preset's own (the baseline is every dimension at -1).  Pure: no
 * I/O besides the file parse, which returns its errors. */
#ifndef GPUMOD_TUNE_SPACE_H
#define GPUMOD_TUNE_SPACE_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"
#include "util/strv.h"

#define TUNE_MAX_DIMS 16
#define TUNE_MAX_VALUES 32

typedef struct tune_dim {
    char *key;    /* a preset key (unit_vars / context_size) or an environment variable */
    bool env;     /* an environment variable (--env) */
    strv values;  /* as given, in order; duplicates refused */
} tune_dim;

typedef struct tune_space {
    tune_dim dims[TUNE_MAX_DIMS];
    size_t n;
} tune_space;

typedef struct tune_variant {
    int idx[TUNE_MAX_DIMS]; /* -1: the preset's value */
} tune_variant;

/* "threads=8,10,16" (env: "NAME=0,1") added as a dimension.  0, or -1 with
 * err naming the argument and what was expected.  A key given twice is
 * an error. */
int space_add(tune_space *s, const char *arg, bool env, char *err, size_t errlen);
void space_release(tune_space *s);

tune_variant variant_base(void);
bool variant_eq(const tune_variant *a, const tune_variant *b);
bool variant_is_base(const tune_variant *v);
/* How many dimensions differ from base (0 for the baseline). */
size_t variant_changes(const tune_space *s, const tune_variant *v);
/* The variant's label for tables: the keys it sets joined by '+' and
 * their values likewise ("threads+batch_size", "8+1024"); the baseline
 * is ("baseline", "preset"). */
void variant_label(const tune_space *s, const tune_variant *v, buf *var, buf *val);
/* The control API's start overrides of v (docs/api.md): {"key": value,
 * ..., "env": {"NAME": "value"}} with integers as numbers, true/false as
 * booleans and the rest as strings; "null" for the baseline. */
void variant_overrides_json(const tune_space *s, const tune_variant *v, buf *out);
/* A stable key for the state kept across resumes: "threads=8;env.X=1". */
void variant_key(const tune_space *s, const tune_variant *v, buf *out);
/* The variant whose key is k (as variant_key), or -1 when none is. */
int variant_from_key(const tune_space *s, const char *k, tune_variant *out);

/* The full grid, every combination of the menus (each dimension's values,
 * never the preset's), in odometer order (the last dimension fastest).
 * Returns the count (capped at max), or 0 for an empty space. */
size_t space_grid(const tune_space *s, tune_variant *out, size_t max);
/* The count of the full grid (saturating at (size_t)-1). */
size_t space_grid_size(const tune_space *s);

#endif
