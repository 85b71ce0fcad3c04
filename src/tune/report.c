/* report.c (tune) - rows as a table, a TSV, a result document and an SVG
 * of the trajectory (tune.h). */
#include "tune/tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/svg.h"
#include "oai/docfile.h"
#include "util/buf.h"

void tune_row_release(tune_row *r)
{
    free(r->key);
    free(r->ref_key);
    free(r->var);
    free(r->val);
    free(r->reason);
    memset(r, 0, sizeof *r);
}

tune_row *tune_result_add(tune_result *res)
{
    if (res->n == res->cap) {
        res->cap = res->cap ? res->cap * 2 : 16;
        res->rows = xrealloc(res->rows, res->cap * sizeof *res->rows);
    }
    tune_row *r = &res->rows[res->n++];
    memset(r, 0, sizeof *r);
    r->seq = (int)res->n;
    r->median = r->p90 = r->mem_peak_mb = r->start_ms = NAN;
    return r;
}

void tune_result_release(tune_result *res)
{
    for (size_t i = 0; i < res->n; i++) tune_row_release(&res->rows[i]);
    free(res->rows);
    free(res->stopped);
    memset(res, 0, sizeof *res);
}

static double get_num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static char *get_str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? xstrdup(v->valuestring) : NULL;
}

cJSON *tune_row_json(const tune_row *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "seq", r->seq);
    cJSON_AddStringToObject(o, "variable", r->var);
    cJSON_AddStringToObject(o, "value", r->val);
    cJSON_AddStringToObject(o, "key", r->key);
    cJSON_AddStringToObject(o, "reference", r->ref_key ? r->ref_key : "baseline");
    cJSON_AddStringToObject(o, "outcome", tune_outcome_names[r->outcome]);
    docfile_num(o, "median", r->median);
    docfile_num(o, "p90", r->p90);
    if (r->has_decision) {
        const tune_decision *d = &r->d;
        docfile_num(o, "reference_mean", d->a_mean);
        docfile_num(o, "mean", d->b_mean);
        docfile_num(o, "delta", d->delta);
        docfile_num(o, "delta_lo", d->lo);
        docfile_num(o, "delta_hi", d->hi);
        docfile_num(o, "delta_pct", d->delta_pct);
        docfile_num(o, "delta_lo_pct", d->lo_pct);
        docfile_num(o, "delta_hi_pct", d->hi_pct);
        docfile_num(o, "gain", d->gain);
        cJSON_AddNumberToObject(o, "pairs", (double)d->n);
    }
    docfile_num(o, "mem_peak_mb", r->mem_peak_mb);
    docfile_num(o, "start_ms", r->start_ms);
    cJSON_AddBoolToObject(o, "flagged", r->flagged);
    if (r->reason)
        cJSON_AddStringToObject(o, "reason", r->reason);
    else
        cJSON_AddNullToObject(o, "reason");
    return o;
}

int tune_row_from_json(const cJSON *j, tune_row *r)
{
    memset(r, 0, sizeof *r);
    const char *oc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "outcome"));
    int k = -1;
    for (int i = 0; oc && tune_outcome_names[i]; i++)
        if (!strcmp(oc, tune_outcome_names[i])) k = i;
    r->key = get_str(j, "key");
    r->ref_key = get_str(j, "reference");
    r->var = get_str(j, "variable");
    r->val = get_str(j, "value");
    r->reason = get_str(j, "reason");
    if (k < 0 || !r->key || !r->ref_key || !r->var || !r->val) {
        tune_row_release(r);
        return -1;
    }
    r->outcome = (tune_outcome)k;
    r->seq = (int)get_num(j, "seq");
    r->median = get_num(j, "median");
    r->p90 = get_num(j, "p90");
    r->mem_peak_mb = get_num(j, "mem_peak_mb");
    r->start_ms = get_num(j, "start_ms");
    r->flagged = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "flagged"));
    if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(j, "pairs"))) {
        r->has_decision = true;
        r->d.outcome = r->outcome;
        r->d.n = (size_t)get_num(j, "pairs");
        r->d.a_mean = get_num(j, "reference_mean");
        r->d.b_mean = get_num(j, "mean");
        r->d.delta = get_num(j, "delta");
        r->d.lo = get_num(j, "delta_lo");
        r->d.hi = get_num(j, "delta_hi");
        r->d.delta_pct = get_num(j, "delta_pct");
        r->d.lo_pct = get_num(j, "delta_lo_pct");
        r->d.hi_pct = get_num(j, "delta_hi_pct");
        r->d.gain = get_num(j, "gain");
    }
    return 0;
}

/* ---- the table on stdout ---- */

