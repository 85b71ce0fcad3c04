/* test_bprompts.c - bench's prompts: exact-length synthesis against fake
 * tokenizers (convergence in a few calls), the approximate fallback, the
 * fixed-width prefixes, JSONL errors with file:line, request bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/cli.h"
#include "testenv.h"

typedef struct ftok {
    int calls;
    int bos;       /* tokens added in front */
    bool long2;    /* words of more than 5 letters are 2 tokens */
    bool fail;
} ftok;

/* words (runs of non-space), plus the "[00000000]" prefix as 3 tokens */
static int fake_tok(void *ud, const char *text, long *n, char *err, size_t errlen)
{
    ftok *f = ud;
    f->calls++;
    if (f->fail) {
        snprintf(err, errlen, "POST http://x/tokenize: HTTP 500");
        return -1;
    }
    long c = f->bos;
    const char *p = text;
    while (*p) {
        while (*p == ' ' || *p == '\n') p++;
        if (!*p) break;
        const char *s = p;
        while (*p && *p != ' ' && *p != '\n') p++;
        size_t len = (size_t)(p - s);
        if (s[0] == '[') c += 3;
        else c += (f->long2 && len > 5) ? 2 : 1;
    }
    *n = c;
    return 0;
}

static void exact_words(void **st)
{
    long targets[] = {1, 2, 7, 64, 500, 4096};
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        ftok f = {0, 1, false, false};
        long got = 0;
        bool exact = false;
        char err[256] = "";
        char *s = bprompt_synth("", targets[i], 42, fake_tok, &f, &got, &exact, err, sizeof err);
        assert_non_null(s);
        long check = 0;
        fake_tok(&f, s, &check, err, sizeof err);
        assert_int_equal(check, targets[i]);
        assert_int_equal(got, targets[i]);
        assert_true(exact);
        assert_true(f.calls <= 17); /* a few /tokenize calls, not one per word */
        free(s);
    }
}

static void exact_with_prefix_and_long_words(void **st)
{
    long targets[] = {16, 100, 333, 2000};
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        ftok f = {0, 1, true, false};
        long got = 0;
        bool exact = false;
        char err[256] = "";
        char pre[32];
        bprompt_prefix(pre, sizeof pre, 0);
        char *s = bprompt_synth(pre, targets[i], 7, fake_tok, &f, &got, &exact, err, sizeof err);
        assert_non_null(s);
        assert_int_equal(strncmp(s, "[00000000] ", 11), 0);
        long check = 0;
        fake_tok(&f, s, &check, err, sizeof err);
        assert_int_equal(check, got);
        /* 2-token words can step over n: never above it, at most 1 below */
        assert_true(got <= targets[i] && got >= targets[i] - 1);
        assert_int_equal(exact, got == targets[i]);
        assert_true(f.calls <= 30);
        free(s);
    }
}

static void deterministic_and_prefix_width(void **st)
{
    char *a = bprompt_words(5, 50), *b = bprompt_words(5, 50), *c = bprompt_words(6, 50), *d = bprompt_words(5, 60);
    assert_string_equal(a, b);
    assert_string_not_equal(a, c);
    assert_int_equal(strncmp(a, d, strlen(a)), 0); /* a deeper text extends a shallower one */
    free(a);
    free(b);
    free(c);
    free(d);
    char p1[32], p2[32];
    bprompt_prefix(p1, sizeof p1, 1);
    bprompt_prefix(p2, sizeof p2, 12345678);
    assert_string_equal(p1, "[00000001] ");
    assert_string_equal(p2, "[12345678] ");
}

static void tokenizer_failure_and_approximate(void **st)
{
    ftok f = {0, 0, false, true};
    long got = 0;
    bool exact = true;
    char err[256] = "";
    assert_null(bprompt_synth("", 100, 1, fake_tok, &f, &got, &exact, err, sizeof err));
    assert_string_equal(err, "POST http://x/tokenize: HTTP 500");
    char *s = bprompt_synth("", 100, 1, NULL, NULL, &got, &exact, err, sizeof err);
    assert_non_null(s);
    assert_false(exact);
    assert_int_equal(got, 100);
    assert_true(strlen(s) >= 400 && strlen(s) < 420);
    free(s);
}

