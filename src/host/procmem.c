/* procmem.c - host memory from /proc: meminfo, buddyinfo, pressure/memory.
 *
 * Each reader is split in two: a parser over text (no I/O, so hostile
 * input is unit-tested byte for byte) and a thin reader that loads the
 * file under proc_root ($GPUMOD_PROC_ROOT in tests, else /proc) and
 * names it in errors.  The parsers are strict about the shape of the
 * lines they use and say which line broke: a half-read meminfo must never
 * look like a small MemAvailable, because the gate would act on it.
 * Unknown meminfo keys are skipped, so a new kernel field breaks nothing.
 *
 * Fragmentation is recomputed the way the kernel's mm/vmstat.c does it,
 * from the world-readable buddyinfo, with the page size from sysconf:
 * the column count and the order of a 2 MiB block differ between x86-64
 * (4 KiB pages, 11 orders) and arm64 kernels (16/64 KiB pages, more or
 * fewer orders), so neither is ever assumed.
 *
 * gpumod only reads here.  It never writes compact_memory or drop_caches:
 * whether to disturb the whole host is the operator's decision. */
#include "host/host.h"
#include "util/errf.h"
#include "util/buf.h"
#include "util/slurp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* /proc files are a few KiB; anything near this is not a /proc file. */
#define PROC_FILE_MAX (1u << 20)
#define MIB_2 (2u << 20)

/* ---- text scanning ---- */

typedef struct line {
    const char *p; /* not NUL-terminated at len */
    size_t len;
    int no; /* 1-based */
} line;

static bool next_line(const char **cur, line *l)
{
    const char *s = *cur;
    if (!*s) return false;
    const char *e = strchr(s, '\n');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    l->p = s;
    l->len = n;
    l->no++;
    *cur = e ? e + 1 : s + n;
    return true;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

static bool blank(const line *l)
{
    for (size_t i = 0; i < l->len; i++)
        if (!is_space(l->p[i])) return false;
    return true;
}

/* The next whitespace-separated word of l from *pos; false at the end. */
static bool next_word(const line *l, size_t *pos, view *w)
{
    size_t i = *pos;
    while (i < l->len && is_space(l->p[i]))
        i++;
    if (i == l->len) return false;
    size_t start = i;
    while (i < l->len && !is_space(l->p[i]))
        i++;
    w->p = l->p + start;
    w->len = i - start;
    *pos = i;
    return true;
}

static bool view_eq(view v, const char *s)
{
    size_t n = strlen(s);
    return v.len == n && memcmp(v.p, s, n) == 0;
}

/* Decimal u64, the whole view.  0, -1 not a number, -2 too large. */
static int parse_u64(view v, uint64_t *out)
{
    if (v.len == 0) return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < v.len; i++) {
        char c = v.p[i];
        if (c < '0' || c > '9') return -1;
        if (x > (UINT64_MAX - (uint64_t)(c - '0')) / 10) return -2;
        x = x * 10 + (uint64_t)(c - '0');
    }
    *out = x;
    return 0;
}

/* A quoted word for an error message, cut short so the message fits. */
#define WORD_FMT "'%.*s%s'"
#define WORD_ARG(v) (int)((v).len > 24 ? 24 : (v).len), (v).p, ((v).len > 24 ? "..." : "")

/* ---- /proc/meminfo ---- */

typedef struct mfield {
    const char *name;
    size_t off;
    bool kb;       /* "N kB", else a bare count */
    bool required; /* a kernel that lacks it is not one gpumod can judge */
} mfield;

/* clang-format off */
#define MF(name, member, kb, req) {name, offsetof(host_mem, member), kb, req}
/* clang-format on */
static const mfield mfields[] = {
    MF("MemTotal", mem_total, true, true),
    MF("MemFree", mem_free, true, true),
    MF("MemAvailable", mem_available, true, true),
    MF("Buffers", buffers, true, false),
    MF("Cached", cached, true, false),
    MF("SwapTotal", swap_total, true, false),
    MF("SwapFree", swap_free, true, false),
    MF("Shmem", shmem, true, false),
    MF("AnonPages", anon_pages, true, false),
    MF("Mlocked", mlocked, true, false),
    MF("HugePages_Total", hugepages_total, false, false),
    MF("HugePages_Free", hugepages_free, false, false),
    MF("Hugepagesize", hugepage_size, true, false),
};
#define NMFIELDS (sizeof mfields / sizeof mfields[0])

