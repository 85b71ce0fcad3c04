/* test_bcompare.c - `bench compare` on result documents in
 * tests/fixtures/bench/ (the schema of docs/bench.md; 5 iterations per
 * point, ~1.2 % noise): two runs of one config give no significant row; a
 * run 10 % slower (throughputs / 1.1, TPOT, ITL, E2EL x 1.1, TTFT as is)
 * has exactly those rows "worse" (and "better" the other way round); one
 * iteration per side is never tested; refusals (not a bench result,
 * different kinds, no common point) say why; the rendered table and the
 * JSON say what a user reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "bench/bcompare.h"
#include "testenv.h"

static cJSON *load(const char *name)
{
    char *rel = xasprintf("tests/fixtures/bench/%s", name);
    char *path = src_path(rel);
    char *text = read_text(path);
    if (!text) fail_msg("cannot read %s", path);
    cJSON *j = cJSON_Parse(text);
    if (!j) fail_msg("%s is not JSON", path);
    free(text);
    free(path);
    free(rel);
    return j;
}

static int compare(const char *fa, const char *fb, bcmp_row **rows, size_t *n, char *err, size_t errlen)
{
    cJSON *a = load(fa), *b = load(fb);
    int rc = bcompare(a, b, 0.95, 1, rows, n, err, errlen);
    cJSON_Delete(a);
    cJSON_Delete(b);
    return rc;
}

static const bcmp_row *find(const bcmp_row *rows, size_t n, const char *point, const char *metric)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].point, point) == 0 && strcmp(rows[i].metric, metric) == 0) return &rows[i];
    fail_msg("no row %s %s", point, metric);
    return NULL;
}

static void same_config(void **state)
{
    bcmp_row *rows;
    size_t n;
    char err[256] = "";
    assert_int_equal(compare("load_a.json", "load_a_rerun.json", &rows, &n, err, sizeof err), 0);
    assert_int_equal(n, 26); /* 2 points x 13 headlines */
    for (size_t i = 0; i < n; i++) {
        if (rows[i].verdict != 0)
            fail_msg("%s %s: verdict %d, ratio %g [%g, %g]", rows[i].point, rows[i].metric, rows[i].verdict,
                     rows[i].ratio.est, rows[i].ratio.lo, rows[i].ratio.hi);
        assert_true(rows[i].ratio.lo <= 1 && rows[i].ratio.hi >= 1);
        assert_int_equal(rows[i].na, 5);
        assert_int_equal(rows[i].nb, 5);
        assert_true(fabs(rows[i].conf - (1 - 0.05 / 26)) < 1e-12);
        assert_string_equal(rows[i].note, "");
    }
    assert_string_equal(rows[0].point, "concurrency=1");
    assert_string_equal(rows[0].metric, "req_tput");
    assert_true(rows[0].higher_better);
    assert_string_equal(rows[13].point, "concurrency=8");
    free(rows);
}

static void ten_percent_slower(void **state)
{
    static const char *const slowed[] = {"req_tput",     "out_tput",         "total_tput", "goodput",
                                         "tpot_ms",      "tpot_ms_p99",      "itl_token_ms",
                                         "itl_chunk_ms_p99", "e2el_ms",      "e2el_ms_p99"};
    static const char *const kept[] = {"ttft_ms", "ttft_ms_p99", "ttfc_ms"};
    for (int dir = 0; dir < 2; dir++) {
        bcmp_row *rows;
        size_t n;
        char err[256] = "";
        /* dir 0: B is the slow run (worse); dir 1: A is (B better) */
        assert_int_equal(compare(dir ? "load_b_slow10.json" : "load_a.json",
                                 dir ? "load_a.json" : "load_b_slow10.json", &rows, &n, err, sizeof err),
                         0);
        assert_int_equal(n, 26);
        for (int p = 0; p < 2; p++) {
            const char *pt = p ? "concurrency=8" : "concurrency=1";
            for (size_t i = 0; i < sizeof slowed / sizeof *slowed; i++) {
                const bcmp_row *r = find(rows, n, pt, slowed[i]);
                if (r->verdict != (dir ? 1 : -1))
                    fail_msg("%s %s: verdict %d, ratio %g [%g, %g]", pt, slowed[i], r->verdict, r->ratio.est,
                             r->ratio.lo, r->ratio.hi);
                double want = r->higher_better ? 1 / 1.1 : 1.1;
                if (dir) want = 1 / want;
                assert_true(fabs(r->ratio.est / want - 1) < 0.03);
                assert_true(r->ratio.lo <= r->ratio.est && r->ratio.est <= r->ratio.hi);
            }
            for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
                const bcmp_row *r = find(rows, n, pt, kept[i]);
                if (r->verdict != 0) fail_msg("%s %s: verdict %d", pt, kept[i], r->verdict);
            }
        }
        const bcmp_row *o = find(rows, n, "concurrency=8", "out_tput");
        assert_true(o->higher_better);
        assert_false(find(rows, n, "concurrency=8", "tpot_ms")->higher_better);
        free(rows);
    }
}

