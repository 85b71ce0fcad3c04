/* test_redact.c - which names are secret, and that argv and env lose
 * their secret values and nothing else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/buf.h"
#include "util/redact.h"

static void make(strv *v, const char *const *words)
{
    for (size_t i = 0; words[i]; i++)
        strv_push(v, words[i]);
}

static void assert_words(const strv *got, const char *const *want)
{
    size_t n = 0;
    while (want[n])
        n++;
    buf g = BUF_INIT, w = BUF_INIT;
    for (size_t i = 0; i < got->n; i++)
        buf_printf(&g, "'%s' ", got->v[i]);
    for (size_t i = 0; i < n; i++)
        buf_printf(&w, "'%s' ", want[i]);
    assert_string_equal(g.p, w.p);
    assert_int_equal(got->n, n);
    buf_release(&g);
    buf_release(&w);
}

static void secret_names(void **state)
{
    (void)state;
    const char *yes[] = {"--api-key",
                         "api_key",
                         "HF_TOKEN",
                         "hf-token",
                         "--hf-token",
                         "OPENAI_API_KEY",
                         "GPUMOD_API_KEYS",
                         "AWS_SECRET_ACCESS_KEY",
                         "DB_PASSWORD",
                         "db_passwd",
                         "MyPassword",
                         "APIKEY",
                         "ACCESSTOKEN",
                         "--ssl-key-file",
                         "GOOGLE_APPLICATION_CREDENTIALS",
                         "HTTP_AUTH",
                         "Authorization",
                         "client.secret",
                         "x_Token",
                         NULL};
    const char *no[] = {"--tokenizer",
                        "--tokenizer-mode",
                        "--max-num-batched-tokens",
                        "--cache-type-k",
                        "--override-kv",
                        "PATH",
                        "HOME",
                        "--port",
                        "CUDA_VISIBLE_DEVICES",
                        "--keep",
                        "TOKENS",
                        "--author",
                        "",
                        "-",
                        "--",
                        "--models-preset",
                        "--keyboard",
                        NULL};
    for (size_t i = 0; yes[i]; i++)
        if (!redact_is_secret_name(yes[i])) fail_msg("'%s' should be secret", yes[i]);
    for (size_t i = 0; no[i]; i++)
        if (redact_is_secret_name(no[i])) fail_msg("'%s' should not be secret", no[i]);
    assert_false(redact_is_secret_name(NULL));
}

static void argv_values(void **state)
{
    (void)state;
    strv a = STRV_INIT;
    make(&a, (const char *const[]){"llama-server", "--api-key", "sk-123", "--port", "8080",
                                   "--api-key=sk-456", "--hf-token", "hf_x", "--tokenizer",
                                   "tok/name", "--max-num-batched-tokens", "8192", NULL});
    redact_argv(&a);
    assert_words(&a,
                 (const char *const[]){"llama-server", "--api-key", REDACTED, "--port", "8080",
                                       "--api-key=" REDACTED, "--hf-token", REDACTED, "--tokenizer",
                                       "tok/name", "--max-num-batched-tokens", "8192", NULL});
    strv_release(&a);
}

static void argv_env_words(void **state)
{
    (void)state;
    strv a = STRV_INIT;
    make(&a, (const char *const[]){"docker", "run", "-e", "HF_TOKEN=abc", "-e", "LANG=C", "-e",
                                   "HF_TOKEN", "--override-kv",
                                   "tokenizer.ggml.add_bos_token=bool:false", "img", NULL});
    redact_argv(&a);
    assert_words(&a, (const char *const[]){"docker", "run", "-e", "HF_TOKEN=" REDACTED, "-e",
                                           "LANG=C", "-e", "HF_TOKEN", "--override-kv",
                                           "tokenizer.ggml.add_bos_token=bool:false", "img", NULL});
    strv_release(&a);
}

/* A secret flag with no value, or followed by another long flag, takes
 * nothing with it. */
static void argv_edges(void **state)
{
    (void)state;
    strv a = STRV_INIT;
    make(&a, (const char *const[]){"TOKEN=x", "--api-key", "--port", "1", "--secret", NULL});
    redact_argv(&a);
    assert_words(&a,
                 (const char *const[]){"TOKEN=x", "--api-key", "--port", "1", "--secret", NULL});
    strv_release(&a);
    strv empty = STRV_INIT;
    redact_argv(&empty);
    assert_int_equal(empty.n, 0);
}

static void env_entries(void **state)
{
    (void)state;
    strv e = STRV_INIT;
    make(&e, (const char *const[]){"HF_TOKEN=hf_abc", "PATH=/usr/bin",
                                   "DB_PASSWORD=", "GGML_CUDA_NO_PINNED=1", "odd", NULL});
    redact_env(&e);
    assert_words(&e, (const char *const[]){"HF_TOKEN=" REDACTED, "PATH=/usr/bin",
                                           "DB_PASSWORD=" REDACTED, "GGML_CUDA_NO_PINNED=1", "odd",
                                           NULL});
    strv_release(&e);
}