/* v with 4 significant digits, or signed with 2 decimals; "-" when NaN */
static void fmt_num(char *out, size_t len, double v, bool signed2)
{
    if (!isfinite(v))
        snprintf(out, len, "-");
    else if (signed2)
        snprintf(out, len, "%+.2f", v);
    else
        snprintf(out, len, "%.4g", v);
}

void tune_print_header(const tune_opts *o)
{
    if (o->quiet) return;
    printf("%-4s %-24s %-14s %10s %9s %20s %-11s %s\n", "#", "variable", "value", "median", "delta %",
           "interval %", "outcome", "note");
}

void tune_print_row(const tune_opts *o, const tune_row *r)
{
    if (o->quiet) return;
    char med[32], dp[32], iv[48];
    fmt_num(med, sizeof med, r->median, false);
    fmt_num(dp, sizeof dp, r->has_decision ? r->d.delta_pct : NAN, true);
    if (r->has_decision && isfinite(r->d.lo_pct))
        snprintf(iv, sizeof iv, "[%+.2f, %+.2f]", r->d.lo_pct, r->d.hi_pct);
    else
        snprintf(iv, sizeof iv, "-");
    printf("%-4d %-24s %-14s %10s %9s %20s %-11s %s\n", r->seq, r->var, r->val, med, dp, iv,
           tune_outcome_names[r->outcome], r->reason ? r->reason : "");
    fflush(stdout);
}

/* ---- TSV: the seeds' columns, then ours ---- */

static void tsv_field(buf *out, const char *s)
{
    for (const char *p = s ? s : ""; *p; p++) buf_addc(out, *p == '\t' || *p == '\n' || *p == '\r' ? ' ' : *p);
}

static void tsv_num(buf *out, double v)
{
    buf_addc(out, '\t');
    if (isfinite(v)) buf_printf(out, "%.6g", v);
}

void tune_tsv(const tune_opts *o, const tune_result *res, buf *out)
{
    (void)o;
    buf_adds(out, "variable\tvalue\tmedian\tdelta\toutcome\tp90\tdelta_lo\tdelta_hi\tdelta_pct\tmem_peak_mb\t"
                  "start_ms\treference\treason\n");
    for (size_t i = 0; i < res->n; i++) {
        const tune_row *r = &res->rows[i];
        bool d = r->has_decision;
        tsv_field(out, r->var);
        buf_addc(out, '\t');
        tsv_field(out, r->val);
        tsv_num(out, r->median);
        tsv_num(out, d ? r->d.delta : NAN);
        buf_addc(out, '\t');
        buf_adds(out, tune_outcome_names[r->outcome]);
        tsv_num(out, r->p90);
        tsv_num(out, d ? r->d.lo : NAN);
        tsv_num(out, d ? r->d.hi : NAN);
        tsv_num(out, d ? r->d.delta_pct : NAN);
        tsv_num(out, r->mem_peak_mb);
        tsv_num(out, r->start_ms);
        buf_addc(out, '\t');
        tsv_field(out, r->ref_key);
        buf_addc(out, '\t');
        tsv_field(out, r->reason);
        buf_addc(out, '\n');
    }
}

/* ---- the result document (gpumod.tune/1) ---- */

static cJSON *settings_json(const tune_opts *o)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "strategy", strat_names[o->strat]);
    cJSON_AddStringToObject(s, "objective", tune_obj_names[o->obj]);
    cJSON_AddBoolToObject(s, "higher_is_better", tune_obj_higher_better(o->obj));
    cJSON_AddNumberToObject(s, "min_gain", o->min_gain);
    cJSON_AddBoolToObject(s, "min_gain_pct", o->min_gain_pct);
    cJSON_AddNumberToObject(s, "alpha", o->alpha);
    cJSON_AddNumberToObject(s, "rounds", o->rounds);
    cJSON_AddNumberToObject(s, "concurrency", o->load.concurrency);
    cJSON_AddNumberToObject(s, "requests", (double)o->load.requests);
    cJSON_AddNumberToObject(s, "prompt_tokens", (double)o->load.prompt_tokens);
    cJSON_AddNumberToObject(s, "gen_tokens", (double)o->load.gen_tokens);
    cJSON_AddBoolToObject(s, "allow_traffic", o->allow_traffic);
    cJSON *sp = cJSON_AddObjectToObject(s, "space");
    for (size_t i = 0; i < o->space.n; i++) {
        const tune_dim *d = &o->space.dims[i];
        char *k = xasprintf("%s%s", d->env ? "env." : "", d->key);
        cJSON *a = cJSON_AddArrayToObject(sp, k);
        for (size_t j = 0; j < d->values.n; j++) cJSON_AddItemToArray(a, cJSON_CreateString(d->values.v[j]));
        free(k);
    }
    return s;
}

