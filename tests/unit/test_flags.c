/* test_flags.c - flag discovery against llama-server b10587's real --help
 * (tests/fixtures/llama-server-help.txt), argparse- and click-style help
 * texts, the unknown-flag report, the argv the llamacpp driver builds,
 * and the help cache: a fake binary (a shell script that cats the
 * fixture and appends to a counter file) proves a cached binary is not
 * run again and a changed one is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drivers/driver.h"
#include "drivers/flags.h"
#include "util/buf.h"

#define W(...) ((const char *const[]){__VA_ARGS__, NULL})

static char *fixture_path(void)
{
    const char *src = getenv("GPUMOD_SRC");
    return xasprintf("%s/tests/fixtures/llama-server-help.txt", src ? src : ".");
}

static void slurp(const char *path, buf *b)
{
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("cannot open %s (run from the repository root or set GPUMOD_SRC)", path);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_add(b, chunk, n);
    fclose(f);
}

static void load_fixture(flagset *fs)
{
    char *path = fixture_path();
    buf b = BUF_INIT;
    slurp(path, &b);
    flags_parse(b.p, fs);
    buf_release(&b);
    free(path);
}

static void assert_words(const strv *got, const char *const *want)
{
    buf g = BUF_INIT, w = BUF_INIT;
    size_t n = 0;
    for (size_t i = 0; i < got->n; i++)
        buf_printf(&g, "'%s' ", got->v[i]);
    for (; want[n]; n++)
        buf_printf(&w, "'%s' ", want[n]);
    assert_string_equal(g.p, w.p);
    assert_int_equal(got->n, n);
    buf_release(&g);
    buf_release(&w);
}

static void must_know(const flagset *fs, const char *const *flags)
{
    for (size_t i = 0; flags[i]; i++)
        if (strv_find(&fs->known, flags[i]) < 0) fail_msg("'%s' should be known", flags[i]);
}

static void must_not_know(const flagset *fs, const char *const *flags)
{
    for (size_t i = 0; flags[i]; i++)
        if (strv_find(&fs->known, flags[i]) >= 0) fail_msg("'%s' should not be known", flags[i]);
}

/* ---- parsing ---- */

static void parse_llama_server(void **state)
{
    (void)state;
    flagset fs = FLAGSET_INIT;
    load_fixture(&fs);
    must_know(&fs,
              W("-h", "--help", "--usage", "--version", "-t", "--threads", "-c", "--ctx-size",
                "-fa", "--flash-attn", "-ngl", "--gpu-layers", "--n-gpu-layers", "-fit", "--fit",
                "-fitt", "--fit-target", "--jinja", "--no-jinja", "-kvo", "--kv-offload", "-nkvo",
                "--no-kv-offload", "--repack", "-nr", "--no-repack", "--cache-type-k", "-ctk",
                "--cache-type-v", "--n-cpu-moe", "-ncmoe", "--tensor-split", "-ts", "--override-kv",
                "--spec-type", "--model-draft", "-md", "--spec-draft-n-max", "--alias", "-a",
                "--parallel", "-np", "--metrics", "--models-dir", "--models-max", "--models-preset",
                "--models-autoload", "--no-models-autoload", "--chat-template-kwargs", "--host",
                "--port", "-m", "--model", "--spec-default", "-hfd", "-hfrd", "--hf-repo-draft",
                "--rope-scaling"));
    /* ruler lines, metavars, choices and flags quoted in descriptions are
     * not options */
    must_not_know(&fs, W("-----", "--draft-max", "--draft", "--draft-n", "--draft-min",
                         "--spec-ngram-size-n", "--spec-ngram-*-size-n", "-1", "N", "{none",
                         "--sleep-level"));
    for (const char *const *r =
             W("--draft", "--draft-n", "--draft-max", "--draft-min", "--draft-n-min",
               "--spec-ngram-size-n", "--spec-ngram-size-m", "--spec-ngram-min-hits");
         *r; r++)
        if (strv_find(&fs.removed, *r) < 0) fail_msg("'%s' should be removed", *r);
    assert_int_equal(strv_find(&fs.removed, "--spec-draft-n-max"), -1);
    assert_true(fs.known.n > 350);
    for (size_t i = 0; i < fs.known.n; i++)
        assert_true(fs.known.v[i][0] == '-');
    flagset_release(&fs);
}

