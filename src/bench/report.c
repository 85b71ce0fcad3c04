/* report.c - the renderings of a bench result document (docs/bench.md,
 * "The result document" and "Outputs"): the terminal table, CSV, Markdown
 * and SVG charts, for the three kinds of run (load, ctx_sweep, switch).
 *
 * Everything is read back from the cJSON document rather than from the
 * structs that produced it, so `gpumod bench report OLD.json` renders a
 * document from an older or interrupted run the same way: any key may be
 * missing or null, and then its cell says "-" (CSV: an empty field).
 * The terminal table and Markdown share one table builder, so the two
 * always show the same columns and figures. */
#include "bench/bench.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/svg.h"
#include "util/strv.h"

/* ---- reading the document -------------------------------------------------- */

static double jnum(const cJSON *o, const char *k)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : NULL;
}

static const cJSON *jget(const cJSON *o, const char *k)
{
    return o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static const cJSON *jarr(const cJSON *o, const char *k)
{
    const cJSON *v = jget(o, k);
    return cJSON_IsArray(v) ? v : NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A figure of a point: the summary's median and interval over iterations,
 * or, for a document without summaries, the median of the iterations'
 * values (no interval). */
typedef struct fig {
    double med, lo, hi;
    int n;
} fig;

static fig point_fig(const cJSON *pt, const char *name)
{
    fig f = {NAN, NAN, NAN, 0};
    const cJSON *s = jget(jget(pt, "summary"), name);
    if (cJSON_IsObject(s)) {
        f.med = jnum(s, "median");
        f.lo = jnum(s, "lo");
        f.hi = jnum(s, "hi");
        double n = jnum(s, "n");
        f.n = n >= 0 && n < INT_MAX ? (int)n : 0; /* NaN and out-of-range too (no UB) */
        return f;
    }
    const cJSON *its = jarr(pt, "iterations"), *it;
    double v[256];
    size_t k = 0;
    cJSON_ArrayForEach(it, its)
    {
        double x = jnum(jget(it, "values"), name);
        if (!isfinite(x)) x = jnum(it, name); /* ctx_sweep keeps them at the top too */
        if (isfinite(x) && k < sizeof v / sizeof v[0]) v[k++] = x;
    }
    if (k == 0) return f;
    qsort(v, k, sizeof v[0], cmp_double);
    f.med = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
    f.n = (int)k;
    return f;
}

static const char *doc_kind(const cJSON *r)
{
    const char *k = jstr(r, "kind");
    if (k) return k;
    if (jget(r, "phases")) return "switch";
    const cJSON *pts = jarr(r, "points");
    const char *xn = pts ? jstr(cJSON_GetArrayItem(pts, 0), "x_name") : NULL;
    return xn && strcmp(xn, "depth") == 0 ? "ctx_sweep" : "load";
}

/* ---- numbers ------------------------------------------------------------------ */

/* A figure for people: about three significant digits, "-" when unknown. */
static void fmt_num(char *o, size_t n, double v)
{
    double a = fabs(v);
    if (!isfinite(v)) snprintf(o, n, "-");
    else if (v == 0) snprintf(o, n, "0");
    else if (a >= 100) snprintf(o, n, "%.0f", v);
    else if (a >= 10) snprintf(o, n, "%.1f", v);
    else if (a >= 1) snprintf(o, n, "%.2f", v);
    else snprintf(o, n, "%.3g", v);
}

/* "median [lo, hi]" when the figure has an interval from >= 2 iterations */
static char *fmt_fig(fig f, bool interval)
{
    char m[32], lo[32], hi[32];
    fmt_num(m, sizeof m, f.med);
    if (!interval || f.n < 2 || !isfinite(f.med) || !isfinite(f.lo) || !isfinite(f.hi)) return xstrdup(m);
    fmt_num(lo, sizeof lo, f.lo);
    fmt_num(hi, sizeof hi, f.hi);
    return xasprintf("%s [%s, %s]", m, lo, hi);
}

/* an x value: concurrency 64, rate 2.5, depth 16384 */
static void fmt_x(char *o, size_t n, double x)
{
    if (!isfinite(x)) snprintf(o, n, "-");
    else snprintf(o, n, "%g", x);
}

/* ---- the table builder ---------------------------------------------------------- */

typedef struct tbl {
    size_t ncol;
    const char *const *head;
    char **cell; /* rows x ncol, owned */
    size_t nrow, cap;
} tbl;

static void tbl_row(tbl *t, char **cells)
{
    if (t->nrow == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 8;
        t->cell = xrealloc(t->cell, t->cap * t->ncol * sizeof *t->cell);
    }
    memcpy(t->cell + t->nrow * t->ncol, cells, t->ncol * sizeof *cells);
    t->nrow++;
}

static char *switch_heads_own[8];

static void tbl_release(tbl *t)
{
    for (size_t i = 0; i < t->nrow * t->ncol; i++) free(t->cell[i]);
    free(t->cell);
    if (t->head == (const char *const *)switch_heads_own) /* built per document */
        for (size_t i = 0; i < 8; i++) {
            free(switch_heads_own[i]);
            switch_heads_own[i] = NULL;
        }
}

static size_t ulen(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) n++;
    return n;
}

static void pad(buf *out, size_t n)
{
    while (n--) buf_addc(out, ' ');
}

/* Columns two spaces apart; the first column left-aligned, the figures
 * right-aligned; a dashed rule under the header.  No trailing spaces. */
static void tbl_text(buf *out, const tbl *t, bool color)
{
    size_t w[16] = {0};
    for (size_t c = 0; c < t->ncol && c < 16; c++) {
        w[c] = ulen(t->head[c]);
        for (size_t r = 0; r < t->nrow; r++) {
            size_t l = ulen(t->cell[r * t->ncol + c]);
            if (l > w[c]) w[c] = l;
        }
    }
    for (size_t r = 0; r <= t->nrow + 1; r++) {
        buf line = BUF_INIT;
        for (size_t c = 0; c < t->ncol; c++) {
            const char *s = r == 0 ? t->head[c] : r == 1 ? NULL : t->cell[(r - 2) * t->ncol + c];
            if (c) buf_adds(&line, "  ");
            if (!s) {
                for (size_t i = 0; i < w[c]; i++) buf_addc(&line, '-');
                continue;
            }
            size_t l = ulen(s);
            if (c == 0) {
                buf_adds(&line, s);
                if (c + 1 < t->ncol) pad(&line, w[c] - l);
            } else {
                pad(&line, w[c] - l);
                buf_adds(&line, s);
            }
        }
        while (line.len && line.p[line.len - 1] == ' ') line.p[--line.len] = 0;
        if (r == 0 && color) buf_printf(out, "\033[1m%s\033[0m\n", line.p);
        else buf_printf(out, "%s\n", line.p);
        buf_release(&line);
    }
}

static void md_cell(buf *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') buf_adds(out, "\\|");
        else if (*s == '\n' || *s == '\r') buf_addc(out, ' ');
        else buf_addc(out, *s);
    }
}

