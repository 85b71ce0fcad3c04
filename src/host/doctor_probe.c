/* doctor_probe.c - the reading half of `gpumod doctor` (doctor_probe.h).
 *
 * Each file is read whole with a size cap, O_NONBLOCK (a FIFO planted
 * under a test root must not hang the command) and only if it is a
 * regular file; what cannot be read is recorded for the check to judge,
 * never fatal.  Unit files that are symlinks are skipped: in
 * /etc/systemd/system they are aliases or masks (-> /dev/null) of units
 * read elsewhere, and following them would report one unit twice. */
#include "host/doctor_probe.h"
#include "host/host.h"
#include "host/nvml.h"
#include "util/buf.h"
#include "util/clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_MAX (1u << 20)

static const char *root(const char *env, const char *def)
{
    const char *e = getenv(env);
    return e && *e ? e : def;
}

/* The whole regular file path into b.  0, or -1 with err (errno kept). */
static int slurp(const char *path, buf *b, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "'%s': %s", path, strerror(e));
        errno = e;
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "'%s' is not a regular file", path);
        close(fd);
        errno = EINVAL;
        return -1;
    }
    char chunk[4096];
    for (;;) {
        ssize_t r = read(fd, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            snprintf(err, errlen, "'%s': %s", path, strerror(e));
            close(fd);
            errno = e;
            return -1;
        }
        if (r == 0) break;
        if (memchr(chunk, '\0', (size_t)r)) {
            snprintf(err, errlen, "'%s' contains a NUL byte", path);
            close(fd);
            errno = EINVAL;
            return -1;
        }
        buf_add(b, chunk, (size_t)r);
        if (b->len > FILE_MAX) {
            snprintf(err, errlen, "'%s' is larger than %u bytes", path, FILE_MAX);
            close(fd);
            errno = EFBIG;
            return -1;
        }
    }
    close(fd);
    return 0;
}

static void probe_zfs(doc_zfs *z, const char *proc, const char *sys, const char *etc)
{
    char path[4096], err[256];
    buf b = BUF_INIT;
    memset(z, 0, sizeof *z);
    snprintf(path, sizeof path, "%s/spl/kstat/zfs/arcstats", proc);
    if (slurp(path, &b, err, sizeof err) < 0) {
        z->loaded = errno != ENOENT;
        snprintf(z->error, sizeof z->error, "%s", err);
        buf_release(&b);
        return;
    }
    z->loaded = true;
    if (doctor_parse_arcstats(z, b.p, err, sizeof err) < 0)
        snprintf(z->error, sizeof z->error, "'%s': %s", path, err);

    buf_clear(&b);
    snprintf(path, sizeof path, "%s/module/zfs/parameters/zfs_arc_max", sys);
    if (slurp(path, &b, err, sizeof err) == 0) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(b.p, &end, 10);
        if (end != b.p && !errno && (*end == '\n' || !*end)) {
            z->param_ok = true;
            z->param_max = v;
        }
    }

    /* modprobe reads /etc/modprobe.d/ files in name order, the last
     * option wins; the kernel command line wins over all of them */
    snprintf(path, sizeof path, "%s/modprobe.d", etc);
    struct dirent **names = NULL;
    int n = scandir(path, &names, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        const char *nm = names[i]->d_name;
        size_t len = strlen(nm);
        if (len > 5 && !strcmp(nm + len - 5, ".conf")) {
            char file[4096];
            snprintf(file, sizeof file, "%s/%s", path, nm);
            buf_clear(&b);
            if (slurp(file, &b, err, sizeof err) == 0) doctor_scan_modprobe(z, file, b.p);
        }
        free(names[i]);
    }
    free(names);
    buf_clear(&b);
    snprintf(path, sizeof path, "%s/cmdline", proc);
    if (slurp(path, &b, err, sizeof err) == 0) doctor_scan_cmdline(z, b.p);
    buf_release(&b);
}

static void probe_oomd(doc_host *h, const char *proc)
{
    DIR *d = opendir(proc);
    h->oomd = -1;
    if (!d) return;
    h->oomd = 0;
    struct dirent *e;
    buf b = BUF_INIT;
    while ((e = readdir(d))) {
        const char *p = e->d_name;
        if (!*p || strspn(p, "0123456789") != strlen(p)) continue;
        char path[4096], err[256];
        snprintf(path, sizeof path, "%s/%s/comm", proc, p);
        buf_clear(&b);
        if (slurp(path, &b, err, sizeof err) < 0) continue; /* it exited meanwhile */
        if (!strcmp(b.p, "systemd-oomd\n") || !strcmp(b.p, "systemd-oomd")) {
            h->oomd = 1;
            h->oomd_pid = atoll(p);
            break;
        }
    }
    buf_release(&b);
    closedir(d);
}

