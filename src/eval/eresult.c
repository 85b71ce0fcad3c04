/* eresult.c - an eval run's records as the gpumod.eval/1 document, its
 * statistics, and the copy the daemon keeps (eresult.h).
 *
 * Design: the statistics are recomputed from the document's "items"
 * records (grouped by id, so the order of records does not matter and an
 * item cut short by Ctrl-C simply has fewer repetitions); the runner never
 * computes a figure of its own.  A record keeps the first bytes of the
 * prompt and the reply, cut at a UTF-8 boundary, with the full sizes
 * beside them, so a document of a large suite stays small enough for the
 * daemon while the golden file keeps whole replies. */
#include "oai/docfile.h"
#include "eval/eresult.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/estats.h"
#include "eval/extract.h"
#include "eval/score.h"

void erec_release(erec *r)
{
    free(r->answer);
    free(r->content);
    free(r->reasoning);
    free(r->tool_calls);
    free(r->error);
    memset(r, 0, sizeof *r);
}

static void jstr(cJSON *o, const char *k, const char *v)
{
    if (v)
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

/* s cut to at most max bytes at a UTF-8 boundary; *full its length */
static void jcut(cJSON *o, const char *k, const char *s, size_t max)
{
    if (!s) {
        cJSON_AddNullToObject(o, k);
        return;
    }
    size_t n = strlen(s);
    if (n <= max) {
        cJSON_AddStringToObject(o, k, s);
        return;
    }
    size_t e = max;
    while (e > 0 && ((unsigned char)s[e] & 0xC0) == 0x80) e--;
    char *c = xasprintf("%.*s", (int)e, s);
    cJSON_AddStringToObject(o, k, c);
    free(c);
    char *kb = xasprintf("%s_bytes", k);
    cJSON_AddNumberToObject(o, kb, (double)n);
    free(kb);
}

/* the prompt as one text: the system turn and every turn, "role: text" */
static char *prompt_text(const eval_item *it)
{
    if (it->prompt && !it->system) return xstrdup(it->prompt);
    buf b = BUF_INIT;
    if (it->system) buf_printf(&b, "system: %s\n", it->system);
    if (it->prompt) buf_printf(&b, "user: %s", it->prompt);
    for (size_t i = 0; i < it->n_messages; i++)
        buf_printf(&b, "%s%s: %s", i ? "\n" : "", eval_role_names[it->messages[i].role], it->messages[i].content);
    return buf_detach(&b);
}

cJSON *erec_json(const eval_item *it, const erec *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", it->id);
    cJSON_AddStringToObject(o, "category", it->category);
    cJSON_AddNumberToObject(o, "rep", r->rep);
    cJSON_AddNumberToObject(o, "seed", (double)r->seed);
    cJSON_AddStringToObject(o, "state", r->settled ? score_state_names[r->state] : "error");
    cJSON_AddStringToObject(o, "scorer", eval_scorer_names[it->scorer]);
    cJSON_AddStringToObject(o, "rule", ex_rule_name((ex_rule)r->rule));
    jcut(o, "answer", r->answer, EREC_PROMPT_MAX);
    jstr(o, "expected", it->expected ? it->expected : it->call_name ? it->call_name : it->pattern);
    jstr(o, "reason", r->reason[0] ? r->reason : NULL);
    if (r->judge)
        cJSON_AddNumberToObject(o, "judge", r->judge);
    else
        cJSON_AddNullToObject(o, "judge");
    char *p = prompt_text(it);
    jcut(o, "prompt", p, EREC_PROMPT_MAX);
    free(p);
    jcut(o, "generation", r->content, EREC_GEN_MAX);
    jcut(o, "reasoning", r->reasoning, EREC_THINK_MAX);
    cJSON *tc = r->tool_calls ? cJSON_Parse(r->tool_calls) : NULL;
    cJSON_AddItemToObject(o, "tool_calls", tc ? tc : cJSON_CreateNull());
    jstr(o, "finish_reason", r->finish_reason[0] ? r->finish_reason : NULL);
    docfile_num(o, "tokens_in", r->n_in >= 0 ? (double)r->n_in : NAN);
    docfile_num(o, "tokens_out", r->n_out >= 0 ? (double)r->n_out : NAN);
    docfile_num(o, "latency_ms", r->latency_ms);
    docfile_num(o, "ttft_ms", r->ttft_ms);
    cJSON_AddNumberToObject(o, "attempts", r->attempts);
    jstr(o, "error", r->settled ? r->error : "interrupted: never answered");
    return o;
}

/* ---- statistics ----------------------------------------------------------- */

typedef struct row {
    const char *id;
    int state; /* 0 pass, 1 fail, 2 error */
    int judge;
    size_t pos;
} row;

static int row_cmp(const void *a, const void *b)
{
    const row *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    if (c) return c;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static const char *sget(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* the records of category (NULL: all), sorted by id */
static row *collect(const cJSON *items, const char *category, size_t *n)
{
    size_t cap = (size_t)cJSON_GetArraySize(items) + 1;
    row *v = xcalloc(cap, sizeof *v);
    *n = 0;
    const cJSON *it;
    size_t pos = 0;
    cJSON_ArrayForEach(it, items)
    {
        const char *id = sget(it, "id"), *st = sget(it, "state"), *cat = sget(it, "category");
        pos++;
        if (!id || !st || (category && (!cat || strcmp(cat, category)))) continue;
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(it, "judge");
        v[*n] = (row){id, !strcmp(st, "pass") ? 0 : !strcmp(st, "fail") ? 1 : 2,
                      cJSON_IsNumber(j) ? (int)j->valuedouble : 0, pos};
        (*n)++;
    }
    qsort(v, *n, sizeof *v, row_cmp);
    return v;
}

static void acc_judge(eacc *a, const row *v, size_t n)
{
    int *scores = xcalloc(n + 1, sizeof *scores);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].judge >= 1 && v[i].judge <= 5) scores[m++] = v[i].judge;
    judge_stats js;
    a->judged = m;
    if (m && judge_summary(scores, m, 0.95, &js) == 0) {
        a->j_mean = js.mean;
        a->j_sd = js.sd;
        a->j_lo = js.lo;
        a->j_hi = js.hi;
        a->j_share4 = js.share4;
        a->j_share5 = js.share5;
    }
    free(scores);
}

int eresult_acc(const cJSON *items, const char *category, eacc *a)
{
    memset(a, 0, sizeof *a);
    a->est = a->lo = a->hi = a->pass_at_k = NAN;
    a->j_mean = a->j_sd = a->j_lo = a->j_hi = a->j_share4 = a->j_share5 = NAN;
    size_t n;
    row *v = collect(items, category, &n);
    if (!n) {
        free(v);
        return -1;
    }
    unsigned *passes = xcalloc(n, sizeof *passes), *counts = xcalloc(n, sizeof *counts);
    double rate_sum = 0;
    bool same_k = true;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && !strcmp(v[j].id, v[i].id)) {
            a->pass += v[j].state == 0;
            a->fail += v[j].state == 1;
            a->error += v[j].state == 2;
            passes[a->items] += v[j].state == 0;
            j++;
        }
        counts[a->items] = (unsigned)(j - i);
        if (counts[a->items] > a->k) a->k = counts[a->items];
        if (a->items && counts[a->items] != counts[0]) same_k = false;
        rate_sum += (double)passes[a->items] / (double)counts[a->items];
        a->items++;
        i = j;
    }
    a->records = n;
    eci w;
    a->est = rate_sum / (double)a->items;
    if (wilson(a->est * (double)a->items, (double)a->items, conf_z(0.95), &w) == 0) {
        a->lo = w.lo;
        a->hi = w.hi;
    }
    if (same_k && a->k > 1) a->pass_at_k = pass_at_k_mean(passes, a->items, a->k, a->k);
    acc_judge(a, v, n);
    free(passes);
    free(counts);
    free(v);
    return 0;
}

