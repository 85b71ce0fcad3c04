/* test_gate.c - the admission gate on plain structs: each rule refuses
 * with its binding and its exact reason, the rules bind in order, the
 * boundaries (equal passes, one byte short fails), reservations of others
 * count and one's own does not, and MiB rounding never shows "X < X". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/gate.h"

#include "core/contig.h"
#include "gate_fixture.h"


static void need_host(need *n, uint64_t host)
{
    memset(n, 0, sizeof *n);
    snprintf(n->source, sizeof n->source, "measured");
    n->host_bytes = host;
}

static void need_gpu(need *n, int index, uint64_t bytes)
{
    n->gpu[n->ngpu].index = index;
    n->gpu[n->ngpu].bytes = bytes;
    n->ngpu++;
}

static void assert_ok(const verdict *v)
{
    if (!v->ok) fail_msg("refused: %s [%s]", v->reason, v->binding);
    assert_string_equal(v->reason, "");
    assert_string_equal(v->binding, "");
}

static void assert_refused(const verdict *v, const char *binding, const char *reason)
{
    if (v->ok) fail_msg("passed, expected %s", binding);
    assert_string_equal(v->binding, binding);
    assert_string_equal(v->reason, reason);
}

static void plenty_passes(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, 79 * GIB, false);
    policy_default(&p);
    need_host(&n, 4 * GIB);
    need_gpu(&n, 0, 40 * GIB);
    gate_check(&s, &n, NULL, 0, "qwen3", &p, &v);
    assert_ok(&v);
    assert_int_equal(v.reserved_host_bytes, 0);
    assert_int_equal(v.reserved_gpu_bytes[0], 0);
}

static void host_short(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    s.host.mem_available = 14823 * MIB + 4321;
    policy_default(&p);
    p.host_factor = 1.0;
    need_host(&n, 19076 * MIB);
    gate_check(&s, &n, NULL, 0, "qwen3", &p, &v);
    assert_refused(&v, "host.mem_available", "MemAvailable 14823 MiB < required 20100 MiB");
}

/* 10000 MiB x 1.1 + 1024 MiB = 12024 MiB although 1.1 is inexact in binary */
static void host_boundary_with_factor(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, 79 * GIB, false);
    policy_default(&p);
    need_host(&n, 10000 * MIB);

    s.host.mem_available = 12024 * MIB;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_ok(&v);

    s.host.mem_available = 12024 * MIB - 1;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "host.mem_available", "MemAvailable 12023 MiB < required 12024 MiB");

    /* 100 MiB x 1.1 is 115343360.00000001 in doubles: still 110 MiB */
    p.host_margin_bytes = 0;
    need_host(&n, 100 * MIB);
    s.host.mem_available = 110 * MIB;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_ok(&v);

    /* an odd byte count: x 1.1 is fractional, the required side rounds up */
    need_host(&n, 1001); /* 1101.1 bytes -> 1102 */
    s.host.mem_available = 1102;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_ok(&v);
    s.host.mem_available = 1101;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "host.mem_available", "MemAvailable 0 MiB < required 1 MiB");
}

/* available rounds down, required up: never "X MiB < X MiB" */
static void mib_rounding(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    policy_default(&p);
    p.host_factor = 1.0;
    p.host_margin_bytes = 0;

    /* both within the same MiB */
    need_host(&n, 1000 * MIB + 600 * 1024);
    s.host.mem_available = 1000 * MIB + 500 * 1024;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "host.mem_available", "MemAvailable 1000 MiB < required 1001 MiB");

    /* required one byte over a whole MiB */
    need_host(&n, 1000 * MIB + 1);
    s.host.mem_available = 1000 * MIB;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "host.mem_available", "MemAvailable 1000 MiB < required 1001 MiB");

    /* available one byte under a whole MiB */
    need_host(&n, 1000 * MIB);
    s.host.mem_available = 1000 * MIB - 1;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "host.mem_available", "MemAvailable 999 MiB < required 1000 MiB");

    /* a sweep over one MiB either side: a refusal always shows a < b */
    for (uint64_t avail = 999 * MIB; avail <= 1001 * MIB; avail += 4093) {
        need_host(&n, 1000 * MIB + 7);
        s.host.mem_available = avail;
        gate_check(&s, &n, NULL, 0, "a", &p, &v);
        if (v.ok) {
            assert_true(avail >= 1000 * MIB + 7);
            continue;
        }
        unsigned a = 0, b = 0;
        assert_int_equal(sscanf(v.reason, "MemAvailable %u MiB < required %u MiB", &a, &b), 2);
        assert_true(a < b);
    }
}

