/* test_drivers.c - the exact argv, environment and cwd each driver builds
 * for presets as the config loader hands them over (defaults filled in),
 * and every error a driver can raise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "drivers/driver.h"
#include "util/buf.h"

#define W(...) ((const char *const[]){__VA_ARGS__, NULL})

static settings S;

static int setup_settings(void **state)
{
    (void)state;
    memset(&S, 0, sizeof S);
    S.driver_binary[DRV_LLAMACPP] = (char *)"llama-server";
    S.driver_binary[DRV_VLLM] = (char *)"/opt/vllm/bin/vllm";
    S.driver_binary[DRV_FASTAPI] = (char *)"uvicorn";
    S.driver_binary[DRV_DOCKER] = (char *)"docker";
    return 0;
}

/* A preset as the loader leaves it: zeroed, then the documented defaults. */
static void preset_init(preset *p, driver_kind k, const char *id, int64_t port)
{
    memset(p, 0, sizeof *p);
    p->id = (char *)id;
    p->driver = k;
    p->port = port;
    p->host = (char *)"127.0.0.1";
    p->vram_mb = -1;
    p->context_size = 4096;
    p->mem_host_mb = -1;
    p->llama.n_gpu_layers = -1;
    p->llama.parallel = 1;
    p->llama.threads = -1;
    p->llama.n_cpu_moe = -1;
    p->llama.flash_attn = TRI_UNSET;
    p->llama.jinja = TRI_UNSET;
    p->llama.metrics = true;
    p->llama.fit = TRI_OFF;
    p->llama.spec_draft_n_max = -1;
    p->llama.models_max = -1;
    p->vllm.gpu_memory_utilization = 0.9;
    p->vllm.max_model_len = 4096;
    p->vllm.max_num_seqs = -1;
    p->vllm.tensor_parallel_size = -1;
    p->vllm.sleep_level = -1;
    p->fastapi.working_dir = (char *)"/opt";
    p->fastapi.app_module = (char *)"main:app";
    p->fastapi.workers = -1;
    p->docker.container_port = -1;
}

static void words(strv *v, const char *const *w)
{
    for (size_t i = 0; w[i]; i++)
        strv_push(v, w[i]);
}

static void preset_done(preset *p)
{
    strv_release(&p->command);
    strv_release(&p->args);
    strv_release(&p->extra_args);
    strv_release(&p->aliases);
    strv_release(&p->devices);
    strv_release(&p->docker.volumes);
}

/* Compare whole vectors, quoted word by word, so a failure shows both. */
static void assert_strv(const strv *got, const char *const *want)
{
    buf g = BUF_INIT, w = BUF_INIT;
    size_t n = 0;
    for (size_t i = 0; i < got->n; i++)
        buf_printf(&g, "'%s' ", got->v[i]);
    for (; want[n]; n++)
        buf_printf(&w, "'%s' ", want[n]);
    assert_string_equal(g.p, w.p);
    assert_int_equal(got->n, n);
    if (n) assert_null(got->v[n]); /* ready for execve */
    buf_release(&g);
    buf_release(&w);
}

static void assert_launch_empty(const launch *l)
{
    assert_int_equal(l->argv.n, 0);
    assert_int_equal(l->env.n, 0);
    assert_null(l->cwd);
}

/* ---- llamacpp ---- */

