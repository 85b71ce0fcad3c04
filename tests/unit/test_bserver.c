/* test_bserver.c - /metrics before and after a run (bserver.h): the
 * Prometheus text parser (names, labels with escaped quotes, backslashes
 * and newlines, NaN and infinities, timestamps, comments, CRLF) and its
 * errors (line number and what was expected, samples before the bad line
 * kept); the deltas of fakellm's llama-server /metrics and of a vLLM
 * scrape with speculative decoding (tests/fixtures/bench/metrics), per
 * position acceptance, and a counter reset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "bench/bserver.h"
#include "testenv.h"

static void parse_ok(bscrape *s, const char *text)
{
    char err[256] = "";
    if (bscrape_parse(s, text, strlen(text), err, sizeof err) != 0) fail_msg("parse: %s", err);
}

static void text_format(void **state)
{
    bscrape s;
    parse_ok(&s, "# HELP a_total A thing.\n"
                 "# TYPE a_total counter\n"
                 "a_total 3\n"
                 "\n"
                 "  # indented comment\n"
                 "b{x=\"1\",y=\"two\"} 2.5e3 1712345678000\n"
                 "b { x = \"3\" , } -Inf\n"
                 "c:sub_x NaN\n"
                 "d{esc=\"q\\\"b\\\\n\\n\"} +Inf\r\n"
                 "e 1e-3 -5\n"
                 "f{} 7");
    assert_int_equal(s.n, 7);
    assert_string_equal(s.s[0].name, "a_total");
    assert_string_equal(s.s[0].labels, "");
    assert_float_equal(s.s[0].value, 3, 0);
    assert_string_equal(s.s[1].labels, "x=\"1\",y=\"two\"");
    assert_float_equal(s.s[1].value, 2500, 0);
    assert_string_equal(s.s[2].labels, "x=\"3\""); /* canonical: no spaces, no trailing comma */
    assert_true(isinf(s.s[2].value) && s.s[2].value < 0);
    assert_string_equal(s.s[3].name, "c:sub_x");
    assert_true(isnan(s.s[3].value));
    assert_string_equal(s.s[4].labels, "esc=\"q\\\"b\\\\n\\n\"");
    assert_true(isinf(s.s[4].value) && s.s[4].value > 0);
    assert_float_equal(s.s[5].value, 0.001, 1e-15);
    assert_string_equal(s.s[6].name, "f");
    /* the label lookup unescapes */
    assert_float_equal(bscrape_label(&s, "d", "esc", "q\"b\\n\n"), INFINITY, 0);
    assert_true(isnan(bscrape_label(&s, "d", "esc", "q\"b\\n")));
    assert_float_equal(bscrape_label(&s, "b", "y", "two"), 2500, 0);
    assert_float_equal(bscrape_label(&s, "b", "x", "3"), -INFINITY, 0);
    assert_true(isnan(bscrape_label(&s, "b", "x", "4")));
    assert_true(isnan(bscrape_label(&s, "b", "z", "1")));
    assert_true(isinf(bscrape_sum(&s, "b")));
    assert_float_equal(bscrape_sum(&s, "a_total"), 3, 0);
    assert_true(isnan(bscrape_sum(&s, "nope")));
    bscrape_release(&s);
}

static void expect_error(const char *text, size_t kept, const char *msg)
{
    bscrape s;
    char err[256] = "";
    assert_int_equal(bscrape_parse(&s, text, strlen(text), err, sizeof err), -1);
    assert_string_equal(err, msg);
    assert_int_equal(s.n, kept);
    bscrape_release(&s);
}

