/* compute.c - llama.cpp's worst-case compute graphs for a model, built from
 * its shape, and the buffers ggml reserves for them.
 *
 * llama_context::sched_reserve (src/llama-context.cpp) builds the graph of
 * one ubatch of min(n_ctx, n_ubatch) tokens (rounded up to a multiple of
 * n_seq_max) over n_seq_max sequences with min(n_tokens, n_outputs_max)
 * outputs (llama-server: one a slot), then the graph of one token a
 * sequence, and ggml sizes each backend's compute buffer to the larger.
 * This file builds those graphs node by node, in the order the model code
 * builds them (src/models/llama.cpp, qwen3moe.cpp, gemma3.cpp, mamba.cpp
 * and src/llama-graph.cpp build_inp_embd, build_attn, build_attn_mha,
 * build_ffn, build_moe_ffn, build_rs), and model/ggml_replay.c replays ggml's
 * scheduler and allocator over them.
 *
 * Replayed, and checked to the byte against llama-server (docs/estimate.md):
 * Llama-style decoders (with or without Q/K norms), Gemma-3 (post-norms,
 * sliding window), Qwen3-MoE and Mamba2, flash attention on or off, f16 or
 * quantized caches, on the CPU and with CUDA.  Other architectures get the
 * closest of these graphs, built from their hyperparameters and the tensors
 * the file has: MLA as one KV head of key_length, recurrent blocks other
 * than Mamba's as a projection, a state read and an output.  Those are an
 * approximation, and the docs say so. */
#include "model/compute.h"
#include "model/ggml_type.h"
#include "model/ggml_replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F32 0
#define F16 1
#define Q4_0 2
#define Q8_0 8
#define I32 26
#define I64 27
#define BF16 30

#define NE(a, b, c, d) ((const int64_t[4]){(a), (b), (c), (d)})

typedef struct gb {
    gr_graph *g;
    const gguf_file *file;
    const gguf_tensor **byname; /* the file's tensors sorted by name */
    const hparams *h;
    const ctxsize *c;
    const placement *pl;
    const est_params *p;
    int64_t T, n_out, ns, n_seq; /* tokens, outputs, KV streams, sequences of this graph */
    bool fa;                     /* flash attention as resolved */
    int cpu;                     /* the CPU's backend id: the number of GPUs */
    int dev;                     /* the backend of the layer being built */
    int64_t il;                  /* the layer being built, -1 outside the blocks */
    int pos, out_ids, s_copy, s_main, s_extra;
    int kidx[2], vidx[2], mask[2], krot[2], vrot[2]; /* [0] full cache, [1] SWA cache */
} gb;

/* tensor i; after running out of memory a stand-in (the build goes on
 * harmlessly and gr_reserve fails) */
static gr_tensor *tt(const gb *b, int i)
{
    static gr_tensor none = {.ne = {1, 1, 1, 1}};
    return b->g->oom ? &none : &b->g->t[i];
}

static int64_t ne(const gb *b, int t, int d)
{
    return tt(b, t)->ne[d];
}

static int64_t nelem(const gb *b, int t)
{
    return ne(b, t, 0) * ne(b, t, 1) * ne(b, t, 2) * ne(b, t, 3);
}

/* a node of up to three sources (-1: none) */
static int node(gb *b, gr_op op, uint32_t type, const int64_t n[4], int s0, int s1, int s2)
{
    int s[3] = {s0, s1, s2};
    return gr_new(b->g, op, type, n, s, 3);
}

/* a node with a's shape, f32 (elementwise ops) */
static int like(gb *b, gr_op op, int a, int s1)
{
    int64_t n[4];
    memcpy(n, tt(b, a)->ne, sizeof n);
    return node(b, op, F32, n, a, s1, -1);
}

static int view(gb *b, int a, int64_t n0, int64_t n1, int64_t n2, int64_t n3)
{
    return gr_view(b->g, GR_VIEW, a, NE(n0, n1, n2, n3), NULL, 0);
}

/* set_rows / cpy into a cache: a view of it the scheduler places */
static int write(gb *b, int dst, int data, int idx)
{
    int s[2] = {data, idx};
    int64_t n[4];
    memcpy(n, tt(b, dst)->ne, sizeof n);
    return gr_view(b->g, GR_WRITE, dst, n, s, idx >= 0 ? 2 : 1);
}

static int leaf(gb *b, uint8_t flags, int dev, uint32_t type, const int64_t n[4])
{
    int t = gr_new(b->g, GR_NONE, type, n, NULL, 0);
    tt(b, t)->flags = flags;
    tt(b, t)->dev = (int16_t)dev;
    return t;
}

static int input(gb *b, uint32_t type, int64_t n0, int64_t n1, int64_t n2, int64_t n3)
{
    return leaf(b, GR_INPUT, 0, type, NE(n0, n1, n2, n3));
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const gguf_tensor *const *)a)->name, (*(const gguf_tensor *const *)b)->name);
}

