/* svg.c (core) - line charts as SVG text, for `gpumod bench --svg`.
 *
 * Hand-written rather than a plotting library: a chart is a frame, two
 * axes with "nice" ticks, a legend and a polyline per series, which is a
 * few hundred lines and keeps gpumod free of a Python or gnuplot
 * dependency.  Layout is fixed arithmetic (text widths are estimated at
 * 6.6 px per character of the 12 px sans-serif face), so the output is
 * byte-for-byte reproducible and testable.  Every coordinate printed is
 * finite: NaN data never reaches the output, it only breaks a line. */
#include "core/svg.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Okabe & Ito (2008), the usual colour-blind-safe set, yellow last since
 * it is faint on white */
static const char *const palette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                      "#CC79A7", "#56B4E9", "#000000", "#F0E442"};
#define N_PALETTE (sizeof palette / sizeof palette[0])
#define N_MARKERS 4 /* circle, square, triangle, diamond */

#define CHAR_W 6.6
#define LEGEND_ROW 18
#define MAX_TICKS 40

typedef struct axis {
    double lo, hi;  /* data space (log2 space for a log axis) */
    bool log2, cat;
    int exp10;      /* linear: the tick step's decimal exponent */
    double t[MAX_TICKS];
    int nt;
} axis;

/* ---- text ---------------------------------------------------------------- */

/* length of the valid UTF-8 sequence at s, 0 when invalid */
static size_t utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    size_t n;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) n = 3;
    else if (c >= 0xF0 && c <= 0xF4) n = 4;
    else return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (n == 3 && c == 0xE0 && s[1] < 0xA0) return 0; /* overlong */
    if (n == 3 && c == 0xED && s[1] >= 0xA0) return 0; /* surrogate */
    if (n == 4 && c == 0xF0 && s[1] < 0x90) return 0;
    if (n == 4 && c == 0xF4 && s[1] >= 0x90) return 0;
    return n;
}

/* s as XML character data or attribute text: the five specials escaped;
 * what XML 1.0 cannot hold (control bytes, broken UTF-8) becomes '?' */
static void esc(buf *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        switch (*p) {
        case '&': buf_adds(out, "&amp;"); p++; continue;
        case '<': buf_adds(out, "&lt;"); p++; continue;
        case '>': buf_adds(out, "&gt;"); p++; continue;
        case '"': buf_adds(out, "&quot;"); p++; continue;
        case '\'': buf_adds(out, "&apos;"); p++; continue;
        default: break;
        }
        if (*p < 0x20) {
            buf_addc(out, *p == '\t' ? ' ' : '?');
            p++;
            continue;
        }
        size_t n = utf8_len(p);
        if (n == 0) {
            buf_addc(out, '?');
            p++;
            continue;
        }
        buf_add(out, p, n);
        p += n;
    }
}

/* estimated width in px of s at 12 px (UTF-8 continuation bytes skipped) */
static double text_w(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
        if ((*p & 0xC0) != 0x80) n++;
    return (double)n * CHAR_W;
}

/* drop trailing zeros of a fixed-point number ("1.50" -> "1.5", "2.0" -> "2") */
static void trim_zeros(char *s)
{
    char *dot = strchr(s, '.');
    if (!dot) return;
    char *e = s + strlen(s);
    while (e > dot + 1 && e[-1] == '0') e--;
    if (e == dot + 1) e = dot;
    *e = 0;
}

/* A linear tick value as a plain number: 1.2k, 25, 0.5, 3M.  exp10 is the
 * decimal exponent of the tick step, which says how many decimals the
 * labels of the axis need to stay distinct. */