static void tbl_md(buf *out, const tbl *t)
{
    buf_adds(out, "|");
    for (size_t c = 0; c < t->ncol; c++) {
        buf_addc(out, ' ');
        md_cell(out, t->head[c]);
        buf_adds(out, " |");
    }
    buf_adds(out, "\n|");
    for (size_t c = 0; c < t->ncol; c++) buf_adds(out, c ? "---:|" : "---|");
    buf_addc(out, '\n');
    for (size_t r = 0; r < t->nrow; r++) {
        buf_adds(out, "|");
        for (size_t c = 0; c < t->ncol; c++) {
            buf_addc(out, ' ');
            md_cell(out, t->cell[r * t->ncol + c]);
            buf_adds(out, " |");
        }
        buf_addc(out, '\n');
    }
}

/* ---- the tables of each kind ----------------------------------------------------- */

/* The headline columns of a load table: which value, how it is headed, and
 * whether it is a throughput (shown with its interval). */
static const struct {
    const char *value, *head;
    bool tput;
} load_cols[] = {
    {"req_tput", "req/s", true},
    {"out_tput", "out tok/s", true},
    {"ttft_ms", "TTFT p50 ms", false},
    {"ttft_ms_p99", "TTFT p99 ms", false},
    {"tpot_ms", "TPOT p50 ms", false},
    {"tpot_ms_p99", "TPOT p99 ms", false},
    {"itl_token_ms", "ITL p50 ms", false},
    {"e2el_ms", "E2EL p50 ms", false},
    {"goodput", "goodput", true},
};
#define N_LOAD_COLS (sizeof load_cols / sizeof load_cols[0])

static const char *load_heads[N_LOAD_COLS + 2];

/* Without an SLO every completed request is "good": goodput then only
 * repeats req/s, so it is shown as "-".  A document without settings
 * (older) keeps its goodput. */
static bool slo_set(const cJSON *r)
{
    const cJSON *slo = jget(jget(r, "settings"), "slo");
    if (!cJSON_IsObject(slo)) return true;
    static const char *const k[] = {"ttft_ms", "tpot_ms", "e2el_ms"};
    for (size_t i = 0; i < 3; i++)
        if (jnum(slo, k[i]) > 0) return true;
    return false;
}

static void load_table(tbl *t, const cJSON *r)
{
    const cJSON *pts = jarr(r, "points"), *pt;
    const char *xname = pts ? jstr(cJSON_GetArrayItem(pts, 0), "x_name") : NULL;
    load_heads[0] = xname ? xname : "x";
    for (size_t i = 0; i < N_LOAD_COLS; i++) load_heads[i + 1] = load_cols[i].head;
    load_heads[N_LOAD_COLS + 1] = "failed";
    t->ncol = N_LOAD_COLS + 2;
    t->head = load_heads;
    cJSON_ArrayForEach(pt, pts)
    {
        char *cells[N_LOAD_COLS + 2], x[32];
        fmt_x(x, sizeof x, jnum(pt, "x"));
        cells[0] = xstrdup(x);
        for (size_t i = 0; i < N_LOAD_COLS; i++)
            cells[i + 1] = strcmp(load_cols[i].value, "goodput") == 0 && !slo_set(r)
                               ? xstrdup("-")
                               : fmt_fig(point_fig(pt, load_cols[i].value), load_cols[i].tput);
        /* failed requests summed over the iterations */
        const cJSON *it;
        double failed = 0;
        bool known = false;
        cJSON_ArrayForEach(it, jarr(pt, "iterations"))
        {
            double f = jnum(it, "failed");
            if (isfinite(f)) {
                failed += f;
                known = true;
            }
        }
        cells[N_LOAD_COLS + 1] = known ? xasprintf("%.0f", failed) : xstrdup("-");
        tbl_row(t, cells);
    }
}