static const gguf_tensor *file_tensor(const gb *b, const char *name)
{
    char full[160];
    if (b->il >= 0)
        snprintf(full, sizeof full, "blk.%lld.%s", (long long)b->il, name);
    else
        snprintf(full, sizeof full, "%s", name);
    if (!b->byname) return NULL;
    gguf_tensor key = {.name = full};
    const gguf_tensor *kp = &key, *const *r = bsearch(&kp, b->byname, b->file->ntensors,
                                                      sizeof *b->byname, by_name);
    return r ? *r : NULL;
}

static bool has(const gb *b, const char *name)
{
    return file_tensor(b, name) != NULL;
}

/* a weight on backend dev: the file's tensor when it has it (its type and
 * shape are what op_offload copies to a GPU), else an f16 one of the shape
 * the graph needs */
static int weight_on(gb *b, const char *name, int dev, int64_t n0, int64_t n1, int64_t n2)
{
    const gguf_tensor *t = file_tensor(b, name);
    if (t) {
        int64_t n[4];
        memcpy(n, t->ne, sizeof n);
        return leaf(b, GR_WEIGHT, dev, t->type, n);
    }
    return leaf(b, GR_WEIGHT, dev, F16, NE(n0, n1, n2, 1));
}

static int weight(gb *b, const char *name, int64_t n0, int64_t n1)
{
    return weight_on(b, name, b->dev, n0, n1, 1);
}

static int mm(gb *b, int w, int x, int64_t rows)
{
    return node(b, GR_MUL_MAT, F32, NE(rows, ne(b, x, 1), ne(b, x, 2), ne(b, x, 3)), w, x, -1);
}

/* build_norm(LLM_NORM_RMS): rms_norm, then the weight multiplied in place */
static int rms(gb *b, int x, const char *w)
{
    int n = like(b, GR_INPLACE, x, -1);
    return like(b, GR_INPLACE, n, weight(b, w, ne(b, x, 0), 1));
}

static int backend_of(const gb *b, int64_t il)
{
    int d = est_layer_dev(b->pl, il);
    return d < 0 ? b->cpu : d;
}

/* ---- attention ---- */

static bool quantized(uint32_t type)
{
    const ggml_type_info *t = ggml_type_get(type);
    return t && t->blck > 1;
}

/* the flash-attention kernels CUDA has (ggml-cuda/fattn.cu
 * ggml_cuda_get_best_fattn_kernel): without one the op falls back to the
 * CPU, and -fa auto resolves to off */
static bool cuda_fa(const gb *b, int64_t il, int64_t n_kv)
{
    const hparams *h = b->h;
    int64_t hk = est_head_k(h, il), hv = est_head_v(h, il);
    int64_t gqa = h->head_kv[il] > 0 ? h->head[il] / h->head_kv[il] : 0;
    bool gqa_opt = gqa >= 2 && n_kv % 256 == 0;
    uint32_t tk = b->p->type_k, tv = b->p->type_v;
    bool ok_type = tk == tv && (tk == F32 || tk == F16 || tk == Q4_0 || tk == Q8_0 || tk == BF16);
    if (!ok_type) return false;
    switch (hk) {
    case 40:
    case 64:
    case 72:
    case 80:
    case 96:
    case 112:
    case 128:
    case 256:
        return hv == hk;
    case 192:
        return hv == 128 && gqa_opt && gqa % 8 == 0;
    case 320:
        return hv == 256 && gqa_opt && gqa % 32 == 0;
    case 512:
        return hv == 512 && gqa_opt;
    case 576:
        return hv == 512 && gqa_opt;
    default:
        return false;
    }
}

/* CUDA allocates f16 copies of a K and V that are not f16 inside the
 * flash-attention result (ggml_cuda_flash_attn_ext_get_alloc_size) unless
 * it picks the vector kernel, which it does for one or two tokens a
 * sequence with a head of at most 256 that 64 divides */
static uint64_t cuda_fa_extra(const gb *b, int64_t il, int64_t n_kv)
{
    const hparams *h = b->h;
    int64_t hk = est_head_k(h, il), hv = est_head_v(h, il);
    bool vec = b->T / b->ns <= 2 && hk <= 256 && hk % 64 == 0;
    uint64_t cells = (uint64_t)(h->head_kv[il] * n_kv * b->ns), x = 0;
    uint32_t tk = b->p->type_k, tv = b->p->type_v;
    if (tk != F16 && (!vec || tk == F32)) x += (uint64_t)hk * cells * 2;
    if (tv != F16 && (!vec || tv == F32) && !h->mla) x += (uint64_t)hv * cells * 2;
    return x;
}

/* the graph inputs of a cache (build_attn_inp_kv[_iswa]): made once, they
 * enter the graph where a layer first uses them */
