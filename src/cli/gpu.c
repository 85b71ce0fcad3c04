/* gpu.c - `gpumod gpu [--json]`: the host snapshot as the gate sees it:
 * memory bars per device and for the host, high-order free pages, PSI,
 * and where the GPU figures came from (NVML, nvidia-smi, none). */
#include "cli/cli.h"
#include "cli/hostview.h"
#include "core/contig.h"

#include <stdio.h>
#include <string.h>

static void gpu_json(buf *b, const snapshot *s)
{
    const host_mem *h = &s->host;
    buf_printf(b, "{\"nvml\":\"%s\",\"source\":\"%s\",\"nvidia_driver\":%s,\"driver_version\":",
               nvml_state_names[s->nvml], gpu_source_names[s->source], s->nvidia_driver ? "true" : "false");
    buf_json_str(b, s->driver_version);
    buf_adds(b, ",\"host_error\":");
    if (s->host_error[0]) buf_json_str(b, s->host_error);
    else buf_adds(b, "null");
    buf_adds(b, ",\"gpu_error\":");
    if (s->gpu_error[0]) buf_json_str(b, s->gpu_error);
    else buf_adds(b, "null");
    buf_printf(b, ",\"nvml_ms\":%lld,\"host\":{\"mem_total_bytes\":%llu,\"mem_free_bytes\":%llu,"
                  "\"mem_available_bytes\":%llu,\"swap_total_bytes\":%llu,\"swap_free_bytes\":%llu,"
                  "\"page_size\":%llu,\"contig_2m_bytes\":%llu,\"zones_counted\":%s,"
                  "\"unusable_index_2m\":%.4f,\"order_counts\":[",
               (long long)s->nvml_ms, (unsigned long long)h->mem_total, (unsigned long long)h->mem_free,
               (unsigned long long)h->mem_available, (unsigned long long)h->swap_total,
               (unsigned long long)h->swap_free, (unsigned long long)h->page_size,
               (unsigned long long)h->contig_2m_bytes,
               !h->buddyinfo_ok ? "null" : h->zones_all ? "\"all\"" : "\"Normal+Movable\"",
               h->unusable_index_2m);
    for (size_t o = 0; o < h->norders; o++)
        buf_printf(b, "%s%llu", o ? "," : "", (unsigned long long)h->order_count[o]);
    char why[256];
    bool known = contig_known(h, why, sizeof why);
    buf_printf(b, "],\"contig\":{\"state\":\"%s\",\"block_bytes\":%u,\"bytes\":%llu,\"buddy_free_bytes\":%llu,"
                  "\"why\":",
               known ? "known" : "unknown", HOST_CONTIG_BLOCK, (unsigned long long)h->contig_bytes,
               (unsigned long long)h->buddy_free_bytes);
    if (known) buf_adds(b, "null");
    else buf_json_str(b, why);
    buf_adds(b, "},\"psi\":");
    if (h->psi_ok)
        buf_printf(b, "{\"some_avg10\":%.2f,\"some_avg60\":%.2f,\"some_avg300\":%.2f,\"full_avg10\":%.2f,"
                      "\"full_avg60\":%.2f,\"full_avg300\":%.2f}",
                   h->psi_some_avg10, h->psi_some_avg60, h->psi_some_avg300, h->psi_full_avg10, h->psi_full_avg60,
                   h->psi_full_avg300);
    else
        buf_adds(b, "null");
    buf_adds(b, "},\"gpus\":[");
    for (size_t i = 0; i < s->ngpus; i++) {
        const gpu_dev *g = &s->gpus[i];
        buf_printf(b, "%s{\"index\":%d,\"name\":", i ? "," : "", g->index);
        buf_json_str(b, g->name);
        buf_adds(b, ",\"uuid\":");
        buf_json_str(b, g->uuid);
        buf_adds(b, ",\"bus_id\":");
        buf_json_str(b, g->bus_id);
        if (g->cc_major > 0)
            buf_printf(b, ",\"compute_capability\":\"%d.%d\"", g->cc_major, g->cc_minor);
        else
            buf_adds(b, ",\"compute_capability\":null");
        buf_printf(b, ",\"unified\":%s,\"total_bytes\":%llu,\"free_bytes\":%llu,\"used_bytes\":%llu,"
                      "\"reserved_bytes\":%llu,\"util_gpu_pct\":%d,\"util_mem_pct\":%d,\"temp_c\":%d,\"power_mw\":%lld,"
                      "\"processes\":[",
                   g->unified ? "true" : "false", (unsigned long long)g->total_bytes,
                   (unsigned long long)g->free_bytes, (unsigned long long)g->used_bytes,
                   (unsigned long long)g->reserved_bytes, g->util_gpu_pct, g->util_mem_pct, g->temp_c,
                   (long long)g->power_mw);
        for (size_t k = 0; k < g->nprocs; k++) {
            buf_printf(b, "%s{\"pid\":%u,\"used_bytes\":", k ? "," : "", g->procs[k].pid);
            if (g->procs[k].used_bytes == UINT64_MAX) buf_adds(b, "null}");
            else buf_printf(b, "%llu}", (unsigned long long)g->procs[k].used_bytes);
        }
        buf_adds(b, "]}");
    }
    buf_adds(b, "]}\n");
}

