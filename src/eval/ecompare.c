/* ecompare.c - eval compare and the golden diff (ecompare.h).
 *
 * Pairing sorts both runs' records by (id, repetition) and walks them
 * together, so the order a run settled its items in does not matter and a
 * suite that gained or lost items compares on what the two share (the
 * unpaired are counted, never guessed).  An error counts as not passed on
 * its side: a run whose server failed an item did not answer it. */
#include "oai/docfile.h"
#include "eval/ecompare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/score.h"
#include "util/errf.h"

typedef struct prec {
    const char *id;
    int rep;
    bool pass;
    int judge;
} prec;

static int prec_cmp(const void *x, const void *y)
{
    const prec *a = x, *b = y;
    int c = strcmp(a->id, b->id);
    return c ? c : (a->rep > b->rep) - (a->rep < b->rep);
}

static const char *sget(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static prec *records(const cJSON *doc, size_t *n)
{
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(doc, "items");
    prec *v = xcalloc((size_t)cJSON_GetArraySize(items) + 1, sizeof *v);
    *n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, items)
    {
        const cJSON *rep = cJSON_GetObjectItemCaseSensitive(it, "rep");
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(it, "judge");
        if (!sget(it, "id") || !sget(it, "state")) continue;
        v[(*n)++] = (prec){sget(it, "id"), cJSON_IsNumber(rep) ? (int)rep->valuedouble : 0,
                           !strcmp(sget(it, "state"), "pass"), cJSON_IsNumber(j) ? (int)j->valuedouble : 0};
    }
    qsort(v, *n, sizeof *v, prec_cmp);
    return v;
}

static bool is_eval(const cJSON *d)
{
    const char *s = sget(d, "schema");
    return s && !strcmp(s, EVAL_SCHEMA) && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(d, "items"));
}

/* judge stats of the scores in v */
static int jstats(const prec *v, size_t n, judge_stats *out)
{
    int *s = xcalloc(n + 1, sizeof *s);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].judge >= 1 && v[i].judge <= 5) s[m++] = v[i].judge;
    int rc = m ? judge_summary(s, m, 0.95, out) : -1;
    free(s);
    return rc;
}

int ecompare(const cJSON *a, const cJSON *b, ecmp *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    if (!is_eval(a) || !is_eval(b)) {
        errf(err, errlen, "not an eval result (expected \"schema\": \"%s\" with \"items\")", EVAL_SCHEMA);
        return -1;
    }
    size_t na, nb;
    prec *va = records(a, &na), *vb = records(b, &nb);
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
        int c = i >= na ? 1 : j >= nb ? -1 : prec_cmp(&va[i], &vb[j]);
        if (c < 0) {
            m->only_a++, i++;
        } else if (c > 0) {
            m->only_b++, j++;
        } else {
            m->paired++;
            m->b += va[i].pass && !vb[j].pass;
            m->c += !va[i].pass && vb[j].pass;
            i++, j++;
        }
    }
    eresult_acc(cJSON_GetObjectItemCaseSensitive(a, "items"), NULL, &m->a);
    eresult_acc(cJSON_GetObjectItemCaseSensitive(b, "items"), NULL, &m->bb);
    m->verdict = m->paired ? verdict_paired(m->b, m->c, 0.05, &m->p) : VERDICT_NA;
    if (!m->paired) m->p = NAN;
    judge_stats ja, jb;
    m->judge_diff = (eci){NAN, NAN, NAN};
    m->judge_verdict = VERDICT_NA;
    if (jstats(va, na, &ja) == 0 && jstats(vb, nb, &jb) == 0 && welch_diff(&ja, &jb, 0.95, &m->judge_diff) == 0)
        m->judge_verdict = verdict_interval(&m->judge_diff);
    free(va);
    free(vb);
    if (!m->paired) {
        errf(err, errlen, "no record of A has a record of B with the same id and repetition: not runs of one suite");
        return -1;
    }
    return 0;
}

bool ecompare_worse(const ecmp *m)
{
    return m->verdict == VERDICT_WORSE || m->judge_verdict == VERDICT_WORSE;
}

static void acc(buf *out, const char *label, const char *name, const eacc *a)
{
    buf_printf(out, "%s: %s: %zu/%zu passed, accuracy %.1f %% [%.1f, %.1f]", label, name, a->pass, a->records,
               100 * a->est, 100 * a->lo, 100 * a->hi);
    if (a->judged) buf_printf(out, ", judge mean %.2f (n %zu)", a->j_mean, a->judged);
    buf_addc(out, '\n');
}

