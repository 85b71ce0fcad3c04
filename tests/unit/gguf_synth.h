/* gguf_synth.h - build synthetic GGUF headers in memory for tests (the
 * parser, the estimator, the fuzzer's seed corpus).  Header-only, static.
 *
 *   gsynth s; gs_init(&s, 3);
 *   gs_str(&s, "general.architecture", "llama");
 *   gs_u32(&s, "llama.block_count", 32);
 *   gs_tensor(&s, "blk.0.attn_q.weight", 1, 4096, 4096, 1, 1);  // type 1 = F16
 *   buf img = BUF_INIT; gs_finish(&s, &img);  // header + padding, no tensor data
 *
 * Tensor offsets are laid out contiguously with the alignment in force
 * (general.alignment when written, else 32), as ggml requires. */
#ifndef GPUMOD_GGUF_SYNTH_H
#define GPUMOD_GGUF_SYNTH_H

#include <stdint.h>
#include <string.h>

#include "model/ggml_type.h"
#include "util/buf.h"

typedef struct gsynth {
    uint32_t version;
    uint64_t nkv, ntensors;
    uint32_t alignment;
    uint64_t next_offset;
    buf kvs, tensors;
} gsynth;

static inline void gs_put(buf *b, const void *p, size_t n)
{
    buf_add(b, p, n);
}
static inline void gs_u32raw(buf *b, uint32_t v)
{
    gs_put(b, &v, 4);
}
static inline void gs_u64raw(buf *b, uint64_t v)
{
    gs_put(b, &v, 8);
}
static inline void gs_strraw(buf *b, const char *s)
{
    gs_u64raw(b, strlen(s));
    gs_put(b, s, strlen(s));
}

static inline void gs_init(gsynth *s, uint32_t version)
{
    memset(s, 0, sizeof *s);
    s->version = version;
    s->alignment = 32;
    buf_init(&s->kvs);
    buf_init(&s->tensors);
}

static inline void gs_release(gsynth *s)
{
    buf_release(&s->kvs);
    buf_release(&s->tensors);
}

/* key + type tag; the caller appends the value */
static inline void gs_key(gsynth *s, const char *key, uint32_t type)
{
    gs_strraw(&s->kvs, key);
    gs_u32raw(&s->kvs, type);
    s->nkv++;
}

static inline void gs_u32(gsynth *s, const char *key, uint32_t v)
{
    gs_key(s, key, 4);
    gs_u32raw(&s->kvs, v);
    if (!strcmp(key, "general.alignment")) s->alignment = v;
}
static inline void gs_i32(gsynth *s, const char *key, int32_t v)
{
    gs_key(s, key, 5);
    gs_put(&s->kvs, &v, 4);
}
static inline void gs_u64(gsynth *s, const char *key, uint64_t v)
{
    gs_key(s, key, 10);
    gs_u64raw(&s->kvs, v);
}
static inline void gs_f32(gsynth *s, const char *key, float v)
{
    gs_key(s, key, 6);
    gs_put(&s->kvs, &v, 4);
}
static inline void gs_bool(gsynth *s, const char *key, int v)
{
    uint8_t b = (uint8_t)(v != 0);
    gs_key(s, key, 7);
    gs_put(&s->kvs, &b, 1);
}
static inline void gs_str(gsynth *s, const char *key, const char *v)
{
    gs_key(s, key, 8);
    gs_strraw(&s->kvs, v);
}
static inline void gs_arr_i32(gsynth *s, const char *key, const int32_t *v, uint64_t n)
{
    gs_key(s, key, 9);
    gs_u32raw(&s->kvs, 5);
    gs_u64raw(&s->kvs, n);
    gs_put(&s->kvs, v, n * 4);
}
static inline void gs_arr_bool(gsynth *s, const char *key, const uint8_t *v, uint64_t n)
{
    gs_key(s, key, 9);
    gs_u32raw(&s->kvs, 7);
    gs_u64raw(&s->kvs, n);
    gs_put(&s->kvs, v, n);
}
static inline void gs_arr_str(gsynth *s, const char *key, const char *const *v, uint64_t n)
{
    gs_key(s, key, 9);
    gs_u32raw(&s->kvs, 8);
    gs_u64raw(&s->kvs, n);
    for (uint64_t i = 0; i < n; i++) gs_strraw(&s->kvs, v[i]);
}

