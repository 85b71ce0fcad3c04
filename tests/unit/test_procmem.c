/* test_procmem.c - the /proc readers on every fixture (tests/fixtures/proc:
 * the real healthy host and the hand-made failure cases, whose numbers
 * are in their READMEs), on hostile text (garbage, truncation at every
 * byte, huge numbers, too many orders or zones, empty files) and on
 * hostile files (a directory, a FIFO, a NUL byte, a missing PSI file). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/contig.h"
#include "core/gate.h"
#include "host/host.h"
#include "util/buf.h"

#define KB 1024ull
#define MIB (1024ull * 1024)

static const char *fixture(const char *name)
{
    static char path[1024];
    const char *src = getenv("GPUMOD_SRC");
    snprintf(path, sizeof path, "%s/tests/fixtures/proc/%s", src ? src : ".", name);
    return path;
}

/* The text of fixture dir/file; caller frees. */
static char *slurp(const char *dir, const char *file)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", fixture(dir), file);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("cannot open %s (run from the repository root or set GPUMOD_SRC)", path);
    buf b = BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_add(&b, chunk, n);
    fclose(f);
    return buf_detach(&b);
}

static void read_all(host_mem *m, const char *name)
{
    char err[512] = "";
    memset(m, 0, sizeof *m);
    if (procmem_read_meminfo(m, fixture(name), err, sizeof err) < 0) fail_msg("%s", err);
    if (procmem_read_buddyinfo(m, fixture(name), err, sizeof err) < 0) fail_msg("%s", err);
    if (procmem_read_psi(m, fixture(name), err, sizeof err) < 0) fail_msg("%s", err);
    assert_true(m->meminfo_ok);
    assert_true(m->buddyinfo_ok);
    assert_int_equal(m->page_size, (uint64_t)sysconf(_SC_PAGESIZE));
}

/* buddyinfo of fixture name parsed at the page size it was taken at */
static void parse_buddy(host_mem *m, const char *name, uint64_t page_size)
{
    char err[512] = "";
    char *text = slurp(name, "buddyinfo");
    if (procmem_parse_buddyinfo(m, text, page_size, err, sizeof err) < 0) fail_msg("%s", err);
    free(text);
}

/* free bytes in the counted zones (Normal and Movable; all when neither) */
static uint64_t free_bytes(const host_mem *m)
{
    uint64_t pages = 0;
    for (size_t i = 0; i < m->norders; i++)
        pages += m->order_count[i] << i;
    return pages * m->page_size;
}

/* free bytes in every zone: the kernel's MemFree */
static uint64_t all_zone_bytes(const host_mem *m)
{
    uint64_t pages = 0;
    for (size_t z = 0; z < m->nzones; z++)
        for (size_t i = 0; i < m->zones[z].norders; i++)
            pages += m->zones[z].count[i] << i;
    return pages * m->page_size;
}

static void assert_close(double got, double want)
{
    if (got < want - 1e-6 || got > want + 1e-6) fail_msg("%.9f != %.9f", got, want);
}

/* ---- fixtures ---- */

static void healthy_real_numbers(void **state)
{
    (void)state;
    host_mem m;
    read_all(&m, "healthy");
    assert_int_equal(m.mem_total, 24684092 * KB);
    assert_int_equal(m.mem_free, 24219960 * KB);
    assert_int_equal(m.mem_available, 24346604 * KB);
    assert_int_equal(m.buffers, 2348 * KB);
    assert_int_equal(m.cached, 327508 * KB);
    assert_int_equal(m.swap_total, 0);
    assert_int_equal(m.swap_free, 0);
    assert_int_equal(m.shmem, 8856 * KB);
    assert_int_equal(m.anon_pages, 7844 * KB);
    assert_int_equal(m.mlocked, 10736 * KB);
    assert_int_equal(m.hugepages_total, 0);
    assert_int_equal(m.hugepage_size, 2048 * KB);
    assert_true(m.psi_ok);
    assert_close(m.psi_some_avg10, 0);
    assert_close(m.psi_full_avg300, 0);

    parse_buddy(&m, "healthy", 4096);
    assert_int_equal(m.nzones, 3);
    assert_int_equal(m.norders, 11);
    assert_string_equal(m.zones[0].zone, "DMA");
    assert_string_equal(m.zones[1].zone, "DMA32");
    assert_string_equal(m.zones[2].zone, "Normal");
    assert_int_equal(m.zones[2].node, 0);
    assert_int_equal(m.zones[2].norders, 11);
    assert_int_equal(m.zones[2].count[0], 4167);
    assert_int_equal(m.zones[2].count[10], 636);
    /* only the Normal zone counts: DMA and DMA32 are left out */
    assert_false(m.zones_all);
    const uint64_t oc[11] = {4167, 1535, 968, 257, 124, 127, 112, 49, 15, 6, 636};
    for (int i = 0; i < 11; i++)
        assert_int_equal(m.order_count[i], oc[i]);
    assert_int_equal(m.order_2m, 9);
    /* Normal, in pages: orders 0-8 4167 + 1535*2 + 968*4 + 257*8 + 124*16
     * + 127*32 + 112*64 + 49*128 + 15*256 = 36493; orders 9-10 6*512 +
     * 636*1024 = 654336 (x 4096 = 2680160256 bytes, 2556 MiB); free
     * 36493 + 654336 = 690829 pages = 2829635584 bytes.  (All zones,
     * DMA32's 752 order-10 blocks included, would be 5582 MiB.) */
    assert_int_equal(free_bytes(&m), 2829635584ull);
    assert_int_equal(m.contig_2m_bytes, 2680160256ull);
    assert_close(m.unusable_index_2m, 36493.0 / 690829.0);
}