void ecompare_render(buf *out, const ecmp *m, const char *name_a, const char *name_b)
{
    acc(out, "A", name_a, &m->a);
    acc(out, "B", name_b, &m->bb);
    buf_printf(out, "paired %zu records by (id, repetition)", m->paired);
    if (m->only_a || m->only_b) buf_printf(out, "; %zu only in A, %zu only in B (left out)", m->only_a, m->only_b);
    buf_printf(out, "\ndiscordant: %llu passed in A only, %llu in B only; McNemar exact p = %.4g\n",
               (unsigned long long)m->b, (unsigned long long)m->c, m->p);
    double d = m->bb.est - m->a.est;
    if (m->verdict == VERDICT_SAME)
        buf_printf(out, "B is not distinguishable from A (%+.1f points, p = %.3g >= 0.05)\n", 100 * d, m->p);
    else
        buf_printf(out, "B is %s than A (%+.1f points, p = %.3g < 0.05)\n",
                   m->verdict == VERDICT_BETTER ? "better" : "worse", 100 * d, m->p);
    if (m->judge_verdict != VERDICT_NA)
        buf_printf(out, "judge: mean B - A = %+.2f, 95 %% CI [%.2f, %.2f] (Welch): B is %s%s\n", m->judge_diff.est,
                   m->judge_diff.lo, m->judge_diff.hi,
                   m->judge_verdict == VERDICT_SAME ? "not distinguishable from A"
                                                    : verdict_name(m->judge_verdict),
                   m->judge_verdict == VERDICT_SAME ? "" : " than A");
    else if (m->a.judged || m->bb.judged)
        buf_adds(out, "judge: not testable (fewer than two scores on a side)\n");
}

cJSON *ecompare_json(const ecmp *m)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "paired", (double)m->paired);
    cJSON_AddNumberToObject(o, "only_a", (double)m->only_a);
    cJSON_AddNumberToObject(o, "only_b", (double)m->only_b);
    cJSON_AddNumberToObject(o, "b", (double)m->b);
    cJSON_AddNumberToObject(o, "c", (double)m->c);
    docfile_num(o, "p", m->p);
    cJSON_AddStringToObject(o, "verdict", verdict_name(m->verdict));
    cJSON_AddItemToObject(o, "a", eacc_json(&m->a));
    cJSON_AddItemToObject(o, "b_run", eacc_json(&m->bb));
    cJSON *j = cJSON_AddObjectToObject(o, "judge");
    docfile_num(j, "diff", m->judge_diff.est);
    docfile_num(j, "lo", m->judge_diff.lo);
    docfile_num(j, "hi", m->judge_diff.hi);
    cJSON_AddStringToObject(j, "verdict", verdict_name(m->judge_verdict));
    cJSON_AddBoolToObject(o, "worse", ecompare_worse(m));
    return o;
}

/* ---- golden ---------------------------------------------------------------------- */

static void jstr(cJSON *o, const char *k, const char *v)
{
    if (v)
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

cJSON *golden_doc(const eval_suite *s, const erec *recs, size_t n, uint64_t seed, long max_tokens, cJSON *identity)
{
    cJSON *g = cJSON_CreateObject();
    cJSON_AddStringToObject(g, "schema", GOLDEN_SCHEMA);
    cJSON_AddStringToObject(g, "suite", s->name);
    cJSON_AddNumberToObject(g, "seed", (double)seed);
    cJSON_AddNumberToObject(g, "max_tokens", (double)max_tokens);
    cJSON_AddItemToObject(g, "identity", identity ? identity : cJSON_CreateObject());
    cJSON *items = cJSON_AddArrayToObject(g, "items");
    for (size_t i = 0; i < n; i++) {
        if (!recs[i].settled) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", s->items[recs[i].item].id);
        cJSON_AddStringToObject(o, "state", score_state_names[recs[i].state]);
        jstr(o, "content", recs[i].content);
        jstr(o, "reasoning", recs[i].reasoning);
        jstr(o, "tool_calls", recs[i].tool_calls);
        cJSON_AddItemToArray(items, o);
    }
    return g;
}

static const cJSON *find_id(const cJSON *items, const char *id)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, items)
    {
        const char *x = sget(it, "id");
        if (x && !strcmp(x, id)) return it;
    }
    return NULL;
}

