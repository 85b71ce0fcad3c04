/* gguf.c - the GGUF v2/v3 header reader (research/memory.md §1).
 *
 * Owns: reading the metadata and the tensor table of a model file (and of
 * the other shards of a split model), never the tensor data.  Inspecting a
 * 100 GB model must cost what its header costs: the file is read through
 * one small window with pread(), starting at 4 KiB and doubling to 64 KiB,
 * and whatever is not kept (the tokenizer's vocabulary, long strings) is
 * skipped by moving the position, so only bytes that hold lengths are
 * ever read.  The same parser runs over an in-memory image (tests, the
 * fuzzer), which is the same reader with the window set to the whole image.
 *
 * Hostile files are the normal case for a parser that runs on downloads:
 * every count and length is checked against the bytes actually left before
 * anything is read or allocated, and arrays grow as records are read, so
 * memory is bounded by a small multiple of the bytes present, never by a
 * count the file claims.  The checks mirror ggml's reader (src/gguf.cpp) so
 * that what llama.cpp refuses is refused here, with the byte offset, except
 * for one deliberate difference: a tensor type id gpumod does not know is
 * not an error but a flag (gguf_file.unknown_types, nbytes 0), because a
 * newer llama.cpp may know it and "cannot estimate" is the estimator's call.
 * Keys and tensor names containing NUL bytes, and keys longer than 64 KiB,
 * are refused (ggml would accept them but no real file has them). */
#include "model/gguf.h"
#include "util/errf.h"
#include "util/slurp.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/ggml_type.h"
#include "util/buf.h"

#define GGUF_VERSION_MAX 3
#define GGUF_MAX_STRING_LENGTH (UINT64_C(1) << 30)
#define GGUF_MAX_ARRAY_ELEMENTS (UINT64_C(1) << 30)
#define GGUF_DEFAULT_ALIGNMENT 32
/* ggml refuses more: a huge alignment turns padding into a memory bomb */
#define GGUF_MAX_ALIGNMENT (UINT32_C(1) << 20)
#define GGML_MAX_NAME 64
#define GGML_MAX_DIMS 4
#define MAX_KEY_LENGTH GGUF_MAX_KEPT_STRING
/* the fuzzer builds with tiny windows so that every read crosses a refill */
#ifndef GGUF_WINDOW_MIN
#define GGUF_WINDOW_MIN 4096
#endif
#ifndef GGUF_WINDOW_MAX
#define GGUF_WINDOW_MAX 65536
#endif
#define WINDOW_MIN GGUF_WINDOW_MIN
#define WINDOW_MAX GGUF_WINDOW_MAX

/* ---- the reader: a window over a file, or a whole in-memory image ---- */

typedef struct rd {
    const char *name;  /* quoted at the start of errors; NULL for a buffer */
    const gguf_io *io; /* the source, when not an image */
    void *h;           /* its handle */
    size_t win_max;
    const uint8_t *mem; /* the image, or NULL when reading io */
    uint64_t size;
    uint64_t pos; /* next byte to read; always <= size */
    uint8_t *win;
    uint64_t win_off;
    size_t win_len;
    size_t chunk; /* next pread size: small headers cost one 4 KiB read */
    uint64_t nread;
    /* what is being read, for "truncated at byte N reading ..." */
    const char *item; /* "key", "tensor" or NULL (the header) */
    uint64_t idx;
    const char *iname; /* the key or tensor name, once read */
    const char *part;
    int64_t elem; /* array element, or -1 */
    char *err;
    size_t errlen;
    int failed;
} rd;