/* the worst status of a ctx-sweep point's iterations, with its reason */
static const char *ctx_status(const cJSON *pt, const char **reason)
{
    static const char *const order[] = {"ok", "degraded", "failed"};
    int worst = -1;
    const char *other = NULL;
    const cJSON *it;
    *reason = NULL;
    cJSON_ArrayForEach(it, jarr(pt, "iterations"))
    {
        const char *s = jstr(it, "status");
        if (!s) continue;
        int k = -1;
        for (int i = 0; i < 3; i++)
            if (strcmp(s, order[i]) == 0) k = i;
        if (k < 0) {
            other = s;
            continue;
        }
        if (k > worst) {
            worst = k;
            *reason = jstr(it, "reason");
        }
    }
    return worst >= 0 ? order[worst] : other ? other : "-";
}

static const char *const ctx_heads[] = {"depth", "prefill tok/s", "decode tok/s", "status"};

static void ctx_table(tbl *t, const cJSON *r)
{
    t->ncol = 4;
    t->head = ctx_heads;
    const cJSON *pt;
    cJSON_ArrayForEach(pt, jarr(r, "points"))
    {
        char *cells[4], x[32];
        const char *why;
        fmt_x(x, sizeof x, jnum(pt, "x"));
        cells[0] = xstrdup(x);
        cells[1] = fmt_fig(point_fig(pt, "prefill_tps"), true);
        cells[2] = fmt_fig(point_fig(pt, "gen_tps"), true);
        cells[3] = xstrdup(ctx_status(pt, &why));
        tbl_row(t, cells);
    }
}

/* "verify_freed_ms" -> "verify freed" */
static char *phase_name(const char *key)
{
    size_t n = strlen(key);
    if (n > 3 && strcmp(key + n - 3, "_ms") == 0) n -= 3;
    char *s = xstrndup(key, n);
    for (char *p = s; *p; p++)
        if (*p == '_') *p = ' ';
    return s;
}

/* figure of a phase object {"median","lo","hi","n"} */
static fig phase_fig(const cJSON *p)
{
    fig f = {jnum(p, "median"), jnum(p, "lo"), jnum(p, "hi"), 0};
    double n = jnum(p, "n");
    f.n = n >= 0 && n < INT_MAX ? (int)n : 0; /* NaN and out-of-range too (no UB) */
    return f;
}

/* phase | median [lo, hi] ms | n, over both directions; then, where the
 * document has them (docs/bench.md "bench switch"), one column per
 * direction */

static void switch_table(tbl *t, const cJSON *r)
{
    const cJSON *ph = jget(r, "phases"), *p, *dirs = jarr(r, "directions"), *d;
    size_t nd = 0;
    t->head = (const char *const *)switch_heads_own;
    switch_heads_own[0] = xstrdup("phase");
    switch_heads_own[1] = xstrdup("median [lo, hi] ms");
    switch_heads_own[2] = xstrdup("n");
    cJSON_ArrayForEach(d, dirs)
    {
        if (nd >= 2) break;
        const char *from = jstr(d, "from"), *to = jstr(d, "to");
        switch_heads_own[3 + nd * 2] = xasprintf("%s -> %s ms", from ? from : "-", to ? to : "-");
        switch_heads_own[4 + nd * 2] = xstrdup("n");
        nd++;
    }
    t->ncol = 3 + nd * 2;
    if (!cJSON_IsObject(ph)) return;
    cJSON_ArrayForEach(p, ph)
    {
        if (!p->string) continue;
        char *cells[8];
        fig f = phase_fig(p);
        cells[0] = phase_name(p->string);
        cells[1] = fmt_fig(f, true);
        cells[2] = isfinite(jnum(p, "n")) ? xasprintf("%d", f.n) : xstrdup("-");
        size_t k = 0;
        cJSON_ArrayForEach(d, dirs)
        {
            if (k >= nd) break;
            const cJSON *dp = jget(jget(d, "phases"), p->string);
            fig g = phase_fig(dp);
            cells[3 + k * 2] = fmt_fig(g, true);
            cells[4 + k * 2] = isfinite(jnum(dp, "n")) ? xasprintf("%d", g.n) : xstrdup("-");
            k++;
        }
        tbl_row(t, cells);
    }
}

static void build_table(tbl *t, const cJSON *r)
{
    memset(t, 0, sizeof *t);
    const char *kind = doc_kind(r);
    if (strcmp(kind, "switch") == 0) switch_table(t, r);
    else if (strcmp(kind, "ctx_sweep") == 0) ctx_table(t, r);
    else load_table(t, r);
}

