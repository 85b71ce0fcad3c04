/* ereport.c - renderings of an eval document (eresult.h): the ds4-eval
 * style item table, the summary and category tables, CSV, Markdown and
 * the SVG of accuracy with its interval per configuration.
 *
 * Made from the document alone, so `eval report OLD.json` shows an old
 * run the way it was shown when it ran; a missing or null value prints as
 * "-".  Texts in the table are put on one line and cut to their column. */
#include "eval/eresult.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/svg.h"

static const char *sget(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static double nget(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* s on one line (control bytes as spaces), at most w display bytes
 * (a UTF-8 character is not split), "-" when NULL */
static void cell(buf *out, const char *s, int w)
{
    if (!s) s = "-";
    size_t n = strlen(s), e = n > (size_t)w ? (size_t)w - 1 : n;
    while (e < n && e > 0 && ((unsigned char)s[e] & 0xC0) == 0x80) e--;
    int shown = 0;
    for (size_t i = 0; i < e; i++) {
        unsigned char c = (unsigned char)s[i];
        buf_addc(out, c < 0x20 ? ' ' : (char)c);
        if ((c & 0xC0) != 0x80) shown++;
    }
    if (e < n) {
        buf_adds(out, "~");
        shown++;
    }
    for (; shown < w; shown++) buf_addc(out, ' ');
}

static void pct(buf *out, double v)
{
    if (isfinite(v))
        buf_printf(out, "%.1f", 100 * v);
    else
        buf_adds(out, "-");
}

static void acc_line(buf *out, const cJSON *s)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(s, "accuracy");
    double k = nget(s, "k");
    buf_adds(out, k > 1 ? "pass@1 " : "accuracy ");
    pct(out, nget(a, "est"));
    buf_adds(out, " % [");
    pct(out, nget(a, "lo"));
    buf_adds(out, ", ");
    pct(out, nget(a, "hi"));
    buf_adds(out, "] (Wilson 95 %)");
    if (isfinite(nget(s, "pass_at_k"))) {
        buf_printf(out, ", pass@%g ", k);
        pct(out, nget(s, "pass_at_k"));
        buf_adds(out, " %");
    }
    buf_addc(out, '\n');
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(s, "judge");
    if (cJSON_IsObject(j)) {
        buf_printf(out, "judge: mean %.2f, sd %.2f, 95 %% CI ", nget(j, "mean"), nget(j, "sd"));
        if (isfinite(nget(j, "lo")))
            buf_printf(out, "[%.2f, %.2f]", nget(j, "lo"), nget(j, "hi"));
        else
            buf_adds(out, "-");
        buf_printf(out, ", n %g; score >= 4: ", nget(j, "n"));
        pct(out, nget(j, "share4"));
        buf_adds(out, " %, = 5: ");
        pct(out, nget(j, "share5"));
        buf_adds(out, " %\n");
    }
}

static void item_row(buf *out, const cJSON *it)
{
    const char *st = sget(it, "state");
    cell(out, st && !strcmp(st, "pass") ? "pass" : st && !strcmp(st, "fail") ? "FAIL" : "ERROR", 6);
    cell(out, sget(it, "id"), 18);
    buf_addc(out, ' ');
    cell(out, sget(it, "category"), 12);
    buf_addc(out, ' ');
    char t[40];
    double ti = nget(it, "tokens_in"), to = nget(it, "tokens_out");
    snprintf(t, sizeof t, "%s/%s", isfinite(ti) ? "" : "-", isfinite(to) ? "" : "-");
    if (isfinite(ti) || isfinite(to))
        snprintf(t, sizeof t, "%.0f", (isfinite(ti) ? ti : 0) + (isfinite(to) ? to : 0));
    cell(out, t, 7);
    snprintf(t, sizeof t, "%.0f", nget(it, "latency_ms"));
    cell(out, isfinite(nget(it, "latency_ms")) ? t : "-", 7);
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(it, "judge");
    if (cJSON_IsNumber(j)) {
        snprintf(t, sizeof t, "%d/5", (int)j->valuedouble);
        cell(out, t, 14);
    } else {
        cell(out, sget(it, "answer"), 14);
    }
    buf_addc(out, ' ');
    cell(out, sget(it, "expected"), 14);
    buf_addc(out, ' ');
    const char *why = sget(it, "error") ? sget(it, "error") : sget(it, "reason");
    cell(out, why ? why : sget(it, "rule"), 40);
    while (out->len && out->p[out->len - 1] == ' ') out->p[--out->len] = 0;
    buf_addc(out, '\n');
}

static void items_table(buf *out, const cJSON *items, size_t max_rows)
{
    size_t n = (size_t)cJSON_GetArraySize(items), hidden = 0;
    bool all = n <= max_rows;
    buf_adds(out, "state id                 category     tokens ms     given          correct        rule / why\n");
    const cJSON *it;
    cJSON_ArrayForEach(it, items)
    {
        const char *st = sget(it, "state");
        if (!all && st && !strcmp(st, "pass")) {
            hidden++;
            continue;
        }
        item_row(out, it);
    }
    if (hidden) buf_printf(out, "(%zu passing records not shown; --json has them all)\n", hidden);
}

static void cat_table(buf *out, const cJSON *cats, bool md)
{
    if (cJSON_GetArraySize(cats) < 2) return;
    buf_adds(out, md ? "\n| category | items | pass | fail | error | accuracy % | 95 % CI | judge mean |\n"
                       "|---|---:|---:|---:|---:|---:|---|---:|\n"
                     : "\ncategory       items  pass  fail error  accuracy %  95 % CI        judge\n");
    const cJSON *c;
    cJSON_ArrayForEach(c, cats)
    {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(c, "accuracy");
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(c, "judge");
        char ci[48], jm[16], ac[16];
        snprintf(ci, sizeof ci, "[%.1f, %.1f]", 100 * nget(a, "lo"), 100 * nget(a, "hi"));
        snprintf(ac, sizeof ac, "%.1f", 100 * nget(a, "est"));
        snprintf(jm, sizeof jm, cJSON_IsObject(j) ? "%.2f" : "-", nget(j, "mean"));
        if (md) {
            buf_printf(out, "| %s | %g | %g | %g | %g | %s | %s | %s |\n", sget(c, "name"), nget(c, "items"),
                       nget(c, "pass"), nget(c, "fail"), nget(c, "error"), ac, ci, jm);
        } else {
            cell(out, sget(c, "name"), 14);
            buf_printf(out, " %5g %5g %5g %5g  %-10s  %-14s %s\n", nget(c, "items"), nget(c, "pass"), nget(c, "fail"),
                       nget(c, "error"), ac, ci, jm);
        }
    }
}

static void head_lines(buf *out, const cJSON *doc)
{
    const cJSON *su = cJSON_GetObjectItemCaseSensitive(doc, "suite");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(doc, "target");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(doc, "summary");
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(doc, "settings");
    buf_printf(out, "%s: %g/%g passed, %g failed, %g error%s (%g items, k %g, seed %g) on %s",
               sget(su, "name") ? sget(su, "name") : "suite", nget(s, "pass"), nget(s, "records"), nget(s, "fail"),
               nget(s, "error"), nget(s, "error") == 1 ? "" : "s", nget(s, "items"), nget(s, "k"), nget(set, "seed"),
               sget(t, "spec") ? sget(t, "spec") : "?");
    if (sget(t, "model") && sget(t, "spec") && strcmp(sget(t, "model"), sget(t, "spec")))
        buf_printf(out, " (model %s)", sget(t, "model"));
    buf_addc(out, '\n');
    acc_line(out, s);
}

static void warnings(buf *out, const cJSON *doc)
{
    const cJSON *w;
    cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(doc, "warnings"))
        if (cJSON_IsString(w)) buf_printf(out, "warning: %s\n", w->valuestring);
}