static void kv_inputs(gb *b, int w, int64_t n_kv)
{
    if (b->mask[w] >= 0) return;
    const hparams *h = b->h;
    b->kidx[w] = input(b, I64, b->T, 1, 1, 1);
    /* a transposed V is stored element by element */
    b->vidx[w] = input(b, I64, b->T * (b->c->v_trans ? est_v_gqa_max(h) : 1), 1, 1, 1);
    b->mask[w] = input(b, b->fa ? F16 : F32, n_kv, b->T / b->ns, 1, b->ns);
    /* llama-kv-cache.cpp: a quantized cache rotates K (and V) by a
     * Hadamard matrix when the head size is a multiple of 64 */
    int64_t hk = w ? h->head_k_swa : h->head_k, hv = w ? h->head_v_swa : h->head_v;
    if (quantized(b->p->type_k) && h->head_k % 64 == 0 && hk > 0) {
        int64_t n = 64;
        while (hk % (n * 2) == 0)
            n *= 2;
        b->krot[w] = input(b, F32, n, n, 1, 1);
    }
    if (quantized(b->p->type_v) && h->head_v % 64 == 0 && hv > 0)
        b->vrot[w] = input(b, F32, 64, 64, 1, 1);
}

/* llama_mul_mat_hadamard: x (contiguous) times the rotation, row by row */
static int hadamard(gb *b, int x, int rot)
{
    int64_t n = ne(b, rot, 0), rows = nelem(b, x) / n;
    int64_t s[4] = {ne(b, x, 0), ne(b, x, 1), ne(b, x, 2), ne(b, x, 3)};
    int r = view(b, x, n, rows, 1, 1);
    r = node(b, GR_MUL_MAT, F32, NE(n, rows, 1, 1), rot, r, -1);
    return view(b, r, s[0], s[1], s[2], s[3]);
}

/* store K and V (llama_kv_cache::cpy_k, cpy_v) */
static void kv_store(gb *b, int w, int k, int v, int64_t n_kv)
{
    const hparams *h = b->h;
    int64_t il = b->il, nkv = h->head_kv[il];
    int64_t hk = est_head_k(h, il), hv = est_head_v(h, il);
    int kc = leaf(b, GR_STORED, b->dev, b->p->type_k, NE(nkv * hk, n_kv, b->ns, 1));
    gr_expand(b->g, write(b, kc, view(b, k, nkv * hk, b->T, 1, 1), b->kidx[w]));
    int vc = leaf(b, GR_STORED, b->dev, b->p->type_v, NE(nkv * hv, n_kv, b->ns, 1));
    int vv = view(b, v, nkv * hv, b->T, 1, 1);
    if (b->c->v_trans) {
        /* TAG_V_CACHE_VARIABLE: rows narrower than the widest are padded */
        int64_t wmax = est_v_gqa_max(h);
        if (nkv * hv < wmax) vv = node(b, GR_OTHER, F32, NE(wmax, b->T, 1, 1), vv, -1, -1);
        vv = view(b, vv, 1, nelem(b, vv), 1, 1);
    }
    gr_expand(b->g, write(b, vc, vv, b->vidx[w]));
}

/* build_attn_mha over the cache: flash attention, or KQ, softmax, KQV */
static int attn_core(gb *b, int q, int w, int64_t n_kv)
{
    const hparams *h = b->h;
    int64_t il = b->il, T = b->T, ns = b->ns, nh = h->head[il], nkv = h->head_kv[il];
    int64_t hk = est_head_k(h, il), hv = est_head_v(h, il);
    int kc = leaf(b, GR_STORED, b->dev, b->p->type_k, NE(nkv * hk, n_kv, ns, 1));
    int vc = leaf(b, GR_STORED, b->dev, b->p->type_v, NE(nkv * hv, n_kv, ns, 1));
    int qv = view(b, view(b, q, hk, nh, T / ns, ns), hk, T / ns, nh, ns);
    int kv = view(b, view(b, kc, hk, nkv, n_kv, ns), hk, n_kv, nkv, ns);
    int vview = view(b, view(b, vc, hv, nkv, n_kv, ns), hv, n_kv, nkv, ns);
    if (b->fa) {
        int s[4] = {qv, kv, vview, b->mask[w]};
        int o = gr_new(b->g, GR_FLASH_ATTN, F32, NE(hv, nh, T / ns, ns), s, 4);
        tt(b, o)->extra = cuda_fa_extra(b, il, n_kv);
        if (!cuda_fa(b, il, n_kv)) tt(b, o)->flags |= GR_HOSTOP;
        gr_expand(b->g, o);
        return view(b, o, hv * nh, T, 1, 1);
    }
    int kq = node(b, GR_MUL_MAT, F32, NE(n_kv, T / ns, nh, ns), kv, qv, -1);
    kq = like(b, GR_INPLACE, kq, b->mask[w]); /* soft_max_ext */
    /* a V cache made for flash attention (-fa auto resolved off later) is
     * transposed into a copy first */
    if (!b->c->v_trans)
        vview = node(b, GR_OTHER, b->p->type_v, NE(n_kv, hv, nkv, ns), vview, -1, -1);
    int kqv = node(b, GR_MUL_MAT, F32, NE(hv, T / ns, nh, ns), vview, kq, -1);
    int o = node(b, GR_OTHER, F32, NE(hv * nh, T, 1, 1), view(b, kqv, hv, nh, T / ns, ns), -1, -1);
    gr_expand(b->g, o);
    return o;
}

