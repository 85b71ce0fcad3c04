/* test_overrides.c - a start's overrides (config/overrides.c): the body
 * of POST /services/ID/start read strictly (daemon/api_services.c), each
 * key family checked as the preset file checks it (type, range, driver,
 * cache types, ubatch_size <= batch_size), the environment, their JSON
 * and text, applying them to a preset (the argv each driver builds, the
 * env, the config hash, the estimator's parameters), the conflict text,
 * the CLI's --set/--env typing, and the new preset keys batch_size and
 * ubatch_size in a preset file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "config/overrides.h"
#include "config/preset.h"
#include "config/yaml.h"
#include "daemon/api_services.h"
#include "daemon/need.h"
#include "drivers/driver.h"
#include "drivers/hash.h"
#include "util/buf.h"

static int parse(const char *body, int driver, overrides *ov, char *err, size_t errlen)
{
    view v = {body, strlen(body)};
    err[0] = 0;
    return api_overrides_parse("start", &v, driver, ov, err, errlen);
}

static char *json_of(const overrides *ov)
{
    buf b = BUF_INIT;
    overrides_json(&b, ov);
    return buf_detach(&b);
}

static void body_none(void **state)
{
    (void)state;
    overrides ov;
    char err[1024];
    const char *none[] = {"", "  \n", "{}", "{\"overrides\": null}", "{\"overrides\": {}}",
                          "{\"overrides\": {\"context_size\": null, \"env\": null}}",
                          "{\"overrides\": {\"env\": {\"A\": null}}}"};
    for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
        assert_int_equal(parse(none[i], DRV_LLAMACPP, &ov, err, sizeof err), 0);
        assert_false(overrides_any(&ov));
        char *j = json_of(&ov);
        assert_string_equal(j, "null");
        free(j);
        overrides_release(&ov);
    }
}

static void each_family(void **state)
{
    (void)state;
    overrides ov;
    char err[1024];
    /* llama.cpp: every key, given out of table order; echoed in table order */
    assert_int_equal(parse("{\"overrides\": {\"flash_attn\": \"on\", \"context_size\": 4096.0, \"threads\": 8,"
                           " \"batch_size\": 1024, \"ubatch_size\": 256, \"parallel\": 2, \"n_gpu_layers\": \"all\","
                           " \"n_cpu_moe\": 0, \"cache_type_k\": \"q8_0\", \"cache_type_v\": \"f16\","
                           " \"spec_draft_n_max\": 16, \"env\": {\"GGML_X\": \"1\", \"_Y\": \"\"}}}",
                           DRV_LLAMACPP, &ov, err, sizeof err),
                     0);
    char *j = json_of(&ov);
    assert_string_equal(j, "{\"context_size\":4096,\"threads\":8,\"batch_size\":1024,\"ubatch_size\":256,"
                           "\"parallel\":2,\"n_gpu_layers\":\"all\",\"n_cpu_moe\":0,\"cache_type_k\":\"q8_0\","
                           "\"cache_type_v\":\"f16\",\"flash_attn\":true,\"spec_draft_n_max\":16,"
                           "\"env\":{\"GGML_X\":\"1\",\"_Y\":\"\"}}");
    free(j);
    buf t = BUF_INIT;
    overrides_text(&t, &ov);
    assert_non_null(strstr(t.p, "context_size 4096, threads 8, batch_size 1024"));
    assert_non_null(strstr(t.p, "flash_attn true, spec_draft_n_max 16, env GGML_X=1, env _Y="));
    buf_release(&t);
    overrides_release(&ov);
    /* vLLM: its keys; gpu_mem_util is gpu_memory_utilization */
    assert_int_equal(parse("{\"overrides\": {\"context_size\": 2048, \"max_num_seqs\": 8, \"gpu_mem_util\": 0.85,"
                           " \"kv_cache_dtype\": \"fp8\", \"enforce_eager\": true, \"dtype\": \"bfloat16\","
                           " \"env\": {\"VLLM_MARLIN_USE_ATOMIC_ADD\": \"1\"}}}",
                           DRV_VLLM, &ov, err, sizeof err),
                     0);
    j = json_of(&ov);
    assert_string_equal(j, "{\"context_size\":2048,\"max_num_seqs\":8,\"gpu_memory_utilization\":0.85,"
                           "\"kv_cache_dtype\":\"fp8\",\"enforce_eager\":true,\"dtype\":\"bfloat16\","
                           "\"env\":{\"VLLM_MARLIN_USE_ATOMIC_ADD\":\"1\"}}");
    free(j);
    overrides_release(&ov);
    /* flash_attn: off and auto; n_gpu_layers a number */
    assert_int_equal(parse("{\"overrides\": {\"flash_attn\": \"auto\", \"n_gpu_layers\": 20}}", DRV_LLAMACPP, &ov,
                           err, sizeof err),
                     0);
    j = json_of(&ov);
    assert_string_equal(j, "{\"n_gpu_layers\":20,\"flash_attn\":\"auto\"}");
    free(j);
    overrides_release(&ov);
    /* no driver known: keys and values are checked, not the driver */
    assert_int_equal(parse("{\"overrides\": {\"batch_size\": 64, \"max_num_seqs\": 2}}", -1, &ov, err, sizeof err), 0);
    assert_int_equal(ov.n, 2);
    overrides_release(&ov);
}

