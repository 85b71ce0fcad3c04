/* need.c - the need of a service (see need.h).
 *
 * The device mapping follows what the engine will do: llama-server spreads
 * over every visible GPU (the preset's devices, else all of them); vLLM and
 * declared figures use the preset's devices, else GPU 0.  On a host with
 * no GPU a llama.cpp estimate puts everything on the host, which is what a
 * CPU build would do. */
#include "daemon/need.h"

_Static_assert(EST_MAX_DEVICES == HOST_MAX_GPUS, "an estimate and a snapshot count the same GPUs");
#include "drivers/hash.h"
#include "model/ggml_type.h"
#include "model/gguf.h"
#include "util/buf.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024ull)

static int device_index(const snapshot *snap, const char *dev)
{
    if (!strncmp(dev, "GPU-", 4) || !strncmp(dev, "MIG-", 4)) {
        for (size_t i = 0; i < snap->ngpus; i++)
            if (!strcmp(snap->gpus[i].uuid, dev)) return snap->gpus[i].index;
        return -1;
    }
    return atoi(dev);
}

/* the devices a preset uses: its own list, else (all_gpus) every GPU of
 * the snapshot, else GPU 0 when there is one */
static size_t preset_devices(const preset *p, const snapshot *snap, bool all_gpus, int *idx)
{
    size_t n = 0;
    if (p->devices.n) {
        for (size_t i = 0; i < p->devices.n && n < HOST_MAX_GPUS; i++) idx[n++] = device_index(snap, p->devices.v[i]);
    } else if (all_gpus) {
        for (size_t i = 0; i < snap->ngpus && n < HOST_MAX_GPUS; i++) idx[n++] = snap->gpus[i].index;
    } else if (snap->ngpus) {
        idx[n++] = snap->gpus[0].index;
    }
    return n;
}

static const gpu_dev *gpu_by_index(const snapshot *snap, int index)
{
    for (size_t i = 0; i < snap->ngpus; i++)
        if (snap->gpus[i].index == index) return &snap->gpus[i];
    return NULL;
}

void need_est_params(const preset *p, const snapshot *snap, est_params *ep, int *dev_index)
{
    est_params_default(ep);
    ep->ctx = p->context_size > 0 ? p->context_size : 4096;
    ep->parallel = p->llama.parallel > 0 ? p->llama.parallel : 1;
    if (p->llama.batch_size > 0) ep->n_batch = p->llama.batch_size;
    if (p->llama.ubatch_size > 0) ep->n_ubatch = p->llama.ubatch_size;
    int t;
    if (p->llama.cache_type_k && (t = ggml_type_by_name(p->llama.cache_type_k)) >= 0) ep->type_k = (uint32_t)t;
    if (p->llama.cache_type_v && (t = ggml_type_by_name(p->llama.cache_type_v)) >= 0) ep->type_v = (uint32_t)t;
    ep->ngl = p->llama.n_gpu_layers;
    ep->n_cpu_moe = p->llama.n_cpu_moe > 0 ? p->llama.n_cpu_moe : 0;
    ep->flash_attn = p->llama.flash_attn == TRI_UNSET ? -1 : p->llama.flash_attn;
    ep->ndev = preset_devices(p, snap, true, dev_index);
    if (ep->ndev > 1 && p->n_mem_gpu == ep->ndev) {
        /* the same proportions the driver passes as --tensor-split */
        for (size_t i = 0; i < ep->ndev; i++) ep->split[i] = (double)p->mem_gpu_mb[i];
    }
}

/* Whether the engine keeps its host memory pageable (the contiguity rule
 * then does not bind): memory.pins_host when set; else llama.cpp does
 * (gpumod sets GGML_CUDA_NO_PINNED=1, and llama.cpp then never pins,
 * whatever the value), vLLM does not (it pins for its transfers), and an
 * engine gpumod cannot see into is taken to pin. */
static bool host_pageable(const preset *p)
{
    if (p->mem_pins_host >= 0) return !p->mem_pins_host;
    return p->driver == DRV_LLAMACPP;
}

