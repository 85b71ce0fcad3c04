/* test_keepalive.c - Ollama's keep_alive (numbers, Go durations, the
 * errors), finding and cutting the member out of a body, and the engines'
 * /metrics activity counters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "router/keepalive.h"

static int64_t dur(const char *s)
{
    int64_t ms = -99;
    char err[400];
    int rc = ka_parse(s, strlen(s), true, &ms, err, sizeof err);
    return rc ? -99 : ms;
}

static int64_t num(const char *s)
{
    int64_t ms = -99;
    char err[400];
    int rc = ka_parse(s, strlen(s), false, &ms, err, sizeof err);
    return rc ? -99 : ms;
}

static void values(void **st)
{
    (void)st;
    assert_int_equal(dur("5m"), 300000);
    assert_int_equal(dur("1h30m"), 5400000);
    assert_int_equal(dur("10s"), 10000);
    assert_int_equal(dur("300ms"), 300);
    assert_int_equal(dur("1.5h"), 5400000);
    assert_int_equal(dur("0"), 0);
    assert_int_equal(dur("0s"), 0);
    assert_int_equal(dur("-1m"), KA_KEEP);
    assert_int_equal(dur("-1"), -99); /* Go: a number string needs a unit */
    assert_int_equal(dur("10us"), 1); /* under 1 ms: 1 ms */
    assert_int_equal(dur("\xc2\xb5s"), -99);
    assert_int_equal(dur("2\xc2\xb5s"), 1);
    assert_int_equal(dur("300"), -99);
    assert_int_equal(dur("5x"), -99);
    assert_int_equal(dur(""), -99);
    assert_int_equal(dur("m"), -99);
    assert_int_equal(dur("1000000000h"), -99); /* past 100 years */
    assert_int_equal(num("0"), 0);
    assert_int_equal(num("60"), 60000);
    assert_int_equal(num("0.25"), 250);
    assert_int_equal(num("-1"), KA_KEEP);
    assert_int_equal(num("1e3"), 1000000);
    char err[400];
    int64_t ms;
    assert_int_equal(ka_parse("5x", 2, true, &ms, err, sizeof err), -1);
    assert_non_null(strstr(err, "keep_alive \"5x\""));
    assert_non_null(strstr(err, "\"5m\""));
    assert_int_equal(ka_parse("300", 3, true, &ms, err, sizeof err), -1);
    assert_non_null(strstr(err, "needs a unit"));
}

/* The body with the member cut out. */
static void cut(const char *body, const char *want, int64_t want_ms)
{
    ka_member m;
    char err[400];
    assert_int_equal(ka_find(body, strlen(body), &m, err, sizeof err), 0);
    assert_true(m.present);
    if (want_ms != -99) {
        assert_true(m.found);
        assert_int_equal(m.ms, want_ms);
    }
    char out[512];
    size_t n = strlen(body);
    snprintf(out, sizeof out, "%.*s%.*s", (int)m.cut_start, body, (int)(n - m.cut_end),
             body + m.cut_end);
    assert_string_equal(out, want);
}

static void members(void **st)
{
    (void)st;
    cut("{\"model\":\"a\",\"keep_alive\":\"5m\"}", "{\"model\":\"a\"}", 300000);
    cut("{\"keep_alive\":0,\"model\":\"a\"}", "{\"model\":\"a\"}", 0);
    cut("{ \"model\" : \"a\" , \"keep_alive\" : -1 , \"stream\" : true }",
        "{ \"model\" : \"a\" , \"stream\" : true }", KA_KEEP);
    cut("{\"model\":\"a\",\"messages\":[{\"keep_alive\":1}],\"keep_alive\":\"10s\"}",
        "{\"model\":\"a\",\"messages\":[{\"keep_alive\":1}]}", 10000);
    cut("{\"model\":\"a\",\"keep\\u005falive\":\"1h\",\"x\":{\"y\":\"}\"}}",
        "{\"model\":\"a\",\"x\":{\"y\":\"}\"}}", 3600000);
    cut("{\"keep_alive\":null,\"model\":\"a\"}", "{\"model\":\"a\"}", -99);
    ka_member m;
    char err[400];
    const char *none =
        "{\"model\":\"a\",\"options\":{\"keep_alive\":\"bad\"},\"s\":\"keep_alive\"}";
    assert_int_equal(ka_find(none, strlen(none), &m, err, sizeof err), 0);
    assert_false(m.present);
    assert_false(m.found);
    const char *bad[] = {"{\"model\":\"a\",\"keep_alive\":true}",
                         "{\"model\":\"a\",\"keep_alive\":{}}",
                         "{\"model\":\"a\",\"keep_alive\":\"soon\"}",
                         "{\"model\":\"a\",\"keep_alive\":1,\"keep_alive\":2}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(ka_find(bad[i], strlen(bad[i]), &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "twice"));
}

static void activity(void **st)
{
    (void)st;
    const char *vllm =
        "# HELP vllm:num_requests_running x\n"
        "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 2\n"
        "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"a}b\"} 3\n"
        "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"m\"} 4\n"
        "vllm:request_success_created{engine=\"0\"} 17000\n"
        "vllm:prompt_tokens_total{engine=\"0\"} 10\n";
    engine_activity a;
    engine_activity_parse(vllm, strlen(vllm), &a);
    assert_int_equal(a.n, 4);
    assert_true(a.total == 17.0);
    assert_true(a.busy == 2.0);
    const char *llama =
        "llamacpp:n_decode_total 5\nllamacpp:requests_processing 0\nllamacpp:requests_deferred 1\n"
        "llamacpp:tokens_predicted_total 7";
    engine_activity_parse(llama, strlen(llama), &a);
    assert_int_equal(a.n, 4);
    assert_true(a.total == 12.0);
    assert_true(a.busy == 1.0);
    engine_activity_parse("other_total 5\n", 14, &a);
    assert_int_equal(a.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(values),
        cmocka_unit_test(members),
        cmocka_unit_test(activity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
