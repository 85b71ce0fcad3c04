/* estimate.h - what a llama.cpp server will take, per device and on the
 * host, from the GGUF header and the exact server flags
 * (research/memory.md §1.4, §2).  Pure arithmetic over a parsed gguf_file:
 * no I/O.  An unknown tensor type or a missing hyperparameter makes the
 * estimate fail with a reason ("cannot estimate"), never guess. */
#ifndef GPUMOD_ESTIMATE_H
#define GPUMOD_ESTIMATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/gguf.h"

/* The most GPUs an estimate spreads a model over (host/types.h's
 * HOST_MAX_GPUS is the same: daemon/need.c checks they agree). */
#define EST_MAX_DEVICES 16

typedef struct est_params {
    int64_t ctx;        /* -c, > 0 (gpumod always passes it) */
    int64_t parallel;   /* --parallel, >= 1 */
    uint32_t type_k, type_v; /* ggml type ids; default f16 */
    int64_t ngl;        /* -ngl: layers on GPU; -1 = all */
    int64_t n_cpu_moe;  /* --n-cpu-moe: expert tensors of the first N layers stay on the host */
    int flash_attn;     /* -1 auto, 0 off, 1 on */
    int64_t n_ubatch;   /* default 512 */
    int64_t n_batch;    /* default 2048 */
    bool kv_unified;    /* one KV pool shared by the slots */
    bool swa_full;
    size_t ndev;        /* GPUs the model is spread over; 0: CPU only */
    double split[EST_MAX_DEVICES]; /* --tensor-split proportions; all 0: even */
} est_params;

typedef enum {
    EST_WEIGHTS,  /* tensor bytes resident there */
    EST_KV,       /* attention KV cache (full + SWA layers) */
    EST_RS,       /* recurrent / SSM state */
    EST_COMPUTE,  /* compute buffer */
    EST_OUTPUT,   /* output (logits) buffer */
    EST_OVERHEAD, /* CUDA context, cuBLAS, pools: per GPU */
    EST__PARTS
} est_part;
extern const char *const est_part_names[]; /* "weights" "kv" "rs" "compute" "output" "overhead" */

typedef struct model_summary {
    char arch[64];
    char name[128];
    uint64_t n_params;     /* elements over all tensors */
    int64_t n_layer, n_embd, n_head, n_head_kv, n_ctx_train, n_vocab;
    int64_t n_expert, n_expert_used;
    int64_t file_type;     /* general.file_type, -1 absent */
    const char *file_type_name;
    uint64_t weight_bytes; /* sum of tensor bytes */
    int64_t n_swa;         /* sliding window, 0 none */
    int64_t kv_lora_rank;  /* MLA, 0 none */
    bool recurrent;        /* has recurrent / SSM layers */
    bool embedding;        /* pooling_type present or non-causal */
} model_summary;

typedef struct estimate {
    size_t ndev;
    uint64_t dev[EST_MAX_DEVICES][EST__PARTS];
    uint64_t host[EST__PARTS];
    uint64_t dev_total[EST_MAX_DEVICES];
    uint64_t host_total;
    /* the arithmetic's inputs, for display */
    int64_t n_ctx;        /* after llama.cpp's padding */
    int64_t n_ctx_seq;    /* per slot */
    int64_t n_layer_gpu;  /* repeating layers offloaded */
    int64_t kv_layers, swa_layers, swa_cells, recurrent_layers;
    uint64_t kv_bytes_per_token; /* full-attention layers, both K and V */
} estimate;

void est_params_default(est_params *p);
int model_describe(const gguf_file *g, model_summary *out, char *err, size_t errlen);
/* 0, or -1 with err ("cannot estimate: ...").  Split files: g holds all shards. */
int estimate_llamacpp(const gguf_file *g, const est_params *p, estimate *out, char *err, size_t errlen);

#endif
