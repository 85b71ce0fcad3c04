/* gate.h - the admission gate: (snapshot, need, reservations, policy) ->
 * verdict.  Pure: no files, clocks or processes; every start path (the
 * daemon, `preflight`, a systemd ExecStartPre=) asks this one function.
 *
 * Rules (docs/interfaces.md, settings memory:), in the order they bind:
 *   nvml:    hung refuses
 *   need:    source "" (or n NULL) refuses: need.missing
 *   host:    MemAvailable >= host_need x host_factor + host_margin
 *            + others' host reservations (+ their GPU ones on unified devices);
 *            an unreadable meminfo refuses here
 *   contig:  free bytes in blocks >= HOST_CONTIG_BLOCK (256 KiB) >= min_contig,
 *            for a service that pins host memory on a host with an NVIDIA
 *            driver (a fragmented host is refused even with plenty of
 *            MemAvailable); "unknown", never binding, when buddyinfo was
 *            unreadable or its lists account for less than half of MemFree
 *            (core/contig.h)
 *   psi:     memory PSI some avg10 <= psi_some_avg10_max (when psi_ok)
 *   per GPU of the need: a device not in the snapshot refuses (gpu.N.free)
 *   gpu:     per discrete GPU, free - reserved_by_others >= gpu_need + gpu_margin
 *   unified: MemAvailable - reserved >= gpu_need + host_need + uma_reserve
 *            (one pool: the discrete rule is not applied there)
 * The first rule that fails binds; its reason names the numbers in MiB
 * (available rounded down, required rounded up). */
#ifndef GPUMOD_GATE_H
#define GPUMOD_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/types.h"

typedef struct need {
    char source[16];  /* "measured" | "estimate" | "declared" */
    /* The engine pins no host memory (llama.cpp under GGML_CUDA_NO_PINNED,
     * memory.pins_host: false), so the contiguity rule does not bind.
     * False, the safe side, unless the need's maker knows better. */
    bool pageable_host;
    uint64_t host_bytes;
    size_t ngpu;
    struct {
        int index;    /* device index (snapshot gpus[].index) */
        uint64_t bytes;
    } gpu[HOST_MAX_GPUS];
} need;

typedef struct reservation {
    const char *service; /* borrowed */
    need need;
} reservation;

typedef struct gate_policy {
    double host_factor;
    uint64_t host_margin_bytes, gpu_margin_bytes, uma_reserve_bytes, min_contig_bytes;
    double psi_some_avg10_max;
} gate_policy;

typedef struct verdict {
    bool ok;
    char reason[256];  /* "" when ok */
    char binding[48];  /* "host.mem_available", "host.contig", "host.psi", "gpu.0.free",
                          "unified.0.mem_available", "nvml.hung", "need.missing" */
    /* what was reserved by others, per device (bytes), and on the host */
    uint64_t reserved_host_bytes;
    uint64_t reserved_gpu_bytes[HOST_MAX_GPUS]; /* by position in snapshot gpus[] */
} verdict;

/* The contiguity rule's state for display: "ok", "short" (it would refuse
 * a service that pins host memory), "unknown" (see gate_contig_known) or
 * "no_driver" (no NVIDIA driver: it does not apply); for a service
 * that pins host memory. */
const char *gate_contig_state(const snapshot *s, const gate_policy *p);

/* for_service: the service asking; its own reservation is not counted. */
void gate_check(const snapshot *s, const need *n, const reservation *res, size_t nres, const char *for_service,
                const gate_policy *p, verdict *out);

#endif