static void errors(void **state)
{
    expect_error("a 1\nb 2\n{x=\"1\"} 3\nc 4\n", 2, "metrics line 3: expected a metric name");
    expect_error("a 1\nb\n", 1, "metrics line 2: expected a number after 'b', got ''");
    expect_error("b{x=\"1\"} twelve\n", 0, "metrics line 1: expected a number after 'b{x=\"1\"}', got 'twelve'");
    expect_error("a 1\nb{x=1} 2\n", 1, "metrics line 2: expected '\"' to open the value of label 'x' of 'b'");
    expect_error("b{x} 2\n", 0, "metrics line 1: expected '=' after label 'x' of 'b'");
    expect_error("b{x=\"1\" y=\"2\"} 2\n", 0, "metrics line 1: expected ',' or '}' after label 'x' of 'b'");
    expect_error("b{x=\"1\n", 0, "metrics line 1: expected '\"' to close the value of label 'x' of 'b'");
    expect_error("b{x=\"\\t\"} 1\n", 0, "metrics line 1: expected \\\\, \\\" or \\n in the value of label 'x' of 'b'");
    expect_error("b{x=\"1\",\n", 0, "metrics line 1: expected '}' to close the labels of 'b'");
    expect_error("b{1=\"1\"} 1\n", 0, "metrics line 1: expected a label name or '}' in 'b'");
    expect_error("a 1\n\n# c\nb 2 17x\n", 1,
                 "metrics line 4: expected an integer timestamp or the end of the line after the value of 'b', got '17x'");
    expect_error("b 2 3 4\n", 0,
                 "metrics line 1: expected an integer timestamp or the end of the line after the value of 'b', got '3 4'");
}

static bscrape load(const char *name)
{
    char *rel = xasprintf("tests/fixtures/bench/metrics/%s", name);
    char *path = src_path(rel);
    char *text = read_text(path);
    if (!text) fail_msg("cannot read %s", path);
    bscrape s;
    char err[256] = "";
    if (bscrape_parse(&s, text, strlen(text), err, sizeof err) != 0) fail_msg("%s: %s", name, err);
    free(text);
    free(path);
    free(rel);
    return s;
}

static void llamacpp_deltas(void **state)
{
    bscrape b = load("fakellm-llamacpp-before.prom"), a = load("fakellm-llamacpp-after.prom");
    assert_int_equal(a.n, 16);
    bserver_delta d;
    bserver_delta_compute(&b, &a, &d);
    assert_string_equal(d.flavor, "llamacpp");
    assert_false(d.reset);
    assert_float_equal(d.prompt_tokens, 1920, 1e-9);
    assert_float_equal(d.prompt_s, 0.48, 1e-9);
    assert_float_equal(d.predicted_tokens, 8192, 1e-9);
    assert_float_equal(d.predicted_s, 10.24, 1e-9);
    assert_float_equal(d.n_decode, 2048, 1e-9);
    assert_float_equal(d.prefill_tps, 4000, 1e-6);
    assert_float_equal(d.decode_tps, 800, 1e-6);
    assert_float_equal(d.tokens_per_decode, 4, 1e-9);
    assert_float_equal(d.busy_slots_per_decode, 3.5238095238095237, 1e-12);
    assert_float_equal(d.requests_deferred, 5, 0);
    assert_float_equal(d.requests_running, 3, 0);
    assert_true(isnan(d.requests_waiting));
    assert_true(isnan(d.kv_cache_usage));
    /* the draft counters read 0: no speculation */
    assert_false(d.spec);
    assert_true(isnan(d.acceptance_rate));
    assert_int_equal(d.n_pos, 0);
    bscrape_release(&a);
    bscrape_release(&b);
}