static void fragmented_with_driver(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    s.host.mem_available = 20 * GIB;
    s.host.contig_bytes = 512 * MIB + 4096;
    add_gpu(&s, 0, 80 * GIB, 79 * GIB, false);
    policy_default(&p);
    need_host(&n, 2 * GIB);
    need_gpu(&n, 0, 20 * GIB);
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(
        &v, "host.contig",
        "free memory in blocks >= 256 KiB 512 MiB < required 2048 MiB (host is fragmented, and this service pins host memory)");

    /* exactly the minimum passes, one byte short does not */
    s.host.contig_bytes = 2048 * MIB;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_ok(&v);
    s.host.contig_bytes = 2048 * MIB - 1;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(
        &v, "host.contig",
        "free memory in blocks >= 256 KiB 2047 MiB < required 2048 MiB (host is fragmented, and this service pins host memory)");
}

static void fragmented_without_driver(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    s.nvidia_driver = false;
    s.nvml = NVML_ABSENT;
    s.source = GPU_SRC_NONE;
    s.host.mem_available = 20 * GIB;
    s.host.contig_bytes = 0;
    policy_default(&p);
    need_host(&n, 8 * GIB);
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_ok(&v);

    /* with the driver but no readable buddyinfo the rule cannot judge */
    s.nvidia_driver = true;
    s.host.buddyinfo_ok = false;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_ok(&v);
}

/* Buddy lists that hold far less than MemFree (a VM, a large host whose
 * memory the kernel initialises lazily) cannot tell fragmentation: the
 * rule is unknown and does not refuse, down to the half-way line. */
static void fragmented_lists_unaccounted(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    s.host.contig_bytes = 124 * MIB; /* the H200's lists: 3 GiB of 124 GiB free */
    s.host.mem_free = 124 * GIB;
    s.host.buddy_free_bytes = 3 * GIB;
    policy_default(&p);
    need_host(&n, 2 * GIB);
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_ok(&v);
    assert_string_equal(gate_contig_state(&s, &p), "unknown");
    char why[256];
    assert_false(contig_known(&s.host, why, sizeof why));
    assert_string_equal(why, "the buddy lists hold 3072 MiB of 126976 MiB MemFree: the kernel has not put the rest "
                             "on its free lists (lazily initialised memory), so they cannot tell fragmentation");
    /* lists holding exactly half of MemFree are believed */
    s.host.buddy_free_bytes = 62 * GIB;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_string_equal(v.binding, "host.contig");
    assert_string_equal(gate_contig_state(&s, &p), "short");
    s.host.buddy_free_bytes = 62 * GIB - 1;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_ok(&v);
    /* unreadable buddyinfo: unknown too */
    s.host.buddyinfo_ok = false;
    assert_false(contig_known(&s.host, why, sizeof why));
    assert_string_equal(why, "/proc/buddyinfo could not be read");
}

/* The rule binds only for an engine that pins host memory: a need marked
 * pageable (llama.cpp under GGML_CUDA_NO_PINNED, memory.pins_host: false)
 * passes a fragmented host that refuses a pinning one. */
static void fragmented_pageable_passes(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    s.host.contig_bytes = 0;
    policy_default(&p);
    need_host(&n, 2 * GIB);
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_string_equal(v.binding, "host.contig");
    n.pageable_host = true;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_ok(&v);
    assert_string_equal(gate_contig_state(&s, &p), "short");
    s.nvidia_driver = false;
    assert_string_equal(gate_contig_state(&s, &p), "no_driver");
}