/* Pairs recorded from real runs (tests/fixtures/bench/recorded/README.md):
 * the same configuration twice is not flagged; a decode 10 % slower is. */
static void recorded_pairs(void **state)
{
    bcmp_row *rows;
    size_t n;
    char err[256] = "";
    assert_int_equal(compare("recorded/a.json", "recorded/a_rerun.json", &rows, &n, err, sizeof err), 0);
    assert_true(n >= 16);
    for (size_t i = 0; i < n; i++)
        if (rows[i].verdict != 0)
            fail_msg("same config, %s %s: verdict %d, ratio %g [%g, %g]", rows[i].point, rows[i].metric,
                     rows[i].verdict, rows[i].ratio.est, rows[i].ratio.lo, rows[i].ratio.hi);
    free(rows);

    assert_int_equal(compare("recorded/a.json", "recorded/b_slow10.json", &rows, &n, err, sizeof err), 0);
    static const char *const worse[] = {"req_tput", "out_tput", "total_tput", "tpot_ms", "itl_token_ms", "e2el_ms"};
    for (int p = 0; p < 2; p++) {
        const char *pt = p ? "concurrency=4" : "concurrency=1";
        for (size_t i = 0; i < sizeof worse / sizeof *worse; i++) {
            const bcmp_row *r = find(rows, n, pt, worse[i]);
            if (r->verdict != -1)
                fail_msg("10 %% slower, %s %s: verdict %d, ratio %g [%g, %g]", pt, worse[i], r->verdict,
                         r->ratio.est, r->ratio.lo, r->ratio.hi);
        }
        assert_int_equal(find(rows, n, pt, "ttft_ms")->verdict, 0);
        assert_true(fabs(find(rows, n, pt, "tpot_ms")->ratio.est - 50.0 / 45.0) < 0.01);
    }
    free(rows);
}

static void one_iteration(void **state)
{
    bcmp_row *rows;
    size_t n;
    char err[256] = "";
    assert_int_equal(compare("load_one_a.json", "load_one_b.json", &rows, &n, err, sizeof err), 0);
    assert_int_equal(n, 26);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(rows[i].verdict, 2);
        assert_string_equal(rows[i].note, "one iteration: use --iterations 3 or more");
        assert_true(isnan(rows[i].ratio.lo) && isnan(rows[i].ratio.hi));
        assert_true(isfinite(rows[i].ratio.est));
        assert_int_equal(rows[i].na, 1);
    }
    buf out = BUF_INIT;
    bcompare_render(&out, rows, n);
    assert_non_null(strstr(out.p, "n/a  (one iteration: use --iterations 3 or more)\n"));
    assert_non_null(strstr(out.p, "no metric could be tested: each side needs 2 or more iterations\n"));
    buf_release(&out);
    cJSON *j = bcompare_json(rows, n);
    assert_int_equal(cJSON_GetObjectItem(j, "comparisons")->valueint, 0);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "conf")));
    cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rows"), 0);
    assert_string_equal(cJSON_GetObjectItem(r0, "verdict")->valuestring, "n/a");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(r0, "lo")));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r0, "significant")));
    cJSON_Delete(j);
    free(rows);

    /* one side with 5, the other with 1: still not testable */
    assert_int_equal(compare("load_a.json", "load_one_b.json", &rows, &n, err, sizeof err), 0);
    assert_int_equal(rows[3].verdict, 2);
    assert_int_equal(rows[3].na, 5);
    free(rows);
}