static void short_fixture(void **state)
{
    (void)state;
    host_mem m;
    read_all(&m, "short");
    assert_int_equal(m.mem_total, 24684092 * KB);
    assert_int_equal(m.mem_available, 1978940 * KB);
    assert_int_equal(m.mem_available / MIB, 1932);
    assert_int_equal(m.swap_total, 0);
    assert_close(m.psi_some_avg10, 1.21);
    assert_close(m.psi_full_avg10, 0.40);
    parse_buddy(&m, "short", 4096);
    assert_int_equal(all_zone_bytes(&m), m.mem_free); /* the kernel's own identity */
    /* Normal: 12*512 + 41*1024 = 48128 pages x 4096 (188 MiB) */
    assert_int_equal(m.contig_2m_bytes, 197132288ull);
}

static void fragmented_fixture(void **state)
{
    (void)state;
    host_mem m;
    read_all(&m, "fragmented");
    assert_int_equal(m.mem_available, 20761929 * KB);
    assert_true(m.mem_available > 19 * 1024 * MIB);
    parse_buddy(&m, "fragmented", 4096);
    assert_int_equal(all_zone_bytes(&m), m.mem_free);
    /* the Normal zone's counts: 212/41/9/3/1 blocks of order 4-8, none above */
    assert_int_equal(m.order_count[9], 0);
    assert_int_equal(m.order_count[10], 0);
    assert_int_equal(m.order_count[8], 1);
    assert_int_equal(m.order_count[4], 212);
    assert_int_equal(m.contig_2m_bytes, 0);
    assert_close(m.unusable_index_2m, 1.0);
}

static void pressured_fixture(void **state)
{
    (void)state;
    host_mem m;
    read_all(&m, "pressured");
    assert_true(m.psi_ok);
    assert_close(m.psi_some_avg10, 34.87);
    assert_close(m.psi_some_avg60, 29.12);
    assert_close(m.psi_some_avg300, 17.45);
    assert_close(m.psi_full_avg10, 12.31);
    assert_close(m.psi_full_avg60, 9.80);
    assert_close(m.psi_full_avg300, 5.02);
    assert_int_equal(m.swap_total, 8388604 * KB);
    assert_int_equal(m.swap_free, 3143772 * KB);
    assert_int_equal(m.mem_available, 4958169 * KB);
    parse_buddy(&m, "pressured", 4096);
    assert_int_equal(all_zone_bytes(&m), m.mem_free);
    /* Normal: 120*512 + 532*1024 = 606208 pages x 4096 (2368 MiB) */
    assert_int_equal(m.contig_2m_bytes, 2483027968ull);
}

static void unified_short_fixture(void **state)
{
    (void)state;
    host_mem m;
    read_all(&m, "unified-short");
    assert_int_equal(m.mem_total, 124583456 * KB);
    assert_int_equal(m.mem_available, 18955419 * KB);
    assert_int_equal(m.mem_available / MIB, 18511);
    parse_buddy(&m, "unified-short", 4096);
    assert_int_equal(m.nzones, 3);
    assert_string_equal(m.zones[0].zone, "DMA");
    assert_string_equal(m.zones[1].zone, "DMA32");
    assert_string_equal(m.zones[2].zone, "Normal");
    assert_int_equal(all_zone_bytes(&m), m.mem_free);
    /* Normal: 96*512 + 610*1024 = 673792 pages x 4096 (2632 MiB) */
    assert_int_equal(m.contig_2m_bytes, 2759852032ull);
}

/* The same counts at 64 KiB and at 4 KiB: only the page size moves the
 * 2 MiB order and the bytes. */
static void arm64_64k_page_size(void **state)
{
    (void)state;
    host_mem m;
    read_all(&m, "arm64-64k");
    assert_int_equal(m.hugepage_size, 524288 * KB);
    assert_int_equal(m.mem_available, 115402747 * KB);

    parse_buddy(&m, "arm64-64k", 65536);
    assert_int_equal(m.page_size, 65536);
    assert_int_equal(m.nzones, 2);
    assert_int_equal(m.norders, 14);
    assert_int_equal(m.zones[1].count[13], 170);
    assert_int_equal(m.order_count[13], 170); /* Normal only: DMA's 5 left out */
    assert_int_equal(m.order_2m, 5);
    assert_int_equal(all_zone_bytes(&m), 113423155200ull);
    assert_int_equal(all_zone_bytes(&m), m.mem_free);
    /* Normal, in 64 KiB pages: orders 0-4 1204 + 802*2 + 611*4 + 402*8 +
     * 288*16 = 13076; orders 5-13 190*32 + 151*64 + 98*128 + 77*256 +
     * 60*512 + 41*1024 + 30*2048 + 22*4096 + 170*8192 = 1664896
     * (x 65536 = 109110624256 bytes, 104056 MiB); free 1677972 pages
     * = 109967572992 bytes */
    assert_int_equal(free_bytes(&m), 109967572992ull);
    assert_int_equal(m.contig_2m_bytes, 109110624256ull);
    assert_close(m.unusable_index_2m, 13076.0 / 1677972.0);

    /* at 4 KiB: orders 9-13 60*512 + 41*1024 + 30*2048 + 22*4096 +
     * 170*8192 = 1616896 pages x 4096 = 6622806016; free 1677972 x 4096 */
    parse_buddy(&m, "arm64-64k", 4096);
    assert_int_equal(m.order_2m, 9);
    assert_int_equal(all_zone_bytes(&m), 7088947200ull);
    assert_int_equal(free_bytes(&m), 6872973312ull);
    assert_int_equal(m.contig_2m_bytes, 6622806016ull);

    /* 16 KiB pages: 2 MiB is order 7 */
    parse_buddy(&m, "arm64-64k", 16384);
    assert_int_equal(m.order_2m, 7);

    /* a page of 2 MiB or more: every free block is >= 2 MiB */
    parse_buddy(&m, "arm64-64k", 4 * MIB);
    assert_int_equal(m.order_2m, 0);
    assert_int_equal(m.contig_2m_bytes, free_bytes(&m));
    assert_close(m.unusable_index_2m, 0);
}

