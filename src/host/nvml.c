/* nvml.c - the GPUs as NVML reports them, asked on one dedicated thread
 * under a deadline.
 *
 * Loading: dlopen of libnvidia-ml.so.1 (or $GPUMOD_NVML_LIB) with our own
 * declarations of the few structs and calls we use, no NVIDIA header.
 * Each call is resolved versioned-first (nvmlInit_v2, ..._v2, _v3) with the
 * older name as fallback, as the real header's #defines would do; memory
 * v2 carries the struct version NVML checks (sizeof | 2 << 24, 0x02000028
 * on LP64), and falls back to v1 when the library rejects that version.
 * The H200 probe (tests/fixtures/device/h200) found every versioned symbol.
 *
 * Threading: NVML can block for minutes while the driver is wedged (GB10
 * allocation stalls, a process page-locking memory; research/memory.md
 * §3.1), so no caller ever calls it directly.  One detached thread owns
 * the library; a caller hands it a request and waits on a condition
 * variable until its deadline.  At most one call is outstanding: when the
 * deadline passes, the caller returns NVML_HUNG and marks the request
 * abandoned; the thread, whenever it comes back, discards the answer.  A
 * query that finds the thread still busy answers NVML_HUNG at once rather
 * than queueing a second call behind the stuck one, or starting another
 * thread (a wedged driver would eat them all).  The thread is never
 * joined, so exit() with it stuck does not wait for it; a forked child
 * starts its own on its first query.
 *
 * The library stays loaded and initialised between queries (init costs
 * ~10 ms with a driver, seconds without the persistence daemon); a query
 * naming another library path unloads the first; a failed init is retried
 * by the next query; a query failure after init shuts the session down so
 * the next query starts a fresh one (GPU lost, driver replaced). */
#include "util/clock.h"
#include "util/errf.h"
#include "host/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/buf.h"

const char *const nvml_state_names[] = {"ok", "absent", "hung", "failed"};
const char *const gpu_source_names[] = {"none", "nvml", "nvidia-smi"};

/* ---- the NVML ABI (nvml.h, API 13; research/memory.md §3.2) ------------ */

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
};
#define NVML_TEMPERATURE_GPU 0

typedef struct nvml_dev_st *nvml_dev;
typedef struct {
    unsigned long long total, free, used;
} nvml_mem_v1;
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvml_mem_v2;
#define NVML_MEM_V2_VERSION ((unsigned int)(sizeof(nvml_mem_v2) | (2u << 24)))
#if __SIZEOF_POINTER__ == 8
_Static_assert(NVML_MEM_V2_VERSION == 0x02000028u, "nvmlMemory_v2 is 0x02000028 on LP64");
#endif
typedef struct {
    unsigned int pid;
    unsigned long long used;
    unsigned int gpu_instance, compute_instance;
} nvml_proc_v2; /* nvmlProcessInfo_t: the _v2 and _v3 calls */
typedef struct {
    unsigned int pid;
    unsigned long long used;
} nvml_proc_v1; /* the unversioned call */
typedef struct {
    char bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} nvml_pci; /* nvmlPciInfo_t, _v2 and _v3 */
typedef struct {
    unsigned int gpu, memory;
} nvml_util;

typedef int (*procs_v2_fn)(nvml_dev, unsigned int *, nvml_proc_v2 *);

struct nvml_api {
    int (*init)(void);
    int (*shutdown)(void);
    int (*count)(unsigned int *);
    int (*handle)(unsigned int, nvml_dev *);
    int (*name)(nvml_dev, char *, unsigned int);
    int (*uuid)(nvml_dev, char *, unsigned int);
    int (*pci)(nvml_dev, nvml_pci *);
    int (*mem_v2)(nvml_dev, nvml_mem_v2 *);
    int (*mem_v1)(nvml_dev, nvml_mem_v1 *);
    procs_v2_fn procs_v2; /* _v3, else _v2: the same struct */
    int (*procs_v1)(nvml_dev, unsigned int *, nvml_proc_v1 *);
    int (*util)(nvml_dev, nvml_util *);
    int (*temp)(nvml_dev, int, unsigned int *);
    int (*power)(nvml_dev, unsigned int *);
    int (*driver)(char *, unsigned int);
    int (*cc)(nvml_dev, int *, int *); /* optional: compute capability */
    /* the names resolved, for error text */
    const char *init_sym, *count_sym, *handle_sym, *procs_sym;
};

