/* test_need.c - the need of a service from a measured footprint: the
 * figures as stored, and a detail that says how each was obtained (NVML
 * per process, a unified device's MemAvailable delta, the admitted bytes
 * of a partial footprint); service_need finds the footprint by config
 * hash in the store and reports source "measured". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testenv.h"
#include "drivers/hash.h"
#include "daemon/need.h"

#define MIB ((uint64_t)1 << 20)

static footprint fp(void)
{
    footprint f;
    memset(&f, 0, sizeof f);
    snprintf(f.hash, sizeof f.hash, "h");
    snprintf(f.service, sizeof f.service, "chat");
    f.host_bytes = 300 * MIB;
    return f;
}

static void nvml_measured(void **state)
{
    footprint f = fp();
    f.ngpu = 1;
    f.gpu[0].index = 0;
    f.gpu[0].bytes = 9000 * MIB;
    f.gpu[0].how = FP_GPU_NVML;
    need_detail nd;
    memset(&nd, 0, sizeof nd);
    need_from_footprint(&f, &nd);
    assert_string_equal(nd.n.source, "measured");
    assert_int_equal(nd.n.host_bytes, 300 * MIB);
    assert_int_equal(nd.n.ngpu, 1);
    assert_int_equal(nd.n.gpu[0].bytes, 9000 * MIB);
    assert_string_equal(nd.detail, "measured after a start of 'chat' with the same configuration: host: RSS of the "
                                   "process group; gpu 0: NVML per-process memory");
}

static void unified_delta(void **state)
{
    footprint f = fp();
    f.ngpu = 1;
    f.gpu[0].index = 0;
    f.gpu[0].bytes = 1500 * MIB;
    f.gpu[0].how = FP_GPU_UNIFIED;
    need_detail nd;
    memset(&nd, 0, sizeof nd);
    need_from_footprint(&f, &nd);
    assert_string_equal(nd.n.source, "measured");
    assert_int_equal(nd.n.gpu[0].index, 0);
    assert_int_equal(nd.n.gpu[0].bytes, 1500 * MIB);
    assert_non_null(strstr(nd.detail, "measured after a start of 'chat'"));
    assert_non_null(strstr(nd.detail, "gpu 0: unified: MemAvailable delta (admission to ready) minus the group's RSS"));
    assert_null(strstr(nd.detail, "admitted"));
}

static void partial_names_the_admitted_devices(void **state)
{
    footprint f = fp();
    f.ngpu = 3;
    f.gpu[0].index = 0;
    f.gpu[0].bytes = 100 * MIB;
    f.gpu[0].how = FP_GPU_NVML;
    f.gpu[1].index = 1;
    f.gpu[1].bytes = 4096 * MIB;
    f.gpu[1].how = FP_GPU_ADMITTED;
    f.gpu[2].index = 3;
    f.gpu[2].bytes = 2048 * MIB;
    f.gpu[2].how = FP_GPU_ADMITTED;
    need_detail nd;
    memset(&nd, 0, sizeof nd);
    need_from_footprint(&f, &nd);
    assert_string_equal(nd.n.source, "measured");
    assert_int_equal(nd.n.ngpu, 3);
    assert_int_equal(nd.n.gpu[1].bytes, 4096 * MIB);
    assert_int_equal(nd.n.gpu[2].index, 3);
    assert_int_equal(nd.n.gpu[2].bytes, 2048 * MIB);
    assert_string_equal(nd.detail,
                        "measured (host, gpu 0) + admitted (gpu 1, gpu 3) after a start of 'chat' with the same "
                        "configuration: host: RSS of the process group; gpu 0: NVML per-process memory; gpu 1: "
                        "per-process figures not available, the admitted bytes stand in; gpu 3: per-process figures "
                        "not available, the admitted bytes stand in");

    /* host only measured: "measured (host) + admitted (gpu N)" */
    f.ngpu = 2;
    f.gpu[0] = f.gpu[1];
    f.gpu[1] = f.gpu[2];
    memset(&nd, 0, sizeof nd);
    need_from_footprint(&f, &nd);
    assert_non_null(strstr(nd.detail, "measured (host) + admitted (gpu 1, gpu 3) after a start of 'chat'"));
}

static void base(preset *p, settings *s)
{
    memset(p, 0, sizeof *p);
    settings_defaults(s);
    p->id = "chat";
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
    p->vram_mb = -1;
    p->mem_host_mb = -1;
    p->mem_pins_host = -1;
}