static void fmt_tick(char *o, size_t n, double v, int exp10)
{
    static const struct {
        double f;
        int e;
        const char *sfx;
    } scales[] = {{1e12, 12, "T"}, {1e9, 9, "G"}, {1e6, 6, "M"}, {1e3, 3, "k"}, {1, 0, ""}};
    if (fabs(v) < pow(10, exp10) * 1e-6) v = 0; /* no "-0" from rounding */
    if (v != 0 && (exp10 < -9 || fabs(v) >= 1e18)) { /* beyond what decimals or T can show */
        snprintf(o, n, "%.3g", v);
        return;
    }
    size_t i = 0;
    while (i + 1 < sizeof scales / sizeof scales[0] && fabs(v) < scales[i].f) i++;
    int dec = scales[i].e - exp10;
    if (dec < 0) dec = 0;
    if (dec > 9) dec = 9;
    snprintf(o, n, "%.*f", dec, v / scales[i].f);
    trim_zeros(o);
    if (strcmp(o, "-0") == 0) snprintf(o, n, "0");
    strncat(o, scales[i].sfx, n - strlen(o) - 1);
}

/* a log2 tick 2^e: integers as integers (1024, not 1k: powers of two read
 * better whole), fractions as 0.5, 0.25 */
static void fmt_tick_log2(char *o, size_t n, int e)
{
    double v = ldexp(1, e);
    if (e >= 20) snprintf(o, n, "%gM", v / 1048576);
    else if (e >= 0) snprintf(o, n, "%.0f", v);
    else snprintf(o, n, "%g", v);
}

/* ---- axes ---------------------------------------------------------------- */

/* a y that can be placed: finite and within +-1e300, so that a range, its
 * headroom and its rounded ticks stay finite (a y near DBL_MAX, only in a
 * corrupt document, is skipped like a NaN) */
#define Y_MAX 1e300
static bool y_ok(double v)
{
    return isfinite(v) && fabs(v) <= Y_MAX;
}

/* 1-2-5 step near range/5 (rounded, so 3..8 ticks) */
static double nice_step(double range, int *exp10)
{
    if (!(range > 0) || !isfinite(range)) range = 1; /* never log10 of 0 or inf */
    double raw = range / 5;
    int e = (int)floor(log10(raw));
    double f = raw / pow(10, e);
    double nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    if (nf == 10) {
        nf = 1;
        e++;
    }
    *exp10 = e;
    return nf * pow(10, e);
}

static void axis_linear(axis *a, double lo, double hi, bool from_zero)
{
    if (from_zero) {
        if (lo > 0) lo = 0;
        if (hi < 0) hi = 0;
    }
    if (hi - lo <= fabs(hi) * 1e-12) {
        double pad = lo == 0 ? 1 : fabs(lo) * 0.1;
        bool was_nonneg = lo >= 0;
        lo -= pad;
        hi += pad;
        if (from_zero && was_nonneg) lo = 0;
    }
    double step = nice_step(hi - lo, &a->exp10);
    double a0 = floor(lo / step + 1e-9) * step, a1 = ceil(hi / step - 1e-9) * step;
    int k = (int)llround((a1 - a0) / step);
    if (k < 1) k = 1;
    if (k >= MAX_TICKS) k = MAX_TICKS - 1;
    a->lo = a0;
    a->hi = a0 + k * step;
    a->nt = 0;
    for (int i = 0; i <= k; i++) a->t[a->nt++] = a0 + i * step;
}

static void axis_log2(axis *a, double lo, double hi)
{
    int e0 = (int)floor(log2(lo) + 1e-9), e1 = (int)ceil(log2(hi) - 1e-9);
    if (e1 <= e0) {
        e0--;
        e1++;
    }
    int every = (e1 - e0 + 9) / 10; /* at most ~10 labelled ticks */
    if (every < 1) every = 1;
    a->log2 = true;
    a->lo = e0;
    a->hi = e1;
    a->nt = 0;
    for (int e = e0; e <= e1 && a->nt < MAX_TICKS; e += every) a->t[a->nt++] = e;
}

