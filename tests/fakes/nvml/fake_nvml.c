/* fake_nvml.c - a libnvidia-ml.so.1 for tests, driven by a JSON file.
 *
 * The state ($GPUMOD_FAKE_NVML_STATE, docs/interfaces.md "Fake NVML
 * state") is re-read on every call, because the processes that change it
 * (fakellm, the tests) are others and a gpumod daemon keeps NVML
 * initialised for its whole life.  Each call may first sleep
 * call_delay_ms[<its symbol name>] (how a test wedges NVML) and may then
 * return return[<its symbol name>] instead of working (how a test gets
 * DRIVER_NOT_LOADED or GPU_IS_LOST).  No state file means no driver:
 * init answers DRIVER_NOT_LOADED.
 *
 * Memory: used = base_used_mb + the used_mb of the listed processes on the
 * device that still hold memory; free = total - reserved - used.  A
 * process holds memory while its pid is alive, and for release_delay_ms
 * after the first query that found it gone (as a driver tears a dead
 * process's memory down).  Since every query may come from a new process
 * (nvidia-smi, a CLI), that first-noticed time is kept in the state file
 * itself, under "gone_ms" {pid: CLOCK_MONOTONIC ms}, written with the
 * protocol fakellm's writer uses: flock the file, check the locked fd is
 * still the file at the path (a rename makes a new inode), read, write a
 * temporary file, rename it over.  Readers take no lock.
 *
 * Built twice: the current library (versioned and unversioned symbols, as
 * a 580 driver exports) and, with -DFAKE_NVML_OLD, one that has only the
 * unversioned names, to exercise gpumod's fallbacks.  Never built with
 * sanitizers: it is loaded into sanitized and unsanitized programs alike.
 * Single-threaded use is assumed (gpumod calls NVML from one thread). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fake_nvml.h"

#define EXPORT __attribute__((visibility("default")))
#define MIB (1024ULL * 1024ULL)
#define LOCK_DEADLINE_MS 5000
#define MAX_DEVICES 64

struct nvmlDevice_st {
    int index;
};
static struct nvmlDevice_st handles[MAX_DEVICES];
static int inits; /* nvmlInit's reference count */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

static double num(const cJSON *o, const char *key, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

static const char *state_path(void)
{
    const char *p = getenv("GPUMOD_FAKE_NVML_STATE");
    return p && *p ? p : NULL;
}

static cJSON *parse_fd(int fd)
{
    size_t len = 0, cap = 8192;
    char *b = malloc(cap);
    ssize_t n;
    while (b && (n = read(fd, b + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (cap - len < 1024) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) break;
            b = nb;
        }
    }
    if (!b) return NULL;
    b[len] = '\0';
    cJSON *j = cJSON_Parse(b);
    free(b);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

/* The state, or NULL with *rc: DRIVER_NOT_LOADED when there is none,
 * UNKNOWN when it is not a JSON object. */
static cJSON *read_state(nvmlReturn_t *rc)
{
    const char *path = state_path();
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0) {
        *rc = NVML_ERROR_DRIVER_NOT_LOADED;
        return NULL;
    }
    cJSON *j = parse_fd(fd);
    close(fd);
    if (!j) *rc = NVML_ERROR_UNKNOWN;
    return j;
}

/* Every entry point starts here: the init check, the scripted delay and
 * the scripted return.  Returns the state (caller deletes) or NULL with
 * *rc. */
static cJSON *enter(const char *sym, bool need_init, nvmlReturn_t *rc)
{
    if (need_init && inits <= 0) {
        *rc = NVML_ERROR_UNINITIALIZED;
        return NULL;
    }
    cJSON *st = read_state(rc);
    if (!st) return NULL;
    double delay = num(cJSON_GetObjectItemCaseSensitive(st, "call_delay_ms"), sym, 0);
    if (delay > 0) {
        cJSON_Delete(st); /* nothing held while "wedged" */
        sleep_ms((int64_t)delay);
        if (!(st = read_state(rc))) return NULL;
    }
    double forced = num(cJSON_GetObjectItemCaseSensitive(st, "return"), sym, 0);
    if (forced != 0) {
        cJSON_Delete(st);
        *rc = (nvmlReturn_t)forced;
        return NULL;
    }
    return st;
}

static cJSON *find_device(cJSON *st, int index)
{
    cJSON *d;
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(st, "devices"))
    {
        if (cJSON_IsObject(d) && (int)num(d, "index", -1) == index) return d;
    }
    return NULL;
}