static const char *rc_text(int rc)
{
    switch (rc) {
    case 1: return "uninitialized";
    case 2: return "invalid argument";
    case 3: return "not supported";
    case 4: return "no permission";
    case 5: return "already initialized";
    case 6: return "not found";
    case 7: return "insufficient size";
    case 8: return "insufficient power";
    case 9: return "driver not loaded";
    case 10: return "timeout";
    case 11: return "interrupt request issue";
    case 12: return "library not found";
    case 13: return "function not found";
    case 14: return "corrupted inforom";
    case 15: return "gpu is lost";
    case 16: return "reset required";
    case 17: return "operating system call failed";
    case 18: return "driver/library version mismatch";
    case 19: return "in use";
    case 20: return "out of memory";
    case 21: return "no data";
    case 23: return "insufficient resources";
    case 25: return "argument version mismatch";
    case 26: return "deprecated";
    case 27: return "not ready";
    case 28: return "gpu not found";
    case 29: return "invalid state";
    case 999: return "unknown error";
    default: return "error";
    }
}

/* ---- the NVML thread's side: only it touches `lib` ---------------------- */

typedef struct nvml_out {
    nvml_state state;
    bool inited;
    gpu_dev gpus[HOST_MAX_GPUS];
    size_t ngpus;
    char driver_version[64];
    char err[256];
    void *scratch; /* the process list being read, owned here while in flight */
} nvml_out;

static struct {
    char path[PATH_MAX];
    void *h;
    bool inited;
    struct nvml_api api;
} lib;

static void *sym2(void *h, const char *a, const char *b, const char **used)
{
    void *p = dlsym(h, a);
    const char *name = a;
    if (!p && b) {
        p = dlsym(h, b);
        name = b;
    }
    if (p && used) *used = name;
    return p;
}

static void lib_unload(void)
{
    if (!lib.h) return;
    if (lib.inited && lib.api.shutdown) lib.api.shutdown();
    dlclose(lib.h);
    memset(&lib, 0, sizeof lib);
}