/* ---- what goes above and below the table ------------------------------------------- */

/* the target in one line: "qwen3-8b-q4 via router (service qwen3) at
 * http://127.0.0.1:7070, llamacpp b4567" */
static void target_line(buf *out, const cJSON *r)
{
    const cJSON *t = jget(r, "target");
    if (!cJSON_IsObject(t)) return;
    const char *model = jstr(t, "model"), *via = jstr(t, "via"), *svc = jstr(t, "service");
    const char *url = jstr(t, "base_url"), *flavor = jstr(t, "flavor"), *build = jstr(t, "build");
    buf_printf(out, "target: %s", model ? model : jstr(t, "spec") ? jstr(t, "spec") : "-");
    if (via) buf_printf(out, " via %s", via);
    if (svc) buf_printf(out, " (service %s)", svc);
    if (url) buf_printf(out, " at %s", url);
    if (flavor || build)
        buf_printf(out, ", %s%s%s", flavor ? flavor : "", flavor && build ? " " : "", build ? build : "");
    buf_addc(out, '\n');
}

static void title_line(buf *out, const cJSON *r, const char *kind)
{
    const cJSON *s = jget(r, "settings");
    if (strcmp(kind, "switch") == 0) {
        const cJSON *m = jarr(r, "modes");
        const cJSON *ma = cJSON_GetArrayItem(m, 0), *mb = cJSON_GetArrayItem(m, 1);
        double n = jnum(r, "n"), failed = jnum(r, "failed");
        buf_printf(out, "switch: %s <-> %s", cJSON_IsString(ma) ? ma->valuestring : "-",
                   cJSON_IsString(mb) ? mb->valuestring : "-");
        if (isfinite(n)) buf_printf(out, ", %.0f per direction", n);
        if (isfinite(failed)) buf_printf(out, ", %.0f failed", failed);
        buf_addc(out, '\n');
        return;
    }
    if (strcmp(kind, "ctx_sweep") == 0) {
        const cJSON *cs = jget(s, "ctx_sweep");
        buf_adds(out, "context sweep: prefill and decode speed by depth in the KV cache");
        if (isfinite(jnum(cs, "start")) && isfinite(jnum(cs, "max")) && isfinite(jnum(cs, "step")))
            buf_printf(out, ", %g to %g by %g", jnum(cs, "start"), jnum(cs, "max"), jnum(cs, "step"));
        buf_addc(out, '\n');
        return;
    } else {
        const char *shape = jstr(s, "shape");
        buf_printf(out, "load: %s", shape && strcmp(shape, "open") == 0 ? "open loop" : shape ? "closed loop" : "-");
    }
    double it = jnum(s, "iterations"), pt = jnum(s, "prompt_tokens"), gt = jnum(s, "gen_tokens");
    if (isfinite(it)) buf_printf(out, ", %.0f iteration%s per point", it, it == 1 ? "" : "s");
    if (isfinite(pt)) buf_printf(out, ", %.0f prompt tokens", pt);
    if (isfinite(gt)) buf_printf(out, ", %.0f generated", gt);
    buf_addc(out, '\n');
}

/* One verdict line per point of a load run: was the client the
 * bottleneck?  Then each distinct warning the check gave. */
static void self_check_lines(strv *lines, const cJSON *r)
{
    const cJSON *pt;
    cJSON_ArrayForEach(pt, jarr(r, "points"))
    {
        int checked = 0, bound = 0;
        double cpu = NAN;
        strv warn = STRV_INIT;
        const cJSON *it;
        cJSON_ArrayForEach(it, jarr(pt, "iterations"))
        {
            const cJSON *sc = jget(it, "self_check");
            if (!cJSON_IsObject(sc)) continue;
            checked++;
            if (cJSON_IsTrue(jget(sc, "client_bound"))) bound++;
            double c = jnum(sc, "cpu_pct");
            if (isfinite(c) && !(c <= cpu)) cpu = c;
            const cJSON *w;
            cJSON_ArrayForEach(w, jarr(sc, "warnings"))
            {
                if (cJSON_IsString(w) && strv_find(&warn, w->valuestring) < 0) strv_push(&warn, w->valuestring);
            }
        }
        if (checked) {
            char x[32], cpus[48] = "";
            fmt_x(x, sizeof x, jnum(pt, "x"));
            const char *xn = jstr(pt, "x_name");
            if (isfinite(cpu)) snprintf(cpus, sizeof cpus, " (client cpu up to %.0f %% of a core)", cpu);
            if (bound)
                strv_pushf(lines, "self-check %s %s: CLIENT-BOUND in %d of %d iterations%s", xn ? xn : "x", x, bound,
                           checked, cpus);
            else
                strv_pushf(lines, "self-check %s %s: ok, the client was not the bottleneck%s", xn ? xn : "x", x, cpus);
            for (size_t i = 0; i < warn.n; i++) strv_pushf(lines, "  %s", warn.v[i]);
        }
        strv_release(&warn);
    }
}