static void axis_cats(axis *a, size_t n)
{
    a->cat = true;
    a->lo = -0.5;
    a->hi = (double)(n ? n : 1) - 0.5;
    a->nt = 0;
    for (size_t i = 0; i < n && a->nt < MAX_TICKS; i++) a->t[a->nt++] = (double)i;
}

/* data value -> axis space; NaN when it cannot be placed */
static double ax_val(const axis *a, double v)
{
    if (!isfinite(v)) return NAN;
    if (a->log2) return v > 0 ? log2(v) : NAN;
    return v;
}

/* ---- drawing ------------------------------------------------------------- */

typedef struct frame {
    double left, right, top, bottom; /* the plot area, px */
    axis x, y;
} frame;

/* a point on the first or last x tick would sit on the frame, its marker
 * cut in half: numeric x axes keep PAD_X px inside it */
#define PAD_X 12

static double px_x(const frame *f, double av)
{
    double pad = f->x.cat ? 0 : PAD_X;
    return f->left + pad + (av - f->x.lo) / (f->x.hi - f->x.lo) * (f->right - f->left - 2 * pad);
}

static double px_y(const frame *f, double av)
{
    return f->bottom - (av - f->y.lo) / (f->y.hi - f->y.lo) * (f->bottom - f->top);
}

static void marker(buf *out, int shape, const char *col, double x, double y)
{
    switch (shape % N_MARKERS) {
    case 0: buf_printf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"", x, y, col); break;
    case 1:
        buf_printf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"7\" fill=\"%s\"", x - 3.5,
                   y - 3.5, col);
        break;
    case 2:
        buf_printf(out, "<path d=\"M%.1f %.1fl4.5 8h-9z\" fill=\"%s\"", x, y - 5, col);
        break;
    default:
        buf_printf(out, "<path d=\"M%.1f %.1fl5 5l-5 5l-5 -5z\" fill=\"%s\"", x, y - 5, col);
        break;
    }
}

/* the legend's rows: where each entry goes, wrapping at the plot width */
static int legend_layout(const svg_chart *c, double left, double right, double *ex, int *erow)
{
    double x = left;
    int row = 0;
    for (size_t s = 0; s < c->n_series; s++) {
        double w = 28 + text_w(c->series[s].name) + 18;
        if (x > left && x + w > right) {
            row++;
            x = left;
        }
        ex[s] = x;
        erow[s] = row;
        x += w;
    }
    return c->n_series ? row + 1 : 0;
}

static bool point_ok(const frame *f, const svg_series *s, size_t i)
{
    return isfinite(ax_val(&f->x, s->x[i])) && y_ok(s->y[i]);
}

/* The plot area inside a W x H chart, below the title and the legend;
 * ex/erow get where each legend entry goes. */
static void place_frame(frame *f, const svg_chart *c, double W, double H, double *ex, int *erow)
{
    f->left = 76;
    f->right = W - 24;
    int rows = legend_layout(c, f->left, f->right, ex, erow);
    f->top = (c->title && *c->title ? 38 : 14) + rows * LEGEND_ROW + (rows ? 6 : 0);
    f->bottom = H - 50;
    if (f->bottom < f->top + 40) f->bottom = f->top + 40;
}

/* the data's extent in data space, and how many points have a y */
typedef struct extent {
    double xlo, xhi, ylo, yhi;
    size_t finite;
} extent;

/* x spans every placeable point, even one without a y (a sweep's failed
 * step stays on the axis, and stacked charts of one sweep share their x
 * range); y spans the finite values and intervals */