static void llamacpp_full(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_LLAMACPP, "qwen3", 7070);
    p.model_path = (char *)"/models/Qwen3-30B-A3B-Q4_K_M.gguf";
    words(&p.aliases, W("qwen", "coder"));
    words(&p.devices, W("0", "1"));
    int64_t mem[] = {20000, 4000};
    p.mem_gpu_mb = mem;
    p.n_mem_gpu = 2;
    p.context_size = 40960;
    p.llama.parallel = 5;
    p.llama.n_gpu_layers = 45;
    p.llama.threads = 16;
    p.llama.n_cpu_moe = 4;
    p.llama.flash_attn = TRI_ON;
    p.llama.cache_type_k = (char *)"q8_0";
    p.llama.cache_type_v = (char *)"q4_0";
    p.llama.fit = TRI_ON;
    p.llama.jinja = TRI_ON;
    p.llama.chat_template_kwargs = (char *)"{\"enable_thinking\":false}";
    p.llama.override_kv = (char *)"tokenizer.ggml.add_bos_token=bool:false";
    p.llama.spec_type = (char *)"draft-simple";
    p.llama.model_draft = (char *)"/models/Qwen3-0.6B-Q8_0.gguf";
    p.llama.spec_draft_n_max = 16;
    words(&p.extra_args, W("--cont-batching", "--threads-batch", "8"));
    words(&p.args, W("--seed", "42"));
    kvpair env[] = {{.key = (char *)"GGML_CUDA_NO_PINNED", .val = (char *)"0"},
                    {.key = (char *)"LLAMA_LOG_COLORS", .val = (char *)"off"}};
    p.env.v = env;
    p.env.n = 2;

    launch l = LAUNCH_INIT;
    char err[256] = "";
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_strv(&l.argv,
                W("llama-server", "-m", "/models/Qwen3-30B-A3B-Q4_K_M.gguf", "--host", "127.0.0.1",
                  "--port", "7070", "--alias", "qwen3,qwen,coder", "-c", "40960", "--parallel", "5",
                  "-ngl", "45", "--tensor-split", "20000,4000", "-t", "16", "--n-cpu-moe", "4",
                  "-fa", "on", "--cache-type-k", "q8_0", "--cache-type-v", "q4_0", "-fit", "on",
                  "--jinja", "--chat-template-kwargs", "{\"enable_thinking\":false}",
                  "--override-kv", "tokenizer.ggml.add_bos_token=bool:false", "--spec-type",
                  "draft-simple", "--model-draft", "/models/Qwen3-0.6B-Q8_0.gguf",
                  "--spec-draft-n-max", "16", "--metrics", "--cont-batching", "--threads-batch",
                  "8", "--seed", "42"));
    /* the preset's GGML_CUDA_NO_PINNED replaces the default in place */
    assert_strv(&l.env, W("CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=0,1",
                          "GGML_CUDA_NO_PINNED=0", "LLAMA_LOG_COLORS=off"));
    assert_null(l.cwd);
    launch_release(&l);
    assert_launch_empty(&l);
    preset_done(&p);
}

/* Nothing but a model: the defaults the loader filled become explicit
 * flags; no devices means no CUDA_VISIBLE_DEVICES. */
static void llamacpp_defaults(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_LLAMACPP, "tiny", 8080);
    p.model_path = (char *)"/m/tiny.gguf";
    launch l = LAUNCH_INIT;
    char err[256];
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_strv(&l.argv, W("llama-server", "-m", "/m/tiny.gguf", "--host", "127.0.0.1", "--port",
                           "8080", "--alias", "tiny", "-c", "4096", "--parallel", "1", "-ngl",
                           "all", "-fit", "off", "--metrics"));
    assert_strv(&l.env, W("CUDA_DEVICE_ORDER=PCI_BUS_ID", "GGML_CUDA_NO_PINNED=1"));
    assert_null(l.cwd);
    launch_release(&l);

    /* the model_id is an alias too (the router routes it here); not twice,
     * and not when a comma would split it */
    p.model_id = (char *)"org/tiny-GGUF";
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_string_equal(l.argv.v[strv_find(&l.argv, "--alias") + 1], "tiny,org/tiny-GGUF");
    launch_release(&l);
    p.model_id = (char *)"tiny";
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_string_equal(l.argv.v[strv_find(&l.argv, "--alias") + 1], "tiny");
    launch_release(&l);
    p.model_id = (char *)"a,b";
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_string_equal(l.argv.v[strv_find(&l.argv, "--alias") + 1], "tiny");
    launch_release(&l);
    preset_done(&p);
}