static int lib_load(const char *path, nvml_out *o)
{
    if (lib.h && strcmp(lib.path, path) == 0) return 0;
    lib_unload();
    if (strlen(path) >= sizeof lib.path) {
        o->state = NVML_ABSENT;
        errf(o->err, sizeof o->err, "NVML library path is too long");
        return -1;
    }
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        /* dlerror says "PATH: why"; the path is ours to quote */
        const char *why = dlerror();
        size_t n = strlen(path);
        if (why && strncmp(why, path, n) == 0 && strncmp(why + n, ": ", 2) == 0) why += n + 2;
        o->state = NVML_ABSENT;
        errf(o->err, sizeof o->err, "cannot load '%s': %s", path, why ? why : "dlopen failed");
        return -1;
    }
    struct nvml_api *a = &lib.api;
    memset(a, 0, sizeof *a);
    a->init = (int (*)(void))sym2(h, "nvmlInit_v2", "nvmlInit", &a->init_sym);
    a->shutdown = (int (*)(void))sym2(h, "nvmlShutdown", NULL, NULL);
    a->count = (int (*)(unsigned int *))sym2(h, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount",
                                             &a->count_sym);
    a->handle = (int (*)(unsigned int, nvml_dev *))sym2(h, "nvmlDeviceGetHandleByIndex_v2",
                                                        "nvmlDeviceGetHandleByIndex",
                                                        &a->handle_sym);
    a->name = (int (*)(nvml_dev, char *, unsigned int))sym2(h, "nvmlDeviceGetName", NULL, NULL);
    a->uuid = (int (*)(nvml_dev, char *, unsigned int))sym2(h, "nvmlDeviceGetUUID", NULL, NULL);
    a->pci = (int (*)(nvml_dev, nvml_pci *))sym2(h, "nvmlDeviceGetPciInfo_v3",
                                                 "nvmlDeviceGetPciInfo_v2", NULL);
    a->mem_v2 = (int (*)(nvml_dev, nvml_mem_v2 *))sym2(h, "nvmlDeviceGetMemoryInfo_v2", NULL, NULL);
    a->mem_v1 = (int (*)(nvml_dev, nvml_mem_v1 *))sym2(h, "nvmlDeviceGetMemoryInfo", NULL, NULL);
    a->procs_v2 = (procs_v2_fn)sym2(h, "nvmlDeviceGetComputeRunningProcesses_v3",
                                    "nvmlDeviceGetComputeRunningProcesses_v2", &a->procs_sym);
    if (!a->procs_v2)
        a->procs_v1 = (int (*)(nvml_dev, unsigned int *, nvml_proc_v1 *))sym2(
            h, "nvmlDeviceGetComputeRunningProcesses", NULL, &a->procs_sym);
    a->util = (int (*)(nvml_dev, nvml_util *))sym2(h, "nvmlDeviceGetUtilizationRates", NULL, NULL);
    a->temp = (int (*)(nvml_dev, int, unsigned int *))sym2(h, "nvmlDeviceGetTemperature", NULL,
                                                           NULL);
    a->power = (int (*)(nvml_dev, unsigned int *))sym2(h, "nvmlDeviceGetPowerUsage", NULL, NULL);
    a->driver = (int (*)(char *, unsigned int))sym2(h, "nvmlSystemGetDriverVersion", NULL, NULL);
    /* since NVML 10 (driver 410); an older library leaves cc unknown */
    a->cc = (int (*)(nvml_dev, int *, int *))sym2(h, "nvmlDeviceGetCudaComputeCapability", NULL, NULL);

    const char *missing = !a->init     ? "nvmlInit_v2"
                          : !a->count  ? "nvmlDeviceGetCount_v2"
                          : !a->handle ? "nvmlDeviceGetHandleByIndex_v2"
                          : !a->mem_v2 && !a->mem_v1 ? "nvmlDeviceGetMemoryInfo"
                                                     : NULL;
    if (missing) {
        dlclose(h);
        memset(a, 0, sizeof *a);
        o->state = NVML_FAILED;
        errf(o->err, sizeof o->err, "'%s' has no %s", path, missing);
        return -1;
    }
    lib.h = h;
    memcpy(lib.path, path, strlen(path) + 1);
    return 0;
}

static void copy_str(char *dst, size_t n, const char *src)
{
    size_t len = strnlen(src, n - 1);
    memcpy(dst, src, len);
    dst[len] = '\0';
}

/* The compute processes on one device: count first, then the list with
 * some slack, again while it grew in between. */
