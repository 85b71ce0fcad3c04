/* fake_nvidia_smi.c - nvidia-smi for tests ($BUILD/fakes/nvidia-smi).
 *
 * The real tool is an NVML client, so this one is too: it dlopens the fake
 * libnvidia-ml.so.1 that sits next to it and prints what that answers.  It
 * therefore sees the same state file, the same release delay, the same
 * scripted failures, and a wedged fake NVML (call_delay_ms) wedges it as a
 * wedged driver wedges the real one.
 *
 * Understood: --query-gpu=FIELDS and --query-compute-apps=FIELDS with
 * --format=csv[,noheader][,nounits] (the fields gpumod and its research
 * use), -L, and no arguments (a short listing).  Values NVML cannot tell
 * print as [N/A] (memory on a unified device, as on GB10) and
 * [Not Supported] (gauges).  Messages and exit codes follow the real tool:
 * 9 when the driver cannot be reached, 6 when there is no device, 2 for a
 * bad field. */
#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_nvml.h"

#define MIB (1024ULL * 1024ULL)
/* to the nearest MiB, as the real tool prints (H200: 143155.94 -> 143156) */
#define TO_MIB(b) (((b) + MIB / 2) / MIB)

static struct {
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    const char *(*error_string)(nvmlReturn_t);
    nvmlReturn_t (*driver)(char *, unsigned int);
    nvmlReturn_t (*count)(unsigned int *);
    nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t *);
    nvmlReturn_t (*mem)(nvmlDevice_t, nvmlMemory_v2_t *);
    nvmlReturn_t (*procs)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
    nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t *);
    nvmlReturn_t (*temp)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *);
} nv;

static bool noheader, nounits;

static const char *const gpu_fields[] = {
    "index",       "uuid",        "name",            "pci.bus_id",         "driver_version",
    "memory.total", "memory.reserved", "memory.used", "memory.free", "utilization.gpu",
    "utilization.memory", "temperature.gpu", "power.draw", NULL};
static const char *const app_fields[] = {"gpu_uuid", "gpu_bus_id", "gpu_name", "pid",
                                         "process_name", "used_memory", NULL};

static const char *unit_of(const char *f)
{
    if (strncmp(f, "memory.", 7) == 0 || strcmp(f, "used_memory") == 0) return "MiB";
    if (strncmp(f, "utilization.", 12) == 0) return "%";
    if (strcmp(f, "power.draw") == 0) return "W";
    return NULL;
}

static int load(void)
{
    char self[PATH_MAX], path[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return -1;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) *slash = '\0';
    snprintf(path, sizeof path, "%s/libnvidia-ml.so.1", self);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return -1;
#define SYM(field, name) nv.field = (__typeof__(nv.field))dlsym(h, name)
    SYM(init, "nvmlInit_v2");
    SYM(shutdown, "nvmlShutdown");
    SYM(error_string, "nvmlErrorString");
    SYM(driver, "nvmlSystemGetDriverVersion");
    SYM(count, "nvmlDeviceGetCount_v2");
    SYM(handle, "nvmlDeviceGetHandleByIndex_v2");
    SYM(name, "nvmlDeviceGetName");
    SYM(uuid, "nvmlDeviceGetUUID");
    SYM(pci, "nvmlDeviceGetPciInfo_v3");
    SYM(mem, "nvmlDeviceGetMemoryInfo_v2");
    SYM(procs, "nvmlDeviceGetComputeRunningProcesses_v3");
    SYM(util, "nvmlDeviceGetUtilizationRates");
    SYM(temp, "nvmlDeviceGetTemperature");
    SYM(power, "nvmlDeviceGetPowerUsage");
#undef SYM
    return nv.init && nv.count && nv.handle && nv.mem && nv.procs ? 0 : -1;
}

/* Split a comma list into a NULL-terminated vector checked against known;
 * exits 2 on an unknown field, as the real tool does. */