static void llamacpp_router(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_LLAMACPP, "nemotron", 7071);
    p.host = (char *)"0.0.0.0";
    p.llama.models_dir = (char *)"/models";
    p.llama.models_max = 2;
    p.llama.no_models_autoload = true;
    p.llama.models_preset = (char *)"/etc/gpumod/models.ini";
    p.llama.default_model = (char *)"UD-Q4_K_XL"; /* for the router's routing, not a flag */
    p.llama.n_gpu_layers = 0;
    /* what the preset leaves out is unset in router mode (config.h), and
     * the router's command line would override each model's own */
    p.context_size = -1;
    p.llama.parallel = -1;
    p.llama.fit = TRI_UNSET;
    p.llama.flash_attn = TRI_OFF;
    p.llama.jinja = TRI_OFF;
    p.llama.metrics = false;
    words(&p.aliases, W("nemo")); /* the router names its models itself */
    words(&p.devices, W("GPU-1234"));
    launch l = LAUNCH_INIT;
    char err[256];
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_strv(&l.argv, W("llama-server", "--models-dir", "/models", "--models-max", "2",
                           "--no-models-autoload", "--models-preset", "/etc/gpumod/models.ini",
                           "--host", "0.0.0.0", "--port", "7071", "-ngl", "0", "-fa", "off", "--no-jinja"));
    assert_strv(&l.env, W("CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=GPU-1234",
                          "GGML_CUDA_NO_PINNED=1"));
    launch_release(&l);

    /* models_max 0 is a value, not "unset" */
    p.llama.models_max = 0;
    p.llama.no_models_autoload = false;
    p.llama.models_preset = NULL;
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_string_equal(l.argv.v[3], "--models-max");
    assert_string_equal(l.argv.v[4], "0");
    assert_string_equal(l.argv.v[5], "--host");
    launch_release(&l);

    /* what it sets is passed: -c, --parallel, -ngl all, -fit */
    p.context_size = 65536;
    p.llama.parallel = 2;
    p.llama.n_gpu_layers = -1;
    p.llama.fit = TRI_ON;
    p.llama.flash_attn = TRI_UNSET;
    p.llama.jinja = TRI_UNSET;
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_strv(&l.argv, W("llama-server", "--models-dir", "/models", "--models-max", "0", "--host", "0.0.0.0",
                           "--port", "7071", "-c", "65536", "--parallel", "2", "-ngl", "all", "-fit", "on"));
    launch_release(&l);
    /* n_gpu_layers left out: no -ngl */
    p.llama.n_gpu_layers = LLAMA_NGL_UNSET;
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_int_equal(strv_find(&l.argv, "-ngl"), -1);
    launch_release(&l);
    preset_done(&p);
}

/* Without one memory entry per device the split is even. */
static void llamacpp_even_split(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_LLAMACPP, "big", 8080);
    p.model_path = (char *)"/m/big.gguf";
    words(&p.devices, W("0", "2", "3"));
    int64_t total[] = {60000};
    p.mem_gpu_mb = total;
    p.n_mem_gpu = 1;
    launch l = LAUNCH_INIT;
    char err[256];
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    int i = strv_find(&l.argv, "--tensor-split");
    assert_true(i > 0);
    assert_string_equal(l.argv.v[i + 1], "1,1,1");
    assert_string_equal(strv_getenv(&l.env, "CUDA_VISIBLE_DEVICES"), "0,2,3");
    launch_release(&l);
    /* one device: no split at all */
    strv_release(&p.devices);
    words(&p.devices, W("1"));
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_int_equal(strv_find(&l.argv, "--tensor-split"), -1);
    launch_release(&l);
    preset_done(&p);
}

static void llamacpp_errors(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_LLAMACPP, "broken", 8080);
    launch l = LAUNCH_INIT;
    char err[256];
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), -1);
    assert_string_equal(err, "preset 'broken': llamacpp needs model_path or unit_vars.models_dir");
    assert_launch_empty(&l);

    p.model_path = (char *)"/m/a.gguf";
    p.llama.models_dir = (char *)"/m";
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), -1);
    assert_string_equal(err, "preset 'broken': llamacpp takes model_path or unit_vars.models_dir "
                             "(router mode), not both");
    assert_launch_empty(&l);

    p.llama.models_dir = NULL;
    settings none;
    memset(&none, 0, sizeof none);
    assert_int_equal(driver_launch(&p, &none, &l, err, sizeof err), -1);
    assert_string_equal(err, "preset 'broken': no binary configured for driver 'llamacpp'");
    assert_int_equal(driver_launch(&p, NULL, &l, err, sizeof err), -1);
    assert_launch_empty(&l);
}

