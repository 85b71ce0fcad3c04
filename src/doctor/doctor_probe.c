/* doctor_probe.c - the reading half of `gpumod doctor` (doctor_probe.h).
 *
 * Each file is read whole with a size cap, O_NONBLOCK (a FIFO planted
 * under a test root must not hang the command) and only if it is a
 * regular file; what cannot be read is recorded for the check to judge,
 * never fatal.  Unit files that are symlinks are skipped: in
 * /etc/systemd/system they are aliases or masks (-> /dev/null) of units
 * read elsewhere, and following them would report one unit twice. */
#include "doctor/doctor_probe.h"
#include "host/host.h"
#include "host/nvml.h"
#include "util/buf.h"
#include "util/slurp.h"
#include "util/clock.h"
#include "util/strv.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
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
    return slurp_text(path, FILE_MAX, b, err, errlen);
}

/* A name and the file it stands for. */
typedef struct named_file {
    char name[256];
    char path[4096];
} named_file;

static int named_cmp(const void *a, const void *b)
{
    return strcmp(((const named_file *)a)->name, ((const named_file *)b)->name);
}

/* The *SUFFIX files of dirs[] merged by name, the first directory's file
 * winning a name (modprobe.d and systemd drop-ins both work so), sorted
 * by name.  *out is malloc'ed. */
static size_t merged_files(char (*dirs)[4096], size_t nd, const char *suffix, named_file **out)
{
    size_t n = 0, cap = 0, sl = strlen(suffix);
    *out = NULL;
    for (size_t i = 0; i < nd; i++) {
        struct dirent **names = NULL;
        int k = scandir(dirs[i], &names, NULL, alphasort);
        for (int j = 0; j < k; j++) {
            const char *nm = names[j]->d_name;
            size_t len = strlen(nm);
            bool seen = len <= sl || strcmp(nm + len - sl, suffix) || len >= sizeof (*out)[0].name;
            for (size_t m = 0; m < n && !seen; m++) seen = !strcmp((*out)[m].name, nm);
            if (!seen) {
                if (n == cap) {
                    cap = cap ? cap * 2 : 8;
                    *out = xrealloc(*out, cap * sizeof **out);
                }
                snprintf((*out)[n].name, sizeof (*out)[n].name, "%s", nm);
                snprintf((*out)[n].path, sizeof (*out)[n].path, "%s/%s", dirs[i], nm);
                n++;
            }
            free(names[j]);
        }
        free(names);
    }
    if (n > 1) qsort(*out, n, sizeof **out, named_cmp);
    return n;
}

static void probe_zfs(doc_zfs *z, const char *proc, const char *sys, const char *etc, const char *fsroot)
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

    /* modprobe reads the *.conf files of /etc, /run, /usr/lib and /lib
     * modprobe.d merged by name (/etc's file wins a name) in name order,
     * the last option wins; the kernel command line wins over all */
    char md[4][4096];
    snprintf(md[0], sizeof md[0], "%s/modprobe.d", etc);
    snprintf(md[1], sizeof md[1], "%s/run/modprobe.d", fsroot);
    snprintf(md[2], sizeof md[2], "%s/usr/lib/modprobe.d", fsroot);
    snprintf(md[3], sizeof md[3], "%s/lib/modprobe.d", fsroot);
    named_file *files = NULL;
    size_t nf = merged_files(md, 4, ".conf", &files);
    for (size_t i = 0; i < nf; i++) {
        buf_clear(&b);
        if (slurp(files[i].path, &b, err, sizeof err) == 0) doctor_scan_modprobe(z, files[i].path, b.p);
    }
    free(files);
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
    const char *etc = root("GPUMOD_ETC_ROOT", "/etc"), *fsroot = root("GPUMOD_ROOT", "");
    char path[4096], err[256];
    buf b = BUF_INIT;

    memset(h, 0, sizeof *h);
    if (procmem_read_meminfo(&h->mem, proc, err, sizeof err) < 0)
        snprintf(h->mem_error, sizeof h->mem_error, "%s", err);
    if (procmem_read_buddyinfo(&h->mem, proc, err, sizeof err) < 0)
        snprintf(h->buddy_error, sizeof h->buddy_error, "%s", err);
    /* absent (no CONFIG_PSI, psi=0): 0 with psi_ok false; malformed: -1 */
    if (procmem_read_psi(&h->mem, proc, err, sizeof err) < 0)
        snprintf(h->psi_error, sizeof h->psi_error, "%s", err[0] ? err : "unreadable");

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

    probe_zfs(&h->zfs, proc, sys, etc, fsroot);
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

