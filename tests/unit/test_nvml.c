/* test_nvml.c - nvml_query against the fake libnvidia-ml.so.1 (and the
 * "old" one with unversioned symbols only): figures, processes, the v2
 * struct version, every fallback, unified devices, the release delay, the
 * process-list size protocol, and each error path (no library, a library
 * without NVML, init failure, a lost GPU, a broken state file).  The hung
 * case is in test_snapshot, through snapshot_take. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testenv.h"
#include "host/host.h"
#include "host/nvml.h"
#include "util/buf.h"

#define MIB (1024ULL * 1024ULL)

static char *tmpdir, *state_path, *lib_path, *old_lib_path;

/* Writers replace the state by rename, as the fake's readers expect. */
static void write_state(const char *json)
{
    char *tmp = xasprintf("%s.new", state_path);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(json, f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rename(tmp, state_path), 0);
    free(tmp);
}

/* A pid that existed and is gone (reaped). */
static pid_t dead_pid(void)
{
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) _exit(0);
    assert_int_equal(waitpid(p, NULL, 0), p);
    return p;
}

static nvml_state query(snapshot *s, const char *lib, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    err[0] = '\0';
    return nvml_query(s, lib, 5000 * scale(), err, errlen);
}

static const gpu_proc *find_proc(const gpu_dev *d, uint32_t pid)
{
    for (size_t i = 0; i < d->nprocs; i++)
        if (d->procs[i].pid == pid) return &d->procs[i];
    return NULL;
}

#define TWO_GPUS \
    "{\"devices\": [" \
    " {\"index\": 0, \"uuid\": \"GPU-aaaa\", \"name\": \"Fake 24GB\", \"total_mb\": 24576," \
    "  \"reserved_mb\": 300, \"base_used_mb\": 500, \"memory\": \"ok\", \"bus_id\": \"00000000:17:00.0\"," \
    "  \"util_gpu\": 42, \"util_mem\": 7, \"temp_c\": 51, \"power_mw\": 123456," \
    "  \"compute_capability\": \"12.0\"}," \
    " {\"index\": 1, \"uuid\": \"GPU-bbbb\", \"name\": \"Fake 80GB\", \"total_mb\": 81920," \
    "  \"base_used_mb\": 0, \"memory\": \"ok\"}]," \
    " \"processes\": [{\"pid\": %d, \"device\": 0, \"used_mb\": 9000}," \
    "                 {\"pid\": %d, \"device\": 0, \"used_mb\": 4000}," \
    "                 {\"pid\": 1, \"device\": 1}]," \
    " \"driver_version\": \"580.159.04\", \"release_delay_ms\": 0%s}"

/* Every figure of two discrete devices; a dead pid with no release delay
 * holds nothing; a process whose usage NVML cannot tell is UINT64_MAX;
 * reserved comes apart from used only through memory v2 with the right
 * struct version (the fake rejects any other). */