/* ---- vllm ---- */

static void vllm_sleep_pooling(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_VLLM, "vllm-reranker", 8201);
    p.model_id = (char *)"BAAI/bge-reranker-v2-m3";
    p.model_path = (char *)"/models/bge-reranker-v2-m3";
    p.sleep = SLEEP_L2;
    p.vllm.sleep_level = 2;
    p.vllm.gpu_memory_utilization = 0.085;
    p.vllm.max_model_len = 8192;
    p.vllm.max_num_seqs = 16;
    p.vllm.dtype = (char *)"bfloat16";
    p.vllm.kv_cache_dtype = (char *)"fp8";
    p.vllm.enforce_eager = true;
    p.vllm.runner = (char *)"pooling";
    p.vllm.hf_overrides = (char *)"{\"architectures\":[\"XLMRobertaForSequenceClassification\"]}";
    p.vllm.trust_remote_code = true;
    words(&p.aliases, W("reranker", "bge"));
    words(&p.devices, W("GPU-aaaa", "GPU-bbbb"));
    words(&p.extra_args, W("--disable-log-requests"));
    kvpair env[] = {{.key = (char *)"HF_HOME", .val = (char *)"/var/cache/hf"}};
    p.env.v = env;
    p.env.n = 1;

    launch l = LAUNCH_INIT;
    char err[256];
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_strv(&l.argv, W("/opt/vllm/bin/vllm", "serve", "/models/bge-reranker-v2-m3", "--host",
                           "127.0.0.1", "--port", "8201", "--served-model-name", "vllm-reranker",
                           "reranker", "bge", "BAAI/bge-reranker-v2-m3", "--gpu-memory-utilization", "0.085",
                           "--max-model-len", "8192", "--max-num-seqs", "16", "--dtype", "bfloat16",
                           "--kv-cache-dtype", "fp8", "--enforce-eager", "--tensor-parallel-size",
                           "2", "--enable-sleep-mode", "--runner", "pooling", "--hf-overrides",
                           "{\"architectures\":[\"XLMRobertaForSequenceClassification\"]}",
                           "--trust-remote-code", "--disable-log-requests"));
    assert_strv(&l.env, W("CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=GPU-aaaa,GPU-bbbb",
                          "VLLM_SERVER_DEV_MODE=1", "HF_HOME=/var/cache/hf"));
    assert_int_equal(strv_find(&l.argv, "--sleep-level"), -1);
    launch_release(&l);
    preset_done(&p);
}

/* model_id when there is no path; explicit tensor parallelism wins over
 * the device count; no sleep mode means no dev-mode environment. */