static void no_psi_fixture(void **state)
{
    (void)state;
    host_mem m;
    char err[512] = "x";
    memset(&m, 0, sizeof m);
    m.psi_ok = true;
    m.psi_some_avg10 = 50;
    assert_int_equal(procmem_read_psi(&m, fixture("no-psi"), err, sizeof err), 0);
    assert_false(m.psi_ok);
    assert_close(m.psi_some_avg10, 0);
    assert_string_equal(err, "");
    assert_int_equal(procmem_read_meminfo(&m, fixture("no-psi"), err, sizeof err), 0);
    assert_int_equal(m.mem_available, 20810900 * KB);
    assert_int_equal(procmem_read_buddyinfo(&m, fixture("no-psi"), err, sizeof err), 0);
}

/* proc_root NULL: $GPUMOD_PROC_ROOT, as the snapshot and e2e tests use */
static void proc_root_from_env(void **state)
{
    (void)state;
    host_mem m;
    char err[512] = "";
    memset(&m, 0, sizeof m);
    setenv("GPUMOD_PROC_ROOT", fixture("short"), 1);
    assert_int_equal(procmem_read_meminfo(&m, NULL, err, sizeof err), 0);
    unsetenv("GPUMOD_PROC_ROOT");
    assert_int_equal(m.mem_available, 1978940 * KB);
}

/* The "for the gate" column of tests/fixtures/proc/README.md: each tree,
 * read as the snapshot reads it, binds the rule it was made for under the
 * default memory: policy. */
static void fixture_binding_as(const char *name, uint64_t page_size, bool unified, bool driver, bool pageable,
                               uint64_t gpu_need, const char *want)
{
    snapshot s;
    memset(&s, 0, sizeof s);
    read_all(&s.host, name);
    parse_buddy(&s.host, name, page_size);
    s.nvml = driver ? NVML_OK : NVML_ABSENT;
    s.nvidia_driver = driver;
    gpu_dev *d = &s.gpus[s.ngpus++];
    d->unified = unified;
    d->total_bytes = unified ? s.host.mem_total : 80ull << 30;
    d->free_bytes = unified ? s.host.mem_available : 79ull << 30;
    gate_policy p = {.host_factor = 1.1,
                     .host_margin_bytes = 1024 * MIB,
                     .gpu_margin_bytes = 1024 * MIB,
                     .uma_reserve_bytes = 8192 * MIB,
                     .min_contig_bytes = 2048 * MIB,
                     .psi_some_avg10_max = 10};
    need n;
    memset(&n, 0, sizeof n);
    snprintf(n.source, sizeof n.source, "declared");
    n.host_bytes = 2048 * MIB;
    n.pageable_host = pageable;
    if (gpu_need) {
        n.ngpu = 1;
        n.gpu[0].bytes = gpu_need;
    }
    verdict v;
    gate_check(&s, &n, NULL, 0, "svc", &p, &v);
    if (strcmp(v.binding, want) != 0)
        fail_msg("%s: got '%s' (%s), want '%s'", name, v.binding, v.reason, want);
    assert_int_equal(v.ok, want[0] == '\0');
}

/* a service that pins host memory (vLLM, an unknown command) */
static void fixture_binding(const char *name, uint64_t page_size, bool unified, bool driver, uint64_t gpu_need,
                            const char *want)
{
    fixture_binding_as(name, page_size, unified, driver, false, gpu_need, want);
}

static void fixtures_through_the_gate(void **state)
{
    (void)state;
    /* a VM's lists (5.6 of 23.1 GiB free): contiguity unknown, admitted */
    fixture_binding("healthy", 4096, false, true, 20480 * MIB, "");
    fixture_binding("short", 4096, false, true, 0, "host.mem_available");
    fixture_binding("fragmented", 4096, false, true, 4096 * MIB, "host.contig");
    fixture_binding("fragmented", 4096, false, false, 0, "");
    /* the seed's host: order_6 = 0 refuses an engine that pins, not one
     * that does not (llama.cpp under GGML_CUDA_NO_PINNED); healthy, both */
    fixture_binding("seed-fragmented", 4096, false, true, 4096 * MIB, "host.contig");
    fixture_binding_as("seed-fragmented", 4096, false, true, true, 4096 * MIB, "");
    fixture_binding("seed-healthy", 4096, false, true, 4096 * MIB, "");
    fixture_binding("pressured", 4096, false, true, 0, "host.psi");
    fixture_binding("unified-short", 4096, true, true, 16384 * MIB, "unified.0.mem_available");
    fixture_binding("arm64-64k", 65536, true, true, 40960 * MIB, "");
    fixture_binding("no-psi", 4096, false, true, 0, "");
}

/* The contiguity figures of the fixtures built from the seed's report and
 * of the H200 the daemon ran on (tests/fixtures/device/h200): the seed's
 * lists add up to MemFree exactly and are judged; the H200's hold 3 GiB
 * of its 124 GiB free, so the rule is unknown there. */
