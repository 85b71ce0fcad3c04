/* svg.h (core) - line charts as SVG, drawn by gpumod itself (no plotting
 * library): labelled axes with "nice" ticks (1-2-5 steps; log2 ticks when
 * log_x), a title, a legend, one polyline with markers per series and
 * optional vertical interval bars (ylo/yhi).  Pure: output goes to a buf.
 * Text is escaped (& < > " ').  NaN points are skipped (a gap in the
 * line).  A chart with no finite point renders the axes and "no data". */
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
} svg_chart;

/* A whole <svg> document. */
void svg_line_chart(buf *out, const svg_chart *c);
/* Several charts stacked vertically in one document. */
void svg_stack(buf *out, const svg_chart *charts, size_t n);

#endif