/* the self-attention block (build_qkv, rope, build_attn) on normed x */
static int attention(gb *b, int x)
{
    const hparams *h = b->h;
    int64_t il = b->il, T = b->T, E = h->n_embd, nh = h->head[il], nkv = h->head_kv[il];
    int64_t hk = est_head_k(h, il), hv = est_head_v(h, il);
    int w = h->is_swa[il] ? 1 : 0;
    int64_t n_kv = w ? b->c->swa_cells : b->c->n_ctx_seq;
    kv_inputs(b, w, n_kv);
    if (b->pos < 0) b->pos = input(b, I32, T, 1, 1, 1);
    int q, k, v;
    if (has(b, "attn_qkv.weight")) {
        /* fused QKV (Phi-3, Falcon, GPT-NeoX, ...): one product, three
         * views of it, which lives until the last of them is used */
        int64_t wide = nh * hk + nkv * hk + nkv * hv;
        int qkv = mm(b, weight(b, "attn_qkv.weight", E, wide), x, wide);
        q = view(b, qkv, hk, nh, T, 1);
        k = view(b, qkv, hk, nkv, T, 1);
        v = view(b, qkv, hv, nkv, T, 1);
    } else {
        q = view(b, mm(b, weight(b, "attn_q.weight", E, nh * hk), x, nh * hk), hk, nh, T, 1);
        k = view(b, mm(b, weight(b, "attn_k.weight", E, nkv * hk), x, nkv * hk), hk, nkv, T, 1);
        v = view(b, mm(b, weight(b, "attn_v.weight", E, nkv * hv), x, nkv * hv), hv, nkv, T, 1);
    }
    /* Q/K norms (Qwen3, Gemma-3): a new tensor the rope then works in */
    if (has(b, "attn_q_norm.weight")) q = rms(b, q, "attn_q_norm.weight");
    q = like(b, GR_ROPE, q, b->pos);
    if (has(b, "attn_k_norm.weight")) k = rms(b, k, "attn_k_norm.weight");
    k = like(b, GR_ROPE, k, b->pos);
    if (b->krot[w] >= 0) {
        q = hadamard(b, q, b->krot[w]);
        k = hadamard(b, k, b->krot[w]);
    }
    if (b->vrot[w] >= 0) v = hadamard(b, v, b->vrot[w]);
    /* the order the nodes enter the graph: q, k, v with an SWA cache
     * (build_attn over llm_graph_input_attn_kv_iswa), else q, v, k */
    gr_expand(b->g, q);
    gr_expand(b->g, h->n_swa > 0 ? k : v);
    gr_expand(b->g, h->n_swa > 0 ? v : k);
    if (h->has_kv[il]) kv_store(b, w, k, v, n_kv);
    int o = attn_core(b, q, w, n_kv);
    if (b->vrot[w] >= 0) o = hadamard(b, o, b->vrot[w]);
    return mm(b, weight(b, "attn_output.weight", nh * hv, E), o, E);
}

/* attention without a cache (encoders: build_attn_inp_no_cache): K and V
 * of this batch, cast to f16 for flash attention */
static int attention_nocache(gb *b, int x)
{
    const hparams *h = b->h;
    int64_t il = b->il, T = b->T, E = h->n_embd, nh = h->head[il], nkv = h->head_kv[il];
    int64_t hk = est_head_k(h, il), hv = est_head_v(h, il);
    if (b->mask[0] < 0) b->mask[0] = input(b, b->fa ? F16 : F32, T, T, 1, 1);
    int q = mm(b, weight(b, "attn_q.weight", E, nh * hk), x, nh * hk);
    int k = mm(b, weight(b, "attn_k.weight", E, nkv * hk), x, nkv * hk);
    int v = mm(b, weight(b, "attn_v.weight", E, nkv * hv), x, nkv * hv);
    int qv = view(b, q, hk, T, nh, 1), kv = view(b, k, hk, T, nkv, 1),
        vv = view(b, v, hv, T, nkv, 1);
    int o;
    if (b->fa) {
        kv = node(b, GR_OTHER, F16, NE(hk, T, nkv, 1), kv, -1, -1);
        vv = node(b, GR_OTHER, F16, NE(hv, T, nkv, 1), vv, -1, -1);
        int s[4] = {qv, kv, vv, b->mask[0]};
        o = gr_new(b->g, GR_FLASH_ATTN, F32, NE(hv, nh, T, 1), s, 4);
        o = view(b, o, hv * nh, T, 1, 1);
    } else {
        int kq =
            like(b, GR_INPLACE, node(b, GR_MUL_MAT, F32, NE(T, T, nh, 1), kv, qv, -1), b->mask[0]);
        vv = node(b, GR_OTHER, F32, NE(T, hv, nkv, 1), vv, -1, -1);
        int kqv = node(b, GR_MUL_MAT, F32, NE(hv, T, nh, 1), vv, kq, -1);
        o = node(b, GR_OTHER, F32, NE(hv * nh, T, 1, 1), kqv, -1, -1);
    }
    return mm(b, weight(b, "attn_output.weight", nh * hv, E), o, E);
}