static uint64_t *mfield_ptr(host_mem *m, size_t i)
{
    return (uint64_t *)((char *)m + mfields[i].off);
}

static void meminfo_clear(host_mem *m)
{
    for (size_t i = 0; i < NMFIELDS; i++)
        *mfield_ptr(m, i) = 0;
    m->meminfo_ok = false;
}

/* the index in mfields of the host_mem member at off */
static size_t mfield_at(size_t off)
{
    size_t i = 0;
    while (i < NMFIELDS - 1 && mfields[i].off != off) i++;
    return i;
}

static int parse_meminfo(host_mem *m, const char *text, const char *label, char *err, size_t errlen)
{
    /* committed to m only when the whole file parsed: the fields alone,
     * not a host_mem (10 KB of stack, 3 page faults deep in preflight) */
    uint64_t t[NMFIELDS] = {0};
    bool seen[NMFIELDS] = {false};
    line l = {0};
    const char *cur = text;
    bool any = false;

    meminfo_clear(m);
    while (next_line(&cur, &l)) {
        if (blank(&l)) continue;
        any = true;
        const char *colon = memchr(l.p, ':', l.len);
        if (!colon || colon == l.p || is_space(l.p[0])) {
            errf(err, errlen, "'%s' line %d: expected 'Name: value'", label, l.no);
            return -1;
        }
        view name = {l.p, (size_t)(colon - l.p)};
        size_t fi = NMFIELDS;
        for (size_t i = 0; i < NMFIELDS; i++)
            if (view_eq(name, mfields[i].name)) fi = i;
        if (fi == NMFIELDS) continue;
        if (seen[fi]) {
            errf(err, errlen, "'%s' line %d: '%s' appears twice", label, l.no, mfields[fi].name);
            return -1;
        }
        seen[fi] = true;

        line rest = {colon + 1, l.len - (size_t)(colon + 1 - l.p), l.no};
        size_t pos = 0;
        view num, unit, extra;
        if (!next_word(&rest, &pos, &num)) {
            errf(err, errlen, "'%s' line %d: '%s' has no value", label, l.no, mfields[fi].name);
            return -1;
        }
        bool has_unit = next_word(&rest, &pos, &unit);
        if (next_word(&rest, &pos, &extra) || (has_unit && !view_eq(unit, "kB")) ||
            has_unit != mfields[fi].kb) {
            errf(err, errlen, "'%s' line %d: '%s' expected %s", label, l.no, mfields[fi].name,
                 mfields[fi].kb ? "'N kB'" : "a bare count");
            return -1;
        }
        uint64_t v;
        int rc = parse_u64(num, &v);
        if (rc == 0 && mfields[fi].kb && v > UINT64_MAX / 1024) rc = -2;
        if (rc < 0) {
            errf(err, errlen, "'%s' line %d: '%s' value " WORD_FMT " is %s", label, l.no,
                 mfields[fi].name, WORD_ARG(num), rc == -2 ? "too large" : "not a number");
            return -1;
        }
        t[fi] = mfields[fi].kb ? v * 1024 : v;
    }
    if (!any) {
        errf(err, errlen, "'%s' is empty", label);
        return -1;
    }
    for (size_t i = 0; i < NMFIELDS; i++) {
        if (mfields[i].required && !seen[i]) {
            errf(err, errlen, "'%s': no '%s' line%s", label, mfields[i].name,
                 strcmp(mfields[i].name, "MemAvailable") == 0 ? " (it needs Linux 3.14 or newer)"
                                                              : "");
            return -1;
        }
    }
    /* HugePages_* are page counts; host_mem holds bytes throughout. */
    uint64_t *hp_total = &t[mfield_at(offsetof(host_mem, hugepages_total))],
             *hp_free = &t[mfield_at(offsetof(host_mem, hugepages_free))],
             hp_size = t[mfield_at(offsetof(host_mem, hugepage_size))];
    if (__builtin_mul_overflow(*hp_total, hp_size, hp_total) || __builtin_mul_overflow(*hp_free, hp_size, hp_free)) {
        errf(err, errlen, "'%s': huge page bytes overflow 64 bits", label);
        return -1;
    }
    for (size_t i = 0; i < NMFIELDS; i++)
        *mfield_ptr(m, i) = t[i];
    m->meminfo_ok = true;
    return 0;
}