static void discrete_devices(void **state)
{
    (void)state;
    char json[2048], err[256];
    snprintf(json, sizeof json, TWO_GPUS, (int)getpid(), (int)dead_pid(), "");
    write_state(json);
    snapshot s;
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_OK);
    assert_string_equal(err, "");
    assert_int_equal(s.ngpus, 2);
    assert_true(s.nvidia_driver);
    assert_string_equal(s.driver_version, "580.159.04");
    gpu_dev *d = &s.gpus[0];
    assert_int_equal(d->index, 0);
    assert_string_equal(d->uuid, "GPU-aaaa");
    assert_string_equal(d->name, "Fake 24GB");
    assert_string_equal(d->bus_id, "00000000:17:00.0");
    assert_false(d->unified);
    assert_int_equal(d->total_bytes, 24576 * MIB);
    assert_int_equal(d->reserved_bytes, 300 * MIB);
    assert_int_equal(d->used_bytes, (500 + 9000) * MIB);
    assert_int_equal(d->free_bytes, (24576 - 300 - 500 - 9000) * MIB);
    assert_int_equal(d->util_gpu_pct, 42);
    assert_int_equal(d->util_mem_pct, 7);
    assert_int_equal(d->temp_c, 51);
    assert_int_equal(d->power_mw, 123456);
    assert_int_equal(d->cc_major, 12);
    assert_int_equal(d->cc_minor, 0);
    assert_int_equal(d->nprocs, 1);
    assert_int_equal(d->procs[0].pid, (uint32_t)getpid());
    assert_int_equal(d->procs[0].used_bytes, 9000 * MIB);
    d = &s.gpus[1];
    assert_int_equal(d->index, 1);
    assert_string_equal(d->name, "Fake 80GB");
    assert_string_equal(d->bus_id, "00000000:02:00.0");
    assert_int_equal(d->total_bytes, 81920 * MIB);
    assert_int_equal(d->free_bytes, 81920 * MIB);
    assert_int_equal(d->reserved_bytes, 0);
    assert_int_equal(d->cc_major, 0); /* no compute_capability: NOT_SUPPORTED, unknown */
    assert_int_equal(d->cc_minor, 0);
    assert_int_equal(d->nprocs, 1);
    assert_int_equal(d->procs[0].pid, 1);
    assert_int_equal(d->procs[0].used_bytes, UINT64_MAX);
    snapshot_release(&s);
}

/* A driver that has the _v2 symbol but rejects the struct version: v1,
 * where the reservation is folded into used. */
static void memory_v2_rejected(void **state)
{
    (void)state;
    char json[2048], err[256];
    snprintf(json, sizeof json, TWO_GPUS, (int)getpid(), (int)getpid(),
             ", \"return\": {\"nvmlDeviceGetMemoryInfo_v2\": 25}");
    write_state(json);
    snapshot s;
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_OK);
    gpu_dev *d = &s.gpus[0];
    assert_int_equal(d->reserved_bytes, 0);
    assert_int_equal(d->used_bytes, (300 + 500 + 9000 + 4000) * MIB);
    assert_int_equal(d->free_bytes, (24576 - 300 - 500 - 9000 - 4000) * MIB);
    assert_int_equal(d->nprocs, 2);
    snapshot_release(&s);
}

/* The library of an old driver: nvmlInit, GetCount, GetHandleByIndex,
 * memory v1, the v1 process struct (16 bytes, no instance ids), PCI _v2. */
static void old_library(void **state)
{
    (void)state;
    char json[2048], err[256];
    snprintf(json, sizeof json, TWO_GPUS, (int)getpid(), 1, "");
    write_state(json);
    snapshot s;
    assert_int_equal(query(&s, old_lib_path, err, sizeof err), NVML_OK);
    assert_int_equal(s.ngpus, 2);
    gpu_dev *d = &s.gpus[0];
    assert_string_equal(d->bus_id, "00000000:17:00.0");
    assert_int_equal(d->cc_major, 0); /* no nvmlDeviceGetCudaComputeCapability: unknown */
    assert_int_equal(d->reserved_bytes, 0);
    assert_int_equal(d->used_bytes, (300 + 500 + 9000 + 4000) * MIB);
    assert_int_equal(d->nprocs, 2);
    const gpu_proc *p = find_proc(d, (uint32_t)getpid());
    assert_non_null(p);
    assert_int_equal(p->used_bytes, 9000 * MIB);
    p = find_proc(d, 1);
    assert_non_null(p);
    assert_int_equal(p->used_bytes, 4000 * MIB);
    assert_int_equal(s.gpus[1].procs[0].used_bytes, UINT64_MAX);
    snapshot_release(&s);
}

/* GB10: memory NOT_SUPPORTED -> unified, figures left for the caller;
 * per-process usage still comes through; gauges NVML cannot tell are -1. */