/* the notes under a table: interval method, statuses, failures, warnings */
static void notes(strv *lines, const cJSON *r, const char *kind)
{
    const cJSON *pt, *it, *w;
    if (strcmp(kind, "load") == 0) {
        bool any = false;
        cJSON_ArrayForEach(pt, jarr(r, "points"))
        {
            if (point_fig(pt, "out_tput").n >= 2) any = true;
        }
        if (any)
            strv_push(lines, "figures: medians over iterations; [lo, hi] the bootstrap 95 % interval of the median");
        /* errors of failed requests, per point */
        cJSON_ArrayForEach(pt, jarr(r, "points"))
        {
            cJSON_ArrayForEach(it, jarr(pt, "iterations"))
            {
                const cJSON *e;
                cJSON_ArrayForEach(e, jget(it, "errors"))
                {
                    char x[32];
                    fmt_x(x, sizeof x, jnum(pt, "x"));
                    if (e->string && cJSON_IsNumber(e))
                        strv_pushf(lines, "failed %s %s: %.0f x %s", jstr(pt, "x_name") ? jstr(pt, "x_name") : "x", x,
                                   e->valuedouble, e->string);
                }
            }
        }
        self_check_lines(lines, r);
    } else if (strcmp(kind, "ctx_sweep") == 0) {
        cJSON_ArrayForEach(pt, jarr(r, "points"))
        {
            const char *why, *st = ctx_status(pt, &why);
            char x[32];
            fmt_x(x, sizeof x, jnum(pt, "x"));
            if (strcmp(st, "ok") != 0 && strcmp(st, "-") != 0)
                strv_pushf(lines, "depth %s: %s%s%s", x, st, why ? ": " : "", why ? why : "");
        }
        /* why the sweep ended (docs/bench.md: the document's "ctx_sweep") */
        const cJSON *cs = jget(r, "ctx_sweep");
        const char *stopped = jstr(cs, "stopped"), *msg = jstr(cs, "message");
        double deep = jnum(cs, "deepest_ok");
        if (stopped) {
            buf l = BUF_INIT;
            buf_printf(&l, "sweep stopped: %s", stopped);
            if (isfinite(deep)) buf_printf(&l, "; deepest ok depth %g", deep);
            if (msg) buf_printf(&l, " (%s)", msg);
            strv_push(lines, l.p);
            buf_release(&l);
        }
    } else if (strcmp(kind, "switch") == 0) {
        cJSON_ArrayForEach(it, jarr(r, "switches"))
        {
            if (!cJSON_IsFalse(jget(it, "ok"))) continue;
            double id = jnum(it, "id");
            const char *err = jstr(it, "error"), *oc = jstr(it, "outcome");
            char num[24] = "-";
            if (isfinite(id)) snprintf(num, sizeof num, "%.0f", id);
            strv_pushf(lines, "switch %s (%s -> %s) %s: %s", num, jstr(it, "from") ? jstr(it, "from") : "-",
                       jstr(it, "to") ? jstr(it, "to") : "-", oc ? oc : "failed", err ? err : "no reason recorded");
        }
    }
    cJSON_ArrayForEach(w, jarr(r, "warnings"))
    {
        if (cJSON_IsString(w)) strv_pushf(lines, "warning: %s", w->valuestring);
    }
}

void breport_table(buf *out, const cJSON *r, bool color)
{
    const char *kind = doc_kind(r);
    title_line(out, r, kind);
    target_line(out, r);
    buf_addc(out, '\n');
    tbl t;
    build_table(&t, r);
    if (t.nrow == 0) buf_adds(out, "(no points: the run measured nothing)\n");
    else tbl_text(out, &t, color);
    tbl_release(&t);
    strv lines = STRV_INIT;
    notes(&lines, r, kind);
    if (lines.n) buf_addc(out, '\n');
    for (size_t i = 0; i < lines.n; i++) {
        const char *l = lines.v[i];
        const char *col = !color                               ? NULL
                          : strstr(l, "CLIENT-BOUND") || strstr(l, ": failed") || strstr(l, ") failed")
                              ? "\033[31m"
                          : strncmp(l, "warning:", 8) == 0 || strstr(l, ": degraded") ? "\033[33m"
                                                                                        : NULL;
        if (col) buf_printf(out, "%s%s\033[0m\n", col, l);
        else buf_printf(out, "%s\n", l);
    }
    strv_release(&lines);
}

void breport_md(buf *out, const cJSON *r)
{
    const char *kind = doc_kind(r);
    buf head = BUF_INIT;
    title_line(&head, r, kind);
    target_line(&head, r);
    /* "**load:** closed loop, ..." one per line (two trailing spaces: a
     * Markdown line break) */
    for (char *l = head.p, *nl; (nl = strchr(l, '\n')) != NULL; l = nl + 1) {
        char *colon = memchr(l, ':', (size_t)(nl - l));
        if (colon) {
            buf_adds(out, "**");
            buf_add(out, l, (size_t)(colon + 1 - l));
            buf_adds(out, "**");
            l = colon + 1;
        }
        buf_add(out, l, (size_t)(nl - l));
        buf_adds(out, "  \n");
    }
    buf_release(&head);
    buf_addc(out, '\n');
    tbl t;
    build_table(&t, r);
    if (t.nrow == 0) buf_adds(out, "(no points: the run measured nothing)\n");
    else tbl_md(out, &t);
    tbl_release(&t);
    strv lines = STRV_INIT;
    notes(&lines, r, kind);
    if (lines.n) buf_addc(out, '\n');
    for (size_t i = 0; i < lines.n; i++) {
        const char *l = lines.v[i];
        bool sub = l[0] == ' ';
        buf_adds(out, sub ? "  - " : "- ");
        md_cell(out, sub ? l + 2 : l);
        buf_addc(out, '\n');
    }
    strv_release(&lines);
}