int procmem_parse_meminfo(host_mem *m, const char *text, char *err, size_t errlen)
{
    return parse_meminfo(m, text, "meminfo", err, errlen);
}

/* ---- /proc/buddyinfo ---- */

static void buddyinfo_clear(host_mem *m, uint64_t page_size)
{
    memset(m->zones, 0, sizeof m->zones);
    memset(m->order_count, 0, sizeof m->order_count);
    m->nzones = 0;
    m->norders = 0;
    m->page_size = page_size;
    m->contig_2m_bytes = 0;
    m->order_2m = 0;
    m->contig_bytes = 0;
    m->order_contig = 0;
    m->buddy_free_bytes = 0;
    m->unusable_index_2m = -1;
    m->buddyinfo_ok = false;
    m->zones_all = false;
}

/* "Node N, zone NAME c0 c1 ... cK" into z. */
static int parse_zone(const line *l, buddy_zone *z, const char *label, char *err, size_t errlen)
{
    size_t pos = 0;
    view w, node, name;
    uint64_t nodeno;

    if (!next_word(l, &pos, &w) || !view_eq(w, "Node") || !next_word(l, &pos, &node) ||
        node.len < 2 || node.p[node.len - 1] != ',' ||
        parse_u64((view){node.p, node.len - 1}, &nodeno) != 0 || nodeno > INT32_MAX ||
        !next_word(l, &pos, &w) || !view_eq(w, "zone") || !next_word(l, &pos, &name)) {
        errf(err, errlen, "'%s' line %d: expected 'Node N, zone NAME counts...'", label, l->no);
        return -1;
    }
    if (name.len >= sizeof z->zone) {
        errf(err, errlen, "'%s' line %d: zone name " WORD_FMT " is too long", label, l->no,
             WORD_ARG(name));
        return -1;
    }
    z->node = (int)nodeno;
    memcpy(z->zone, name.p, name.len);
    z->zone[name.len] = '\0';
    z->norders = 0;
    while (next_word(l, &pos, &w)) {
        if (z->norders == HOST_MAX_ORDERS) {
            errf(err, errlen, "'%s' line %d: zone '%s' has more than %d orders", label, l->no,
                 z->zone, HOST_MAX_ORDERS);
            return -1;
        }
        int rc = parse_u64(w, &z->count[z->norders]);
        if (rc < 0) {
            errf(err, errlen, "'%s' line %d: zone '%s' order %zu count " WORD_FMT " is %s", label,
                 l->no, z->zone, z->norders, WORD_ARG(w), rc == -2 ? "too large" : "not a number");
            return -1;
        }
        z->norders++;
    }
    if (z->norders == 0) {
        errf(err, errlen, "'%s' line %d: zone '%s' has no counts", label, l->no, z->zone);
        return -1;
    }
    return 0;
}

static bool zone_counted(const char *zone)
{
    return !strcmp(zone, "Normal") || !strcmp(zone, "Movable");
}

/* The order of a block of `bytes` at this page size (0 when a page is
 * already that large). */
static int order_of(uint64_t page_size, uint64_t bytes)
{
    int o = 0;
    while (o < 63 && (page_size << o) < bytes)
        o++;
    return o;
}

/* Free bytes on the buddy lists of every zone, counted or not: compared
 * with MemFree, it says whether the lists account for the free memory
 * (a VM, or a large host whose memory the kernel initialises lazily,
 * keeps most of it off the lists at first).  -1 on overflow. */
static int all_zones_bytes(const host_mem *m, uint64_t *out)
{
    uint64_t pages = 0;
    for (size_t k = 0; k < m->nzones; k++)
        for (size_t i = 0; i < m->zones[k].norders; i++) {
            uint64_t p;
            if (__builtin_mul_overflow(m->zones[k].count[i], (uint64_t)1 << i, &p) ||
                __builtin_add_overflow(pages, p, &pages))
                return -1;
        }
    return __builtin_mul_overflow(pages, m->page_size, out) ? -1 : 0;
}

