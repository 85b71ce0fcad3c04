/* ggml_replay.c - a replay of ggml's graph building (ggml.c
 * ggml_visit_parents_graph), backend scheduler (ggml-backend.cpp
 * ggml_backend_sched_split_graph) and graph allocator (ggml-alloc.c
 * ggml_gallocr_alloc_graph_impl over ggml_dyn_tallocr), over tensor
 * shapes only.
 *
 * Design: the compute buffer llama.cpp reserves is not a sum of tensors but
 * the high-water mark of a best-fit allocator walking the graph, freeing
 * each tensor after its last use and reusing a parent's memory in place
 * when it can: fragmentation and the order of the nodes decide it.  No
 * closed formula fits every shape (docs/estimate.md), so this file runs the
 * same algorithms on the same graph, step by step, as ggml at
 * ngxson/llama.cpp 3f545becc does, and reports what ggml would.  The
 * scheduler matters with GPUs: it decides which backend runs each node and
 * which inputs are copied into which buffer.  Pipeline parallelism
 * (n_copies > 1) is not replayed. */
#include "model/ggml_replay.h"
#include "model/ggml_type.h"

#include <stdlib.h>
#include <string.h>

/* ---- building ---- */

void gr_init(gr_graph *g)
{
    memset(g, 0, sizeof *g);
}

void gr_release(gr_graph *g)
{
    free(g->t);
    free(g->nodes);
    free(g->leafs);
    memset(g, 0, sizeof *g);
}

