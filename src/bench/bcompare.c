/* bcompare.c - `gpumod bench compare A.json B.json` (bcompare.h): the
 * ratio B/A of each headline's geometric mean over iterations, with a Welch
 * t interval on the log values, for every load point both results share.
 *
 * Why not a bootstrap: with the default 3 iterations a percentile
 * bootstrap of median(B)/median(A) can only return ratios of observed
 * values, so its interval is [min B/max A, max B/min A] whatever the
 * confidence, and two runs of one config "differ" whenever their 3 values
 * do not overlap (10 % of rows).  The t interval on logs is calibrated
 * for roughly log-normal iteration noise and widens properly with the
 * Bonferroni correction (t_{2 df} is large: it still finds a 10 % change
 * at 1 % noise with 3 iterations).
 *
 * The design decision is the family correction.  A load run has a dozen
 * headlines per point and often several points; at 95 % per row, one
 * row in twenty of two runs of one config would be "significant".
 * Bonferroni over the testable rows keeps the chance of any false alarm
 * in the whole table at 1 - conf.  It is conservative, which is the right
 * error for a tool people use to decide that a change did something.
 * Rows with fewer than two iterations on a side are shown but never
 * tested: one run has no spread to compare against. */
#include "bench/bcompare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bagg.h"
#include "util/distrib.h"

#define SCHEMA "gpumod.bench/1"

static const char *str_of(const cJSON *o, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static int check_doc(const cJSON *d, const char *side, char *err, size_t errlen)
{
    const char *schema = cJSON_IsObject(d) ? str_of(d, "schema") : NULL;
    if (!schema || strcmp(schema, SCHEMA) != 0) {
        if (schema)
            snprintf(err, errlen, "%s is not a %s result (schema is '%s')", side, SCHEMA, schema);
        else
            snprintf(err, errlen, "%s is not a %s result (no \"schema\")", side, SCHEMA);
        return -1;
    }
    if (!str_of(d, "kind")) {
        snprintf(err, errlen, "%s: \"kind\" is missing or not a string", side);
        return -1;
    }
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(d, "points"))) {
        snprintf(err, errlen, "%s: \"points\" is missing or not an array", side);
        return -1;
    }
    return 0;
}

static bool point_key(const cJSON *p, const char **x_name, double *x)
{
    const cJSON *xv = cJSON_GetObjectItemCaseSensitive(p, "x");
    *x_name = str_of(p, "x_name");
    if (!*x_name || !cJSON_IsNumber(xv)) return false;
    *x = xv->valuedouble;
    return true;
}

static const cJSON *find_point(const cJSON *points, const char *x_name, double x)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, points)
    {
        const char *n;
        double v;
        if (point_key(p, &n, &v) && strcmp(n, x_name) == 0 && fabs(v - x) <= 1e-9 * fmax(1, fabs(x))) return p;
    }
    return NULL;
}

/* "concurrency=1, 8" (the points of one side, for the refusal) */
static void list_points(buf *b, const cJSON *points)
{
    const cJSON *p;
    const char *last = NULL;
    cJSON_ArrayForEach(p, points)
    {
        const char *n;
        double x;
        if (!point_key(p, &n, &x)) continue;
        if (last && strcmp(last, n) == 0)
            buf_printf(b, ",%g", x);
        else
            buf_printf(b, "%s%s=%g", last ? " " : "", n, x);
        last = n;
    }
    if (!last) buf_adds(b, "none");
}

/* the finite per-iteration values of metric name at point p */
static size_t iter_values(const cJSON *p, const char *name, double **out)
{
    const cJSON *its = cJSON_GetObjectItemCaseSensitive(p, "iterations"), *it;
    size_t n = 0, cap = (size_t)cJSON_GetArraySize(its);
    *out = xmalloc((cap ? cap : 1) * sizeof **out);
    cJSON_ArrayForEach(it, its)
    {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(it, "values"), name);
        if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && n < cap) (*out)[n++] = v->valuedouble;
    }
    return n;
}

typedef struct pending {
    double *a, *b; /* owned */
} pending;