static int parse_buddyinfo(host_mem *m, const char *text, uint64_t page_size, const char *label,
                           char *err, size_t errlen)
{
    line l = {0};
    const char *cur = text;

    buddyinfo_clear(m, page_size);
    if (page_size == 0 || (page_size & (page_size - 1)) != 0) {
        errf(err, errlen, "'%s': page size %llu is not a power of two", label,
             (unsigned long long)page_size);
        return -1;
    }
    while (next_line(&cur, &l)) {
        if (blank(&l)) continue;
        if (m->nzones == HOST_MAX_ZONES) {
            errf(err, errlen, "'%s' line %d: more than %d zones", label, l.no, HOST_MAX_ZONES);
            goto fail;
        }
        buddy_zone *z = &m->zones[m->nzones];
        if (parse_zone(&l, z, label, err, errlen) < 0) goto fail;
        /* The kernel prints NR_PAGE_ORDERS columns for every zone, so a
         * short line is a truncated read, not a small zone. */
        if (m->nzones > 0 && z->norders != m->norders) {
            errf(err, errlen, "'%s' line %d: zone '%s' has %zu orders, the zones above have %zu",
                 label, l.no, z->zone, z->norders, m->norders);
            goto fail;
        }
        m->norders = z->norders;
        m->nzones++;
    }
    if (m->nzones == 0) {
        errf(err, errlen, "'%s' is empty", label);
        goto fail;
    }
    /* The zones that serve the driver's GFP_KERNEL chunks in practice:
     * Normal and Movable (memory.md 6.4).  DMA32 (the first 4 GiB on
     * x86-64) is a fallback whose free blocks would make a fragmented
     * Normal zone look healthy; DMA is tiny.  A host with neither (some
     * 32-bit or odd layouts) counts every zone. */
    bool any_counted = false;
    for (size_t k = 0; k < m->nzones; k++)
        any_counted |= zone_counted(m->zones[k].zone);
    m->zones_all = !any_counted;
    for (size_t k = 0; k < m->nzones; k++) {
        const buddy_zone *z = &m->zones[k];
        if (any_counted && !zone_counted(z->zone)) continue;
        for (size_t i = 0; i < z->norders; i++) {
            if (__builtin_add_overflow(m->order_count[i], z->count[i], &m->order_count[i])) {
                errf(err, errlen, "'%s': order %zu counts overflow 64 bits", label, i);
                goto fail;
            }
        }
    }

    /* 2 MiB: the NVIDIA driver's large allocation chunk (memory.md 4.3),
     * shown with its unusable index.  The gate counts from
     * HOST_CONTIG_BLOCK (host.h).  A page that large makes every free
     * block qualify. */
    int o = order_of(page_size, MIB_2);
    m->order_2m = o;
    m->order_contig = order_of(page_size, HOST_CONTIG_BLOCK);

    /* mm/vmstat.c unusable_free_index(), over the counted zones summed:
     * (free_pages - free_blocks_suitable << o) / free_pages.  The
     * suitable pages are exactly those in blocks of order >= o. */
    uint64_t free_pages = 0, suitable_pages = 0, contig_pages = 0;
    for (size_t i = 0; i < m->norders; i++) {
        uint64_t pages;
        if (__builtin_mul_overflow(m->order_count[i], (uint64_t)1 << i, &pages) ||
            __builtin_add_overflow(free_pages, pages, &free_pages) ||
            ((int)i >= o && __builtin_add_overflow(suitable_pages, pages, &suitable_pages)) ||
            ((int)i >= m->order_contig && __builtin_add_overflow(contig_pages, pages, &contig_pages))) {
            errf(err, errlen, "'%s': free pages overflow 64 bits", label);
            goto fail;
        }
    }
    if (__builtin_mul_overflow(suitable_pages, page_size, &m->contig_2m_bytes) ||
        __builtin_mul_overflow(contig_pages, page_size, &m->contig_bytes) ||
        all_zones_bytes(m, &m->buddy_free_bytes) < 0) {
        errf(err, errlen, "'%s': free bytes overflow 64 bits", label);
        goto fail;
    }
    m->unusable_index_2m =
        free_pages ? (double)(free_pages - suitable_pages) / (double)free_pages : -1;
    m->buddyinfo_ok = true;
    return 0;

fail:
    buddyinfo_clear(m, page_size);
    return -1;
}

