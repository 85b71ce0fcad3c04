/* estimate.c - what llama-server will allocate for a GGUF model with given
 * flags, per GPU and on the host, by part (weights, KV, recurrent state,
 * compute, output, overhead).  research/memory.md §1.4-1.6 and §2 are the
 * spec; docs/estimate.md gives every formula with its llama.cpp source and
 * the comparison with a real llama-server.
 *
 * Design: replay llama.cpp's own placement decisions, not a heuristic.
 * The hyperparameters are read once into a per-layer table (the same
 * defaults and per-arch rules llama.cpp's load_hparams applies), then each
 * tensor and each KV / recurrent layer is assigned to the device llama.cpp
 * would put it on.  Weights, KV and recurrent state are exact byte counts
 * (llama.cpp's tensor shapes x ggml row sizes); the compute buffers are
 * what ggml's scheduler and allocator make of llama.cpp's worst-case graph,
 * replayed by model/compute.c (exact for the graphs it builds as llama.cpp
 * does, approximate for the other architectures); the per-GPU CUDA overhead
 * is a measured constant.  What gpumod cannot know (an unknown tensor type, a
 * missing hyperparameter, a cache layout it does not model) is an error
 * ("cannot estimate: ..."), never a guess.
 *
 * llama.cpp version modelled: ngxson/llama.cpp 3f545becc (build b10587,
 * 2026-08-22), the binary measured in docs/estimate.md.  Source files cited
 * below are relative to its tree.  Pure: no I/O. */
#include "model/compute.h"
#include "util/errf.h"
#include "model/estimate_impl.h"
#include "model/ggml_type.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const est_part_names[] = {"weights", "kv", "rs", "compute", "output", "overhead"};

#define MIB (1024ull * 1024ull)
#define GGML_TYPE_F16 1
/* The per-GPU memory no llama.cpp buffer line reports: CUDA context,
 * cuBLAS workspace, ggml's CUDA pool ("unaccounted" in llama-server's
 * memory breakdown).  Measured 595-598 MiB on an H200 (CUDA 13.0, driver
 * 580) after warm-up, 528 MiB with no layer offloaded (docs/estimate.md);
 * Ollama reserves 457 MiB (ml/device.go MinimumMemory(), research §2.6),
 * which the H200 exceeds: gpumod takes the measured figure, rounded up. */
#define CUDA_OVERHEAD (600ull * MIB)

/* ---- architecture tables (llama.cpp src/llama-arch.cpp, src/models/) ---- */

static bool in_list(const char *arch, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(arch, *list)) return true;
    return false;
}

/* llm_arch_is_recurrent(): every layer is recurrent, no attention KV */
static const char *const arch_recurrent[] = {"mamba", "mamba2", "rwkv6", "rwkv6qwen2",
                                             "rwkv7", "arwkv7", NULL};
/* llm_arch_is_hybrid(), less deepseek4 (refused below) */
static const char *const arch_hybrid[] = {
    "jamba",     "falcon-h1",   "plamo2",      "granitehybrid",
    "lfm2",      "lfm2moe",     "nemotron_h",  "nemotron_h_moe",
    "qwen3next", "kimi-linear", "bailingmoe3", "kimi-k3",
    "qwen35",    "qwen35moe",   "minimax-01",  NULL};
/* llama_model::create_memory() returns no memory for these (encoders,
 * embedding and diffusion models): no KV at all */
static const char *const arch_no_memory[] = {
    "bert",     "jina-bert-v2", "jina-bert-v3",     "nomic-bert",  "nomic-bert-moe",
    "neo-bert", "eurobert",     "wavtokenizer-dec", "modern-bert", "gemma-embedding",
    "dream",    "llada",        "llada-moe",        "rnd1",        NULL};
/* cache layouts gpumod does not model (DSv4 compressed cache, MSA,
 * DSA+SWA, draft-model caches, encoder-decoder) */
static const char *const arch_unmodelled[] = {
    "deepseek4", "minimax-m3", "dots3note", "dflash", "gemma4-assistant", "t5", "t5encoder", NULL};
/* DSA: a second, indexer key cache beside the MLA cache
 * (src/llama-kv-cache-dsa.cpp) */
static const char *const arch_dsa[] = {"deepseek32", "glm-dsa", NULL};

/* Hard-coded SWA patterns (each src/models/<arch>.cpp load_arch_hparams:
 * hparams.set_swa_pattern(period, dense_first)); a
 * {arch}.attention.sliding_window_pattern key overrides the period or gives
 * the per-layer array.  window: the default when the key is absent (0:
 * the key is required, absent = no SWA).  period 0: the pattern is only
 * ever read from the per-layer array. */
typedef struct swa_rule {
    const char *arch;
    int period;
    bool dense_first;
    int64_t window;
} swa_rule;

static const swa_rule swa_rules[] = {
    {"gemma2", 2, false, 4096},
    {"gemma3", 6, false, 0},
    {"gemma3n", 5, false, 0},
    {"cohere2", 4, false, 0},
    {"cohere2moe", 4, true, 0},
    {"llama4", 4, false, 8192},
    {"gpt-oss", 2, false, 0},
    {"exaone-moe", 4, false, 128},
    {"olmo2", 4, false, 0},
    {"plamo3", 8, false, 0},
    {"smallthinker", 4, true, 0},
    {"afmoe", 4, false, 0},
    {"laguna", 4, true, 0},
    {"mellum", 4, false, 0},
    {"muse-glimmer", 4, false, 0},
    {"exaone4", 4, false, 4096},
    /* per-layer bool array only */
    {"gemma4", 0, false, 0},
    {"step35", 0, false, 0},
    {"mimo2", 0, false, 0},
    {"granite_swa", 0, false, 0},
};