/* The device behind a handle, or NULL with *rc. */
static cJSON *device(cJSON *st, nvmlDevice_t h, nvmlReturn_t *rc)
{
    if (!h || h < handles || h >= handles + MAX_DEVICES) {
        *rc = NVML_ERROR_INVALID_ARGUMENT;
        return NULL;
    }
    cJSON *d = find_device(st, h->index);
    if (!d) *rc = NVML_ERROR_GPU_IS_LOST; /* the state lost it after the handle was given */
    return d;
}

/* ---- dead processes and the release delay ------------------------------ */

static bool pid_alive(long pid)
{
    if (pid <= 0) return false;
    char path[64], b[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, b, sizeof b - 1);
    close(fd);
    if (n <= 0) return false;
    b[n] = '\0';
    const char *p = strrchr(b, ')'); /* comm may hold spaces and parens */
    if (!p || !p[1] || !p[2]) return false;
    return p[2] != 'Z' && p[2] != 'X'; /* a zombie has let go of its memory */
}

static long proc_pid(const cJSON *p)
{
    return (long)num(p, "pid", 0);
}

static bool listed(const cJSON *st, long pid)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(st, "processes"))
    {
        if (proc_pid(p) == pid) return true;
    }
    return false;
}

/* Bring gone_ms up to date: a listed pid found dead gets now, an entry for
 * a pid alive again (reused) or no longer listed goes.  Returns whether
 * anything changed. */
static bool update_gone(cJSON *st, int64_t now)
{
    bool changed = false;
    cJSON *gone = cJSON_GetObjectItemCaseSensitive(st, "gone_ms");
    if (!cJSON_IsObject(gone)) {
        cJSON_DeleteItemFromObjectCaseSensitive(st, "gone_ms");
        gone = cJSON_AddObjectToObject(st, "gone_ms");
    }
    for (cJSON *g = gone->child, *next; g; g = next) {
        next = g->next;
        long pid = strtol(g->string, NULL, 10);
        if (!listed(st, pid) || pid_alive(pid)) {
            cJSON_Delete(cJSON_DetachItemViaPointer(gone, g));
            changed = true;
        }
    }
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(st, "processes"))
    {
        char key[32];
        snprintf(key, sizeof key, "%ld", proc_pid(p));
        if (!cJSON_GetObjectItemCaseSensitive(gone, key) && !pid_alive(proc_pid(p))) {
            cJSON_AddNumberToObject(gone, key, (double)now);
            changed = true;
        }
    }
    return changed;
}

/* fakellm's lock protocol (tests/fakes/fakellm/nvml.c) */
static int lock_state(const char *path)
{
    int64_t deadline = mono_ms() + LOCK_DEADLINE_MS;
    for (;;) {
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0) return -1;
        while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
            if (mono_ms() > deadline) {
                close(fd);
                return -1;
            }
            sleep_ms(5);
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino &&
            a.st_dev == b.st_dev)
            return fd;
        close(fd); /* replaced while we waited: lock the new one */
    }
}