static void vllm_plain(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_VLLM, "mistral-7b", 8000);
    p.model_id = (char *)"mistralai/Mistral-7B-Instruct-v0.3";
    p.vllm.tensor_parallel_size = 1;
    p.vllm.runner = (char *)"generate";
    words(&p.devices, W("0", "1"));
    launch l = LAUNCH_INIT;
    char err[256];
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_strv(&l.argv, W("/opt/vllm/bin/vllm", "serve", "mistralai/Mistral-7B-Instruct-v0.3",
                           "--host", "127.0.0.1", "--port", "8000", "--served-model-name",
                           "mistral-7b", "mistralai/Mistral-7B-Instruct-v0.3", "--gpu-memory-utilization", "0.9",
                           "--max-model-len",
                           "4096", "--tensor-parallel-size", "1", "--runner", "generate"));
    assert_strv(&l.env, W("CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=0,1"));
    launch_release(&l);

    /* enable_sleep_mode alone (sleep: none) still gets the endpoints */
    p.vllm.enable_sleep_mode = true;
    p.vllm.tensor_parallel_size = -1;
    p.vllm.gpu_memory_utilization = -1;
    p.vllm.max_model_len = -1;
    p.vllm.runner = NULL;
    strv_release(&p.devices);
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_strv(&l.argv, W("/opt/vllm/bin/vllm", "serve", "mistralai/Mistral-7B-Instruct-v0.3",
                           "--host", "127.0.0.1", "--port", "8000", "--served-model-name",
                           "mistral-7b", "mistralai/Mistral-7B-Instruct-v0.3", "--enable-sleep-mode"));
    assert_strv(&l.env, W("CUDA_DEVICE_ORDER=PCI_BUS_ID", "VLLM_SERVER_DEV_MODE=1"));
    launch_release(&l);

    /* sleep l1 turns it on too; the router sleep mode does not */
    p.vllm.enable_sleep_mode = false;
    p.sleep = SLEEP_L1;
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_true(strv_find(&l.argv, "--enable-sleep-mode") > 0);
    launch_release(&l);
    p.sleep = SLEEP_ROUTER;
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_int_equal(strv_find(&l.argv, "--enable-sleep-mode"), -1);
    assert_null(strv_getenv(&l.env, "VLLM_SERVER_DEV_MODE"));
    launch_release(&l);
    preset_done(&p);
}

static void vllm_number_forms(void **state)
{
    (void)state;
    const struct {
        double v;
        const char *text;
    } cases[] = {{0.085, "0.085"}, {0.9, "0.9"},   {0.3, "0.3"},
                 {1, "1"},         {0.95, "0.95"}, {0.123456789, "0.123456789"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        strv v = STRV_INIT;
        driver_push_double(&v, cases[i].v);
        assert_string_equal(v.v[0], cases[i].text);
        strv_release(&v);
    }
}

static void vllm_no_model(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_VLLM, "vllm-chat", 7071);
    launch l = LAUNCH_INIT;
    char err[256];
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), -1);
    assert_string_equal(err, "preset 'vllm-chat': vllm needs model_id or model_path");
    assert_launch_empty(&l);
    p.model_id = (char *)"";
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), -1);
    assert_launch_empty(&l);
}

/* ---- fastapi ---- */

static void fastapi_app(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_FASTAPI, "qwen3-asr", 8203);
    p.fastapi.working_dir = (char *)"/srv/asr";
    p.fastapi.app_module = (char *)"server:app";
    p.fastapi.workers = 2;
    words(&p.extra_args, W("--log-level", "warning"));
    words(&p.devices, W("1"));
    launch l = LAUNCH_INIT;
    char err[256];
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_strv(&l.argv, W("uvicorn", "server:app", "--host", "127.0.0.1", "--port", "8203",
                           "--workers", "2", "--log-level", "warning"));
    assert_strv(&l.env, W("CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=1"));
    assert_string_equal(l.cwd, "/srv/asr");
    launch_release(&l);
    assert_launch_empty(&l);

    /* the loader's defaults: /opt, main:app, no --workers */
    preset_done(&p);
    preset_init(&p, DRV_FASTAPI, "bge-large", 9200);
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_strv(&l.argv, W("uvicorn", "main:app", "--host", "127.0.0.1", "--port", "9200"));
    assert_string_equal(l.cwd, "/opt");
    launch_release(&l);

    p.fastapi.app_module = NULL;
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), -1);
    assert_string_equal(err, "preset 'bge-large': fastapi needs unit_vars.app_module");
    assert_launch_empty(&l);
}

/* ---- docker ---- */