static void refusals(void **state)
{
    bcmp_row *rows = (bcmp_row *)1;
    size_t n = 7;
    char err[256] = "";
    assert_int_equal(compare("load_a.json", "ctx_sweep.json", &rows, &n, err, sizeof err), -1);
    assert_string_equal(err, "A is a 'load' result and B a 'ctx_sweep' result: only results of one kind compare");
    assert_null(rows);
    assert_int_equal(n, 0);

    cJSON *a = load("load_a.json");
    cJSON *other = cJSON_Parse("{\"schema\": \"vllm.bench/1\", \"kind\": \"load\", \"points\": []}");
    cJSON *none = cJSON_Parse("[1, 2]");
    assert_int_equal(bcompare(other, a, 0.95, 1, &rows, &n, err, sizeof err), -1);
    assert_string_equal(err, "A is not a gpumod.bench/1 result (schema is 'vllm.bench/1')");
    assert_int_equal(bcompare(a, none, 0.95, 1, &rows, &n, err, sizeof err), -1);
    assert_string_equal(err, "B is not a gpumod.bench/1 result (no \"schema\")");
    assert_int_equal(bcompare(a, a, 1.5, 1, &rows, &n, err, sizeof err), -1);
    assert_string_equal(err, "confidence 1.5 is not between 0 and 1");

    /* B measured other concurrencies */
    cJSON *b = cJSON_Duplicate(a, 1);
    cJSON *p;
    int x = 64;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(b, "points"))
    {
        cJSON_SetNumberValue(cJSON_GetObjectItem(p, "x"), x);
        x *= 2;
    }
    assert_int_equal(bcompare(a, b, 0.95, 1, &rows, &n, err, sizeof err), -1);
    assert_string_equal(err, "A and B have no load point in common (A: concurrency=1,8; B: concurrency=64,128)");
    /* one point in common is enough */
    cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(b, "points"), 1), "x"), 8);
    assert_int_equal(bcompare(a, b, 0.95, 1, &rows, &n, err, sizeof err), 0);
    assert_int_equal(n, 13);
    assert_string_equal(rows[0].point, "concurrency=8");
    /* identical documents: every ratio exactly 1, nothing significant */
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(rows[i].verdict, 0);
        assert_true(rows[i].ratio.est == 1);
    }
    free(rows);
    cJSON_Delete(b);
    cJSON_Delete(a);
    cJSON_Delete(other);
    cJSON_Delete(none);
}

