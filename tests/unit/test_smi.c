/* test_smi.c - the nvidia-smi fallback: the parsers on the real H200's
 * output and on every shape the tool is known to print ([N/A], [Not
 * Supported], units left on, commas in names, GB10's memory), garbage
 * (clear errors, no crash), and smi_query running the fake nvidia-smi:
 * figures, processes, PATH lookup, a missing program, a driver it cannot
 * reach, one that hangs (bounded by the deadline), one printing garbage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testenv.h"
#include "host/host.h"
#include "host/smi.h"
#include "util/buf.h"

#define MIB (1024ULL * 1024ULL)

static char *tmpdir, *state_path, *smi_path;

/* A stand-in nvidia-smi: a shell script in the temp dir. */
static char *script(const char *name, const char *body)
{
    char *p = xasprintf("%s/%s", tmpdir, name);
    char *text = xasprintf("#!/bin/sh\n%s\n", body);
    write_file(p, text, 0755);
    free(text);
    return p;
}

/* ---- the parsers ---------------------------------------------------------- */

/* What the real H200 printed (tests/fixtures/device/h200): nvidia-smi's
 * used leaves the 615 MiB reservation out, as NVML's v2 does. */
static void parse_h200(void **state)
{
    (void)state;
    char *path = src_path("tests/fixtures/device/h200/smi-gpu.csv");
    char *csv = read_text(path);
    assert_non_null(csv);
    snapshot s;
    memset(&s, 0, sizeof s);
    char err[256] = "";
    assert_int_equal(smi_parse_gpus(&s, csv, err, sizeof err), 0);
    assert_int_equal(s.ngpus, 1);
    gpu_dev *d = &s.gpus[0];
    assert_int_equal(d->index, 0);
    assert_string_equal(d->uuid, "GPU-487ab377-9af6-3f4d-306a-8ecc7709f2e7");
    assert_string_equal(d->name, "NVIDIA H200");
    assert_string_equal(d->bus_id, "00000000:00:06.0");
    assert_false(d->unified);
    assert_int_equal(d->total_bytes, 143771 * MIB);
    assert_int_equal(d->used_bytes, 0);
    assert_int_equal(d->free_bytes, 143156 * MIB);
    assert_int_equal(d->reserved_bytes, 615 * MIB);
    assert_int_equal(d->util_gpu_pct, 0);
    assert_int_equal(d->util_mem_pct, -1);
    assert_int_equal(d->temp_c, 33);
    assert_int_equal(d->power_mw, 125840);
    /* the probe's NVML figures, rounded to the MiB as nvidia-smi does */
    assert_int_equal(d->free_bytes / MIB, (150109880320ULL + MIB / 2) / MIB);
    assert_int_equal(d->total_bytes / MIB, (150754820096ULL + MIB / 2) / MIB);
    assert_int_equal(smi_parse_apps(&s, "", err, sizeof err), 0); /* it printed nothing */
    assert_int_equal(s.gpus[0].nprocs, 0);
    snapshot_release(&s);
    free(csv);
    free(path);
}

/* GB10 prints [N/A] for memory; gauges it cannot read are placeholders
 * too; blank lines and CRLF are tolerated; several devices. */
static void parse_placeholders(void **state)
{
    (void)state;
    snapshot s;
    memset(&s, 0, sizeof s);
    char err[256] = "";
    const char *csv =
        "0, GPU-gb10, NVIDIA GB10, 0000000F:01:00.0, [N/A], [N/A], [N/A], 0, 35, 11.17\r\n"
        "\n"
        "1, GPU-x, Some GPU, 00000000:02:00.0, 1000, 100, 850, [Not Supported], N/A, "
        "[Unknown Error]\n";
    assert_int_equal(smi_parse_gpus(&s, csv, err, sizeof err), 0);
    assert_int_equal(s.ngpus, 2);
    gpu_dev *d = &s.gpus[0];
    assert_true(d->unified);
    assert_int_equal(d->total_bytes, 0);
    assert_int_equal(d->util_gpu_pct, 0);
    assert_int_equal(d->temp_c, 35);
    assert_int_equal(d->power_mw, 11170);
    d = &s.gpus[1];
    assert_false(d->unified);
    assert_int_equal(d->index, 1);
    assert_int_equal(d->reserved_bytes, 50 * MIB);
    assert_int_equal(d->util_gpu_pct, -1);
    assert_int_equal(d->temp_c, -1);
    assert_int_equal(d->power_mw, -1);
    snapshot_release(&s);
}