void ereport_table(buf *out, const cJSON *doc, size_t max_rows)
{
    items_table(out, cJSON_GetObjectItemCaseSensitive(doc, "items"), max_rows);
    buf_addc(out, '\n');
    head_lines(out, doc);
    cat_table(out, cJSON_GetObjectItemCaseSensitive(doc, "categories"), false);
    warnings(out, doc);
}

void ereport_md(buf *out, const cJSON *doc)
{
    const cJSON *su = cJSON_GetObjectItemCaseSensitive(doc, "suite");
    buf_printf(out, "## eval: %s\n\n", sget(su, "name") ? sget(su, "name") : "suite");
    head_lines(out, doc);
    cat_table(out, cJSON_GetObjectItemCaseSensitive(doc, "categories"), true);
    const cJSON *w;
    cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(doc, "warnings"))
        if (cJSON_IsString(w)) buf_printf(out, "\n- warning: %s", w->valuestring);
    buf_addc(out, '\n');
}

/* a row per record, RFC 4180 (records end in CRLF, as bench's) */
void ereport_csv(buf *out, const cJSON *doc)
{
    static const char *const cols[] = {"id",         "category",  "rep",        "seed",          "state",
                                       "scorer",     "rule",      "answer",     "expected",      "judge",
                                       "tokens_in",  "tokens_out", "latency_ms", "finish_reason", "attempts",
                                       "error"};
    size_t nc = sizeof cols / sizeof *cols;
    for (size_t i = 0; i < nc; i++) buf_printf(out, "%s%s", i ? "," : "", cols[i]);
    buf_adds(out, "\r\n");
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(doc, "items"))
    {
        for (size_t i = 0; i < nc; i++) {
            if (i) buf_addc(out, ',');
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, cols[i]);
            if (cJSON_IsString(v))
                buf_csv_field(out, v->valuestring);
            else if (cJSON_IsNumber(v))
                buf_printf(out, "%.15g", v->valuedouble);
        }
        buf_adds(out, "\r\n");
    }
}

