/* nvml.c - fakellm's entries in the fake NVML state file: the GPU memory
 * a process "uses", per device, as nvmlDeviceGetComputeRunningProcesses
 * would report it.
 *
 * The file ($GPUMOD_FAKE_NVML_STATE, INTERFACES.md "Fake NVML state") is
 * shared with the tests and the fake library, so writers take an
 * exclusive flock on it and replace it by rename; since the rename makes
 * a new inode, a writer that wins the lock re-checks that its fd is still
 * the file at the path and starts over if not.  Readers need no lock.
 * Entries are removed only on sleep: a dead pid's memory is the fake
 * library's business (it applies release_delay_ms from when it sees the
 * pid gone), exactly as a real driver frees a killed process's memory.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fakellm.h"

#define LOCK_DEADLINE_MS 5000

static int lock_state(const char *path, char *err, size_t errlen)
{
    double deadline = fk_mono_ms() + LOCK_DEADLINE_MS;
    for (;;) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            snprintf(err, errlen, "open '%s': %s", path, strerror(errno));
            return -1;
        }
        while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
            if (fk_mono_ms() > deadline) {
                snprintf(err, errlen, "'%s' stayed locked for %d ms", path, LOCK_DEADLINE_MS);
                close(fd);
                return -1;
            }
            nanosleep(&(struct timespec){0, 5000000}, NULL);
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
            return fd;
        close(fd); /* replaced while we waited: lock the new one */
    }
}

static cJSON *read_state(int fd, char *err, size_t errlen)
{
    buf b = BUF_INIT;
    char chunk[8192];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof chunk)) > 0)
        buf_add(&b, chunk, (size_t)n);
    cJSON *j = b.len ? cJSON_Parse(b.p) : cJSON_CreateObject();
    buf_release(&b);
    if (!cJSON_IsObject(j)) {
        snprintf(err, errlen, "the fake NVML state is not a JSON object");
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

/* CUDA_VISIBLE_DEVICES entries as device indices: numbers, or UUIDs
 * looked up in the state's devices[].  Returns the count, -1 on error. */
static int visible_devices(cJSON *state, int *out, int max, char *err, size_t errlen)
{
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (!cvd)
        cvd = "0";
    int n = 0;
    while (*cvd && n < max) {
        size_t len = strcspn(cvd, ",");
        char *e = xstrndup(cvd, len);
        char *end;
        long idx = strtol(e, &end, 10);
        if (end == e || *end) {
            cJSON *d;
            idx = -1;
            cJSON_ArrayForEach(d, cJSON_GetObjectItem(state, "devices")) {
                const char *u = cJSON_GetStringValue(cJSON_GetObjectItem(d, "uuid"));
                if (u && strcmp(u, e) == 0)
                    idx = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(d, "index"));
            }
        }
        if (idx < 0) {
            snprintf(err, errlen, "CUDA_VISIBLE_DEVICES entry '%s' is no device", e);
            free(e);
            return -1;
        }
        free(e);
        out[n++] = (int)idx;
        cvd += len;
        if (*cvd == ',')
            cvd++;
    }
    return n;
}

static int update(pid_t pid, const char *spec, char *err, size_t errlen)
{
    const char *path = getenv("GPUMOD_FAKE_NVML_STATE");
    if (!path || !*path)
        return 0;
    int fd = lock_state(path, err, errlen);
    if (fd < 0)
        return -1;
    int rc = -1;
    char *tmp = NULL;
    cJSON *st = read_state(fd, err, errlen);
    if (!st)
        goto out;
    cJSON *procs = cJSON_GetObjectItem(st, "processes");
    if (!cJSON_IsArray(procs)) {
        cJSON_DeleteItemFromObject(st, "processes");
        procs = cJSON_AddArrayToObject(st, "processes");
    }
    for (int i = cJSON_GetArraySize(procs) - 1; i >= 0; i--)
        if ((pid_t)cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(procs, i), "pid")) == pid)
            cJSON_DeleteItemFromArray(procs, i);
    if (spec) {
        int dev[64];
        int nd = visible_devices(st, dev, 64, err, errlen);
        if (nd < 0)
            goto out;
        long mb[64];
        int nm = 0;
        for (const char *p = spec; *p && nm < 64;) {
            char *end;
            mb[nm++] = strtol(p, &end, 10);
            if (end == p || (*end && *end != ',')) {
                snprintf(err, errlen, "FAKELLM_GPU_MB='%s' is not N or N,M,...", spec);
                goto out;
            }
            p = *end ? end + 1 : end;
        }
        if (nm != 1 && nm != nd) {
            snprintf(err, errlen, "FAKELLM_GPU_MB has %d values for %d devices", nm, nd);
            goto out;
        }
        for (int i = 0; i < nd; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "pid", pid);
            cJSON_AddNumberToObject(e, "device", dev[i]);
            cJSON_AddNumberToObject(e, "used_mb", (double)mb[nm == 1 ? 0 : i]);
            cJSON_AddItemToArray(procs, e);
        }
    }
    tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
    char *text = cJSON_Print(st);
    int wfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    size_t len = strlen(text), off = 0;
    while (wfd >= 0 && off < len) {
        ssize_t n = write(wfd, text + off, len - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    free(text);
    if (wfd < 0 || off < len || close(wfd) < 0 || rename(tmp, path) < 0) {
        snprintf(err, errlen, "write '%s': %s", tmp, strerror(errno));
        unlink(tmp);
        goto out;
    }
    rc = 0;
out:
    free(tmp);
    cJSON_Delete(st);
    close(fd); /* drops the lock */
    return rc;
}

int nvml_register(pid_t pid, const char *mb_spec, char *err, size_t errlen)
{
    return update(pid, mb_spec, err, errlen);
}

int nvml_unregister(pid_t pid, char *err, size_t errlen)
{
    return update(pid, NULL, err, errlen);
}