static const swa_rule *swa_rule_for(const char *arch)
{
    for (size_t i = 0; i < sizeof swa_rules / sizeof swa_rules[0]; i++)
        if (!strcmp(swa_rules[i].arch, arch)) return &swa_rules[i];
    return NULL;
}


static int64_t arch_int(const gguf_file *g, const char *suffix, int64_t dflt)
{
    int64_t v;
    return gguf_get_arch_int(g, suffix, &v) == 0 ? v : dflt;
}

static int64_t vocab_size(const gguf_file *g)
{
    /* llama.cpp sizes logits by vocab.n_tokens(), the tokenizer's list */
    const gguf_kv *kv = gguf_get(g, "tokenizer.ggml.tokens");
    if (kv && kv->type == GGUF_T_ARRAY && kv->arr_n) return (int64_t)kv->arr_n;
    return arch_int(g, "vocab_size", 0);
}

/* A per-layer key into out[0..n): llama.cpp's get_key_or_arr fills the
 * first n_layer (not n_layer_all) entries, the NextN layers keep 0. */
static bool layers_key(const gguf_file *g, const char *suffix, int64_t *out, const hparams *h)
{
    for (int64_t i = 0; i < h->n_layer_all; i++)
        out[i] = 0;
    if (gguf_get_arch_layers(g, suffix, out, (size_t)h->n_layer) == 0) return true;
    return false;
}

/* SWA layers: src/llama-hparams.cpp set_swa_pattern(), or the per-layer
 * array when the file has one. */
static void load_swa(const gguf_file *g, hparams *h)
{
    const swa_rule *r = swa_rule_for(h->arch);
    int64_t win;
    bool has_win = gguf_get_arch_int(g, "attention.sliding_window", &win) == 0;
    /* no rule: the window key alone does not enable SWA (phi3 reads it and
     * runs without, src/models/phi3.cpp) */
    if (!r) return;
    /* exaone4: SWA only in the 32B, 64 layers (src/models/exaone4.cpp) */
    if (!strcmp(h->arch, "exaone4") && h->n_layer != 64) return;
    h->n_swa = has_win ? win : r->window;
    /* smallthinker forces the window once the key enables SWA */
    if (!strcmp(h->arch, "smallthinker") && has_win && win > 0) h->n_swa = 4096;
    if (h->n_swa <= 0) {
        h->n_swa = 0;
        return;
    }
    char key[160];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", h->arch);
    const gguf_kv *kv = gguf_get(g, key);
    if (kv && kv->type == GGUF_T_ARRAY) {
        int64_t v[MAX_LAYERS];
        if (gguf_get_arch_layers(g, "attention.sliding_window_pattern", v, (size_t)h->n_layer) == 0)
            for (int64_t i = 0; i < h->n_layer; i++)
                h->is_swa[i] = v[i] != 0;
        return;
    }
    int64_t period = r->period, p;
    if (kv && gguf_get_int(g, key, &p) == 0) period = p;
    if (!r->period && !kv) { /* array-only arch without its array */
        h->n_swa = 0;
        return;
    }
    for (int64_t il = 0; il < h->n_layer; il++)
        h->is_swa[il] =
            period == 0 || (r->dense_first ? il % period != 0 : il % period < period - 1);
}

/* Recurrent layers and attention (KV) layers: the layer filters of
 * llama_model::create_memory() (src/llama-model.cpp) and each hybrid's
 * is_recr_impl (src/models/<arch>.cpp). */
static void load_layer_kinds(const gguf_file *g, hparams *h)
{
    /* qwen3next & co: the attention.recurrent_layers array, else every
     * full_attention_interval-th layer (default 4) is attention */
    int64_t recr_arr[MAX_LAYERS];
    bool has_arr = gguf_get_arch_layers(g, "attention.recurrent_layers", recr_arr,
                                        (size_t)h->n_layer_all) == 0;
    int64_t interval = arch_int(g, "full_attention_interval", 4);
    for (int64_t il = 0; il < h->n_layer_all; il++) {
        bool main_layer = il < h->n_layer;
        bool recr = false, attn = main_layer;
        if (h->no_memory) {
            attn = false;
        } else if (h->recurrent_arch) {
            recr = main_layer;
            attn = false;
        } else if (h->hybrid) {
            if (!strcmp(h->arch, "falcon-h1")) {
                recr = attn = main_layer;
            } else if (!strcmp(h->arch, "qwen3next") || !strcmp(h->arch, "qwen35") ||
                       !strcmp(h->arch, "qwen35moe") || !strcmp(h->arch, "minimax-01")) {
                if (has_arr)
                    recr = main_layer && recr_arr[il] != 0;
                else
                    recr = main_layer && interval > 0 && (il + 1) % interval != 0;
                attn = main_layer && !recr;
            } else if (!strcmp(h->arch, "nemotron_h") || !strcmp(h->arch, "nemotron_h_moe")) {
                /* head_count_kv 0 and no FFN: Mamba; FFN-only layers have neither */
                recr = main_layer && h->head_kv[il] == 0 && h->ff[il] == 0;
                attn = main_layer && h->head_kv[il] > 0 && h->ff[il] == 0;
            } else {
                recr = main_layer && h->head_kv[il] == 0;
                attn = main_layer && !recr;
            }
        }
        h->is_recr[il] = recr;
        h->has_kv[il] = attn && h->head_kv[il] > 0;
    }
    /* gemma3n / gemma4: the last layers reuse earlier layers' KV
     * (src/llama-hparams.cpp has_kv, n_layer_kv_from_start) */
    int64_t from = -1;
    if (!strcmp(h->arch, "gemma3n")) from = 20;
    if (!strcmp(h->arch, "gemma4"))
        from = h->n_layer_all - arch_int(g, "attention.shared_kv_layers", 0);
    if (from >= 0)
        for (int64_t il = from; il < h->n_layer_all; il++)
            h->has_kv[il] = false;
}