static void service_need_reads_the_stored_footprint(void **state)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/gpumod-need-XXXXXX");
    assert_non_null(mkdtemp(dir));
    store *st;
    char err[256];
    assert_int_equal(store_open(&st, dir, true, 100, NULL, err, sizeof err), 0);
    preset p;
    settings s;
    base(&p, &s);
    snapshot snap;
    memset(&snap, 0, sizeof snap);
    char hash[65];
    assert_int_equal(config_hash(&p, &s, hash, NULL, err, sizeof err), 0);

    /* no footprint, no model file, nothing declared: an error */
    need_detail nd;
    assert_int_equal(service_need(&p, &s, &snap, st, &nd, err, sizeof err), -1);

    footprint f = fp();
    snprintf(f.hash, sizeof f.hash, "%s", hash);
    f.ngpu = 1;
    f.gpu[0].index = 0;
    f.gpu[0].bytes = 1234 * MIB;
    f.gpu[0].how = FP_GPU_UNIFIED;
    snprintf(f.detail, sizeof f.detail, "gpu 0 1234 MiB (unified: MemAvailable delta)");
    assert_int_equal(store_footprint_put(st, &f, err, sizeof err), 0);
    assert_int_equal(service_need(&p, &s, &snap, st, &nd, err, sizeof err), 0);
    assert_string_equal(nd.n.source, "measured");
    assert_string_equal(nd.hash, hash);
    assert_int_equal(nd.n.host_bytes, 300 * MIB);
    assert_int_equal(nd.n.gpu[0].bytes, 1234 * MIB);
    assert_non_null(strstr(nd.detail, "gpu 0: unified: MemAvailable delta"));

    /* partial: the detail says which figure stands in */
    f.gpu[0].how = FP_GPU_ADMITTED;
    f.gpu[0].bytes = 4000 * MIB;
    assert_int_equal(store_footprint_put(st, &f, err, sizeof err), 0);
    assert_int_equal(service_need(&p, &s, &snap, st, &nd, err, sizeof err), 0);
    assert_string_equal(nd.n.source, "measured");
    assert_int_equal(nd.n.gpu[0].bytes, 4000 * MIB);
    assert_non_null(strstr(nd.detail, "measured (host) + admitted (gpu 0)"));
    store_close(st);
    settings_release(&s);
    rm_rf(dir);
}

/* Whether the contiguity rule binds: the engine pins host memory unless
 * it is llama.cpp (gpumod sets GGML_CUDA_NO_PINNED=1) or the preset says
 * memory.pins_host: false; the preset's word wins either way. */