static void contig_figures(void **state)
{
    (void)state;
    host_mem m;
    char err[512] = "", why[256];
    read_all(&m, "seed-fragmented");
    assert_int_equal(m.order_contig, 6);
    assert_int_equal(m.order_count[4], 23);
    assert_int_equal(m.order_count[5], 4);
    assert_int_equal(m.order_count[6], 0);
    assert_int_equal(m.contig_bytes, 0);
    assert_int_equal(m.buddy_free_bytes, m.mem_free);
    assert_true(contig_known(&m, why, sizeof why));
    read_all(&m, "seed-healthy");
    assert_int_equal(m.contig_bytes, 10650ull * MIB);
    assert_int_equal(m.buddy_free_bytes, m.mem_free);
    assert_true(contig_known(&m, why, sizeof why));
    read_all(&m, "fragmented");
    assert_int_equal(m.contig_bytes, 1216ull * 4096); /* 9, 3, 1 blocks of order 6, 7, 8 */

    char dir[1024];
    const char *src = getenv("GPUMOD_SRC");
    snprintf(dir, sizeof dir, "%s/tests/fixtures/device/h200", src ? src : ".");
    memset(&m, 0, sizeof m);
    if (procmem_read_meminfo(&m, dir, err, sizeof err) < 0) fail_msg("%s", err);
    char *text = slurp("../device/h200", "buddyinfo");
    assert_non_null(text);
    assert_int_equal(procmem_parse_buddyinfo(&m, text, 4096, err, sizeof err), 0);
    free(text);
    assert_false(contig_known(&m, why, sizeof why));
    assert_string_equal(why, "the buddy lists hold 3174 MiB of 127618 MiB MemFree: the kernel has not put the rest "
                             "on its free lists (lazily initialised memory), so they cannot tell fragmentation");
}

/* ---- which zones count (memory.md 6.4) ---- */

#define DMA_LINE                                                                                   \
    "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1 " \
    "     3 \n"


/* healthy's meminfo and PSI, buddyinfo text, a host need of 2048 MiB and
 * no GPU need, through the gate under the default memory: policy */
static void gate_on_buddy(const char *text, bool driver, verdict *v)
{
    snapshot s;
    char err[512] = "";
    memset(&s, 0, sizeof s);
    read_all(&s.host, "healthy");
    if (procmem_parse_buddyinfo(&s.host, text, 4096, err, sizeof err) < 0) fail_msg("%s", err);
    s.host.mem_free = s.host.buddy_free_bytes; /* these lists are the whole of MemFree */
    s.nvml = driver ? NVML_OK : NVML_ABSENT;
    s.nvidia_driver = driver;
    gate_policy p = {.host_factor = 1.1,
                     .host_margin_bytes = 1024 * MIB,
                     .gpu_margin_bytes = 1024 * MIB,
                     .uma_reserve_bytes = 8192 * MIB,
                     .min_contig_bytes = 2048 * MIB,
                     .psi_some_avg10_max = 10};
    need n;
    memset(&n, 0, sizeof n);
    snprintf(n.source, sizeof n.source, "declared");
    n.host_bytes = 2048 * MIB;
    gate_check(&s, &n, NULL, 0, "svc", &p, v);
}

#define DMA32_IDLE                                                                                 \
    "Node 0, zone    DMA32      1      2      4      2      5      4      3      3      4      2 " \
    "   752 \n"

/* An idle DMA32 zone (752 order-10 blocks, 3 GiB) beside a Normal zone with
 * no block of 2 MiB: refused.  Summed over every zone, as before, it had
 * DMA (1*512 + 3*1024 pages) + DMA32 (2*512 + 752*1024) = 774656 pages
 * = 3026 MiB >= 2048 and passed. */
static void dma32_does_not_hide_a_fragmented_normal(void **state)
{
    (void)state;
    const char *text = DMA_LINE DMA32_IDLE
        "Node 0, zone   Normal  142310  38211   8120   1630    212     41      9      3      1      0      0\n";
    host_mem m;
    char err[512] = "";
    assert_int_equal(procmem_parse_buddyinfo(&m, text, 4096, err, sizeof err), 0);
    assert_false(m.zones_all);
    assert_int_equal(m.nzones, 3);
    assert_int_equal(m.order_count[10], 0); /* DMA32's 752 and DMA's 3 left out */
    assert_int_equal(m.order_count[0], 142310);
    assert_int_equal(m.contig_2m_bytes, 0);
    assert_close(m.unusable_index_2m, 1.0);

    verdict v;
    gate_on_buddy(text, true, &v);
    assert_false(v.ok);
    assert_string_equal(v.binding, "host.contig");
    assert_string_equal(v.reason, "free memory in blocks >= 256 KiB 4 MiB < required 2048 MiB (host is fragmented, "
                                  "and this service pins host memory)");
    gate_on_buddy(text, false, &v); /* no NVIDIA driver: the rule does not apply */
    assert_true(v.ok);

    /* a Movable zone on another node counts, and adds to Normal: 600
     * order-10 blocks = 614400 pages = 2400 MiB */
    char *more = xasprintf("%sNode 1, zone  Movable 0 0 0 0 0 0 0 0 0 0 600\n", text);
    assert_int_equal(procmem_parse_buddyinfo(&m, more, 4096, err, sizeof err), 0);
    assert_false(m.zones_all);
    assert_int_equal(m.order_count[10], 600);
    assert_int_equal(m.order_count[0], 142310);
    assert_int_equal(m.contig_2m_bytes, 600ull * 1024 * 4096);
    gate_on_buddy(more, true, &v);
    assert_true(v.ok);
    free(more);
}

/* No Normal or Movable zone (a small board, some 32-bit layouts): every
 * zone counts, and zones_all says so.  DMA 1*512 + 3*1024 = 3584 pages,
 * DMA32 2*512 + 752*1024 = 771072: 774656 pages x 4096 = 3172990976 bytes
 * (3026 MiB), so the gate passes. */