static void data_extent(const frame *f, const svg_chart *c, extent *e)
{
    *e = (extent){INFINITY, -INFINITY, INFINITY, -INFINITY, 0};
    for (size_t s = 0; s < c->n_series; s++) {
        const svg_series *se = &c->series[s];
        for (size_t i = 0; i < se->n; i++) {
            double xv = ax_val(&f->x, se->x[i]);
            if (!isfinite(xv)) continue;
            if (se->x[i] < e->xlo) e->xlo = se->x[i];
            if (se->x[i] > e->xhi) e->xhi = se->x[i];
            double ys[3] = {se->y[i], se->ylo ? se->ylo[i] : NAN, se->yhi ? se->yhi[i] : NAN};
            for (int k = 0; k < 3; k++) {
                if (!y_ok(ys[k])) continue;
                if (ys[k] < e->ylo) e->ylo = ys[k];
                if (ys[k] > e->yhi) e->yhi = ys[k];
            }
            if (y_ok(se->y[i])) e->finite++;
        }
    }
}

/* Both axes from the data's extent.  True when no point has a y. */
static bool choose_axes(frame *f, const svg_chart *c)
{
    if (c->cats)
        axis_cats(&f->x, c->n_cats);
    else
        f->x.log2 = c->log_x;
    extent e;
    data_extent(f, c, &e);
    bool nodata = e.finite == 0;
    if (!(e.xlo <= e.xhi)) {
        e.xlo = c->log_x ? 1 : 0;
        e.xhi = c->log_x ? 2 : 1;
    }
    if (!(e.ylo <= e.yhi)) {
        e.ylo = 0;
        e.yhi = 1;
    }
    if (!c->cats) {
        if (c->log_x)
            axis_log2(&f->x, e.xlo, e.xhi);
        else
            axis_linear(&f->x, e.xlo, e.xhi, false);
    }
    /* headroom, so that a marker or an interval cap on the top tick is not
     * drawn on the frame (a range that is already loose keeps its ticks) */
    axis_linear(&f->y, e.ylo, nodata ? e.yhi : e.yhi + (e.yhi - e.ylo) * 0.03, c->y_from_zero);
    return nodata;
}

/* the title and the axis labels */
static void draw_labels(buf *out, const svg_chart *c, const frame *f, double W, double H)
{
    if (c->title && *c->title) {
        /* a long title is set smaller rather than cut by the edges (15 px
         * bold is about 9.2 px per character) */
        double fs = 15, tw = text_w(c->title) / CHAR_W * 9.2;
        if (tw > W - 24) fs = fmax(9, 15 * (W - 24) / tw);
        buf_printf(out,
                   "<text x=\"%.1f\" y=\"22\" text-anchor=\"middle\" font-size=\"%.1f\" "
                   "font-weight=\"bold\">",
                   W / 2, fs);
        esc(out, c->title);
        buf_adds(out, "</text>\n");
    }
    if (c->x_label && *c->x_label) {
        buf_printf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                   (f->left + f->right) / 2, H - 12);
        esc(out, c->x_label);
        buf_adds(out, "</text>\n");
    }
    if (c->y_label && *c->y_label) {
        double cy = (f->top + f->bottom) / 2;
        buf_printf(
            out,
            "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 18 %.1f)\">",
            cy, cy);
        esc(out, c->y_label);
        buf_adds(out, "</text>\n");
    }
}