static bool all_positive(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(v[i] > 0)) return false;
    return true;
}

/* mean and sample variance of log v[0..n-1] (n >= 2, every v > 0) */
static void log_moments(const double *v, size_t n, double *mean, double *var)
{
    double m = 0, ss = 0;
    for (size_t i = 0; i < n; i++) m += log(v[i]);
    m /= (double)n;
    for (size_t i = 0; i < n; i++) ss += (log(v[i]) - m) * (log(v[i]) - m);
    *mean = m;
    *var = ss / (double)(n - 1);
}

/* The ratio of geometric means b/a with a Welch t interval on the log
 * values at confidence cc: exp(d -+ t_{df,(1+cc)/2} se), d the difference
 * of the log means, se^2 = var_a/na + var_b/nb, df by Welch-Satterthwaite.
 * se == 0 (every iteration identical on both sides): the interval is the
 * point exp(d), so a row is significant exactly when d != 0 (decided on d
 * itself: exp of a tiny d may round to 1).  Returns +1 when the interval
 * lies above 1, -1 below, 0 when it holds 1. */
static int welch_log_ratio(const double *a, size_t na, const double *b, size_t nb, double cc, bci *out)
{
    double ma, va, mb, vb;
    log_moments(a, na, &ma, &va);
    log_moments(b, nb, &mb, &vb);
    double d = mb - ma, sa = va / (double)na, sb = vb / (double)nb, se = sqrt(sa + sb);
    out->est = exp(d);
    out->n = na < nb ? na : nb;
    if (se == 0) {
        out->lo = out->hi = out->est;
        return d > 0 ? 1 : d < 0 ? -1 : 0;
    }
    double df = (sa + sb) * (sa + sb) /
                (sa * sa / (double)(na - 1) + sb * sb / (double)(nb - 1));
    double t = t_quantile(1 - (1 - cc) / 2, df);
    out->lo = exp(d - t * se);
    out->hi = exp(d + t * se);
    return out->lo > 1 ? 1 : out->hi < 1 ? -1 : 0;
}

/* the metric names of a point, each once, in the order iterations list them */
static size_t metric_names(const cJSON *p, const char **names, size_t max)
{
    const cJSON *its = cJSON_GetObjectItemCaseSensitive(p, "iterations"), *it;
    size_t n = 0;
    cJSON_ArrayForEach(it, its)
    {
        const cJSON *v;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(it, "values"))
        {
            if (!v->string) continue;
            size_t i = 0;
            while (i < n && strcmp(names[i], v->string) != 0) i++;
            if (i == n && n < max) names[n++] = v->string;
        }
    }
    return n;
}