void doctor_probe_host(doc_host *h, const doctor_probe_opts *o)
{
    const char *proc = root("GPUMOD_PROC_ROOT", "/proc"), *sys = root("GPUMOD_SYS_ROOT", "/sys");
    const char *etc = root("GPUMOD_ETC_ROOT", "/etc");
    char path[4096], err[256];
    buf b = BUF_INIT;

    memset(h, 0, sizeof *h);
    if (procmem_read_meminfo(&h->mem, proc, err, sizeof err) < 0)
        snprintf(h->mem_error, sizeof h->mem_error, "%s", err);
    if (procmem_read_buddyinfo(&h->mem, proc, err, sizeof err) < 0 && !h->mem_error[0])
        snprintf(h->mem_error, sizeof h->mem_error, "%s", err);
    procmem_read_psi(&h->mem, proc, err, sizeof err);

    snprintf(path, sizeof path, "%s/sys/vm/min_free_kbytes", proc);
    if (slurp(path, &b, err, sizeof err) == 0) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(b.p, &end, 10);
        if (end != b.p && !errno && (*end == '\n' || !*end)) {
            h->min_free_ok = true;
            h->min_free_kb = v;
        }
    }
    buf_clear(&b);
    snprintf(path, sizeof path, "%s/swaps", proc);
    if (slurp(path, &b, err, sizeof err) == 0) doctor_parse_swaps(h, b.p, err, sizeof err);

    h->debugfs_unusable = -1;
    buf_clear(&b);
    snprintf(path, sizeof path, "%s/kernel/debug/extfrag/unusable_index", sys);
    if (h->mem.buddyinfo_ok && slurp(path, &b, err, sizeof err) == 0)
        h->debugfs_unusable = doctor_parse_unusable(b.p, h->mem.order_2m);
    buf_release(&b);

    probe_zfs(&h->zfs, proc, sys, etc);
    probe_oomd(h, proc);

    /* NVML: the same loader and deadline as every snapshot */
    snapshot *s = xcalloc(1, sizeof *s);
    const char *lib = o && o->nvml_lib ? o->nvml_lib : root("GPUMOD_NVML_LIB", "libnvidia-ml.so.1");
    h->nvml_timeout_ms = o && o->nvml_timeout_ms > 0 ? o->nvml_timeout_ms : 2000;
    int64_t t0 = clock_mono_ms();
    h->nvml = nvml_query(s, lib, h->nvml_timeout_ms, h->nvml_error, sizeof h->nvml_error);
    h->nvml_ms = clock_mono_ms() - t0;
    h->ngpus = s->ngpus;
    h->nvidia_driver = s->nvidia_driver;
    snapshot_release(s);
    free(s);
    if (!h->nvidia_driver) {
        snprintf(path, sizeof path, "%s/driver/nvidia", proc);
        h->nvidia_driver = access(path, F_OK) == 0;
    }
}

static int units_dir(const char *dir, doc_unit **v, size_t *n, size_t *cap, size_t first_of_dir)
{
    struct dirent **names = NULL;
    int k = scandir(dir, &names, NULL, alphasort);
    if (k < 0) return -1;
    buf b = BUF_INIT;
    for (int i = 0; i < k; i++) {
        const char *nm = names[i]->d_name;
        size_t len = strlen(nm);
        char path[4096], err[256];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, nm);
        bool seen = false;
        for (size_t j = 0; j < first_of_dir; j++)
            if (!strcmp((*v)[j].name, nm)) seen = true;
        if (seen || len <= 8 || strcmp(nm + len - 8, ".service") || lstat(path, &st) < 0 ||
            !S_ISREG(st.st_mode)) {
            free(names[i]);
            continue;
        }
        buf_clear(&b);
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 16;
            *v = xrealloc(*v, *cap * sizeof **v);
        }
        if (slurp(path, &b, err, sizeof err) < 0) {
            doctor_unit_parse(&(*v)[*n], nm, path, "");
            snprintf((*v)[*n].error, sizeof (*v)[*n].error, "%s", err);
        } else {
            doctor_unit_parse(&(*v)[*n], nm, path, b.p);
        }
        (*n)++;
        free(names[i]);
    }
    free(names);
    buf_release(&b);
    return 0;
}

void doctor_probe_units(doc_unit **out, size_t *n, char *dirs, size_t dirslen)
{
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    dirs[0] = '\0';
    char d[3][4096];
    size_t nd = 0;
    const char *env = getenv("GPUMOD_UNIT_DIR");
    if (env && *env) {
        snprintf(d[nd++], sizeof d[0], "%s", env);
    } else {
        const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
        if (xdg && *xdg) snprintf(d[nd++], sizeof d[0], "%s/systemd/user", xdg);
        else if (home && *home) snprintf(d[nd++], sizeof d[0], "%s/.config/systemd/user", home);
        snprintf(d[nd++], sizeof d[0], "%s/systemd/system", root("GPUMOD_ETC_ROOT", "/etc"));
    }
    for (size_t i = 0; i < nd; i++) {
        size_t len = strlen(dirs);
        int r = units_dir(d[i], out, n, &cap, *n);
        snprintf(dirs + len, dirslen - len, "%s%s%s", len ? ", " : "", d[i], r < 0 ? " (absent)" : "");
    }
}