static void no_normal_zone_counts_every_zone(void **state)
{
    (void)state;
    host_mem m;
    char err[512] = "";
    assert_int_equal(procmem_parse_buddyinfo(&m, DMA_LINE DMA32_IDLE, 4096, err, sizeof err), 0);
    assert_true(m.zones_all);
    assert_int_equal(m.order_count[10], 3 + 752);
    assert_int_equal(m.order_count[9], 1 + 2);
    assert_int_equal(m.contig_2m_bytes, 3172990976ull);
    assert_int_equal(free_bytes(&m), all_zone_bytes(&m));
    verdict v;
    gate_on_buddy(DMA_LINE DMA32_IDLE, true, &v);
    assert_true(v.ok);

    /* one Normal zone anywhere, even an empty one, switches to counting it alone */
    assert_int_equal(procmem_parse_buddyinfo(&m, DMA_LINE DMA32_IDLE
                                             "Node 1, zone Normal 0 0 0 0 0 0 0 0 0 0 0\n",
                                             4096, err, sizeof err),
                     0);
    assert_false(m.zones_all);
    assert_int_equal(m.contig_2m_bytes, 0);
    assert_close(m.unusable_index_2m, -1); /* no free page in the counted zones */
    /* a parse that fails leaves zones_all false */
    m.zones_all = true;
    assert_int_equal(procmem_parse_buddyinfo(&m, "garbage\n", 4096, err, sizeof err), -1);
    assert_false(m.zones_all);
}

/* ---- hostile meminfo ---- */

static void meminfo_err(const char *text, const char *want)
{
    host_mem m;
    char err[512] = "";
    memset(&m, 0xa5, sizeof m);
    if (procmem_parse_meminfo(&m, text, err, sizeof err) == 0) fail_msg("parsed: %s", text);
    assert_string_equal(err, want);
    assert_false(m.meminfo_ok);
    assert_int_equal(m.mem_available, 0); /* never a half-read, plausible-looking number */
}

#define MI_HEAD "MemTotal:       24684092 kB\nMemFree:        24219960 kB\n"

static void meminfo_hostile(void **state)
{
    (void)state;
    meminfo_err("", "'meminfo' is empty");
    meminfo_err("\n\n", "'meminfo' is empty");
    meminfo_err("hello world\n", "'meminfo' line 1: expected 'Name: value'");
    meminfo_err(MI_HEAD "\x01\xff\xfe garbage\n", "'meminfo' line 3: expected 'Name: value'");
    meminfo_err(": 12 kB\n", "'meminfo' line 1: expected 'Name: value'");
    meminfo_err(MI_HEAD, "'meminfo': no 'MemAvailable' line (it needs Linux 3.14 or newer)");
    meminfo_err("MemAvailable: 5 kB\n", "'meminfo': no 'MemTotal' line");
    meminfo_err(MI_HEAD "MemAvailable:   abc kB\n",
                "'meminfo' line 3: 'MemAvailable' value 'abc' is not a number");
    meminfo_err(MI_HEAD "MemAvailable:   -5 kB\n",
                "'meminfo' line 3: 'MemAvailable' value '-5' is not a number");
    meminfo_err(MI_HEAD "MemAvailable:   99999999999999999999999 kB\n",
                "'meminfo' line 3: 'MemAvailable' value '99999999999999999999999' is too large");
    /* fits in 64 bits as kB, not as bytes */
    meminfo_err(MI_HEAD "MemAvailable:   18014398509481984 kB\n",
                "'meminfo' line 3: 'MemAvailable' value '18014398509481984' is too large");
    meminfo_err(MI_HEAD "MemAvailable:   2434", "'meminfo' line 3: 'MemAvailable' expected 'N kB'");
    meminfo_err(MI_HEAD "MemAvailable:   2434 MB\n",
                "'meminfo' line 3: 'MemAvailable' expected 'N kB'");
    meminfo_err(MI_HEAD "MemAvailable:   2434 kB extra\n",
                "'meminfo' line 3: 'MemAvailable' expected 'N kB'");
    meminfo_err(MI_HEAD "MemAvailable:", "'meminfo' line 3: 'MemAvailable' has no value");
    meminfo_err(MI_HEAD "MemAvailable: 1 kB\nMemAvailable: 2 kB\n",
                "'meminfo' line 4: 'MemAvailable' appears twice");
    meminfo_err(MI_HEAD "MemAvailable: 1 kB\nHugePages_Total:  4 kB\n",
                "'meminfo' line 4: 'HugePages_Total' expected a bare count");
    meminfo_err(
        MI_HEAD
        "MemAvailable: 1 kB\nHugePages_Total: 18446744073709551615\nHugepagesize: 2048 kB\n",
        "'meminfo': huge page bytes overflow 64 bits");
    char longword[200];
    memset(longword, '9', sizeof longword - 1);
    longword[sizeof longword - 1] = '\0';
    char text[400];
    snprintf(text, sizeof text, MI_HEAD "MemAvailable: %s kB\n", longword);
    meminfo_err(
        text, "'meminfo' line 3: 'MemAvailable' value '999999999999999999999999...' is too large");
}

static void meminfo_tolerant(void **state)
{
    (void)state;
    host_mem m;
    char err[512] = "";
    /* unknown keys (a newer kernel's), CRLF, no final newline, huge pages */
    const char *text = "MemTotal: 100 kB\r\nNewThing: whatever it says\nMemFree: 50 kB\n"
                       "MemAvailable: 18014398509481983 kB\nHugePages_Total: 4\nHugePages_Free: 3\n"
                       "Hugepagesize: 2048 kB";
    assert_int_equal(procmem_parse_meminfo(&m, text, err, sizeof err), 0);
    assert_true(m.meminfo_ok);
    assert_int_equal(m.mem_total, 102400);
    assert_int_equal(m.mem_available, 18014398509481983ull * 1024);
    assert_int_equal(m.hugepages_total, 4 * 2 * MIB);
    assert_int_equal(m.hugepages_free, 3 * 2 * MIB);
    assert_int_equal(m.buffers, 0); /* absent: zero, not an error */
}