/* ---- feed-forward ---- */

/* build_ffn: up and (gated) gate, their GLU or the activation in place,
 * down; names are the tensors' suffixes ("ffn_up.weight", ...) */
static int ffn(gb *b, int x, const char *up, const char *gate, const char *down, int64_t width)
{
    int64_t E = b->h->n_embd, tn = ne(b, x, 1);
    const gguf_tensor *wu = file_tensor(b, up);
    int a;
    if (wu && !has(b, gate) && wu->ne[1] == 2 * width) {
        /* gate and up fused in one tensor (Phi-3: LLM_FFN_SWIGLU), split
         * by ggml_swiglu */
        int u = mm(b, weight(b, up, E, 2 * width), x, 2 * width);
        a = node(b, GR_OTHER, F32, NE(width, tn, 1, 1), u, -1, -1);
    } else if (wu && !has(b, gate)) {
        /* no gate: the activation in place */
        a = like(b, GR_INPLACE, mm(b, weight(b, up, E, width), x, width), -1);
    } else {
        /* a file without the layer's tensors (a bare header) counts as
         * gated: up, gate, their GLU */
        int u = mm(b, weight(b, up, E, width), x, width);
        int g = mm(b, weight(b, gate, E, width), x, width);
        a = node(b, GR_OTHER, F32, NE(width, tn, 1, 1), g, u, -1);
    }
    return mm(b, weight(b, down, width, E), a, E);
}

/* an expert tensor: on the host for the first --n-cpu-moe blocks */
static int expert(gb *b, const char *name, int64_t n0, int64_t n1)
{
    int dev = b->il < b->p->n_cpu_moe ? b->cpu : b->dev;
    return weight_on(b, name, dev, n0, n1, b->h->n_expert);
}

/* build_moe_ffn with softmax gating and normalized weights (Qwen3-MoE):
 * router logits, top-k, weights, the used experts' up/gate/GLU/down by
 * mul_mat_id, weighted and summed expert by expert; shared experts after */
static int moe(gb *b, int x)
{
    const hparams *h = b->h;
    int64_t E = h->n_embd, n = h->n_expert, nu = h->n_expert_used, tn = ne(b, x, 1);
    int64_t fe = h->n_ff_exp ? h->n_ff_exp : h->ff[b->il];
    int probs = like(b, GR_INPLACE, mm(b, weight(b, "ffn_gate_inp.weight", E, n), x, n), -1);
    int sel = view(b, node(b, GR_OTHER, I32, NE(n, tn, 1, 1), probs, -1, -1), nu, tn, 1, 1);
    int wts = node(b, GR_GET_ROWS, F32, NE(1, nu, tn, 1), view(b, probs, 1, n, tn, 1), sel, -1);
    int w2 = view(b, wts, nu, tn, 1, 1);
    int sum = node(b, GR_OTHER, F32, NE(1, tn, 1, 1), w2, -1, -1);
    sum = node(b, GR_OTHER, F32, NE(1, tn, 1, 1), sum, -1, -1); /* clamp */
    int w3 = view(b, node(b, GR_INPLACE, F32, NE(nu, tn, 1, 1), w2, sum, -1), 1, nu, tn, 1);
    gr_expand(b->g, w3);
    int x3 = view(b, x, E, 1, tn, 1);
    int up = node(b, GR_MUL_MAT_ID, F32, NE(fe, nu, tn, 1), expert(b, "ffn_up_exps.weight", E, fe),
                  x3, sel);
    int a;
    if (has(b, "ffn_gate_exps.weight") || !has(b, "ffn_up_exps.weight")) {
        int g = node(b, GR_MUL_MAT_ID, F32, NE(fe, nu, tn, 1),
                     expert(b, "ffn_gate_exps.weight", E, fe), x3, sel);
        a = node(b, GR_OTHER, F32, NE(fe, nu, tn, 1), g, up, -1);
    } else {
        a = like(b, GR_INPLACE, up, -1);
    }
    int ex = node(b, GR_MUL_MAT_ID, F32, NE(E, nu, tn, 1), expert(b, "ffn_down_exps.weight", fe, E),
                  a, sel);
    ex = like(b, GR_INPLACE, ex, w3);
    gr_expand(b->g, ex);
    int out = view(b, ex, E, tn, 1, 1);
    gr_expand(b->g, out);
    for (int64_t i = 1; i < nu; i++) {
        int vi = view(b, ex, E, tn, 1, 1);
        gr_expand(b->g, vi);
        out = node(b, GR_INPLACE, F32, NE(E, tn, 1, 1), out, vi, -1);
        gr_expand(b->g, out);
    }
    if (nu == 1) out = node(b, GR_OTHER, F32, NE(E, tn, 1, 1), out, -1, -1);
    int64_t sh = h->n_ff_shexp ? h->n_ff_shexp : fe * h->n_expert_shared;
    if (sh > 0 || has(b, "ffn_up_shexp.weight")) {
        if (!sh) sh = fe;
        int s =
            ffn(b, x, "ffn_up_shexp.weight", "ffn_gate_shexp.weight", "ffn_down_shexp.weight", sh);
        out = node(b, GR_INPLACE, F32, NE(E, tn, 1, 1), out, s, -1);
    }
    return out;
}