cJSON *tune_doc(const tune_opts *o, const tune_result *res, int64_t started_unix_ms)
{
    cJSON *doc = docfile_new("gpumod.tune/1", "tune", "tune", started_unix_ms, o->argc, o->argv);
    cJSON_AddStringToObject(doc, "service", o->service);
    cJSON_AddStringToObject(doc, "objective", tune_obj_names[o->obj]);
    cJSON_AddNumberToObject(doc, "rounds", o->rounds);
    cJSON_AddItemToObject(doc, "settings", settings_json(o));
    cJSON *rows = cJSON_AddArrayToObject(doc, "rows");
    int counts[TO_N] = {0};
    const tune_row *final = NULL;
    for (size_t i = 0; i < res->n; i++) {
        cJSON_AddItemToArray(rows, tune_row_json(&res->rows[i]));
        counts[res->rows[i].outcome]++;
        if (res->rows[i].outcome == TO_FINAL) final = &res->rows[i];
    }
    cJSON *oc = cJSON_AddObjectToObject(doc, "outcomes");
    for (int k = 0; k < TO_N; k++) cJSON_AddNumberToObject(oc, tune_outcome_names[k], counts[k]);
    if (res->has_winner && final) {
        cJSON *w = tune_row_json(final);
        cJSON_AddBoolToObject(w, "confirmed", res->confirmed);
        cJSON_AddItemToObject(doc, "winner", w);
    } else {
        cJSON_AddNullToObject(doc, "winner");
    }
    if (res->stopped)
        cJSON_AddStringToObject(doc, "stopped", res->stopped);
    else
        cJSON_AddNullToObject(doc, "stopped");
    cJSON_AddNumberToObject(doc, "wall_s", res->wall_s);
    /* what the daemon's list of results keeps (docs/api.md "Results") */
    cJSON *sum = cJSON_AddObjectToObject(doc, "summary");
    cJSON_AddStringToObject(sum, "service", o->service);
    cJSON_AddStringToObject(sum, "objective", tune_obj_names[o->obj]);
    if (res->has_winner && final && res->confirmed)
        cJSON_AddStringToObject(sum, "winner", final->key);
    else
        cJSON_AddNullToObject(sum, "winner");
    cJSON_AddItemToObject(sum, "outcomes", cJSON_Duplicate(oc, true));
    cJSON_AddNumberToObject(sum, "rounds", o->rounds);
    return doc;
}

/* ---- the trajectory: each variant's interval of the difference, % of
 * its reference, against the band of no change (+- min gain) ---- */

void tune_svg(const tune_opts *o, const tune_result *res, buf *out)
{
    size_t n = 0;
    const char **cats = xcalloc(res->n + 1, sizeof *cats);
    double *x = xcalloc(res->n + 1, sizeof *x), *y = xcalloc(res->n + 1, sizeof *y);
    double *lo = xcalloc(res->n + 1, sizeof *lo), *hi = xcalloc(res->n + 1, sizeof *hi);
    double *bu = xcalloc(res->n + 1, sizeof *bu), *bl = xcalloc(res->n + 1, sizeof *bl);
    strv labels = STRV_INIT;
    double band = o->min_gain_pct ? o->min_gain : NAN;
    for (size_t i = 0; i < res->n; i++) {
        const tune_row *r = &res->rows[i];
        if (!r->has_decision) continue;
        strv_pushf(&labels, "%d %s=%s", r->seq, r->var, r->val);
        x[n] = (double)n;
        y[n] = r->d.delta_pct;
        lo[n] = r->d.lo_pct;
        hi[n] = r->d.hi_pct;
        double s = tune_obj_higher_better(o->obj) ? 1 : -1;
        bu[n] = isfinite(band) ? s * band : NAN;
        bl[n] = 0;
        n++;
    }
    for (size_t i = 0; i < n; i++) cats[i] = labels.v[i];
    svg_series ser[3] = {
        {.name = "difference from the reference, % (interval)", .x = x, .y = y, .ylo = lo, .yhi = hi, .n = n},
        {.name = "no change (0)", .x = x, .y = bl, .n = n},
        {.name = "the smallest gain that counts (--min-gain)", .x = x, .y = bu, .n = n},
    };
    char *title = xasprintf("gpumod tune %s: %s, each variant against its reference", o->service,
                            tune_obj_names[o->obj]);
    svg_chart c = {.title = title, .x_label = "variant (in the order measured)", .y_label = "difference, %",
                   .width = 960, .height = 480, .series = ser, .n_series = isfinite(band) ? 3 : 2,
                   .cats = cats, .n_cats = n};
    svg_line_chart(out, &c);
    free(title);
    strv_release(&labels);
    free(cats);
    free(x);
    free(y);
    free(lo);
    free(hi);
    free(bu);
    free(bl);
}