/* Units left on (nounits ignored), a name with commas, one of used/free
 * unknown (derived from the other), and more devices than we keep. */
static void parse_odd_shapes(void **state)
{
    (void)state;
    snapshot s;
    memset(&s, 0, sizeof s);
    char err[256] = "";
    assert_int_equal(smi_parse_gpus(&s,
                                    "0, GPU-a, Card, Rev 2, Model X, 00000000:01:00.0, 1000 MiB, "
                                    "200 MiB, 700 MiB, 5 %, 40, 50.5 W\n",
                                    err, sizeof err),
                     0);
    assert_int_equal(s.ngpus, 1);
    assert_string_equal(s.gpus[0].name, "Card, Rev 2, Model X");
    assert_string_equal(s.gpus[0].bus_id, "00000000:01:00.0");
    assert_int_equal(s.gpus[0].free_bytes, 700 * MIB);
    assert_int_equal(s.gpus[0].reserved_bytes, 100 * MIB);
    assert_int_equal(s.gpus[0].util_gpu_pct, 5);
    assert_int_equal(s.gpus[0].power_mw, 50500);

    assert_int_equal(smi_parse_gpus(&s, "0, GPU-a, X, b, 1000, 300, [N/A], 0, 0, 0\n", err, sizeof err), 0);
    assert_int_equal(s.gpus[0].free_bytes, 700 * MIB);
    assert_int_equal(smi_parse_gpus(&s, "0, GPU-a, X, b, 1000, [N/A], 600, 0, 0, 0\n", err, sizeof err), 0);
    assert_int_equal(s.gpus[0].used_bytes, 400 * MIB);

    buf b = BUF_INIT;
    for (int i = 0; i < HOST_MAX_GPUS + 4; i++)
        buf_printf(&b, "%d, GPU-%d, X, b, 1000, 0, 1000, 0, 0, 0\n", i, i);
    assert_int_equal(smi_parse_gpus(&s, b.p, err, sizeof err), 0);
    assert_int_equal(s.ngpus, HOST_MAX_GPUS);
    assert_string_equal(s.gpus[HOST_MAX_GPUS - 1].uuid, "GPU-15");
    buf_release(&b);
    snapshot_release(&s);
}

/* Garbage: an error that names the line and quotes it (control bytes
 * made visible), and no GPUs left behind. */
static void parse_garbage(void **state)
{
    (void)state;
    snapshot s;
    memset(&s, 0, sizeof s);
    char err[256] = "";
    assert_int_equal(smi_parse_gpus(&s, "garbage\x1b[31m\n", err, sizeof err), -1);
    assert_string_equal(err, "nvidia-smi --query-gpu: line 1: 1 field, expected 10: 'garbage?[31m'");
    assert_int_equal(s.ngpus, 0);

    assert_int_equal(smi_parse_gpus(&s,
                                    "0, GPU-a, X, b, 1000, 0, 1000, 0, 0, 0\n"
                                    "1, GPU-b, X, b, lots, 0, 1000, 0, 0, 0\n",
                                    err, sizeof err),
                     -1);
    assert_string_equal(err, "nvidia-smi --query-gpu: line 2: memory.total 'lots' is not a number");
    assert_int_equal(s.ngpus, 0);

    const char *bad[] = {
        "x, GPU-a, X, b, 1000, 0, 1000, 0, 0, 0",      /* index */
        "[N/A], GPU-a, X, b, 1000, 0, 1000, 0, 0, 0",  /* index must be told */
        "0, GPU-a, X, b, 1000, 0, 1000, 0, 0, -5",     /* power */
        "0, GPU-a, X, b, 1000, 0, 1000, 0, 0, 5 kW",   /* unit */
        "0, GPU-a, X, b, 99999999999999999999999, 0, 1, 0, 0, 0", /* overflow */
        "0, GPU-a, X, b, 1000, [N/A], [N/A], 0, 0, 0", /* neither used nor free */
        "0,1,2,3,4,5,6,7,8",
        "No devices were found",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        assert_int_equal(smi_parse_gpus(&s, bad[i], err, sizeof err), -1);
        assert_non_null(strstr(err, "nvidia-smi --query-gpu: line 1: "));
        assert_int_equal(s.ngpus, 0);
    }
    /* long garbage is cut in the message */
    char longline[400];
    memset(longline, 'z', sizeof longline - 1);
    longline[sizeof longline - 1] = '\0';
    assert_int_equal(smi_parse_gpus(&s, longline, err, sizeof err), -1);
    assert_true(strlen(err) < 150);
    assert_non_null(strstr(err, "..."));
}