static void parse_argparse_and_click(void **state)
{
    (void)state;
    const char *argparse =
        "usage: vllm serve [model_tag] [options]\n"
        "\n"
        "options:\n"
        "  -h, --help            show this help message and exit\n"
        "  --host HOST           Host name. (default: None)\n"
        "  --dtype {auto,bfloat16,float16}\n"
        "                        Data type. Use --kv-cache-dtype for the cache.\n"
        "  -tp TENSOR_PARALLEL_SIZE, --tensor-parallel-size TENSOR_PARALLEL_SIZE\n"
        "                        Number of tensor parallel groups.\n"
        "  --enable-sleep-mode, --no-enable-sleep-mode\n"
        "                        Enable the sleep mode. (default: False)\n"
        "  --max-model-len=MAX_MODEL_LEN\n"
        "  --old-flag N          Old.\n"
        "                        This argument has been removed; use --new-flag.\n"
        "  - a bullet that is not an option\n"
        "ModelConfig:\n"
        "  --runner {auto,generate,pooling,draft}\n";
    flagset fs = FLAGSET_INIT;
    flags_parse(argparse, &fs);
    assert_words(&fs.known,
                 W("-h", "--help", "--host", "--dtype", "-tp", "--tensor-parallel-size",
                   "--enable-sleep-mode", "--no-enable-sleep-mode", "--max-model-len", "--runner"));
    assert_words(&fs.removed, W("--old-flag"));
    flagset_release(&fs);

    const char *click = "Usage: uvicorn [OPTIONS] APP\n"
                        "\n"
                        "Options:\n"
                        "  --host TEXT                     Bind socket to this host.  [default:\n"
                        "                                  127.0.0.1]\n"
                        "  --port INTEGER                  Bind socket to this port.\n"
                        "  --use-colors / --no-use-colors  Enable/Disable colorized logging.\n"
                        "  --workers INTEGER               Number of worker processes.\n"
                        "  --help                          Show this message and exit.";
    flags_parse(click, &fs);
    assert_words(&fs.known,
                 W("--host", "--port", "--use-colors", "--no-use-colors", "--workers", "--help"));
    flagset_release(&fs);

    flags_parse("", &fs);
    assert_int_equal(fs.known.n + fs.removed.n, 0);
    flags_parse("no options here\n\tat all\n", &fs);
    assert_int_equal(fs.known.n + fs.removed.n, 0);
    flagset_release(&fs);
}

/* ---- the report ---- */

static void unknown_flags(void **state)
{
    (void)state;
    flagset fs = FLAGSET_INIT;
    load_fixture(&fs);
    strv argv = STRV_INIT, unknown = STRV_INIT, removed = STRV_INIT;
    const char *const words[] = {"/usr/bin/llama-server",
                                 "-ngl",
                                 "-1",
                                 "--ctx-size=8192",
                                 "--bogus",
                                 "1",
                                 "--draft-max",
                                 "16",
                                 "--yarn-ext-factor",
                                 "-0.5",
                                 "--bogus=2",
                                 "-",
                                 "--chat-template-kwargs",
                                 "{\"a\":1}",
                                 "-Z",
                                 "--",
                                 "--after-double-dash",
                                 NULL};
    for (size_t i = 0; words[i]; i++)
        strv_push(&argv, words[i]);
    flags_unknown(&fs, &argv, &unknown, &removed);
    assert_words(&unknown, W("--bogus", "-Z"));
    assert_words(&removed, W("--draft-max"));
    strv_release(&unknown);
    strv_release(&removed);
    /* without a removed list, removed flags are simply unknown */
    flags_unknown(&fs, &argv, &unknown, NULL);
    assert_words(&unknown, W("--bogus", "--draft-max", "-Z"));
    strv_release(&unknown);
    /* argv[0] is never checked */
    strv_release(&argv);
    strv_push(&argv, "--not-checked");
    flags_unknown(&fs, &argv, &unknown, &removed);
    assert_int_equal(unknown.n + removed.n, 0);
    strv_release(&argv);
    flagset_release(&fs);
}

static void preset_base(preset *p, const char *id)
{
    memset(p, 0, sizeof *p);
    p->id = (char *)id;
    p->driver = DRV_LLAMACPP;
    p->port = 7070;
    p->host = (char *)"127.0.0.1";
    p->context_size = 4096;
    p->llama.n_gpu_layers = -1;
    p->llama.parallel = 1;
    p->llama.threads = -1;
    p->llama.n_cpu_moe = -1;
    p->llama.flash_attn = TRI_ON;
    p->llama.jinja = TRI_OFF;
    p->llama.metrics = true;
    p->llama.fit = TRI_OFF;
    p->llama.spec_draft_n_max = -1;
    p->llama.models_max = -1;
}