static void psi_high(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    s.host.psi_some_avg10 = 34.5;
    s.host.psi_full_avg10 = 12;
    policy_default(&p);
    need_host(&n, 2 * GIB);
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "host.psi", "memory pressure some avg10 34.5% > 10%");

    s.host.psi_some_avg10 = 10; /* equal passes */
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_ok(&v);
    s.host.psi_some_avg10 = 10.01;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "host.psi", "memory pressure some avg10 10.01% > 10%");

    /* no PSI on this kernel: the rule is skipped, not failed */
    s.host.psi_ok = false;
    s.host.psi_some_avg10 = 99;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_ok(&v);
}

static void discrete_gpu_short(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    add_gpu(&s, 0, 24 * GIB, 9120 * MIB + 77, false);
    policy_default(&p);
    need_host(&n, 2 * GIB);
    need_gpu(&n, 0, 20480 * MIB);
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "gpu.0.free",
                   "GPU 0 free 9120 MiB < required 21504 MiB (need 20480 + margin 1024)");

    /* boundary */
    s.gpus[0].free_bytes = 21504 * MIB;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_ok(&v);
    s.gpus[0].free_bytes = 21504 * MIB - 1;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "gpu.0.free",
                   "GPU 0 free 21503 MiB < required 21504 MiB (need 20480 + margin 1024)");
}

/* two GPUs, the need split; the second one is short and binds */
static void second_gpu_short(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, 70 * GIB, false);
    add_gpu(&s, 1, 80 * GIB, 10 * GIB, false);
    policy_default(&p);
    need_host(&n, GIB);
    need_gpu(&n, 0, 30 * GIB);
    need_gpu(&n, 1, 30 * GIB);
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "gpu.1.free",
                   "GPU 1 free 10240 MiB < required 31744 MiB (need 30720 + margin 1024)");

    /* a device named twice in a need adds up */
    memset(n.gpu, 0, sizeof n.gpu);
    n.ngpu = 0;
    need_gpu(&n, 0, 35 * GIB);
    need_gpu(&n, 0, 35 * GIB);
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "gpu.0.free",
                   "GPU 0 free 71680 MiB < required 72704 MiB (need 71680 + margin 1024)");
}

/* GB10: NVML has no memory figures, the GPU's memory is MemAvailable */
static void unified_short(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    s.host.mem_total = 124583456ull * 1024;
    s.host.mem_available = 18955419ull * 1024; /* fixtures/proc/unified-short: 18511 MiB */
    add_gpu(&s, 0, s.host.mem_total, s.host.mem_available, true);
    policy_default(&p);
    need_host(&n, 2 * GIB);
    need_gpu(&n, 0, 16 * GIB);
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "unified.0.mem_available",
                   "MemAvailable 18511 MiB < required 26624 MiB (GPU need 16384 + host need 2048 + "
                   "uma reserve 8192)");
}

/* one pool: host need counted once, and the discrete rule not applied */
static void unified_one_pool(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    add_gpu(&s, 0, 128 * GIB, 0, true); /* free_bytes unknown: must not matter */
    policy_default(&p);
    need_host(&n, 2 * GIB);
    need_gpu(&n, 0, 60 * GIB);
    s.host.mem_available = 60 * GIB + 2 * GIB + 8 * GIB;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_ok(&v);
    s.host.mem_available -= 1;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "unified.0.mem_available",
                   "MemAvailable 71679 MiB < required 71680 MiB (GPU need 61440 + host need 2048 + "
                   "uma reserve 8192)");
}

static void no_gpu_host_rules_only(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    s.nvml = NVML_ABSENT;
    s.nvidia_driver = false;
    s.source = GPU_SRC_NONE;
    policy_default(&p);
    need_host(&n, 8 * GIB);
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_ok(&v);
    s.host.mem_available = 8 * GIB;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "host.mem_available", "MemAvailable 8192 MiB < required 10036 MiB");
}

static void nvml_hung(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    s.nvml = NVML_HUNG;
    policy_default(&p);
    need_host(&n, GIB); /* plenty of everything: hung still refuses */
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "nvml.hung",
                   "NVML did not answer within the deadline: the GPU driver may be wedged");

    /* it binds before every other rule */
    s.host.mem_available = 0;
    s.host.psi_some_avg10 = 90;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_string_equal(v.binding, "nvml.hung");
    gate_check(&s, NULL, NULL, 0, "a", &p, &v);
    assert_string_equal(v.binding, "nvml.hung");
}

