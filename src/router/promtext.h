/* promtext.h (core) - the Prometheus text exposition format (version
 * 0.0.4, what `promtool check metrics` reads) and fixed-bucket histograms.
 * Pure: no I/O, no clock; output goes to a buf.
 *
 * A writer emits families one after the other: prom_family() writes the
 * HELP and TYPE lines (once per name: a second family of the same name is
 * an error), then prom_sample()/prom_histogram() write its samples.  Every
 * name is validated (metric [a-zA-Z_:][a-zA-Z0-9_:]*, label
 * [a-zA-Z_][a-zA-Z0-9_]*, no "__" prefix, no label twice, no "le" on a
 * histogram), a counter's name must end in "_total" (promtool's lint), and
 * help text and label values are escaped (backslash, double quote in
 * values, newline).  The first problem sticks: later calls write nothing
 * and prom_error() says what and where, so a caller checks once at the
 * end.  Units are the caller's: use base units (seconds, bytes), as
 * promtool's lint wants.
 *
 * Values print as integers when they are (up to 2^53), else in the
 * shortest form that reads back to the same double; NaN and +-Inf as
 * "NaN", "+Inf", "-Inf". */
#ifndef GPUMOD_CORE_PROMTEXT_H
#define GPUMOD_CORE_PROMTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

typedef enum prom_type { PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM, PROM_UNTYPED } prom_type;

typedef struct prom_label {
    const char *name, *value;
} prom_label;

#define PROM_HIST_MAX 32 /* finite buckets per histogram */

/* Observations into fixed buckets: counts[i] for v <= bounds[i] (first
 * such i), counts[n_bounds] for the rest (+Inf).  Not cumulative here;
 * the writer accumulates.  bounds is borrowed (usually a static array),
 * strictly increasing and finite. */
typedef struct prom_hist {
    const double *bounds;
    size_t n_bounds;
    uint64_t counts[PROM_HIST_MAX + 1];
    uint64_t count;
    double sum;
} prom_hist;

/* 0, or -1 when bounds are more than PROM_HIST_MAX, not finite or not
 * strictly increasing (the histogram is then empty and ignores input). */
int prom_hist_init(prom_hist *h, const double *bounds, size_t n_bounds);
/* NaN is ignored (it has no bucket). */
void prom_hist_observe(prom_hist *h, double v);

typedef struct prom_writer {
    buf *out;
    char family[128]; /* the current family ("" before the first) */
    prom_type type;
    buf seen; /* "\nname\n" for every family written */
    char err[256];
} prom_writer;

void prom_init(prom_writer *w, buf *out);
void prom_release(prom_writer *w);
/* HELP and TYPE of a new family; its samples follow.  help must be
 * non-empty (promtool wants it). */
int prom_family(prom_writer *w, const char *name, prom_type type, const char *help);
/* One sample of the current counter, gauge or untyped family. */
int prom_sample(prom_writer *w, const prom_label *labels, size_t n_labels, double value);
/* The _bucket (cumulative, le="..." last), _sum and _count samples of the
 * current histogram family. */
int prom_histogram(prom_writer *w, const prom_label *labels, size_t n_labels, const prom_hist *h);
/* NULL, or the first problem. */
const char *prom_error(const prom_writer *w);

/* Building blocks, for tests and callers with their own layout. */
bool prom_metric_name_ok(const char *name);
bool prom_label_name_ok(const char *name);
void prom_escape_value(buf *out, const char *s); /* backslash, quote, newline */
void prom_format_double(buf *out, double v);

#endif