static char *write_tmp(const char *text)
{
    char *path = xasprintf("/tmp/test_bprompts.%d.jsonl", (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void jsonl_good(void **st)
{
    char *path = write_tmp("{\"prompt\": \"hello there\"}\n"
                           "\n"
                           "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"user\", "
                           "\"content\": \"hi\"}], \"max_tokens\": 7}\n");
    bprompts p;
    char err[2048] = "";
    assert_int_equal(bprompts_load_jsonl(&p, path, err, sizeof err), 0);
    assert_int_equal(p.n, 2);
    assert_string_equal(p.v[0].text, "hello there");
    assert_int_equal(p.v[0].max_tokens, -1);
    assert_non_null(p.v[1].messages);
    assert_int_equal(p.v[1].max_tokens, 7);
    bprompts_release(&p);
    unlink(path);
    free(path);
}

static void jsonl_errors(void **st)
{
    char *path = write_tmp("{\"prompt\": \"ok\"}\n"
                           "{\"prompt\": \"unterminated}\n"
                           "[1, 2]\n"
                           "{\"text\": \"x\"}\n"
                           "{\"prompt\": 5}\n"
                           "{\"prompt\": \"a\", \"max_tokens\": 0}\n"
                           "{\"messages\": []}\n"
                           "{\"messages\": [{\"role\": \"user\"}]}\n"
                           "{\"prompt\": \"a\", \"messages\": [{\"role\": \"user\", \"content\": \"b\"}]}\n");
    bprompts p;
    char err[4096] = "";
    assert_int_equal(bprompts_load_jsonl(&p, path, err, sizeof err), -1);
    char want[512];
    snprintf(want, sizeof want, "%s:2: not JSON", path);
    assert_non_null(strstr(err, want));
    snprintf(want, sizeof want, "%s:3: expected an object {\"prompt\": ...} or {\"messages\": [...]}", path);
    assert_non_null(strstr(err, want));
    snprintf(want, sizeof want, "%s:4: expected \"prompt\" (a string) or \"messages\" (an array)", path);
    assert_non_null(strstr(err, want));
    snprintf(want, sizeof want, "%s:5: \"prompt\" must be a string", path);
    assert_non_null(strstr(err, want));
    snprintf(want, sizeof want, "%s:6: \"max_tokens\" must be a positive integer", path);
    assert_non_null(strstr(err, want));
    snprintf(want, sizeof want, "%s:7: \"messages\" must be a non-empty array", path);
    assert_non_null(strstr(err, want));
    snprintf(want, sizeof want, "%s:8: messages[0] must have \"content\"", path);
    assert_non_null(strstr(err, want));
    snprintf(want, sizeof want, "%s:9: has both \"prompt\" and \"messages\"", path);
    assert_non_null(strstr(err, want));
    snprintf(want, sizeof want, "%s:1:", path);
    assert_null(strstr(err, want)); /* the good line is not blamed */
    assert_int_equal(p.n, 0);
    unlink(path);
    free(path);

    assert_int_equal(bprompts_load_jsonl(&p, "/nonexistent/p.jsonl", err, sizeof err), -1);
    assert_string_equal(err, "--prompts '/nonexistent/p.jsonl': cannot open: No such file or directory");
    path = write_tmp("\n\n");
    assert_int_equal(bprompts_load_jsonl(&p, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "no prompt in the file"));
    unlink(path);
    free(path);
}

static void bodies(void **st)
{
    bbody_opts o = {"m1", true, 16, true, -1};
    bprompt p = {"tell me", NULL, -1};
    char *s = bbody_json(&o, "[00000003] ", &p);
    cJSON *j = cJSON_Parse(s);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "model")->valuestring, "m1");
    cJSON *m0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "messages"), 0);
    assert_string_equal(cJSON_GetObjectItem(m0, "role")->valuestring, "user");
    assert_string_equal(cJSON_GetObjectItem(m0, "content")->valuestring, "[00000003] tell me");
    assert_int_equal(cJSON_GetObjectItem(j, "max_tokens")->valueint, 16);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "stream")));
    cJSON *so = cJSON_GetObjectItem(j, "stream_options");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(so, "include_usage")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(so, "continuous_usage_stats")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "ignore_eos")));
    assert_int_equal(cJSON_GetObjectItem(j, "temperature")->valueint, 0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "timings_per_token")));
    assert_null(cJSON_GetObjectItem(j, "cache_prompt"));
    cJSON_Delete(j);
    free(s);

    /* completions, vLLM (no timings_per_token), a prompt's own max_tokens, cache_prompt */
    bbody_opts o2 = {"m2", false, 16, false, 1};
    bprompt p2 = {"abc", NULL, 5};
    s = bbody_json(&o2, "", &p2);
    j = cJSON_Parse(s);
    assert_string_equal(cJSON_GetObjectItem(j, "prompt")->valuestring, "abc");
    assert_null(cJSON_GetObjectItem(j, "messages"));
    assert_int_equal(cJSON_GetObjectItem(j, "max_tokens")->valueint, 5);
    assert_null(cJSON_GetObjectItem(j, "timings_per_token"));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "cache_prompt")));
    cJSON_Delete(j);
    free(s);

    /* messages: the prefix goes in front of the first message's content */
    bprompt p3 = {NULL, cJSON_Parse("[{\"role\":\"system\",\"content\":\"sys\"},{\"role\":\"user\",\"content\":\"u\"}]"), -1};
    s = bbody_json(&o, "[00000009] ", &p3);
    j = cJSON_Parse(s);
    cJSON *ms = cJSON_GetObjectItem(j, "messages");
    assert_int_equal(cJSON_GetArraySize(ms), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ms, 0), "content")->valuestring, "[00000009] sys");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ms, 1), "content")->valuestring, "u");
    cJSON_Delete(j);
    free(s);
    cJSON_Delete(p3.messages);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exact_words),
        cmocka_unit_test(exact_with_prefix_and_long_words),
        cmocka_unit_test(deterministic_and_prefix_width),
        cmocka_unit_test(tokenizer_failure_and_approximate),
        cmocka_unit_test(jsonl_good),
        cmocka_unit_test(jsonl_errors),
        cmocka_unit_test(bodies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