/* every prefix of a real file: an error or a consistent parse, never a crash */
static void meminfo_truncated_everywhere(void **state)
{
    (void)state;
    char *text = slurp("healthy", "meminfo");
    size_t len = strlen(text);
    size_t ok = 0;
    for (size_t cut = 0; cut <= len; cut++) {
        char *t = strndup(text, cut);
        host_mem m;
        char err[512] = "";
        if (procmem_parse_meminfo(&m, t, err, sizeof err) == 0) {
            ok++;
            assert_true(m.meminfo_ok);
            assert_true(m.mem_available > 0);
        } else {
            assert_false(m.meminfo_ok);
            assert_true(strncmp(err, "'meminfo'", 9) == 0);
        }
        free(t);
    }
    assert_true(ok > 0);
    free(text);
}

/* ---- hostile buddyinfo ---- */

static void buddy_err(const char *text, uint64_t page_size, const char *want)
{
    host_mem m;
    char err[512] = "";
    memset(&m, 0xa5, sizeof m);
    if (procmem_parse_buddyinfo(&m, text, page_size, err, sizeof err) == 0)
        fail_msg("parsed: %s", text);
    assert_string_equal(err, want);
    assert_false(m.buddyinfo_ok);
    assert_int_equal(m.nzones, 0);
    assert_int_equal(m.contig_2m_bytes, 0);
    assert_close(m.unusable_index_2m, -1);
}

static void buddyinfo_hostile(void **state)
{
    (void)state;
    buddy_err("", 4096, "'buddyinfo' is empty");
    buddy_err("\n", 4096, "'buddyinfo' is empty");
    buddy_err("hello world\n", 4096, "'buddyinfo' line 1: expected 'Node N, zone NAME counts...'");
    buddy_err("Node 0, zone", 4096, "'buddyinfo' line 1: expected 'Node N, zone NAME counts...'");
    buddy_err("Node x, zone DMA 1 2\n", 4096,
              "'buddyinfo' line 1: expected 'Node N, zone NAME counts...'");
    buddy_err("Node 0 zone DMA 1 2\n", 4096,
              "'buddyinfo' line 1: expected 'Node N, zone NAME counts...'");
    buddy_err("Node -1, zone DMA 1 2\n", 4096,
              "'buddyinfo' line 1: expected 'Node N, zone NAME counts...'");
    buddy_err("Node 99999999999, zone DMA 1 2\n", 4096,
              "'buddyinfo' line 1: expected 'Node N, zone NAME counts...'");
    buddy_err(DMA_LINE "Node 0, zone   Normal\n", 4096,
              "'buddyinfo' line 2: zone 'Normal' has no counts");
    buddy_err("Node 0, zone ThisNameIsTooLong 1\n", 4096,
              "'buddyinfo' line 1: zone name 'ThisNameIsTooLong' is too long");
    buddy_err("Node 0, zone DMA 1 2 x3\n", 4096,
              "'buddyinfo' line 1: zone 'DMA' order 2 count 'x3' is not a number");
    buddy_err("Node 0, zone DMA 1 18446744073709551616\n", 4096,
              "'buddyinfo' line 1: zone 'DMA' order 1 count '18446744073709551616' is too large");
    /* a truncated last line is a column count that disagrees */
    buddy_err(DMA_LINE "Node 0, zone   Normal   4167   1535    968", 4096,
              "'buddyinfo' line 2: zone 'Normal' has 3 orders, the zones above have 11");
    buddy_err("Node 0, zone DMA 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1\n", 4096,
              "'buddyinfo' line 1: zone 'DMA' has more than 16 orders");
    buddy_err("Node 0, zone DMA 1\n", 3000, "'buddyinfo': page size 3000 is not a power of two");
    buddy_err("Node 0, zone DMA 1\n", 0, "'buddyinfo': page size 0 is not a power of two");
    /* numbers that fit alone but not summed or scaled */
    buddy_err("Node 0, zone DMA 18446744073709551615\nNode 1, zone DMA 1\n", 4096,
              "'buddyinfo': order 0 counts overflow 64 bits");
    buddy_err("Node 0, zone Normal 18446744073709551615\nNode 1, zone Movable 1\n", 4096,
              "'buddyinfo': order 0 counts overflow 64 bits");
    buddy_err("Node 0, zone DMA 0 0 0 0 0 0 0 0 0 0 9223372036854775807\n", 4096,
              "'buddyinfo': free pages overflow 64 bits");
    buddy_err("Node 0, zone DMA 0 0 0 0 0 0 0 0 0 0 4503599627370495\n", 4096,
              "'buddyinfo': free bytes overflow 64 bits");

    /* one zone too many */
    buf b = BUF_INIT;
    for (int i = 0; i < HOST_MAX_ZONES + 1; i++)
        buf_printf(&b, "Node %d, zone Normal 1 2 3\n", i);
    char want[96];
    snprintf(want, sizeof want, "'buddyinfo' line %d: more than %d zones", HOST_MAX_ZONES + 1, HOST_MAX_ZONES);
    buddy_err(b.p, 4096, want);
    buf_release(&b);
}

/* exactly the caps: HOST_MAX_ZONES zones of HOST_MAX_ORDERS orders */
static void buddyinfo_at_caps(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    for (int z = 0; z < HOST_MAX_ZONES; z++) {
        buf_printf(&b, "Node %d, zone Normal", z / 4);
        for (int o = 0; o < HOST_MAX_ORDERS; o++)
            buf_printf(&b, " %d", o == 9 ? 2 : 1);
        buf_adds(&b, "\n");
    }
    host_mem m;
    char err[512] = "";
    assert_int_equal(procmem_parse_buddyinfo(&m, b.p, 4096, err, sizeof err), 0);
    buf_release(&b);
    assert_int_equal(m.nzones, HOST_MAX_ZONES);
    assert_int_equal(m.norders, HOST_MAX_ORDERS);
    assert_int_equal(m.zones[HOST_MAX_ZONES - 1].node, (HOST_MAX_ZONES - 1) / 4);
    assert_int_equal(m.order_count[0], HOST_MAX_ZONES);
    assert_int_equal(m.order_count[9], 2 * HOST_MAX_ZONES);
    /* per zone: orders 9..15 = 2*512 + (1024 + ... + 32768) pages */
    uint64_t per_zone = 2 * 512 + (65536 - 1024);
    assert_int_equal(m.contig_2m_bytes, (uint64_t)HOST_MAX_ZONES * per_zone * 4096);
}

