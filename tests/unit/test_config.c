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

#include "testenv.h"
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
    int rc = config_load(cfg, &paths);
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
    config cfg;
    assert_int_equal(config_load(&cfg, &paths), 0);
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

static void load_one(config *cfg, const char *dir, const char *id)
{
    unsetenv("GPUMOD_PRESETS_DIR");
    unsetenv("GPUMOD_MODES_DIR");
    config_paths paths = {.config_dir = dir, .state_dir = "/tmp/gpumod-unit-state"};
    config_load_preset(cfg, &paths, id);
}

/* preflight --for reads one preset: the same one, parsed the same way, as
 * config_load then config_preset, for every preset of both trees */
static void one_preset_as_the_whole_load(void **state)
{
    const char *trees[] = {"tests/fixtures/config/python-compat", "examples/demo"};
    for (size_t t = 0; t < 2; t++) {
        char *dir = src_path(trees[t]);
        config all;
        config_paths paths = {.config_dir = dir, .state_dir = "/tmp/gpumod-unit-state"};
        config_load(&all, &paths);
        assert_true(all.n_presets >= 3);
        for (size_t i = 0; i < all.n_presets; i++) {
            const preset *want = &all.presets[i];
            config one;
            load_one(&one, dir, want->id);
            assert_int_equal(one.n_presets, 1);
            assert_int_equal(one.n_modes, 0);
            const preset *got = config_preset(&one, want->id);
            assert_non_null(got);
            assert_string_equal(got->pos.file, want->pos.file);
            assert_int_equal(got->port, want->port);
            assert_int_equal(got->driver, want->driver);
            assert_int_equal(got->vram_mb, want->vram_mb);
            assert_int_equal(got->has_errors, want->has_errors);
            assert_string_equal(got->model_path ? got->model_path : "-", want->model_path ? want->model_path : "-");
            assert_string_equal(one.set.state_dir, all.set.state_dir);
            assert_string_equal(one.set.socket, all.set.socket);
            assert_string_equal(one.set.driver_binary[DRV_LLAMACPP], all.set.driver_binary[DRV_LLAMACPP]);
            assert_string_equal(one.config_abs, all.config_abs);
            config_release(&one);
        }
        config outside;
        load_one(&outside, dir, "nope");
        assert_int_equal(outside.n_presets, 0);
        assert_null(config_preset(&outside, "nope"));
        config_release(&outside);
        config_release(&all);
        free(dir);
    }
}

/* Files that the peek cannot settle, a broken neighbour, a duplicate id:
 * the preset found is config_load's; only its own file's diags are kept. */
static void one_preset_among_odd_files(void **state)
{
    char tmpl[] = "/tmp/gpumod-test-config-XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    char *pd = xasprintf("%s/presets", dir), *sub = xasprintf("%s/presets/sub", dir);
    assert_int_equal(mkdir(pd, 0755), 0);
    assert_int_equal(mkdir(sub, 0755), 0);
    struct {
        const char *name, *text;
    } files[] = {
        {"a-broken.yaml", "id: [unclosed\n"},
        /* the id comes in through a merge key: loaded in full to tell */
        {"b-merged.yaml", "base: &b {id: merged, driver: command, port: 7001, command: [/bin/true]}\n<<: *b\n"},
        /* the id matches but the file is invalid further on: not a preset */
        {"c-late-error.yaml", "id: dup\ndriver: command\nport: 7002\nx: [unclosed\n"},
        {"d-dup.yaml", "id: dup\ndriver: command\nport: 7003\ncommand: [/bin/true]\n"},
        {"sub/e-dup.yaml", "id: dup\ndriver: command\nport: 7004\ncommand: [/bin/true]\n"},
        {"f-bad-field.yaml", "id: typo\ndriver: command\nport: 7005\ncommand: [/bin/true]\nmemory: {gpu_mb: lots}\n"},
    };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char *p = xasprintf("%s/%s", pd, files[i].name);
        write_file(p, files[i].text, 0644);
        free(p);
    }
    config all, one;
    config_paths paths = {.config_dir = dir, .state_dir = "/tmp/gpumod-unit-state"};
    config_load(&all, &paths);
    const char *ids[] = {"merged", "dup", "typo"};
    for (size_t i = 0; i < 3; i++) {
        load_one(&one, dir, ids[i]);
        const preset *got = config_preset(&one, ids[i]), *want = config_preset(&all, ids[i]);
        assert_non_null(got);
        assert_non_null(want);
        assert_int_equal(got->port, want->port);
        assert_string_equal(got->pos.file, want->pos.file);
        assert_int_equal(got->has_errors, want->has_errors);
        /* the diags of its own file, as config_load has them, and none
         * about another file: the broken neighbour is not parsed */
        size_t mine = 0;
        for (size_t d = 0; d < all.diags.n; d++)
            if (all.diags.v[d].pos.file && !strcmp(all.diags.v[d].pos.file, want->pos.file)) mine++;
        assert_int_equal(one.diags.n, mine);
        for (size_t d = 0; d < one.diags.n; d++) assert_string_equal(one.diags.v[d].pos.file, got->pos.file);
        if (!strcmp(ids[i], "typo")) {
            assert_true(got->has_errors);
            /* the range is written only on this error path now, and still written */
            assert_non_null(strstr(one.diags.v[0].msg, "gpu_mb: expected an integer in 0..16777216, found 'lots'"));
        }
        config_release(&one);
    }
    assert_int_equal(config_preset(&all, "dup")->port, 7003);
    assert_true(all.diags.errors >= 3); /* the broken file, the late error, the duplicate id */
    config_release(&all);
    rm_rf(dir);
    free(pd);
    free(sub);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(python_compat_typed_values),
        cmocka_unit_test(demo_relative_paths),
        cmocka_unit_test(one_preset_as_the_whole_load),
        cmocka_unit_test(one_preset_among_odd_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