static void metrics_without_values(void **state)
{
    /* goodput null on both sides (no --slo): no row; on one side: a note */
    cJSON *a = load("load_a.json"), *b = load("load_a_rerun.json");
    cJSON *p, *it;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(a, "points"))
    {
        cJSON_ArrayForEach(it, cJSON_GetObjectItem(p, "iterations"))
        {
            cJSON_ReplaceItemInObject(cJSON_GetObjectItem(it, "values"), "goodput", cJSON_CreateNull());
            cJSON_ReplaceItemInObject(cJSON_GetObjectItem(it, "values"), "ttfc_ms", cJSON_CreateNull());
        }
    }
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(b, "points"))
    {
        cJSON_ArrayForEach(it, cJSON_GetObjectItem(p, "iterations"))
        {
            cJSON_ReplaceItemInObject(cJSON_GetObjectItem(it, "values"), "goodput", cJSON_CreateNull());
        }
    }
    bcmp_row *rows;
    size_t n;
    char err[256];
    assert_int_equal(bcompare(a, b, 0.95, 1, &rows, &n, err, sizeof err), 0);
    assert_int_equal(n, 24);
    const bcmp_row *r = find(rows, n, "concurrency=1", "ttfc_ms");
    assert_int_equal(r->verdict, 2);
    assert_string_equal(r->note, "no value in A");
    assert_true(isnan(r->a) && isnan(r->ratio.est));
    /* 22 testable rows */
    assert_true(fabs(rows[0].conf - (1 - 0.05 / 22)) < 1e-12);
    free(rows);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static void render_and_json(void **state)
{
    bcmp_row rows[3];
    memset(rows, 0, sizeof rows);
    snprintf(rows[0].point, sizeof rows[0].point, "concurrency=8");
    snprintf(rows[0].metric, sizeof rows[0].metric, "out_tput");
    rows[0].a = 334.5;
    rows[0].b = 301.2;
    rows[0].na = rows[0].nb = 5;
    rows[0].ratio = (bci){0.9004, 0.8811, 0.9213, 5};
    rows[0].conf = 0.99;
    rows[0].higher_better = true;
    rows[0].verdict = -1;
    snprintf(rows[1].point, sizeof rows[1].point, "concurrency=8");
    snprintf(rows[1].metric, sizeof rows[1].metric, "ttft_ms");
    rows[1].a = 96.31;
    rows[1].b = 95.02;
    rows[1].na = rows[1].nb = 5;
    rows[1].ratio = (bci){0.98661, 0.9611, 1.0123, 5};
    rows[1].conf = 0.99;
    rows[1].verdict = 0;
    snprintf(rows[2].point, sizeof rows[2].point, "concurrency=64");
    snprintf(rows[2].metric, sizeof rows[2].metric, "tpot_ms_p99");
    rows[2].a = 0.0412;
    rows[2].b = NAN;
    rows[2].na = 1;
    rows[2].ratio = (bci){NAN, NAN, NAN, 0};
    rows[2].conf = NAN;
    rows[2].verdict = 2;
    snprintf(rows[2].note, sizeof rows[2].note, "no value in B");
    buf out = BUF_INIT;
    bcompare_render(&out, rows, 3);
    assert_string_equal(out.p,
                        "point           metric            A      B    B/A  interval        verdict\n"
                        "concurrency=8   out_tput      334.5  301.2  0.900  [0.881, 0.921]  worse\n"
                        "concurrency=8   ttft_ms       96.31  95.02  0.987  [0.961, 1.012]  same\n"
                        "concurrency=64  tpot_ms_p99  0.0412      -      -  -               n/a  (no value in B)\n"
                        "B/A: ratio of geometric means over iterations; intervals: 99 % Welch t on logs, "
                        "Bonferroni-corrected over 2 comparisons (98 % overall)\n");
    buf_release(&out);

    cJSON *j = bcompare_json(rows, 3);
    char *s = cJSON_PrintUnformatted(j);
    assert_non_null(strstr(s, "\"comparisons\":2,\"conf\":0.99,\"rows\":[{\"point\":\"concurrency=8\","
                              "\"metric\":\"out_tput\",\"a\":334.5,\"b\":301.2,\"na\":5,\"nb\":5,"
                              "\"ratio\":0.9004,\"lo\":0.8811,\"hi\":0.9213,\"conf\":0.99,"
                              "\"higher_is_better\":true,\"significant\":true,\"verdict\":\"worse\",\"note\":null}"));
    assert_non_null(strstr(s, "\"b\":null,\"na\":1,\"nb\":0,\"ratio\":null,\"lo\":null,\"hi\":null,\"conf\":null,"
                              "\"higher_is_better\":false,\"significant\":false,\"verdict\":\"n/a\","
                              "\"note\":\"no value in B\"}"));
    free(s);
    cJSON_Delete(j);
}

static void real_render(void **state)
{
    bcmp_row *rows;
    size_t n;
    char err[256] = "";
    assert_int_equal(compare("load_a.json", "load_b_slow10.json", &rows, &n, err, sizeof err), 0);
    buf out = BUF_INIT;
    bcompare_render(&out, rows, n);
    if (getenv("BCOMPARE_SHOW")) fputs(out.p, stderr);
    /* header, 26 rows, the footer */
    size_t lines = 0;
    for (const char *c = out.p; *c; c++) lines += *c == '\n';
    assert_int_equal(lines, 28);
    assert_non_null(strstr(out.p, "concurrency=1  out_tput "));
    assert_non_null(strstr(out.p, "Bonferroni-corrected over 26 comparisons (95 % overall)\n"));
    buf_release(&out);
    /* the same seed, the same intervals */
    bcmp_row *again;
    size_t n2;
    assert_int_equal(compare("load_a.json", "load_b_slow10.json", &again, &n2, err, sizeof err), 0);
    assert_int_equal(n2, n);
    assert_memory_equal(again, rows, n * sizeof *rows);
    free(again);
    free(rows);
}

/* A synthetic result: 3 points x 4 metrics x `iters` iterations, each
 * value 100 * scale[m] * exp(noise * N(0,1)) (log-normal noise). */