/* ---- recurrent state ---- */

/* build_rs: clear the zero slot in place, read the sequences' rows (or run
 * f on them), copy the rows no sequence of this batch uses */
static int rs_read(gb *b, int all, int64_t size, int (*f)(gb *, int, void *), void *arg)
{
    int st = view(b, all, size, b->n_seq, 1, 1);
    gr_expand(b->g, write(b, all, view(b, st, size, 1, 1, 1), -1));
    int out =
        f ? f(b, st, arg) : node(b, GR_GET_ROWS, F32, NE(size, b->n_seq, 1, 1), st, b->s_main, -1);
    gr_expand(b->g, out);
    int extra = node(b, GR_GET_ROWS, F32, NE(size, 0, 1, 1), st, b->s_extra, -1);
    gr_expand(b->g, write(b, all, extra, -1));
    return out;
}

typedef struct scan_args {
    int x, dt, B, C;
    int64_t n, hd, nh;
} scan_args;

static int ssm_scan(gb *b, int st, void *arg)
{
    const scan_args *a = arg;
    const hparams *h = b->h;
    int ssm = view(b, st, h->d_state, a->hd, a->nh, b->n_seq);
    int A = weight(b, "ssm_a", 1, h->dt_rank);
    int s[7] = {ssm, a->x, a->dt, A, a->B, a->C, b->s_main};
    return gr_new(b->g, GR_OTHER, F32, NE(a->n, 1, 1, 1), s, 7);
}

/* build_mamba2_layer (src/models/mamba-base.cpp) on normed x */
static int mamba2(gb *b, int x)
{
    const hparams *h = b->h;
    int64_t E = h->n_embd, di = h->d_inner, ds = h->d_state, ng = h->n_group > 0 ? h->n_group : 1;
    int64_t nh = h->dt_rank > 0 ? h->dt_rank : 1, dc = h->d_conv > 1 ? h->d_conv : 2;
    int64_t ns = b->n_seq, nst = b->T / ns, hd = di / nh, conv_dim = di + 2 * ng * ds;
    int64_t d_in = 2 * di + 2 * ng * ds + nh;
    int conv_all = leaf(b, GR_STORED, b->dev, F32, NE((int64_t)est_rs_r(h), ns, 1, 1));
    int conv =
        view(b, rs_read(b, conv_all, (int64_t)est_rs_r(h), NULL, NULL), dc - 1, conv_dim, ns, 1);
    int zx = mm(b, weight(b, "ssm_in.weight", E, d_in), view(b, x, E, nst, ns, 1), d_in);
    int z = view(b, zx, hd, nh, nst, ns), dt = view(b, zx, nh, nst, ns, 1);
    int xbc = view(b, view(b, zx, conv_dim, nst, ns, 1), nst, conv_dim, ns, 1);
    int cx = node(b, GR_OTHER, F32, NE(dc - 1 + nst, conv_dim, ns, 1), conv, xbc, -1);
    gr_expand(b->g, write(b, conv_all, view(b, cx, dc - 1, conv_dim, ns, 1), -1));
    xbc = node(b, GR_OTHER, F32, NE(conv_dim, nst, ns, 1), cx,
               weight(b, "ssm_conv1d.weight", dc, conv_dim), -1);
    xbc = like(b, GR_INPLACE, like(b, GR_INPLACE, xbc, weight(b, "ssm_conv1d.bias", conv_dim, 1)),
               -1);
    scan_args a = {.x = view(b, xbc, hd, nh, nst, ns), .hd = hd, .nh = nh};
    a.B = view(b, xbc, ds, ng, nst, ns);
    a.C = view(b, xbc, ds, ng, nst, ns);
    a.dt = like(b, GR_INPLACE, node(b, GR_OTHER, F32, NE(nh, nst, ns, 1), dt, -1, -1),
                weight(b, "ssm_dt.bias", nh, 1));
    a.n = hd * nh * nst * ns + (int64_t)est_rs_s(h) * ns;
    int ssm_all = leaf(b, GR_STORED, b->dev, F32, NE((int64_t)est_rs_s(h), ns, 1, 1));
    int y = rs_read(b, ssm_all, (int64_t)est_rs_s(h), ssm_scan, &a);
    gr_expand(b->g, write(b, ssm_all, view(b, y, (int64_t)est_rs_s(h), ns, 1, 1), -1));
    int xd = node(b, GR_INPLACE, F32, NE(hd, nh, nst, ns), a.x, weight(b, "ssm_d", 1, nh), -1);
    y = node(b, GR_INPLACE, F32, NE(hd, nh, nst, ns), view(b, y, hd, nh, nst, ns), xd, -1);
    y = node(b, GR_OTHER, F32, NE(hd, nh, nst, ns),
             node(b, GR_OTHER, F32, NE(hd, nh, nst, ns), z, -1, -1), y, -1);
    y = rms(b, view(b, y, di / ng, ng, nst, ns), "ssm_norm.weight");
    int out = mm(b, weight(b, "ssm_out.weight", di, E), view(b, y, di, nst, ns, 1), E);
    return view(b, out, E, b->T, 1, 1);
}