static void vllm_spec_deltas(void **state)
{
    bscrape b = load("vllm-spec-before.prom"), a = load("vllm-spec-after.prom");
    bserver_delta d;
    bserver_delta_compute(&b, &a, &d);
    assert_string_equal(d.flavor, "vllm");
    assert_false(d.reset);
    assert_float_equal(d.prompt_tokens, 6000, 1e-9);
    assert_float_equal(d.predicted_tokens, 12800, 1e-9);
    assert_float_equal(d.requests_success, 100, 1e-9); /* summed over finished_reason */
    assert_float_equal(d.requests_running, 4, 0);
    assert_float_equal(d.requests_waiting, 2, 0);
    assert_float_equal(d.kv_cache_usage, 0.1834, 1e-12);
    assert_true(isnan(d.prefill_tps)); /* vLLM has no seconds counters */
    assert_true(isnan(d.decode_tps));
    assert_true(d.spec);
    assert_float_equal(d.drafts, 4000, 1e-9);
    assert_float_equal(d.draft_tokens, 12000, 1e-9);
    assert_float_equal(d.accepted, 8400, 1e-9);
    assert_float_equal(d.acceptance_rate, 0.7, 1e-12);
    assert_float_equal(d.acceptance_length, 3.1, 1e-12);
    assert_int_equal(d.n_pos, 3);
    assert_float_equal(d.per_pos[0], 0.9, 1e-12);
    assert_float_equal(d.per_pos[1], 0.75, 1e-12);
    assert_float_equal(d.per_pos[2], 0.45, 1e-12);
    /* the sum over positions is the acceptance length minus one */
    assert_float_equal(d.per_pos[0] + d.per_pos[1] + d.per_pos[2], d.acceptance_length - 1, 1e-12);
    bscrape_release(&a);
    bscrape_release(&b);
}

static void counter_reset(void **state)
{
    /* the server restarted between the scrapes: counters went down */
    bscrape b = load("fakellm-llamacpp-after.prom"), a = load("fakellm-llamacpp-before.prom");
    bserver_delta d;
    bserver_delta_compute(&b, &a, &d);
    assert_string_equal(d.flavor, "llamacpp");
    assert_true(d.reset);
    assert_true(isnan(d.prompt_tokens));
    assert_true(isnan(d.decode_tps));
    assert_true(isnan(d.tokens_per_decode));
    assert_float_equal(d.requests_running, 0, 0); /* gauges still hold */
    bscrape_release(&a);
    bscrape_release(&b);
    /* one series of a labelled counter that went down is enough */
    bscrape vb = load("vllm-spec-before.prom"), va;
    parse_ok(&va, "vllm:prompt_tokens_total{engine=\"0\"} 7000\n"
                  "vllm:generation_tokens_total{engine=\"0\"} 20000\n"
                  "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 1\n");
    bserver_delta_compute(&vb, &va, &d);
    assert_true(d.reset);
    assert_true(isnan(d.prompt_tokens));
    assert_true(isnan(d.requests_success));
    assert_false(d.spec);
    bscrape_release(&va);
    bscrape_release(&vb);
}

static void unknown_and_absent(void **state)
{
    bscrape b, a;
    parse_ok(&b, "");
    parse_ok(&a, "process_cpu_seconds_total 3\n");
    bserver_delta d;
    bserver_delta_compute(&b, &a, &d);
    assert_string_equal(d.flavor, "unknown");
    assert_false(d.reset);
    assert_true(isnan(d.prompt_tokens));
    assert_false(d.spec);
    bscrape_release(&a);
    bscrape_release(&b);
    /* an older llama-server without the draft counters, series new since "before" */
    parse_ok(&b, "llamacpp:prompt_tokens_total 10\n");
    parse_ok(&a, "llamacpp:prompt_tokens_total 30\nllamacpp:prompt_seconds_total 0.5\n");
    bserver_delta_compute(&b, &a, &d);
    assert_float_equal(d.prompt_tokens, 20, 0);
    assert_float_equal(d.prompt_s, 0.5, 0);
    assert_float_equal(d.prefill_tps, 40, 1e-9);
    assert_true(isnan(d.predicted_tokens));
    assert_true(isnan(d.decode_tps));
    assert_false(d.spec);
    bscrape_release(&a);
    bscrape_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(text_format),
        cmocka_unit_test(errors),
        cmocka_unit_test(llamacpp_deltas),
        cmocka_unit_test(vllm_spec_deltas),
        cmocka_unit_test(counter_reset),
        cmocka_unit_test(unknown_and_absent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