static int load_hparams(const gguf_file *g, hparams *h, char *err, size_t errlen)
{
    memset(h, 0, sizeof *h);
    h->arch = gguf_get_str(g, "general.architecture");
    if (!h->arch) return errf_ret(-1, err, errlen, "cannot estimate: missing general.architecture");
    if (in_list(h->arch, arch_unmodelled))
        return errf_ret(-1, err, errlen,
                    "cannot estimate: architecture '%s' uses a cache layout gpumod does not model",
                    h->arch);
    h->recurrent_arch = in_list(h->arch, arch_recurrent);
    h->hybrid = in_list(h->arch, arch_hybrid);
    h->no_memory = in_list(h->arch, arch_no_memory);

    /* the keys llama.cpp cannot load without (src/llama-model.cpp
     * load_hparams); head_count is optional only for pure SSMs */
    char missing[256] = "";
    const char *need[] = {"block_count", "embedding_length", "attention.head_count"};
    int64_t v;
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        if (i == 2 && h->recurrent_arch) continue;
        if (gguf_get_arch_int(g, need[i], &v) == 0 ||
            (i == 2 && gguf_get_arch_layers(g, need[i], h->head, 1) == 0))
            continue;
        size_t n = strlen(missing);
        snprintf(missing + n, sizeof missing - n, "%s%s.%s", n ? ", " : "", h->arch, need[i]);
    }
    if (missing[0]) return errf_ret(-1, err, errlen, "cannot estimate: missing %s", missing);

    h->n_layer_all = arch_int(g, "block_count", 0);
    h->n_embd = arch_int(g, "embedding_length", 0);
    if (h->n_layer_all <= 0 || h->n_layer_all > MAX_LAYERS)
        return errf_ret(-1, err, errlen,
                    "cannot estimate: %s.block_count %lld is outside llama.cpp's 1..%d", h->arch,
                    (long long)h->n_layer_all, MAX_LAYERS);
    if (h->n_embd <= 0)
        return errf_ret(-1, err, errlen, "cannot estimate: %s.embedding_length is %lld", h->arch,
                    (long long)h->n_embd);
    int64_t nextn = arch_int(g, "nextn_predict_layers", 0);
    if (nextn < 0 || nextn >= h->n_layer_all)
        return errf_ret(-1, err, errlen,
                    "cannot estimate: %s.nextn_predict_layers %lld does not fit %lld layers",
                    h->arch, (long long)nextn, (long long)h->n_layer_all);
    h->n_layer = h->n_layer_all - nextn;
    h->n_ctx_train = arch_int(g, "context_length", 0);
    h->n_vocab = vocab_size(g);
    if (h->n_vocab <= 0)
        return errf_ret(-1, err, errlen, "cannot estimate: missing tokenizer.ggml.tokens (the vocabulary)");

    if (!layers_key(g, "attention.head_count", h->head, h) && !h->recurrent_arch)
        return errf_ret(-1, err, errlen,
                    "cannot estimate: %s.attention.head_count has fewer than %lld entries", h->arch,
                    (long long)h->n_layer);
    /* head_count_kv defaults to head_count */
    if (!layers_key(g, "attention.head_count_kv", h->head_kv, h))
        memcpy(h->head_kv, h->head, sizeof h->head);
    layers_key(g, "feed_forward_length", h->ff, h);

    /* per-head sizes default to n_embd / n_head of layer 0 */
    int64_t dflt = h->head[0] > 0 ? h->n_embd / h->head[0] : 0;
    h->head_k = arch_int(g, "attention.key_length", dflt);
    h->head_v = arch_int(g, "attention.value_length", dflt);
    h->head_k_swa = arch_int(g, "attention.key_length_swa", h->head_k);
    h->head_v_swa = arch_int(g, "attention.value_length_swa", h->head_v);
    /* MLA: is_mla() = both decompressed sizes present; the cache then holds
     * only the K latent (kv_lora_rank + rope dims = key_length) */
    h->mla = arch_int(g, "attention.key_length_mla", 0) > 0 &&
             arch_int(g, "attention.value_length_mla", 0) > 0;
    h->kv_lora_rank = arch_int(g, "attention.kv_lora_rank", 0);

    h->d_conv = arch_int(g, "ssm.conv_kernel", 0);
    h->d_inner = arch_int(g, "ssm.inner_size", 0);
    h->d_state = arch_int(g, "ssm.state_size", 0);
    h->n_group = arch_int(g, "ssm.group_count", 0);
    h->dt_rank = arch_int(g, "ssm.time_step_rank", 0);
    h->wkv_head = arch_int(g, "wkv.head_size", 0);
    h->token_shift = arch_int(g, "token_shift_count", 2);
    h->shortconv = arch_int(g, "shortconv.l_cache", 0);
    h->kda_head = arch_int(g, "kda.head_dim", 0);
    if (!strcmp(h->arch, "minimax-01")) h->la_head = h->head_k;

    h->n_expert = arch_int(g, "expert_count", 0);
    h->n_expert_used = arch_int(g, "expert_used_count", 0);
    h->n_ff_exp = arch_int(g, "expert_feed_forward_length", 0);
    h->n_ff_shexp = arch_int(g, "expert_shared_feed_forward_length", 0);
    h->n_expert_shared = arch_int(g, "expert_shared_count", 0);
    h->n_dense_lead = arch_int(g, "leading_dense_block_count", 0);

    h->causal = true;
    char key[160];
    snprintf(key, sizeof key, "%s.attention.causal", h->arch);
    gguf_get_bool(g, key, &h->causal);
    if (h->no_memory) h->causal = false; /* encoders, diffusion models */
    snprintf(key, sizeof key, "%s.pooling_type", h->arch);
    h->embedding = gguf_get(g, key) != NULL || !h->causal || h->no_memory;

    load_swa(g, h);
    load_layer_kinds(g, h);

    if (in_list(h->arch, arch_dsa)) {
        int64_t k = arch_int(g, "attention.indexer.key_length", 0);
        if (k <= 0)
            return errf_ret(-1, err, errlen, "cannot estimate: missing %s.attention.indexer.key_length",
                        h->arch);
        int64_t types[MAX_LAYERS];
        bool typed =
            !strcmp(h->arch, "glm-dsa") &&
            gguf_get_arch_layers(g, "attention.indexer.types", types, (size_t)h->n_layer) == 0;
        for (int64_t il = 0; il < h->n_layer; il++)
            h->idx_k[il] = !typed || types[il] ? k : 0;
    }
    return 0;
}

