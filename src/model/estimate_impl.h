/* estimate_impl.h - the estimator's resolved inputs (hyperparameters,
 * context sizes, layer placement), shared by model/estimate.c, which fills
 * them, and model/compute.c, which replays the compute graph from them.
 * Not an API: nothing outside src/model includes it. */
#ifndef GPUMOD_ESTIMATE_IMPL_H
#define GPUMOD_ESTIMATE_IMPL_H

#include "model/estimate.h"

/* src/llama-hparams.h LLAMA_MAX_LAYERS: llama.cpp refuses more */
#define MAX_LAYERS 512

/* the hyperparameters, as llama.cpp's load_hparams leaves them */
typedef struct hparams {
    const char *arch;
    int64_t n_layer_all; /* block_count */
    int64_t n_layer;     /* less the NextN/MTP layers */
    int64_t n_embd, n_vocab, n_ctx_train;
    int64_t head[MAX_LAYERS], head_kv[MAX_LAYERS], ff[MAX_LAYERS];
    int64_t head_k, head_v, head_k_swa, head_v_swa; /* per-head sizes */
    bool is_swa[MAX_LAYERS], is_recr[MAX_LAYERS], has_kv[MAX_LAYERS];
    int64_t idx_k[MAX_LAYERS]; /* DSA indexer key row per layer, elements */
    int64_t n_swa;
    bool mla;
    int64_t kv_lora_rank;
    bool recurrent_arch, hybrid, no_memory, embedding, causal;
    /* recurrent state (src/llama-hparams.cpp n_embd_r / n_embd_s) */
    int64_t d_conv, d_inner, d_state, n_group, dt_rank, wkv_head, token_shift, shortconv, kda_head,
        la_head;
    int64_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp, n_expert_shared, n_dense_lead;
} hparams;

/* where the layers are: src/llama-model.cpp load_tensors */
typedef struct placement {
    size_t ndev;
    int64_t i_gpu_start, act_gpu_layers, n_layer_all;
    float splits[EST_MAX_DEVICES];
} placement;

/* the context llama_context's constructor sets up */
typedef struct ctxsize {
    int64_t n_seq, n_stream, n_ctx, n_ctx_seq, n_batch, n_ubatch, n_tokens, n_out, swa_cells;
    bool v_trans, fa;
} ctxsize;

/* the GPU of layer il (0..n_layer_all, the last being the output layer), or
 * -1 for the host */
int est_layer_dev(const placement *pl, int64_t il);
/* per-head K and V sizes of layer il (the SWA ones on sliding layers) */
int64_t est_head_k(const hparams *h, int64_t il);
int64_t est_head_v(const hparams *h, int64_t il);
/* n_embd_v_gqa_max(): the width every transposed V row is padded to */
int64_t est_v_gqa_max(const hparams *h);
/* n_embd_r() and n_embd_s(): one sequence's recurrent state, elements */
uint64_t est_rs_r(const hparams *h);
uint64_t est_rs_s(const hparams *h);

#endif