static char **fields(char *list, const char *const *known)
{
    size_t n = 1;
    for (const char *p = list; *p; p++) n += *p == ',';
    char **v = calloc(n + 1, sizeof *v);
    size_t i = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        bool ok = false;
        for (const char *const *k = known; *k; k++) ok = ok || strcmp(*k, tok) == 0;
        if (!ok) {
            printf("Field \"%s\" is not a valid field to query.\n\n", tok);
            exit(2);
        }
        v[i++] = tok;
    }
    return v;
}

static void header(char **f)
{
    if (noheader) return;
    for (size_t i = 0; f[i]; i++) {
        const char *u = unit_of(f[i]);
        printf("%s%s", i ? ", " : "", f[i]);
        if (u) printf(" [%s]", u);
    }
    printf("\n");
}

static void print_num(const char *f, unsigned long long v)
{
    const char *u = unit_of(f);
    printf("%llu%s%s", v, u && !nounits ? " " : "", u && !nounits ? u : "");
}

static void print_gpu(unsigned int i, nvmlDevice_t d, char **f)
{
    char name[96] = "", uuid[96] = "", drv[96] = "";
    nvmlPciInfo_t pci;
    memset(&pci, 0, sizeof pci);
    nvmlMemory_v2_t m = {.version = nvmlMemory_v2};
    nvmlUtilization_t u = {0, 0};
    unsigned int temp = 0, mw = 0;
    if (nv.name) nv.name(d, name, sizeof name);
    if (nv.uuid) nv.uuid(d, uuid, sizeof uuid);
    if (nv.pci) nv.pci(d, &pci);
    if (nv.driver) nv.driver(drv, sizeof drv);
    nvmlReturn_t mrc = nv.mem(d, &m);
    nvmlReturn_t urc = nv.util ? nv.util(d, &u) : NVML_ERROR_NOT_SUPPORTED;
    nvmlReturn_t trc = nv.temp ? nv.temp(d, 0, &temp) : NVML_ERROR_NOT_SUPPORTED;
    nvmlReturn_t prc = nv.power ? nv.power(d, &mw) : NVML_ERROR_NOT_SUPPORTED;
    const char *mem_na = mrc == NVML_ERROR_NOT_SUPPORTED ? "[N/A]" : "[Unknown Error]";
    for (size_t k = 0; f[k]; k++) {
        const char *x = f[k];
        if (k) printf(", ");
        if (!strcmp(x, "index")) printf("%u", i);
        else if (!strcmp(x, "uuid")) printf("%s", uuid);
        else if (!strcmp(x, "name")) printf("%s", name);
        else if (!strcmp(x, "pci.bus_id")) printf("%s", pci.busId);
        else if (!strcmp(x, "driver_version")) printf("%s", drv);
        else if (!strncmp(x, "memory.", 7) && mrc != NVML_SUCCESS) printf("%s", mem_na);
        else if (!strcmp(x, "memory.total")) print_num(x, TO_MIB(m.total));
        else if (!strcmp(x, "memory.reserved")) print_num(x, TO_MIB(m.reserved));
        else if (!strcmp(x, "memory.used")) print_num(x, TO_MIB(m.used));
        else if (!strcmp(x, "memory.free")) print_num(x, TO_MIB(m.free));
        else if (!strncmp(x, "utilization.", 12) && urc != NVML_SUCCESS) printf("[Not Supported]");
        else if (!strcmp(x, "utilization.gpu")) print_num(x, u.gpu);
        else if (!strcmp(x, "utilization.memory")) print_num(x, u.memory);
        else if (!strcmp(x, "temperature.gpu")) {
            if (trc == NVML_SUCCESS) printf("%u", temp);
            else printf("[Not Supported]");
        } else if (!strcmp(x, "power.draw")) {
            if (prc == NVML_SUCCESS) printf("%.2f%s", mw / 1000.0, nounits ? "" : " W");
            else printf("[Not Supported]");
        }
    }
    printf("\n");
}