/* ---- placement: src/llama-model.cpp llama_model_base::load_tensors ---- */

/* Layers 0..n_layer_all-1 are the repeating blocks, n_layer_all is the
 * output layer.  -ngl N puts layers il >= n_layer_all + 1 - N on the GPUs:
 * the output layer first, then the last N - 1 blocks ("offloading output
 * layer to GPU", "offloading N-1 repeating layers").  Each GPU gets a
 * contiguous range by the cumulative --tensor-split proportions
 * (std::upper_bound over the normalized split points, in float). */
static void place_init(placement *pl, const hparams *h, const est_params *p)
{
    memset(pl, 0, sizeof *pl);
    pl->ndev = p->ndev;
    pl->n_layer_all = h->n_layer_all;
    int64_t ngl = p->ngl < 0 ? h->n_layer_all + 1 : p->ngl;
    pl->i_gpu_start = h->n_layer_all + 1 - ngl > 0 ? h->n_layer_all + 1 - ngl : 0;
    pl->act_gpu_layers = p->ndev ? (ngl < h->n_layer_all + 1 ? ngl : h->n_layer_all + 1) : 0;
    /* all 0: llama.cpp splits by each device's free memory at start-up;
     * a pure estimator cannot see it, so even (callers that know the free
     * memory pass it as the split) */
    bool all_zero = true;
    for (size_t i = 0; i < p->ndev; i++)
        if (p->split[i] != 0) all_zero = false;
    for (size_t i = 0; i < p->ndev; i++) /* nonsense proportions: even */
        if (!(p->split[i] >= 0)) all_zero = true;
    float sum = 0;
    for (size_t i = 0; i < p->ndev; i++) {
        sum += all_zero ? 1.0f : (float)p->split[i];
        pl->splits[i] = sum;
    }
    for (size_t i = 0; i < p->ndev; i++)
        pl->splits[i] /= sum;
}

/* the GPU of layer il (0..n_layer_all), or -1 for the host */
int est_layer_dev(const placement *pl, int64_t il)
{
    if (!pl->ndev || il < pl->i_gpu_start || il - pl->i_gpu_start >= pl->act_gpu_layers) return -1;
    float x = (float)(il - pl->i_gpu_start) / (float)pl->act_gpu_layers;
    for (size_t j = 0; j < pl->ndev; j++)
        if (pl->splits[j] > x) return (int)j;
    return (int)pl->ndev - 1;
}

/* "blk.N." -> N, else -1 */
static int64_t tensor_layer(const char *name, const char **rest)
{
    if (strncmp(name, "blk.", 4)) return -1;
    char *end;
    long long n = strtoll(name + 4, &end, 10);
    if (end == name + 4 || *end != '.' || n < 0) return -1;
    if (rest) *rest = end + 1;
    return n;
}

/* common/common.h LLM_FFN_EXPS_REGEX, searched (not anchored) in the name:
 * "\.ffn_(up|down|gate|gate_up)_(ch|)exps" */
static bool is_expert_tensor(const char *rest)
{
    static const char *const kinds[] = {"ffn_up_", "ffn_down_", "ffn_gate_", "ffn_gate_up_", NULL};
    for (const char *const *k = kinds; *k; k++) {
        size_t n = strlen(*k);
        if (strncmp(rest, *k, n)) continue;
        const char *s = rest + n;
        if (!strncmp(s, "ch", 2)) s += 2;
        if (!strncmp(s, "exps", 4)) return true;
    }
    return false;
}