static int write_state(const char *path, const cJSON *st)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d.%d", path, (int)getpid(), (int)gettid());
    char *text = cJSON_Print(st);
    if (!text) return -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    size_t len = strlen(text), off = 0;
    while (fd >= 0 && off < len) {
        ssize_t n = write(fd, text + off, len - off);
        if (n <= 0) break;
        off += (size_t)n;
    }
    free(text);
    if (fd < 0 || off < len || close(fd) < 0 || rename(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Record first-noticed times when the lock-free read shows they changed;
 * returns the state to use (the re-read one when it was rewritten). */
static cJSON *account(cJSON *st, int64_t now)
{
    if (num(st, "release_delay_ms", 0) <= 0) return st; /* nothing to remember */
    cJSON *probe = cJSON_Duplicate(st, 1);
    bool changed = probe && update_gone(probe, now);
    cJSON_Delete(probe);
    if (!changed) return st;
    const char *path = state_path();
    int fd = path ? lock_state(path) : -1;
    if (fd < 0) return st; /* unrecorded: counts as noticed just now */
    cJSON *fresh = parse_fd(fd);
    if (fresh) {
        if (update_gone(fresh, now)) write_state(path, fresh);
        cJSON_Delete(st);
        st = fresh;
    }
    close(fd); /* drops the lock */
    return st;
}

static bool holds_memory(const cJSON *st, const cJSON *p, int64_t now)
{
    long pid = proc_pid(p);
    if (pid_alive(pid)) return true;
    double delay = num(st, "release_delay_ms", 0);
    if (delay <= 0) return false;
    char key[32];
    snprintf(key, sizeof key, "%ld", pid);
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(st, "gone_ms"), key);
    return !cJSON_IsNumber(g) || (double)now - g->valuedouble < delay;
}

/* The processes holding memory on device `index`: calls fn for each
 * (when given) and returns their count; *sum_mb adds up their used_mb. */
static unsigned int holders(const cJSON *st, int index, int64_t now, double *sum_mb,
                            void (*fn)(const cJSON *p, unsigned int i, void *arg), void *arg)
{
    unsigned int n = 0;
    const cJSON *p;
    if (sum_mb) *sum_mb = 0;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(st, "processes"))
    {
        if ((int)num(p, "device", -1) != index || !holds_memory(st, p, now)) continue;
        if (sum_mb) *sum_mb += num(p, "used_mb", 0);
        if (fn) fn(p, n, arg);
        n++;
    }
    return n;
}

/* ---- the exported calls ------------------------------------------------- */

static nvmlReturn_t do_init(const char *sym)
{
    nvmlReturn_t rc;
    cJSON *st = enter(sym, false, &rc);
    if (!st) return rc;
    cJSON_Delete(st);
    inits++;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit(void)
{
    return do_init("nvmlInit");
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    if (inits <= 0) return NVML_ERROR_UNINITIALIZED;
    inits--;
    return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t rc)
{
    switch (rc) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    default: return "Unknown Error";
    }
}

static nvmlReturn_t copy_out(const char *s, char *dst, unsigned int len)
{
    if (!dst) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(s) >= len) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(dst, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    nvmlReturn_t rc;
    cJSON *st = enter("nvmlSystemGetDriverVersion", true, &rc);
    if (!st) return rc;
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "driver_version"));
    rc = copy_out(v ? v : "580.00.00", version, length);
    cJSON_Delete(st);
    return rc;
}

static nvmlReturn_t do_count(const char *sym, unsigned int *count)
{
    nvmlReturn_t rc;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    cJSON *st = enter(sym, true, &rc);
    if (!st) return rc;
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(st, "devices");
    *count = cJSON_IsArray(devs) ? (unsigned int)cJSON_GetArraySize(devs) : 0;
    cJSON_Delete(st);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *count)
{
    return do_count("nvmlDeviceGetCount", count);
}

static nvmlReturn_t do_handle(const char *sym, unsigned int index, nvmlDevice_t *dev)
{
    nvmlReturn_t rc;
    if (!dev) return NVML_ERROR_INVALID_ARGUMENT;
    cJSON *st = enter(sym, true, &rc);
    if (!st) return rc;
    rc = NVML_ERROR_INVALID_ARGUMENT;
    if (index < MAX_DEVICES && find_device(st, (int)index)) {
        handles[index].index = (int)index;
        *dev = &handles[index];
        rc = NVML_SUCCESS;
    }
    cJSON_Delete(st);
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *dev)
{
    return do_handle("nvmlDeviceGetHandleByIndex", index, dev);
}

static nvmlReturn_t string_field(const char *sym, nvmlDevice_t h, const char *key, char *dst,
                                 unsigned int len)
{
    nvmlReturn_t rc;
    cJSON *st = enter(sym, true, &rc);
    if (!st) return rc;
    cJSON *d = device(st, h, &rc);
    if (d) {
        const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, key));
        rc = copy_out(v ? v : "", dst, len);
    }
    cJSON_Delete(st);
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int length)
{
    return string_field("nvmlDeviceGetName", dev, "name", name, length);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned int length)
{
    return string_field("nvmlDeviceGetUUID", dev, "uuid", uuid, length);
}