static void parse_apps(void **state)
{
    (void)state;
    snapshot s;
    memset(&s, 0, sizeof s);
    char err[256] = "";
    assert_int_equal(smi_parse_gpus(&s,
                                    "0, GPU-a, X, b, 1000, 0, 1000, 0, 0, 0\n"
                                    "1, GPU-b, X, b, 1000, 0, 1000, 0, 0, 0\n",
                                    err, sizeof err),
                     0);
    assert_int_equal(smi_parse_apps(&s,
                                    "GPU-b, 4242, 9000\n"
                                    "GPU-a, 17, [N/A]\n"
                                    "GPU-gone, 99, 5\n" /* not listed: skipped */
                                    "GPU-b, 4243, 1\n",
                                    err, sizeof err),
                     0);
    assert_int_equal(s.gpus[0].nprocs, 1);
    assert_int_equal(s.gpus[0].procs[0].pid, 17);
    assert_int_equal(s.gpus[0].procs[0].used_bytes, UINT64_MAX);
    assert_int_equal(s.gpus[1].nprocs, 2);
    assert_int_equal(s.gpus[1].procs[0].pid, 4242);
    assert_int_equal(s.gpus[1].procs[0].used_bytes, 9000 * MIB);
    assert_int_equal(s.gpus[1].procs[1].pid, 4243);

    assert_int_equal(smi_parse_apps(&s, "GPU-a, notapid, 5\n", err, sizeof err), -1);
    assert_string_equal(err, "nvidia-smi --query-compute-apps: line 1: pid is not a number: 'GPU-a, notapid, 5'");
    assert_int_equal(smi_parse_apps(&s, "\nGPU-a, 5, five\n", err, sizeof err), -1);
    assert_string_equal(err, "nvidia-smi --query-compute-apps: line 2: used_memory is not a number: 'GPU-a, 5, five'");
    assert_int_equal(smi_parse_apps(&s, "GPU-a, 5\n", err, sizeof err), -1);
    assert_string_equal(err, "nvidia-smi --query-compute-apps: line 1: expected gpu_uuid, pid, used_memory: 'GPU-a, 5'");
    assert_int_equal(smi_parse_apps(&s, "GPU-a, 0, 5\n", err, sizeof err), -1);
    assert_int_equal(smi_parse_apps(&s, "GPU-a, 4294967296, 5\n", err, sizeof err), -1);
    snapshot_release(&s);
}

/* ---- running it ---------------------------------------------------------- */

#define STATE_JSON                                                                          \
    "{\"devices\": ["                                                                        \
    " {\"index\": 0, \"uuid\": \"GPU-aaaa\", \"name\": \"Fake 24GB\", \"total_mb\": 24576,"    \
    "  \"reserved_mb\": 300, \"base_used_mb\": 500, \"memory\": \"ok\", \"temp_c\": 44,"      \
    "  \"power_mw\": 71230, \"util_gpu\": 9},"                                                \
    " {\"index\": 1, \"uuid\": \"GPU-gb10\", \"name\": \"NVIDIA GB10\", \"total_mb\": 0,"      \
    "  \"base_used_mb\": 0, \"memory\": \"not_supported\"}],"                                 \
    " \"processes\": [{\"pid\": %d, \"device\": 0, \"used_mb\": 9000},"                       \
    "                 {\"pid\": %d, \"device\": 1, \"used_mb\": 2000}]%s}"