/* input-layer tensors (LLM_TENSOR_LAYER_INPUT in src/llama-arch.cpp): kept
 * on the CPU, "very little benefit to offloading the input layer" */
static bool is_input_tensor(const char *name)
{
    static const char *const in[] = {"token_embd.", "position_embd.", "token_types.",
                                     "per_layer_token_embd.", NULL};
    for (const char *const *k = in; *k; k++)
        if (!strncmp(name, *k, strlen(*k))) return true;
    return false;
}

/* ---- the per-layer cache sizes ---- */

static int64_t pad256(int64_t x)
{
    return (x + 255) / 256 * 256;
}

int64_t est_head_k(const hparams *h, int64_t il)
{
    return h->is_swa[il] ? h->head_k_swa : h->head_k;
}

int64_t est_head_v(const hparams *h, int64_t il)
{
    return h->is_swa[il] ? h->head_v_swa : h->head_v;
}

/* -fa as llama_init_from_model (src/llama-context.cpp) resolves it: Grok
 * forces it off; a quantized V cache turns auto into on */
static int flash_attn_of(const hparams *h, const est_params *p)
{
    if (!strcmp(h->arch, "grok")) return 0;
    return p->flash_attn;
}

/* The cache-type checks of llama_init_from_model: it refuses these
 * contexts, so no memory figure would be true. */
static int check_cache_types(const hparams *h, const est_params *p, const ggml_type_info *tk,
                             const ggml_type_info *tv, char *err, size_t errlen)
{
    int fa = flash_attn_of(h, p);
    if (h->mla && p->type_k != p->type_v)
        return errf_ret(-1, err, errlen,
            "cannot estimate: llama.cpp refuses different K (%s) and V (%s) cache types for MLA",
            tk->name, tv->name);
    if (fa == 0 && tv->blck > 1)
        return errf_ret(-1, err, errlen,
            "cannot estimate: llama.cpp refuses a quantized V cache (%s) without flash attention",
            tv->name);
    for (int64_t il = 0; fa != 0 && il < h->n_layer; il++) {
        if (tk->blck > 1 && est_head_k(h, il) % tk->blck)
            return errf_ret(-1, err, errlen,
                "cannot estimate: llama.cpp refuses K cache type %s: block size %u does not divide "
                "the head size %lld",
                tk->name, tk->blck, (long long)est_head_k(h, il));
        if (tv->blck > 1 && est_head_v(h, il) % tv->blck)
            return errf_ret(-1, err, errlen,
                "cannot estimate: llama.cpp refuses V cache type %s: block size %u does not divide "
                "the head size %lld",
                tv->name, tv->blck, (long long)est_head_v(h, il));
    }
    return 0;
}

/* src/llama-context.cpp (ctor): n_ctx padded to 256; per-slot streams
 * unless kv_unified; batch sizes clamped by the unpadded context. */
static void ctx_init(ctxsize *c, const hparams *h, const est_params *p)
{
    int fa = flash_attn_of(h, p);
    memset(c, 0, sizeof *c);
    c->n_seq = p->parallel > 1 ? p->parallel : 1;
    c->n_stream = p->kv_unified ? 1 : c->n_seq;
    c->n_ctx = pad256(p->ctx);
    if (p->kv_unified) {
        c->n_ctx_seq = c->n_ctx;
    } else {
        c->n_ctx_seq = pad256(c->n_ctx / c->n_seq);
        c->n_ctx = c->n_ctx_seq * c->n_seq;
    }
    c->n_batch = !h->causal || p->n_batch < p->ctx ? p->n_batch : p->ctx;
    c->n_ubatch = p->n_ubatch < c->n_batch ? p->n_ubatch : c->n_batch;
    /* sched_reserve: the worst-case graph has min(n_ctx, n_ubatch) tokens
     * and, since llama.cpp #23861 (2026-06), llama-server's
     * n_outputs_max = n_parallel outputs (tools/server/server-context.cpp
     * server_output_limits); embedding models output every token */
    c->n_tokens = c->n_ctx < c->n_ubatch ? c->n_ctx : c->n_ubatch;
    c->n_out = h->embedding ? c->n_tokens : (c->n_seq < c->n_tokens ? c->n_seq : c->n_tokens);
    /* src/llama-kv-cache-iswa.cpp: the SWA cache, always padded to 256 */
    int64_t w = h->n_swa * (p->kv_unified ? c->n_seq : 1) + c->n_ubatch;
    c->swa_cells = p->swa_full ? c->n_ctx_seq : pad256(c->n_ctx_seq < w ? c->n_ctx_seq : w);
    /* V is stored transposed only when flash attention is off at cache
     * creation: -fa auto counts as on there (cparams.flash_attn =
     * type != DISABLED), so only an explicit -fa off transposes */
    c->v_trans = fa == 0;
    c->fa = fa != 0;
}

/* n_embd_v_gqa_max(): the width every transposed V row is padded to */
int64_t est_v_gqa_max(const hparams *h)
{
    int64_t m = 0;
    for (int64_t il = 0; il < h->n_layer_all; il++) {
        int64_t v = est_head_v(h, il) * h->head_kv[il];
        if (v > m) m = v;
    }
    return m;
}

