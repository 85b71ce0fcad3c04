/* test_hash.c - SHA-256 against the FIPS vectors, and the config hash:
 * what changes it and what does not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drivers/hash.h"
#include "util/sha256.h"

static void fips_vectors(void **state)
{
    char out[65];
    sha256_hex("", 0, out);
    assert_string_equal(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha256_hex("abc", 3, out);
    assert_string_equal(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(two, strlen(two), out);
    assert_string_equal(out, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* one million 'a', fed in uneven pieces */
    sha256_ctx c;
    sha256_init(&c);
    char a[997];
    memset(a, 'a', sizeof a);
    size_t left = 1000000;
    while (left) {
        size_t n = left < sizeof a ? left : sizeof a;
        sha256_update(&c, a, n);
        left -= n;
    }
    uint8_t d[32];
    sha256_final(&c, d);
    char hex[65];
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void base(preset *p, settings *s)
{
    memset(p, 0, sizeof *p);
    settings_defaults(s);
    p->id = "m";
    p->driver = DRV_LLAMACPP;
    p->port = 7070;
    p->host = "127.0.0.1";
    p->model_path = "/nonexistent/model.gguf";
    p->context_size = 4096;
    p->llama.parallel = 1;
    p->llama.n_gpu_layers = -1;
    p->llama.threads = -1;
    p->llama.n_cpu_moe = -1;
    p->llama.spec_draft_n_max = -1;
    p->llama.models_max = -1;
    p->llama.flash_attn = TRI_UNSET;
    p->llama.jinja = TRI_UNSET;
    p->llama.fit = TRI_OFF;
    p->llama.metrics = true;
}

static void what_changes_the_hash(void **state)
{
    preset p;
    settings s;
    base(&p, &s);
    char h1[65], h2[65], err[256];
    buf canon = BUF_INIT;
    assert_int_equal(config_hash(&p, &s, h1, &canon, err, sizeof err), 0);
    assert_non_null(strstr(canon.p, "arg=\"-c\"\narg=\"4096\"\n"));
    assert_non_null(strstr(canon.p, "model_size=-1\n"));

    /* aliases (and so --alias) and the restart policy do not change it */
    strv al = STRV_INIT;
    strv_push(&al, "chat");
    p.aliases = al;
    p.restart.max_restarts = 9;
    assert_int_equal(config_hash(&p, &s, h2, NULL, err, sizeof err), 0);
    assert_string_equal(h1, h2);
    strv_release(&al);
    p.aliases = (strv)STRV_INIT;

    /* the context size does */
    p.context_size = 8192;
    assert_int_equal(config_hash(&p, &s, h2, NULL, err, sizeof err), 0);
    assert_string_not_equal(h1, h2);
    p.context_size = 4096;

    /* the environment does, whatever its order */
    kvlist env = {0};
    kvlist_set(&env, "B", "2", (srcpos){0});
    kvlist_set(&env, "A", "1", (srcpos){0});
    p.env = env;
    char h3[65], h4[65];
    assert_int_equal(config_hash(&p, &s, h3, NULL, err, sizeof err), 0);
    kvlist env2 = {0};
    kvlist_set(&env2, "A", "1", (srcpos){0});
    kvlist_set(&env2, "B", "2", (srcpos){0});
    p.env = env2;
    assert_int_equal(config_hash(&p, &s, h4, NULL, err, sizeof err), 0);
    assert_string_equal(h3, h4);
    assert_string_not_equal(h1, h3);
    kvlist_release(&env);
    kvlist_release(&env2);
    p.env = (kvlist){0};

    /* the model file's size and mtime do */
    char path[] = "/tmp/gpumod-hash-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "GGUF", 4), 4);
    close(fd);
    p.model_path = path;
    assert_int_equal(config_hash(&p, &s, h2, NULL, err, sizeof err), 0);
    FILE *f = fopen(path, "a");
    fputs("more", f);
    fclose(f);
    assert_int_equal(config_hash(&p, &s, h3, NULL, err, sizeof err), 0);
    assert_string_not_equal(h2, h3);
    unlink(path);
    buf_release(&canon);
    settings_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fips_vectors),
        cmocka_unit_test(what_changes_the_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