int bcompare(const cJSON *a, const cJSON *b, double conf, uint64_t seed, bcmp_row **rows, size_t *n, char *err,
             size_t errlen)
{
    (void)seed; /* the Welch interval draws nothing; kept for the contract */
    *rows = NULL;
    *n = 0;
    if (!(conf > 0 && conf < 1)) {
        snprintf(err, errlen, "confidence %g is not between 0 and 1", conf);
        return -1;
    }
    if (check_doc(a, "A", err, errlen) || check_doc(b, "B", err, errlen)) return -1;
    const char *ka = str_of(a, "kind"), *kb = str_of(b, "kind");
    if (strcmp(ka, kb) != 0) {
        snprintf(err, errlen, "A is a '%s' result and B a '%s' result: only results of one kind compare", ka, kb);
        return -1;
    }
    const cJSON *pa = cJSON_GetObjectItemCaseSensitive(a, "points"), *pb = cJSON_GetObjectItemCaseSensitive(b, "points");

    size_t cap = 16, nr = 0;
    bcmp_row *r = xcalloc(cap, sizeof *r);
    pending *pd = xcalloc(cap, sizeof *pd);
    size_t matched = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, pa)
    {
        const char *x_name;
        double x;
        if (!point_key(p, &x_name, &x)) continue;
        const cJSON *q = find_point(pb, x_name, x);
        if (!q) continue;
        matched++;
        const char *names[64];
        size_t nn = metric_names(p, names, 64);
        for (size_t i = 0; i < nn; i++) {
            double *va, *vb;
            size_t na = iter_values(p, names[i], &va), nb = iter_values(q, names[i], &vb);
            if (na == 0 && nb == 0) {
                free(va);
                free(vb);
                continue;
            }
            if (nr == cap) {
                cap *= 2;
                r = xrealloc(r, cap * sizeof *r);
                pd = xrealloc(pd, cap * sizeof *pd);
            }
            bcmp_row *row = &r[nr];
            memset(row, 0, sizeof *row);
            snprintf(row->point, sizeof row->point, "%s=%g", x_name, x);
            snprintf(row->metric, sizeof row->metric, "%s", names[i]);
            row->a = bstat_median(va, na);
            row->b = bstat_median(vb, nb);
            row->na = na;
            row->nb = nb;
            row->higher_better = bagg_higher_is_better(names[i]);
            row->ratio.est = row->a > 0 && row->b >= 0 && na && nb ? row->b / row->a : NAN;
            row->ratio.lo = row->ratio.hi = NAN;
            row->ratio.n = na < nb ? na : nb;
            row->conf = NAN;
            row->verdict = 2;
            if (na == 0 || nb == 0)
                snprintf(row->note, sizeof row->note, "no value in %s", na == 0 ? "A" : "B");
            else if (na < 2 || nb < 2)
                snprintf(row->note, sizeof row->note, "one iteration: use --iterations 3 or more");
            else if (!all_positive(va, na) || !all_positive(vb, nb))
                snprintf(row->note, sizeof row->note, "non-positive values");
            else
                row->verdict = 0; /* testable; decided below */
            pd[nr].a = va;
            pd[nr].b = vb;
            nr++;
        }
    }
    if (!matched) {
        buf la = BUF_INIT, lb = BUF_INIT;
        list_points(&la, pa);
        list_points(&lb, pb);
        snprintf(err, errlen, "A and B have no load point in common (A: %s; B: %s)", la.p, lb.p);
        buf_release(&la);
        buf_release(&lb);
        free(r);
        free(pd);
        return -1;
    }

    size_t k = 0;
    for (size_t i = 0; i < nr; i++) k += r[i].verdict == 0;
    double cc = k ? 1 - (1 - conf) / (double)k : NAN;
    for (size_t i = 0; i < nr; i++) {
        bcmp_row *row = &r[i];
        if (row->verdict == 0) {
            int dir = welch_log_ratio(pd[i].a, row->na, pd[i].b, row->nb, cc, &row->ratio);
            row->conf = cc;
            if (dir) row->verdict = ((dir > 0) == row->higher_better) ? 1 : -1;
        }
        free(pd[i].a);
        free(pd[i].b);
    }
    free(pd);
    *rows = r;
    *n = nr;
    return 0;
}

static const char *verdict_word(int v)
{
    return v == 1 ? "better" : v == -1 ? "worse" : v == 0 ? "same" : "n/a";
}

/* a figure in 4-5 significant digits, "-" for NaN */
static void fmt_num(char *s, size_t cap, double v)
{
    if (isnan(v))
        snprintf(s, cap, "-");
    else if (fabs(v) >= 1000)
        snprintf(s, cap, "%.0f", v);
    else if (fabs(v) >= 100)
        snprintf(s, cap, "%.1f", v);
    else if (fabs(v) >= 1)
        snprintf(s, cap, "%.2f", v);
    else
        snprintf(s, cap, "%.4f", v);
}

static void fmt_ratio(char *s, size_t cap, double v)
{
    if (isnan(v))
        snprintf(s, cap, "-");
    else
        snprintf(s, cap, "%.3f", v);
}