static void errors(void **state)
{
    (void)state;
    overrides ov;
    char err[1024];
    static const struct {
        int driver;
        const char *body, *err;
    } bad[] = {
        {DRV_LLAMACPP, "[]", "start: the body must be a JSON object {\"overrides\": {...}}: found another JSON value"},
        {DRV_LLAMACPP, "{\"wait\": false}", "start: unknown key 'wait' in the body (allowed: overrides)"},
        {DRV_LLAMACPP, "{\"overrides\": []}",
         "start: \"overrides\" must be an object {KEY: value, ..., \"env\": {NAME: \"value\"}} or null (keys for "
         "llamacpp: context_size, threads, batch_size, ubatch_size, parallel, n_gpu_layers, n_cpu_moe, cache_type_k, "
         "cache_type_v, flash_attn, spec_draft_n_max, env)"},
        {DRV_VLLM, "{\"overrides\": {\"ctx\": 1}}",
         "start: overrides: unknown key 'ctx' (keys for vllm: context_size, max_num_seqs, gpu_memory_utilization, "
         "kv_cache_dtype, enforce_eager, dtype, env)"},
        {DRV_VLLM, "{\"overrides\": {\"threds\": 1}}",
         "start: overrides: unknown key 'threds' (did you mean 'threads'?) (keys for vllm: context_size, "
         "max_num_seqs, gpu_memory_utilization, kv_cache_dtype, enforce_eager, dtype, env)"},
        {DRV_VLLM, "{\"overrides\": {\"batch_size\": 512}}",
         "start: overrides.batch_size: the vllm driver takes no batch_size (keys for vllm: context_size, "
         "max_num_seqs, gpu_memory_utilization, kv_cache_dtype, enforce_eager, dtype, env)"},
        {DRV_COMMAND, "{\"overrides\": {\"context_size\": 512}}",
         "start: overrides.context_size: the command driver takes no context_size (keys for command: env)"},
        {DRV_LLAMACPP, "{\"overrides\": {\"model_path\": \"/x\"}}",
         "start: overrides: 'model_path' is a preset key that a start cannot override (keys for llamacpp: "
         "context_size, threads, batch_size, ubatch_size, parallel, n_gpu_layers, n_cpu_moe, cache_type_k, "
         "cache_type_v, flash_attn, spec_draft_n_max, env)"},
        {DRV_LLAMACPP, "{\"overrides\": {\"context_size\": 0}}",
         "start: overrides.context_size: 0 is out of range: expected an integer in 1..16777216"},
        {DRV_LLAMACPP, "{\"overrides\": {\"context_size\": 16777217}}",
         "start: overrides.context_size: 16777217 is out of range: expected an integer in 1..16777216"},
        {DRV_LLAMACPP, "{\"overrides\": {\"context_size\": 100.5}}",
         "start: overrides.context_size: expected an integer in 1..16777216, found '100.5'"},
        {DRV_LLAMACPP, "{\"overrides\": {\"context_size\": \"100\"}}",
         "start: overrides.context_size: expected an integer in 1..16777216 (or null for the preset's), found \"100\""},
        {DRV_LLAMACPP, "{\"overrides\": {\"threads\": 0}}",
         "start: overrides.threads: 0 is out of range: expected an integer in 1..4096"},
        {DRV_LLAMACPP, "{\"overrides\": {\"threads\": true}}",
         "start: overrides.threads: expected an integer in 1..4096 (or null for the preset's), found true"},
        {DRV_LLAMACPP, "{\"overrides\": {\"n_gpu_layers\": \"most\"}}",
         "start: overrides.n_gpu_layers: expected an integer in 0..100000 or \"all\" (or null for the preset's), "
         "found \"most\""},
        {DRV_LLAMACPP, "{\"overrides\": {\"cache_type_k\": \"q3\"}}",
         "start: overrides.cache_type_k: expected one of f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1, "
         "found 'q3'"},
        {DRV_LLAMACPP, "{\"overrides\": {\"cache_type_k\": 8}}",
         "start: overrides.cache_type_k: expected a string (or null for the preset's), found 8"},
        {DRV_LLAMACPP, "{\"overrides\": {\"flash_attn\": \"yes please\"}}",
         "start: overrides.flash_attn: expected true, false, \"on\", \"off\" or \"auto\" (or null for the "
         "preset's), found \"yes please\""},
        {DRV_VLLM, "{\"overrides\": {\"gpu_memory_utilization\": 1.5}}",
         "start: overrides.gpu_memory_utilization: 1.5 is out of range: expected a number in 0.01..1"},
        {DRV_VLLM, "{\"overrides\": {\"enforce_eager\": \"true\"}}",
         "start: overrides.enforce_eager: expected true or false (or null for the preset's), found \"true\""},
        {DRV_VLLM, "{\"overrides\": {\"gpu_mem_util\": 0.5, \"gpu_memory_utilization\": 0.6}}",
         "start: overrides: 'gpu_memory_utilization' and 'gpu_memory_utilization' are the same key; give one (keys "
         "for vllm: context_size, max_num_seqs, gpu_memory_utilization, kv_cache_dtype, enforce_eager, dtype, env)"},
        {DRV_LLAMACPP, "{\"overrides\": {\"batch_size\": 256, \"ubatch_size\": 512}}",
         "start: overrides: ubatch_size 512 is larger than batch_size 256 (llama.cpp's physical batch is at most its "
         "logical batch)"},
        {DRV_LLAMACPP, "{\"overrides\": {\"dtype\": \"half\"}}",
         "start: overrides.dtype: the llamacpp driver takes no dtype (keys for llamacpp: context_size, threads, "
         "batch_size, ubatch_size, parallel, n_gpu_layers, n_cpu_moe, cache_type_k, cache_type_v, flash_attn, "
         "spec_draft_n_max, env)"},
        {DRV_LLAMACPP, "{\"overrides\": {\"env\": {\"BAD-NAME\": \"1\"}}}",
         "start: overrides.env: 'BAD-NAME' is not a valid environment variable name (expected "
         "[A-Za-z_][A-Za-z0-9_]*, up to 256 characters)"},
        {DRV_LLAMACPP, "{\"overrides\": {\"env\": {\"9X\": \"1\"}}}",
         "start: overrides.env: '9X' is not a valid environment variable name (expected [A-Za-z_][A-Za-z0-9_]*, up "
         "to 256 characters)"},
        {DRV_LLAMACPP, "{\"overrides\": {\"env\": {\"X\": 1}}}",
         "start: overrides.env.X: expected a string (or null for the preset's), found 1"},
        {DRV_LLAMACPP, "{\"overrides\": {\"env\": {\"X\": \"a\\nb\"}}}",
         "start: overrides.env.X: control character in the value"},
        {DRV_LLAMACPP, "{\"overrides\": {\"env\": [\"X=1\"]}}",
         "start: overrides.env: expected an object {\"NAME\": \"value\"} or null"},
        {DRV_REMOTE, "{\"overrides\": {\"env\": {\"X\": \"1\"}}}",
         "start: overrides.env: driver remote runs no process here; it takes no environment"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(parse(bad[i].body, bad[i].driver, &ov, err, sizeof err), -1);
        if (strcmp(err, bad[i].err)) print_error("case %zu: %s\n", i, err);
        assert_string_equal(err, bad[i].err);
        assert_false(overrides_any(&ov)); /* empty after an error */
    }
    /* a value too long for the environment */
    buf big = BUF_INIT;
    buf_adds(&big, "{\"overrides\": {\"env\": {\"X\": \"");
    for (int i = 0; i < OVERRIDES_ENV_VALUE_MAX + 1; i++) buf_addc(&big, 'a');
    buf_adds(&big, "\"}}}");
    assert_int_equal(parse(big.p, DRV_LLAMACPP, &ov, err, sizeof err), -1);
    assert_string_equal(err, "start: overrides.env.X: the value is 4097 bytes, more than 4096");
    buf_release(&big);
    /* jstrict's own: a key twice */
    assert_int_equal(parse("{\"overrides\": {\"threads\": 1, \"threads\": 2}}", DRV_LLAMACPP, &ov, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "key 'threads' appears twice"));
}

static bool argv_has(const strv *a, const char *flag, const char *val)
{
    for (size_t i = 0; i < a->n; i++)
        if (!strcmp(a->v[i], flag) && (!val || (i + 1 < a->n && !strcmp(a->v[i + 1], val)))) return true;
    return false;
}

static bool env_has(const strv *e, const char *kv)
{
    for (size_t i = 0; i < e->n; i++)
        if (!strcmp(e->v[i], kv)) return true;
    return false;
}

static void preset_base(preset *p, driver_kind k)
{
    memset(p, 0, sizeof *p);
    p->id = (char *)"chat";
    p->driver = k;
    p->port = 7070;
    p->host = (char *)"127.0.0.1";
    p->context_size = 4096;
    p->model_path = (char *)"/nonexistent/model.gguf";
    p->llama.n_gpu_layers = -1;
    p->llama.parallel = 1;
    p->llama.threads = p->llama.n_cpu_moe = p->llama.spec_draft_n_max = p->llama.models_max = -1;
    p->llama.batch_size = p->llama.ubatch_size = -1;
    p->llama.flash_attn = TRI_UNSET;
    p->vllm.gpu_memory_utilization = 0.9;
    p->vllm.max_model_len = 4096;
    p->vllm.max_num_seqs = p->vllm.tensor_parallel_size = p->vllm.sleep_level = -1;
    kvlist_set(&p->env, "KEEP", "1", (srcpos){0});
    kvlist_set(&p->env, "GGML_X", "preset", (srcpos){0});
}

static settings *test_settings(void)
{
    static settings st;
    st.driver_binary[DRV_LLAMACPP] = (char *)"llama-server";
    st.driver_binary[DRV_VLLM] = (char *)"vllm";
    return &st;
}

static void apply_llamacpp(void **state)
{
    (void)state;
    overrides ov;
    char err[1024], h0[65], h1[65];
    assert_int_equal(parse("{\"overrides\": {\"context_size\": 8192, \"threads\": 8, \"batch_size\": 1024,"
                           " \"ubatch_size\": 256, \"parallel\": 2, \"n_gpu_layers\": 10, \"n_cpu_moe\": 3,"
                           " \"cache_type_k\": \"q8_0\", \"cache_type_v\": \"q8_0\", \"flash_attn\": \"on\","
                           " \"spec_draft_n_max\": 4, \"env\": {\"GGML_X\": \"over\", \"NEW\": \"2\"}}}",
                           DRV_LLAMACPP, &ov, err, sizeof err),
                     0);
    preset p, q;
    preset_base(&p, DRV_LLAMACPP);
    assert_int_equal(overrides_apply(&p, &ov, &q, err, sizeof err), 0);
    assert_int_equal(p.context_size, 4096); /* the preset itself is untouched */
    assert_int_equal(p.env.n, 2);
    assert_ptr_equal(q.model_path, p.model_path); /* a shallow copy */
    launch l = LAUNCH_INIT;
    assert_int_equal(driver_launch(&q, test_settings(), &l, err, sizeof err), 0);
    static const char *const want[][2] = {{"-c", "8192"},           {"-t", "8"},          {"-b", "1024"},
                                          {"-ub", "256"},           {"--parallel", "2"},  {"-ngl", "10"},
                                          {"--n-cpu-moe", "3"},     {"--cache-type-k", "q8_0"},
                                          {"--cache-type-v", "q8_0"}, {"-fa", "on"},      {"--spec-draft-n-max", "4"}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) assert_true(argv_has(&l.argv, want[i][0], want[i][1]));
    assert_true(env_has(&l.env, "GGML_X=over")); /* the override wins */
    assert_true(env_has(&l.env, "NEW=2"));
    assert_true(env_has(&l.env, "KEEP=1"));
    launch_release(&l);
    /* the run is known by its own hash, and the estimator sees its batch sizes */
    assert_int_equal(config_hash(&p, test_settings(), h0, NULL, err, sizeof err), 0);
    assert_int_equal(config_hash(&q, test_settings(), h1, NULL, err, sizeof err), 0);
    assert_string_not_equal(h0, h1);
    snapshot snap;
    memset(&snap, 0, sizeof snap);
    est_params ep;
    int idx[HOST_MAX_GPUS];
    need_est_params(&q, &snap, &ep, idx);
    assert_int_equal(ep.n_batch, 1024);
    assert_int_equal(ep.n_ubatch, 256);
    assert_int_equal(ep.ctx, 8192);
    need_est_params(&p, &snap, &ep, idx);
    assert_int_equal(ep.n_batch, 2048); /* llama.cpp's defaults when the preset sets none */
    assert_int_equal(ep.n_ubatch, 512);
    overrides_applied_release(&q);
    overrides_release(&ov);
    /* an env override alone changes the hash too */
    assert_int_equal(parse("{\"overrides\": {\"env\": {\"NEW\": \"2\"}}}", DRV_LLAMACPP, &ov, err, sizeof err), 0);
    assert_int_equal(overrides_apply(&p, &ov, &q, err, sizeof err), 0);
    assert_int_equal(config_hash(&q, test_settings(), h1, NULL, err, sizeof err), 0);
    assert_string_not_equal(h0, h1);
    overrides_applied_release(&q);
    overrides_release(&ov);
    /* the preset's own values: the preset's hash */
    assert_int_equal(parse("{\"overrides\": {\"context_size\": 4096, \"env\": {\"KEEP\": \"1\"}}}", DRV_LLAMACPP, &ov,
                           err, sizeof err),
                     0);
    assert_int_equal(overrides_apply(&p, &ov, &q, err, sizeof err), 0);
    assert_int_equal(config_hash(&q, test_settings(), h1, NULL, err, sizeof err), 0);
    assert_string_equal(h0, h1);
    overrides_applied_release(&q);
    overrides_release(&ov);
    kvlist_release(&p.env);
}

static void apply_vllm_and_errors(void **state)
{
    (void)state;
    overrides ov;
    char err[1024];
    preset p, q;
    preset_base(&p, DRV_VLLM);
    assert_int_equal(parse("{\"overrides\": {\"context_size\": 2048, \"max_num_seqs\": 8,"
                           " \"gpu_memory_utilization\": 0.5, \"kv_cache_dtype\": \"fp8\", \"enforce_eager\": true,"
                           " \"dtype\": \"half\"}}",
                           DRV_VLLM, &ov, err, sizeof err),
                     0);
    assert_int_equal(overrides_apply(&p, &ov, &q, err, sizeof err), 0);
    launch l = LAUNCH_INIT;
    assert_int_equal(driver_launch(&q, test_settings(), &l, err, sizeof err), 0);
    assert_true(argv_has(&l.argv, "--max-model-len", "2048"));
    assert_true(argv_has(&l.argv, "--max-num-seqs", "8"));
    assert_true(argv_has(&l.argv, "--gpu-memory-utilization", "0.5"));
    assert_true(argv_has(&l.argv, "--kv-cache-dtype", "fp8"));
    assert_true(argv_has(&l.argv, "--enforce-eager", NULL));
    assert_true(argv_has(&l.argv, "--dtype", "half"));
    launch_release(&l);
    overrides_applied_release(&q);
    overrides_release(&ov);
    /* parsed for no known driver, then applied to a vllm preset (a reload changed it) */
    assert_int_equal(parse("{\"overrides\": {\"threads\": 4}}", -1, &ov, err, sizeof err), 0);
    assert_int_equal(overrides_apply(&p, &ov, &q, err, sizeof err), -1);
    assert_string_equal(err, "preset 'chat': the vllm driver takes no threads (keys for vllm: context_size, "
                             "max_num_seqs, gpu_memory_utilization, kv_cache_dtype, enforce_eager, dtype, env)");
    overrides_applied_release(&q);
    overrides_release(&ov);
    kvlist_release(&p.env);
    /* ubatch_size over the preset's batch_size, and over the default */
    preset_base(&p, DRV_LLAMACPP);
    p.llama.batch_size = 256;
    assert_int_equal(parse("{\"overrides\": {\"ubatch_size\": 512}}", DRV_LLAMACPP, &ov, err, sizeof err), 0);
    assert_int_equal(overrides_apply(&p, &ov, &q, err, sizeof err), -1);
    assert_string_equal(err, "preset 'chat': ubatch_size 512 is larger than batch_size 256 (llama.cpp's physical "
                             "batch is at most its logical batch)");
    overrides_applied_release(&q);
    overrides_release(&ov);
    p.llama.batch_size = -1;
    assert_int_equal(parse("{\"overrides\": {\"ubatch_size\": 4096}}", DRV_LLAMACPP, &ov, err, sizeof err), 0);
    assert_int_equal(overrides_apply(&p, &ov, &q, err, sizeof err), -1);
    assert_string_equal(err, "preset 'chat': ubatch_size 4096 is larger than batch_size (its default) 2048 "
                             "(llama.cpp's physical batch is at most its logical batch; set batch_size too)");
    overrides_applied_release(&q);
    overrides_release(&ov);
    kvlist_release(&p.env);
}

static void differ_copy_equal(void **state)
{
    (void)state;
    overrides a, b, c;
    char err[1024];
    preset p, run;
    preset_base(&p, DRV_LLAMACPP);
    assert_int_equal(parse("{\"overrides\": {\"context_size\": 512, \"threads\": 8}}", DRV_LLAMACPP, &a, err,
                           sizeof err),
                     0);
    assert_int_equal(overrides_apply(&p, &a, &run, err, sizeof err), 0);
    /* what runs asked again, or part of it: no difference */
    buf have = BUF_INIT, want = BUF_INIT;
    assert_false(overrides_differ(&run, &a, &have, &want));
    assert_int_equal(parse("{\"overrides\": {\"threads\": 8, \"context_size\": 512}}", DRV_LLAMACPP, &b, err,
                           sizeof err),
                     0);
    assert_true(overrides_equal(&a, &b));
    overrides_release(&b);
    assert_int_equal(parse("{\"overrides\": {\"context_size\": 1024, \"batch_size\": 64, \"env\": {\"KEEP\": \"1\","
                           " \"Z\": \"2\"}}}",
                           DRV_LLAMACPP, &b, err, sizeof err),
                     0);
    assert_false(overrides_equal(&a, &b));
    assert_true(overrides_differ(&run, &b, &have, &want));
    assert_string_equal(have.p, "context_size 512, no batch_size set, no env Z set");
    assert_string_equal(want.p, "context_size 1024, batch_size 64, env Z=2");
    /* a deep copy, equal and independent */
    memset(&c, 0, sizeof c);
    overrides_copy(&c, &b);
    assert_true(overrides_equal(&c, &b));
    overrides_release(&b);
    char *j = json_of(&c);
    assert_string_equal(j, "{\"context_size\":1024,\"batch_size\":64,\"env\":{\"KEEP\":\"1\",\"Z\":\"2\"}}");
    free(j);
    overrides_copy(&c, NULL);
    assert_false(overrides_any(&c));
    assert_true(overrides_equal(&c, NULL));
    buf_release(&have);
    buf_release(&want);
    overrides_applied_release(&run);
    overrides_release(&a);
    kvlist_release(&p.env);
}

static void cli_args(void **state)
{
    (void)state;
    cJSON *o = cJSON_CreateObject();
    char err[256];
    assert_int_equal(overrides_add_arg(o, "threads=8", false, err, sizeof err), 0);
    assert_int_equal(overrides_add_arg(o, "gpu_mem_util=0.85", false, err, sizeof err), 0);
    assert_int_equal(overrides_add_arg(o, "flash_attn=on", false, err, sizeof err), 0);
    assert_int_equal(overrides_add_arg(o, "enforce_eager=true", false, err, sizeof err), 0);
    assert_int_equal(overrides_add_arg(o, "n_gpu_layers=all", false, err, sizeof err), 0);
    assert_int_equal(overrides_add_arg(o, "cache_type_k=q8_0", false, err, sizeof err), 0);
    assert_int_equal(overrides_add_arg(o, "context_size=lots", false, err, sizeof err), 0); /* the daemon says no */
    assert_int_equal(overrides_add_arg(o, "A_B=x=y", true, err, sizeof err), 0);
    char *s = cJSON_PrintUnformatted(o);
    assert_string_equal(s, "{\"threads\":8,\"gpu_mem_util\":0.85,\"flash_attn\":\"on\",\"enforce_eager\":true,"
                           "\"n_gpu_layers\":\"all\",\"cache_type_k\":\"q8_0\",\"context_size\":\"lots\","
                           "\"env\":{\"A_B\":\"x=y\"}}");
    cJSON_free(s);
    assert_int_equal(overrides_add_arg(o, "threads=9", false, err, sizeof err), -1);
    assert_string_equal(err, "--set threads: given twice");
    assert_int_equal(overrides_add_arg(o, "gpu_memory_utilization=0.5", false, err, sizeof err), -1);
    assert_string_equal(err, "--set gpu_memory_utilization: given twice");
    assert_int_equal(overrides_add_arg(o, "A_B=1", true, err, sizeof err), -1);
    assert_string_equal(err, "--env A_B: given twice");
    assert_int_equal(overrides_add_arg(o, "threads", false, err, sizeof err), -1);
    assert_string_equal(err, "--set expects KEY=VALUE, found 'threads'");
    assert_int_equal(overrides_add_arg(o, "=1", true, err, sizeof err), -1);
    assert_string_equal(err, "--env expects NAME=VALUE, found '=1'");
    assert_int_equal(overrides_add_arg(o, "env=1", false, err, sizeof err), -1);
    assert_string_equal(err, "--set env: environment variables go with --env");
    cJSON_Delete(o);
}

static int load_preset(const char *text, preset *p, diags *d)
{
    ydoc doc;
    assert_int_equal(yaml_load_string(&doc, text, strlen(text), "p.yaml", d), 0);
    int rc = preset_parse(p, doc.root, "p.yaml", d);
    yaml_release(&doc);
    return rc;
}

static void preset_batch_keys(void **state)
{
    (void)state;
    diags d = {0};
    preset p;
    assert_int_equal(load_preset("id: a\ndriver: llamacpp\nport: 1\nmodel_path: /m.gguf\n"
                                 "unit_vars: {batch_size: 1024, ubatch_size: 128}\n",
                                 &p, &d),
                     0);
    assert_int_equal(p.llama.batch_size, 1024);
    assert_int_equal(p.llama.ubatch_size, 128);
    preset_release(&p);
    diags_release(&d);
    assert_int_equal(load_preset("id: a\ndriver: llamacpp\nport: 1\nmodel_path: /m.gguf\n", &p, &d), 0);
    assert_int_equal(p.llama.batch_size, -1); /* unset: not passed */
    assert_int_equal(p.llama.ubatch_size, -1);
    preset_release(&p);
    diags_release(&d);
    assert_int_equal(load_preset("id: a\ndriver: llamacpp\nport: 1\nmodel_path: /m.gguf\n"
                                 "unit_vars: {batch_size: 128, ubatch_size: 512}\n",
                                 &p, &d),
                     -1);
    assert_string_equal(d.v[0].msg, "preset 'a': unit_vars: ubatch_size 512 is larger than batch_size 128 "
                                    "(llama.cpp's physical batch is at most its logical batch)");
    assert_int_equal(d.v[0].pos.line, 5);
    preset_release(&p);
    diags_release(&d);
    assert_int_equal(load_preset("id: a\ndriver: llamacpp\nport: 1\nmodel_path: /m.gguf\nunit_vars: {batch_size: 0}\n",
                                 &p, &d),
                     -1);
    assert_string_equal(d.v[0].msg, "preset 'a': unit_vars: batch_size: 0 is out of range: expected an integer in "
                                    "1..16777216");
    preset_release(&p);
    diags_release(&d);
}

static void doc_table(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    overrides_doc_markdown(&b);
    assert_non_null(strstr(b.p, "| `batch_size` | llamacpp | an integer in 1..16777216 | -b N"));
    assert_non_null(strstr(b.p, "| `gpu_memory_utilization` | vllm | a number in 0.01..1 | (also `gpu_mem_util`)"));
    assert_non_null(strstr(b.p, "| `context_size` | llamacpp, vllm |"));
    assert_non_null(strstr(b.p, "| `env` |"));
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(body_none),         cmocka_unit_test(each_family),
        cmocka_unit_test(errors),            cmocka_unit_test(apply_llamacpp),
        cmocka_unit_test(apply_vllm_and_errors), cmocka_unit_test(differ_copy_equal),
        cmocka_unit_test(cli_args),          cmocka_unit_test(preset_batch_keys),
        cmocka_unit_test(doc_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
