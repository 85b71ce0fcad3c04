/* ggml_replay.h - ggml's graph building, backend scheduler and graph allocator
 * replayed over tensor shapes, to size the compute buffers a llama.cpp
 * context reserves (the per-backend high-water marks of ggml-alloc).
 * model/compute.c builds the graph; nothing here knows about models. */
#ifndef GPUMOD_GGML_REPLAY_H
#define GPUMOD_GGML_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GR_MAX_SRC 8
#define GR_MAX_BACKENDS 17 /* EST_MAX_DEVICES GPUs and the CPU */

typedef enum gr_op {
    GR_NONE,  /* a leaf: graph input, weight, cache */
    GR_VIEW,  /* view, reshape, permute, transpose (ggml_is_view_op) */
    GR_WRITE, /* set_rows, cpy, scale_inplace into a cache: a view of its view_src that
               * the scheduler places like an op */
    GR_GET_ROWS,
    GR_MUL_MAT,
    GR_MUL_MAT_ID,
    GR_ROPE,
    GR_FLASH_ATTN,
    GR_INPLACE, /* add, mul, div, scale, rms_norm, unary, soft_max: ggml_op_can_inplace */
    GR_OTHER,   /* glu, cont, concat, cpy to new, ssm_conv, ssm_scan, argsort, sum_rows, ... */
} gr_op;

enum {
    GR_INPUT = 1,   /* ggml_set_input: lives on the CPU backend */
    GR_OUTPUT = 2,  /* ggml_set_output: never freed, never reused in place */
    GR_WEIGHT = 4,  /* pre-allocated in a weights buffer of backend `dev` */
    GR_STORED = 8,  /* pre-allocated elsewhere (KV cache, recurrent state) on backend `dev` */
    GR_HOSTOP = 16, /* an op the GPU backends do not support */
};

typedef struct gr_tensor {
    int64_t ne[4];
    uint32_t type; /* ggml type id */
    uint8_t op;    /* gr_op */
    uint8_t flags;
    int16_t dev; /* GR_WEIGHT / GR_STORED: the backend holding it */
    int32_t src[GR_MAX_SRC];
    int32_t view_src;
    uint64_t extra; /* bytes a GPU buffer adds to it (CUDA flash attention's f16 K/V copies) */
    /* replay state */
    int16_t bk, buf;
    int32_t children, views;
    int32_t copies; /* the scheduler's copies of it: a list through its copyref entries */
    bool visited, own, placed;
    uint64_t off;
} gr_tensor;

typedef struct gr_graph {
    gr_tensor *t;
    int32_t nt, cap;
    int32_t *nodes, nn, ncap;
    int32_t *leafs, nl, lcap;
    bool oom;
} gr_graph;

void gr_init(gr_graph *g);
void gr_release(gr_graph *g);

/* A tensor; src: up to GR_MAX_SRC indices, -1 for none.  Returns its index
 * (or 0 after running out of memory: check g->oom). */
int gr_new(gr_graph *g, gr_op op, uint32_t type, const int64_t ne[4], const int *src, int nsrc);
/* A view of a (shape ne, same type), GR_VIEW or GR_WRITE. */
int gr_view(gr_graph *g, gr_op op, int a, const int64_t ne[4], const int *src, int nsrc);
/* ggml_build_forward_expand: add t and what it depends on, depth first */
void gr_expand(gr_graph *g, int t);

/* The backends: n_gpu GPUs (ids 0..n_gpu-1, CUDA) and the CPU (id n_gpu).
 * op_offload: ops on CPU weights with a batch of at least min_batch run on
 * GPU 0 (ggml-cuda offload_op). */
typedef struct gr_backends {
    int n_gpu;
    bool op_offload;
    int64_t min_batch;
} gr_backends;

/* Schedule and allocate the graph as ggml_backend_sched_reserve does and
 * raise sizes[b] (b = 0..n_gpu) to each buffer's high-water mark.  The
 * graph is consumed.  0, or -1 (out of memory, too many free blocks). */
int gr_reserve(gr_graph *g, const gr_backends *be, uint64_t *sizes);

#endif