static void gpu_text(buf *b, const snapshot *s)
{
    const host_mem *h = &s->host;
    if (h->meminfo_ok) {
        uint64_t used = h->mem_total > h->mem_available ? h->mem_total - h->mem_available : 0;
        buf_adds(b, "host   ");
        fmt_bar(b, used, h->mem_total, 30);
        buf_adds(b, " ");
        buf_bytes(b, used);
        buf_adds(b, " of ");
        buf_bytes(b, h->mem_total);
        buf_adds(b, " in use, MemAvailable ");
        buf_bytes(b, h->mem_available);
        buf_addc(b, '\n');
    } else {
        buf_printf(b, "host   memory unknown: %s\n", s->host_error);
    }
    if (h->buddyinfo_ok) {
        /* the zones the gate counts (memory.md 6.4) */
        buf_printf(b, "       free in blocks >= 2 MiB, %s: ",
                   h->zones_all ? "all zones (no Normal/Movable zone)" : "Normal+Movable");
        buf_bytes(b, h->contig_2m_bytes);
        buf_printf(b, " (page %llu KiB; free blocks by order:", (unsigned long long)(h->page_size / 1024));
        for (size_t o = 0; o < h->norders; o++) buf_printf(b, " %llu", (unsigned long long)h->order_count[o]);
        buf_adds(b, ")");
        if (h->unusable_index_2m >= 0) buf_printf(b, ", unusable index at 2 MiB %.3f", h->unusable_index_2m);
        buf_addc(b, '\n');
    }
    char why[256];
    if (contig_known(h, why, sizeof why)) {
        buf_printf(b, "       contiguity: free in blocks >= %u KiB ", HOST_CONTIG_BLOCK >> 10);
        buf_bytes(b, h->contig_bytes);
        buf_adds(b, " (what the gate counts for services that pin host memory)\n");
    } else {
        buf_printf(b, "       contiguity: unknown: %s\n", why);
    }
    if (h->psi_ok)
        buf_printf(b, "       memory pressure: some %.2f/%.2f/%.2f, full %.2f/%.2f/%.2f (avg10/60/300, %%)\n",
                   h->psi_some_avg10, h->psi_some_avg60, h->psi_some_avg300, h->psi_full_avg10, h->psi_full_avg60,
                   h->psi_full_avg300);
    else
        buf_adds(b, "       memory pressure: not available (kernel without PSI)\n");
    for (size_t i = 0; i < s->ngpus; i++) {
        const gpu_dev *g = &s->gpus[i];
        buf_printf(b, "gpu %-2d ", g->index);
        if (g->unified) {
            buf_adds(b, "unified memory (NVML reports NOT_SUPPORTED): shares the host's MemAvailable ");
            buf_bytes(b, s->host.mem_available);
        } else {
            fmt_bar(b, g->used_bytes, g->total_bytes, 30);
            buf_adds(b, " ");
            buf_bytes(b, g->used_bytes);
            buf_adds(b, " of ");
            buf_bytes(b, g->total_bytes);
            buf_adds(b, " in use, free ");
            buf_bytes(b, g->free_bytes);
        }
        buf_printf(b, "\n       %s  %s  %s", g->name, g->uuid, g->bus_id);
        if (g->cc_major > 0) buf_printf(b, "  cc %d.%d", g->cc_major, g->cc_minor);
        if (g->temp_c >= 0) buf_printf(b, "  %d C", g->temp_c);
        if (g->power_mw >= 0) buf_printf(b, "  %.0f W", (double)g->power_mw / 1000);
        if (g->util_gpu_pct >= 0) buf_printf(b, "  util %d%%", g->util_gpu_pct);
        buf_addc(b, '\n');
        for (size_t k = 0; k < g->nprocs; k++) {
            buf_printf(b, "       pid %-8u ", g->procs[k].pid);
            if (g->procs[k].used_bytes == UINT64_MAX) buf_adds(b, "(usage not available)");
            else buf_bytes(b, g->procs[k].used_bytes);
            buf_addc(b, '\n');
        }
    }
    if (!s->ngpus) buf_adds(b, "gpus   none: a CPU-only host (the RAM checks still apply)\n");
    buf_printf(b, "nvml   %s (GPU figures from %s", nvml_state_names[s->nvml], gpu_source_names[s->source]);
    if (s->driver_version[0]) buf_printf(b, ", driver %s", s->driver_version);
    if (s->nvml_ms >= 0) buf_printf(b, ", %lld ms", (long long)s->nvml_ms);
    buf_adds(b, ")");
    if (s->gpu_error[0]) buf_printf(b, ": %s", s->gpu_error);
    buf_addc(b, '\n');
}

int cmd_gpu(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("gpu");
    if (argc > 1) return cli_usage_error(c, k, "gpu: unexpected argument '%s'", argv[1]);
    config cfg;
    /* the snapshot needs only settings: a broken preset does not stop it */
    config_load(&cfg, &c->paths);
    snapshot snap;
    snapshot_for(&cfg.set, &snap);
    buf b = BUF_INIT;
    if (c->json)
        gpu_json(&b, &snap);
    else
        gpu_text(&b, &snap);
    fputs(b.p, stdout);
    buf_release(&b);
    int rc = snap.host.meminfo_ok ? EXIT_OK : EXIT_REFUSED;
    snapshot_release(&snap);
    config_release(&cfg);
    return rc;
}