static void note_err(doc_unit *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_err(doc_unit *u, const char *fmt, ...)
{
    u->nerrors++;
    if (u->error[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->error, sizeof u->error, fmt, ap);
    va_end(ap);
}

/* An absolute path of the unit's world under the roots: /etc/... under
 * GPUMOD_ETC_ROOT, everything else under GPUMOD_ROOT. */
static void rooted(const char *p, char *out, size_t cap)
{
    if (!strncmp(p, "/etc/", 5)) snprintf(out, cap, "%s%s", root("GPUMOD_ETC_ROOT", "/etc"), p + 4);
    else snprintf(out, cap, "%s%s", root("GPUMOD_ROOT", ""), p);
}

/* NAME.d/ *.conf of every directory of the scope, merged by file name (the
 * first directory wins a name), applied in name order; then the
 * EnvironmentFile= files ('-': a missing one is fine). */
static void unit_extras(doc_unit *u, char (*dirs)[4096], size_t nd, buf *b)
{
    char dd[4][4096];
    char err[256];
    for (size_t i = 0; i < nd && i < 4; i++) snprintf(dd[i], sizeof dd[i], "%s/%s.d", dirs[i], u->name);
    named_file *files = NULL;
    size_t nf = merged_files(dd, nd < 4 ? nd : 4, ".conf", &files);
    for (size_t i = 0; i < nf; i++) {
        struct stat st;
        buf_clear(b);
        if (stat(files[i].path, &st) == 0 && S_ISCHR(st.st_mode)) continue; /* masked -> /dev/null */
        if (slurp(files[i].path, b, err, sizeof err) < 0) note_err(u, "drop-in %s", err);
        else doctor_unit_dropin(u, files[i].path, b->p);
    }
    free(files);
    for (size_t i = 0; i < u->env_files.n; i++) {
        const char *f = u->env_files.v[i];
        bool optional = *f == '-';
        if (optional) f++;
        char path[4096];
        if (*f != '/') {
            note_err(u, "EnvironmentFile='%s': not an absolute path", f);
            continue;
        }
        rooted(f, path, sizeof path);
        buf_clear(b);
        if (slurp(path, b, err, sizeof err) < 0) {
            if (!(optional && errno == ENOENT)) note_err(u, "EnvironmentFile %s%s", err, optional ? "" : " (systemd refuses to start the unit)");
            continue;
        }
        doctor_unit_envfile(u, path, b->p);
    }
}

/* One manager's units: its directories in systemd's precedence, a name
 * taken by the first directory that has it (a symlink there is an alias
 * or a mask, and hides the name too). */
static void scope_units(const char *scope, char (*dirs)[4096], size_t nd, doc_unit **v, size_t *n, size_t *cap,
                        char *list, size_t listlen)
{
    size_t first = *n;
    strv taken = STRV_INIT;
    buf b = BUF_INIT;
    size_t len = strlen(list);
    if (scope) snprintf(list + len, listlen - len, "%s%s: ", len ? "; " : "", scope);
    for (size_t d = 0; d < nd; d++) {
        struct dirent **names = NULL;
        int k = scandir(dirs[d], &names, NULL, alphasort);
        size_t before = *n;
        for (int i = 0; i < k; i++) {
            const char *nm = names[i]->d_name;
            size_t nl = strlen(nm);
            char path[4096], err[256];
            struct stat st;
            snprintf(path, sizeof path, "%s/%s", dirs[d], nm);
            if (nl <= 8 || strcmp(nm + nl - 8, ".service") || strv_find(&taken, nm) >= 0 ||
                lstat(path, &st) < 0) {
                free(names[i]);
                continue;
            }
            strv_push(&taken, nm);
            if (!S_ISREG(st.st_mode)) {
                free(names[i]);
                continue;
            }
            if (*n == *cap) {
                *cap = *cap ? *cap * 2 : 16;
                *v = xrealloc(*v, *cap * sizeof **v);
            }
            buf_clear(&b);
            if (slurp(path, &b, err, sizeof err) < 0) {
                doctor_unit_parse(&(*v)[*n], nm, path, "");
                note_err(&(*v)[*n], "%s", err);
            } else {
                doctor_unit_parse(&(*v)[*n], nm, path, b.p);
            }
            (*v)[*n].scope = scope;
            (*n)++;
            free(names[i]);
        }
        free(names);
        len = strlen(list);
        if (k < 0) snprintf(list + len, listlen - len, "%s%s (absent)", d ? ", " : "", dirs[d]);
        else snprintf(list + len, listlen - len, "%s%s (%zu)", d ? ", " : "", dirs[d], *n - before);
    }
    for (size_t i = first; i < *n; i++) unit_extras(&(*v)[i], dirs, nd, &b);
    strv_release(&taken);
    buf_release(&b);
}

void doctor_probe_units(doc_unit **out, size_t *n, char *dirs, size_t dirslen)
{
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    dirs[0] = '\0';
    char d[4][4096];
    const char *env = getenv("GPUMOD_UNIT_DIR");
    if (env && *env) {
        snprintf(d[0], sizeof d[0], "%s", env);
        scope_units(NULL, d, 1, out, n, &cap, dirs, dirslen);
        return;
    }
    const char *etc = root("GPUMOD_ETC_ROOT", "/etc"), *fsroot = root("GPUMOD_ROOT", "");
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    size_t nd = 0;
    if (xdg && *xdg) snprintf(d[nd++], sizeof d[0], "%s/systemd/user", xdg);
    else if (home && *home) snprintf(d[nd++], sizeof d[0], "%s/.config/systemd/user", home);
    snprintf(d[nd++], sizeof d[0], "%s/systemd/user", etc);
    snprintf(d[nd++], sizeof d[0], "%s/usr/lib/systemd/user", fsroot);
    scope_units("user", d, nd, out, n, &cap, dirs, dirslen);
    snprintf(d[0], sizeof d[0], "%s/systemd/system", etc);
    snprintf(d[1], sizeof d[1], "%s/run/systemd/system", fsroot);
    snprintf(d[2], sizeof d[2], "%s/usr/lib/systemd/system", fsroot);
    snprintf(d[3], sizeof d[3], "%s/lib/systemd/system", fsroot);
    scope_units("system", d, 4, out, n, &cap, dirs, dirslen);
}
