/* gate.c - the admission gate (see gate.h for the rules and their order).
 *
 * Pure: it reads the snapshot, the need, the reservations in flight and
 * the policy, and fills a verdict; no files, clocks or processes, so
 * every start path gets the same answer for the same numbers and tests
 * need only structs.
 *
 * All arithmetic is on bytes, saturating, so a hostile need cannot wrap
 * into a pass.  Reasons are in MiB with the available side rounded down
 * and the required side rounded up: a refusal can then never read
 * "X MiB < X MiB", and a pass is decided on exact bytes, never on the
 * rounded figures.
 *
 * A unified-memory device (GB10) has one pool: its GPU need, the host
 * need and every reservation on it come out of MemAvailable together, so
 * the discrete free-memory rule is not applied to it as well. */
#include "core/gate.h"
#include "core/contig.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MIB ((uint64_t)1 << 20)

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static unsigned long long mib_down(uint64_t x)
{
    return (unsigned long long)(x / MIB);
}

static unsigned long long mib_up(uint64_t x)
{
    return (unsigned long long)(x / MIB + (x % MIB != 0));
}

/* host_need x factor in whole bytes.  A factor from YAML ("1.1") is not
 * exact in binary, so a product within a hundredth of a byte of an
 * integer is that integer; otherwise round up (the need side). */
static uint64_t scale_need(uint64_t bytes, double factor)
{
    if (!(factor >= 0)) factor = 1; /* NaN or negative: a broken policy must not zero the need */
    double x = (double)bytes * factor;
    if (x >= 18446744073709551615.0) return UINT64_MAX;
    double r = nearbyint(x);
    if (fabs(x - r) < 0.01) return (uint64_t)r;
    return (uint64_t)ceil(x);
}