static void docker_env_secret(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_DOCKER, "tts", 8204);
    p.docker.image = (char *)"ghcr.io/acme/tts:1.2";
    p.docker.container_port = 80;
    words(&p.docker.volumes, W("/srv/models:/models:ro", "/srv/cache:/cache"));
    words(&p.devices, W("0", "1"));
    words(&p.extra_args, W("--model", "/models/tts"));
    words(&p.args, W("--verbose"));
    kvpair env[] = {{.key = (char *)"HF_TOKEN", .val = (char *)"hf_s3cr3t"},
                    {.key = (char *)"LOG_LEVEL", .val = (char *)"info"}};
    p.env.v = env;
    p.env.n = 2;
    launch l = LAUNCH_INIT;
    char err[256];
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_strv(&l.argv, W("docker", "run", "--rm", "--init", "--name", "gpumod-tts", "--gpus",
                           "\"device=0,1\"", "-p", "127.0.0.1:8204:80", "-e", "HF_TOKEN", "-e",
                           "LOG_LEVEL", "-v", "/srv/models:/models:ro", "-v", "/srv/cache:/cache",
                           "ghcr.io/acme/tts:1.2", "--model", "/models/tts", "--verbose"));
    /* the values travel in the environment of the docker CLI only */
    assert_strv(&l.env, W("HF_TOKEN=hf_s3cr3t", "LOG_LEVEL=info"));
    for (size_t i = 0; i < l.argv.n; i++)
        assert_null(strstr(l.argv.v[i], "hf_s3cr3t"));
    assert_null(l.cwd);
    launch_release(&l);
    preset_done(&p);
}

static void docker_gpus_and_host(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_DOCKER, "emb", 9100);
    p.docker.image = (char *)"emb:latest";
    launch l = LAUNCH_INIT;
    char err[256];
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_strv(&l.argv, W("docker", "run", "--rm", "--init", "--name", "gpumod-emb", "--gpus",
                           "all", "-p", "127.0.0.1:9100:9100", "emb:latest"));
    assert_strv(&l.env, W(NULL));
    launch_release(&l);

    p.docker.gpus = (char *)"count=1";
    p.host = (char *)"::1";
    words(&p.devices, W("3"));
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_strv(&l.argv, W("docker", "run", "--rm", "--init", "--name", "gpumod-emb", "--gpus",
                           "count=1", "-p", "[::1]:9100:9100", "emb:latest"));
    launch_release(&l);

    p.docker.gpus = NULL;
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_string_equal(l.argv.v[7], "\"device=3\"");
    launch_release(&l);
    preset_done(&p);
}

static void docker_errors(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_DOCKER, "nope", 9000);
    launch l = LAUNCH_INIT;
    char err[256];
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), -1);
    assert_string_equal(err, "preset 'nope': docker driver needs unit_vars.image");
    assert_launch_empty(&l);

    /* an env name with '=' would smuggle its value into argv via -e */
    p.docker.image = (char *)"img";
    kvpair env[] = {{.key = (char *)"A=secret", .val = (char *)"x"}};
    p.env.v = env;
    p.env.n = 1;
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), -1);
    assert_string_equal(err, "preset 'nope': env name 'A=secret' is not a valid variable name");
    assert_launch_empty(&l);
    env[0].key = (char *)"1ABC";
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), -1);
    env[0].key = (char *)"";
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), -1);
    assert_string_equal(err, "preset 'nope': env name '' is not a valid variable name");
    p.env.n = 0;

    p.port = 0;
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), -1);
    assert_string_equal(err, "preset 'nope': docker driver needs a port");
    assert_launch_empty(&l);
}