static void unified_device(void **state)
{
    (void)state;
    char json[1024], err[256];
    snprintf(json, sizeof json,
             "{\"devices\": [{\"index\": 0, \"uuid\": \"GPU-gb10\", \"name\": \"NVIDIA GB10\","
             " \"total_mb\": 0, \"base_used_mb\": 0, \"memory\": \"not_supported\","
             " \"util_gpu\": null, \"temp_c\": null, \"power_mw\": null}],"
             " \"processes\": [{\"pid\": %d, \"device\": 0, \"used_mb\": 37650}]}",
             (int)getpid());
    write_state(json);
    snapshot s;
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_OK);
    assert_int_equal(s.ngpus, 1);
    gpu_dev *d = &s.gpus[0];
    assert_true(d->unified);
    assert_int_equal(d->total_bytes, 0);
    assert_int_equal(d->free_bytes, 0);
    assert_int_equal(d->util_gpu_pct, -1);
    assert_int_equal(d->util_mem_pct, -1);
    assert_int_equal(d->temp_c, -1);
    assert_int_equal(d->power_mw, -1);
    assert_int_equal(d->nprocs, 1);
    assert_int_equal(d->procs[0].used_bytes, 37650 * MIB);
    snapshot_release(&s);
}

/* A dead pid keeps its memory until release_delay_ms after the first
 * query that found it gone; that time is kept in the state file, so a
 * query from another process sees the same clock. */
static void release_delay(void **state)
{
    (void)state;
    int64_t delay = 400 * scale();
    pid_t gone = dead_pid();
    char json[1024], err[256];
    snprintf(json, sizeof json,
             "{\"devices\": [{\"index\": 0, \"uuid\": \"GPU-aaaa\", \"name\": \"Fake\","
             " \"total_mb\": 10000, \"base_used_mb\": 0, \"memory\": \"ok\"}],"
             " \"processes\": [{\"pid\": %d, \"device\": 0, \"used_mb\": 6000}],"
             " \"release_delay_ms\": %lld}",
             (int)gone, (long long)delay);
    write_state(json);
    int64_t t0 = mono_ms();
    snapshot s;
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_OK);
    assert_int_equal(s.gpus[0].free_bytes, 4000 * MIB);
    assert_non_null(find_proc(&s.gpus[0], (uint32_t)gone));
    snapshot_release(&s);
    char *text = read_text(state_path), key[32];
    snprintf(key, sizeof key, "\"%d\"", (int)gone);
    assert_non_null(strstr(text, "gone_ms"));
    assert_non_null(strstr(text, key));
    free(text);

    int64_t freed_at = -1;
    while (mono_ms() - t0 < delay + 5000 * scale()) {
        assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_OK);
        /* the memory query and the process list are two NVML calls: right at
         * the end of the delay they may straddle it (so may a real NVML's),
         * so agreement is checked on the query after, below */
        bool freed = s.gpus[0].free_bytes == 10000 * MIB;
        snapshot_release(&s);
        if (freed) {
            freed_at = mono_ms();
            break;
        }
        usleep(20000);
    }
    assert_true(freed_at >= 0);
    assert_true(freed_at - t0 >= delay);
    /* once freed, both calls agree: the memory is back and the pid is gone */
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_OK);
    assert_int_equal(s.gpus[0].free_bytes, 10000 * MIB);
    assert_null(find_proc(&s.gpus[0], (uint32_t)gone));
    snapshot_release(&s);
}

/* More processes than any first guess: the INSUFFICIENT_SIZE protocol. */
static void many_processes(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    buf_adds(&b, "{\"devices\": [{\"index\": 0, \"uuid\": \"GPU-a\", \"name\": \"F\", \"total_mb\": "
                 "100000, \"base_used_mb\": 0, \"memory\": \"ok\"}], \"processes\": [");
    for (int i = 0; i < 50; i++)
        buf_printf(&b, "%s{\"pid\": %d, \"device\": 0, \"used_mb\": %d}", i ? "," : "",
                   (int)getpid(), i + 1);
    buf_adds(&b, "]}");
    write_state(b.p);
    buf_release(&b);
    char err[256];
    snapshot s;
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_OK);
    assert_int_equal(s.gpus[0].nprocs, 50);
    assert_int_equal(s.gpus[0].procs[49].used_bytes, 50 * MIB);
    assert_int_equal(s.gpus[0].used_bytes, (50 * 51 / 2) * MIB);
    snapshot_release(&s);
}

