/* smi.c - the GPUs as nvidia-smi prints them: the fallback for hosts where
 * NVML cannot be loaded or initialised by us but nvidia-smi still answers
 * (a container with the tool but another library path, an old driver).
 *
 * nvidia-smi's CSV is not a stable interface (its man page says so), so
 * the parser trusts nothing: every field is checked, the placeholders it
 * prints for what it cannot tell ([N/A], [Not Supported], [Unknown
 * Error], ...) become "unknown", a unit left on a number is tolerated, a
 * GPU name holding commas is rejoined, and anything else is an error that
 * quotes the line.  A memory.total it cannot tell means unified memory
 * (GB10 prints [N/A]).  The program runs through run_capture: argv, no
 * shell, one deadline for both queries. */
#include "util/clock.h"
#include "util/errf.h"
#include "host/smi.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/buf.h"
#include "util/run.h"

#define MIB (1024ULL * 1024ULL)
#define MAX_FIELDS 64
#define GPU_NFIELDS 10
#define APP_NFIELDS 3

/* Untrusted text made printable into dst (size n): at most max bytes of
 * it, "..." when cut. */
static void excerpt(char *dst, size_t n, const char *src, size_t len, size_t max)
{
    if (max + 4 > n) max = n > 4 ? n - 4 : 0;
    size_t j = 0;
    for (size_t i = 0; i < len && i < max; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[j++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (len > max) {
        memcpy(dst + j, "...", 3);
        j += 3;
    }
    dst[j] = '\0';
}

#define LINE_EXCERPT 60

/* What nvidia-smi prints for a value it cannot tell. */
static bool placeholder(const char *v)
{
    size_t n = strlen(v);
    return n == 0 || (n >= 2 && v[0] == '[' && v[n - 1] == ']') || strcasecmp(v, "N/A") == 0 ||
           strcasecmp(v, "Not Supported") == 0;
}

/* After a number: nothing, or one unit word (when nounits was ignored). */
static bool unit_tail(const char *p)
{
    while (*p == ' ') p++;
    if (!*p) return true;
    static const char *const units[] = {"MiB", "%", "W", "C"};
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (strcmp(p, units[i]) == 0) return true;
    return false;
}

/* 1: a number in *out; 0: a placeholder; -1: neither. */
static int parse_uint(const char *v, uint64_t *out)
{
    if (placeholder(v)) return 0;
    if (!isdigit((unsigned char)*v)) return -1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || !unit_tail(end)) return -1;
    *out = x;
    return 1;
}

static int parse_double(const char *v, double *out)
{
    if (placeholder(v)) return 0;
    if (!isdigit((unsigned char)*v)) return -1;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || !isfinite(x) || !unit_tail(end)) return -1;
    *out = x;
    return 1;
}

/* One field of a line: a trimmed slice of it. */
typedef struct fld {
    const char *p;
    size_t n;
} fld;

/* Split a line at commas into trimmed slices; returns the field count
 * (which may exceed max: only the first max are kept). */
static int split(const char *line, size_t len, fld *f, int max)
{
    int n = 0;
    const char *p = line, *end = line + len;
    for (;;) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        const char *e = c ? c : end;
        const char *a = p;
        while (a < e && (*a == ' ' || *a == '\t')) a++;
        const char *b = e;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r')) b--;
        if (n < max) f[n] = (fld){a, (size_t)(b - a)};
        n++;
        if (!c) break;
        p = c + 1;
    }
    return n;
}

/* A field as a C string for the number parsers; an over-long one
 * becomes "x" (not a number, not a placeholder). */
static const char *fld_cstr(fld f, char *tmp, size_t n)
{
    if (f.n >= n) return "x";
    memcpy(tmp, f.p, f.n);
    tmp[f.n] = '\0';
    return tmp;
}

typedef struct line_iter {
    const char *p;
    int lineno;
} line_iter;

/* The next non-blank line as a slice (no '\n'), false at the end. */
static bool next_line(line_iter *it, const char **line, size_t *len)
{
    while (*it->p) {
        const char *l = it->p;
        size_t n = strcspn(l, "\n");
        it->p = l[n] ? l + n + 1 : l + n;
        it->lineno++;
        size_t k = 0;
        while (k < n && (l[k] == ' ' || l[k] == '\t' || l[k] == '\r')) k++;
        if (k == n) continue;
        *line = l;
        *len = n;
        return true;
    }
    return false;
}

static void gpus_release(snapshot *s)
{
    for (size_t i = 0; i < s->ngpus; i++) free(s->gpus[i].procs);
    memset(s->gpus, 0, sizeof s->gpus);
    s->ngpus = 0;
}