static void docker_stop(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_DOCKER, "tts", 8204);
    p.docker.image = (char *)"img";
    strv stop = STRV_INIT, rm = STRV_INIT;
    char err[256];
    assert_int_equal(driver_stop_argv(&p, &S, 30000, &stop, &rm, err, sizeof err), 1);
    assert_strv(&stop, W("docker", "stop", "-t", "30", "gpumod-tts"));
    assert_strv(&rm, W("docker", "rm", "-f", "gpumod-tts"));
    strv_release(&stop);
    strv_release(&rm);
    /* rounded up: docker must never be given less time than asked for */
    assert_int_equal(driver_stop_argv(&p, &S, 1500, &stop, &rm, err, sizeof err), 1);
    assert_strv(&stop, W("docker", "stop", "-t", "2", "gpumod-tts"));
    strv_release(&stop);
    strv_release(&rm);
    assert_int_equal(driver_stop_argv(&p, &S, 0, &stop, &rm, err, sizeof err), 1);
    assert_string_equal(stop.v[3], "0");
    strv_release(&stop);
    strv_release(&rm);

    settings none;
    memset(&none, 0, sizeof none);
    assert_int_equal(driver_stop_argv(&p, &none, 30000, &stop, &rm, err, sizeof err), -1);
    assert_string_equal(err, "preset 'tts': no binary configured for driver 'docker'");
    assert_int_equal(stop.n + rm.n, 0);

    /* every other driver stops by signals */
    const driver_kind others[] = {DRV_LLAMACPP, DRV_VLLM, DRV_FASTAPI, DRV_COMMAND, DRV_REMOTE};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        p.driver = others[i];
        assert_int_equal(driver_stop_argv(&p, &S, 30000, &stop, &rm, err, sizeof err), 0);
        assert_int_equal(stop.n + rm.n, 0);
    }
    p.driver = (driver_kind)42;
    assert_int_equal(driver_stop_argv(&p, &S, 30000, &stop, &rm, err, sizeof err), -1);
    assert_string_equal(err, "preset 'tts': unknown driver 42");
}

/* ---- command ---- */

static void command_placeholders(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_COMMAND, "sd", 7860);
    p.host = (char *)"0.0.0.0";
    p.model_path = (char *)"/models/sd xl.safetensors";
    words(&p.command, W("/opt/sd/bin/server", "--listen={host}:{port}", "--ckpt", "{model_path}",
                        "--name", "{id}-{id}", "--json", "{{\"port\": {port}}}", "{{id}}"));
    words(&p.extra_args, W("--xformers"));
    words(&p.args, W("--no-half"));
    words(&p.devices, W("2"));
    kvpair env[] = {{.key = (char *)"CUDA_DEVICE_ORDER", .val = (char *)"FASTEST_FIRST"}};
    p.env.v = env;
    p.env.n = 1;
    launch l = LAUNCH_INIT;
    char err[256];
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_strv(&l.argv, W("/opt/sd/bin/server", "--listen=0.0.0.0:7860", "--ckpt",
                           "/models/sd xl.safetensors", "--name", "sd-sd", "--json",
                           "{\"port\": 7860}", "{id}", "--xformers", "--no-half"));
    assert_strv(&l.env, W("CUDA_DEVICE_ORDER=FASTEST_FIRST", "CUDA_VISIBLE_DEVICES=2"));
    assert_null(l.cwd);
    launch_release(&l);
    preset_done(&p);
}

static void command_errors(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_COMMAND, "cmd", 9000);
    launch l = LAUNCH_INIT;
    char err[256];
    const struct {
        const char *const *cmd;
        const char *err;
    } cases[] = {
        {W(NULL), "preset 'cmd': command driver needs a non-empty command"},
        {W("", "x"), "preset 'cmd': command driver needs a non-empty command"},
        {W("srv", "--p={prot}"),
         "preset 'cmd': command word '--p={prot}': unknown placeholder {prot} (known: {host} "
         "{port} {model_path} {id})"},
        {W("srv", "{}"),
         "preset 'cmd': command word '{}': unknown placeholder {} (known: {host} {port} "
         "{model_path} {id})"},
        {W("srv", "--m={model_path}"),
         "preset 'cmd': command word '--m={model_path}' uses {model_path} but model_path is not "
         "set"},
        {W("srv", "{port"),
         "preset 'cmd': command word '{port' has an unclosed '{' (write '{{' for a brace)"},
        {W("srv", "a}b"), "preset 'cmd': command word 'a}b' has a lone '}' (write '}}')"},
        {W("{model_path}"),
         "preset 'cmd': command word '{model_path}' uses {model_path} but model_path is not set"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        words(&p.command, cases[i].cmd);
        err[0] = '\0';
        assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), -1);
        assert_string_equal(err, cases[i].err);
        assert_launch_empty(&l);
        strv_release(&p.command);
    }
    /* a placeholder that expands to an empty program name */
    p.model_path = (char *)"";
    words(&p.command, W("{model_path}", "x"));
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), -1);
    assert_string_equal(err, "preset 'cmd': command word '{model_path}' expands to nothing");
    strv_release(&p.command);
    /* {port} without a port */
    p.port = 0;
    words(&p.command, W("srv", "{port}"));
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), -1);
    assert_string_equal(err, "preset 'cmd': command word '{port}' uses {port} but the preset has "
                             "no port");
    preset_done(&p);
}