int procmem_parse_buddyinfo(host_mem *m, const char *text, uint64_t page_size, char *err,
                            size_t errlen)
{
    return parse_buddyinfo(m, text, page_size, "buddyinfo", err, errlen);
}

/* ---- /proc/pressure/memory ---- */

/* "12.34": what the kernel prints (LOAD_INT.LOAD_FRAC), 0..100. */
static int parse_pct(view v, double *out)
{
    uint64_t ip = 0, fp = 0;
    size_t dot = 0;
    while (dot < v.len && v.p[dot] != '.')
        dot++;
    if (dot == 0 || dot > 3 || parse_u64((view){v.p, dot}, &ip) != 0) return -1;
    double frac = 0;
    if (dot < v.len) {
        view f = {v.p + dot + 1, v.len - dot - 1};
        if (f.len == 0 || f.len > 6 || parse_u64(f, &fp) != 0) return -1;
        double scale = 1;
        for (size_t i = 0; i < f.len; i++)
            scale *= 10;
        frac = (double)fp / scale;
    }
    double x = (double)ip + frac;
    if (x > 100) return -1;
    *out = x;
    return 0;
}

static void psi_clear(host_mem *m)
{
    m->psi_some_avg10 = m->psi_some_avg60 = m->psi_some_avg300 = 0;
    m->psi_full_avg10 = m->psi_full_avg60 = m->psi_full_avg300 = 0;
    m->psi_ok = false;
}

/* "some avg10=0.00 avg60=0.00 avg300=0.00 total=0": avg into a[3]. */
static int parse_psi_line(const line *l, view kind, size_t pos, double a[3], const char *label,
                          char *err, size_t errlen)
{
    static const char *const keys[3] = {"avg10", "avg60", "avg300"};
    bool seen[3] = {false}, total = false;
    view w;

    while (next_word(l, &pos, &w)) {
        const char *eq = memchr(w.p, '=', w.len);
        if (!eq || eq == w.p) {
            errf(err, errlen, "'%s' line %d: expected 'key=value', got " WORD_FMT, label, l->no,
                 WORD_ARG(w));
            return -1;
        }
        view key = {w.p, (size_t)(eq - w.p)};
        view val = {eq + 1, w.len - key.len - 1};
        if (view_eq(key, "total")) {
            uint64_t us;
            if (parse_u64(val, &us) != 0) {
                errf(err, errlen, "'%s' line %d: 'total' value " WORD_FMT " is not a number", label,
                     l->no, WORD_ARG(val));
                return -1;
            }
            total = true;
            continue;
        }
        for (int k = 0; k < 3; k++) {
            if (!view_eq(key, keys[k])) continue;
            if (parse_pct(val, &a[k]) < 0) {
                errf(err, errlen, "'%s' line %d: '%s' value " WORD_FMT " is not a percentage",
                     label, l->no, keys[k], WORD_ARG(val));
                return -1;
            }
            seen[k] = true;
        }
        /* another key: a newer kernel's addition, not an error */
    }
    for (int k = 0; k < 3; k++) {
        if (!seen[k]) {
            errf(err, errlen, "'%s' line %d: '%.*s' has no '%s'", label, l->no, (int)kind.len,
                 kind.p, keys[k]);
            return -1;
        }
    }
    if (!total) {
        errf(err, errlen, "'%s' line %d: '%.*s' has no 'total'", label, l->no, (int)kind.len,
             kind.p);
        return -1;
    }
    return 0;
}