static int get_procs(const struct nvml_api *a, nvml_dev h, gpu_dev *d, void **scratch, char *err,
                     size_t errlen)
{
    if (!a->procs_v2 && !a->procs_v1) return 0; /* no process API: none known */
    size_t esize = a->procs_v2 ? sizeof(nvml_proc_v2) : sizeof(nvml_proc_v1);
    nvml_proc_v2 probe;
    void *arr = NULL;
    unsigned int n = 0, cap = 0;
    int rc = a->procs_v2 ? a->procs_v2(h, &n, &probe) : a->procs_v1(h, &n, (nvml_proc_v1 *)&probe);
    for (int tries = 0; rc == NVML_ERROR_INSUFFICIENT_SIZE && tries < 5; tries++) {
        cap = n + 8;
        arr = *scratch = xrealloc(arr, cap * esize);
        n = cap;
        rc = a->procs_v2 ? a->procs_v2(h, &n, arr) : a->procs_v1(h, &n, arr);
    }
    if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_NO_PERMISSION) {
        free(arr);
        *scratch = NULL;
        return 0;
    }
    if (rc != NVML_SUCCESS) {
        free(arr);
        *scratch = NULL;
        errf(err, errlen, "device %d: %s: %s (%d)", d->index, a->procs_sym, rc_text(rc), rc);
        return -1;
    }
    if (n > cap) n = cap; /* SUCCESS on the first call means none */
    if (n) {
        d->procs = xcalloc(n, sizeof *d->procs);
        for (unsigned int i = 0; i < n; i++) {
            unsigned long long used;
            if (a->procs_v2) {
                d->procs[i].pid = ((nvml_proc_v2 *)arr)[i].pid;
                used = ((nvml_proc_v2 *)arr)[i].used;
            } else {
                d->procs[i].pid = ((nvml_proc_v1 *)arr)[i].pid;
                used = ((nvml_proc_v1 *)arr)[i].used;
            }
            /* NVML_VALUE_NOT_AVAILABLE is all ones, as is our "unknown" */
            d->procs[i].used_bytes = used == ~0ULL ? UINT64_MAX : (uint64_t)used;
        }
        d->nprocs = n;
    }
    free(arr);
    *scratch = NULL;
    return 0;
}

static int get_memory(const struct nvml_api *a, nvml_dev h, gpu_dev *d, char *err, size_t errlen)
{
    int rc = -1;
    const char *which = "nvmlDeviceGetMemoryInfo_v2";
    if (a->mem_v2) {
        nvml_mem_v2 m = {.version = NVML_MEM_V2_VERSION};
        rc = a->mem_v2(h, &m);
        if (rc == NVML_SUCCESS) {
            d->total_bytes = m.total;
            d->reserved_bytes = m.reserved;
            d->free_bytes = m.free;
            d->used_bytes = m.used;
        }
    }
    /* an older driver that has the symbol but not this struct version */
    if ((rc == -1 || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH ||
         rc == NVML_ERROR_FUNCTION_NOT_FOUND) &&
        a->mem_v1) {
        nvml_mem_v1 m = {0};
        which = "nvmlDeviceGetMemoryInfo";
        rc = a->mem_v1(h, &m);
        if (rc == NVML_SUCCESS) {
            /* v1 folds the reserved bytes into used; they are not told apart */
            d->total_bytes = m.total;
            d->free_bytes = m.free;
            d->used_bytes = m.used;
        }
    }
    if (rc == NVML_ERROR_NOT_SUPPORTED || (rc == NVML_SUCCESS && d->total_bytes == 0)) {
        /* no framebuffer of its own (GB10): the caller uses /proc/meminfo */
        d->unified = true;
        d->total_bytes = d->free_bytes = d->used_bytes = d->reserved_bytes = 0;
        return 0;
    }
    if (rc != NVML_SUCCESS) {
        errf(err, errlen, "device %d: %s: %s (%d)", d->index, which, rc_text(rc), rc);
        return -1;
    }
    return 0;
}

