/* test_eval_result.c - the runner's pure side: records as the
 * gpumod.eval/1 document (cuts, states, interrupted records), the
 * statistics recomputed from a document's items (accuracy with Wilson's
 * interval, errors counted as not passed, pass@1 and pass@k over
 * repetitions, judge scores, categories), the daemon's copy that drops
 * texts past a cap and says where the full file is, the renderings,
 * compare's pairing by (id, repetition) and its verdicts, and the golden
 * diff (the first differing byte, missing and new items, identity). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/ecompare.h"
#include "eval/eresult.h"
#include "eval/score.h"

static eval_suite suite;

static const char suite_text[] =
    "items:\n"
    "  - {id: a, category: x, prompt: 'What is 1 + 1?', scorer: number, expected: 2}\n"
    "  - {id: b, category: x, prompt: p, expected: Paris}\n"
    "  - {id: c, category: y, system: be brief, prompt: p, expected: Rome}\n"
    "  - {id: d, category: y, prompt: p, scorer: judge, rubric: r}\n";

static int setup(void **st)
{
    assert_int_equal(suite_load_text(&suite, suite_text, strlen(suite_text), "t.yaml", false), 0);
    return 0;
}

static int teardown(void **st)
{
    suite_release(&suite);
    return 0;
}

static erec rec(size_t item, unsigned rep, int state, const char *content)
{
    erec r = {.item = item, .rep = rep, .seed = 1 + rep, .state = state, .n_in = 10, .n_out = 2,
              .latency_ms = 5, .ttft_ms = 1, .attempts = 1, .settled = true};
    r.content = content ? strdup(content) : NULL;
    r.answer = content ? strdup(content) : NULL;
    return r;
}

/* a document of n records: items cycle through the suite */
static cJSON *doc_of(erec *v, size_t n)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "schema", EVAL_SCHEMA);
    cJSON *items = cJSON_AddArrayToObject(d, "items");
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(items, erec_json(&suite.items[v[i].item], &v[i]));
    eresult_summarize(d);
    return d;
}

static void release(erec *v, size_t n)
{
    for (size_t i = 0; i < n; i++) erec_release(&v[i]);
}

static double num(const cJSON *d, const char *path)
{
    /* "a.b.c" */
    char *p = strdup(path), *save = NULL;
    const cJSON *o = d;
    for (char *k = strtok_r(p, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
        o = cJSON_GetObjectItemCaseSensitive(o, k);
    free(p);
    return cJSON_IsNumber(o) ? o->valuedouble : NAN;
}

static void records_and_cuts(void **st)
{
    char *big = malloc(EREC_GEN_MAX + 100);
    memset(big, 'z', EREC_GEN_MAX + 99);
    big[EREC_GEN_MAX + 99] = 0;
    erec r = rec(2, 0, SCORE_FAIL, big);
    snprintf(r.reason, sizeof r.reason, "expected 'Rome', got 'zz'");
    cJSON *j = erec_json(&suite.items[2], &r);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "state")), "fail");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "expected")), "Rome");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "prompt")), "system: be brief\nuser: p");
    assert_int_equal(strlen(cJSON_GetStringValue(cJSON_GetObjectItem(j, "generation"))), EREC_GEN_MAX);
    assert_int_equal((int)num(j, "generation_bytes"), EREC_GEN_MAX + 99);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "error")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "judge")));
    cJSON_Delete(j);
    /* a record Ctrl-C left unsettled says so */
    r.settled = false;
    j = erec_json(&suite.items[2], &r);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "state")), "error");
    assert_non_null(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(j, "error")), "interrupted"));
    cJSON_Delete(j);
    erec_release(&r);
    free(big);
}