/* bytes of one cell (token) of layer il's K and V: src/llama-kv-cache.cpp
 * ggml_new_tensor_3d(type_k, n_embd_k_gqa, kv_size, n_stream) */
static int kv_cell_bytes(const hparams *h, const ctxsize *c, const est_params *p, int64_t il,
                         uint64_t *out, char *err, size_t errlen)
{
    int64_t nk = est_head_k(h, il) * h->head_kv[il];
    int64_t nv = c->v_trans ? est_v_gqa_max(h) : est_head_v(h, il) * h->head_kv[il];
    uint64_t k = ggml_row_bytes(p->type_k, (uint64_t)nk);
    uint64_t v = h->mla ? 0 : ggml_row_bytes(p->type_v, (uint64_t)nv);
    if (nk > 0 && !k)
        return errf_ret(-1, err, errlen,
                    "cannot estimate: K cache type %s cannot hold rows of %lld (layer %lld)",
                    ggml_type_get(p->type_k)->name, (long long)nk, (long long)il);
    if (!h->mla && nv > 0 && !v)
        return errf_ret(-1, err, errlen,
                    "cannot estimate: V cache type %s cannot hold rows of %lld (layer %lld)",
                    ggml_type_get(p->type_v)->name, (long long)nv, (long long)il);
    if (h->idx_k[il]) {
        uint64_t ik = ggml_row_bytes(p->type_k, (uint64_t)h->idx_k[il]);
        if (!ik)
            return errf_ret(-1, err, errlen,
                        "cannot estimate: K cache type %s cannot hold indexer rows of %lld",
                        ggml_type_get(p->type_k)->name, (long long)h->idx_k[il]);
        k += ik;
    }
    *out = k + v;
    return 0;
}

/* src/llama-hparams.cpp n_embd_r() + n_embd_s(): one sequence's state */
uint64_t est_rs_r(const hparams *h)
{
    if (h->wkv_head) return (uint64_t)(h->token_shift * h->n_embd);
    if (h->shortconv) return (uint64_t)(h->n_embd * (h->shortconv - 1));
    if (h->kda_head)
        return (uint64_t)(3 * (h->d_conv > 0 ? h->d_conv - 1 : 3) * (h->head[0] * h->kda_head));
    return (uint64_t)((h->d_conv > 0 ? h->d_conv - 1 : 0) *
                      (h->d_inner + 2 * h->n_group * h->d_state));
}

uint64_t est_rs_s(const hparams *h)
{
    if (h->wkv_head) return (uint64_t)(h->n_embd * h->wkv_head);
    if (h->kda_head) return (uint64_t)(h->kda_head * h->kda_head * h->head[0]);
    if (h->la_head) return (uint64_t)(h->la_head * h->la_head * h->head[0]);
    return (uint64_t)(h->d_state * h->d_inner);
}

static uint64_t rs_row_elems(const hparams *h)
{
    return est_rs_r(h) + est_rs_s(h);
}

/* ---- public ---- */

void est_params_default(est_params *p)
{
    memset(p, 0, sizeof *p);
    p->ctx = 4096;
    p->parallel = 1;
    p->type_k = p->type_v = GGML_TYPE_F16;
    p->ngl = -1;
    p->flash_attn = -1;
    p->n_ubatch = 512;
    p->n_batch = 2048;
}

static int check_tensors(const gguf_file *g, char *err, size_t errlen)
{
    for (size_t i = 0; i < g->ntensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        if (!ggml_type_get(t->type))
            return errf_ret(-1, err, errlen,
                        "cannot estimate: tensor '%s' has ggml type %u, unknown to gpumod", t->name,
                        t->type);
        if (!t->nbytes)
            return errf_ret(-1, err, errlen, "cannot estimate: tensor '%s' has no computable size",
                        t->name);
    }
    if (g->unknown_types)
        return errf_ret(-1, err, errlen, "cannot estimate: a tensor has a ggml type unknown to gpumod");
    return 0;
}

/* The flags an estimate needs, each in its range.  0, or -1 with err. */
static int check_params(const est_params *p, char *err, size_t errlen)
{
    if (p->ctx <= 0)
        return errf_ret(-1, err, errlen, "cannot estimate: context size must be given and > 0 (got %lld)",
                        (long long)p->ctx);
    if (p->parallel < 1) return errf_ret(-1, err, errlen, "cannot estimate: --parallel must be >= 1");
    if (p->n_ubatch < 1 || p->n_batch < 1)
        return errf_ret(-1, err, errlen, "cannot estimate: batch sizes must be >= 1");
    if (p->ndev > EST_MAX_DEVICES)
        return errf_ret(-1, err, errlen, "cannot estimate: more than %d GPUs", EST_MAX_DEVICES);
    if (p->n_cpu_moe < 0) return errf_ret(-1, err, errlen, "cannot estimate: --n-cpu-moe must be >= 0");
    return 0;
}

/* n bytes of part on device d (-1: the host). */
static void add(estimate *out, int d, int part, uint64_t n)
{
    if (d < 0)
        out->host[part] += n;
    else
        out->dev[d][part] += n;
}

/* The weights, each tensor on its layer's device (the input layer on
 * the host, the norms of token_embd with the first layer, the rest with
 * the output layer). */