/* Fill d from the ten fields; -1 with why naming the bad field. */
static int gpu_from_fields(gpu_dev *d, const fld *f, char *why, size_t whylen)
{
    static const char *const names[GPU_NFIELDS] = {
        "index",       "uuid",        "name",         "pci.bus_id",      "memory.total",
        "memory.used", "memory.free", "utilization.gpu", "temperature.gpu", "power.draw"};
    uint64_t v[GPU_NFIELDS] = {0};
    int have[GPU_NFIELDS] = {0};
    double watts = 0;
    int bad = -1;
    for (int i = 0; i < GPU_NFIELDS && bad < 0; i++) {
        if (i >= 1 && i <= 3) continue; /* strings */
        char tmp[64];
        const char *c = fld_cstr(f[i], tmp, sizeof tmp);
        have[i] = i == 9 ? parse_double(c, &watts) : parse_uint(c, &v[i]);
        if (have[i] < 0 || (i == 0 && have[i] != 1)) bad = i; /* the index must be there */
    }
    if (bad >= 0) {
        char ex[80];
        excerpt(ex, sizeof ex, f[bad].p, f[bad].n, LINE_EXCERPT);
        errf(why, whylen, "%s '%s' is not a number", names[bad], ex);
        return -1;
    }
    memset(d, 0, sizeof *d);
    d->index = v[0] > 1000000 ? -1 : (int)v[0];
    excerpt(d->uuid, sizeof d->uuid, f[1].p, f[1].n, sizeof d->uuid);
    excerpt(d->name, sizeof d->name, f[2].p, f[2].n, sizeof d->name);
    excerpt(d->bus_id, sizeof d->bus_id, f[3].p, f[3].n, sizeof d->bus_id);
    if (have[4] != 1 || v[4] == 0) {
        d->unified = true; /* no framebuffer figures: the caller uses MemAvailable */
    } else {
        uint64_t total = v[4], used = v[5], fr = v[6];
        if (have[5] != 1 && have[6] != 1) {
            errf(why, whylen, "memory.total is %llu MiB but memory.used and memory.free are unknown",
                   (unsigned long long)total);
            return -1;
        }
        if (have[6] != 1) fr = used <= total ? total - used : 0;
        if (have[5] != 1) used = fr <= total ? total - fr : 0;
        d->total_bytes = total * MIB;
        d->used_bytes = used * MIB;
        d->free_bytes = fr * MIB;
        /* its "used" leaves the driver's reservation out of both (v2's) */
        d->reserved_bytes = total > used + fr ? (total - used - fr) * MIB : 0;
    }
    d->util_gpu_pct = have[7] == 1 && v[7] <= 100 ? (int)v[7] : -1;
    d->util_mem_pct = -1;
    d->temp_c = have[8] == 1 && v[8] < 1000 ? (int)v[8] : -1;
    d->power_mw = have[9] == 1 && watts < 1e9 ? (int64_t)llround(watts * 1000.0) : -1;
    return 0;
}

int smi_parse_gpus(snapshot *s, const char *csv, char *err, size_t errlen)
{
    gpus_release(s);
    line_iter it = {csv ? csv : "", 0};
    const char *line;
    size_t len;
    while (next_line(&it, &line, &len)) {
        char ex[80], why[160];
        fld f[MAX_FIELDS];
        int nf = split(line, len, f, MAX_FIELDS);
        if (nf > GPU_NFIELDS && nf <= MAX_FIELDS) {
            /* a name holding commas: its pieces go back together */
            int extra = nf - GPU_NFIELDS;
            f[2].n = (size_t)(f[2 + extra].p + f[2 + extra].n - f[2].p);
            memmove(&f[3], &f[3 + extra], (size_t)(GPU_NFIELDS - 3) * sizeof *f);
            nf = GPU_NFIELDS;
        }
        excerpt(ex, sizeof ex, line, len, LINE_EXCERPT);
        if (nf != GPU_NFIELDS) {
            errf(err, errlen, "nvidia-smi --query-gpu: line %d: %d field%s, expected %d: '%s'",
                   it.lineno, nf, nf == 1 ? "" : "s", GPU_NFIELDS, ex);
            gpus_release(s);
            return -1;
        }
        if (s->ngpus == HOST_MAX_GPUS) continue; /* more than we keep */
        if (gpu_from_fields(&s->gpus[s->ngpus], f, why, sizeof why) < 0) {
            errf(err, errlen, "nvidia-smi --query-gpu: line %d: %s", it.lineno, why);
            gpus_release(s);
            return -1;
        }
        s->ngpus++;
    }
    return 0;
}