/* other recurrent blocks (RWKV, gated delta net, KDA, short convolutions):
 * not replayed; a projection three residual widths wide, the state rows,
 * their joint output and the output projection stand for them */
static int recurrent_other(gb *b, int x)
{
    const hparams *h = b->h;
    int64_t E = h->n_embd, size = (int64_t)(est_rs_r(h) + est_rs_s(h));
    int all = leaf(b, GR_STORED, b->dev, F32, NE(size, b->n_seq, 1, 1));
    int st = rs_read(b, all, size, NULL, NULL);
    int pr = mm(b, weight(b, "ssm_in.weight", E, 3 * E), x, 3 * E);
    int y =
        node(b, GR_OTHER, F32, NE(E * b->T + (int64_t)est_rs_s(h) * b->n_seq, 1, 1, 1), pr, st, -1);
    gr_expand(b->g, write(b, all, y, -1));
    return mm(b, weight(b, "ssm_out.weight", E, E), view(b, y, E, b->T, 1, 1), E);
}

/* ---- the graph ---- */

/* one block: the mixer (attention and/or recurrent) on the normed input and
 * its residual, then the FFN and its residual; the last block keeps only
 * the output rows before its FFN (inp_out_ids) */
static int block(gb *b, int inp)
{
    const hparams *h = b->h;
    int64_t il = b->il, E = h->n_embd;
    bool attn = h->head_kv[il] > 0 && h->head[il] > 0 && (!h->is_recr[il] || h->has_kv[il]);
    bool ffn_on = h->ff[il] > 0 || (h->n_expert > 0 && il >= h->n_dense_lead);
    bool last = il == h->n_layer - 1;
    int res = inp, cur = inp;
    if (attn || h->is_recr[il]) {
        int x = rms(b, inp, "attn_norm.weight");
        int m = -1;
        if (attn) m = h->no_memory ? attention_nocache(b, x) : attention(b, x);
        if (h->is_recr[il]) {
            int r = h->d_inner > 0 && !h->wkv_head && !h->kda_head ? mamba2(b, x)
                                                                   : recurrent_other(b, x);
            m = m >= 0 ? node(b, GR_INPLACE, F32, NE(E, b->T, 1, 1), m, r, -1) : r;
        }
        cur = m;
    }
    if (last) {
        if (cur != inp) cur = node(b, GR_GET_ROWS, F32, NE(E, b->n_out, 1, 1), cur, b->out_ids, -1);
        res = node(b, GR_GET_ROWS, F32, NE(E, b->n_out, 1, 1), res, b->out_ids, -1);
        if (cur == inp) cur = res;
    }
    if (cur != res) {
        /* Gemma-2/3 normalize the mixer's output before the residual */
        if (has(b, "post_attention_norm.weight")) cur = rms(b, cur, "post_attention_norm.weight");
        cur = like(b, GR_INPLACE, cur, res);
    }
    if (!ffn_on) return cur;
    int x = rms(b, cur, "ffn_norm.weight");
    int y = h->n_expert > 0 && il >= h->n_dense_lead
                ? moe(b, x)
                : ffn(b, x, "ffn_up.weight", "ffn_gate.weight", "ffn_down.weight", h->ff[il]);
    if (has(b, "post_ffw_norm.weight")) y = rms(b, y, "post_ffw_norm.weight");
    return like(b, GR_INPLACE, y, cur);
}