static bool grow(void **p, int32_t *cap, int32_t need, size_t elem)
{
    if (need <= *cap) return true;
    int32_t c = *cap ? *cap * 2 : 256;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

static int add_tensor(gr_graph *g)
{
    if (g->oom || !grow((void **)&g->t, &g->cap, g->nt + 1, sizeof *g->t)) {
        g->oom = true;
        return 0;
    }
    gr_tensor *t = &g->t[g->nt];
    memset(t, 0, sizeof *t);
    for (int i = 0; i < GR_MAX_SRC; i++)
        t->src[i] = -1;
    t->view_src = -1;
    t->copies = -1;
    t->bk = t->buf = -1;
    return g->nt++;
}

int gr_new(gr_graph *g, gr_op op, uint32_t type, const int64_t ne[4], const int *src, int nsrc)
{
    int i = add_tensor(g);
    if (g->oom) return 0;
    gr_tensor *t = &g->t[i];
    memcpy(t->ne, ne, sizeof t->ne);
    t->type = type;
    t->op = (uint8_t)op;
    for (int k = 0; k < nsrc && k < GR_MAX_SRC; k++)
        t->src[k] = src[k];
    return i;
}

int gr_view(gr_graph *g, gr_op op, int a, const int64_t ne[4], const int *src, int nsrc)
{
    int s[GR_MAX_SRC] = {a};
    int n = 1;
    for (int k = 0; k < nsrc && n < GR_MAX_SRC; k++)
        s[n++] = src[k];
    int i = gr_new(g, op, g->oom ? 0 : g->t[a].type, ne, s, n);
    if (g->oom) return 0;
    /* ggml_new_tensor_impl: a view of a view points at the root */
    g->t[i].view_src = g->t[a].view_src >= 0 ? g->t[a].view_src : a;
    if (op == GR_WRITE) g->t[i].src[0] = a;
    return i;
}

static bool push(int32_t **arr, int32_t *n, int32_t *cap, int32_t v)
{
    if (!grow((void **)arr, cap, *n + 1, sizeof **arr)) return false;
    (*arr)[(*n)++] = v;
    return true;
}

void gr_expand(gr_graph *g, int ti)
{
    if (g->oom || g->t[ti].visited) return;
    g->t[ti].visited = true;
    for (int k = 0; k < GR_MAX_SRC; k++)
        if (g->t[ti].src[k] >= 0) gr_expand(g, g->t[ti].src[k]);
    bool ok = g->t[ti].op == GR_NONE ? push(&g->leafs, &g->nl, &g->lcap, ti)
                                     : push(&g->nodes, &g->nn, &g->ncap, ti);
    if (!ok) g->oom = true;
}

/* ---- the scheduler (ggml_backend_sched_split_graph, n_copies = 1) ---- */

typedef struct sched {
    gr_graph *g;
    const gr_backends *be;
    int cpu;
    int32_t *order, no, ocap; /* the scheduled graph's nodes, copies included */
} sched;

static gr_tensor *T(const sched *s, int i)
{
    return &s->g->t[i];
}

static bool is_view_op(const gr_tensor *t)
{
    return t->op == GR_VIEW;
}

static bool supports_op(const sched *s, int b, const gr_tensor *t)
{
    return b == s->cpu || !(t->flags & GR_HOSTOP);
}

/* the backend of the buffer that already holds t (or its view_src) and
 * supports op (ggml_backend_sched_backend_from_buffer), else -1 */
static int from_buffer(const sched *s, const gr_tensor *t, const gr_tensor *op)
{
    const gr_tensor *b = t->view_src >= 0 ? T(s, t->view_src) : t;
    if (!(b->flags & (GR_WEIGHT | GR_STORED))) return -1;
    return supports_op(s, b->dev, op) ? b->dev : -1;
}

/* get_op_batch_size of ggml-cuda */
static int64_t batch_size(const gr_tensor *t)
{
    switch (t->op) {
    case GR_GET_ROWS:
        return 0;
    case GR_MUL_MAT:
        return t->ne[1];
    case GR_MUL_MAT_ID:
    case GR_ROPE:
        return t->ne[2];
    default:
        return t->ne[1] * t->ne[2] * t->ne[3];
    }
}

/* pass 1: ggml_backend_sched_backend_id_from_cur */
static int from_cur(const sched *s, const gr_tensor *t)
{
    int b = from_buffer(s, t, t);
    if (b >= 0) return b;
    if (t->flags & GR_INPUT) return s->cpu;
    /* rope and flash attention are not placed by their small weights */
    if (t->op == GR_ROPE || t->op == GR_FLASH_ATTN) return -1;
    for (int k = 0; k < GR_MAX_SRC; k++) {
        if (t->src[k] < 0 || !(T(s, t->src[k])->flags & GR_WEIGHT)) continue;
        int sb = from_buffer(s, T(s, t->src[k]), t);
        if (s->be->op_offload && sb == s->cpu)
            for (int g = 0; g < s->cpu; g++)
                if (supports_op(s, g, t) && batch_size(t) >= s->be->min_batch) return g;
        return sb;
    }
    return -1;
}

/* pass 2: expand the GPUs' assignments down and up, then any down and up */
static void expand_pass(sched *s, bool up, bool gpu_only)
{
    int cur = -1;
    for (int32_t k = 0; k < s->g->nn; k++) {
        gr_tensor *t = T(s, s->g->nodes[up ? s->g->nn - 1 - k : k]);
        if (is_view_op(t)) continue;
        if (t->bk != -1)
            cur = gpu_only && t->bk == s->cpu ? -1 : t->bk;
        else if (cur != -1 && supports_op(s, cur, t))
            t->bk = (int16_t)cur;
    }
}

/* ggml_backend_sched_buffer_supported: can backend b read t where it is */
static bool buffer_supported(const sched *s, const gr_tensor *t, int b)
{
    const gr_tensor *v = t->view_src >= 0 ? T(s, t->view_src) : t;
    int at;
    if (v->flags & (GR_WEIGHT | GR_STORED))
        at = v->dev;
    else if (t->bk != -1)
        at = t->bk;
    else if (t->view_src >= 0)
        at = v->bk;
    else
        return false;
    if (at == -1) return false;
    /* the CPU reads host buffers; a CUDA device only its own */
    return b == s->cpu ? at == s->cpu : at == b;
}

/* passes 3 and 4: the nodes still unassigned, then their sources */
static void assign_rest(sched *s)
{
    for (int32_t k = 0; k < s->g->nn; k++) {
        gr_tensor *t = T(s, s->g->nodes[k]);
        if (is_view_op(t) || t->bk != -1) continue;
        int best = -1;
        for (int b = 0; b <= s->cpu; b++) {
            if (!supports_op(s, b, t)) continue;
            int n = 0;
            for (int j = 0; j < GR_MAX_SRC; j++) {
                if (t->src[j] < 0) continue;
                const gr_tensor *x = T(s, t->src[j]);
                bool known = x->bk != -1 || (x->view_src >= 0 && T(s, x->view_src)->bk != -1);
                if (known && buffer_supported(s, x, b)) n++;
            }
            if (n > best) {
                best = n;
                t->bk = (int16_t)b;
            }
        }
    }
    for (int32_t k = 0; k < s->g->nn; k++) {
        gr_tensor *t = T(s, s->g->nodes[k]);
        if (t->view_src >= 0 && t->bk == -1) t->bk = T(s, t->view_src)->bk;
        for (int j = 0; j < GR_MAX_SRC; j++) {
            if (t->src[j] < 0) continue;
            gr_tensor *x = T(s, t->src[j]);
            if (x->bk == -1) x->bk = x->view_src >= 0 ? T(s, x->view_src)->bk : t->bk;
        }
        for (int b = 0; b <= s->cpu && t->bk == -1; b++)
            if (supports_op(s, b, t)) t->bk = (int16_t)b;
    }
}

/* a copy of src in backend b's buffer (and the dependency that keeps src
 * alive until it is made), put at the head of the split */
typedef struct copyref {
    int32_t b, copy, next; /* backend, the copy, the source's next copy */
} copyref;

typedef struct splitstate {
    copyref *cp;
    int32_t ncp, cpcap;
    int32_t *inputs, ninputs, icap; /* the current split's inputs */
    int32_t *body, nbody, bcap;     /* its nodes */
    int bk;
} splitstate;

static int copy_of(const sched *s, const splitstate *sp, int32_t src, int b)
{
    for (int32_t i = T(s, src)->copies; i >= 0; i = sp->cp[i].next)
        if (sp->cp[i].b == b) return sp->cp[i].copy;
    return -1;
}

/* close the current split: its input copies, then its nodes */
static bool flush_split(sched *s, splitstate *sp)
{
    for (int32_t i = 0; i < sp->ninputs; i++) {
        int32_t in = sp->inputs[i];
        int root = T(s, in)->view_src >= 0 ? T(s, in)->view_src : in;
        int dep = add_tensor(s->g);
        if (s->g->oom) return false;
        gr_tensor *d = T(s, dep);
        memcpy(d->ne, T(s, in)->ne, sizeof d->ne);
        d->type = T(s, in)->type;
        d->op = GR_NONE;
        d->view_src = root;
        d->src[0] = in;
        d->bk = T(s, in)->bk;
        if (!push(&s->order, &s->no, &s->ocap, dep) ||
            !push(&s->order, &s->no, &s->ocap, copy_of(s, sp, in, sp->bk)))
            return false;
    }
    for (int32_t i = 0; i < sp->nbody; i++)
        if (!push(&s->order, &s->no, &s->ocap, sp->body[i])) return false;
    sp->ninputs = sp->nbody = 0;
    return true;
}

/* does node t, on the split's backend, start a new split: a weight it reads
 * would have to be copied in (so that the previous copies can be freed), or
 * the split already has GGML_SCHED_MAX_SPLIT_INPUTS (30) inputs */
static bool need_new_split(const sched *s, const splitstate *sp, const gr_tensor *t)
{
    if (t->bk != sp->bk || sp->ninputs == 0) return t->bk != sp->bk;
    for (int j = 0; j < GR_MAX_SRC; j++) {
        if (t->src[j] < 0) continue;
        const gr_tensor *x = T(s, t->src[j]);
        if ((x->flags & GR_WEIGHT) && x->bk != sp->bk && !buffer_supported(s, x, sp->bk))
            return true;
        if (sp->ninputs >= 30 && x->bk != sp->bk && copy_of(s, sp, t->src[j], sp->bk) < 0 &&
            !buffer_supported(s, x, sp->bk))
            return true;
    }
    return false;
}

/* the copy of src in the split's backend (ggml_dup_tensor_layout, "%s#%s#0"),
 * made the first time a split needs it; later splits share it */
static int input_copy(sched *s, splitstate *sp, int32_t x)
{
    int c = copy_of(s, sp, x, sp->bk);
    if (c >= 0) return c;
    c = add_tensor(s->g);
    if (s->g->oom) return -1;
    gr_tensor *cp = T(s, c);
    memcpy(cp->ne, T(s, x)->ne, sizeof cp->ne);
    cp->type = T(s, x)->type;
    cp->op = GR_NONE;
    cp->bk = (int16_t)sp->bk;
    if (!grow((void **)&sp->cp, &sp->cpcap, sp->ncp + 1, sizeof *sp->cp) ||
        !push(&sp->inputs, &sp->ninputs, &sp->icap, x))
        return -1;
    sp->cp[sp->ncp] = (copyref){sp->bk, c, T(s, x)->copies};
    T(s, x)->copies = sp->ncp++;
    return c;
}

/* pass 5: split the graph where the backend changes and copy the inputs
 * each split cannot read into its backend's buffer */
static bool split_graph(sched *s)
{
    splitstate sp = {0};
    bool ok = true;
    sp.bk = -1;
    for (int32_t k = 0; k < s->g->nn && ok; k++) {
        int32_t ti = s->g->nodes[k];
        if (!is_view_op(T(s, ti))) {
            if (sp.bk == -1)
                sp.bk = T(s, ti)->bk;
            else if (need_new_split(s, &sp, T(s, ti))) {
                ok = flush_split(s, &sp);
                sp.bk = T(s, ti)->bk;
            }
            for (int j = 0; j < GR_MAX_SRC && ok; j++) {
                int32_t x = T(s, ti)->src[j];
                if (x < 0 || T(s, x)->bk == sp.bk || buffer_supported(s, T(s, x), sp.bk)) continue;
                int c = input_copy(s, &sp, x);
                ok = c >= 0;
                if (ok) T(s, ti)->src[j] = c;
            }
        }
        if (ok) ok = push(&sp.body, &sp.nbody, &sp.bcap, ti);
    }
    if (ok) ok = flush_split(s, &sp);
    free(sp.cp);
    free(sp.inputs);
    free(sp.body);
    return ok;
}

/* ---- the allocator (ggml_gallocr over one ggml_dyn_tallocr per buffer) ---- */

typedef struct fblock {
    uint64_t off, size;
} fblock;

/* one buffer's free list, sorted by offset; the last block is the endless
 * rest of the (single) chunk */
typedef struct dyn {
    fblock *b;
    int32_t n, cap;
    uint64_t align, max;
} dyn;

static uint64_t align_up(uint64_t n, uint64_t a)
{
    return (n + a - 1) / a * a;
}

static bool dyn_init(dyn *d, uint64_t align)
{
    memset(d, 0, sizeof *d);
    d->align = align;
    if (!grow((void **)&d->b, &d->cap, 1, sizeof *d->b)) return false;
    d->b[0] = (fblock){0, UINT64_MAX / 4};
    d->n = 1;
    return true;
}

/* ggml_dyn_tallocr_alloc: the smallest free block that fits, the last of
 * equals, never the last block unless nothing else fits */
static uint64_t dyn_alloc(dyn *d, uint64_t size)
{
    size = align_up(size, d->align);
    int best = -1;
    uint64_t best_size = UINT64_MAX;
    for (int32_t i = 0; i < d->n - 1; i++)
        if (d->b[i].size >= size && d->b[i].size <= best_size) {
            best = i;
            best_size = d->b[i].size;
        }
    if (best < 0) best = d->n - 1;
    fblock *b = &d->b[best];
    uint64_t off = b->off;
    b->off += size;
    b->size -= size;
    if (b->size == 0) {
        memmove(&d->b[best], &d->b[best + 1], (size_t)(d->n - best - 1) * sizeof *d->b);
        d->n--;
    }
    if (off + size > d->max) d->max = off + size;
    return off;
}

/* ggml_dyn_tallocr_free_bytes: merge with a neighbour, else a new block */
static bool dyn_free(dyn *d, uint64_t off, uint64_t size)
{
    size = align_up(size, d->align);
    for (int32_t i = 0; i < d->n; i++) {
        fblock *b = &d->b[i];
        if (b->off + b->size == off) {
            b->size += size;
            if (i < d->n - 1 && b->off + b->size == d->b[i + 1].off) {
                b->size += d->b[i + 1].size;
                memmove(&d->b[i + 1], &d->b[i + 2], (size_t)(d->n - i - 2) * sizeof *d->b);
                d->n--;
            }
            return true;
        }
        if (off + size == b->off) {
            b->off = off;
            b->size += size;
            if (i > 0 && d->b[i - 1].off + d->b[i - 1].size == b->off) {
                d->b[i - 1].size += b->size;
                memmove(&d->b[i], &d->b[i + 1], (size_t)(d->n - i - 1) * sizeof *d->b);
                d->n--;
            }
            return true;
        }
    }
    if (!grow((void **)&d->b, &d->cap, d->n + 1, sizeof *d->b)) return false;
    int32_t at = 0;
    while (at < d->n && d->b[at].off < off)
        at++;
    memmove(&d->b[at + 1], &d->b[at], (size_t)(d->n - at) * sizeof *d->b);
    d->b[at] = (fblock){off, size};
    d->n++;
    return true;
}

typedef struct galloc {
    gr_graph *g;
    dyn *bufs;
    int cpu;
    bool ok;
} galloc;

static uint64_t tensor_bytes(const gr_tensor *t)
{
    uint64_t n = ggml_row_bytes(t->type, (uint64_t)t->ne[0]);
    for (int d = 1; d < 4; d++)
        n *= (uint64_t)t->ne[d];
    return n;
}

/* ggml_backend_buft_get_alloc_size: on CUDA (ggml-cuda.cu
 * ggml_backend_cuda_buffer_type_get_alloc_size) a flash-attention result
 * carries its f16 K/V copies, and a quantized tensor is padded to whole
 * MATRIX_ROW_PADDING (512) rows */
static uint64_t alloc_size(const galloc *a, const gr_tensor *t, int buf)
{
    uint64_t n = tensor_bytes(t);
    if (buf == a->cpu) return n;
    const ggml_type_info *ti = ggml_type_get(t->type);
    if (ti && ti->blck > 1 && t->ne[0] % 512)
        n += ggml_row_bytes(t->type, (uint64_t)(512 - t->ne[0] % 512));
    return n + t->extra;
}

static bool same_layout(const gr_tensor *a, const gr_tensor *b)
{
    return a->type == b->type && !memcmp(a->ne, b->ne, sizeof a->ne);
}

/* ggml_gallocr_allocate_node: in place of a parent that dies here, else a
 * new block */
static void allocate(galloc *a, int ti, int buf)
{
    gr_tensor *t = &a->g->t[ti];
    if ((t->flags & (GR_WEIGHT | GR_STORED)) || t->placed || t->view_src >= 0) return;
    t->own = t->placed = true;
    if (t->op == GR_INPLACE || t->op == GR_ROPE)
        for (int k = 0; k < GR_MAX_SRC; k++) {
            if (t->src[k] < 0) continue;
            gr_tensor *p = &a->g->t[t->src[k]];
            if (!p->own || (p->flags & GR_OUTPUT) || !same_layout(t, p)) continue;
            if (p->children == 1 && p->views == 0) {
                t->buf = p->buf;
                t->off = p->off;
                p->own = false;
                return; /* same layout: same size, nothing left over */
            }
        }
    t->buf = (int16_t)buf;
    t->off = dyn_alloc(&a->bufs[buf], alloc_size(a, t, buf));
}

static void release(galloc *a, gr_tensor *t)
{
    if (t->flags & GR_OUTPUT) return;
    if (!dyn_free(&a->bufs[t->buf], t->off, alloc_size(a, t, t->buf))) a->ok = false;
    t->own = false;
}

/* ggml_gallocr_alloc_graph_impl over the scheduled graph */
static void alloc_graph(galloc *a, const int32_t *order, int32_t n)
{
    gr_graph *g = a->g;
    for (int32_t i = 0; i < g->nl; i++)
        allocate(a, g->leafs[i], g->t[g->leafs[i]].bk);
    for (int32_t i = 0; i < n; i++) {
        gr_tensor *t = &g->t[order[i]];
        if (t->view_src >= 0 && t->op != GR_NONE) g->t[t->view_src].views++;
        for (int k = 0; k < GR_MAX_SRC; k++)
            if (t->src[k] >= 0) g->t[t->src[k]].children++;
    }
    for (int32_t i = 0; i < n; i++) {
        int ti = order[i];
        int bk = g->t[ti].bk;
        for (int k = 0; k < GR_MAX_SRC; k++)
            if (g->t[ti].src[k] >= 0) allocate(a, g->t[ti].src[k], bk);
        allocate(a, ti, bk);
        for (int k = 0; k < GR_MAX_SRC; k++) {
            if (g->t[ti].src[k] < 0) continue;
            gr_tensor *p = &g->t[g->t[ti].src[k]];
            if (--p->children != 0 || p->views != 0) continue;
            if (p->view_src >= 0) {
                gr_tensor *v = &g->t[p->view_src];
                if (--v->views == 0 && v->children == 0 && v->own) release(a, v);
            } else if (p->own) {
                release(a, p);
            }
        }
    }
}

int gr_reserve(gr_graph *g, const gr_backends *be, uint64_t *sizes)
{
    if (g->oom || be->n_gpu < 0 || be->n_gpu >= GR_MAX_BACKENDS) return -1;
    sched s = {.g = g, .be = be, .cpu = be->n_gpu};
    for (int32_t i = 0; i < g->nl; i++)
        g->t[g->leafs[i]].bk = (int16_t)from_cur(&s, &g->t[g->leafs[i]]);
    for (int32_t i = 0; i < g->nn; i++)
        g->t[g->nodes[i]].bk = (int16_t)from_cur(&s, &g->t[g->nodes[i]]);
    expand_pass(&s, false, true);
    expand_pass(&s, true, true);
    expand_pass(&s, false, false);
    expand_pass(&s, true, false);
    assign_rest(&s);
    dyn bufs[GR_MAX_BACKENDS];
    galloc a = {.g = g, .bufs = bufs, .cpu = s.cpu, .ok = split_graph(&s)};
    int nb = 0;
    /* CUDA buffers align to 128 bytes, host buffers to 32 (TENSOR_ALIGNMENT) */
    for (; a.ok && nb <= s.cpu; nb++)
        a.ok = dyn_init(&bufs[nb], nb == s.cpu ? 32 : 128);
    if (a.ok) alloc_graph(&a, s.order, s.no);
    for (int b = 0; a.ok && b <= s.cpu; b++)
        if (bufs[b].max > sizes[b]) sizes[b] = bufs[b].max;
    for (int b = 0; b < nb; b++)
        free(bufs[b].b);
    free(s.order);
    return a.ok ? 0 : -1;
}