/* a few bytes around off, escaped, for the report */
static void excerpt(buf *out, const char *s, size_t off)
{
    if (!s) {
        buf_adds(out, "(none)");
        return;
    }
    size_t n = strlen(s), b = off > 16 ? off - 16 : 0, e = off + 24 < n ? off + 24 : n;
    buf_addc(out, '\'');
    if (b) buf_adds(out, "...");
    for (size_t i = b; i < e; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n')
            buf_adds(out, "\\n");
        else if (c < 0x20 || c == 0x7f)
            buf_printf(out, "\\x%02x", c);
        else
            buf_addc(out, (char)c);
    }
    if (e < n) buf_adds(out, "...");
    buf_addc(out, '\'');
}

/* first difference of one field: 0 same, 1 differs (reported) */
static int field_diff(buf *rep, const char *id, const char *field, const char *was, const char *now)
{
    if ((!was && !now) || (was && now && !strcmp(was, now))) return 0;
    size_t off = 0;
    if (was && now)
        while (was[off] && was[off] == now[off]) off++;
    buf_printf(rep, "item '%s': %s differs at byte %zu: was ", id, field, off);
    excerpt(rep, was, off);
    buf_adds(rep, ", now ");
    excerpt(rep, now, off);
    buf_addc(rep, '\n');
    return 1;
}

static bool ident_diff(buf *rep, const cJSON *was, const cJSON *now)
{
    bool changed = false;
    const cJSON *f;
    cJSON_ArrayForEach(f, was)
    {
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(now, f->string);
        if (g && cJSON_Compare(f, g, true)) continue;
        char *a = cJSON_PrintUnformatted(f), *b = g ? cJSON_PrintUnformatted(g) : NULL;
        buf_printf(rep, "identity: %s was %s, now %s\n", f->string, a, b ? b : "(absent)");
        free(a);
        free(b);
        changed = true;
    }
    cJSON_ArrayForEach(f, now)
    {
        if (cJSON_GetObjectItemCaseSensitive(was, f->string)) continue;
        char *b = cJSON_PrintUnformatted(f);
        buf_printf(rep, "identity: %s was (absent), now %s\n", f->string, b);
        free(b);
        changed = true;
    }
    return changed;
}

int golden_diff(const cJSON *was, const cJSON *now, buf *rep, size_t *n_diff, bool *ident_changed, char *err,
                size_t errlen)
{
    *n_diff = 0;
    *ident_changed = false;
    const char *sc = sget(was, "schema");
    const cJSON *wi = cJSON_GetObjectItemCaseSensitive(was, "items");
    if (!sc || strcmp(sc, GOLDEN_SCHEMA) || !cJSON_IsArray(wi)) {
        errf(err, errlen, "not a golden file (expected \"schema\": \"%s\" with \"items\")", GOLDEN_SCHEMA);
        return -1;
    }
    const cJSON *ni = cJSON_GetObjectItemCaseSensitive(now, "items"), *it;
    cJSON_ArrayForEach(it, wi)
    {
        const char *id = sget(it, "id");
        if (!id) continue;
        const cJSON *o = find_id(ni, id);
        if (!o) {
            buf_printf(rep, "item '%s': in the golden file, not in this run\n", id);
            (*n_diff)++;
            continue;
        }
        int d = field_diff(rep, id, "state", sget(it, "state"), sget(o, "state"));
        d += field_diff(rep, id, "content", sget(it, "content"), sget(o, "content"));
        d += field_diff(rep, id, "reasoning", sget(it, "reasoning"), sget(o, "reasoning"));
        d += field_diff(rep, id, "tool_calls", sget(it, "tool_calls"), sget(o, "tool_calls"));
        *n_diff += d > 0;
    }
    cJSON_ArrayForEach(it, ni)
    {
        const char *id = sget(it, "id");
        if (id && !find_id(wi, id)) {
            buf_printf(rep, "item '%s': in this run, not in the golden file\n", id);
            (*n_diff)++;
        }
    }
    *ident_changed = ident_diff(rep, cJSON_GetObjectItemCaseSensitive(was, "identity"),
                                cJSON_GetObjectItemCaseSensitive(now, "identity"));
    return 0;
}