static void pins_host_by_engine(void **state)
{
    (void)state;
    preset p;
    settings s;
    snapshot snap;
    need_detail nd;
    char err[256];
    memset(&snap, 0, sizeof snap);
    struct {
        driver_kind drv;
        int pins;
        bool pageable;
    } cases[] = {
        {DRV_LLAMACPP, -1, true}, {DRV_VLLM, -1, false},   {DRV_COMMAND, -1, false},
        {DRV_LLAMACPP, 1, false}, {DRV_COMMAND, 0, true}, {DRV_VLLM, 0, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        base(&p, &s);
        p.model_path = NULL; /* the declared figure, whatever the engine */
        p.mem_host_mb = 100;
        p.driver = cases[i].drv;
        p.mem_pins_host = cases[i].pins;
        if (service_need(&p, &s, &snap, NULL, &nd, err, sizeof err)) fail_msg("case %zu: %s", i, err);
        if (nd.n.pageable_host != cases[i].pageable)
            fail_msg("case %zu: driver %d pins_host %d: pageable %d", i, cases[i].drv, cases[i].pins,
                     nd.n.pageable_host);
        settings_release(&s);
    }
}

/* One discrete 80 GiB GPU with index 0. */
static void one_gpu(snapshot *snap)
{
    memset(snap, 0, sizeof *snap);
    snap->ngpus = 1;
    snap->gpus[0].index = 0;
    snap->gpus[0].total_bytes = snap->gpus[0].free_bytes = 80ull << 30;
}

static int64_t gpu_mb_20000[1] = {20000};
static int64_t gpu_mb_1[1] = {1};

/* The estimate of the tiny fixture model, with nothing declared. */
static need_detail estimate_only(preset *p, settings *s, snapshot *snap)
{
    need_detail nd;
    char err[256];
    assert_int_equal(service_need(p, s, snap, NULL, &nd, err, sizeof err), 0);
    assert_string_equal(nd.n.source, "estimate");
    assert_int_equal(nd.n.ngpu, 1);
    assert_true(nd.n.gpu[0].bytes > 0);
    assert_true(nd.n.gpu[0].bytes < 20000 * MIB);
    return nd;
}

/* A declaration above the estimate raises the need (the watchdog stopped
 * a service that declared 20,000 MiB at its 603 MiB estimate's limit);
 * the source says the declaration bound, and which part. */
static void declared_raises_the_estimate(void **state)
{
    preset p;
    settings s;
    base(&p, &s);
    char *model = src_path("tests/fixtures/models/llama-2-tiny-random.gguf");
    p.model_path = model;
    snapshot snap;
    one_gpu(&snap);
    need_detail est = estimate_only(&p, &s, &snap);

    p.mem_gpu_mb = gpu_mb_20000;
    p.n_mem_gpu = 1;
    need_detail nd;
    char err[256];
    assert_int_equal(service_need(&p, &s, &snap, NULL, &nd, err, sizeof err), 0);
    assert_string_equal(nd.n.source, "declared");
    assert_int_equal(nd.n.ngpu, 1);
    assert_int_equal(nd.n.gpu[0].index, 0);
    assert_int_equal(nd.n.gpu[0].bytes, 20000 * MIB);
    assert_int_equal(nd.n.host_bytes, est.n.host_bytes); /* host not declared: the estimate's */
    assert_true(nd.has_estimate);
    assert_non_null(strstr(nd.detail, "estimated from '"));
    assert_non_null(strstr(nd.detail, "; declared memory.gpu_mb binds: gpu 0 20000 MiB > estimate "));

    /* host_mb by the same rule */
    p.mem_host_mb = 5000;
    assert_int_equal(service_need(&p, &s, &snap, NULL, &nd, err, sizeof err), 0);
    assert_int_equal(nd.n.host_bytes, 5000 * MIB);
    assert_non_null(strstr(nd.detail, "declared memory.host_mb binds: host 5000 MiB > estimate "));
    settings_release(&s);
    free(model);
}

/* A declaration below the estimate never lowers the need. */
static void declared_below_the_estimate_is_not_used(void **state)
{
    preset p;
    settings s;
    base(&p, &s);
    char *model = src_path("tests/fixtures/models/llama-2-tiny-random.gguf");
    p.model_path = model;
    snapshot snap;
    one_gpu(&snap);
    need_detail est = estimate_only(&p, &s, &snap);
    p.mem_gpu_mb = gpu_mb_1;
    p.n_mem_gpu = 1;
    p.mem_host_mb = 0;
    need_detail nd;
    char err[256];
    assert_int_equal(service_need(&p, &s, &snap, NULL, &nd, err, sizeof err), 0);
    assert_string_equal(nd.n.source, "estimate");
    assert_int_equal(nd.n.gpu[0].bytes, est.n.gpu[0].bytes);
    assert_int_equal(nd.n.host_bytes, est.n.host_bytes);
    assert_null(strstr(nd.detail, "binds"));

    /* config check's warning */
    char warn[512] = "";
    assert_int_equal(need_declared_below(&p, warn, sizeof warn), 1);
    assert_non_null(strstr(warn, "memory.gpu_mb 1 MiB is below the estimate of "));
    assert_non_null(strstr(warn, "the estimate is used: a declaration can raise the need, never lower it"));
    p.mem_gpu_mb = gpu_mb_20000;
    p.mem_host_mb = -1;
    assert_int_equal(need_declared_below(&p, warn, sizeof warn), 0);
    settings_release(&s);
    free(model);
}

/* A measured footprint is raised by a larger declaration too. */
static void declared_raises_the_measured(void **state)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/gpumod-need-XXXXXX");
    assert_non_null(mkdtemp(dir));
    store *st;
    char err[256];
    assert_int_equal(store_open(&st, dir, true, 100, NULL, err, sizeof err), 0);
    preset p;
    settings s;
    base(&p, &s);
    p.mem_gpu_mb = gpu_mb_20000;
    p.n_mem_gpu = 1;
    snapshot snap;
    one_gpu(&snap);
    footprint f = fp();
    assert_int_equal(config_hash(&p, &s, f.hash, NULL, err, sizeof err), 0);
    f.ngpu = 1;
    f.gpu[0].index = 0;
    f.gpu[0].bytes = 603 * MIB;
    f.gpu[0].how = FP_GPU_NVML;
    assert_int_equal(store_footprint_put(st, &f, err, sizeof err), 0);
    need_detail nd;
    assert_int_equal(service_need(&p, &s, &snap, st, &nd, err, sizeof err), 0);
    assert_string_equal(nd.n.source, "declared");
    assert_int_equal(nd.n.gpu[0].bytes, 20000 * MIB);
    assert_int_equal(nd.n.host_bytes, 300 * MIB);
    assert_non_null(strstr(nd.detail, "declared memory.gpu_mb binds: gpu 0 20000 MiB > measured 603 MiB"));
    store_close(st);
    settings_release(&s);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nvml_measured),
        cmocka_unit_test(unified_delta),
        cmocka_unit_test(partial_names_the_admitted_devices),
        cmocka_unit_test(service_need_reads_the_stored_footprint),
        cmocka_unit_test(pins_host_by_engine),
        cmocka_unit_test(declared_raises_the_estimate),
        cmocka_unit_test(declared_below_the_estimate_is_not_used),
        cmocka_unit_test(declared_raises_the_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
