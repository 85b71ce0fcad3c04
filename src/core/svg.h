/* svg.h (core) - line charts as SVG, drawn by gpumod itself (no plotting
 * library): labelled axes with "nice" ticks (1-2-5 steps; log2 ticks when
 * log_x), a title, a legend, one polyline with markers per series and
 * optional vertical interval bars (ylo/yhi).  Pure: output goes to a buf.
 * Text is escaped (& < > " '; control bytes and invalid UTF-8 become
 * '?').  NaN points are skipped (a gap in the line); with log_x so are
 * x <= 0.  A chart with no finite point renders the axes and "no data".
 * Series colours come from the Okabe-Ito palette (colour-blind safe) and
 * each series has its own marker shape too, so print in grey still works.
 * Tick labels are plain numbers (1.2k, 25, 0.5): units belong in the axis
 * labels. */
#ifndef GPUMOD_CORE_SVG_H
#define GPUMOD_CORE_SVG_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

typedef struct svg_series {
    const char *name;
    const double *x, *y;
    const double *ylo, *yhi; /* may be NULL */
    size_t n;
} svg_series;

typedef struct svg_chart {
    const char *title, *x_label, *y_label;
    bool log_x;              /* base-2 ticks (concurrency 1,2,4,...) */
    bool y_from_zero;        /* the y axis starts at 0 */
    int width, height;       /* 0: 720 x 440 */
    const svg_series *series;
    size_t n_series;
    /* categorical x (may be NULL): series x values are 0..n_cats-1, ticks
     * are labelled with these names and points are not joined by lines */
    const char *const *cats;
    size_t n_cats;
} svg_chart;

/* A whole <svg> document. */
void svg_line_chart(buf *out, const svg_chart *c);
/* Several charts stacked vertically in one document. */
void svg_stack(buf *out, const svg_chart *charts, size_t n);

#endif