/* the grid, the ticks with their labels and the frame */
static void draw_grid(buf *out, const svg_chart *c, const frame *f)
{
    char lab[64];
    buf_adds(out, "<g stroke=\"#e4e4e4\" stroke-width=\"1\">\n");
    for (int i = 0; i < f->y.nt; i++)
        buf_printf(out, "<path d=\"M%.1f %.1fH%.1f\"/>\n", f->left, px_y(f, f->y.t[i]), f->right);
    for (int i = 0; i < f->x.nt; i++)
        buf_printf(out, "<path d=\"M%.1f %.1fV%.1f\"/>\n", px_x(f, f->x.t[i]), f->top, f->bottom);
    buf_adds(out, "</g>\n<g fill=\"#333\">\n");
    for (int i = 0; i < f->y.nt; i++) {
        double y = px_y(f, f->y.t[i]);
        fmt_tick(lab, sizeof lab, f->y.t[i], f->y.exp10);
        buf_printf(out,
                   "<path d=\"M%.1f %.1fh-5\" stroke=\"#333\"/><text x=\"%.1f\" y=\"%.1f\" "
                   "text-anchor=\"end\">%s</text>\n",
                   f->left, y, f->left - 8, y + 4, lab);
    }
    for (int i = 0; i < f->x.nt; i++) {
        double x = px_x(f, f->x.t[i]);
        buf_printf(out,
                   "<path d=\"M%.1f %.1fv5\" stroke=\"#333\"/><text x=\"%.1f\" y=\"%.1f\" "
                   "text-anchor=\"middle\">",
                   x, f->bottom, x, f->bottom + 19);
        if (f->x.cat) {
            esc(out, c->cats[(size_t)f->x.t[i]]);
        } else {
            if (f->x.log2)
                fmt_tick_log2(lab, sizeof lab, (int)f->x.t[i]);
            else
                fmt_tick(lab, sizeof lab, f->x.t[i], f->x.exp10);
            buf_adds(out, lab);
        }
        buf_adds(out, "</text>\n");
    }
    buf_adds(out, "</g>\n");
    buf_printf(out,
               "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
               "stroke=\"#333\"/>\n",
               f->left, f->top, f->right - f->left, f->bottom - f->top);
}

/* a series' line, broken at the points that cannot be placed */
static void draw_line(buf *out, const frame *f, const svg_series *se)
{
    size_t run = 0;
    for (size_t i = 0; i <= se->n; i++) {
        bool ok = i < se->n && point_ok(f, se, i);
        if (ok) {
            buf_adds(out, run ? " " : "<polyline stroke-width=\"2\" points=\"");
            buf_printf(out, "%.1f,%.1f", px_x(f, ax_val(&f->x, se->x[i])), px_y(f, se->y[i]));
            run++;
        } else if (run) {
            buf_adds(out, "\"/>\n");
            run = 0;
        }
    }
}

/* a series' interval bars, where it has them */
static void draw_intervals(buf *out, const frame *f, const svg_series *se)
{
    for (size_t i = 0; se->ylo && se->yhi && i < se->n; i++) {
        double xv = ax_val(&f->x, se->x[i]);
        if (!isfinite(xv) || !y_ok(se->ylo[i]) || !y_ok(se->yhi[i])) continue;
        double x = px_x(f, xv), y0 = px_y(f, se->ylo[i]), y1 = px_y(f, se->yhi[i]);
        buf_printf(out,
                   "<path class=\"interval\" stroke-width=\"1.5\" d=\"M%.1f %.1fV%.1fM%.1f "
                   "%.1fh10M%.1f %.1fh10\"/>\n",
                   x, y0, y1, x - 5, y0, x - 5, y1);
    }
}

/* series s's markers, each with its values as a tooltip */
static void draw_markers(buf *out, const svg_chart *c, const frame *f, size_t s)
{
    const svg_series *se = &c->series[s];
    const char *col = palette[s % N_PALETTE];
    for (size_t i = 0; i < se->n; i++) {
        if (!point_ok(f, se, i)) continue;
        marker(out, (int)s, col, px_x(f, ax_val(&f->x, se->x[i])), px_y(f, se->y[i]));
        buf_adds(out, " stroke=\"none\"><title>");
        esc(out, se->name);
        if (c->cats && se->x[i] >= 0 && (size_t)se->x[i] < c->n_cats) {
            buf_adds(out, " ");
            esc(out, c->cats[(size_t)se->x[i]]);
        } else {
            buf_printf(out, " x=%g", se->x[i]);
        }
        buf_printf(out, ": %g", se->y[i]);
        if (se->ylo && se->yhi && isfinite(se->ylo[i]) && isfinite(se->yhi[i]))
            buf_printf(out, " [%g, %g]", se->ylo[i], se->yhi[i]);
        buf_adds(out, "</title></");
        buf_adds(out, (s % N_MARKERS) == 0 ? "circle" : (s % N_MARKERS) == 1 ? "rect" : "path");
        buf_adds(out, ">\n");
    }
}