static void add_weights(const gguf_file *g, const hparams *h, const placement *pl, const est_params *p,
                        int out_dev, estimate *out)
{
    for (size_t i = 0; i < g->ntensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        const char *rest = NULL;
        int64_t il = tensor_layer(t->name, &rest);
        int dev;
        if (il >= 0 && il < h->n_layer_all) {
            /* NextN/MTP blocks are skipped (TENSOR_SKIP) unless
             * --spec-type draft-mtp, e.g. src/models/deepseek2.cpp */
            if (il >= h->n_layer) continue;
            dev = est_layer_dev(pl, il);
            /* --n-cpu-moe N: tensor_buft_overrides "blk\.i<regex>" to CPU
             * for i < N (common/arg.cpp) */
            if (il < p->n_cpu_moe && is_expert_tensor(rest)) dev = -1;
        } else if (is_input_tensor(t->name)) {
            dev = -1;
        } else if (!strncmp(t->name, "token_embd_norm.", 16)) {
            dev = est_layer_dev(pl, 0); /* "do the norms on the first layer" */
        } else {
            dev = out_dev;
        }
        add(out, dev, EST_WEIGHTS, t->nbytes);
    }
    /* tied output: token_embd is created a second time (TENSOR_DUPLICATED)
     * in the output layer's buffer, unless that buffer is the CPU one
     * (src/llama-model-loader.cpp create_tensor) */
    const gguf_tensor *embd = gguf_tensor_find(g, "token_embd.weight");
    if (!gguf_tensor_find(g, "output.weight") && embd && out_dev >= 0 && !h->no_memory)
        add(out, out_dev, EST_WEIGHTS, embd->nbytes);
}

/* KV (full and SWA caches) and recurrent state, on the layer's device
 * (offload_kqv default true).  0, or -1 with err. */
static int add_caches(const hparams *h, const ctxsize *c, const placement *pl, const est_params *p, estimate *out,
                      char *err, size_t errlen)
{
    uint64_t rs_row = rs_row_elems(h) * 4;
    for (int64_t il = 0; il < h->n_layer_all; il++) {
        int dev = est_layer_dev(pl, il);
        if (h->has_kv[il]) {
            uint64_t cell = 0;
            if (kv_cell_bytes(h, c, p, il, &cell, err, errlen)) return -1;
            uint64_t cells = (uint64_t)(h->is_swa[il] ? c->swa_cells : c->n_ctx_seq) * (uint64_t)c->n_stream;
            add(out, dev, EST_KV, cells * cell);
            out->kv_layers++;
            if (h->is_swa[il])
                out->swa_layers++;
            else
                out->kv_bytes_per_token += cell;
        }
        if (h->is_recr[il]) {
            /* src/llama-memory-recurrent.cpp: F32 r and s rows, one per
             * sequence, whatever -ctk/-ctv say */
            add(out, dev, EST_RS, rs_row * (uint64_t)c->n_seq);
            out->recurrent_layers++;
        }
    }
    out->swa_cells = out->swa_layers ? c->swa_cells * c->n_stream : 0;
    return 0;
}

/* The parts of one model on its devices and the host, once the
 * hyperparameters are known.  0, or -1 with err. */
static int estimate_parts(const gguf_file *g, const hparams *h, const est_params *p, estimate *out, char *err,
                          size_t errlen)
{
    placement pl;
    place_init(&pl, h, p);
    ctxsize c;
    ctx_init(&c, h, p);
    out->ndev = p->ndev;
    out->n_ctx = c.n_ctx;
    out->n_ctx_seq = c.n_ctx_seq;
    int64_t rep = h->n_layer_all - pl.i_gpu_start;
    out->n_layer_gpu = p->ndev && rep > 0 ? rep : 0;
    int out_dev = est_layer_dev(&pl, h->n_layer_all);

    add_weights(g, h, &pl, p, out_dev, out);
    if (add_caches(h, &c, &pl, p, out, err, errlen)) return -1;

    /* output buffer (src/llama-context.cpp output_reserve(n_seq_max)):
     * logits of n_seq_max rows, plus embeddings for embedding models; a
     * pinned host buffer of the output device, host memory either way */
    out->host[EST_OUTPUT] = (uint64_t)h->n_vocab * (uint64_t)c.n_seq * 4;
    if (h->embedding) out->host[EST_OUTPUT] += (uint64_t)h->n_embd * (uint64_t)c.n_seq * 4;

    /* compute: the worst-case graphs replayed through ggml's scheduler and
     * allocator (model/compute.c) */
    uint64_t csize[EST_MAX_DEVICES + 1];
    if (compute_buffers(g, h, &c, &pl, p, csize, err, errlen)) return -1;
    for (size_t d = 0; d < p->ndev; d++) out->dev[d][EST_COMPUTE] = csize[d];
    out->host[EST_COMPUTE] = csize[p->ndev];

    for (size_t d = 0; d < p->ndev; d++) out->dev[d][EST_OVERHEAD] = CUDA_OVERHEAD;
    for (size_t d = 0; d < p->ndev; d++)
        for (int k = 0; k < EST__PARTS; k++) out->dev_total[d] += out->dev[d][k];
    for (int k = 0; k < EST__PARTS; k++) out->host_total += out->host[k];
    return 0;
}