static void need_missing(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    policy_default(&p);
    memset(&n, 0, sizeof n); /* source "" */
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_false(v.ok);
    assert_string_equal(v.binding, "need.missing");
    assert_non_null(strstr(v.reason, "memory need unknown"));
    gate_check(&s, NULL, NULL, 0, "a", &p, &v);
    assert_false(v.ok);
    assert_string_equal(v.binding, "need.missing");
}

static void missing_device(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, 79 * GIB, false);
    policy_default(&p);
    need_host(&n, GIB);
    need_gpu(&n, 0, GIB);
    need_gpu(&n, 1, GIB);
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "gpu.1.free", "device 1 is not present");

    /* no GPU seen at all: say why */
    s.ngpus = 0;
    s.nvml = NVML_FAILED;
    snprintf(s.gpu_error, sizeof s.gpu_error, "nvmlInit_v2: driver/library version mismatch");
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "gpu.0.free",
                   "device 0 is not present (nvmlInit_v2: driver/library version mismatch)");
}

static void meminfo_unreadable(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    s.host.meminfo_ok = false;
    policy_default(&p);
    need_host(&n, GIB);
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "host.mem_available",
                   "MemAvailable unknown: /proc/meminfo could not be read");
}

/* host, then contiguity, then pressure, then GPUs */
static void rule_order(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, GIB, false);
    policy_default(&p);
    need_host(&n, 2 * GIB);
    need_gpu(&n, 0, 40 * GIB);
    s.host.mem_available = GIB;
    s.host.contig_bytes = 0;
    s.host.psi_some_avg10 = 50;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_string_equal(v.binding, "host.mem_available");
    s.host.mem_available = 64 * GIB;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_string_equal(v.binding, "host.contig");
    s.host.contig_bytes = 8 * GIB;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_string_equal(v.binding, "host.psi");
    s.host.psi_some_avg10 = 0;
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_string_equal(v.binding, "gpu.0.free");
}

static void reservations_discrete(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, 40 * GIB, false);
    add_gpu(&s, 3, 80 * GIB, 80 * GIB, false);
    policy_default(&p);
    need_host(&n, 2 * GIB);
    need_gpu(&n, 0, 20 * GIB);

    reservation res[4];
    memset(res, 0, sizeof res);
    res[0].service = "qwen3"; /* our own: not counted */
    need_host(&res[0].need, 50 * GIB);
    need_gpu(&res[0].need, 0, 30 * GIB);
    res[1].service = "nemotron";
    need_host(&res[1].need, 4 * GIB);
    need_gpu(&res[1].need, 0, 15 * GIB);
    need_gpu(&res[1].need, 3, 5 * GIB);
    res[2].service = "embed";
    need_host(&res[2].need, GIB);
    need_gpu(&res[2].need, 7, 5 * GIB); /* a device the snapshot lacks */

    gate_check(&s, &n, res, 3, "qwen3", &p, &v);
    assert_int_equal(v.reserved_host_bytes, 5 * GIB);
    assert_int_equal(v.reserved_gpu_bytes[0], 15 * GIB);
    assert_int_equal(v.reserved_gpu_bytes[1], 5 * GIB); /* by position: device 3 is gpus[1] */
    /* 40 GiB free >= 20 + 1 + 15 */
    assert_ok(&v);

    res[1].need.gpu[0].bytes = 20 * GIB;
    gate_check(&s, &n, res, 3, "qwen3", &p, &v);
    assert_refused(&v, "gpu.0.free",
                   "GPU 0 free 40960 MiB < required 41984 MiB (need 20480 + margin 1024 + reserved "
                   "by others 20480)");

    /* asked for another service, qwen3's reservation counts too */
    res[1].need.gpu[0].bytes = 0;
    gate_check(&s, &n, res, 3, "other", &p, &v);
    assert_int_equal(v.reserved_host_bytes, 55 * GIB);
    assert_int_equal(v.reserved_gpu_bytes[0], 30 * GIB);
    assert_refused(&v, "gpu.0.free",
                   "GPU 0 free 40960 MiB < required 52224 MiB (need 20480 + margin 1024 + reserved "
                   "by others 30720)");

    /* host reservations count against MemAvailable: 2 x 1.1 + 1 + 55 GiB */
    s.host.mem_available = 58 * GIB;
    gate_check(&s, &n, res, 3, "other", &p, &v);
    assert_refused(&v, "host.mem_available", "MemAvailable 59392 MiB < required 59597 MiB");
}