/* ---- CSV ------------------------------------------------------------------------------ */

/* RFC 4180 (buf_csv_field); records end in CRLF */

static void csv_num(buf *out, double v)
{
    if (isfinite(v)) buf_printf(out, "%.15g", v);
}

/* a JSON scalar as a CSV field: numbers, strings, booleans; else empty */
static void csv_json(buf *out, const cJSON *v)
{
    if (cJSON_IsNumber(v)) csv_num(out, v->valuedouble);
    else if (cJSON_IsString(v)) buf_csv_field(out, v->valuestring);
    else if (cJSON_IsBool(v)) buf_adds(out, cJSON_IsTrue(v) ? "true" : "false");
}

static const char *const csv_load_extra[] = {"sent", "completed", "failed", "tokens_in", "tokens_out", "window_s", NULL};
static const char *const csv_ctx_extra[] = {"prefill_tokens", "gen_tokens", "cache_n", "status", "reason", NULL};

static void csv_points(buf *out, const cJSON *r, bool ctx)
{
    const char *const *extra = ctx ? csv_ctx_extra : csv_load_extra;
    const cJSON *pts = jarr(r, "points"), *pt, *it, *v;
    strv keys = STRV_INIT; /* every "values" key, in order of first appearance */
    cJSON_ArrayForEach(pt, pts)
    {
        cJSON_ArrayForEach(it, jarr(pt, "iterations"))
        {
            cJSON_ArrayForEach(v, jget(it, "values"))
            {
                if (v->string && strv_find(&keys, v->string) < 0) strv_push(&keys, v->string);
            }
        }
    }
    buf_adds(out, "x_name,x,iteration");
    for (size_t i = 0; i < keys.n; i++) {
        buf_addc(out, ',');
        buf_csv_field(out, keys.v[i]);
    }
    for (size_t i = 0; extra[i]; i++) buf_printf(out, ",%s", extra[i]);
    buf_adds(out, "\r\n");
    cJSON_ArrayForEach(pt, pts)
    {
        int n = 0;
        cJSON_ArrayForEach(it, jarr(pt, "iterations"))
        {
            buf_csv_field(out, jstr(pt, "x_name"));
            buf_addc(out, ',');
            csv_num(out, jnum(pt, "x"));
            buf_printf(out, ",%d", ++n);
            const cJSON *vals = jget(it, "values");
            for (size_t i = 0; i < keys.n; i++) {
                buf_addc(out, ',');
                csv_json(out, jget(vals, keys.v[i]));
            }
            for (size_t i = 0; extra[i]; i++) {
                buf_addc(out, ',');
                csv_json(out, jget(it, extra[i]));
            }
            buf_adds(out, "\r\n");
        }
    }
    strv_release(&keys);
}

/* a switch's figure: in its "phases", or at its top (total_ms, first_token_ms) */
static const cJSON *switch_val(const cJSON *sw, const char *key)
{
    const cJSON *v = jget(jget(sw, "phases"), key);
    return v ? v : jget(sw, key);
}

static void csv_switch(buf *out, const cJSON *r)
{
    strv keys = STRV_INIT;
    const cJSON *p, *sw;
    cJSON_ArrayForEach(p, jget(r, "phases"))
    {
        if (p->string) strv_push(&keys, p->string);
    }
    if (keys.n == 0) { /* no pooled summary: the switches' own *_ms keys */
        cJSON_ArrayForEach(sw, jarr(r, "switches"))
        {
            const cJSON *objs[2] = {jget(sw, "phases"), sw};
            for (int o = 0; o < 2; o++)
                cJSON_ArrayForEach(p, objs[o])
                {
                    size_t l = p->string ? strlen(p->string) : 0;
                    if (l > 3 && strcmp(p->string + l - 3, "_ms") == 0 && strv_find(&keys, p->string) < 0)
                        strv_push(&keys, p->string);
                }
        }
    }
    buf_adds(out, "switch,from,to,outcome,ok");
    for (size_t i = 0; i < keys.n; i++) {
        buf_addc(out, ',');
        buf_csv_field(out, keys.v[i]);
    }
    buf_adds(out, ",error\r\n");
    int n = 0;
    cJSON_ArrayForEach(sw, jarr(r, "switches"))
    {
        double id = jnum(sw, "id");
        n++;
        buf_printf(out, "%.0f,", isfinite(id) ? id : n);
        csv_json(out, jget(sw, "from"));
        buf_addc(out, ',');
        csv_json(out, jget(sw, "to"));
        buf_addc(out, ',');
        csv_json(out, jget(sw, "outcome"));
        buf_addc(out, ',');
        csv_json(out, jget(sw, "ok"));
        for (size_t k = 0; k < keys.n; k++) {
            buf_addc(out, ',');
            csv_json(out, switch_val(sw, keys.v[k]));
        }
        buf_addc(out, ',');
        csv_json(out, jget(sw, "error"));
        buf_adds(out, "\r\n");
    }
    strv_release(&keys);
}