static void write_state(const char *extra)
{
    char json[2048];
    snprintf(json, sizeof json, STATE_JSON, (int)getpid(), (int)getpid(), extra);
    write_file(state_path, json, 0644);
}

/* The fake nvidia-smi over the fake NVML: what NVML would say, in MiB. */
static void query_fake(void **state)
{
    (void)state;
    write_state("");
    snapshot s;
    memset(&s, 0, sizeof s);
    char err[256] = "";
    bool found = false;
    assert_int_equal(smi_query(&s, smi_path, 5000 * scale(), &found, err, sizeof err), 0);
    assert_true(found);
    assert_string_equal(err, "");
    assert_int_equal(s.ngpus, 2);
    gpu_dev *d = &s.gpus[0];
    assert_string_equal(d->uuid, "GPU-aaaa");
    assert_string_equal(d->name, "Fake 24GB");
    assert_string_equal(d->bus_id, "00000000:01:00.0");
    assert_int_equal(d->total_bytes, 24576 * MIB);
    assert_int_equal(d->used_bytes, 9500 * MIB);
    assert_int_equal(d->free_bytes, (24576 - 300 - 9500) * MIB);
    assert_int_equal(d->reserved_bytes, 300 * MIB);
    assert_int_equal(d->temp_c, 44);
    assert_int_equal(d->power_mw, 71230);
    assert_int_equal(d->util_gpu_pct, 9);
    assert_int_equal(d->nprocs, 1);
    assert_int_equal(d->procs[0].pid, (uint32_t)getpid());
    assert_int_equal(d->procs[0].used_bytes, 9000 * MIB);
    d = &s.gpus[1];
    assert_true(d->unified);
    assert_int_equal(d->nprocs, 1);
    assert_int_equal(d->procs[0].used_bytes, 2000 * MIB);
    snapshot_release(&s);
}

/* A bare name is looked up in PATH. */
static void query_path_lookup(void **state)
{
    (void)state;
    write_state("");
    char *dir = build_path("fakes");
    char *saved = xstrdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    char *path = xasprintf("%s:%s", dir, saved);
    setenv("PATH", path, 1);
    snapshot s;
    memset(&s, 0, sizeof s);
    char err[256] = "";
    int rc = smi_query(&s, "nvidia-smi", 5000 * scale(), NULL, err, sizeof err);
    setenv("PATH", saved, 1);
    assert_int_equal(rc, 0);
    assert_int_equal(s.ngpus, 2);
    snapshot_release(&s);
    free(dir);
    free(saved);
    free(path);
}

static void query_missing(void **state)
{
    (void)state;
    snapshot s;
    memset(&s, 0, sizeof s);
    char err[256] = "";
    bool found = true;
    assert_int_equal(smi_query(&s, "/nonexistent/nvidia-smi", 5000, &found, err, sizeof err), -1);
    assert_false(found);
    assert_string_equal(err, "'/nonexistent/nvidia-smi': no such file or directory");
    assert_int_equal(s.ngpus, 0);
}

/* No driver: the real tool's message and exit code make the error. */
static void query_no_driver(void **state)
{
    (void)state;
    unlink(state_path);
    snapshot s;
    memset(&s, 0, sizeof s);
    char err[512] = "";
    bool found = false;
    assert_int_equal(smi_query(&s, smi_path, 5000 * scale(), &found, err, sizeof err), -1);
    assert_true(found);
    char *want = xasprintf("'%s' exited with status 9: NVIDIA-SMI has failed because it couldn't "
                           "communicate with the NVIDIA driver.",
                           smi_path);
    if (!strstr(err, want)) fail_msg("err: %s", err);
    free(want);
    assert_int_equal(s.ngpus, 0);
    write_state("");
}