/* Every flag the llamacpp driver can emit exists in llama-server b10587. */
static void driver_argv_is_known(void **state)
{
    (void)state;
    flagset fs = FLAGSET_INIT;
    load_fixture(&fs);
    settings s;
    memset(&s, 0, sizeof s);
    s.driver_binary[DRV_LLAMACPP] = (char *)"llama-server";

    preset p;
    preset_base(&p, "qwen3");
    p.model_path = (char *)"/m/q.gguf";
    strv_push(&p.aliases, "q");
    strv_push(&p.devices, "0");
    strv_push(&p.devices, "1");
    p.llama.threads = 8;
    p.llama.n_cpu_moe = 2;
    p.llama.cache_type_k = (char *)"q8_0";
    p.llama.cache_type_v = (char *)"q8_0";
    p.llama.chat_template_kwargs = (char *)"{}";
    p.llama.override_kv = (char *)"a=int:1";
    p.llama.spec_type = (char *)"draft-simple";
    p.llama.model_draft = (char *)"/m/d.gguf";
    p.llama.spec_draft_n_max = 8;
    launch l = LAUNCH_INIT;
    char err[256];
    strv unknown = STRV_INIT, removed = STRV_INIT;
    assert_int_equal(driver_launch(&p, &s, &l, err, sizeof err), 0);
    assert_true(l.argv.n > 40);
    flags_unknown(&fs, &l.argv, &unknown, &removed);
    assert_words(&unknown, W(NULL));
    assert_words(&removed, W(NULL));
    launch_release(&l);

    /* router mode, and the other spellings of the tri-state flags */
    p.model_path = NULL;
    p.llama.models_dir = (char *)"/m";
    p.llama.models_max = 1;
    p.llama.no_models_autoload = true;
    p.llama.models_preset = (char *)"/m/p.ini";
    p.llama.jinja = TRI_ON;
    p.llama.fit = TRI_ON;
    p.llama.n_gpu_layers = 20;
    strv_push(&p.args, "--draft-max"); /* a user arg from an old preset */
    strv_push(&p.args, "4");
    assert_int_equal(driver_launch(&p, &s, &l, err, sizeof err), 0);
    flags_unknown(&fs, &l.argv, &unknown, &removed);
    assert_words(&unknown, W(NULL));
    assert_words(&removed, W("--draft-max"));
    launch_release(&l);
    strv_release(&removed);
    strv_release(&p.aliases);
    strv_release(&p.devices);
    strv_release(&p.args);
    flagset_release(&fs);
}

/* ---- the cache, with a fake binary ---- */

typedef struct fake {
    char dir[64];
    char *bin, *counter, *cache;
} fake;

static void write_text(const char *path, const char *text, mode_t perm)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, perm);
}

/* body with @COUNTER@ and @FIXTURE@ filled in */
static char *fill(const char *body, const char *counter, const char *fixture)
{
    buf b = BUF_INIT;
    for (const char *c = body; *c;) {
        if (!strncmp(c, "@COUNTER@", 9)) {
            buf_adds(&b, counter);
            c += 9;
        } else if (!strncmp(c, "@FIXTURE@", 9)) {
            buf_adds(&b, fixture);
            c += 9;
        } else {
            buf_addc(&b, *c++);
        }
    }
    return buf_detach(&b);
}