static int query_dev(const struct nvml_api *a, unsigned int i, gpu_dev *d, void **scratch,
                     char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    d->index = (int)i;
    d->util_gpu_pct = d->util_mem_pct = d->temp_c = -1;
    d->power_mw = -1;
    nvml_dev h = NULL;
    int rc = a->handle(i, &h);
    if (rc != NVML_SUCCESS) {
        errf(err, errlen, "device %u: %s: %s (%d)", i, a->handle_sym, rc_text(rc), rc);
        return -1;
    }
    /* identity and gauges are for display: a failure leaves them unknown */
    char tmp[128];
    if (a->name && a->name(h, tmp, sizeof tmp) == NVML_SUCCESS) copy_str(d->name, sizeof d->name, tmp);
    if (a->uuid && a->uuid(h, tmp, sizeof tmp) == NVML_SUCCESS) copy_str(d->uuid, sizeof d->uuid, tmp);
    nvml_pci pci;
    memset(&pci, 0, sizeof pci);
    if (a->pci && a->pci(h, &pci) == NVML_SUCCESS) {
        pci.bus_id[sizeof pci.bus_id - 1] = '\0';
        copy_str(d->bus_id, sizeof d->bus_id, pci.bus_id);
    }
    nvml_util u;
    if (a->util && a->util(h, &u) == NVML_SUCCESS) {
        d->util_gpu_pct = (int)u.gpu;
        d->util_mem_pct = (int)u.memory;
    }
    unsigned int v;
    if (a->temp && a->temp(h, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS) d->temp_c = (int)v;
    if (a->power && a->power(h, &v) == NVML_SUCCESS) d->power_mw = v;
    int major = 0, minor = 0;
    if (a->cc && a->cc(h, &major, &minor) == NVML_SUCCESS && major > 0 && minor >= 0) {
        d->cc_major = major;
        d->cc_minor = minor;
    }
    /* memory and processes are what the gate judges: a failure fails */
    if (get_memory(a, h, d, err, errlen) < 0) return -1;
    return get_procs(a, h, d, scratch, err, errlen);
}

static void out_free(nvml_out *o)
{
    for (size_t i = 0; i < HOST_MAX_GPUS; i++) free(o->gpus[i].procs);
    free(o);
}

static void run_query(const char *path, nvml_out *o)
{
    if (lib_load(path, o) < 0) return;
    const struct nvml_api *a = &lib.api;
    o->state = NVML_FAILED;
    int rc;
    if (!lib.inited) {
        if ((rc = a->init()) != NVML_SUCCESS) {
            errf(o->err, sizeof o->err, "%s: %s (%d)", a->init_sym, rc_text(rc), rc);
            return;
        }
        lib.inited = true;
    }
    o->inited = true;
    char drv[96];
    if (a->driver && a->driver(drv, sizeof drv) == NVML_SUCCESS)
        copy_str(o->driver_version, sizeof o->driver_version, drv);
    unsigned int n = 0;
    if ((rc = a->count(&n)) != NVML_SUCCESS) {
        errf(o->err, sizeof o->err, "%s: %s (%d)", a->count_sym, rc_text(rc), rc);
        goto lost;
    }
    if (n > HOST_MAX_GPUS) n = HOST_MAX_GPUS;
    for (unsigned int i = 0; i < n; i++) {
        if (query_dev(a, i, &o->gpus[i], &o->scratch, o->err, sizeof o->err) < 0) {
            for (unsigned int j = 0; j <= i; j++) {
                free(o->gpus[j].procs);
                o->gpus[j].procs = NULL;
            }
            goto lost;
        }
    }
    o->ngpus = n;
    o->state = NVML_OK;
    return;
lost:
    /* the session may be unusable (GPU lost, driver replaced): the next
     * query initialises a fresh one */
    if (a->shutdown) a->shutdown();
    lib.inited = false;
}

/* ---- the hand-over between callers and the thread ----------------------- */

static pthread_mutex_t call_mu = PTHREAD_MUTEX_INITIALIZER; /* one caller at a time */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;      /* guards w */
static pthread_cond_t req_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static struct {
    bool started;
    bool has_req;     /* a request waits for the thread */
    bool busy;        /* handed over and not answered yet */
    bool abandoned;   /* its caller gave up: the answer is discarded */
    bool driver_seen; /* the last answered query initialised NVML */
    int64_t busy_since;
    char lib[PATH_MAX];
    nvml_out *answer; /* the thread's answer, for the waiting caller */
} w;

/* The answer being built (and, through it, all the thread allocates),
 * reachable from a global while the thread may be stuck: a process that
 * exits then (the CLI after a hung query) must not have its leak checkers
 * (LSan, valgrind) report it lost.  A forked child keeps its copy of the
 * parent's in `orphan`, for the same reason.  Only the NVML thread (and
 * the fork handler) touch them; volatile, so the stores are not dropped
 * as dead. */
static nvml_out *volatile inflight;
static nvml_out *volatile orphan;

static void *nvml_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!w.has_req) pthread_cond_wait(&req_cv, &mu);
        w.has_req = false;
        char path[PATH_MAX];
        memcpy(path, w.lib, sizeof path);
        pthread_mutex_unlock(&mu);

        nvml_out *o = xcalloc(1, sizeof *o);
        inflight = o;
        run_query(path, o);
        inflight = NULL;

        pthread_mutex_lock(&mu);
        w.driver_seen = o->inited;
        if (w.abandoned) {
            out_free(o);
            w.abandoned = false;
        } else {
            w.answer = o;
        }
        w.busy = false;
        pthread_cond_broadcast(&done_cv);
    }
    return NULL;
}