int need_from_estimate(const preset *p, const est_params *ep, const int *dev_index, need_detail *out, char *err,
                       size_t errlen)
{
    gguf_file g;
    if (gguf_open(&g, p->model_path, err, errlen)) return -1;
    int rc = estimate_llamacpp(&g, ep, &out->est, err, errlen);
    gguf_release(&g);
    if (rc) return -1;
    out->has_estimate = true;
    snprintf(out->n.source, sizeof out->n.source, "estimate");
    out->n.pageable_host = host_pageable(p);
    out->n.host_bytes = out->est.host_total;
    out->n.ngpu = ep->ndev;
    for (size_t i = 0; i < ep->ndev; i++) {
        out->n.gpu[i].index = dev_index[i];
        out->n.gpu[i].bytes = out->est.dev_total[i];
    }
    return 0;
}

static int is_first_shard_gguf(const char *name)
{
    size_t n = strlen(name);
    if (n < 5 || strcmp(name + n - 5, ".gguf")) return 0;
    if (!strncmp(name, "mmproj", 6)) return 0; /* projectors load beside a model, not as one */
    const char *of = strstr(name, "-of-");
    if (of && of - name >= 6 && of[-6] == '-') return !strncmp(of - 5, "00001", 5);
    return 1;
}

/* Router mode: the largest --models-max models of the directory can be
 * loaded at once (llama-server's default is 4; 0 means no limit). */
static int router_need(const preset *p, const snapshot *snap, need_detail *out, char *err, size_t errlen)
{
    DIR *d = opendir(p->llama.models_dir);
    if (!d) {
        snprintf(err, errlen, "preset '%s': cannot read models_dir '%s'", p->id, p->llama.models_dir);
        return -1;
    }
    typedef struct {
        char *name;
        need_detail nd;
        uint64_t total;
    } cand;
    cand *c = NULL;
    size_t nc = 0;
    struct dirent *e;
    est_params ep;
    int dev_index[HOST_MAX_GPUS];
    need_est_params(p, snap, &ep, dev_index);
    int rc = 0;
    while ((e = readdir(d))) {
        if (!is_first_shard_gguf(e->d_name)) continue;
        preset q = *p;
        char *path = xasprintf("%s/%s", p->llama.models_dir, e->d_name);
        q.model_path = path;
        c = xrealloc(c, (nc + 1) * sizeof *c);
        memset(&c[nc], 0, sizeof c[nc]);
        char e2[256];
        if (need_from_estimate(&q, &ep, dev_index, &c[nc].nd, e2, sizeof e2)) {
            snprintf(err, errlen, "preset '%s': router model '%.100s': %.200s", p->id, e->d_name, e2);
            free(path);
            rc = -1;
            break;
        }
        free(path);
        c[nc].name = xstrdup(e->d_name);
        uint64_t t = c[nc].nd.n.host_bytes;
        for (size_t i = 0; i < c[nc].nd.n.ngpu; i++) t += c[nc].nd.n.gpu[i].bytes;
        c[nc].total = t;
        nc++;
    }
    closedir(d);
    if (!rc && !nc) {
        snprintf(err, errlen, "preset '%s': models_dir '%s' has no .gguf model", p->id, p->llama.models_dir);
        rc = -1;
    }
    if (!rc) {
        /* largest first */
        for (size_t i = 1; i < nc; i++)
            for (size_t j = i; j > 0 && c[j].total > c[j - 1].total; j--) {
                cand t = c[j];
                c[j] = c[j - 1];
                c[j - 1] = t;
            }
        size_t max = p->llama.models_max < 0 ? 4 : p->llama.models_max == 0 ? nc : (size_t)p->llama.models_max;
        if (max > nc) max = nc;
        snprintf(out->n.source, sizeof out->n.source, "estimate");
        out->n.ngpu = ep.ndev;
        for (size_t i = 0; i < ep.ndev; i++) out->n.gpu[i].index = dev_index[i];
        buf b = BUF_INIT;
        buf_printf(&b, "router mode: the %zu largest of %zu models (models_max %lld):", max, nc,
                   (long long)p->llama.models_max);
        for (size_t k = 0; k < max; k++) {
            out->n.host_bytes += c[k].nd.n.host_bytes;
            for (size_t i = 0; i < ep.ndev; i++) out->n.gpu[i].bytes += c[k].nd.n.gpu[i].bytes;
            buf_printf(&b, " %s", c[k].name);
        }
        snprintf(out->detail, sizeof out->detail, "%.500s", b.p);
        buf_release(&b);
    }
    for (size_t i = 0; i < nc; i++) free(c[i].name);
    free(c);
    return rc;
}

