/* test_llamabench.c - llama-bench's -o json reduced (drivers/llamabench.c)
 * and the objective tune reads from it (tune/ebench.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "drivers/llamabench.h"
#include "tune/ebench.h"

/* two entries as llama-bench prints them (fields trimmed to a few) */
static const char real[] =
    "[\n  {\n    \"build_commit\": \"abc\",\n    \"n_threads\": 8,\n    \"type_k\": \"f16\",\n"
    "    \"flash_attn\": true,\n    \"n_prompt\": 512,\n    \"n_gen\": 0,\n    \"avg_ns\": 123,\n"
    "    \"avg_ts\": 2048.5,\n    \"stddev_ts\": 12.25,\n    \"samples_ns\": [ 1, 2 ],\n"
    "    \"samples_ts\": [ 2040.25, 2056.75 ]\n  },\n"
    "  {\n    \"build_commit\": \"abc\",\n    \"n_prompt\": 0,\n    \"n_gen\": 128,\n"
    "    \"avg_ts\": 51.5,\n    \"stddev_ts\": 0.5,\n    \"samples_ts\": [ 51, 52 ]\n  }\n]\n";

static void reduces_real_output(void **state)
{
    (void)state;
    buf out = BUF_INIT;
    size_t n;
    char err[256];
    assert_int_equal(lbench_reduce(real, strlen(real), &out, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(out.p, "[{\"n_prompt\":512,\"n_gen\":0,\"avg_ts\":2048.5,\"stddev_ts\":12.25,"
                               "\"samples_ts\":[2040.25,2056.75]},{\"n_prompt\":0,\"n_gen\":128,\"avg_ts\":51.5,"
                               "\"stddev_ts\":0.5,\"samples_ts\":[51,52]}]");
    cJSON *j = cJSON_Parse(out.p);
    double v;
    assert_int_equal(tune_ebench_objective(j, OBJ_ENGINE_TPS, &v, err, sizeof err), 0);
    assert_true(v == 51.5);
    assert_int_equal(tune_ebench_objective(j, OBJ_PREFILL, &v, err, sizeof err), 0);
    assert_true(v == 2048.5);
    cJSON_Delete(j);
    buf_release(&out);
}

static void rejects_bad_output(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"", "not a JSON array"},
        {"{\"avg_ts\": 1}", "found another JSON value"},
        {"[1]", "entry 0: not an object"},
        {"[{\"n_prompt\": 1, \"n_gen\": 0}]", "entry 0: expected numbers n_prompt, n_gen and avg_ts"},
        {"[{\"n_prompt\": 1, \"n_gen\": 0, \"avg_ts\": \"fast\"}]", "expected numbers"},
        {"[{\"n_prompt\": 1, \"n_gen\": 0, \"avg_ts\": 1, \"samples_ts\": 3}]", "samples_ts is not an array"},
        {"[{\"n_prompt\": 1, \"n_gen\": 0, \"avg_ts\": 1, \"samples_ts\": [\"x\"]}]", "not a number"},
        {"[{\"n_prompt\": 1, \"n_gen\": 0, \"avg_ts\": 1}, 7]", "entry 1: not an object"},
        {"[1, 2", "not a JSON array"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        buf out = BUF_INIT;
        size_t n = 9;
        char err[256] = "";
        assert_int_equal(lbench_reduce(cases[i].text, strlen(cases[i].text), &out, &n, err, sizeof err), -1);
        assert_int_equal(n, 0);
        assert_null(out.p ? strstr(out.p, "n_prompt") : NULL);
        if (!strstr(err, cases[i].want)) fail_msg("case %zu: '%s' lacks '%s'", i, err, cases[i].want);
        buf_release(&out);
    }
}

static void objective_missing(void **state)
{
    (void)state;
    cJSON *j = cJSON_Parse("[{\"n_prompt\":512,\"n_gen\":0,\"avg_ts\":100}]");
    double v = 0;
    char err[256];
    assert_int_equal(tune_ebench_objective(j, OBJ_ENGINE_TPS, &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "no tg (generation) test"));
    cJSON_Delete(j);
    j = cJSON_Parse("[]");
    assert_int_equal(tune_ebench_objective(j, OBJ_PREFILL, &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "no pp (prompt processing) test"));
    cJSON_Delete(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reduces_real_output),
        cmocka_unit_test(rejects_bad_output),
        cmocka_unit_test(objective_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