static void buddyinfo_no_free_memory(void **state)
{
    (void)state;
    host_mem m;
    char err[512] = "";
    assert_int_equal(
        procmem_parse_buddyinfo(&m, "Node 0, zone DMA 0 0 0 0\n", 4096, err, sizeof err), 0);
    assert_true(m.buddyinfo_ok);
    assert_int_equal(m.contig_2m_bytes, 0);
    assert_close(m.unusable_index_2m, -1); /* kernel: undefined with no free pages */
    /* fewer orders than the 2 MiB order: nothing is >= 2 MiB */
    assert_int_equal(
        procmem_parse_buddyinfo(&m, "Node 0, zone DMA 5 5 5 5\n", 4096, err, sizeof err), 0);
    assert_int_equal(m.contig_2m_bytes, 0);
    assert_close(m.unusable_index_2m, 1);
}

static void buddyinfo_truncated_everywhere(void **state)
{
    (void)state;
    char *text = slurp("healthy", "buddyinfo");
    size_t len = strlen(text);
    for (size_t cut = 0; cut <= len; cut++) {
        char *t = strndup(text, cut);
        host_mem m;
        char err[512] = "";
        if (procmem_parse_buddyinfo(&m, t, 4096, err, sizeof err) == 0) {
            assert_true(m.buddyinfo_ok);
            assert_true(m.nzones >= 1 && m.nzones <= 3);
        } else {
            assert_false(m.buddyinfo_ok);
            assert_true(strncmp(err, "'buddyinfo'", 11) == 0);
        }
        free(t);
    }
    free(text);
}

/* ---- hostile pressure/memory ---- */

static void psi_err(const char *text, const char *want)
{
    host_mem m;
    char err[512] = "";
    memset(&m, 0xa5, sizeof m);
    if (procmem_parse_psi(&m, text, err, sizeof err) == 0) fail_msg("parsed: %s", text);
    assert_string_equal(err, want);
    assert_false(m.psi_ok);
    assert_close(m.psi_some_avg10, 0);
}

#define SOME "some avg10=1.00 avg60=2.00 avg300=3.00 total=123\n"
#define FULL "full avg10=0.50 avg60=0.25 avg300=0.10 total=45\n"

static void psi_hostile(void **state)
{
    (void)state;
    psi_err("", "'pressure/memory' is empty");
    psi_err("bogus avg10=1.00\n",
            "'pressure/memory' line 1: expected 'some' or 'full', got 'bogus'");
    psi_err(SOME, "'pressure/memory': no 'full' line");
    psi_err(FULL, "'pressure/memory': no 'some' line");
    psi_err(SOME SOME FULL, "'pressure/memory' line 2: 'some' appears twice");
    psi_err("some avg10=1.00\n" FULL, "'pressure/memory' line 1: 'some' has no 'avg60'");
    psi_err("some avg10=1.00 avg60=2.00 avg300=3.00\n" FULL,
            "'pressure/memory' line 1: 'some' has no 'total'");
    psi_err("some avg10=abc avg60=2.00 avg300=3.00 total=1\n" FULL,
            "'pressure/memory' line 1: 'avg10' value 'abc' is not a percentage");
    psi_err("some avg10=150.00 avg60=2.00 avg300=3.00 total=1\n" FULL,
            "'pressure/memory' line 1: 'avg10' value '150.00' is not a percentage");
    psi_err("some avg10=-1.00 avg60=2.00 avg300=3.00 total=1\n" FULL,
            "'pressure/memory' line 1: 'avg10' value '-1.00' is not a percentage");
    psi_err("some avg10=1. avg60=2.00 avg300=3.00 total=1\n" FULL,
            "'pressure/memory' line 1: 'avg10' value '1.' is not a percentage");
    psi_err("some avg10=nan avg60=2.00 avg300=3.00 total=1\n" FULL,
            "'pressure/memory' line 1: 'avg10' value 'nan' is not a percentage");
    psi_err("some avg10 avg60=2.00 avg300=3.00 total=1\n" FULL,
            "'pressure/memory' line 1: expected 'key=value', got 'avg10'");
    psi_err(SOME "full avg10=0.50 avg60=0.25 avg300=0.10 total=99999999999999999999\n",
            "'pressure/memory' line 2: 'total' value '99999999999999999999' is not a number");
}

static void psi_tolerant(void **state)
{
    (void)state;
    host_mem m;
    char err[512] = "";
    /* full before some, an unknown key, no final newline */
    assert_int_equal(
        procmem_parse_psi(&m,
                          "full avg10=100.00 avg60=0.25 avg300=0.10 total=45 newkey=7\n"
                          "some avg10=99.99 avg60=2.00 avg300=3.00 total=123",
                          err, sizeof err),
        0);
    assert_true(m.psi_ok);
    assert_close(m.psi_full_avg10, 100);
    assert_close(m.psi_some_avg10, 99.99);
    assert_close(m.psi_some_avg300, 3);
}

static void psi_truncated_everywhere(void **state)
{
    (void)state;
    char *text = slurp("pressured", "pressure/memory");
    size_t len = strlen(text);
    for (size_t cut = 0; cut <= len; cut++) {
        char *t = strndup(text, cut);
        host_mem m;
        char err[512] = "";
        if (procmem_parse_psi(&m, t, err, sizeof err) == 0) {
            /* only cuts inside the last total= digits can pass */
            assert_true(m.psi_ok);
            assert_close(m.psi_full_avg10, 12.31);
        } else {
            assert_false(m.psi_ok);
        }
        free(t);
    }
    free(text);
}

