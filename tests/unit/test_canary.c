/* test_canary.c - the canary's pure rule (src/core/canary.c): the
 * request bodies, thinking stripped (the last </think> counts), the
 * expected text found without regard to case, empty and thinking-only
 * answers failing, a prompt with no expected text, and the embedding
 * rule (lengths, finite values, two inputs that must differ). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "core/canary.h"

static void bodies(void **state)
{
    buf b = BUF_INIT;
    canary_chat_body("Say \"hi\"", 0, &b);
    assert_string_equal(b.p, "{\"messages\":[{\"role\":\"user\",\"content\":\"Say \\\"hi\\\"\"}],\"max_tokens\":32,"
                             "\"temperature\":0,\"stream\":false,\"chat_template_kwargs\":{\"enable_thinking\":false}}");
    buf_release(&b);
    canary_chat_body("x", 100, &b);
    assert_non_null(strstr(b.p, "\"max_tokens\":100,"));
    buf_release(&b);
    canary_embed_body(&b);
    assert_string_equal(b.p,
                        "{\"input\":[\"The cat sat on the mat.\",\"Quarterly revenue rose by four percent.\"]}");
    buf_release(&b);
}

static void builtin_answers_pass(void **state)
{
    const char *answers[CANARY_BUILTIN_N] = {"42", "gpumod-canary-7f3a", "paris."};
    for (size_t i = 0; i < CANARY_BUILTIN_N; i++) {
        canary_verdict v;
        canary_judge_text(answers[i], canary_builtin[i].expect, &v);
        assert_true(v.ok);
    }
}

static void thinking_is_stripped(void **state)
{
    canary_verdict v;
    /* the right answer only inside the thinking: a failure */
    canary_judge_text("<think>17 + 25 = 42</think>\n43", "42", &v);
    assert_false(v.ok);
    assert_string_equal(v.sample, "43");
    assert_non_null(strstr(v.why, "expected '42' in the answer, got '43'"));
    /* the last </think> counts */
    canary_judge_text("<think>a</think> maybe 42 <think>b</think> 41", "42", &v);
    assert_false(v.ok);
    canary_judge_text("<think>hmm</think>\n\n  42", "42", &v);
    assert_true(v.ok);
    assert_string_equal(v.sample, "42");
    /* thinking and nothing after it */
    canary_judge_text("<think>42</think>  ", "42", &v);
    assert_false(v.ok);
    assert_string_equal(v.why, "the answer is empty once its thinking is stripped");
    assert_string_equal(canary_after_thinking("no tags"), "no tags");
}

static void empty_and_garbage_fail(void **state)
{
    canary_verdict v;
    canary_judge_text("", "Paris", &v);
    assert_false(v.ok);
    assert_string_equal(v.why, "the answer is empty");
    canary_judge_text(NULL, "Paris", &v);
    assert_false(v.ok);
    canary_judge_text("#%q)x!j,z", "Paris", &v);
    assert_false(v.ok);
    /* a long answer is cut in the sample, and newlines become spaces */
    char big[600];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    big[3] = '\n';
    canary_judge_text(big, "Paris", &v);
    assert_false(v.ok);
    assert_int_equal(strlen(v.sample), sizeof v.sample - 1);
    assert_string_equal(v.sample + strlen(v.sample) - 3, "...");
    assert_int_equal(v.sample[3], ' ');
}

static void no_expected_text(void **state)
{
    canary_verdict v;
    canary_judge_text("Hello there", NULL, &v);
    assert_true(v.ok);
    canary_judge_text("?!... ,", NULL, &v);
    assert_false(v.ok);
    assert_non_null(strstr(v.why, "no letter or digit"));
}

static void vectors(void **state)
{
    double a[3] = {0.1, 0.2, 0.3}, b[3] = {0.1, 0.2, 0.31}, z[3] = {0, 0, 0};
    canary_verdict v;
    canary_judge_vectors(a, 3, b, 3, &v);
    assert_true(v.ok);
    canary_judge_vectors(z, 3, z, 3, &v);
    assert_false(v.ok);
    assert_non_null(strstr(v.why, "the same embedding"));
    canary_judge_vectors(a, 3, b, 2, &v);
    assert_false(v.ok);
    assert_non_null(strstr(v.why, "differ in length"));
    canary_judge_vectors(a, 0, b, 0, &v);
    assert_false(v.ok);
    assert_non_null(strstr(v.why, "empty"));
    b[1] = NAN;
    canary_judge_vectors(a, 3, b, 3, &v);
    assert_false(v.ok);
    assert_non_null(strstr(v.why, "not finite"));
    b[1] = INFINITY;
    canary_judge_vectors(a, 3, b, 3, &v);
    assert_false(v.ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bodies),
        cmocka_unit_test(builtin_answers_pass),
        cmocka_unit_test(thinking_is_stripped),
        cmocka_unit_test(empty_and_garbage_fail),
        cmocka_unit_test(no_expected_text),
        cmocka_unit_test(vectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