/* ---- remote, shared behaviour ---- */

static void remote_no_process(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_REMOTE, "openai", 0);
    p.remote.base_url = (char *)"https://api.example.com/v1";
    p.remote.api_key_env = (char *)"OPENAI_API_KEY";
    words(&p.args, W("--ignored"));
    launch l = LAUNCH_INIT;
    strv_push(&l.argv, "stale"); /* driver_launch starts from empty */
    char err[256] = "";
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_launch_empty(&l);
    assert_string_equal(err, "");
    preset_done(&p);
}

static void launch_reuse_and_unknown(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_FASTAPI, "a", 1000);
    launch l = LAUNCH_INIT;
    char err[256];
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    /* a second launch into the same struct replaces, never appends */
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_strv(&l.argv, W("uvicorn", "main:app", "--host", "127.0.0.1", "--port", "1000"));
    assert_strv(&l.env, W("CUDA_DEVICE_ORDER=PCI_BUS_ID"));
    p.driver = (driver_kind)99;
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), -1);
    assert_string_equal(err, "preset 'a': unknown driver 99");
    assert_launch_empty(&l);
    /* no host from the loader: loopback, never all interfaces */
    p.driver = DRV_FASTAPI;
    p.host = NULL;
    assert_int_equal(driver_launch(&p, &S, &l, err, sizeof err), 0);
    assert_string_equal(l.argv.v[3], "127.0.0.1");
    launch_release(&l);
}

static void health_and_help(void **state)
{
    (void)state;
    preset p;
    preset_init(&p, DRV_FASTAPI, "a", 1000);
    assert_string_equal(driver_health_path(&p), "/health");
    p.health_endpoint = (char *)"";
    assert_string_equal(driver_health_path(&p), "/health");
    p.health_endpoint = (char *)"/v1/models";
    assert_string_equal(driver_health_path(&p), "/v1/models");

    const char *const *h = driver_help_args(DRV_LLAMACPP);
    assert_string_equal(h[0], "--help");
    assert_null(h[1]);
    h = driver_help_args(DRV_VLLM);
    assert_string_equal(h[0], "serve");
    assert_string_equal(h[1], "--help=all");
    assert_null(h[2]);
    assert_string_equal(driver_help_args(DRV_FASTAPI)[0], "--help");
    assert_null(driver_help_args(DRV_DOCKER));
    assert_null(driver_help_args(DRV_COMMAND));
    assert_null(driver_help_args(DRV_REMOTE));
    assert_null(driver_help_args((driver_kind)77));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llamacpp_full),        cmocka_unit_test(llamacpp_defaults),
        cmocka_unit_test(llamacpp_router),      cmocka_unit_test(llamacpp_even_split),
        cmocka_unit_test(llamacpp_errors),      cmocka_unit_test(vllm_sleep_pooling),
        cmocka_unit_test(vllm_plain),           cmocka_unit_test(vllm_number_forms),
        cmocka_unit_test(vllm_no_model),        cmocka_unit_test(fastapi_app),
        cmocka_unit_test(docker_env_secret),    cmocka_unit_test(docker_gpus_and_host),
        cmocka_unit_test(docker_errors),        cmocka_unit_test(docker_stop),
        cmocka_unit_test(command_placeholders), cmocka_unit_test(command_errors),
        cmocka_unit_test(remote_no_process),    cmocka_unit_test(launch_reuse_and_unknown),
        cmocka_unit_test(health_and_help),
    };
    return cmocka_run_group_tests(tests, setup_settings, NULL);
}