#define ONE_GPU \
    "{\"devices\": [{\"index\": 0, \"uuid\": \"GPU-a\", \"name\": \"F\", \"total_mb\": 1000," \
    " \"base_used_mb\": 0, \"memory\": \"ok\"}], \"processes\": []%s}"

static void write_one_gpu(const char *extra)
{
    char json[1024];
    snprintf(json, sizeof json, ONE_GPU, extra);
    write_state(json);
}

/* A query failing after init fails the whole NVML part (the gate must not
 * see half a device) and names the call; the next query starts a fresh
 * session and works.  A process list NVML does not support is empty. */
static void query_failures(void **state)
{
    (void)state;
    char err[256];
    snapshot s;
    write_one_gpu(", \"return\": {\"nvmlDeviceGetMemoryInfo_v2\": 15}");
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_FAILED);
    assert_string_equal(err, "device 0: nvmlDeviceGetMemoryInfo_v2: gpu is lost (15)");
    assert_int_equal(s.ngpus, 0);

    write_one_gpu(", \"return\": {\"nvmlDeviceGetComputeRunningProcesses_v3\": 999}");
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_FAILED);
    assert_string_equal(err,
                        "device 0: nvmlDeviceGetComputeRunningProcesses_v3: unknown error (999)");

    write_one_gpu(", \"return\": {\"nvmlDeviceGetCount_v2\": 17}");
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_FAILED);
    assert_string_equal(err, "nvmlDeviceGetCount_v2: operating system call failed (17)");

    write_one_gpu(", \"return\": {\"nvmlDeviceGetHandleByIndex_v2\": 15}");
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_FAILED);
    assert_string_equal(err, "device 0: nvmlDeviceGetHandleByIndex_v2: gpu is lost (15)");

    write_one_gpu(", \"return\": {\"nvmlDeviceGetComputeRunningProcesses_v3\": 3}");
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_OK);
    assert_int_equal(s.gpus[0].nprocs, 0);
    assert_int_equal(s.gpus[0].free_bytes, 1000 * MIB);
    snapshot_release(&s);

    /* display-only calls failing leave the fields empty, not the query */
    write_one_gpu(", \"return\": {\"nvmlDeviceGetName\": 999, \"nvmlDeviceGetPciInfo_v3\": 3}");
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_OK);
    assert_string_equal(s.gpus[0].name, "");
    assert_string_equal(s.gpus[0].bus_id, "");
    assert_string_equal(s.gpus[0].uuid, "GPU-a");
    snapshot_release(&s);

    write_one_gpu("");
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_OK);
    assert_int_equal(s.ngpus, 1);
    snapshot_release(&s);
}

/* Init fails (no driver loaded): FAILED, and no driver is claimed; it is
 * retried by the next query.  The library is loaded under another path
 * name, so this query is the first init of its session. */
static void init_failure(void **state)
{
    (void)state;
    char err[256];
    snapshot s;
    char *other = build_path("fakes/./libnvidia-ml.so.1");
    write_one_gpu(", \"return\": {\"nvmlInit_v2\": 9}");
    assert_int_equal(query(&s, other, err, sizeof err), NVML_FAILED);
    assert_string_equal(err, "nvmlInit_v2: driver not loaded (9)");
    assert_false(s.nvidia_driver);
    assert_int_equal(s.ngpus, 0);
    write_one_gpu("");
    assert_int_equal(query(&s, other, err, sizeof err), NVML_OK);
    assert_true(s.nvidia_driver);
    snapshot_release(&s);
    free(other);
}

/* No state file at all is the fake's "no driver"; a state file that is
 * not JSON makes every call fail with UNKNOWN. */
static void broken_state(void **state)
{
    (void)state;
    char err[256];
    snapshot s;
    write_state("{\"devices\": [");
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_FAILED);
    assert_non_null(strstr(err, "unknown error (999)"));
    unlink(state_path);
    char *other = build_path("fakes/../fakes/libnvidia-ml.so.1");
    assert_int_equal(query(&s, other, err, sizeof err), NVML_FAILED);
    assert_string_equal(err, "nvmlInit_v2: driver not loaded (9)");
    free(other);
    write_one_gpu("");
}

