/* snapshot.c - one host snapshot: host memory from /proc (procmem.c) and
 * the GPUs from NVML, else nvidia-smi, else none.
 *
 * A snapshot never fails as a whole; each part says whether it could be
 * read, because the gate must tell "no GPU" from "could not look" from
 * "the driver is wedged".  The order of the GPU sources is fixed: NVML
 * (exact, cheap); nvidia-smi only when NVML could not be loaded or
 * initialised (it goes through NVML itself, so it is no help when NVML is
 * hung, and would only add another process stuck in the driver); none.
 * Unified devices get their memory from the host's MemTotal/MemAvailable
 * here, once, whichever source listed them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "host/host.h"
#include "host/nvml.h"
#include "host/smi.h"

#define DEFAULT_NVML_TIMEOUT_MS 2000 /* settings memory.nvml_timeout */
#define DEFAULT_SMI_TIMEOUT_MS 5000  /* nvidia-smi's own start is slower than NVML's */

/* opts, else the environment variable (when set and not empty), else def */
static const char *pick(const char *opt, const char *env, const char *def)
{
    if (opt && *opt) return opt;
    const char *e = getenv(env);
    return e && *e ? e : def;
}

/* Can an NVIDIA driver be there at all?  NVML needs the kernel module
 * (/proc/driver/nvidia, also inside containers) and its device nodes, or
 * on WSL /dev/dxg.  Without any of them the default library is not
 * dlopened: the search of the library path (~85 failing opens and stats) and the
 * NVML thread's start were most of a CPU-only host's snapshot (~1 ms of
 * preflight; docs/startup.md), and nvidia-smi could only fail the same way. */
static bool driver_possible(const char *proc_root, const char *dev_root, char *why, size_t whylen)
{
    const char *root[3] = {proc_root, dev_root, dev_root}, *name[3] = {"driver/nvidia", "nvidiactl", "dxg"};
    for (int i = 0; i < 3; i++) {
        char p[4096];
        if ((size_t)snprintf(p, sizeof p, "%s/%s", root[i], name[i]) < sizeof p && access(p, F_OK) == 0) return true;
    }
    snprintf(why, whylen, "no NVIDIA driver: none of %.200s/driver/nvidia, %.200s/nvidiactl, %.200s/dxg exists",
             proc_root, dev_root, dev_root);
    return false;
}

static void take_gpus(snapshot *s, const snapshot_opts *o, const char *proc_root)
{
    char nerr[256] = "", serr[256] = "", none[640] = "";
    const char *lib = pick(o->nvml_lib, "GPUMOD_NVML_LIB", NULL), *smi = pick(o->smi_path, "GPUMOD_NVIDIA_SMI", NULL);
    /* a named library or nvidia-smi is always tried, a default only where a
     * driver can be (not looked for when both are named) */
    bool driver = (lib && smi) || driver_possible(proc_root, o->dev_root ? o->dev_root : "/dev", none, sizeof none);
    if (!lib && !driver) {
        snprintf(nerr, sizeof nerr, "%s", none);
    } else {
        int64_t t0 = clock_mono_ms();
        s->nvml = nvml_query(s, lib ? lib : "libnvidia-ml.so.1",
                             o->nvml_timeout_ms > 0 ? o->nvml_timeout_ms : DEFAULT_NVML_TIMEOUT_MS, nerr, sizeof nerr);
        s->nvml_ms = clock_mono_ms() - t0;
    }
    if (s->nvml == NVML_OK) {
        s->source = GPU_SRC_NVML;
        return;
    }
    if (s->nvml == NVML_HUNG) {
        snprintf(s->gpu_error, sizeof s->gpu_error, "nvml: %s", nerr);
        return;
    }
    if (!smi && !driver) { /* it would go through NVML: not tried */
        if (lib)
            snprintf(s->gpu_error, sizeof s->gpu_error, "nvml: %s; nvidia-smi: not tried (no NVIDIA driver)", nerr);
        else
            snprintf(s->gpu_error, sizeof s->gpu_error, "%s", none);
        return;
    }
    bool found = false;
    if (smi_query(s, smi ? smi : "nvidia-smi", o->smi_timeout_ms > 0 ? o->smi_timeout_ms : DEFAULT_SMI_TIMEOUT_MS,
                  &found, serr, sizeof serr) == 0) {
        s->source = GPU_SRC_SMI;
        s->nvidia_driver = true;
        /* kept for display: why the figures came the slow way */
        snprintf(s->gpu_error, sizeof s->gpu_error, "nvml: %s", nerr);
        return;
    }
    snprintf(s->gpu_error, sizeof s->gpu_error, "nvml: %s; nvidia-smi: %s", nerr, serr);
}

static void fill_unified(snapshot *s)
{
    for (size_t i = 0; i < s->ngpus; i++) {
        gpu_dev *d = &s->gpus[i];
        if (!d->unified) continue;
        if (!s->host.meminfo_ok) {
            if (!s->gpu_error[0])
                snprintf(s->gpu_error, sizeof s->gpu_error,
                         "device %d has unified memory but /proc/meminfo could not be read", d->index);
            continue;
        }
        /* as nvtop, Ollama, llama.cpp and vLLM do on GB10 (memory.md §3.4) */
        d->total_bytes = s->host.mem_total;
        d->free_bytes = s->host.mem_available < s->host.mem_total ? s->host.mem_available
                                                                   : s->host.mem_total;
        d->used_bytes = d->total_bytes - d->free_bytes;
        d->reserved_bytes = 0;
    }
}

void snapshot_take(snapshot *s, const snapshot_opts *o)
{
    static const snapshot_opts defaults = {0};
    if (!o) o = &defaults;
    memset(s, 0, sizeof *s);
    s->nvml = NVML_ABSENT;
    s->source = GPU_SRC_NONE;
    s->nvml_ms = -1;
    const char *root = pick(o->proc_root, "GPUMOD_PROC_ROOT", "/proc");

    /* each part stands alone; the readers set their own _ok flags (a
     * kernel without PSI is no error, yet psi_ok stays false); the first
     * meminfo or buddyinfo error is kept for display */
    char err[256];
    if (procmem_read_meminfo(&s->host, root, err, sizeof err)) snprintf(s->host_error, sizeof s->host_error, "%s", err);
    if (procmem_read_buddyinfo(&s->host, root, err, sizeof err) && !s->host_error[0])
        snprintf(s->host_error, sizeof s->host_error, "%s", err);
    procmem_read_psi(&s->host, root, err, sizeof err);

    if (!o->skip_gpus) {
        take_gpus(s, o, root);
        fill_unified(s);
    }
    if (!s->nvidia_driver) {
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/driver/nvidia", root) < sizeof path)
            s->nvidia_driver = access(path, F_OK) == 0;
    }
}

void snapshot_release(snapshot *s)
{
    for (size_t i = 0; i < s->ngpus && i < HOST_MAX_GPUS; i++) {
        free(s->gpus[i].procs);
        s->gpus[i].procs = NULL;
        s->gpus[i].nprocs = 0;
    }
    s->ngpus = 0;
}