static int vllm_need(const preset *p, const snapshot *snap, need_detail *out, char *err, size_t errlen)
{
    int idx[HOST_MAX_GPUS];
    size_t n = preset_devices(p, snap, false, idx);
    if (!n) { /* no GPU here: ask for device 0 so the gate refuses it as not present */
        idx[0] = 0;
        n = 1;
    }
    double util = p->vllm.gpu_memory_utilization > 0 ? p->vllm.gpu_memory_utilization : 0.9;
    snprintf(out->n.source, sizeof out->n.source, "estimate");
    out->n.ngpu = n;
    for (size_t i = 0; i < n; i++) {
        const gpu_dev *g = gpu_by_index(snap, idx[i]);
        out->n.gpu[i].index = idx[i];
        uint64_t total = g ? (g->unified ? snap->host.mem_total : g->total_bytes) : 0;
        /* vLLM requests ceil(total x utilization) and refuses to start below it */
        out->n.gpu[i].bytes = (uint64_t)((double)total * util + 0.999999);
    }
    out->n.host_bytes = p->mem_host_mb > 0 ? (uint64_t)p->mem_host_mb * MIB : 0;
    snprintf(out->detail, sizeof out->detail, "vLLM reserves gpu_memory_utilization %g x total memory%s", util,
             p->mem_host_mb > 0 ? "; host memory declared" : "; host memory not declared (memory.host_mb)");
    return 0;
}

static int declared_need(const preset *p, const snapshot *snap, need_detail *out, char *err, size_t errlen)
{
    if (!p->n_mem_gpu && p->mem_host_mb < 0) {
        snprintf(err, errlen,
                 "preset '%s': cannot tell what it needs: driver %s has no estimate; declare memory: {gpu_mb, host_mb} "
                 "(or vram_mb)",
                 p->id, driver_names[p->driver]);
        return -1;
    }
    int idx[HOST_MAX_GPUS];
    size_t n = preset_devices(p, snap, false, idx);
    if (!n && p->n_mem_gpu) { /* a GPU figure on a host without GPUs: keep it on "device 0" so the gate says so */
        idx[0] = 0;
        n = 1;
    }
    snprintf(out->n.source, sizeof out->n.source, "declared");
    out->n.host_bytes = p->mem_host_mb > 0 ? (uint64_t)p->mem_host_mb * MIB : 0;
    if (p->n_mem_gpu) {
        out->n.ngpu = n;
        uint64_t total = 0;
        for (size_t i = 0; i < p->n_mem_gpu; i++) total += (uint64_t)p->mem_gpu_mb[i];
        for (size_t i = 0; i < n; i++) {
            out->n.gpu[i].index = idx[i];
            /* per device when given per device, else the total split evenly */
            out->n.gpu[i].bytes = p->n_mem_gpu == n && n > 1 ? (uint64_t)p->mem_gpu_mb[i] * MIB
                                                               : (total * MIB + n - 1) / n;
        }
    }
    snprintf(out->detail, sizeof out->detail, "declared in the preset (%s)",
             p->vram_mb >= 0 ? "vram_mb" : "memory");
    return 0;
}

static uint64_t mib_up(uint64_t b)
{
    return (b + MIB - 1) / MIB;
}

/* The slot of device index in n, appended (0 bytes) when absent; -1 when
 * full. */
static int need_gpu_slot(need *n, int index)
{
    for (size_t j = 0; j < n->ngpu; j++)
        if (n->gpu[j].index == index) return (int)j;
    if (n->ngpu >= HOST_MAX_GPUS) return -1;
    n->gpu[n->ngpu].index = index;
    n->gpu[n->ngpu].bytes = 0;
    return (int)n->ngpu++;
}

/* The declaration as a floor (docs/memory.md "The need of a service"):
 * each declared figure raises the measured or estimated one below it and
 * never lowers one, since a declaration that is too small is a guess and
 * the model file (or a measurement) is not.  n.source becomes "declared"
 * when one binds, and the detail says which and over what.  A declared
 * device the snapshot lacks is skipped: the engine runs on what is here,
 * and the estimate already placed it. */
