/* test_redact.c - which names are secret, and that argv and env lose
 * their secret values and nothing else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(secret_names),   cmocka_unit_test(argv_values),
        cmocka_unit_test(argv_env_words), cmocka_unit_test(argv_edges),
        cmocka_unit_test(env_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