static void text_is(const char *in, const char *want)
{
    size_t n;
    char *got = redact_text(in, strlen(in), &n);
    if (strcmp(got, want) != 0) fail_msg("redact_text(\"%s\")\n got  \"%s\"\n want \"%s\"", in, got, want);
    assert_int_equal(n, strlen(want));
    free(got);
}

/* Every shape the review found leaking through the old space-only split,
 * and the first word of every line is checked. */
static void text_shapes(void **state)
{
    (void)state;
    text_is("loading\nHF_TOKEN=hf_abc\nready", "loading\nHF_TOKEN=" REDACTED "\nready");
    text_is("HF_TOKEN=hf_abc", "HF_TOKEN=" REDACTED);
    text_is("--api-key\tsk-X --port 1", "--api-key\t" REDACTED " --port 1");
    text_is("args: --api-key=sk-X", "args: --api-key=" REDACTED);
    text_is("Authorization: Bearer sk-X", "Authorization: Bearer " REDACTED);
    text_is("hdr authorization:  bearer sk-X\r\n", "hdr authorization:  bearer " REDACTED "\r\n");
    text_is("got Bearer sk-X from x", "got Bearer " REDACTED " from x");
    text_is("kwargs {'api_key': 'sk-X', 'port': 8}", "kwargs {'api_key': '" REDACTED "', 'port': 8}");
    text_is("{\"api_key\": \"sk-X\"}", "{\"api_key\": \"" REDACTED "\"}");
    text_is("{\"api_key\":\"sk-X\",\"n\":1}", "{\"api_key\":\"" REDACTED "\",\"n\":1}");
    text_is("\"Authorization\": \"Bearer sk-X\"", "\"Authorization\": \"Bearer " REDACTED "\"");
    text_is("Namespace(api_key='sk-X', host=None)", "Namespace(api_key='" REDACTED "', host=None)");
    text_is("Namespace(api_key=['sk-X'], x=1)", "Namespace(api_key=['" REDACTED "'], x=1)");
    text_is("hf_token: hf_abc", "hf_token: " REDACTED);
    text_is("GPUMOD_API_KEYS=k1,k2", "GPUMOD_API_KEYS=" REDACTED);
    text_is("db_password=p4ss;", "db_password=" REDACTED ";");
}

/* Ordinary log text keeps every byte. */
static void text_untouched(void **state)
{
    (void)state;
    const char *keep[] = {
        "llama_model_loader: - kv  25: tokenizer.ggml.add_bos_token bool = true",
        "--override-kv tokenizer.ggml.add_bos_token=bool:false",
        "print_info: EOS token        = 151645 '<|im_end|>'",
        "--tokenizer tok/name --max-num-batched-tokens 8192",
        "listening on http://127.0.0.1:8080\n\tdone\x01\n",
        "--api-key --port 1", /* a flag is not a value */
        "Authorization:",
        "",
        "\n\n",
        "key=",
        NULL};
    for (size_t i = 0; keep[i]; i++)
        text_is(keep[i], keep[i]);
}

/* NUL bytes (a /proc cmdline) separate words and are kept; a secret never
 * spans lines. */
static void text_nul_and_lines(void **state)
{
    (void)state;
    const char in[] = "srv\0--api-key\0sk-X\0--port\0009\0";
    size_t n;
    char *got = redact_text(in, sizeof in - 1, &n);
    const char want[] = "srv\0--api-key\0" REDACTED "\0--port\0009\0";
    assert_int_equal(n, sizeof want - 1);
    assert_memory_equal(got, want, n);
    free(got);
    text_is("--api-key\nsk-X", "--api-key\nsk-X");
    got = redact_text("HF_TOKEN=abc", 5, NULL); /* only len bytes are read */
    assert_string_equal(got, "HF_TO");
    free(got);
}

/* The daemon's own log: redacted line by line first, then one line. */
static void log_line(void **state)
{
    (void)state;
    char *got = log_clean("tail:\nHF_TOKEN=hf_abc\n--api-key\tsk-X");
    assert_string_equal(got, "tail:\\x0aHF_TOKEN=" REDACTED "\\x0a--api-key\\x09" REDACTED);
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(secret_names),   cmocka_unit_test(argv_values),
        cmocka_unit_test(argv_env_words), cmocka_unit_test(argv_edges),
        cmocka_unit_test(env_entries),    cmocka_unit_test(text_shapes),
        cmocka_unit_test(text_untouched), cmocka_unit_test(text_nul_and_lines),
        cmocka_unit_test(log_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
