/* gate_fixture.h - snapshots and the default gate policy for the tests of
 * the pure admission code (test_gate.c, test_plan.c): a comfortable host,
 * GPUs added one by one, docs/interfaces.md's memory: defaults. */
#ifndef GPUMOD_TEST_GATE_FIXTURE_H
#define GPUMOD_TEST_GATE_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/gate.h"
#include "host/host.h"

#define MIB ((uint64_t)1 << 20)
#define GIB ((uint64_t)1 << 30)

/* A comfortable host (128 GiB, 64 GiB available), NVIDIA driver loaded, no GPU yet. */
static inline void host_ok(snapshot *s)
{
    memset(s, 0, sizeof *s);
    s->host.meminfo_ok = true;
    s->host.mem_total = 128 * GIB;
    s->host.mem_available = 64 * GIB;
    s->host.mem_free = 20 * GIB;
    s->host.buddyinfo_ok = true;
    s->host.page_size = 4096;
    s->host.order_2m = 9;
    s->host.order_contig = 6;
    s->host.contig_2m_bytes = 16 * GIB;
    s->host.contig_bytes = 16 * GIB;
    s->host.buddy_free_bytes = 20 * GIB; /* the lists account for MemFree */
    s->host.psi_ok = true;
    s->host.psi_some_avg10 = 0.5;
    s->nvml = NVML_OK;
    s->source = GPU_SRC_NVML;
    s->nvidia_driver = true;
}

static inline gpu_dev *add_gpu(snapshot *s, int index, uint64_t total, uint64_t free_bytes, bool unified)
{
    gpu_dev *d = &s->gpus[s->ngpus++];
    d->index = index;
    snprintf(d->name, sizeof d->name, unified ? "NVIDIA GB10" : "NVIDIA H100");
    d->unified = unified;
    d->total_bytes = total;
    d->free_bytes = free_bytes;
    d->used_bytes = total - free_bytes;
    return d;
}

/* docs/interfaces.md settings memory: defaults */
static inline void policy_default(gate_policy *p)
{
    memset(p, 0, sizeof *p);
    p->host_factor = 1.1;
    p->host_margin_bytes = 1024 * MIB;
    p->gpu_margin_bytes = 1024 * MIB;
    p->uma_reserve_bytes = 8192 * MIB;
    p->min_contig_bytes = 2048 * MIB;
    p->psi_some_avg10_max = 10;
}

#endif