static nvmlReturn_t do_pci(const char *sym, nvmlDevice_t h, nvmlPciInfo_t *pci)
{
    nvmlReturn_t rc;
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    cJSON *st = enter(sym, true, &rc);
    if (!st) return rc;
    cJSON *d = device(st, h, &rc);
    if (d) {
        memset(pci, 0, sizeof *pci);
        int index = (int)num(d, "index", 0);
        pci->bus = (unsigned int)index + 1;
        const char *b = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "bus_id"));
        if (b)
            snprintf(pci->busId, sizeof pci->busId, "%s", b);
        else
            snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", (index + 1) & 0xff);
        snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", pci->busId + 4);
        rc = NVML_SUCCESS;
    }
    cJSON_Delete(st);
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
    return do_pci("nvmlDeviceGetPciInfo_v2", dev, pci);
}

/* Memory of one device in bytes: 0, NOT_SUPPORTED (unified), or an error. */
static nvmlReturn_t memory(const char *sym, nvmlDevice_t h, unsigned long long *total,
                           unsigned long long *reserved, unsigned long long *used,
                           unsigned long long *free_b)
{
    nvmlReturn_t rc;
    cJSON *st = enter(sym, true, &rc);
    if (!st) return rc;
    cJSON *d = device(st, h, &rc);
    if (!d) {
        cJSON_Delete(st);
        return rc;
    }
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "memory"));
    if (kind && strcmp(kind, "not_supported") == 0) {
        cJSON_Delete(st);
        *total = *reserved = *used = *free_b = 0; /* as GB10 leaves them */
        return NVML_ERROR_NOT_SUPPORTED;
    }
    int index = (int)num(d, "index", 0);
    double t = num(d, "total_mb", 0), r = num(d, "reserved_mb", 0), b = num(d, "base_used_mb", 0);
    int64_t now = mono_ms();
    st = account(st, now);
    double procs_mb;
    holders(st, index, now, &procs_mb, NULL, NULL);
    double u = b + procs_mb, f = t - r - u;
    *total = (unsigned long long)(t * MIB);
    *reserved = (unsigned long long)(r * MIB);
    *used = (unsigned long long)(u * MIB);
    *free_b = f > 0 ? (unsigned long long)(f * MIB) : 0;
    cJSON_Delete(st);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *mem)
{
    if (!mem) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned long long t = 0, r = 0, u = 0, f = 0;
    nvmlReturn_t rc = memory("nvmlDeviceGetMemoryInfo", dev, &t, &r, &u, &f);
    if (rc == NVML_SUCCESS || rc == NVML_ERROR_NOT_SUPPORTED) {
        mem->total = t;
        mem->used = r + u; /* v1 folds the reservation into used (H200 probe) */
        mem->free = f;
    }
    return rc;
}

struct fill_arg {
    void *infos;
    int version; /* 1: nvmlProcessInfo_v1_t, else nvmlProcessInfo_t */
};

static void fill_proc(const cJSON *p, unsigned int i, void *arg)
{
    struct fill_arg *a = arg;
    const cJSON *mb = cJSON_GetObjectItemCaseSensitive(p, "used_mb");
    unsigned long long used = cJSON_IsNumber(mb) ? (unsigned long long)(mb->valuedouble * MIB)
                                                 : NVML_VALUE_NOT_AVAILABLE;
    if (a->version == 1) {
        nvmlProcessInfo_v1_t *e = (nvmlProcessInfo_v1_t *)a->infos + i;
        e->pid = (unsigned int)proc_pid(p);
        e->usedGpuMemory = used;
    } else {
        nvmlProcessInfo_t *e = (nvmlProcessInfo_t *)a->infos + i;
        e->pid = (unsigned int)proc_pid(p);
        e->usedGpuMemory = used;
        e->gpuInstanceId = e->computeInstanceId = 0xFFFFFFFFu; /* MIG off */
    }
}

static nvmlReturn_t processes(const char *sym, nvmlDevice_t h, unsigned int *count, void *infos,
                              int version)
{
    nvmlReturn_t rc;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    cJSON *st = enter(sym, true, &rc);
    if (!st) return rc;
    cJSON *d = device(st, h, &rc);
    if (!d) {
        cJSON_Delete(st);
        return rc;
    }
    int index = (int)num(d, "index", 0);
    int64_t now = mono_ms();
    st = account(st, now);
    unsigned int n = holders(st, index, now, NULL, NULL, NULL);
    if (*count < n) {
        *count = n;
        rc = NVML_ERROR_INSUFFICIENT_SIZE;
    } else if (n && !infos) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else {
        struct fill_arg a = {infos, version};
        holders(st, index, now, NULL, fill_proc, &a);
        *count = n;
        rc = NVML_SUCCESS;
    }
    cJSON_Delete(st);
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t dev, unsigned int *count,
                                                         nvmlProcessInfo_v1_t *infos)
{
    return processes("nvmlDeviceGetComputeRunningProcesses", dev, count, infos, 1);
}