static void no_library(void **state)
{
    (void)state;
    char err[256];
    snapshot s;
    assert_int_equal(query(&s, "/nonexistent/libnvidia-ml.so.1", err, sizeof err), NVML_ABSENT);
    assert_string_equal(err, "cannot load '/nonexistent/libnvidia-ml.so.1': cannot open shared "
                             "object file: No such file or directory");
    assert_false(s.nvidia_driver);
    assert_int_equal(s.ngpus, 0);
    /* and back: the next query loads the real one again */
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_OK);
    snapshot_release(&s);
}

/* A shared library that is not NVML. */
static void not_nvml(void **state)
{
    (void)state;
    char err[256];
    snapshot s;
    assert_int_equal(query(&s, "libc.so.6", err, sizeof err), NVML_FAILED);
    assert_string_equal(err, "'libc.so.6' has no nvmlInit_v2");
    assert_int_equal(s.ngpus, 0);
}

/* The compute capability: "12.1" read; a value the fake cannot parse or a
 * forced NOT_SUPPORTED leaves it unknown (0.0) without failing the query:
 * it is a fact for the rule table, not a figure the gate needs. */
static void compute_capability(void **state)
{
    (void)state;
    char err[256];
    snapshot s;
#define CC_DEV "{\"devices\": [{\"index\": 0, \"name\": \"GB10\", \"memory\": \"not_supported\"," \
               " \"compute_capability\": \"%s\"}]%s}"
    char json[512];
    snprintf(json, sizeof json, CC_DEV, "12.1", "");
    write_state(json);
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_OK);
    assert_true(s.gpus[0].unified);
    assert_int_equal(s.gpus[0].cc_major, 12);
    assert_int_equal(s.gpus[0].cc_minor, 1);
    snapshot_release(&s);
    snprintf(json, sizeof json, CC_DEV, "twelve", "");
    write_state(json);
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_OK);
    assert_int_equal(s.gpus[0].cc_major, 0);
    assert_int_equal(s.gpus[0].cc_minor, 0);
    snapshot_release(&s);
    snprintf(json, sizeof json, CC_DEV, "8.9", ", \"return\": {\"nvmlDeviceGetCudaComputeCapability\": 3}");
    write_state(json);
    assert_int_equal(query(&s, lib_path, err, sizeof err), NVML_OK);
    assert_int_equal(s.gpus[0].cc_major, 0);
    snapshot_release(&s);
}

static int setup(void **state)
{
    (void)state;
    lib_path = build_path("fakes/libnvidia-ml.so.1");
    old_lib_path = build_path("fakes/old/libnvidia-ml.so.1");
    if (access(lib_path, R_OK) != 0 || access(old_lib_path, R_OK) != 0) {
        fprintf(stderr, "# %s or %s is missing: run make\n", lib_path, old_lib_path);
        return -1;
    }
    const char *t = getenv("TMPDIR");
    tmpdir = xasprintf("%s/gpumod-test-nvml.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmpdir)) return -1;
    state_path = xasprintf("%s/nvml.json", tmpdir);
    setenv("GPUMOD_FAKE_NVML_STATE", state_path, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (tmpdir) rm_rf(tmpdir);
    free(tmpdir);
    free(state_path);
    free(lib_path);
    free(old_lib_path);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(discrete_devices), cmocka_unit_test(memory_v2_rejected),
        cmocka_unit_test(old_library),      cmocka_unit_test(unified_device),
        cmocka_unit_test(release_delay),    cmocka_unit_test(many_processes),
        cmocka_unit_test(query_failures),   cmocka_unit_test(init_failure),
        cmocka_unit_test(broken_state),     cmocka_unit_test(no_library),
        cmocka_unit_test(not_nvml),         cmocka_unit_test(compute_capability),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