/* series s: its line (categorical charts draw none), interval bars, markers */
static void draw_series(buf *out, const svg_chart *c, const frame *f, size_t s)
{
    const svg_series *se = &c->series[s];
    buf_printf(out, "<g class=\"series\" stroke=\"%s\" fill=\"none\">\n", palette[s % N_PALETTE]);
    if (!c->cats) draw_line(out, f, se);
    draw_intervals(out, f, se);
    draw_markers(out, c, f, s);
    buf_adds(out, "</g>\n");
}

/* the legend, above the plot, where legend_layout placed its entries */
static void draw_legend(buf *out, const svg_chart *c, const double *ex, const int *erow)
{
    double ly0 = (c->title && *c->title ? 38 : 14) + 4;
    for (size_t s = 0; s < c->n_series; s++) {
        const char *col = palette[s % N_PALETTE];
        double x = ex[s], y = ly0 + erow[s] * LEGEND_ROW + 6;
        buf_adds(out, "<g class=\"legend\">");
        if (!c->cats) /* categorical charts draw no lines */
            buf_printf(out, "<path d=\"M%.1f %.1fh22\" stroke=\"%s\" stroke-width=\"2\"/>", x, y,
                       col);
        marker(out, (int)s, col, x + 11, y);
        buf_printf(out, "/><text x=\"%.1f\" y=\"%.1f\">", x + 28, y + 4);
        esc(out, c->series[s].name);
        buf_adds(out, "</text></g>\n");
    }
}

/* One chart of W x H px: frame, axes, labels, grid, series, legend. */
static void chart(buf *out, const svg_chart *c, double W, double H)
{
    frame f = {0};
    double *ex = xcalloc(c->n_series + 1, sizeof *ex);
    int *erow = xcalloc(c->n_series + 1, sizeof *erow);
    place_frame(&f, c, W, H, ex, erow);
    bool nodata = choose_axes(&f, c);
    draw_labels(out, c, &f, W, H);
    draw_grid(out, c, &f);
    if (nodata)
        buf_printf(out,
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"16\" "
                   "fill=\"#777\">no data</text>\n",
                   (f.left + f.right) / 2, (f.top + f.bottom) / 2);
    for (size_t s = 0; s < c->n_series; s++)
        draw_series(out, c, &f, s);
    draw_legend(out, c, ex, erow);
    free(ex);
    free(erow);
}

static void dims(const svg_chart *c, double *w, double *h)
{
    *w = c->width > 0 ? c->width : 720;
    *h = c->height > 0 ? c->height : 440;
}

void svg_stack(buf *out, const svg_chart *charts, size_t n)
{
    double W = 0, H = 0;
    for (size_t i = 0; i < n; i++) {
        double w, h;
        dims(&charts[i], &w, &h);
        if (w > W) W = w;
        H += h;
    }
    if (n == 0) {
        W = 720;
        H = 440;
    }
    buf_printf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                    "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
                    "<rect width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n",
               W, H, W, H, W, H);
    if (n == 0)
        buf_adds(out, "<text x=\"360\" y=\"220\" text-anchor=\"middle\" font-size=\"16\" fill=\"#777\">no data</text>\n");
    double y = 0;
    for (size_t i = 0; i < n; i++) {
        double w, h;
        dims(&charts[i], &w, &h);
        buf_printf(out, "<g class=\"chart\" transform=\"translate(0 %.0f)\">\n", y);
        chart(out, &charts[i], w, h);
        buf_adds(out, "</g>\n");
        y += h;
    }
    buf_adds(out, "</svg>\n");
}

void svg_line_chart(buf *out, const svg_chart *c)
{
    svg_stack(out, c, 1);
}