/* llm_graph_context::build_inp_embd on the host, every block, the output
 * norm and (but for encoders) the logits of the output rows */
static int build(gb *b)
{
    const hparams *h = b->h;
    int64_t E = h->n_embd, T = b->T;
    b->il = -1;
    int tokens = input(b, I32, T, 1, 1, 1);
    int embd_in = input(b, F32, E, T, 1, 1); /* the embeddings input, allocated, unused */
    int embd = node(b, GR_GET_ROWS, F32, NE(E, T, 1, 1),
                    weight_on(b, "token_embd.weight", b->cpu, E, h->n_vocab, 1), tokens, -1);
    gr_expand(b->g, embd);
    gr_expand(b->g, embd_in);
    b->out_ids = input(b, I32, b->n_out, 1, 1, 1);
    b->s_copy = input(b, I32, b->n_seq, 1, 1, 1);
    b->s_main = view(b, b->s_copy, b->n_seq, 1, 1, 1);
    b->s_extra = view(b, b->s_copy, 0, 1, 1, 1);
    int cur = embd;
    for (int64_t il = 0; il < h->n_layer && !b->g->oom; il++) {
        b->il = il;
        b->dev = backend_of(b, il);
        cur = block(b, cur);
    }
    b->il = -1;
    b->dev = backend_of(b, h->n_layer_all);
    int x = rms(b, cur, "output_norm.weight");
    tt(b, x)->flags |= GR_OUTPUT;
    if (!h->no_memory) {
        const char *w = has(b, "output.weight") ? "output.weight" : "token_embd.weight";
        x = mm(b, weight(b, w, E, h->n_vocab), x, h->n_vocab);
        tt(b, x)->flags |= GR_OUTPUT;
    }
    gr_expand(b->g, x);
    return b->g->oom ? -1 : 0;
}

/* does -fa auto resolve to off: llama_context::resolve_fused_ops turns it
 * off when a layer's flash attention would not run on the layer's device */
static bool fa_auto_off(const gb *b)
{
    if (b->p->flash_attn != -1 || !b->p->ndev || quantized(b->p->type_v)) return false;
    for (int64_t il = 0; il < b->h->n_layer; il++) {
        if (!b->h->has_kv[il] || est_layer_dev(b->pl, il) < 0) continue;
        int64_t n_kv = b->h->is_swa[il] ? b->c->swa_cells : b->c->n_ctx_seq;
        if (!cuda_fa(b, il, n_kv)) return true;
    }
    return false;
}

/* build one reserve graph and raise sizes to its buffers' peaks */
static int reserve(gb *b, int64_t T, int64_t n_out, uint64_t *sizes)
{
    gr_graph g;
    gr_init(&g);
    b->g = &g;
    b->T = T;
    b->n_out = n_out;
    b->pos = b->s_copy = -1;
    for (int w = 0; w < 2; w++)
        b->kidx[w] = b->vidx[w] = b->mask[w] = b->krot[w] = b->vrot[w] = -1;
    gr_backends be = {.n_gpu = b->cpu, .op_offload = true, .min_batch = 32};
    int rc = build(b) == 0 ? gr_reserve(&g, &be, sizes) : -1;
    gr_release(&g);
    return rc;
}

int compute_buffers(const gguf_file *g, const hparams *h, const ctxsize *c, const placement *pl,
                    const est_params *p, uint64_t *sizes, char *err, size_t errlen)
{
    gb b = {.file = g, .h = h, .c = c, .pl = pl, .p = p, .cpu = (int)p->ndev};
    /* the graph asks for tensors by name, a few thousand times */
    if (g->ntensors) {
        b.byname = malloc(g->ntensors * sizeof *b.byname);
        if (!b.byname) goto oom;
        for (size_t i = 0; i < g->ntensors; i++)
            b.byname[i] = &g->tensors[i];
        qsort(b.byname, g->ntensors, sizeof *b.byname, by_name);
    }
    b.n_seq = c->n_seq;
    b.ns = c->n_stream;
    b.fa = c->fa;
    b.T = c->n_tokens;
    if (b.fa && fa_auto_off(&b)) b.fa = false;
    for (size_t d = 0; d <= p->ndev; d++)
        sizes[d] = 0;
    /* graph_reserve rounds the tokens up to a multiple of the sequences */
    int64_t T = (c->n_tokens + c->n_seq - 1) / c->n_seq * c->n_seq;
    /* the prompt graph, then one token a sequence (its CPU share can be the
     * larger when op_offload moves the prompt's work to a GPU) */
    if (reserve(&b, T, c->n_out, sizes) || reserve(&b, c->n_seq, c->n_seq, sizes)) goto oom;
    free(b.byname);
    return 0;
oom:
    free(b.byname);
    if (err && errlen)
        snprintf(err, errlen, "cannot estimate: out of memory sizing the compute buffers");
    return -1;
}