int estimate_llamacpp(const gguf_file *g, const est_params *p, estimate *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (check_params(p, err, errlen)) return -1;
    const ggml_type_info *tk = ggml_type_get(p->type_k), *tv = ggml_type_get(p->type_v);
    if (!tk || !tv)
        return errf_ret(-1, err, errlen, "cannot estimate: unknown KV cache type id %u", tk ? p->type_v : p->type_k);
    if (check_tensors(g, err, errlen)) return -1;

    hparams *h = calloc(1, sizeof *h);
    if (!h) return errf_ret(-1, err, errlen, "cannot estimate: out of memory");
    int rc = -1;
    if (!load_hparams(g, h, err, errlen) && !check_cache_types(h, p, tk, tv, err, errlen))
        rc = estimate_parts(g, h, p, out, err, errlen);
    free(h);
    return rc;
}

/* llama.cpp include/llama.h enum llama_ftype, named as llama_model_ftype_name
 * spells them (research/memory.md §1.5) */
static const char *ftype_name(int64_t ft)
{
    static const char *const names[] = {
        [0] = "F32",      [1] = "F16",      [2] = "Q4_0",       [3] = "Q4_1",    [7] = "Q8_0",
        [8] = "Q5_0",     [9] = "Q5_1",     [10] = "Q2_K",      [11] = "Q3_K_S", [12] = "Q3_K_M",
        [13] = "Q3_K_L",  [14] = "Q4_K_S",  [15] = "Q4_K_M",    [16] = "Q5_K_S", [17] = "Q5_K_M",
        [18] = "Q6_K",    [19] = "IQ2_XXS", [20] = "IQ2_XS",    [21] = "Q2_K_S", [22] = "IQ3_XS",
        [23] = "IQ3_XXS", [24] = "IQ1_S",   [25] = "IQ4_NL",    [26] = "IQ3_S",  [27] = "IQ3_M",
        [28] = "IQ2_S",   [29] = "IQ2_M",   [30] = "IQ4_XS",    [31] = "IQ1_M",  [32] = "BF16",
        [36] = "TQ1_0",   [37] = "TQ2_0",   [38] = "MXFP4_MOE",
    };
    /* LLAMA_FTYPE_GUESSED = 1024 is or-ed in when the converter guessed */
    int64_t base = ft >= 1024 ? ft - 1024 : ft;
    if (base < 0 || base >= (int64_t)(sizeof names / sizeof names[0])) return NULL;
    return names[base];
}

int model_describe(const gguf_file *g, model_summary *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *arch = gguf_get_str(g, "general.architecture");
    if (!arch) return errf_ret(-1, err, errlen, "missing general.architecture");
    snprintf(out->arch, sizeof out->arch, "%s", arch);
    const char *name = gguf_get_str(g, "general.name");
    if (name) snprintf(out->name, sizeof out->name, "%s", name);

    bool known = !g->unknown_types;
    for (size_t i = 0; i < g->ntensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        uint64_t n = 1;
        for (int d = 0; d < 4; d++)
            n *= (uint64_t)(t->ne[d] > 0 ? t->ne[d] : 1);
        out->n_params += n;
        out->weight_bytes += t->nbytes;
        if (!t->nbytes || !ggml_type_get(t->type)) known = false;
    }
    /* a partial sum would look like a size: 0 says "unknown" */
    if (!known) out->weight_bytes = 0;

    out->n_layer = arch_int(g, "block_count", 0);
    out->n_embd = arch_int(g, "embedding_length", 0);
    out->n_ctx_train = arch_int(g, "context_length", 0);
    out->n_vocab = vocab_size(g);
    out->n_expert = arch_int(g, "expert_count", 0);
    out->n_expert_used = arch_int(g, "expert_used_count", 0);
    out->kv_lora_rank = arch_int(g, "attention.kv_lora_rank", 0);
    out->file_type = -1;
    gguf_get_int(g, "general.file_type", &out->file_type);
    out->file_type_name = out->file_type >= 0 ? ftype_name(out->file_type) : NULL;

    /* heads, SWA, recurrent: as the estimator resolves them, when it can */
    hparams *h = calloc(1, sizeof *h);
    if (!h) return errf_ret(-1, err, errlen, "out of memory");
    char herr[256];
    if (load_hparams(g, h, herr, sizeof herr) == 0) {
        for (int64_t il = 0; il < h->n_layer_all; il++) {
            if (h->head[il] > out->n_head) out->n_head = h->head[il];
            if (h->head_kv[il] > out->n_head_kv) out->n_head_kv = h->head_kv[il];
            if (h->is_recr[il]) out->recurrent = true;
        }
        out->n_swa = h->n_swa;
        out->embedding = h->embedding;
    } else {
        int64_t v[MAX_LAYERS];
        size_t n = out->n_layer > 0 && out->n_layer <= MAX_LAYERS ? (size_t)out->n_layer : 1;
        if (gguf_get_arch_layers(g, "attention.head_count", v, n) == 0)
            for (size_t i = 0; i < n; i++)
                out->n_head = v[i] > out->n_head ? v[i] : out->n_head;
        if (gguf_get_arch_layers(g, "attention.head_count_kv", v, n) == 0)
            for (size_t i = 0; i < n; i++)
                out->n_head_kv = v[i] > out->n_head_kv ? v[i] : out->n_head_kv;
        else
            out->n_head_kv = out->n_head;
        out->recurrent = in_list(arch, arch_recurrent);
        char key[160];
        snprintf(key, sizeof key, "%s.pooling_type", arch);
        out->embedding = gguf_get(g, key) != NULL || in_list(arch, arch_no_memory);
    }
    free(h);
    return 0;
}
