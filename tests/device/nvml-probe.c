/* nvml-probe.c - what a real NVML answers, for the fake NVML and the
 * memory issue: which versioned symbols exist, their return codes, the
 * figures, and how long each call takes.  Own declarations, dlopen, no
 * NVIDIA headers (they are non-free).  Prints one JSON object.
 *
 *   cc -std=c17 -D_GNU_SOURCE -O2 -o nvml-probe nvml-probe.c -ldl
 *   ./nvml-probe [libnvidia-ml.so.1] */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef void *dev_t_;
typedef struct { unsigned long long total, free, used; } mem_v1;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } mem_v2;
typedef struct { unsigned int pid; unsigned long long used; unsigned int gi, ci; } proc_v2;
typedef struct { unsigned int gpu, memory; } util_t;
typedef struct { char busIdLegacy[16]; unsigned int domain, bus, device, pciDeviceId, pciSubSystemId; char busId[32]; } pci_v3;

static void *lib;
static double ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
#define SYM(name) void *name##_p = dlsym(lib, #name); printf("  \"has_%s\": %s,\n", #name, name##_p ? "true" : "false")

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "libnvidia-ml.so.1";
    double t0 = ms();
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    printf("{\n  \"dlopen\": \"%s\", \"dlopen_ms\": %.3f,\n", lib ? "ok" : dlerror(), ms() - t0);
    if (!lib) { printf("  \"end\": true\n}\n"); return 1; }
    SYM(nvmlInit_v2); SYM(nvmlShutdown); SYM(nvmlDeviceGetCount_v2); SYM(nvmlDeviceGetHandleByIndex_v2);
    SYM(nvmlDeviceGetName); SYM(nvmlDeviceGetUUID); SYM(nvmlDeviceGetPciInfo_v3);
    SYM(nvmlDeviceGetMemoryInfo_v2); SYM(nvmlDeviceGetMemoryInfo);
    SYM(nvmlDeviceGetComputeRunningProcesses_v3); SYM(nvmlDeviceGetComputeRunningProcesses_v2);
    SYM(nvmlDeviceGetUtilizationRates); SYM(nvmlDeviceGetTemperature); SYM(nvmlDeviceGetPowerUsage);
    SYM(nvmlSystemGetDriverVersion); SYM(nvmlErrorString);
    int (*init)(void) = nvmlInit_v2_p;
    t0 = ms();
    int rc = init ? init() : -1;
    printf("  \"init_rc\": %d, \"init_ms\": %.3f,\n", rc, ms() - t0);
    char drv[96] = "";
    if (nvmlSystemGetDriverVersion_p) ((int (*)(char *, unsigned))nvmlSystemGetDriverVersion_p)(drv, sizeof drv);
    printf("  \"driver\": \"%s\",\n", drv);
    unsigned n = 0;
    rc = ((int (*)(unsigned *))nvmlDeviceGetCount_v2_p)(&n);
    printf("  \"count_rc\": %d, \"count\": %u,\n  \"devices\": [\n", rc, n);
    for (unsigned i = 0; i < n; i++) {
        dev_t_ d = NULL;
        ((int (*)(unsigned, dev_t_ *))nvmlDeviceGetHandleByIndex_v2_p)(i, &d);
        char name[96] = "", uuid[96] = "";
        ((int (*)(dev_t_, char *, unsigned))nvmlDeviceGetName_p)(d, name, sizeof name);
        ((int (*)(dev_t_, char *, unsigned))nvmlDeviceGetUUID_p)(d, uuid, sizeof uuid);
        pci_v3 pci; memset(&pci, 0, sizeof pci);
        int prc = nvmlDeviceGetPciInfo_v3_p ? ((int (*)(dev_t_, pci_v3 *))nvmlDeviceGetPciInfo_v3_p)(d, &pci) : -1;
        mem_v2 m2 = {.version = (unsigned)sizeof(mem_v2) | (2u << 24)};
        t0 = ms();
        int r2 = nvmlDeviceGetMemoryInfo_v2_p ? ((int (*)(dev_t_, mem_v2 *))nvmlDeviceGetMemoryInfo_v2_p)(d, &m2) : -1;
        double m2ms = ms() - t0;
        mem_v1 m1 = {0};
        t0 = ms();
        int r1 = nvmlDeviceGetMemoryInfo_p ? ((int (*)(dev_t_, mem_v1 *))nvmlDeviceGetMemoryInfo_p)(d, &m1) : -1;
        double m1ms = ms() - t0;
        proc_v2 procs[64];
        unsigned np = 64;
        t0 = ms();
        int r3 = nvmlDeviceGetComputeRunningProcesses_v3_p
                     ? ((int (*)(dev_t_, unsigned *, proc_v2 *))nvmlDeviceGetComputeRunningProcesses_v3_p)(d, &np, procs)
                     : -1;
        double pms = ms() - t0;
        util_t u = {0};
        int ru = ((int (*)(dev_t_, util_t *))nvmlDeviceGetUtilizationRates_p)(d, &u);
        unsigned temp = 0, mw = 0;
        int rt = ((int (*)(dev_t_, int, unsigned *))nvmlDeviceGetTemperature_p)(d, 0, &temp);
        int rp = ((int (*)(dev_t_, unsigned *))nvmlDeviceGetPowerUsage_p)(d, &mw);
        printf("    {\"index\": %u, \"name\": \"%s\", \"uuid\": \"%s\", \"pci_rc\": %d, \"bus_id\": \"%s\",\n"
               "     \"mem_v2_rc\": %d, \"mem_v2_ms\": %.3f, \"total\": %llu, \"reserved\": %llu, \"free\": %llu, \"used\": %llu,\n"
               "     \"mem_v1_rc\": %d, \"mem_v1_ms\": %.3f, \"v1_total\": %llu, \"v1_free\": %llu, \"v1_used\": %llu,\n"
               "     \"procs_v3_rc\": %d, \"procs_ms\": %.3f, \"nprocs\": %u,\n"
               "     \"util_rc\": %d, \"util_gpu\": %u, \"util_mem\": %u, \"temp_rc\": %d, \"temp_c\": %u, \"power_rc\": %d, \"power_mw\": %u}%s\n",
               i, name, uuid, prc, pci.busId, r2, m2ms, m2.total, m2.reserved, m2.free, m2.used, r1, m1ms, m1.total,
               m1.free, m1.used, r3, pms, r3 == 0 ? np : 0, ru, u.gpu, u.memory, rt, temp, rp, mw, i + 1 < n ? "," : "");
    }
    printf("  ],\n  \"end\": true\n}\n");
    return 0;
}