static void statistics(void **st)
{
    /* 4 items x 2 repetitions: a passes twice, b once, c errors once and
     * fails once, d judged 5 and 3 (pass_score 4) */
    erec v[8] = {rec(0, 0, SCORE_PASS, "2"), rec(0, 1, SCORE_PASS, "2"),  rec(1, 0, SCORE_PASS, "Paris"),
                 rec(1, 1, SCORE_FAIL, "Lyon"), rec(2, 0, SCORE_ERROR, NULL), rec(2, 1, SCORE_FAIL, "x"),
                 rec(3, 0, SCORE_PASS, "good"), rec(3, 1, SCORE_FAIL, "meh")};
    v[6].judge = 5;
    v[7].judge = 3;
    cJSON *d = doc_of(v, 8);
    assert_int_equal((int)num(d, "summary.records"), 8);
    assert_int_equal((int)num(d, "summary.items"), 4);
    assert_int_equal((int)num(d, "summary.k"), 2);
    assert_int_equal((int)num(d, "summary.error"), 1);
    /* pass@1 = mean(1, .5, 0, .5) = 0.5, Wilson over n = 4 */
    assert_float_equal(num(d, "summary.accuracy.est"), 0.5, 1e-12);
    eci w;
    wilson(2, 4, conf_z(0.95), &w);
    assert_float_equal(num(d, "summary.accuracy.lo"), w.lo, 1e-12);
    assert_float_equal(num(d, "summary.accuracy.hi"), w.hi, 1e-12);
    /* pass@2: 1, 1, 0, 1 */
    assert_float_equal(num(d, "summary.pass_at_k"), 0.75, 1e-12);
    assert_float_equal(num(d, "summary.judge.mean"), 4, 1e-12);
    assert_float_equal(num(d, "summary.judge.share5"), 0.5, 1e-12);
    const cJSON *cats = cJSON_GetObjectItem(d, "categories");
    assert_int_equal(cJSON_GetArraySize(cats), 2);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cats, 0), "name")), "x");
    assert_float_equal(num(cJSON_GetArrayItem(cats, 0), "accuracy.est"), 0.75, 1e-12);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(cats, 0), "judge")));
    /* the renderings read the same document */
    buf b = BUF_INIT;
    ereport_table(&b, d, 100);
    assert_non_null(strstr(b.p, "pass@1 50.0 % ["));
    assert_non_null(strstr(b.p, "ERROR c"));
    assert_non_null(strstr(b.p, "judge: mean 4.00"));
    buf_clear(&b);
    ereport_table(&b, d, 2); /* too many: only what did not pass */
    assert_null(strstr(b.p, "pass  a "));
    assert_non_null(strstr(b.p, "(4 passing records not shown"));
    buf_clear(&b);
    ereport_csv(&b, d);
    assert_non_null(strstr(b.p, "\nc,y,0,1,error,exact,none,,Rome,,10,2,5,,1,\r\n"));
    buf_clear(&b);
    const cJSON *docs[] = {d};
    ereport_svg(&b, docs, 1);
    assert_non_null(strstr(b.p, "<svg"));
    assert_non_null(strstr(b.p, ">all<"));
    buf_release(&b);
    cJSON_Delete(d);
    release(v, 8);
}

static void store_copy(void **st)
{
    erec v[3] = {rec(0, 0, SCORE_PASS, "2"), rec(1, 0, SCORE_PASS, "Paris"), rec(2, 0, SCORE_PASS, "Rome")};
    cJSON *d = doc_of(v, 3);
    /* the first record's texts fit (prompt 14 + 1 bytes), the rest are dropped */
    cJSON *s = eresult_for_store(d, 20, "/tmp/full.json");
    const cJSON *items = cJSON_GetObjectItem(s, "items");
    assert_non_null(cJSON_GetObjectItem(cJSON_GetArrayItem(items, 0), "generation"));
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(items, 1), "generation"));
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(items, 2), "prompt"));
    assert_non_null(cJSON_GetObjectItem(cJSON_GetArrayItem(items, 2), "answer"));
    assert_int_equal((int)num(s, "detail.records_cut"), 2);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "detail"), "full")),
                        "/tmp/full.json");
    cJSON_Delete(s);
    s = eresult_for_store(d, 1 << 20, NULL);
    assert_int_equal((int)num(s, "detail.records_cut"), 0);
    cJSON_Delete(s);
    cJSON_Delete(d);
    release(v, 3);
}