static void apply_declared(const preset *p, const snapshot *snap, need_detail *out)
{
    if (!p->n_mem_gpu && p->mem_host_mb < 0) return;
    need_detail dec;
    char e[256];
    memset(&dec, 0, sizeof dec);
    if (declared_need(p, snap, &dec, e, sizeof e)) return;
    char from[16];
    snprintf(from, sizeof from, "%s", out->n.source);
    const char *gkey = p->vram_mb >= 0 ? "vram_mb" : "memory.gpu_mb";
    buf why = BUF_INIT;
    if (p->mem_host_mb >= 0 && dec.n.host_bytes > out->n.host_bytes) {
        buf_printf(&why, "; declared memory.host_mb binds: host %llu MiB > %s %llu MiB",
                   (unsigned long long)mib_up(dec.n.host_bytes), from,
                   (unsigned long long)mib_up(out->n.host_bytes));
        out->n.host_bytes = dec.n.host_bytes;
    }
    for (size_t i = 0; i < dec.n.ngpu; i++) {
        int index = dec.n.gpu[i].index;
        if (!dec.n.gpu[i].bytes || !gpu_by_index(snap, index)) continue;
        int j = need_gpu_slot(&out->n, index);
        if (j < 0 || dec.n.gpu[i].bytes <= out->n.gpu[j].bytes) continue;
        buf_printf(&why, "; declared %s binds: gpu %d %llu MiB > %s %llu MiB", gkey, index,
                   (unsigned long long)mib_up(dec.n.gpu[i].bytes), from,
                   (unsigned long long)mib_up(out->n.gpu[j].bytes));
        out->n.gpu[j].bytes = dec.n.gpu[i].bytes;
    }
    if (why.len) {
        snprintf(out->n.source, sizeof out->n.source, "declared");
        size_t l = strlen(out->detail);
        snprintf(out->detail + l, sizeof out->detail - l, "%s", why.p);
    }
    buf_release(&why);
}

int need_declared_below(const preset *p, char *warn, size_t warnlen)
{
    if (p->driver != DRV_LLAMACPP || !p->model_path || p->llama.models_dir) return 0;
    if (!p->n_mem_gpu && p->mem_host_mb < 0) return 0;
    uint64_t gpu_decl = 0;
    for (size_t i = 0; i < p->n_mem_gpu; i++) gpu_decl += (uint64_t)p->mem_gpu_mb[i] * MIB;
    /* the GPUs the preset names or declares; none when it declares no GPU
     * memory (a CPU service: the estimate then puts everything on the host) */
    snapshot snap;
    memset(&snap, 0, sizeof snap);
    size_t n = p->devices.n ? p->devices.n : gpu_decl ? (p->n_mem_gpu > 1 ? p->n_mem_gpu : 1) : 0;
    for (size_t i = 0; i < n && i < HOST_MAX_GPUS; i++) {
        snap.gpus[i].index = (int)i;
        if (p->devices.n) snprintf(snap.gpus[i].uuid, sizeof snap.gpus[i].uuid, "%s", p->devices.v[i]);
    }
    snap.ngpus = n < HOST_MAX_GPUS ? n : HOST_MAX_GPUS;
    est_params ep;
    int idx[HOST_MAX_GPUS];
    need_est_params(p, &snap, &ep, idx);
    need_detail nd;
    char e[256];
    memset(&nd, 0, sizeof nd);
    if (need_from_estimate(p, &ep, idx, &nd, e, sizeof e)) return 0; /* no estimate: nothing to compare */
    uint64_t gpu_est = 0;
    for (size_t i = 0; i < nd.n.ngpu; i++) gpu_est += nd.n.gpu[i].bytes;
    const char *what = NULL;
    uint64_t decl = 0, est = 0;
    if (p->n_mem_gpu && gpu_decl < gpu_est) {
        what = p->vram_mb >= 0 ? "vram_mb" : "memory.gpu_mb";
        decl = gpu_decl;
        est = gpu_est;
    } else if (p->mem_host_mb >= 0 && (uint64_t)p->mem_host_mb * MIB < nd.n.host_bytes) {
        what = "memory.host_mb";
        decl = (uint64_t)p->mem_host_mb * MIB;
        est = nd.n.host_bytes;
    }
    if (!what) return 0;
    snprintf(warn, warnlen,
             "preset '%s': %s %llu MiB is below the estimate of %llu MiB from '%s' (-c %lld, --parallel %lld): "
             "the estimate is used: a declaration can raise the need, never lower it",
             p->id, what, (unsigned long long)(decl / MIB), (unsigned long long)mib_up(est), p->model_path,
             (long long)ep.ctx, (long long)ep.parallel);
    return 1;
}