static void refuse(verdict *v, const char *binding, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void refuse(verdict *v, const char *binding, const char *fmt, ...)
{
    va_list ap;
    v->ok = false;
    snprintf(v->binding, sizeof v->binding, "%s", binding);
    va_start(ap, fmt);
    vsnprintf(v->reason, sizeof v->reason, fmt, ap);
    va_end(ap);
}

/* Position of device index idx in s->gpus[], or -1. */
static int gpu_pos(const snapshot *s, int idx)
{
    size_t n = s->ngpus < HOST_MAX_GPUS ? s->ngpus : HOST_MAX_GPUS;
    for (size_t i = 0; i < n; i++)
        if (s->gpus[i].index == idx) return (int)i;
    return -1;
}

static size_t need_ngpu(const need *n)
{
    return n->ngpu < HOST_MAX_GPUS ? n->ngpu : HOST_MAX_GPUS;
}

/* Sum what every other service holds: host bytes, and GPU bytes per
 * snapshot position.  A reservation on a device the snapshot lacks can
 * hold nothing there, so it is dropped. */
static void sum_reservations(const snapshot *s, const reservation *res, size_t nres,
                             const char *for_service, verdict *v)
{
    for (size_t i = 0; i < nres; i++) {
        const reservation *r = &res[i];
        if (for_service && r->service && strcmp(r->service, for_service) == 0) continue;
        v->reserved_host_bytes = sat_add(v->reserved_host_bytes, r->need.host_bytes);
        for (size_t g = 0; g < need_ngpu(&r->need); g++) {
            int pos = gpu_pos(s, r->need.gpu[g].index);
            if (pos >= 0)
                v->reserved_gpu_bytes[pos] =
                    sat_add(v->reserved_gpu_bytes[pos], r->need.gpu[g].bytes);
        }
    }
}

const char *gate_contig_state(const snapshot *s, const gate_policy *p)
{
    if (!s->nvidia_driver) return "no_driver";
    if (!contig_known(&s->host, NULL, 0)) return "unknown";
    return s->host.contig_bytes < p->min_contig_bytes ? "short" : "ok";
}

/* The host's checks, in order: MemAvailable, contiguity, pressure.
 * false after refusing. */
static bool host_checks(const snapshot *s, const need *n, const gate_policy *p, uint64_t reserved_pool,
                        verdict *out)
{
    const host_mem *h = &s->host;
    if (!h->meminfo_ok) {
        refuse(out, "host.mem_available", "MemAvailable unknown: /proc/meminfo could not be read");
        return false;
    }
    uint64_t host_req = sat_add(
        sat_add(scale_need(n->host_bytes, p->host_factor), p->host_margin_bytes), reserved_pool);
    if (h->mem_available < host_req) {
        refuse(out, "host.mem_available", "MemAvailable %llu MiB < required %llu MiB",
               mib_down(h->mem_available), mib_up(host_req));
        return false;
    }

    /* Pinned host memory (cudaHostAlloc) waits on free high-order pages:
     * without them each chunk is a synchronous compaction run, the "host
     * freezes during load" failure (memory.md 4.3, the seed's "order_6 =
     * 0" canary).  It binds only for an engine that pins, with the driver
     * present, and when the buddy lists can be believed. */
    if (s->nvidia_driver && !n->pageable_host && contig_known(h, NULL, 0) &&
        h->contig_bytes < p->min_contig_bytes) {
        refuse(out, "host.contig",
               "free memory in blocks >= %u KiB %llu MiB < required %llu MiB (host is fragmented, and this "
               "service pins host memory)",
               HOST_CONTIG_BLOCK >> 10, mib_down(h->contig_bytes), mib_up(p->min_contig_bytes));
        return false;
    }

    if (h->psi_ok && h->psi_some_avg10 > p->psi_some_avg10_max) {
        refuse(out, "host.psi", "memory pressure some avg10 %g%% > %g%%", h->psi_some_avg10,
               p->psi_some_avg10_max);
        return false;
    }
    return true;
}

/* The need per snapshot position (a device named twice adds up), in the
 * order the need first names it; the part on unified devices. */
typedef struct gpu_needs {
    uint64_t bytes[HOST_MAX_GPUS];
    int order[HOST_MAX_GPUS];
    size_t n;
    uint64_t unified;
} gpu_needs;

/* false after refusing (a device the need names is not present). */
static bool gpu_needs_of(const snapshot *s, const need *n, size_t ngpus, gpu_needs *g, verdict *out)
{
    memset(g, 0, sizeof *g);
    for (size_t k = 0; k < need_ngpu(n); k++) {
        int pos = gpu_pos(s, n->gpu[k].index);
        if (pos < 0) {
            /* with no GPU seen at all, why is the useful half */
            bool why = ngpus == 0 && s->gpu_error[0];
            char binding[sizeof out->binding];
            snprintf(binding, sizeof binding, "gpu.%d.free", n->gpu[k].index);
            refuse(out, binding, "device %d is not present%s%s%s", n->gpu[k].index, why ? " (" : "",
                   why ? s->gpu_error : "", why ? ")" : "");
            return false;
        }
        /* a zero need asks nothing of the device, only that it exists */
        if (g->bytes[pos] == 0 && n->gpu[k].bytes) g->order[g->n++] = pos;
        g->bytes[pos] = sat_add(g->bytes[pos], n->gpu[k].bytes);
        if (s->gpus[pos].unified) g->unified = sat_add(g->unified, n->gpu[k].bytes);
    }
    return true;
}

/* The unified pool: the GPU need on unified devices, the host need and
 * the UMA reserve, with others' reservations, out of MemAvailable (checked
 * once, at the first unified device).  false after refusing. */
static bool unified_check(const snapshot *s, const gpu_dev *d, const need *n, const gpu_needs *g,
                          const gate_policy *p, uint64_t reserved_pool, verdict *out)
{
    const host_mem *h = &s->host;
    uint64_t req = sat_add(sat_add(g->unified, n->host_bytes), p->uma_reserve_bytes);
    uint64_t total = sat_add(req, reserved_pool);
    if (h->mem_available >= total) return true;
    char others[64] = "", binding[sizeof out->binding];
    if (reserved_pool) snprintf(others, sizeof others, " + reserved by others %llu", mib_up(reserved_pool));
    snprintf(binding, sizeof binding, "unified.%d.mem_available", d->index);
    refuse(out, binding,
           "MemAvailable %llu MiB < required %llu MiB (GPU need %llu + host need %llu + uma reserve %llu%s)",
           mib_down(h->mem_available), mib_up(total), mib_up(g->unified), mib_up(n->host_bytes),
           mib_up(p->uma_reserve_bytes), others);
    return false;
}

/* Each device the need names, in its order: a discrete one's free memory
 * against its need, the margin and others' reservations; the unified pool
 * once. */
static void device_checks(const snapshot *s, const need *n, const gpu_needs *g, const gate_policy *p,
                          uint64_t reserved_pool, verdict *out)
{
    bool unified_done = false;
    for (size_t k = 0; k < g->n; k++) {
        int pos = g->order[k];
        const gpu_dev *d = &s->gpus[pos];
        if (d->unified) {
            if (unified_done) continue;
            unified_done = true;
            if (!unified_check(s, d, n, g, p, reserved_pool, out)) return;
            continue;
        }
        uint64_t reserved = out->reserved_gpu_bytes[pos];
        uint64_t req = sat_add(sat_add(g->bytes[pos], p->gpu_margin_bytes), reserved);
        if (d->free_bytes < req) {
            char others[64] = "", binding[sizeof out->binding];
            if (reserved) snprintf(others, sizeof others, " + reserved by others %llu", mib_up(reserved));
            snprintf(binding, sizeof binding, "gpu.%d.free", d->index);
            refuse(out, binding, "GPU %d free %llu MiB < required %llu MiB (need %llu + margin %llu%s)", d->index,
                   mib_down(d->free_bytes), mib_up(req), mib_up(g->bytes[pos]), mib_up(p->gpu_margin_bytes),
                   others);
            return;
        }
    }
}

void gate_check(const snapshot *s, const need *n, const reservation *res, size_t nres,
                const char *for_service, const gate_policy *p, verdict *out)
{
    size_t ngpus = s->ngpus < HOST_MAX_GPUS ? s->ngpus : HOST_MAX_GPUS;

    memset(out, 0, sizeof *out);
    out->ok = true;
    sum_reservations(s, res, nres, for_service, out);

    /* A hung NVML means a wedged driver: whatever the numbers say,
     * starting another GPU process there makes it worse. */
    if (s->nvml == NVML_HUNG) {
        refuse(out, "nvml.hung",
               "NVML did not answer within the deadline: the GPU driver may be wedged");
        return;
    }
    if (!n || n->source[0] == '\0') {
        refuse(out, "need.missing",
               "memory need unknown for this service: no measurement, estimate or declaration");
        return;
    }

    /* Others' GPU reservations on unified devices come out of the same
     * MemAvailable as host memory. */
    uint64_t reserved_pool = out->reserved_host_bytes;
    for (size_t i = 0; i < ngpus; i++)
        if (s->gpus[i].unified) reserved_pool = sat_add(reserved_pool, out->reserved_gpu_bytes[i]);

    if (!host_checks(s, n, p, reserved_pool, out)) return;
    gpu_needs g;
    if (!gpu_needs_of(s, n, ngpus, &g, out)) return;
    device_checks(s, n, &g, p, reserved_pool, out);
}