static inline uint64_t gs_align(uint64_t x, uint64_t a)
{
    return x + (a - x % a) % a;
}

/* A tensor of ggml type `type` with dims ne0..ne3 (unused dims 1; n_dims
 * counts the leading ones given).  Returns its byte size. */
static inline uint64_t gs_tensor(gsynth *s, const char *name, uint32_t type, uint32_t n_dims, int64_t ne0,
                                 int64_t ne1, int64_t ne2, int64_t ne3)
{
    int64_t ne[4] = {ne0, ne1, ne2, ne3};
    gs_strraw(&s->tensors, name);
    gs_u32raw(&s->tensors, n_dims);
    for (uint32_t i = 0; i < n_dims; i++) gs_u64raw(&s->tensors, (uint64_t)ne[i]);
    gs_u32raw(&s->tensors, type);
    gs_u64raw(&s->tensors, s->next_offset);
    uint64_t rows = (uint64_t)ne1 * (uint64_t)ne2 * (uint64_t)ne3;
    uint64_t nbytes = ggml_row_bytes(type, (uint64_t)ne0) * rows;
    s->next_offset += gs_align(nbytes, s->alignment);
    s->ntensors++;
    return nbytes;
}

/* The file image: header, KVs, tensor infos, padding to the alignment.
 * Tensor data is not written (parsers read the header region only). */
static inline void gs_finish(gsynth *s, buf *out)
{
    buf_clear(out);
    gs_put(out, "GGUF", 4);
    gs_u32raw(out, s->version);
    gs_u64raw(out, s->ntensors);
    gs_u64raw(out, s->nkv);
    gs_put(out, s->kvs.p, s->kvs.len);
    gs_put(out, s->tensors.p, s->tensors.len);
    while (out->len % s->alignment) buf_addc(out, 0);
}

/* ---- raw building blocks for hostile inputs (tests, the seed corpus) ---- */

/* A scalar of any value type from its little-endian bytes. */
static inline void gs_scalar(gsynth *s, const char *key, uint32_t type, const void *v, size_t size)
{
    gs_key(s, key, type);
    gs_put(&s->kvs, v, size);
}
/* An array of any element type: n elements of elem_size bytes each. */
static inline void gs_arr(gsynth *s, const char *key, uint32_t elem_type, const void *v, uint64_t n,
                          size_t elem_size)
{
    gs_key(s, key, 9);
    gs_u32raw(&s->kvs, elem_type);
    gs_u64raw(&s->kvs, n);
    gs_put(&s->kvs, v, (size_t)n * elem_size);
}
/* A key of any type tag followed by raw value bytes, right or wrong. */
static inline void gs_raw_kv(gsynth *s, const char *key, uint32_t type, const void *v, size_t len)
{
    gs_key(s, key, type);
    gs_put(&s->kvs, v, len);
}
/* A tensor info written as given: no layout, any offset, any dims. */
static inline void gs_tensor_raw(gsynth *s, const char *name, uint32_t type, uint32_t n_dims, const int64_t *ne,
                                 uint64_t offset)
{
    gs_strraw(&s->tensors, name);
    gs_u32raw(&s->tensors, n_dims);
    for (uint32_t i = 0; i < n_dims; i++) gs_u64raw(&s->tensors, (uint64_t)ne[i]);
    gs_u32raw(&s->tensors, type);
    gs_u64raw(&s->tensors, offset);
    s->ntensors++;
}
/* gs_finish with the header's counts overridden (claims the body does not
 * keep) and no padding when pad is 0. */
static inline void gs_finish_counts(gsynth *s, buf *out, uint64_t ntensors, uint64_t nkv, int pad)
{
    buf_clear(out);
    gs_put(out, "GGUF", 4);
    gs_u32raw(out, s->version);
    gs_u64raw(out, ntensors);
    gs_u64raw(out, nkv);
    gs_put(out, s->kvs.p, s->kvs.len);
    gs_put(out, s->tensors.p, s->tensors.len);
    while (pad && out->len % s->alignment) buf_addc(out, 0);
}

#endif