void breport_csv(buf *out, const cJSON *r)
{
    const char *kind = doc_kind(r);
    if (strcmp(kind, "switch") == 0) csv_switch(out, r);
    else csv_points(out, r, strcmp(kind, "ctx_sweep") == 0);
}

/* ---- SVG ------------------------------------------------------------------------------ */

/* The points of a run sorted by x, and figures of them as chart series. */
typedef struct pset {
    const cJSON **pt;
    double *x;
    size_t n;
} pset;

static int cmp_pt(const void *a, const void *b)
{
    double x = jnum(*(const cJSON *const *)a, "x"), y = jnum(*(const cJSON *const *)b, "x");
    if (!isfinite(x) || !isfinite(y)) return isfinite(x) ? -1 : isfinite(y);
    return x < y ? -1 : x > y;
}

static void pset_init(pset *s, const cJSON *r)
{
    const cJSON *pts = jarr(r, "points"), *pt;
    size_t n = (size_t)cJSON_GetArraySize(pts);
    s->pt = xcalloc(n + 1, sizeof *s->pt);
    s->x = xcalloc(n + 1, sizeof *s->x);
    s->n = 0;
    cJSON_ArrayForEach(pt, pts) s->pt[s->n++] = pt;
    qsort(s->pt, s->n, sizeof *s->pt, cmp_pt);
    for (size_t i = 0; i < s->n; i++) s->x[i] = jnum(s->pt[i], "x");
}

/* a series' arrays (freed with the pset's arena) */
typedef struct sarr {
    double *y, *lo, *hi;
} sarr;

static svg_series series_of(const pset *s, const char *name, const char *label, sarr *a)
{
    a->y = xcalloc(s->n + 1, sizeof(double));
    a->lo = xcalloc(s->n + 1, sizeof(double));
    a->hi = xcalloc(s->n + 1, sizeof(double));
    for (size_t i = 0; i < s->n; i++) {
        fig f = point_fig(s->pt[i], name);
        bool ci = f.n >= 2 && isfinite(f.med);
        a->y[i] = f.med;
        a->lo[i] = ci ? f.lo : NAN;
        a->hi[i] = ci ? f.hi : NAN;
    }
    return (svg_series){.name = label, .x = s->x, .y = a->y, .ylo = a->lo, .yhi = a->hi, .n = s->n};
}

static bool series_has_data(const svg_series *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (isfinite(s->y[i])) return true;
    return false;
}