static void reservations_unified(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    s.host.mem_available = 100 * GIB;
    add_gpu(&s, 0, 128 * GIB, 100 * GIB, true);
    policy_default(&p);
    need_host(&n, 2 * GIB);
    need_gpu(&n, 0, 40 * GIB);

    reservation res[2];
    memset(res, 0, sizeof res);
    res[0].service = "big";
    need_host(&res[0].need, 10 * GIB);
    need_gpu(&res[0].need, 0, 40 * GIB);
    res[1].service = "me";
    need_host(&res[1].need, 30 * GIB);
    need_gpu(&res[1].need, 0, 30 * GIB);

    /* 100 - (10 + 40) = 50 >= 40 + 2 + 8: exactly */
    gate_check(&s, &n, res, 2, "me", &p, &v);
    assert_ok(&v);
    assert_int_equal(v.reserved_host_bytes, 10 * GIB);
    assert_int_equal(v.reserved_gpu_bytes[0], 40 * GIB);

    res[0].need.host_bytes += 1;
    gate_check(&s, &n, res, 2, "me", &p, &v);
    assert_refused(
        &v, "unified.0.mem_available",
        "MemAvailable 102400 MiB < required 102401 MiB (GPU need 40960 + host need 2048 + "
        "uma reserve 8192 + reserved by others 51201)");

    /* a host-only need on the unified host still sees the GPU reservation */
    need_host(&n, 40 * GIB); /* 44 + 1 + 50 GiB + 1 byte <= 100 GiB */
    gate_check(&s, &n, res, 2, "me", &p, &v);
    assert_ok(&v);
    need_host(&n, 45 * GIB); /* 49.5 + 1 + 50 GiB + 1 > 100 */
    gate_check(&s, &n, res, 2, "me", &p, &v);
    assert_refused(&v, "host.mem_available", "MemAvailable 102400 MiB < required 102913 MiB");
}

/* a need near 2^64 saturates instead of wrapping into a pass */
static void huge_numbers(void **state)
{
    (void)state;
    snapshot s;
    gate_policy p;
    need n;
    verdict v;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, 79 * GIB, false);
    policy_default(&p);
    need_host(&n, UINT64_MAX);
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_refused(&v, "host.mem_available",
                   "MemAvailable 65536 MiB < required 17592186044416 MiB");

    need_host(&n, GIB);
    need_gpu(&n, 0, UINT64_MAX - 10);
    gate_check(&s, &n, NULL, 0, "a", &p, &v);
    assert_false(v.ok);
    assert_string_equal(v.binding, "gpu.0.free");

    reservation r;
    memset(&r, 0, sizeof r);
    r.service = "x";
    need_host(&r.need, UINT64_MAX);
    need_host(&n, GIB);
    gate_check(&s, &n, &r, 1, "a", &p, &v);
    assert_int_equal(v.reserved_host_bytes, UINT64_MAX);
    assert_string_equal(v.binding, "host.mem_available");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plenty_passes),
        cmocka_unit_test(host_short),
        cmocka_unit_test(host_boundary_with_factor),
        cmocka_unit_test(mib_rounding),
        cmocka_unit_test(fragmented_with_driver),
        cmocka_unit_test(fragmented_without_driver),
        cmocka_unit_test(fragmented_lists_unaccounted),
        cmocka_unit_test(fragmented_pageable_passes),
        cmocka_unit_test(psi_high),
        cmocka_unit_test(discrete_gpu_short),
        cmocka_unit_test(second_gpu_short),
        cmocka_unit_test(unified_short),
        cmocka_unit_test(unified_one_pool),
        cmocka_unit_test(no_gpu_host_rules_only),
        cmocka_unit_test(nvml_hung),
        cmocka_unit_test(need_missing),
        cmocka_unit_test(missing_device),
        cmocka_unit_test(meminfo_unreadable),
        cmocka_unit_test(rule_order),
        cmocka_unit_test(reservations_discrete),
        cmocka_unit_test(reservations_unified),
        cmocka_unit_test(huge_numbers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