static void fake_make(fake *f, const char *body)
{
    snprintf(f->dir, sizeof f->dir, "/tmp/gpumod-flags-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    f->bin = xasprintf("%s/fake-llama-server", f->dir);
    f->counter = xasprintf("%s/runs", f->dir);
    f->cache = xasprintf("%s/state/cache", f->dir); /* does not exist yet */
    char *fx = fixture_path();
    char *script = fill(body, f->counter, fx);
    write_text(f->bin, script, 0755);
    free(script);
    free(fx);
}

static int runs(const fake *f)
{
    FILE *fp = fopen(f->counter, "r");
    if (!fp) return 0;
    int n = 0, c;
    while ((c = fgetc(fp)) != EOF)
        n += c == '\n';
    fclose(fp);
    return n;
}

static void fake_done(fake *f)
{
    char *cmd = xasprintf("rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(f->bin);
    free(f->counter);
    free(f->cache);
}

#define CAT_SCRIPT "#!/bin/sh\necho \"$*\" >> '@COUNTER@'\ncat '@FIXTURE@'\n"

static void cache_hits_and_misses(void **state)
{
    (void)state;
    fake f;
    fake_make(&f, CAT_SCRIPT);
    flags_query q = {.binary = f.bin, .cache_dir = f.cache};
    buf text = BUF_INIT;
    bool cached = true;
    char err[512] = "";
    struct timespec t1[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
    struct timespec t2[2] = {{.tv_sec = 1100000000}, {.tv_sec = 1100000000}};
    assert_int_equal(utimensat(AT_FDCWD, f.bin, t1, 0), 0);

    assert_int_equal(flags_help(&q, &text, &cached, err, sizeof err), 0);
    assert_false(cached);
    assert_int_equal(runs(&f), 1);
    char *fx = fixture_path();
    buf want = BUF_INIT;
    slurp(fx, &want);
    free(fx);
    assert_string_equal(text.p, want.p);

    /* second time: from the cache, the binary is not run */
    buf_clear(&text);
    assert_int_equal(flags_help(&q, &text, &cached, err, sizeof err), 0);
    assert_true(cached);
    assert_int_equal(runs(&f), 1);
    assert_string_equal(text.p, want.p);

    strv argv = STRV_INIT, unknown = STRV_INIT;
    strv_push(&argv, f.bin);
    strv_push(&argv, "-ngl");
    strv_push(&argv, "all");
    strv_push(&argv, "--nope");
    assert_int_equal(flags_check(&q, &argv, &unknown, NULL, err, sizeof err), 0);
    assert_words(&unknown, W("--nope"));
    assert_int_equal(runs(&f), 1);
    strv_release(&unknown);

    /* a rebuilt binary (new mtime, same size) is read again, once */
    assert_int_equal(utimensat(AT_FDCWD, f.bin, t2, 0), 0);
    buf_clear(&text);
    assert_int_equal(flags_help(&q, &text, &cached, err, sizeof err), 0);
    assert_false(cached);
    assert_int_equal(runs(&f), 2);
    assert_int_equal(flags_help(&q, &text, &cached, err, sizeof err), 0);
    assert_true(cached);
    assert_int_equal(runs(&f), 2);

    /* so is one whose size changed with the same mtime */
    FILE *fp = fopen(f.bin, "a");
    fputs("# rebuilt\n", fp);
    fclose(fp);
    assert_int_equal(utimensat(AT_FDCWD, f.bin, t2, 0), 0);
    assert_int_equal(flags_help(&q, &text, &cached, err, sizeof err), 0);
    assert_false(cached);
    assert_int_equal(runs(&f), 3);

    /* other help arguments are another cache entry, passed to the binary */
    q.help_args = W("serve", "--help=all");
    assert_int_equal(flags_help(&q, &text, &cached, err, sizeof err), 0);
    assert_false(cached);
    assert_int_equal(runs(&f), 4);
    assert_int_equal(flags_help(&q, &text, &cached, err, sizeof err), 0);
    assert_true(cached);
    assert_int_equal(runs(&f), 4);

    /* a damaged cache file (as long as a good one) is a miss, not someone
     * else's flags */
    char *cmd = xasprintf("for f in '%s'/help-*.txt; do head -c 65536 /dev/zero | tr '\\0' x "
                          "> \"$f\"; done",
                          f.cache);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    assert_int_equal(flags_help(&q, &text, &cached, err, sizeof err), 0);
    assert_false(cached);
    assert_int_equal(runs(&f), 5);

    /* no cache dir: always run */
    q.cache_dir = NULL;
    assert_int_equal(flags_help(&q, &text, &cached, err, sizeof err), 0);
    assert_int_equal(flags_help(&q, &text, &cached, err, sizeof err), 0);
    assert_false(cached);
    assert_int_equal(runs(&f), 7);

    /* the arguments the script saw */
    FILE *c = fopen(f.counter, "r");
    char line[128];
    assert_non_null(fgets(line, sizeof line, c));
    assert_string_equal(line, "--help\n");
    fclose(c);

    strv_release(&argv);
    buf_release(&want);
    buf_release(&text);
    fake_done(&f);
}

/* A name without '/' is found through PATH, and the cache is keyed by the
 * file it resolves to. */
static void binary_from_path(void **state)
{
    (void)state;
    fake f;
    fake_make(&f, CAT_SCRIPT);
    const char *old = getenv("PATH");
    char *saved = xstrdup(old ? old : "/usr/bin:/bin");
    char *path = xasprintf("%s:%s", f.dir, saved);
    setenv("PATH", path, 1);
    flags_query q = {.binary = "fake-llama-server", .cache_dir = f.cache};
    strv argv = STRV_INIT, unknown = STRV_INIT;
    strv_push(&argv, "fake-llama-server");
    strv_push(&argv, "--metrics");
    char err[512];
    int rc = flags_check(&q, &argv, &unknown, NULL, err, sizeof err);
    q.binary = f.bin;
    int rc2 = flags_check(&q, &argv, &unknown, NULL, err, sizeof err);
    setenv("PATH", saved, 1);
    assert_int_equal(rc, 0);
    assert_int_equal(rc2, 0);
    assert_int_equal(unknown.n, 0);
    assert_int_equal(runs(&f), 1);
    strv_release(&argv);
    free(path);
    free(saved);
    fake_done(&f);
}

static void help_errors(void **state)
{
    (void)state;
    char err[512];
    buf text = BUF_INIT;
    flags_query q = {.binary = "gpumod-no-such-llama-server"};
    assert_int_equal(flags_help(&q, &text, NULL, err, sizeof err), -1);
    assert_string_equal(err, "cannot list the flags of 'gpumod-no-such-llama-server': not found");

    fake f;
    fake_make(&f, "#!/bin/sh\necho x >> '@COUNTER@'\necho 'usage: x'; exit 3\n");
    q.binary = f.bin;
    q.cache_dir = f.cache;
    assert_int_equal(flags_help(&q, &text, NULL, err, sizeof err), -1);
    char *want = xasprintf("cannot list the flags of '%s' (%s --help): '%s' exited with status 3",
                           f.bin, f.bin, f.bin);
    assert_string_equal(err, want);
    free(want);
    /* failures are not cached */
    assert_int_equal(flags_help(&q, &text, NULL, err, sizeof err), -1);
    assert_int_equal(runs(&f), 2);
    assert_int_equal(text.len, 0);
    fake_done(&f);

    fake_make(&f, "#!/bin/sh\necho x >> '@COUNTER@'\necho 'no flags here'\n");
    q.binary = f.bin;
    q.cache_dir = f.cache;
    assert_int_equal(flags_help(&q, &text, NULL, err, sizeof err), -1);
    want = xasprintf("cannot list the flags of '%s': '%s --help' printed no flags", f.bin, f.bin);
    assert_string_equal(err, want);
    free(want);
    assert_int_equal(flags_help(&q, &text, NULL, err, sizeof err), -1);
    assert_int_equal(runs(&f), 2);
    fake_done(&f);

    fake_make(&f, "#!/bin/sh\necho x >> '@COUNTER@'\nexec sleep 30\n");
    q.binary = f.bin;
    q.cache_dir = f.cache;
    q.timeout_ms = 200;
    assert_int_equal(flags_help(&q, &text, NULL, err, sizeof err), -1);
    want = xasprintf("cannot list the flags of '%s' (%s --help): '%s' timed out after 200 ms",
                     f.bin, f.bin, f.bin);
    assert_string_equal(err, want);
    free(want);

    /* not executable */
    q.timeout_ms = 0;
    chmod(f.bin, 0644);
    assert_int_equal(flags_help(&q, &text, NULL, err, sizeof err), -1);
    want = xasprintf("cannot list the flags of '%s': not executable", f.bin);
    assert_string_equal(err, want);
    free(want);

    strv argv = STRV_INIT, unknown = STRV_INIT;
    strv_push(&argv, "x");
    strv_push(&argv, "--y");
    assert_int_equal(flags_check(&q, &argv, &unknown, NULL, err, sizeof err), -1);
    assert_int_equal(unknown.n, 0);
    strv_release(&argv);
    fake_done(&f);
    buf_release(&text);
}

/* A FIFO where the cache file should be (a planted one, or a state dir
 * on a strange filesystem) is a miss: opening it must not wait for a
 * writer.  alarm() turns a block into a failure instead of a hang. */
static void cache_fifo_is_a_miss(void **state)
{
    (void)state;
    fake f;
    fake_make(&f, CAT_SCRIPT);
    flags_query q = {.binary = f.bin, .cache_dir = f.cache};
    buf text = BUF_INIT;
    bool cached = true;
    char err[512] = "";
    assert_int_equal(flags_help(&q, &text, &cached, err, sizeof err), 0);
    assert_int_equal(runs(&f), 1);
    char *cmd = xasprintf("for f in '%s'/help-*.txt; do rm \"$f\" && mkfifo \"$f\"; done", f.cache);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    alarm(10);
    buf_clear(&text);
    assert_int_equal(flags_help(&q, &text, &cached, err, sizeof err), 0);
    alarm(0);
    assert_false(cached);
    assert_int_equal(runs(&f), 2);
    buf_release(&text);
    fake_done(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_llama_server),    cmocka_unit_test(parse_argparse_and_click),
        cmocka_unit_test(unknown_flags),         cmocka_unit_test(driver_argv_is_known),
        cmocka_unit_test(cache_hits_and_misses), cmocka_unit_test(binary_from_path),
        cmocka_unit_test(help_errors),         cmocka_unit_test(cache_fifo_is_a_miss),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
