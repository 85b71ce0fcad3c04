/* mjson.c - a GGUF file described and estimated, as JSON (see mjson.h). */
#include "model/mjson.h"

#include "model/ggml_type.h"

void model_summary_json(buf *b, const model_summary *m, const gguf_file *g)
{
    buf_adds(b, "{\"architecture\":");
    buf_json_str(b, m->arch);
    buf_adds(b, ",\"name\":");
    buf_json_str(b, m->name);
    buf_printf(b,
               ",\"parameters\":%llu,\"layers\":%lld,\"embedding_length\":%lld,\"heads\":%lld,\"kv_"
               "heads\":%lld,"
               "\"context_length\":%lld,\"vocab\":%lld,\"experts\":%lld,\"experts_used\":%lld,"
               "\"file_type\":",
               (unsigned long long)m->n_params, (long long)m->n_layer, (long long)m->n_embd,
               (long long)m->n_head, (long long)m->n_head_kv, (long long)m->n_ctx_train,
               (long long)m->n_vocab, (long long)m->n_expert, (long long)m->n_expert_used);
    if (m->file_type_name)
        buf_json_str(b, m->file_type_name);
    else
        buf_adds(b, "null");
    buf_printf(
        b,
        ",\"weight_bytes\":%llu,\"sliding_window\":%lld,\"kv_lora_rank\":%lld,\"recurrent\":%s,"
        "\"embedding\":%s,\"gguf_version\":%u,\"tensors\":%zu,\"file_bytes\":%llu,\"split_count\":%"
        "u}",
        (unsigned long long)m->weight_bytes, (long long)m->n_swa, (long long)m->kv_lora_rank,
        m->recurrent ? "true" : "false", m->embedding ? "true" : "false", g->version, g->ntensors,
        (unsigned long long)g->file_bytes, g->split_count);
}

void model_estimate_json(buf *b, const estimate *e)
{
    buf_adds(b, "{\"host\":{");
    for (int p = 0; p < EST__PARTS; p++)
        buf_printf(b, "%s\"%s_bytes\":%llu", p ? "," : "", est_part_names[p],
                   (unsigned long long)e->host[p]);
    buf_printf(b, ",\"total_bytes\":%llu},\"devices\":[", (unsigned long long)e->host_total);
    for (size_t d = 0; d < e->ndev; d++) {
        buf_printf(b, "%s{\"index\":%zu", d ? "," : "", d);
        for (int p = 0; p < EST__PARTS; p++)
            buf_printf(b, ",\"%s_bytes\":%llu", est_part_names[p],
                       (unsigned long long)e->dev[d][p]);
        buf_printf(b, ",\"total_bytes\":%llu}", (unsigned long long)e->dev_total[d]);
    }
    buf_printf(b,
               "],\"n_ctx\":%lld,\"n_ctx_seq\":%lld,\"n_layer_gpu\":%lld,\"kv_layers\":%lld,"
               "\"swa_layers\":%lld,\"swa_cells\":%lld,\"recurrent_layers\":%lld,\"kv_bytes_"
               "per_token\":%llu}",
               (long long)e->n_ctx, (long long)e->n_ctx_seq, (long long)e->n_layer_gpu,
               (long long)e->kv_layers, (long long)e->swa_layers, (long long)e->swa_cells,
               (long long)e->recurrent_layers, (unsigned long long)e->kv_bytes_per_token);
}

void model_inspect_json(buf *b, const char *file, const gguf_file *g, const model_summary *m,
                        const est_params *ep, const estimate *e, const char *eerr)
{
    buf_adds(b, "{\"file\":");
    buf_json_str(b, file);
    buf_adds(b, ",\"model\":");
    model_summary_json(b, m, g);
    buf_printf(b,
               ",\"params\":{\"ctx\":%lld,\"parallel\":%lld,\"cache_type_k\":\"%s\",\"cache_type_"
               "v\":\"%s\","
               "\"ngl\":%lld,\"n_cpu_moe\":%lld,\"flash_attn\":%d,\"gpus\":%zu}",
               (long long)ep->ctx, (long long)ep->parallel, ggml_type_get(ep->type_k)->name,
               ggml_type_get(ep->type_v)->name, (long long)ep->ngl, (long long)ep->n_cpu_moe,
               ep->flash_attn, ep->ndev);
    if (!e) {
        buf_adds(b, ",\"estimate\":null,\"error\":");
        buf_json_str(b, eerr);
    } else {
        buf_adds(b, ",\"estimate\":");
        model_estimate_json(b, e);
    }
    buf_adds(b, "}\n");
}