static void compare_pairs(void **st)
{
    /* A: a b c d pass at reps 0..4 (20 records); B: the same but a and b
     * fail at every rep, and an extra repetition 5 of a (unpaired) */
    erec va[20], vb[21];
    for (size_t i = 0; i < 20; i++) {
        va[i] = rec(i % 4, (unsigned)(i / 4), SCORE_PASS, "x");
        vb[i] = rec(i % 4, (unsigned)(i / 4), i % 4 < 2 ? SCORE_FAIL : SCORE_PASS, "x");
    }
    vb[20] = rec(0, 5, SCORE_PASS, "x");
    /* B lists its records in another order: pairing does not care */
    erec t = vb[0];
    vb[0] = vb[19];
    vb[19] = t;
    cJSON *a = doc_of(va, 20), *b = doc_of(vb, 21);
    ecmp m;
    char err[200];
    assert_int_equal(ecompare(a, b, &m, err, sizeof err), 0);
    assert_int_equal(m.paired, 20);
    assert_int_equal(m.only_b, 1);
    assert_int_equal(m.b, 10);
    assert_int_equal(m.c, 0);
    assert_int_equal(m.verdict, VERDICT_WORSE);
    assert_true(ecompare_worse(&m));
    buf o = BUF_INIT;
    ecompare_render(&o, &m, "a.json", "b.json");
    assert_non_null(strstr(o.p, "B is worse than A"));
    assert_non_null(strstr(o.p, "10 passed in A only, 0 in B only"));
    buf_release(&o);
    assert_int_equal(ecompare(b, a, &m, err, sizeof err), 0);
    assert_int_equal(m.verdict, VERDICT_BETTER);
    assert_false(ecompare_worse(&m));
    assert_int_equal(ecompare(a, a, &m, err, sizeof err), 0);
    assert_int_equal(m.verdict, VERDICT_SAME);
    /* nothing in common, or not an eval document */
    cJSON *x = cJSON_CreateObject();
    assert_int_equal(ecompare(a, x, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "not an eval result"));
    cJSON_Delete(x);
    cJSON_Delete(a);
    cJSON_Delete(b);
    release(va, 20);
    release(vb, 21);
}

static void golden(void **st)
{
    erec v[3] = {rec(0, 0, SCORE_PASS, "2"), rec(1, 0, SCORE_PASS, "Paris"), rec(2, 0, SCORE_PASS, "Rome")};
    cJSON *id1 = cJSON_CreateObject();
    cJSON_AddStringToObject(id1, "build_info", "b1");
    cJSON *was = golden_doc(&suite, v, 3, 1, 64, id1);
    buf rep = BUF_INIT;
    size_t nd;
    bool ic;
    char err[200];
    /* identical */
    cJSON *id2 = cJSON_Duplicate(id1, true);
    cJSON *now = golden_doc(&suite, v, 3, 1, 64, id2);
    assert_int_equal(golden_diff(was, now, &rep, &nd, &ic, err, sizeof err), 0);
    assert_int_equal(nd, 0);
    assert_false(ic);
    assert_int_equal(rep.len, 0);
    cJSON_Delete(now);
    /* one byte changed, one item gone, a new build */
    free(v[1].content);
    v[1].content = strdup("Parxs");
    erec w[2] = {v[0], v[1]};
    cJSON *id3 = cJSON_CreateObject();
    cJSON_AddStringToObject(id3, "build_info", "b2");
    now = golden_doc(&suite, w, 2, 1, 64, id3);
    assert_int_equal(golden_diff(was, now, &rep, &nd, &ic, err, sizeof err), 0);
    assert_int_equal(nd, 2);
    assert_true(ic);
    assert_non_null(strstr(rep.p, "item 'b': content differs at byte 3: was 'Paris', now 'Parxs'"));
    assert_non_null(strstr(rep.p, "item 'c': in the golden file, not in this run"));
    assert_non_null(strstr(rep.p, "identity: build_info was \"b1\", now \"b2\""));
    assert_null(strstr(rep.p, "item 'a'"));
    cJSON_Delete(now);
    /* not a golden file */
    cJSON *x = cJSON_CreateObject();
    assert_int_equal(golden_diff(x, was, &rep, &nd, &ic, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a golden file"));
    cJSON_Delete(x);
    buf_release(&rep);
    cJSON_Delete(was);
    release(v, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(records_and_cuts), cmocka_unit_test(statistics), cmocka_unit_test(store_copy),
        cmocka_unit_test(compare_pairs),    cmocka_unit_test(golden),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