/* ---- hostile files ---- */

static char tmpdir[256];

static int mk_tmp(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gpumod-procmem-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int rm_tmp(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *rel, const char *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void files_hostile(void **state)
{
    (void)state;
    host_mem m;
    char err[512] = "", want[700];
    memset(&m, 0, sizeof m);

    /* nothing there */
    assert_int_equal(procmem_read_meminfo(&m, tmpdir, err, sizeof err), -1);
    snprintf(want, sizeof want, "'%s/meminfo': %s", tmpdir, strerror(ENOENT));
    assert_string_equal(err, want);
    assert_int_equal(procmem_read_buddyinfo(&m, tmpdir, err, sizeof err), -1);
    assert_false(m.buddyinfo_ok);

    /* a kernel without PSI: no error */
    err[0] = 'x';
    m.psi_ok = true;
    assert_int_equal(procmem_read_psi(&m, tmpdir, err, sizeof err), 0);
    assert_false(m.psi_ok);
    assert_string_equal(err, "");

    /* empty: the reader names the path */
    put("meminfo", "", 0);
    assert_int_equal(procmem_read_meminfo(&m, tmpdir, err, sizeof err), -1);
    snprintf(want, sizeof want, "'%s/meminfo' is empty", tmpdir);
    assert_string_equal(err, want);

    put("meminfo", "MemTotal: 1 kB\nMemFree: x kB\n", 29);
    assert_int_equal(procmem_read_meminfo(&m, tmpdir, err, sizeof err), -1);
    snprintf(want, sizeof want, "'%s/meminfo' line 2: 'MemFree' value 'x' is not a number", tmpdir);
    assert_string_equal(err, want);

    /* a NUL byte would silently cut the text short */
    put("meminfo", "MemTotal: 1 kB\0MemFree: 1 kB\n", 29);
    assert_int_equal(procmem_read_meminfo(&m, tmpdir, err, sizeof err), -1);
    snprintf(want, sizeof want, "'%s/meminfo' contains a NUL byte", tmpdir);
    assert_string_equal(err, want);

    /* a directory and a FIFO: refused, and the FIFO must not block */
    char path[512];
    snprintf(path, sizeof path, "%s/buddyinfo", tmpdir);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(procmem_read_buddyinfo(&m, tmpdir, err, sizeof err), -1);
    snprintf(want, sizeof want, "'%s/buddyinfo': a directory, not a regular file", tmpdir);
    assert_string_equal(err, want);
    snprintf(path, sizeof path, "%s/pressure", tmpdir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/pressure/memory", tmpdir);
    assert_int_equal(mkfifo(path, 0644), 0);
    assert_int_equal(procmem_read_psi(&m, tmpdir, err, sizeof err), -1);
    snprintf(want, sizeof want, "'%s/pressure/memory': a FIFO, not a regular file", tmpdir);
    assert_string_equal(err, want);

    /* larger than any /proc file */
    size_t big = (1u << 20) + 10;
    char *junk = malloc(big);
    assert_non_null(junk);
    memset(junk, 'a', big);
    put("meminfo", junk, big);
    free(junk);
    assert_int_equal(procmem_read_meminfo(&m, tmpdir, err, sizeof err), -1);
    snprintf(want, sizeof want, "'%s/meminfo' is larger than 1048576 bytes", tmpdir);
    assert_string_equal(err, want);

    /* a root too long for a path */
    char root[5000];
    memset(root, 'r', sizeof root - 1);
    root[sizeof root - 1] = '\0';
    assert_int_equal(procmem_read_meminfo(&m, root, err, sizeof err), -1);
    assert_non_null(strstr(err, "is too long"));
}

/* the real /proc of the machine running the tests, when it has one */
static void live_proc(void **state)
{
    (void)state;
    host_mem m;
    char err[512] = "";
    if (access("/proc/meminfo", R_OK) != 0) skip();
    memset(&m, 0, sizeof m);
    if (procmem_read_meminfo(&m, "/proc", err, sizeof err) < 0) fail_msg("%s", err);
    assert_true(m.mem_total > 0);
    assert_true(m.mem_available <= m.mem_total);
    if (procmem_read_buddyinfo(&m, "/proc", err, sizeof err) < 0) fail_msg("%s", err);
    assert_true(m.nzones > 0);
    if (procmem_read_psi(&m, "/proc", err, sizeof err) < 0) fail_msg("%s", err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(healthy_real_numbers),
        cmocka_unit_test(short_fixture),
        cmocka_unit_test(fragmented_fixture),
        cmocka_unit_test(pressured_fixture),
        cmocka_unit_test(unified_short_fixture),
        cmocka_unit_test(arm64_64k_page_size),
        cmocka_unit_test(no_psi_fixture),
        cmocka_unit_test(proc_root_from_env),
        cmocka_unit_test(fixtures_through_the_gate),
        cmocka_unit_test(contig_figures),
        cmocka_unit_test(dma32_does_not_hide_a_fragmented_normal),
        cmocka_unit_test(no_normal_zone_counts_every_zone),
        cmocka_unit_test(meminfo_hostile),
        cmocka_unit_test(meminfo_tolerant),
        cmocka_unit_test(meminfo_truncated_everywhere),
        cmocka_unit_test(buddyinfo_hostile),
        cmocka_unit_test(buddyinfo_at_caps),
        cmocka_unit_test(buddyinfo_no_free_memory),
        cmocka_unit_test(buddyinfo_truncated_everywhere),
        cmocka_unit_test(psi_hostile),
        cmocka_unit_test(psi_tolerant),
        cmocka_unit_test(psi_truncated_everywhere),
        cmocka_unit_test_setup_teardown(files_hostile, mk_tmp, rm_tmp),
        cmocka_unit_test(live_proc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