/* ---- SVG ------------------------------------------------------------------- */

static int find_cat(const char *const *cats, size_t n, const char *c)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(cats[i], c)) return (int)i;
    return -1;
}

void ereport_svg(buf *out, const cJSON *const *docs, size_t n)
{
    /* the categories of every document, "all" first */
    const char **cats = xcalloc(1, sizeof *cats);
    size_t nc = 1;
    cats[0] = "all";
    for (size_t d = 0; d < n; d++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(docs[d], "categories"))
        {
            const char *nm = sget(c, "name");
            if (!nm || find_cat(cats, nc, nm) >= 0) continue;
            cats = xrealloc(cats, (nc + 1) * sizeof *cats);
            cats[nc++] = nm;
        }
    }
    svg_series *ser = xcalloc(n, sizeof *ser);
    double *vals = xcalloc(n * nc * 4, sizeof *vals);
    char **names = xcalloc(n, sizeof *names);
    for (size_t d = 0; d < n; d++) {
        double *x = vals + d * nc * 4, *y = x + nc, *lo = y + nc, *hi = lo + nc;
        for (size_t i = 0; i < nc; i++) {
            x[i] = (double)i;
            y[i] = lo[i] = hi[i] = NAN;
        }
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(docs[d], "target");
        const char *model = sget(t, "model") ? sget(t, "model") : "run";
        names[d] = n > 1 ? xasprintf("%c: %s", (char)('A' + d % 26), model) : xstrdup(model);
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(docs[d], "summary");
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(s, "accuracy");
        y[0] = 100 * nget(a, "est"), lo[0] = 100 * nget(a, "lo"), hi[0] = 100 * nget(a, "hi");
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(docs[d], "categories"))
        {
            int i = find_cat(cats, nc, sget(c, "name") ? sget(c, "name") : "");
            a = cJSON_GetObjectItemCaseSensitive(c, "accuracy");
            if (i > 0) y[i] = 100 * nget(a, "est"), lo[i] = 100 * nget(a, "lo"), hi[i] = 100 * nget(a, "hi");
        }
        ser[d] = (svg_series){names[d], x, y, lo, hi, nc};
    }
    svg_chart ch = {.title = "eval: accuracy with its 95 % interval (Wilson)",
                    .x_label = "category",
                    .y_label = "accuracy %",
                    .y_from_zero = true,
                    .series = ser,
                    .n_series = n,
                    .cats = cats,
                    .n_cats = nc};
    svg_line_chart(out, &ch);
    for (size_t d = 0; d < n; d++) free(names[d]);
    free(names);
    free(vals);
    free(ser);
    free(cats);
}