void bcompare_render(buf *out, const bcmp_row *rows, size_t n)
{
    enum { C_POINT, C_METRIC, C_A, C_B, C_RATIO, C_CI, C_VERDICT, NC };
    static const char *const head[NC] = {"point", "metric", "A", "B", "B/A", "interval", "verdict"};
    static const bool right[NC] = {false, false, true, true, true, false, false};
    char(*cell)[NC][48] = xcalloc(n ? n : 1, sizeof *cell);
    size_t w[NC];
    for (int c = 0; c < NC; c++) w[c] = strlen(head[c]);
    size_t k = 0;
    double cc = NAN;
    for (size_t i = 0; i < n; i++) {
        const bcmp_row *r = &rows[i];
        char lo[24], hi[24];
        snprintf(cell[i][C_POINT], 48, "%s", r->point);
        snprintf(cell[i][C_METRIC], 48, "%s", r->metric);
        fmt_num(cell[i][C_A], 48, r->a);
        fmt_num(cell[i][C_B], 48, r->b);
        fmt_ratio(cell[i][C_RATIO], 48, r->ratio.est);
        if (isnan(r->ratio.lo) || isnan(r->ratio.hi)) {
            snprintf(cell[i][C_CI], 48, "-");
        } else {
            fmt_ratio(lo, sizeof lo, r->ratio.lo);
            fmt_ratio(hi, sizeof hi, r->ratio.hi);
            snprintf(cell[i][C_CI], 48, "[%s, %s]", lo, hi);
        }
        snprintf(cell[i][C_VERDICT], 48, "%s", verdict_word(r->verdict));
        for (int c = 0; c < NC; c++)
            if (strlen(cell[i][c]) > w[c]) w[c] = strlen(cell[i][c]);
        if (r->verdict != 2) {
            k++;
            cc = r->conf;
        }
    }
    for (int c = 0; c < NC; c++) {
        if (c == NC - 1)
            buf_printf(out, "%s", head[c]);
        else
            buf_printf(out, right[c] ? "%*s  " : "%-*s  ", (int)w[c], head[c]);
    }
    buf_addc(out, '\n');
    for (size_t i = 0; i < n; i++) {
        for (int c = 0; c < NC; c++) {
            if (c == NC - 1)
                buf_printf(out, "%s", cell[i][c]);
            else
                buf_printf(out, right[c] ? "%*s  " : "%-*s  ", (int)w[c], cell[i][c]);
        }
        if (rows[i].note[0]) buf_printf(out, "  (%s)", rows[i].note);
        buf_addc(out, '\n');
    }
    if (k)
        buf_printf(out,
                   "B/A: ratio of geometric means over iterations; intervals: %.4g %% Welch t on logs, "
                   "Bonferroni-corrected over %zu comparisons (%.3g %% overall)\n",
                   100 * cc, k, 100 * (1 - (1 - cc) * (double)k));
    else
        buf_adds(out, "no metric could be tested: each side needs 2 or more iterations\n");
    free(cell);
}

static void add_num(cJSON *o, const char *key, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

cJSON *bcompare_json(const bcmp_row *rows, size_t n)
{
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    size_t k = 0;
    double cc = NAN;
    for (size_t i = 0; i < n; i++) {
        const bcmp_row *r = &rows[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "point", r->point);
        cJSON_AddStringToObject(j, "metric", r->metric);
        add_num(j, "a", r->a);
        add_num(j, "b", r->b);
        cJSON_AddNumberToObject(j, "na", (double)r->na);
        cJSON_AddNumberToObject(j, "nb", (double)r->nb);
        add_num(j, "ratio", r->ratio.est);
        add_num(j, "lo", r->ratio.lo);
        add_num(j, "hi", r->ratio.hi);
        add_num(j, "conf", r->conf);
        cJSON_AddBoolToObject(j, "higher_is_better", r->higher_better);
        cJSON_AddBoolToObject(j, "significant", r->verdict == 1 || r->verdict == -1);
        cJSON_AddStringToObject(j, "verdict", verdict_word(r->verdict));
        if (r->note[0])
            cJSON_AddStringToObject(j, "note", r->note);
        else
            cJSON_AddNullToObject(j, "note");
        cJSON_AddItemToArray(arr, j);
        if (r->verdict != 2) {
            k++;
            cc = r->conf;
        }
    }
    cJSON_AddNumberToObject(o, "comparisons", (double)k);
    add_num(o, "conf", cc);
    cJSON_AddItemToObject(o, "rows", arr);
    return o;
}