void need_from_footprint(const footprint *f, need_detail *out)
{
    snprintf(out->n.source, sizeof out->n.source, "measured");
    out->n.host_bytes = f->host_bytes;
    out->n.ngpu = f->ngpu < HOST_MAX_GPUS ? f->ngpu : HOST_MAX_GPUS;
    for (size_t i = 0; i < out->n.ngpu; i++) {
        out->n.gpu[i].index = f->gpu[i].index;
        out->n.gpu[i].bytes = f->gpu[i].bytes;
    }
    buf b = BUF_INIT;
    if (footprint_partial(f)) {
        buf_adds(&b, "measured (host");
        for (size_t i = 0; i < out->n.ngpu; i++)
            if (f->gpu[i].how != FP_GPU_ADMITTED) buf_printf(&b, ", gpu %d", f->gpu[i].index);
        buf_adds(&b, ") + admitted (");
        const char *sep = "";
        for (size_t i = 0; i < out->n.ngpu; i++)
            if (f->gpu[i].how == FP_GPU_ADMITTED) {
                buf_printf(&b, "%sgpu %d", sep, f->gpu[i].index);
                sep = ", ";
            }
        buf_adds(&b, ")");
    } else {
        buf_adds(&b, "measured");
    }
    buf_printf(&b, " after a start of '%s' with the same configuration: host: RSS of the process group", f->service);
    for (size_t i = 0; i < out->n.ngpu; i++) {
        switch (f->gpu[i].how) {
        case FP_GPU_NVML: buf_printf(&b, "; gpu %d: NVML per-process memory", f->gpu[i].index); break;
        case FP_GPU_UNIFIED:
            buf_printf(&b, "; gpu %d: unified: MemAvailable delta (admission to ready) minus the group's RSS",
                       f->gpu[i].index);
            break;
        case FP_GPU_ADMITTED:
            buf_printf(&b, "; gpu %d: per-process figures not available, the admitted bytes stand in",
                       f->gpu[i].index);
            break;
        }
    }
    snprintf(out->detail, sizeof out->detail, "%s", b.p ? b.p : "");
    buf_release(&b);
}

static int need_done(const preset *p, const snapshot *snap, need_detail *out)
{
    apply_declared(p, snap, out);
    return 0;
}

static int need_compute(const preset *p, const settings *s, const snapshot *snap, store *st, need_detail *out,
                        char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (p->driver == DRV_REMOTE) {
        snprintf(out->n.source, sizeof out->n.source, "none");
        snprintf(out->detail, sizeof out->detail, "driver remote: nothing runs here");
        return 0;
    }
    char herr[256];
    if (config_hash(p, s, out->hash, NULL, herr, sizeof herr)) out->hash[0] = '\0';
    if (st && out->hash[0]) {
        footprint f;
        int r = store_footprint_get(st, out->hash, &f, herr, sizeof herr);
        if (r == 1) {
            need_from_footprint(&f, out);
            apply_declared(p, snap, out);
            return 0;
        }
    }
    char eerr[256] = "";
    if (p->driver == DRV_LLAMACPP && p->llama.models_dir) {
        if (router_need(p, snap, out, eerr, sizeof eerr) == 0) return need_done(p, snap, out);
    } else if (p->driver == DRV_LLAMACPP && p->model_path) {
        est_params ep;
        int idx[HOST_MAX_GPUS];
        need_est_params(p, snap, &ep, idx);
        if (need_from_estimate(p, &ep, idx, out, eerr, sizeof eerr) == 0) {
            snprintf(out->detail, sizeof out->detail, "estimated from '%.300s' (-c %lld, --parallel %lld)", p->model_path,
                     (long long)ep.ctx, (long long)ep.parallel);
            return need_done(p, snap, out);
        }
    } else if (p->driver == DRV_VLLM) {
        if (vllm_need(p, snap, out, eerr, sizeof eerr) == 0) return need_done(p, snap, out);
    }
    char hash[65];
    memcpy(hash, out->hash, sizeof hash);
    memset(out, 0, sizeof *out);
    memcpy(out->hash, hash, sizeof hash);
    if (declared_need(p, snap, out, err, errlen) == 0) {
        if (eerr[0]) {
            size_t l = strlen(out->detail);
            snprintf(out->detail + l, sizeof out->detail - l, "; no estimate: %.300s", eerr);
        }
        return 0;
    }
    if (eerr[0]) snprintf(err, errlen, "%.300s; and nothing is declared (memory: {gpu_mb, host_mb} or vram_mb)", eerr);
    return -1;
}

int service_need(const preset *p, const settings *s, const snapshot *snap, store *st, need_detail *out, char *err,
                 size_t errlen)
{
    int rc = need_compute(p, s, snap, st, out, err, errlen);
    out->n.pageable_host = host_pageable(p);
    return rc;
}
