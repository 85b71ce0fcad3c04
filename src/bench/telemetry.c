/* telemetry.c - memory sampled beside every measured figure, and the
 * host's identity.
 *
 * A thread of its own takes the host snapshot (NVML per device, else
 * nothing: nvidia-smi is a process per sample, too heavy to run every
 * interval, so it is used only when the first sample found the GPUs that
 * way) every interval and keeps running sums; the load loop never waits
 * on NVML.  GPUMOD_PROC_ROOT / GPUMOD_NVML_LIB are honoured by the
 * snapshot itself. */
#include "bench/cli.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "host/host.h"
#include "util/buf.h"

#define NVML_DEADLINE_MS 1000

typedef struct tdev {
    int index;
    char name[96];
    uint64_t peak, n;
    double sum;
} tdev;

struct btele {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, started;
    int interval_ms;
    long samples;
    tdev dev[HOST_MAX_GPUS];
    size_t ndev;
    bool skip_gpus;
    uint64_t host_peak, host_min_avail;
    double host_sum;
    long host_n;
};

static void sample(btele *t)
{
    snapshot s;
    snapshot_opts o = {0};
    o.nvml_timeout_ms = NVML_DEADLINE_MS;
    o.skip_gpus = t->skip_gpus;
    snapshot_take(&s, &o);
    if (t->samples == 0 && s.source != GPU_SRC_NVML && s.source != GPU_SRC_SMI) t->skip_gpus = true;
    if (t->samples == 0 && s.source == GPU_SRC_SMI) t->skip_gpus = false;
    for (size_t i = 0; i < s.ngpus && i < HOST_MAX_GPUS; i++) {
        const gpu_dev *g = &s.gpus[i];
        tdev *d = NULL;
        for (size_t k = 0; k < t->ndev; k++)
            if (t->dev[k].index == g->index) d = &t->dev[k];
        if (!d && t->ndev < HOST_MAX_GPUS) {
            d = &t->dev[t->ndev++];
            memset(d, 0, sizeof *d);
            d->index = g->index;
            snprintf(d->name, sizeof d->name, "%s", g->name);
        }
        if (!d) continue;
        if (g->used_bytes > d->peak) d->peak = g->used_bytes;
        d->sum += (double)g->used_bytes;
        d->n++;
    }
    if (s.host.meminfo_ok) {
        uint64_t used = s.host.mem_total > s.host.mem_available ? s.host.mem_total - s.host.mem_available : 0;
        if (used > t->host_peak) t->host_peak = used;
        if (!t->host_n || s.host.mem_available < t->host_min_avail) t->host_min_avail = s.host.mem_available;
        t->host_sum += (double)used;
        t->host_n++;
    }
    t->samples++;
    snapshot_release(&s);
}

static void *run(void *arg)
{
    btele *t = arg;
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        pthread_mutex_unlock(&t->mu);
        sample(t);
        pthread_mutex_lock(&t->mu);
        if (t->stop) break;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += t->interval_ms / 1000;
        ts.tv_nsec += (long)(t->interval_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        while (!t->stop && pthread_cond_timedwait(&t->cv, &t->mu, &ts) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

btele *btele_start(int interval_ms)
{
    btele *t = xcalloc(1, sizeof *t);
    t->interval_ms = interval_ms > 0 ? interval_ms : 200;
    pthread_mutex_init(&t->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    t->started = pthread_create(&t->th, NULL, run, t) == 0;
    if (!t->started) sample(t); /* at least one figure */
    return t;
}

static void num_or_null(cJSON *o, const char *k, bool ok, double v)
{
    if (ok)
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

cJSON *btele_stop(btele *t)
{
    if (!t) return NULL;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    if (t->started) pthread_join(t->th, NULL);
    if (t->samples == 0) sample(t);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "samples", (double)t->samples);
    cJSON_AddNumberToObject(j, "interval_ms", t->interval_ms);
    cJSON *devs = cJSON_AddArrayToObject(j, "devices");
    for (size_t i = 0; i < t->ndev; i++) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddNumberToObject(d, "index", t->dev[i].index);
        cJSON_AddStringToObject(d, "name", t->dev[i].name);
        cJSON_AddNumberToObject(d, "peak_used_bytes", (double)t->dev[i].peak);
        num_or_null(d, "mean_used_bytes", t->dev[i].n > 0, t->dev[i].n ? t->dev[i].sum / (double)t->dev[i].n : 0);
        cJSON_AddItemToArray(devs, d);
    }
    cJSON *h = cJSON_AddObjectToObject(j, "host");
    num_or_null(h, "peak_used_bytes", t->host_n > 0, (double)t->host_peak);
    num_or_null(h, "mean_used_bytes", t->host_n > 0, t->host_n ? t->host_sum / (double)t->host_n : 0);
    num_or_null(h, "min_available_bytes", t->host_n > 0, (double)t->host_min_avail);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t);
    return j;
}

/* "model name : X" of /proc/cpuinfo (arm64: "CPU part" has no name; then
 * "Hardware" or "Model"), or NULL. */
static char *cpu_model(const char *root)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/cpuinfo", root);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char line[512], *found = NULL;
    int ncpu = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "processor", 9)) ncpu++;
        if (found) continue;
        if (!strncmp(line, "model name", 10) || !strncmp(line, "Hardware", 8) || !strncmp(line, "Model\t", 6)) {
            char *c = strchr(line, ':');
            if (!c) continue;
            c++;
            while (*c == ' ' || *c == '\t') c++;
            c[strcspn(c, "\n")] = 0;
            if (*c) found = xstrdup(c);
        }
    }
    fclose(f);
    if (found && ncpu > 0) {
        char *s = xasprintf("%s (%d CPUs)", found, ncpu);
        free(found);
        found = s;
    }
    return found;
}

cJSON *btele_host_identity(void)
{
    cJSON *j = cJSON_CreateObject();
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
    cJSON_AddStringToObject(j, "hostname", host);
    struct utsname u;
    if (uname(&u) == 0) {
        char *k = xasprintf("%s %s %s", u.sysname, u.release, u.machine);
        cJSON_AddStringToObject(j, "kernel", k);
        free(k);
    } else {
        cJSON_AddNullToObject(j, "kernel");
    }
    const char *root = getenv("GPUMOD_PROC_ROOT");
    char *cpu = cpu_model(root && *root ? root : "/proc");
    if (cpu)
        cJSON_AddStringToObject(j, "cpu", cpu);
    else
        cJSON_AddNullToObject(j, "cpu");
    free(cpu);
    snapshot s;
    snapshot_opts o = {0};
    o.nvml_timeout_ms = NVML_DEADLINE_MS * 2;
    snapshot_take(&s, &o);
    cJSON *gpus = cJSON_AddArrayToObject(j, "gpus");
    for (size_t i = 0; i < s.ngpus && i < HOST_MAX_GPUS; i++) {
        cJSON *g = cJSON_CreateObject();
        cJSON_AddNumberToObject(g, "index", s.gpus[i].index);
        cJSON_AddStringToObject(g, "name", s.gpus[i].name);
        cJSON_AddStringToObject(g, "uuid", s.gpus[i].uuid);
        cJSON_AddNumberToObject(g, "total_bytes", (double)s.gpus[i].total_bytes);
        cJSON_AddItemToArray(gpus, g);
    }
    if (s.driver_version[0])
        cJSON_AddStringToObject(j, "driver", s.driver_version);
    else
        cJSON_AddNullToObject(j, "driver");
    cJSON_AddStringToObject(j, "nvml", nvml_state_names[s.nvml]);
    snapshot_release(&s);
    return j;
}