cJSON *eacc_json(const eacc *a)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "items", (double)a->items);
    cJSON_AddNumberToObject(o, "records", (double)a->records);
    cJSON_AddNumberToObject(o, "k", a->k);
    cJSON_AddNumberToObject(o, "pass", (double)a->pass);
    cJSON_AddNumberToObject(o, "fail", (double)a->fail);
    cJSON_AddNumberToObject(o, "error", (double)a->error);
    cJSON *ac = cJSON_AddObjectToObject(o, "accuracy");
    docfile_num(ac, "est", a->est);
    docfile_num(ac, "lo", a->lo);
    docfile_num(ac, "hi", a->hi);
    docfile_num(o, "pass_at_k", a->pass_at_k);
    if (!a->judged) {
        cJSON_AddNullToObject(o, "judge");
        return o;
    }
    cJSON *j = cJSON_AddObjectToObject(o, "judge");
    cJSON_AddNumberToObject(j, "n", (double)a->judged);
    docfile_num(j, "mean", a->j_mean);
    docfile_num(j, "sd", a->j_sd);
    docfile_num(j, "lo", a->j_lo);
    docfile_num(j, "hi", a->j_hi);
    docfile_num(j, "share4", a->j_share4);
    docfile_num(j, "share5", a->j_share5);
    return o;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void eresult_summarize(cJSON *doc)
{
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(doc, "items");
    eacc a;
    eresult_acc(items, NULL, &a);
    cJSON *sum = eacc_json(&a);
    /* the counters the runner keeps (warnings, the context) stay */
    cJSON *old = cJSON_GetObjectItemCaseSensitive(doc, "summary");
    static const char *const keep[] = {"length_hits", "context_hits", "context"};
    for (size_t i = 0; old && i < sizeof keep / sizeof *keep; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(old, keep[i]);
        if (v) cJSON_AddItemToObject(sum, keep[i], cJSON_Duplicate(v, true));
    }
    if (old)
        cJSON_ReplaceItemInObjectCaseSensitive(doc, "summary", sum);
    else
        cJSON_AddItemToObject(doc, "summary", sum);
    /* categories in byte order of their names */
    size_t n = 0, cap = (size_t)cJSON_GetArraySize(items) + 1;
    const char **cats = xcalloc(cap, sizeof *cats);
    const cJSON *it;
    cJSON_ArrayForEach(it, items)
    {
        const char *c = sget(it, "category");
        if (c) cats[n++] = c;
    }
    qsort(cats, n, sizeof *cats, str_cmp);
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        if (i && !strcmp(cats[i], cats[i - 1])) continue;
        eacc c;
        if (eresult_acc(items, cats[i], &c)) continue;
        cJSON *o = eacc_json(&c);
        cJSON_AddItemToObject(o, "name", cJSON_CreateString(cats[i]));
        cJSON_AddItemToArray(arr, o);
    }
    free(cats);
    if (cJSON_GetObjectItemCaseSensitive(doc, "categories"))
        cJSON_ReplaceItemInObjectCaseSensitive(doc, "categories", arr);
    else
        cJSON_AddItemToObject(doc, "categories", arr);
}

/* ---- the daemon's copy -------------------------------------------------------- */

static size_t strlen_of(const cJSON *o, const char *k)
{
    const char *s = sget(o, k);
    return s ? strlen(s) : 0;
}

cJSON *eresult_for_store(const cJSON *doc, size_t cap, const char *full_path)
{
    cJSON *d = cJSON_Duplicate(doc, true);
    size_t used = 0, cut = 0;
    cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(d, "items"))
    {
        size_t sz = strlen_of(it, "prompt") + strlen_of(it, "generation") + strlen_of(it, "reasoning");
        if (used + sz <= cap) {
            used += sz;
            continue;
        }
        static const char *const drop[] = {"prompt", "generation", "reasoning"};
        for (size_t i = 0; i < 3; i++) cJSON_DeleteItemFromObjectCaseSensitive(it, drop[i]);
        cut++;
    }
    cJSON *det = cJSON_CreateObject();
    cJSON_AddNumberToObject(det, "records_cut", (double)cut);
    jstr(det, "full", full_path);
    cJSON_DeleteItemFromObjectCaseSensitive(d, "detail");
    cJSON_AddItemToObject(d, "detail", det);
    return d;
}