static void rd_fail(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rd_fail(rd *r, const char *fmt, ...)
{
    if (r->failed) return; /* the first error is the one that explains */
    r->failed = 1;
    if (!r->err || !r->errlen) return;
    size_t n = 0;
    if (r->name) {
        /* a URL's query (a CDN's signature) is nobody's business */
        int q = strstr(r->name, "://") ? (int)strcspn(r->name, "?#") : (int)strlen(r->name);
        int k = snprintf(r->err, r->errlen, "'%.*s': ", q, r->name);
        n = k < 0 ? 0 : (size_t)k >= r->errlen ? r->errlen - 1 : (size_t)k;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err + n, r->errlen - n, fmt, ap);
    va_end(ap);
}

/* "key 17 'tokenizer.ggml.tokens' element 5": what is being read */
static const char *rd_what(const rd *r, char *what, size_t len)
{
    int n = 0;
    if (r->item) {
        n = snprintf(what, len, "%s %" PRIu64 " ", r->item, r->idx);
        if (r->iname && n >= 0 && (size_t)n < len)
            n += snprintf(what + n, len - (size_t)n, "'%.100s' ", r->iname);
    }
    if (n < 0 || (size_t)n >= len) n = 0;
    if (r->elem >= 0)
        snprintf(what + n, len - (size_t)n, "element %" PRId64, r->elem);
    else
        snprintf(what + n, len - (size_t)n, "%s", r->part);
    return what;
}

static void rd_truncated(rd *r)
{
    char what[256];
    rd_fail(r, "truncated at byte %" PRIu64 " reading %s", r->size, rd_what(r, what, sizeof what));
}

static int rd_fill(rd *r)
{
    size_t want = r->chunk;
    if (want > r->size - r->pos) want = (size_t)(r->size - r->pos);
    size_t got = 0;
    while (got < want) {
        char ioerr[256] = "";
        long k = r->io->pread(r->h, r->win + got, want - got, r->pos + got, ioerr, sizeof ioerr);
        if (k < 0) {
            rd_fail(r, "read error at byte %" PRIu64 ": %s", r->pos + got,
                    ioerr[0] ? ioerr : "unknown error");
            return -1;
        }
        if (k == 0) break;
        got += (size_t)k;
    }
    r->nread += got;
    if (!got) { /* the file shrank under us */
        r->size = r->pos;
        rd_truncated(r);
        return -1;
    }
    r->win_off = r->pos;
    r->win_len = got;
    r->chunk = r->chunk * 2 < r->win_max ? r->chunk * 2 : r->win_max;
    return 0;
}

static int rd_get(rd *r, void *dst, size_t n)
{
    if (r->failed) return -1;
    if (n > r->size - r->pos) {
        rd_truncated(r);
        return -1;
    }
    if (r->mem) {
        memcpy(dst, r->mem + r->pos, n);
        r->pos += n;
        return 0;
    }
    uint8_t *d = dst;
    while (n) {
        if (r->pos < r->win_off || r->pos >= r->win_off + r->win_len)
            if (rd_fill(r) < 0) return -1;
        size_t off = (size_t)(r->pos - r->win_off);
        size_t k = r->win_len - off < n ? r->win_len - off : n;
        memcpy(d, r->win + off, k);
        d += k;
        n -= k;
        r->pos += k;
    }
    return 0;
}

/* Moving the position is the whole trick: skipped bytes are never read. */
static int rd_skip(rd *r, uint64_t n)
{
    if (r->failed) return -1;
    if (n > r->size - r->pos) {
        rd_truncated(r);
        return -1;
    }
    r->pos += n;
    return 0;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int rd_u32(rd *r, uint32_t *v)
{
    uint8_t b[4];
    if (rd_get(r, b, 4) < 0) return -1;
    *v = le32(b);
    return 0;
}

static int rd_u64(rd *r, uint64_t *v)
{
    uint8_t b[8];
    if (rd_get(r, b, 8) < 0) return -1;
    *v = le64(b);
    return 0;
}

/* A string's length, checked against ggml's cap and the bytes left. */
static int rd_strlen(rd *r, uint64_t *len)
{
    uint64_t at = r->pos;
    if (rd_u64(r, len) < 0) return -1;
    if (*len > GGUF_MAX_STRING_LENGTH) {
        char what[256];
        rd_fail(r,
                "%s: string length %" PRIu64 " at byte %" PRIu64 " exceeds the limit of %" PRIu64,
                rd_what(r, what, sizeof what), *len, at, GGUF_MAX_STRING_LENGTH);
        return -1;
    }
    if (*len > r->size - r->pos) {
        rd_truncated(r);
        return -1;
    }
    return 0;
}

/* ---- a set of names (keys, tensor names): duplicates in O(1) ---- */

typedef struct nameset {
    struct slot {
        const char *s; /* borrowed from the kv or tensor it names */
        size_t idx;
    } * slot;
    size_t cap, n;
} nameset;

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ULL;
    return h;
}

/* Adds s; when it is already there returns 1 and its index in *dup. */
static int nameset_add(nameset *ns, const char *s, size_t idx, size_t *dup)
{
    if ((ns->n + 1) * 2 > ns->cap) {
        size_t cap = ns->cap ? ns->cap * 2 : 64;
        struct slot *slot = xcalloc(cap, sizeof *slot);
        for (size_t i = 0; i < ns->cap; i++) {
            if (!ns->slot[i].s) continue;
            size_t j = name_hash(ns->slot[i].s) & (cap - 1);
            while (slot[j].s)
                j = (j + 1) & (cap - 1);
            slot[j] = ns->slot[i];
        }
        free(ns->slot);
        ns->slot = slot;
        ns->cap = cap;
    }
    size_t j = name_hash(s) & (ns->cap - 1);
    for (; ns->slot[j].s; j = (j + 1) & (ns->cap - 1)) {
        if (!strcmp(ns->slot[j].s, s)) {
            *dup = ns->slot[j].idx;
            return 1;
        }
    }
    ns->slot[j].s = s;
    ns->slot[j].idx = idx;
    ns->n++;
    return 0;
}

static void nameset_release(nameset *ns)
{
    free(ns->slot);
    memset(ns, 0, sizeof *ns);
}

/* ---- metadata ---- */

static const uint8_t vtype_size[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static const char *const vtype_names[] = {
    "uint8", "int8",   "uint16", "int16",  "uint32", "int32",   "float32",
    "bool",  "string", "array",  "uint64", "int64",  "float64",
};

const char *gguf_vtype_name(gguf_vtype t)
{
    if ((unsigned)t >= sizeof vtype_names / sizeof vtype_names[0]) return "unknown";
    return vtype_names[t];
}

static int is_float(gguf_vtype t)
{
    return t == GGUF_T_FLOAT32 || t == GGUF_T_FLOAT64;
}

static int is_int(gguf_vtype t)
{
    return t <= GGUF_T_INT32 || t == GGUF_T_BOOL || t == GGUF_T_UINT64 || t == GGUF_T_INT64;
}

static int is_signed(gguf_vtype t)
{
    return t == GGUF_T_INT8 || t == GGUF_T_INT16 || t == GGUF_T_INT32 || t == GGUF_T_INT64;
}

/* Decodes one fixed-size value of type t at p. */
static void decode(gguf_vtype t, const uint8_t *p, uint64_t *u, int64_t *i, double *f)
{
    switch (t) {
    case GGUF_T_UINT8:
        *u = p[0];
        break;
    case GGUF_T_INT8:
        *i = (int8_t)p[0];
        break;
    case GGUF_T_UINT16:
        *u = (uint16_t)(p[0] | p[1] << 8);
        break;
    case GGUF_T_INT16:
        *i = (int16_t)(uint16_t)(p[0] | p[1] << 8);
        break;
    case GGUF_T_UINT32:
        *u = le32(p);
        break;
    case GGUF_T_INT32:
        *i = (int32_t)le32(p);
        break;
    case GGUF_T_FLOAT32: {
        uint32_t b = le32(p);
        float x;
        memcpy(&x, &b, 4);
        *f = x;
        break;
    }
    case GGUF_T_BOOL:
        *u = p[0] != 0;
        break; /* ggml: any non-zero byte is true */
    case GGUF_T_UINT64:
        *u = le64(p);
        break;
    case GGUF_T_INT64:
        *i = (int64_t)le64(p);
        break;
    case GGUF_T_FLOAT64: {
        uint64_t b = le64(p);
        memcpy(f, &b, 8);
        break;
    }
    default:
        break;
    }
}

static int parse_array(rd *r, gguf_kv *kv)
{
    uint64_t n = kv->arr_n;
    r->part = "array";
    if (kv->arr_type == GGUF_T_STRING) {
        /* the vocabulary: counted, never stored */
        if (n > (r->size - r->pos) / 8) {
            r->elem = (int64_t)((r->size - r->pos) / 8);
            rd_truncated(r);
            return -1;
        }
        for (uint64_t k = 0; k < n; k++) {
            uint64_t len;
            r->elem = (int64_t)k;
            if (rd_strlen(r, &len) < 0 || rd_skip(r, len) < 0) return -1;
        }
        r->elem = -1;
        return 0;
    }
    size_t es = vtype_size[kv->arr_type];
    if (n > (r->size - r->pos) / es) {
        r->elem = (int64_t)((r->size - r->pos) / es);
        rd_truncated(r);
        return -1;
    }
    if (n > GGUF_MAX_KEPT_ARRAY) return rd_skip(r, n * es);
    /* n * es bytes are present, so this allocation is bounded by the file */
    int f = is_float(kv->arr_type);
    if (n) {
        if (f)
            kv->arr_f = xcalloc(n, sizeof(double));
        else
            kv->arr_i = xcalloc(n, sizeof(int64_t));
    }
    uint8_t tmp[4096];
    uint64_t k = 0;
    while (k < n) {
        size_t m = sizeof tmp / es;
        if (m > n - k) m = (size_t)(n - k);
        if (rd_get(r, tmp, m * es) < 0) return -1;
        for (size_t j = 0; j < m; j++, k++) {
            uint64_t u = 0;
            int64_t i = 0;
            double d = 0;
            decode(kv->arr_type, tmp + j * es, &u, &i, &d);
            if (f)
                kv->arr_f[k] = d;
            else
                kv->arr_i[k] = is_signed(kv->arr_type) ? i : (int64_t)u;
        }
    }
    return 0;
}

static int parse_value(rd *r, gguf_kv *kv)
{
    r->part = "value";
    if (kv->type == GGUF_T_STRING) {
        uint64_t len;
        if (rd_strlen(r, &len) < 0) return -1;
        kv->len = len;
        if (len > GGUF_MAX_KEPT_STRING) return rd_skip(r, len);
        kv->str = xmalloc((size_t)len + 1);
        if (rd_get(r, kv->str, (size_t)len) < 0) return -1;
        kv->str[len] = 0;
        return 0;
    }
    uint8_t b[8];
    if (rd_get(r, b, vtype_size[kv->type]) < 0) return -1;
    decode(kv->type, b, &kv->u, &kv->i, &kv->f);
    return 0;
}

static int parse_kv(rd *r, gguf_file *g, nameset *keys, uint64_t i, size_t *cap)
{
    r->item = "key";
    r->idx = i;
    r->iname = NULL;
    r->part = "name";
    r->elem = -1;
    uint64_t at = r->pos, len;
    if (rd_strlen(r, &len) < 0) return -1;
    if (len == 0) {
        rd_fail(r, "key %" PRIu64 " is empty at byte %" PRIu64, i, at);
        return -1;
    }
    if (len > MAX_KEY_LENGTH) {
        rd_fail(r, "key %" PRIu64 " at byte %" PRIu64 " is %" PRIu64 " bytes long, the limit is %d",
                i, at, len, MAX_KEY_LENGTH);
        return -1;
    }
    char *key = xmalloc((size_t)len + 1);
    if (rd_get(r, key, (size_t)len) < 0) {
        free(key);
        return -1;
    }
    key[len] = 0;
    if (memchr(key, 0, (size_t)len)) {
        free(key);
        rd_fail(r, "key %" PRIu64 " at byte %" PRIu64 " contains a NUL byte", i, at);
        return -1;
    }
    size_t dup;
    if (nameset_add(keys, key, g->nkv, &dup)) {
        rd_fail(r, "duplicate key '%.200s' at byte %" PRIu64 " (keys %zu and %" PRIu64 ")", key, at,
                dup, i);
        free(key);
        return -1;
    }
    if (g->nkv == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        g->kv = xrealloc(g->kv, *cap * sizeof *g->kv);
    }
    gguf_kv *kv = &g->kv[g->nkv++];
    memset(kv, 0, sizeof *kv);
    kv->key = key;
    r->iname = key;

    r->part = "value type";
    uint32_t t;
    at = r->pos;
    if (rd_u32(r, &t) < 0) return -1;
    if (t > GGUF_T_FLOAT64) {
        rd_fail(r, "key %" PRIu64 " '%.200s' has invalid value type %" PRIu32 " at byte %" PRIu64,
                i, key, t, at);
        return -1;
    }
    kv->type = (gguf_vtype)t;
    if (t != GGUF_T_ARRAY) return parse_value(r, kv);

    r->part = "array type";
    at = r->pos;
    if (rd_u32(r, &t) < 0) return -1;
    if (t == GGUF_T_ARRAY) {
        rd_fail(r,
                "key %" PRIu64 " '%.200s' is a nested array at byte %" PRIu64
                " (ggml does not accept them)",
                i, key, at);
        return -1;
    }
    if (t > GGUF_T_FLOAT64) {
        rd_fail(r,
                "key %" PRIu64 " '%.200s' has invalid array element type %" PRIu32
                " at byte %" PRIu64,
                i, key, t, at);
        return -1;
    }
    kv->arr_type = (gguf_vtype)t;
    r->part = "array count";
    at = r->pos;
    if (rd_u64(r, &kv->arr_n) < 0) return -1;
    if (kv->arr_n > GGUF_MAX_ARRAY_ELEMENTS) {
        rd_fail(r,
                "key %" PRIu64 " '%.200s' has %" PRIu64 " array elements at byte %" PRIu64
                ", the limit is %" PRIu64,
                i, key, kv->arr_n, at, GGUF_MAX_ARRAY_ELEMENTS);
        return -1;
    }
    return parse_array(r, kv);
}

static const gguf_kv *find_kv(const gguf_file *g, const char *key)
{
    for (size_t i = 0; i < g->nkv; i++)
        if (!strcmp(g->kv[i].key, key)) return &g->kv[i];
    return NULL;
}

/* general.alignment and split.count, as ggml and llama.cpp read them */
static int check_meta(rd *r, gguf_file *g)
{
    const gguf_kv *kv = find_kv(g, "general.alignment");
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    if (kv) {
        if (kv->type != GGUF_T_UINT32) {
            rd_fail(r, "general.alignment is a %s, ggml requires a uint32",
                    gguf_vtype_name(kv->type));
            return -1;
        }
        if (!kv->u || (kv->u & (kv->u - 1))) {
            rd_fail(r, "general.alignment %" PRIu64 " is not a power of two", kv->u);
            return -1;
        }
        if (kv->u > GGUF_MAX_ALIGNMENT) {
            rd_fail(r, "general.alignment %" PRIu64 " exceeds the limit of %" PRIu32, kv->u,
                    GGUF_MAX_ALIGNMENT);
            return -1;
        }
        g->alignment = (uint32_t)kv->u;
    }
    g->split_count = 1;
    if ((kv = find_kv(g, "split.count"))) {
        int64_t n;
        if (gguf_get_int(g, "split.count", &n) < 0 || n < 0 || n > UINT16_MAX) {
            rd_fail(r, "split.count must be an integer from 0 to 65535");
            return -1;
        }
        if (n > 1) g->split_count = (uint16_t)n;
    }
    return 0;
}

/* ---- the tensor table ---- */

typedef struct tstate {
    nameset names;
    size_t cap;
    uint64_t expect;   /* offset the next tensor must have */
    int after_unknown; /* the previous tensor's size is unknown */
    uint64_t prev_off;
} tstate;

static uint64_t align_up(uint64_t x, uint64_t a, int *ovf)
{
    uint64_t r = x + (a - x % a) % a;
    if (r < x) *ovf = 1;
    return r;
}

/* The name: bounded, no NUL, unique; the tensor appended with it.
 * Returns the new tensor, or NULL after rd_fail. */
static gguf_tensor *tensor_name(rd *r, gguf_file *g, tstate *ts, uint64_t i)
{
    r->part = "name";
    uint64_t at = r->pos, len;
    if (rd_strlen(r, &len) < 0) return NULL;
    if (len >= GGML_MAX_NAME) {
        rd_fail(r,
                "tensor %" PRIu64 " name at byte %" PRIu64 " is %" PRIu64
                " bytes long, the limit is %d",
                i, at, len, GGML_MAX_NAME - 1);
        return NULL;
    }
    char name[GGML_MAX_NAME];
    if (rd_get(r, name, (size_t)len) < 0) return NULL;
    name[len] = 0;
    if (memchr(name, 0, (size_t)len)) {
        rd_fail(r, "tensor %" PRIu64 " name at byte %" PRIu64 " contains a NUL byte", i, at);
        return NULL;
    }
    if (g->ntensors == ts->cap) {
        ts->cap = ts->cap ? ts->cap * 2 : 16;
        g->tensors = xrealloc(g->tensors, ts->cap * sizeof *g->tensors);
    }
    gguf_tensor *t = &g->tensors[g->ntensors];
    memset(t, 0, sizeof *t);
    t->name = xstrdup(name);
    size_t dup;
    if (nameset_add(&ts->names, t->name, g->ntensors, &dup)) {
        rd_fail(r, "duplicate tensor name '%s' at byte %" PRIu64 " (tensors %zu and %" PRIu64 ")",
                name, at, dup, i);
        free(t->name);
        return NULL;
    }
    g->ntensors++;
    r->iname = t->name;
    return t;
}

/* The dimension count and the dimensions: none negative, the element
 * count within int64.  0 with *nelem, or -1 after rd_fail. */
static int tensor_shape(rd *r, gguf_tensor *t, uint64_t i, int64_t *nelem)
{
    r->part = "dimension count";
    uint64_t at = r->pos;
    if (rd_u32(r, &t->n_dims) < 0) return -1;
    if (t->n_dims > GGML_MAX_DIMS) {
        rd_fail(r,
                "tensor %" PRIu64 " '%s' has %" PRIu32 " dimensions at byte %" PRIu64
                ", the limit is %d",
                i, t->name, t->n_dims, at, GGML_MAX_DIMS);
        return -1;
    }
    r->part = "dimensions";
    for (uint32_t j = 0; j < GGML_MAX_DIMS; j++) {
        t->ne[j] = 1;
        if (j >= t->n_dims) continue;
        uint64_t v;
        at = r->pos;
        if (rd_u64(r, &v) < 0) return -1;
        t->ne[j] = (int64_t)v;
        if (t->ne[j] < 0) {
            rd_fail(r,
                    "tensor %" PRIu64 " '%s' dimension %" PRIu32 " is negative (%" PRId64
                    ") at byte %" PRIu64,
                    i, t->name, j, t->ne[j], at);
            return -1;
        }
    }
    int ovf = 0;
    *nelem = 1;
    for (uint32_t j = 0; j < GGML_MAX_DIMS; j++)
        if (__builtin_mul_overflow(*nelem, t->ne[j], nelem)) ovf = 1;
    if (ovf || *nelem == INT64_MAX) {
        rd_fail(r,
                "tensor %" PRIu64 " '%s' with shape (%" PRId64 ", %" PRId64 ", %" PRId64
                ", %" PRId64 ") has more elements than int64 holds",
                i, t->name, t->ne[0], t->ne[1], t->ne[2], t->ne[3]);
        return -1;
    }
    return 0;
}

/* The type, and from it the byte size (rows a whole number of blocks);
 * an unknown type leaves the size unknown (g->unknown_types).  0 with
 * *ti (NULL: unknown), or -1 after rd_fail. */
static int tensor_type(rd *r, gguf_file *g, gguf_tensor *t, uint64_t i, int64_t nelem,
                       const ggml_type_info **ti)
{
    r->part = "type";
    uint64_t at = r->pos;
    if (rd_u32(r, &t->type) < 0) return -1;
    if ((int32_t)t->type < 0) { /* ggml reads an int32 */
        rd_fail(r, "tensor %" PRIu64 " '%s' has invalid ggml type %" PRIu32 " at byte %" PRIu64, i,
                t->name, t->type, at);
        return -1;
    }
    *ti = ggml_type_get(t->type);
    if (!*ti) {
        g->unknown_types = true;
        return 0;
    }
    if (t->ne[0] % (*ti)->blck) {
        rd_fail(r,
                "tensor %" PRIu64 " '%s' of type %s has %" PRId64
                " elements per row, not a multiple of the block size %" PRIu32,
                i, t->name, (*ti)->name, t->ne[0], (*ti)->blck);
        return -1;
    }
    if (__builtin_mul_overflow((uint64_t)nelem / (*ti)->blck, (uint64_t)(*ti)->size, &t->nbytes)) {
        rd_fail(r, "tensor %" PRIu64 " '%s' has more bytes than 64 bits hold", i, t->name);
        return -1;
    }
    return 0;
}

/* The offset: ggml requires the data packed in table order; after a
 * tensor of unknown size all that can be checked is order and alignment.
 * 0, or -1 after rd_fail. */
static int tensor_offset(rd *r, gguf_file *g, tstate *ts, gguf_tensor *t, uint64_t i, bool known)
{
    r->part = "offset";
    uint64_t at = r->pos;
    if (rd_u64(r, &t->offset) < 0) return -1;
    if (ts->after_unknown) {
        if (t->offset < ts->prev_off || t->offset % g->alignment) {
            rd_fail(r,
                    "tensor %" PRIu64 " '%s' has offset %" PRIu64 " at byte %" PRIu64
                    ", not aligned to %" PRIu32 " after offset %" PRIu64,
                    i, t->name, t->offset, at, g->alignment, ts->prev_off);
            return -1;
        }
    } else if (t->offset != ts->expect) {
        rd_fail(r,
                "tensor %" PRIu64 " '%s' has offset %" PRIu64 " at byte %" PRIu64
                ", expected %" PRIu64,
                i, t->name, t->offset, at, ts->expect);
        return -1;
    }
    int ovf = 0;
    uint64_t padded = align_up(t->nbytes, g->alignment, &ovf);
    if (ovf || __builtin_add_overflow(t->offset, padded, &ts->expect)) {
        rd_fail(r, "tensor %" PRIu64 " '%s' ends beyond 2^64 bytes", i, t->name);
        return -1;
    }
    ts->after_unknown = !known;
    ts->prev_off = t->offset;
    return 0;
}

/* One entry of the tensor table: name, shape, type, offset. */
static int parse_tensor(rd *r, gguf_file *g, tstate *ts, uint64_t i)
{
    r->item = "tensor";
    r->idx = i;
    r->iname = NULL;
    r->elem = -1;
    gguf_tensor *t = tensor_name(r, g, ts, i);
    if (!t) return -1;
    int64_t nelem;
    const ggml_type_info *ti = NULL;
    if (tensor_shape(r, t, i, &nelem) < 0 || tensor_type(r, g, t, i, nelem, &ti) < 0) return -1;
    return tensor_offset(r, g, ts, t, i, ti != NULL);
}

/* ---- one file or image ---- */

static void file_release(gguf_file *g)
{
    for (size_t i = 0; i < g->nkv; i++) {
        free(g->kv[i].key);
        free(g->kv[i].str);
        free(g->kv[i].arr_i);
        free(g->kv[i].arr_f);
    }
    free(g->kv);
    for (size_t i = 0; i < g->ntensors; i++)
        free(g->tensors[i].name);
    free(g->tensors);
    free(g->path);
    memset(g, 0, sizeof *g);
}

void gguf_release(gguf_file *g)
{
    if (g) file_release(g);
}

/* Parses r into g (zeroed by the caller); on failure g holds whatever was
 * read so far and the caller releases it. */
static int parse(rd *r, gguf_file *g, int check_extent)
{
    r->item = NULL;
    r->elem = -1;
    r->part = "the magic";
    uint8_t magic[4];
    if (rd_get(r, magic, 4) < 0) return -1;
    if (memcmp(magic, "GGUF", 4)) {
        char m[4 * 4 + 1], *p = m;
        for (int k = 0; k < 4; k++)
            p += magic[k] >= 0x20 && magic[k] < 0x7f && magic[k] != '\\' && magic[k] != '\''
                     ? sprintf(p, "%c", magic[k])
                     : sprintf(p, "\\x%02x", magic[k]);
        rd_fail(r, "not a GGUF file: the magic is '%s', expected 'GGUF'", m);
        return -1;
    }
    r->part = "the version";
    if (rd_u32(r, &g->version) < 0) return -1;
    if (g->version == 0) {
        rd_fail(r, "bad GGUF version 0 at byte 4");
        return -1;
    }
    if ((g->version & 0xFFFF) == 0) {
        rd_fail(r, "big-endian GGUF is not supported (version field 0x%08" PRIx32 ")", g->version);
        return -1;
    }
    if (g->version == 1) {
        rd_fail(r, "GGUF version 1 is not supported (only 2 and 3 are)");
        return -1;
    }
    if (g->version > GGUF_VERSION_MAX) {
        rd_fail(r, "GGUF version %" PRIu32 " is newer than the supported version 3", g->version);
        return -1;
    }
    uint64_t nt, nk;
    r->part = "the tensor count";
    if (rd_u64(r, &nt) < 0) return -1;
    if ((int64_t)nt < 0) {
        rd_fail(r, "tensor count %" PRIu64 " at byte 8 is negative as an int64", nt);
        return -1;
    }
    r->part = "the key count";
    if (rd_u64(r, &nk) < 0) return -1;
    if ((int64_t)nk < 0) {
        rd_fail(r, "key count %" PRIu64 " at byte 16 is negative as an int64", nk);
        return -1;
    }

    /* counts are trusted for nothing: arrays grow as records are read, and a
     * count beyond the bytes present fails at the first missing record */
    nameset keys = {0};
    size_t kcap = 0;
    int rc = 0;
    for (uint64_t i = 0; i < nk && rc == 0; i++)
        rc = parse_kv(r, g, &keys, i, &kcap);
    nameset_release(&keys);
    if (rc < 0) return -1;
    r->item = NULL;
    r->elem = -1;
    if (check_meta(r, g) < 0) return -1;

    tstate ts = {0};
    for (uint64_t i = 0; i < nt && rc == 0; i++)
        rc = parse_tensor(r, g, &ts, i);
    nameset_release(&ts.names);
    if (rc < 0) return -1;
    r->item = NULL;
    r->elem = -1;

    g->header_bytes_read = r->mem ? r->pos : r->nread;
    g->data_offset = r->pos;
    if (nt > 0) { /* ggml seeks over the padding, so it must be there */
        int ovf = 0;
        g->data_offset = align_up(r->pos, g->alignment, &ovf);
        if (g->data_offset > r->size) {
            r->part = "the padding before the data section";
            rd_truncated(r);
            return -1;
        }
    }
    g->file_bytes = r->size;
    if (!check_extent || !g->ntensors) return 0;
    /* llama.cpp's "tensor data is not within the file bounds": a broken
     * download.  The last tensor in the table ends last (offsets are
     * contiguous), but after an unknown type that is only mostly true. */
    const gguf_tensor *last = NULL;
    uint64_t end = 0;
    for (size_t i = 0; i < g->ntensors; i++) {
        uint64_t e = g->tensors[i].offset + g->tensors[i].nbytes;
        if (!last || e >= end) last = &g->tensors[i], end = e;
    }
    if (__builtin_add_overflow(end, g->data_offset, &end) || end > r->size) {
        rd_fail(r, "truncated: tensor '%s' ends at byte %" PRIu64 ", the file has %" PRIu64,
                last->name, end, r->size);
        return -1;
    }
    return 0;
}

int gguf_parse_buffer(gguf_file *g, const void *data, size_t len, char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    if (err && errlen) err[0] = 0;
    static const uint8_t empty[1];
    rd r = {.mem = data ? data : empty, .size = data ? len : 0, .err = err, .errlen = errlen};
    if (parse(&r, g, 0) < 0) {
        file_release(g);
        return -1;
    }
    return 0;
}

/* ---- the local source: open() and pread() ---- */

static int local_open(void *ctx, const char *name, void **h, uint64_t *size, char *err,
                      size_t errlen)
{
    (void)ctx;
    /* O_NONBLOCK: a FIFO named as a model would otherwise block open()
     * (and the daemon's loop) until something writes to it */
    int fd = open(name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return errf_ret(-1, err, errlen, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0) {
        errf_ret(-1, err, errlen, "cannot stat: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        errf_ret(-1, err, errlen, "%s, not a regular file", slurp_kind(st.st_mode));
        close(fd);
        return -1;
    }
    *size = (uint64_t)st.st_size;
    *h = (void *)(intptr_t)fd;
    return 0;
}

static long local_pread(void *h, void *dst, size_t n, uint64_t off, char *err, size_t errlen)
{
    for (;;) {
        ssize_t k = pread((int)(intptr_t)h, dst, n, (off_t)off);
        if (k >= 0) return (long)k;
        if (errno != EINTR) return errf_ret(-1, err, errlen, "%s", strerror(errno));
    }
}

static void local_close(void *h)
{
    close((int)(intptr_t)h);
}

static const gguf_io local_io = {local_open, local_pread, local_close, NULL, 0, 0};

/* Parses one file; shard > 0 names it in errors as one of split_count. */
static int parse_path(gguf_file *g, const gguf_io *io, const char *path, unsigned shard,
                      unsigned count, char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    size_t wmin = io->window_min ? io->window_min : WINDOW_MIN;
    size_t wmax = io->window_max >= wmin ? io->window_max : WINDOW_MAX;
    if (wmax < wmin) wmax = wmin;
    rd r = {.name = path, .io = io, .chunk = wmin, .win_max = wmax, .err = err, .errlen = errlen};
    char which[48] = "", ioerr[256] = "";
    if (shard) snprintf(which, sizeof which, " shard %u of %u", shard + 1, count);
    if (io->open(io->ctx, path, &r.h, &r.size, ioerr, sizeof ioerr) < 0) {
        static const char co[] = "cannot open: ";
        if (!ioerr[0]) snprintf(ioerr, sizeof ioerr, "cannot open: unknown error");
        if (!strncmp(ioerr, co, sizeof co - 1))
            rd_fail(&r, "cannot open%s: %s", which, ioerr + sizeof co - 1);
        else
            rd_fail(&r, "%s%s%s", shard ? which + 1 : "", shard ? ": " : "", ioerr);
        return -1;
    }
    r.win = xmalloc(wmax);
    int rc = parse(&r, g, 1);
    free(r.win);
    io->close(r.h);
    if (rc < 0) file_release(g);
    return rc;
}

/* ---- split models ---- */

/* llama.cpp's llama_split_path(): "<prefix>-%05d-of-%05d.gguf", 1-based. */
static int open_shards(gguf_file *g, const gguf_io *io, const char *path, char *err, size_t errlen)
{
    unsigned n = g->split_count;
    int64_t no = 0;
    if (gguf_get_int(g, "split.no", &no) < 0) no = 0;
    char suffix[40];
    if (strstr(path, "://") && path[strcspn(path, "?#")])
        return errf_ret(-1, err, errlen,
                        "'%.*s': a split model (split.count %u) named by a URL with a query: its "
                        "other parts cannot be named; use hf:ORG/REPO/FILE or plain URLs",
                        (int)strcspn(path, "?#"), path, n);
    size_t plen = strlen(path);
    if (no != 0) {
        snprintf(suffix, sizeof suffix, "-%05" PRId64 "-of-%05u.gguf", no + 1, n);
        size_t sl = strlen(suffix);
        if (plen > sl && !strcmp(path + plen - sl, suffix))
            return errf_ret(-1, err, errlen,
                            "'%s': this is shard %" PRId64
                            " of %u; open the first shard '%.*s-00001-of-%05u.gguf'",
                            path, no + 1, n, (int)(plen - sl), path, n);
        return errf_ret(-1, err, errlen,
                        "'%s': this is shard %" PRId64 " of %u (split.no %" PRId64
                        "); open the first shard",
                        path, no + 1, n, no);
    }
    snprintf(suffix, sizeof suffix, "-00001-of-%05u.gguf", n);
    size_t sl = strlen(suffix);
    if (plen <= sl || strcmp(path + plen - sl, suffix))
        return errf_ret(
            -1, err, errlen,
            "'%s': a split model (split.count %u) whose name does not end in '%s': cannot "
            "find its other shards",
            path, n, suffix);
    size_t total = g->ntensors;
    for (unsigned s = 1; s < n; s++) {
        char *sp = xasprintf("%.*s-%05u-of-%05u.gguf", (int)(plen - sl), path, s + 1, n);
        gguf_file sh;
        if (parse_path(&sh, io, sp, s, n, err, errlen) < 0) {
            free(sp);
            return -1;
        }
        int64_t sno = -1, scount = -1;
        gguf_get_int(&sh, "split.no", &sno);
        gguf_get_int(&sh, "split.count", &scount);
        if (sno != (int64_t)s || scount != (int64_t)n) {
            errf_ret(-1, err, errlen,
                     "'%s': shard %u of %u has split.no %" PRId64 " and split.count %" PRId64
                     ", expected %u and %u",
                     sp, s + 1, n, sno, scount, s, n);
            free(sp);
            file_release(&sh);
            return -1;
        }
        free(sp);
        g->tensors = xrealloc(g->tensors, (total + sh.ntensors) * sizeof *g->tensors);
        for (size_t i = 0; i < sh.ntensors; i++) {
            g->tensors[total + i] = sh.tensors[i];
            g->tensors[total + i].shard = (uint16_t)s;
        }
        total += sh.ntensors;
        g->ntensors = total;
        sh.ntensors = 0; /* the names moved to g */
        g->file_bytes += sh.file_bytes;
        g->header_bytes_read += sh.header_bytes_read;
        g->unknown_types |= sh.unknown_types;
        file_release(&sh);
    }
    /* llama.cpp refuses a tensor that appears in two shards */
    nameset ns = {0};
    for (size_t i = 0; i < g->ntensors; i++) {
        size_t dup;
        if (nameset_add(&ns, g->tensors[i].name, i, &dup)) {
            errf_ret(-1, err, errlen, "'%s': tensor '%s' is in shard %u and shard %u", path,
                     g->tensors[i].name, g->tensors[dup].shard + 1u, g->tensors[i].shard + 1u);
            nameset_release(&ns);
            return -1;
        }
    }
    nameset_release(&ns);
    int64_t want;
    if (gguf_get_int(g, "split.tensors.count", &want) == 0 &&
        (want < 0 || (uint64_t)want != g->ntensors))
        return errf_ret(-1, err, errlen,
                        "'%s': split.tensors.count is %" PRId64
                        " but the %u shards hold %zu tensors",
                        path, want, n, g->ntensors);
    return 0;
}

int gguf_open_io(gguf_file *g, const char *path, const gguf_io *io, char *err, size_t errlen)
{
    if (err && errlen) err[0] = 0;
    if (parse_path(g, io, path, 0, 1, err, errlen) < 0) return -1;
    g->path = xstrdup(path);
    if (g->split_count > 1 && open_shards(g, io, path, err, errlen) < 0) {
        file_release(g);
        return -1;
    }
    return 0;
}

int gguf_open(gguf_file *g, const char *path, char *err, size_t errlen)
{
    return gguf_open_io(g, path, &local_io, err, errlen);
}

/* ---- getters ---- */

const gguf_kv *gguf_get(const gguf_file *g, const char *key)
{
    return g && key ? find_kv(g, key) : NULL;
}

int gguf_get_int(const gguf_file *g, const char *key, int64_t *out)
{
    const gguf_kv *kv = gguf_get(g, key);
    if (!kv || !is_int(kv->type)) return -1;
    if (is_signed(kv->type)) {
        *out = kv->i;
        return 0;
    }
    if (kv->u > INT64_MAX) return -1;
    *out = (int64_t)kv->u;
    return 0;
}

int gguf_get_float(const gguf_file *g, const char *key, double *out)
{
    const gguf_kv *kv = gguf_get(g, key);
    if (!kv) return -1;
    if (is_float(kv->type)) {
        *out = kv->f;
        return 0;
    }
    if (!is_int(kv->type)) return -1;
    *out = is_signed(kv->type) ? (double)kv->i : (double)kv->u;
    return 0;
}

int gguf_get_bool(const gguf_file *g, const char *key, bool *out)
{
    const gguf_kv *kv = gguf_get(g, key);
    if (!kv || !is_int(kv->type)) return -1;
    *out = is_signed(kv->type) ? kv->i != 0 : kv->u != 0;
    return 0;
}

const char *gguf_get_str(const gguf_file *g, const char *key)
{
    const gguf_kv *kv = gguf_get(g, key);
    return kv && kv->type == GGUF_T_STRING ? kv->str : NULL;
}

/* "{arch}.suffix"; NULL when the file names no architecture.  Caller frees. */
static char *arch_key(const gguf_file *g, const char *suffix)
{
    const char *arch = gguf_get_str(g, "general.architecture");
    if (!arch || !suffix) return NULL;
    return xasprintf("%s.%s", arch, suffix);
}

int gguf_get_arch_int(const gguf_file *g, const char *suffix, int64_t *out)
{
    char *k = arch_key(g, suffix);
    int rc = k ? gguf_get_int(g, k, out) : -1;
    free(k);
    return rc;
}

int gguf_get_arch_float(const gguf_file *g, const char *suffix, double *out)
{
    char *k = arch_key(g, suffix);
    int rc = k ? gguf_get_float(g, k, out) : -1;
    free(k);
    return rc;
}

int gguf_get_arch_layers(const gguf_file *g, const char *suffix, int64_t *out, size_t n_layer)
{
    char *k = arch_key(g, suffix);
    if (!k) return -1;
    const gguf_kv *kv = find_kv(g, k);
    int64_t v;
    int rc = -1;
    if (kv && kv->type != GGUF_T_ARRAY) {
        if (gguf_get_int(g, k, &v) == 0) {
            for (size_t i = 0; i < n_layer; i++)
                out[i] = v;
            rc = 0;
        }
    } else if (kv && is_int(kv->arr_type) && kv->arr_n >= n_layer && (kv->arr_i || !n_layer)) {
        rc = 0;
        for (size_t i = 0; i < n_layer; i++) {
            /* a uint64 beyond int64 was kept wrapped: not a usable count */
            if (kv->arr_type == GGUF_T_UINT64 && kv->arr_i[i] < 0) rc = -1;
            out[i] = kv->arr_i[i];
        }
    }
    free(k);
    return rc;
}

const gguf_tensor *gguf_tensor_find(const gguf_file *g, const char *name)
{
    if (!g || !name) return NULL;
    for (size_t i = 0; i < g->ntensors; i++)
        if (!strcmp(g->tensors[i].name, name)) return &g->tensors[i];
    return NULL;
}