/* A wedged driver wedges nvidia-smi: the deadline bounds the whole query
 * (the fake's NVML sleeps; so does a script). */
static void query_hangs(void **state)
{
    (void)state;
    write_state(", \"call_delay_ms\": {\"nvmlDeviceGetMemoryInfo_v2\": 30000}");
    char *sleeper = script("smi-sleeps", "sleep 30");
    const char *progs[] = {smi_path, sleeper};
    for (size_t i = 0; i < 2; i++) {
        snapshot s;
        memset(&s, 0, sizeof s);
        char err[512] = "";
        int64_t t0 = mono_ms();
        assert_int_equal(smi_query(&s, progs[i], 300, NULL, err, sizeof err), -1);
        int64_t took = mono_ms() - t0;
        assert_true(took >= 290);
        assert_true(took < 300 + 5000 * scale()); /* did not hang: the fake sleeps 30 s */
        char *want = xasprintf("'%s' timed out after 300 ms", progs[i]);
        assert_string_equal(err, want);
        free(want);
        assert_int_equal(s.ngpus, 0);
    }
    free(sleeper);
    write_state("");
}

/* Garbage on stdout, garbage in the process list, a failure between the
 * two queries: errors, no GPUs half-listed. */
static void query_garbage(void **state)
{
    (void)state;
    char *g1 = script("smi-garbage", "echo 'Segmentation fault (core dumped) %s%n'");
    char *g2 = script("smi-apps-garbage",
                      "case \"$1\" in --query-gpu=*) echo '0, GPU-a, X, b, 10, 0, 10, 0, 0, 0';;"
                      " *) echo 'GPU-a, pid?, 3';; esac");
    char *g3 = script("smi-apps-fail",
                      "case \"$1\" in --query-gpu=*) echo '0, GPU-a, X, b, 10, 0, 10, 0, 0, 0';;"
                      " *) echo 'Unable to determine the device handle'; exit 15;; esac");
    snapshot s;
    memset(&s, 0, sizeof s);
    char err[512] = "";
    assert_int_equal(smi_query(&s, g1, 5000 * scale(), NULL, err, sizeof err), -1);
    assert_string_equal(err, "nvidia-smi --query-gpu: line 1: 1 field, expected 10: "
                             "'Segmentation fault (core dumped) %s%n'");
    assert_int_equal(smi_query(&s, g2, 5000 * scale(), NULL, err, sizeof err), -1);
    assert_string_equal(err, "nvidia-smi --query-compute-apps: line 1: pid is not a number: "
                             "'GPU-a, pid?, 3'");
    assert_int_equal(s.ngpus, 0);
    assert_int_equal(smi_query(&s, g3, 5000 * scale(), NULL, err, sizeof err), -1);
    char *want = xasprintf("'%s' exited with status 15: Unable to determine the device handle", g3);
    assert_string_equal(err, want);
    free(want);
    assert_int_equal(s.ngpus, 0);
    free(g1);
    free(g2);
    free(g3);
}

static int setup(void **state)
{
    (void)state;
    smi_path = build_path("fakes/nvidia-smi");
    if (access(smi_path, X_OK) != 0) {
        fprintf(stderr, "# %s is missing: run make\n", smi_path);
        return -1;
    }
    const char *t = getenv("TMPDIR");
    tmpdir = xasprintf("%s/gpumod-test-smi.XXXXXX", t && *t ? t : "/tmp");
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
    free(smi_path);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_h200),        cmocka_unit_test(parse_placeholders),
        cmocka_unit_test(parse_odd_shapes),  cmocka_unit_test(parse_garbage),
        cmocka_unit_test(parse_apps),        cmocka_unit_test(query_fake),
        cmocka_unit_test(query_path_lookup), cmocka_unit_test(query_missing),
        cmocka_unit_test(query_no_driver),   cmocka_unit_test(query_hangs),
        cmocka_unit_test(query_garbage),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