int smi_parse_apps(snapshot *s, const char *csv, char *err, size_t errlen)
{
    line_iter it = {csv ? csv : "", 0};
    const char *line;
    size_t len;
    while (next_line(&it, &line, &len)) {
        fld f[APP_NFIELDS];
        int nf = split(line, len, f, APP_NFIELDS);
        uint64_t pid = 0, mib = 0;
        int hp = -1, hm = -1;
        char t1[64], t2[64];
        if (nf == APP_NFIELDS) {
            hp = parse_uint(fld_cstr(f[1], t1, sizeof t1), &pid);
            hm = parse_uint(fld_cstr(f[2], t2, sizeof t2), &mib);
        }
        const char *what = nf != APP_NFIELDS                           ? "expected gpu_uuid, pid, used_memory"
                           : hp != 1 || pid == 0 || pid > UINT32_MAX ? "pid is not a number"
                           : hm < 0                                    ? "used_memory is not a number"
                                                                       : NULL;
        if (what) {
            char ex[80];
            excerpt(ex, sizeof ex, line, len, LINE_EXCERPT);
            errf(err, errlen, "nvidia-smi --query-compute-apps: line %d: %s: '%s'", it.lineno,
                   what, ex);
            return -1;
        }
        for (size_t i = 0; i < s->ngpus; i++) {
            gpu_dev *d = &s->gpus[i];
            if (strlen(d->uuid) != f[0].n || memcmp(d->uuid, f[0].p, f[0].n) != 0) continue;
            d->procs = xrealloc(d->procs, (d->nprocs + 1) * sizeof *d->procs);
            d->procs[d->nprocs].pid = (uint32_t)pid;
            d->procs[d->nprocs].used_bytes = hm == 1 ? mib * MIB : UINT64_MAX;
            d->nprocs++;
            break;
        }
    }
    return 0;
}

/* err for a run that failed, with the first line it printed (nvidia-smi
 * says why on stdout: "NVIDIA-SMI has failed because ..."). */
static void run_failed(char *err, size_t errlen, const char *rerr, const buf *out)
{
    const char *p = out->p;
    while (*p == '\n' || *p == ' ' || *p == '\r') p++;
    size_t n = strcspn(p, "\r\n");
    if (!n) {
        errf(err, errlen, "%s", rerr);
        return;
    }
    char ex[200];
    excerpt(ex, sizeof ex, p, n, 150);
    errf(err, errlen, "%s: %s", rerr, ex);
}

int smi_query(snapshot *s, const char *smi, int64_t timeout_ms, bool *found, char *err,
              size_t errlen)
{
    bool dummy;
    if (!found) found = &dummy;
    *found = true;
    gpus_release(s);
    if (timeout_ms < 1) timeout_ms = 1;
    int64_t deadline = clock_mono_ms() + timeout_ms;
    buf out = BUF_INIT;
    run_result r;
    char rerr[256];
    char *gpu_argv[] = {(char *)smi, "--query-gpu=" SMI_GPU_FIELDS,
                        "--format=csv,noheader,nounits", NULL};
    char *app_argv[] = {(char *)smi, "--query-compute-apps=" SMI_APP_FIELDS,
                        "--format=csv,noheader,nounits", NULL};
    run_opts ro = {.timeout_ms = timeout_ms, .max_output = 256 * 1024};
    if (run_capture(gpu_argv, &ro, &out, &r, rerr, sizeof rerr) < 0) {
        *found = r.start_errno != ENOENT;
        run_failed(err, errlen, rerr, &out);
        goto fail;
    }
    if (r.truncated) {
        errf(err, errlen, "'%s --query-gpu' printed more than %zu bytes", smi, ro.max_output);
        goto fail;
    }
    if (smi_parse_gpus(s, out.p, err, errlen) < 0) goto fail;
    if (s->ngpus == 0) goto done; /* nothing to list processes for */
    ro.timeout_ms = deadline - clock_mono_ms();
    if (ro.timeout_ms <= 0) {
        errf(err, errlen, "'%s' timed out after %lld ms", smi, (long long)timeout_ms);
        goto fail;
    }
    buf_clear(&out);
    if (run_capture(app_argv, &ro, &out, &r, rerr, sizeof rerr) < 0) {
        run_failed(err, errlen, rerr, &out);
        goto fail;
    }
    if (r.truncated) {
        errf(err, errlen, "'%s --query-compute-apps' printed more than %zu bytes", smi,
               ro.max_output);
        goto fail;
    }
    if (smi_parse_apps(s, out.p, err, errlen) < 0) goto fail;
done:
    buf_release(&out);
    return 0;
fail:
    buf_release(&out);
    gpus_release(s);
    return -1;
}