static double normal(uint64_t *st)
{
    double u1 = brng_unit(st), u2 = brng_unit(st);
    if (u1 <= 0) u1 = 1e-300;
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

static cJSON *synth(uint64_t *st, int iters, double noise, const double scale[4])
{
    static const char *const metric[4] = {"req_tput", "out_tput", "ttft_ms", "tpot_ms"};
    cJSON *d = cJSON_CreateObject(), *pts = cJSON_AddArrayToObject(d, "points");
    cJSON_AddStringToObject(d, "schema", "gpumod.bench/1");
    cJSON_AddStringToObject(d, "kind", "load");
    for (int p = 0; p < 3; p++) {
        cJSON *pt = cJSON_CreateObject(), *its = cJSON_AddArrayToObject(pt, "iterations");
        cJSON_AddStringToObject(pt, "x_name", "concurrency");
        cJSON_AddNumberToObject(pt, "x", 1 << (2 * p));
        for (int i = 0; i < iters; i++) {
            cJSON *it = cJSON_CreateObject(), *v = cJSON_AddObjectToObject(it, "values");
            for (int m = 0; m < 4; m++) cJSON_AddNumberToObject(v, metric[m], 100 * scale[m] * exp(noise * normal(st)));
            cJSON_AddItemToArray(its, it);
        }
        cJSON_AddItemToArray(pts, pt);
    }
    return d;
}

/* Two runs of one config, 3 iterations each, 12 rows: the chance of any
 * significant row in the table must be about 1 - conf (5 %), not the 2 in
 * 3 a percentile bootstrap of 3 values gives (it can only say "the 3
 * values do not overlap"). */
static void false_alarm_rate(void **state)
{
    static const double same[4] = {1, 1, 1, 1};
    uint64_t st = 20240607;
    int alarms = 0;
    for (int t = 0; t < 300; t++) {
        cJSON *a = synth(&st, 3, 0.02, same), *b = synth(&st, 3, 0.02, same);
        bcmp_row *rows;
        size_t n;
        char err[256] = "";
        assert_int_equal(bcompare(a, b, 0.95, (uint64_t)t, &rows, &n, err, sizeof err), 0);
        assert_int_equal(n, 12);
        bool any = false;
        for (size_t i = 0; i < n; i++) any |= rows[i].verdict == 1 || rows[i].verdict == -1;
        alarms += any;
        free(rows);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    if (alarms > 25) fail_msg("%d of 300 same-config comparisons had a significant row (want <= 25)", alarms);
}

/* A true 10 % change (out_tput / 1.1, tpot x 1.1) at 1 % noise is still
 * found; returns how many of the 600 changed rows (3 points x 2 metrics x
 * 100 runs) were flagged "worse", and fails on an unchanged row flagged
 * more than a few times. */
static int power_runs(int iters, uint64_t seed)
{
    static const double base[4] = {1, 1, 1, 1}, slow[4] = {1, 1 / 1.1, 1, 1.1};
    uint64_t st = seed;
    int found = 0, wrong = 0;
    for (int t = 0; t < 100; t++) {
        cJSON *a = synth(&st, iters, 0.01, base), *b = synth(&st, iters, 0.01, slow);
        bcmp_row *rows;
        size_t n;
        char err[256] = "";
        assert_int_equal(bcompare(a, b, 0.95, (uint64_t)t, &rows, &n, err, sizeof err), 0);
        for (size_t i = 0; i < n; i++) {
            bool changed = strcmp(rows[i].metric, "out_tput") == 0 || strcmp(rows[i].metric, "tpot_ms") == 0;
            if (changed) found += rows[i].verdict == -1;
            if (!changed && rows[i].verdict != 0) wrong++;
        }
        free(rows);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    if (wrong > 10) fail_msg("%d unchanged rows were flagged in 100 runs of %d iterations (want <= 10)", wrong, iters);
    return found;
}

static void power_ten_percent(void **state)
{
    /* 3 iterations: t on 2-4 df at the Bonferroni level 1 - 0.05/12 is
     * wide (t ~ 5.9); about 84 % of the changed rows are flagged */
    int f3 = power_runs(3, 77);
    if (f3 < 480) fail_msg("3 iterations: a 10 %% change was flagged in %d of 600 changed rows (want >= 480)", f3);
    /* 5 iterations: nearly always */
    int f5 = power_runs(5, 78);
    if (f5 < 570) fail_msg("5 iterations: a 10 %% change was flagged in %d of 600 changed rows (want >= 570)", f5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_config),   cmocka_unit_test(ten_percent_slower),
        cmocka_unit_test(one_iteration), cmocka_unit_test(refusals),
        cmocka_unit_test(metrics_without_values), cmocka_unit_test(render_and_json),
        cmocka_unit_test(real_render),   cmocka_unit_test(false_alarm_rate),
        cmocka_unit_test(power_ten_percent), cmocka_unit_test(recorded_pairs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