/* A gauge: the device's key, its default, or NOT_SUPPORTED when null. */
static nvmlReturn_t gauge(const char *sym, nvmlDevice_t h, const char *key, double def,
                          unsigned int *out)
{
    nvmlReturn_t rc;
    cJSON *st = enter(sym, true, &rc);
    if (!st) return rc;
    cJSON *d = device(st, h, &rc);
    if (d) {
        cJSON *v = cJSON_GetObjectItemCaseSensitive(d, key);
        if (cJSON_IsNull(v)) {
            rc = NVML_ERROR_NOT_SUPPORTED;
        } else {
            *out = (unsigned int)(cJSON_IsNumber(v) ? v->valuedouble : def);
            rc = NVML_SUCCESS;
        }
    }
    cJSON_Delete(st);
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *util)
{
    if (!util) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int g, m;
    nvmlReturn_t rc = gauge("nvmlDeviceGetUtilizationRates", dev, "util_gpu", 0, &g);
    if (rc == NVML_SUCCESS) rc = gauge("nvmlDeviceGetUtilizationRates", dev, "util_mem", 0, &m);
    if (rc == NVML_SUCCESS) *util = (nvmlUtilization_t){g, m};
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned int *temp)
{
    if (!temp || sensor != 0) return NVML_ERROR_INVALID_ARGUMENT;
    return gauge("nvmlDeviceGetTemperature", dev, "temp_c", 35, temp);
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned int *mw)
{
    if (!mw) return NVML_ERROR_INVALID_ARGUMENT;
    return gauge("nvmlDeviceGetPowerUsage", dev, "power_mw", 60000, mw);
}

#ifndef FAKE_NVML_OLD
EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    return do_init("nvmlInit_v2");
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    return do_count("nvmlDeviceGetCount_v2", count);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *dev)
{
    return do_handle("nvmlDeviceGetHandleByIndex_v2", index, dev);
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
    return do_pci("nvmlDeviceGetPciInfo_v3", dev, pci);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *mem)
{
    if (!mem) return NVML_ERROR_INVALID_ARGUMENT;
    if (mem->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    unsigned long long t = 0, r = 0, u = 0, f = 0;
    nvmlReturn_t rc = memory("nvmlDeviceGetMemoryInfo_v2", dev, &t, &r, &u, &f);
    if (rc == NVML_SUCCESS || rc == NVML_ERROR_NOT_SUPPORTED) {
        mem->total = t;
        mem->reserved = r;
        mem->used = u;
        mem->free = f;
    }
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t dev, unsigned int *count,
                                                            nvmlProcessInfo_t *infos)
{
    return processes("nvmlDeviceGetComputeRunningProcesses_v2", dev, count, infos, 2);
}

/* "compute_capability": "12.0" on the device; absent or null: NOT_SUPPORTED
 * (the daemon shows it unknown).  Only in the current build, so the old
 * library exercises gpumod's handling of a library without the symbol. */
EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t dev, int *major, int *minor)
{
    nvmlReturn_t rc;
    if (!major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
    cJSON *st = enter("nvmlDeviceGetCudaComputeCapability", true, &rc);
    if (!st) return rc;
    cJSON *d = device(st, dev, &rc);
    if (d) {
        const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "compute_capability"));
        int ma, mi;
        char extra;
        if (!v)
            rc = NVML_ERROR_NOT_SUPPORTED;
        else if (sscanf(v, "%d.%d%c", &ma, &mi, &extra) != 2)
            rc = NVML_ERROR_UNKNOWN; /* a state file mistake shows as a failing call */
        else {
            *major = ma;
            *minor = mi;
            rc = NVML_SUCCESS;
        }
    }
    cJSON_Delete(st);
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count,
                                                            nvmlProcessInfo_t *infos)
{
    return processes("nvmlDeviceGetComputeRunningProcesses_v3", dev, count, infos, 3);
}
#endif