static void print_apps(nvmlDevice_t d, char **f)
{
    char name[96] = "", uuid[96] = "";
    nvmlPciInfo_t pci;
    memset(&pci, 0, sizeof pci);
    if (nv.name) nv.name(d, name, sizeof name);
    if (nv.uuid) nv.uuid(d, uuid, sizeof uuid);
    if (nv.pci) nv.pci(d, &pci);
    unsigned int n = 0;
    nvmlProcessInfo_t one, *p = NULL;
    nvmlReturn_t rc = nv.procs(d, &n, &one);
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
        p = calloc(n + 8, sizeof *p);
        n += 8;
        rc = nv.procs(d, &n, p);
    }
    if (rc != NVML_SUCCESS) n = 0;
    for (unsigned int j = 0; j < n; j++) {
        for (size_t k = 0; f[k]; k++) {
            const char *x = f[k];
            if (k) printf(", ");
            if (!strcmp(x, "gpu_uuid")) printf("%s", uuid);
            else if (!strcmp(x, "gpu_bus_id")) printf("%s", pci.busId);
            else if (!strcmp(x, "gpu_name")) printf("%s", name);
            else if (!strcmp(x, "pid")) printf("%u", p[j].pid);
            else if (!strcmp(x, "process_name")) {
                char path[64], comm[64] = "[Not Found]";
                snprintf(path, sizeof path, "/proc/%u/comm", p[j].pid);
                FILE *c = fopen(path, "r");
                if (c) {
                    if (fgets(comm, sizeof comm, c)) comm[strcspn(comm, "\n")] = '\0';
                    fclose(c);
                }
                printf("%s", comm);
            } else if (!strcmp(x, "used_memory")) {
                if (p[j].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE) printf("[N/A]");
                else print_num(x, TO_MIB(p[j].usedGpuMemory));
            }
        }
        printf("\n");
    }
    free(p);
}

int main(int argc, char **argv)
{
    char *gpu_q = NULL, *app_q = NULL;
    bool list = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "--query-gpu=", 12)) gpu_q = argv[i] + 12;
        else if (!strncmp(a, "--query-compute-apps=", 21)) app_q = argv[i] + 21;
        else if (!strncmp(a, "--format=", 9)) {
            noheader = strstr(a, "noheader") != NULL;
            nounits = strstr(a, "nounits") != NULL;
            if (strncmp(a + 9, "csv", 3) != 0) {
                printf("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n");
                return 2;
            }
        } else if (!strcmp(a, "-L") || !strcmp(a, "--list-gpus")) list = true;
        else {
            printf("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n");
            return 2;
        }
    }
    char **f = gpu_q ? fields(gpu_q, gpu_fields) : app_q ? fields(app_q, app_fields) : NULL;
    if (load() < 0) {
        printf("NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure "
               "that the NVIDIA Display Driver is properly installed and present in your system.\n");
        free(f);
        return 12;
    }
    if (nv.init() != NVML_SUCCESS) {
        printf("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make "
               "sure that the latest NVIDIA driver is installed and running.\n\n");
        free(f);
        return 9;
    }
    unsigned int n = 0;
    if (nv.count(&n) != NVML_SUCCESS || n == 0) {
        printf("No devices were found\n");
        free(f);
        return 6;
    }
    if (f) header(f);
    int rc = 0;
    for (unsigned int i = 0; i < n; i++) {
        nvmlDevice_t d;
        nvmlReturn_t hr = nv.handle(i, &d);
        if (hr != NVML_SUCCESS) {
            printf("Unable to determine the device handle for GPU%u: %s\n", i,
                   nv.error_string ? nv.error_string(hr) : "Unknown Error");
            rc = 15;
            continue;
        }
        if (gpu_q) {
            print_gpu(i, d, f);
        } else if (app_q) {
            print_apps(d, f);
        } else {
            char name[96] = "", uuid[96] = "";
            if (nv.name) nv.name(d, name, sizeof name);
            if (nv.uuid) nv.uuid(d, uuid, sizeof uuid);
            printf("GPU %u: %s (UUID: %s)\n", i, name, uuid);
            (void)list;
        }
    }
    if (nv.shutdown) nv.shutdown();
    free(f);
    return rc;
}
