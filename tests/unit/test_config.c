/* test_config.c - the loader end to end on fixture trees: typed values,
 * defaults, path resolution, and that nothing is dropped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

static const char *src_dir(void)
{
    const char *s = getenv("GPUMOD_SRC");
    return s ? s : ".";
}

static void load_fixture(config *cfg, const char *name, int want_rc)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/config/%s", src_dir(), name);
    setenv("HOME", "/home/u", 1);
    unsetenv("GPUMOD_PRESETS_DIR");
    unsetenv("GPUMOD_MODES_DIR");
    config_paths paths = {.config_dir = dir, .state_dir = "/tmp/gpumod-unit-state"};
    config_opts opts = {.check_files = false};
    int rc = config_load(cfg, &paths, &opts);
    for (size_t i = 0; rc != want_rc && i < cfg->diags.n; i++) fprintf(stderr, "%s\n", cfg->diags.v[i].msg);
    assert_int_equal(rc, want_rc);
}

static void python_compat_typed_values(void **state)
{
    config cfg;
    load_fixture(&cfg, "python-compat", 0);
    assert_int_equal(cfg.n_presets, 9);
    assert_int_equal(cfg.n_modes, 3);
    assert_int_equal(cfg.diags.errors, 0);

    const preset *n = config_preset(&cfg, "nemotron-3-nano");
    assert_non_null(n);
    assert_int_equal(n->driver, DRV_LLAMACPP);
    assert_int_equal(n->sleep, SLEEP_ROUTER);
    assert_string_equal(n->llama.models_dir, "/home/u/models/gguf");
    assert_int_equal(n->llama.models_max, 1);
    assert_true(n->llama.no_models_autoload);
    assert_int_equal(n->llama.jinja, TRI_ON);
    assert_int_equal(n->llama.flash_attn, TRI_ON);
    assert_int_equal(n->llama.n_gpu_layers, -1);
    /* router mode: what the preset leaves out stays unset (the router's
     * command line would override each model's own settings) */
    assert_int_equal(n->llama.fit, TRI_UNSET);
    assert_int_equal(n->llama.parallel, -1);
    assert_true(n->llama.metrics);
    assert_int_equal(n->startup_timeout_ms, 120000);
    assert_int_equal(n->context_size, -1);
    assert_int_equal(n->n_mem_gpu, 1);
    assert_int_equal(n->mem_gpu_mb[0], 20000);
    assert_string_equal(n->host, "127.0.0.1");

    const preset *q = config_preset(&cfg, "qwen3-coder-next");
    assert_int_equal(q->context_size, 65536);
    assert_int_equal(q->llama.threads, 16);
    assert_int_equal(q->llama.n_cpu_moe, 20);
    assert_int_equal(q->llama.n_gpu_layers, 45);
    assert_string_equal(q->llama.models_preset, "/opt/models/llama_cpp_gguf_presets.ini");

    const preset *g = config_preset(&cfg, "gpt-oss-20b-multi");
    assert_string_equal(g->model_path, "/home/u/models/gpt-oss-20b-mxfp4.gguf");
    assert_int_equal(g->context_size, 40960);
    assert_int_equal(g->kv_cache_per_1k, 25);
    assert_int_equal(g->llama.parallel, 1); /* single-model mode: the default, explicit */
    assert_int_equal(g->llama.fit, TRI_OFF);
    assert_int_equal(g->extra_args.n, 5);
    assert_string_equal(g->extra_args.v[4], "16");

    const preset *r = config_preset(&cfg, "vllm-reranker");
    assert_int_equal(r->driver, DRV_VLLM);
    assert_true(r->vllm.enable_sleep_mode);
    assert_int_equal(r->vllm.sleep_level, 2);
    assert_string_equal(r->vllm.runner, "pooling");
    assert_non_null(strstr(r->vllm.hf_overrides, "\"architectures\":[\"Qwen3ForSequenceClassification\"]"));
    assert_true(r->vllm.gpu_memory_utilization > 0.149 && r->vllm.gpu_memory_utilization < 0.151);

    const preset *c = config_preset(&cfg, "vllm-chat");
    assert_int_equal(c->context_size, 8192);
    assert_int_equal(c->vllm.max_model_len, 8192);
    assert_int_equal(c->activation, ACT_INHERIT);
    assert_int_equal(c->restart.max_restarts, -1);

    const preset *a = config_preset(&cfg, "qwen3-asr");
    assert_string_equal(a->fastapi.working_dir, "/opt/asr");
    assert_string_equal(a->fastapi.app_module, "server:app");
    assert_string_equal(a->health_endpoint, "/healthz");

    const mode *m = config_mode(&cfg, "speak");
    assert_non_null(m);
    assert_int_equal(m->services.n, 4);
    assert_string_equal(m->services.v[3], "vllm-chat");
    assert_int_equal(m->service_pos[3].line, 7);
    assert_string_equal(m->name, "Speak");

    /* defaults of the settings table */
    assert_int_equal(cfg.set.supervisor.startup_timeout_ms, 600000);
    assert_int_equal(cfg.set.memory.watchdog_interval_ms, 500);
    assert_int_equal(cfg.set.router.activation, ACT_SWITCH);
    assert_int_equal(cfg.set.supervisor.runner, RUNNER_SPAWN);
    assert_string_equal(cfg.set.driver_binary[DRV_VLLM], "vllm");
    assert_string_equal(cfg.set.state_dir, "/tmp/gpumod-unit-state");
    assert_string_equal(cfg.set.log_dir, "/tmp/gpumod-unit-state/logs");
    config_release(&cfg);
}

static void demo_relative_paths(void **state)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/examples/demo", src_dir());
    config_paths paths = {.config_dir = dir, .state_dir = "/tmp/gpumod-unit-state"};
    config_opts opts = {.check_files = false};
    config cfg;
    assert_int_equal(config_load(&cfg, &paths, &opts), 0);
    const preset *p = config_preset(&cfg, "demo-chat");
    assert_non_null(p);
    assert_true(p->model_path[0] == '/');
    assert_non_null(strstr(p->model_path, "/examples/demo/models/aidreams260K-f32.gguf"));
    assert_string_equal(cfg.set.driver_binary[DRV_LLAMACPP], "fakellm");
    const preset *l = config_preset(&cfg, "demo-lane");
    assert_true(l->start_first);
    /* a llama.cpp preset that does not say n_gpu_layers gets the documented
     * default, every layer on the GPU (-1, rendered -ngl all), not 0 (CPU) */
    const preset *e = config_preset(&cfg, "demo-embed");
    assert_non_null(e);
    assert_int_equal(e->llama.n_gpu_layers, -1);
    config_release(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(python_compat_typed_values),
        cmocka_unit_test(demo_relative_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