/* A forked child has no NVML thread, whatever w says, and its copy of the
 * locks and of `lib` may be mid-use by the parent's thread: it starts
 * afresh, and reloads and re-initialises the library on its first query
 * (the parent's dlopen handle is left as it is). */
static void after_fork_child(void)
{
    mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    call_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    req_cv = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    done_cv = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    memset(&w, 0, sizeof w);
    memset(&lib, 0, sizeof lib);
    if (inflight) orphan = inflight; /* the parent's thread's, not ours to free */
    inflight = NULL;
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, after_fork_child);
}

/* With mu held.  Every signal is blocked in the thread, so process-directed
 * signals go to the threads that handle them (libuv's loop, main). */
static int start_thread(char *err, size_t errlen)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_atfork);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    int rc = pthread_create(&t, &at, nvml_thread, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
    if (rc != 0) {
        errf(err, errlen, "cannot start the NVML thread: %s", strerror(rc));
        return -1;
    }
    w.started = true;
    return 0;
}

nvml_state nvml_query(snapshot *s, const char *libpath, int64_t timeout_ms, char *err,
                      size_t errlen)
{
    if (timeout_ms < 1) timeout_ms = 1;
    int64_t start = clock_mono_ms(), deadline = start + timeout_ms;
    struct timespec dl = {.tv_sec = deadline / 1000, .tv_nsec = (deadline % 1000) * 1000000};
    if (pthread_mutex_clocklock(&call_mu, CLOCK_MONOTONIC, &dl) != 0) {
        errf(err, errlen, "NVML did not answer within %lld ms (another query was waiting)",
               (long long)timeout_ms);
        return NVML_HUNG;
    }
    pthread_mutex_lock(&mu);
    nvml_state st;
    if (!w.started && start_thread(err, errlen) < 0) {
        st = NVML_FAILED;
        goto out;
    }
    if (w.busy) {
        errf(err, errlen, "NVML has not answered for %lld ms (a call is still running)",
               (long long)(clock_mono_ms() - w.busy_since));
        st = NVML_HUNG;
        goto out;
    }
    if (strlen(libpath) >= sizeof w.lib) {
        errf(err, errlen, "NVML library path is too long");
        st = NVML_ABSENT;
        goto out;
    }
    strcpy(w.lib, libpath);
    w.busy = w.has_req = true;
    w.busy_since = start;
    pthread_cond_signal(&req_cv);
    while (w.busy) {
        if (pthread_cond_clockwait(&done_cv, &mu, CLOCK_MONOTONIC, &dl) == ETIMEDOUT) break;
    }
    if (w.busy) {
        w.abandoned = true;
        errf(err, errlen, "NVML did not answer within %lld ms", (long long)timeout_ms);
        st = NVML_HUNG;
        goto out;
    }
    nvml_out *o = w.answer;
    w.answer = NULL;
    st = o->state;
    if (st == NVML_OK) {
        memcpy(s->gpus, o->gpus, sizeof s->gpus); /* the procs arrays move to s */
        s->ngpus = o->ngpus;
        copy_str(s->driver_version, sizeof s->driver_version, o->driver_version);
        free(o);
    } else {
        errf(err, errlen, "%s", o->err);
        out_free(o);
    }
out:
    if (w.driver_seen) s->nvidia_driver = true;
    pthread_mutex_unlock(&mu);
    pthread_mutex_unlock(&call_mu);
    return st;
}