static int parse_psi(host_mem *m, const char *text, const char *label, char *err, size_t errlen)
{
    double some[3] = {0}, full[3] = {0};
    bool have_some = false, have_full = false, any = false;
    line l = {0};
    const char *cur = text;

    psi_clear(m);
    while (next_line(&cur, &l)) {
        if (blank(&l)) continue;
        any = true;
        size_t pos = 0;
        view kind;
        next_word(&l, &pos, &kind);
        bool is_some = view_eq(kind, "some"), is_full = view_eq(kind, "full");
        if (!is_some && !is_full) {
            errf(err, errlen, "'%s' line %d: expected 'some' or 'full', got " WORD_FMT, label, l.no,
                 WORD_ARG(kind));
            return -1;
        }
        if ((is_some && have_some) || (is_full && have_full)) {
            errf(err, errlen, "'%s' line %d: '%.*s' appears twice", label, l.no, (int)kind.len,
                 kind.p);
            return -1;
        }
        if (parse_psi_line(&l, kind, pos, is_some ? some : full, label, err, errlen) < 0) return -1;
        if (is_some)
            have_some = true;
        else
            have_full = true;
    }
    if (!any) {
        errf(err, errlen, "'%s' is empty", label);
        return -1;
    }
    /* Memory has had both lines since PSI began (4.20); one missing is a
     * truncated read. */
    if (!have_some || !have_full) {
        errf(err, errlen, "'%s': no '%s' line", label, have_some ? "full" : "some");
        return -1;
    }
    m->psi_some_avg10 = some[0];
    m->psi_some_avg60 = some[1];
    m->psi_some_avg300 = some[2];
    m->psi_full_avg10 = full[0];
    m->psi_full_avg60 = full[1];
    m->psi_full_avg300 = full[2];
    m->psi_ok = true;
    return 0;
}

int procmem_parse_psi(host_mem *m, const char *text, char *err, size_t errlen)
{
    return parse_psi(m, text, "pressure/memory", err, errlen);
}

/* ---- the readers ---- */

static const char *proc_root_or_default(const char *proc_root)
{
    if (proc_root && *proc_root) return proc_root;
    const char *e = getenv("GPUMOD_PROC_ROOT");
    return e && *e ? e : "/proc";
}

/* Load proc_root/rel into b.  0 ok; -1 error in err; -2 the file does
 * not exist (errno kept), which only the PSI reader forgives. */
static int load(const char *proc_root, const char *rel, char *path, size_t pathlen, buf *b,
                char *err, size_t errlen)
{
    int n = snprintf(path, pathlen, "%s/%s", proc_root_or_default(proc_root), rel);
    if (n < 0 || (size_t)n >= pathlen) {
        const char *root = proc_root_or_default(proc_root);
        errf(err, errlen, "proc root '%.64s%s' is too long", root, strlen(root) > 64 ? "..." : "");
        return -1;
    }
    if (slurp_text(path, PROC_FILE_MAX, b, err, errlen) == 0) return 0;
    /* absent, or PSI compiled in but disabled (psi=0: EOPNOTSUPP) */
    return (errno == ENOENT || errno == ENOTSUP) ? -2 : -1;
}

int procmem_read_meminfo(host_mem *m, const char *proc_root, char *err, size_t errlen)
{
    char path[4096];
    buf b = BUF_INIT;
    int rc = load(proc_root, "meminfo", path, sizeof path, &b, err, errlen);
    if (rc == 0)
        rc = parse_meminfo(m, b.p, path, err, errlen);
    else
        meminfo_clear(m);
    buf_release(&b);
    return rc < 0 ? -1 : 0;
}

int procmem_read_buddyinfo(host_mem *m, const char *proc_root, char *err, size_t errlen)
{
    char path[4096];
    buf b = BUF_INIT;
    long ps = sysconf(_SC_PAGESIZE);
    uint64_t page_size = ps > 0 ? (uint64_t)ps : 0;
    int rc = load(proc_root, "buddyinfo", path, sizeof path, &b, err, errlen);
    if (rc == 0)
        rc = parse_buddyinfo(m, b.p, page_size, path, err, errlen);
    else
        buddyinfo_clear(m, page_size);
    buf_release(&b);
    return rc < 0 ? -1 : 0;
}

/* A kernel without PSI (or booted psi=0) has no file: psi_ok stays false
 * and that is no error, the gate then skips the pressure rule. */
int procmem_read_psi(host_mem *m, const char *proc_root, char *err, size_t errlen)
{
    char path[4096];
    buf b = BUF_INIT;
    int rc = load(proc_root, "pressure/memory", path, sizeof path, &b, err, errlen);
    if (rc == 0)
        rc = parse_psi(m, b.p, path, err, errlen);
    else
        psi_clear(m);
    buf_release(&b);
    if (rc == -2) {
        if (err && errlen) err[0] = '\0';
        return 0;
    }
    return rc < 0 ? -1 : 0;
}
