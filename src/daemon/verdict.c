/* verdict.c - the verdict object of docs/interfaces.md ("Gate verdict"):
 * the gate's answer with the need it judged and the host it judged it on
 * (verdict.h). */
#include "daemon/verdict.h"
#include "core/contig.h"
#include "model/estimate.h"

#include <stdio.h>
#include <string.h>

/* {"source","host_bytes","gpu_bytes"} without the closing brace */
static void need_members(buf *b, const need *n)
{
    buf_adds(b, "{\"source\":");
    buf_json_str(b, n->source);
    buf_printf(b, ",\"host_bytes\":%llu,\"gpu_bytes\":{", (unsigned long long)n->host_bytes);
    for (size_t i = 0; i < n->ngpu; i++)
        buf_printf(b, "%s\"%d\":%llu", i ? "," : "", n->gpu[i].index, (unsigned long long)n->gpu[i].bytes);
    buf_adds(b, "}");
}

void need_json(buf *b, const need *n)
{
    need_members(b, n);
    buf_addc(b, '}');
}

static void need_detail_json(buf *b, const need_detail *nd)
{
    need_members(b, &nd->n);
    if (nd->hash[0]) {
        buf_adds(b, ",\"config_hash\":");
        buf_json_str(b, nd->hash);
    }
    if (nd->detail[0]) {
        buf_adds(b, ",\"detail\":");
        buf_json_str(b, nd->detail);
    }
    if (nd->has_estimate) {
        const estimate *e = &nd->est;
        buf_adds(b, ",\"estimate\":{\"host\":{");
        for (int p = 0; p < EST__PARTS; p++)
            buf_printf(b, "%s\"%s_bytes\":%llu", p ? "," : "", est_part_names[p], (unsigned long long)e->host[p]);
        buf_adds(b, "},\"devices\":[");
        for (size_t d = 0; d < e->ndev; d++) {
            buf_printf(b, "%s{\"index\":%d", d ? "," : "", nd->n.gpu[d].index);
            for (int p = 0; p < EST__PARTS; p++)
                buf_printf(b, ",\"%s_bytes\":%llu", est_part_names[p], (unsigned long long)e->dev[d][p]);
            buf_addc(b, '}');
        }
        buf_printf(b, "],\"n_ctx\":%lld,\"n_layer_gpu\":%lld}", (long long)e->n_ctx, (long long)e->n_layer_gpu);
    }
    buf_addc(b, '}');
}

/* The contiguity rule as it stands for this service: whether the buddy
 * lists can judge (why not), the figure, and whether it applies (an
 * NVIDIA driver, and an engine that pins host memory). */
static void contig_json(buf *b, const snapshot *s, const need_detail *nd)
{
    char why[256];
    bool known = contig_known(&s->host, why, sizeof why);
    bool applies = s->nvidia_driver && !(nd && nd->n.pageable_host);
    buf_printf(b, "{\"state\":\"%s\",\"applies\":%s,\"pins_host\":%s,\"block_bytes\":%u,\"bytes\":%llu,"
                  "\"buddy_free_bytes\":%llu,\"mem_free_bytes\":%llu,\"why\":",
               known ? "known" : "unknown", applies ? "true" : "false", nd && nd->n.pageable_host ? "false" : "true",
               HOST_CONTIG_BLOCK, (unsigned long long)s->host.contig_bytes,
               (unsigned long long)s->host.buddy_free_bytes, (unsigned long long)s->host.mem_free);
    if (known) buf_adds(b, "null}");
    else {
        buf_json_str(b, why);
        buf_addc(b, '}');
    }
}

void verdict_json(buf *b, const char *via, const char *service, const verdict *v, const need_detail *nd,
                  const snapshot *s)
{
    buf_printf(b, "{\"ok\":%s,\"via\":", v->ok ? "true" : "false");
    buf_json_str(b, via);
    buf_adds(b, ",\"service\":");
    if (service)
        buf_json_str(b, service);
    else
        buf_adds(b, "null");
    buf_adds(b, ",\"reason\":");
    buf_json_str(b, v->reason);
    buf_adds(b, ",\"binding\":");
    if (v->binding[0])
        buf_json_str(b, v->binding);
    else
        buf_adds(b, "null");
    buf_adds(b, ",\"need\":");
    need_detail_json(b, nd);
    buf_printf(b, ",\"available\":{\"host\":{\"mem_available_bytes\":%llu,\"contig_bytes\":%llu,"
                  "\"contig_2m_bytes\":%llu,\"reserved_bytes\":%llu},\"gpus\":[",
               (unsigned long long)s->host.mem_available, (unsigned long long)s->host.contig_bytes,
               (unsigned long long)s->host.contig_2m_bytes, (unsigned long long)v->reserved_host_bytes);
    for (size_t i = 0; i < s->ngpus; i++) {
        const gpu_dev *g = &s->gpus[i];
        buf_printf(b, "%s{\"index\":%d,\"uuid\":", i ? "," : "", g->index);
        buf_json_str(b, g->uuid);
        buf_printf(b, ",\"unified\":%s,\"free_bytes\":%llu,\"reserved_bytes\":%llu}", g->unified ? "true" : "false",
                   (unsigned long long)(g->unified ? s->host.mem_available : g->free_bytes),
                   (unsigned long long)v->reserved_gpu_bytes[i]);
    }
    buf_adds(b, "]},\"contig\":");
    contig_json(b, s, nd);
    /* from 64 KiB (order 4 on 4 KiB pages) up, as the seed's preflight
     * printed them: order_6 = 0 is the freeze's canary */
    buf_adds(b, ",\"high_order_pages\":{");
    bool first = true;
    for (size_t o = (size_t)s->host.order_contig >= 2 ? (size_t)s->host.order_contig - 2 : 0; o < s->host.norders; o++) {
        buf_printf(b, "%s\"%zu\":%llu", first ? "" : ",", o, (unsigned long long)s->host.order_count[o]);
        first = false;
    }
    buf_adds(b, "},\"psi\":");
    if (s->host.psi_ok)
        buf_printf(b, "{\"some_avg10\":%.2f,\"full_avg10\":%.2f}", s->host.psi_some_avg10, s->host.psi_full_avg10);
    else
        buf_adds(b, "null");
    buf_adds(b, ",\"nvml\":");
    buf_json_str(b, nvml_state_names[s->nvml]);
    buf_addc(b, '}');
}