static void svg_points(buf *out, const cJSON *r, bool ctx)
{
    pset ps;
    pset_init(&ps, r);
    const char *xname = ps.n ? jstr(ps.pt[0], "x_name") : NULL;
    const char *model = jstr(jget(r, "target"), "model");
    bool conc = xname && strcmp(xname, "concurrency") == 0;
    const char *xlabel = ctx                                            ? "context depth (tokens already in the KV cache)"
                         : conc                                         ? "concurrency (requests in flight)"
                         : xname && strcmp(xname, "rate") == 0 ? "request rate (requests/s offered)"
                                                                        : xname ? xname : "x";
    sarr a[10];
    svg_series s[10];
    size_t ns = 0;
    svg_chart ch[4];
    size_t nc = 0;
    char *titles[4] = {NULL, NULL, NULL, NULL};
#define TITLE(t) (titles[nc] = model ? xasprintf("%s: %s", model, t) : xstrdup(t))
    if (ctx) {
        s[ns] = series_of(&ps, "prefill_tps", "prefill tok/s", &a[ns]);
        ch[nc] = (svg_chart){.title = TITLE("prefill speed by context depth"), .x_label = xlabel,
                             .y_label = "prefill speed (tokens/s)", .y_from_zero = true, .height = 380,
                             .series = &s[ns], .n_series = 1};
        ns++, nc++;
        /* depths where the server degraded or failed have no point (or a
         * low one): the title says where */
        buf t = BUF_INIT;
        buf_adds(&t, "decode speed by context depth");
        for (size_t i = 0; i < ps.n; i++) {
            const char *why, *st = ctx_status(ps.pt[i], &why);
            if (strcmp(st, "ok") != 0 && strcmp(st, "-") != 0) buf_printf(&t, ", %s at %g", st, ps.x[i]);
        }
        s[ns] = series_of(&ps, "gen_tps", "decode tok/s", &a[ns]);
        ch[nc] = (svg_chart){.title = TITLE(t.p), .x_label = xlabel,
                             .y_label = "decode speed (tokens/s)", .y_from_zero = true, .height = 380,
                             .series = &s[ns], .n_series = 1};
        ns++, nc++;
        buf_release(&t);
    } else {
        s[ns] = series_of(&ps, "out_tput", "output tok/s", &a[ns]);
        ch[nc] = (svg_chart){.title = TITLE("output token throughput"), .x_label = xlabel,
                             .y_label = "output throughput (tokens/s)", .log_x = conc, .y_from_zero = true,
                             .height = 380, .series = &s[ns], .n_series = 1};
        ns++, nc++;
        size_t first = ns;
        s[ns] = series_of(&ps, "req_tput", "requests/s", &a[ns]);
        ns++;
        s[ns] = series_of(&ps, "goodput", "goodput (requests/s meeting the SLOs)", &a[ns]);
        if (slo_set(r) && series_has_data(&s[ns])) ns++;
        else free(a[ns].y), free(a[ns].lo), free(a[ns].hi);
        ch[nc] = (svg_chart){.title = TITLE("request throughput"), .x_label = xlabel,
                             .y_label = "throughput (requests/s)", .log_x = conc, .y_from_zero = true,
                             .height = 380, .series = &s[first], .n_series = ns - first};
        nc++;
        /* TTFT and TPOT differ by an order of magnitude: one chart each,
         * or TPOT would be a flat line along the bottom */
        first = ns;
        s[ns] = series_of(&ps, "ttft_ms", "TTFT p50", &a[ns]), ns++;
        s[ns] = series_of(&ps, "ttft_ms_p99", "TTFT p99", &a[ns]);
        if (!series_has_data(&s[ns])) s[ns].name = "TTFT p99 (none: needs 100 requests per iteration)";
        ns++;
        ch[nc] = (svg_chart){.title = TITLE("time to first token"), .x_label = xlabel,
                             .y_label = "TTFT (ms)", .log_x = conc, .y_from_zero = true, .height = 380,
                             .series = &s[first], .n_series = ns - first};
        nc++;
        first = ns;
        s[ns] = series_of(&ps, "tpot_ms", "TPOT p50", &a[ns]), ns++;
        s[ns] = series_of(&ps, "tpot_ms_p99", "TPOT p99", &a[ns]);
        if (!series_has_data(&s[ns])) s[ns].name = "TPOT p99 (none: needs 100 requests per iteration)";
        ns++;
        ch[nc] = (svg_chart){.title = TITLE("time per output token"), .x_label = xlabel,
                             .y_label = "TPOT (ms)", .log_x = conc, .y_from_zero = true, .height = 380,
                             .series = &s[first], .n_series = ns - first};
        nc++;
    }
#undef TITLE
    svg_stack(out, ch, nc);
    for (size_t i = 0; i < ns; i++) free(a[i].y), free(a[i].lo), free(a[i].hi);
    for (size_t i = 0; i < nc; i++) free(titles[i]);
    free(ps.pt);
    free(ps.x);
}

static void svg_switch(buf *out, const cJSON *r)
{
    const cJSON *ph = jget(r, "phases"), *p;
    size_t n = (size_t)(cJSON_IsObject(ph) ? cJSON_GetArraySize(ph) : 0);
    char **names = xcalloc(n + 1, sizeof *names);
    double *x = xcalloc(n + 1, sizeof *x), *y = xcalloc(n + 1, sizeof *y);
    double *lo = xcalloc(n + 1, sizeof *lo), *hi = xcalloc(n + 1, sizeof *hi);
    size_t k = 0;
    cJSON_ArrayForEach(p, ph)
    {
        if (!p->string || k >= n) continue;
        names[k] = phase_name(p->string);
        x[k] = (double)k;
        y[k] = jnum(p, "median");
        lo[k] = jnum(p, "lo");
        hi[k] = jnum(p, "hi");
        k++;
    }
    const cJSON *m = jarr(r, "modes");
    const cJSON *ma = cJSON_GetArrayItem(m, 0), *mb = cJSON_GetArrayItem(m, 1);
    double ns = jnum(r, "n");
    buf tb = BUF_INIT;
    buf_printf(&tb, "mode switch %s <-> %s: time of each phase", cJSON_IsString(ma) ? ma->valuestring : "-",
               cJSON_IsString(mb) ? mb->valuestring : "-");
    if (isfinite(ns)) buf_printf(&tb, " (%.0f per direction)", ns);
    char *title = buf_detach(&tb);
    svg_series s = {.name = "median, bar: 95 % interval", .x = x, .y = y, .ylo = lo, .yhi = hi, .n = k};
    svg_chart c = {.title = title, .x_label = "phase", .y_label = "time (ms)", .y_from_zero = true,
                   .series = &s, .n_series = 1, .cats = (const char *const *)names, .n_cats = k};
    svg_line_chart(out, &c);
    for (size_t i = 0; i < k; i++) free(names[i]);
    free(names), free(x), free(y), free(lo), free(hi), free(title);
}

void breport_svg(buf *out, const cJSON *r)
{
    const char *kind = doc_kind(r);
    if (strcmp(kind, "switch") == 0) svg_switch(out, r);
    else svg_points(out, r, strcmp(kind, "ctx_sweep") == 0);
}
