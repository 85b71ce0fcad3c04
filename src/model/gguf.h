/* gguf.h - GGUF v2/v3 model files: metadata and the tensor table, read
 * from the header region only (a 100 GB file is inspected in
 * milliseconds), bounds-checked against hostile files.
 *
 * What is kept: every key with its type; scalar values; strings up to
 * GGUF_MAX_KEPT_STRING bytes (longer ones keep their length, not their
 * bytes); numeric arrays up to GGUF_MAX_KEPT_ARRAY elements as int64 or
 * double (per-layer hyperparameters); for longer arrays and string arrays
 * (the tokenizer's vocabulary) only the element type and count.  Split
 * models (split.count > 1) are opened shard by shard from the first one and
 * their tensor tables concatenated. */
#ifndef GPUMOD_GGUF_H
#define GPUMOD_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GGUF_MAX_KEPT_STRING 65536
#define GGUF_MAX_KEPT_ARRAY 65536

typedef enum {
    GGUF_T_UINT8 = 0,
    GGUF_T_INT8 = 1,
    GGUF_T_UINT16 = 2,
    GGUF_T_INT16 = 3,
    GGUF_T_UINT32 = 4,
    GGUF_T_INT32 = 5,
    GGUF_T_FLOAT32 = 6,
    GGUF_T_BOOL = 7,
    GGUF_T_STRING = 8,
    GGUF_T_ARRAY = 9,
    GGUF_T_UINT64 = 10,
    GGUF_T_INT64 = 11,
    GGUF_T_FLOAT64 = 12,
} gguf_vtype;

typedef struct gguf_kv {
    char *key;
    gguf_vtype type;
    /* scalars: exactly one of these is meaningful, by type */
    uint64_t u;   /* unsigned integers and bool */
    int64_t i;    /* signed integers */
    double f;     /* floats */
    char *str;    /* GGUF_T_STRING when kept (NUL-terminated; NULL if too long) */
    uint64_t len; /* string length in the file */
    /* arrays */
    gguf_vtype arr_type;
    uint64_t arr_n;
    int64_t *arr_i; /* integer and bool arrays, when kept */
    double *arr_f;  /* float arrays, when kept */
} gguf_kv;

typedef struct gguf_tensor {
    char *name;
    uint32_t n_dims;
    int64_t ne[4];   /* unused dims are 1 */
    uint32_t type;   /* ggml type id, see ggml_type.h */
    uint64_t offset; /* relative to its shard's data section */
    uint64_t nbytes; /* 0 when the type is unknown: cannot estimate */
    uint16_t shard;  /* 0-based */
} gguf_tensor;

typedef struct gguf_file {
    char *path; /* the first shard */
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset; /* of the first shard */
    uint64_t file_bytes;  /* all shards */
    uint64_t header_bytes_read;
    uint16_t split_count; /* 1 when not split */
    gguf_kv *kv;
    size_t nkv;
    gguf_tensor *tensors;
    size_t ntensors;
    bool unknown_types; /* some tensor has a type id gpumod does not know */
} gguf_file;

/* Where the bytes come from: a local file (gguf_open), or anything that
 * can read a range (the models helper's HTTP range requests).  The reader
 * asks for windows of window_min bytes, doubling to window_max (0, 0: 4 KiB
 * to 64 KiB); pread may return fewer bytes than asked, never more. */
typedef struct gguf_io {
    /* open name: its size in bytes and a handle for pread and close; 0, or
     * -1 with err ("cannot open: ..." for a missing file) */
    int (*open)(void *ctx, const char *name, void **h, uint64_t *size, char *err, size_t errlen);
    /* up to n bytes at off: how many were read (> 0), 0 at the end, -1 with err */
    long (*pread)(void *h, void *dst, size_t n, uint64_t off, char *err, size_t errlen);
    void (*close)(void *h);
    void *ctx;
    size_t window_min, window_max;
} gguf_io;

/* Parse path (and its other shards).  0, or -1 with err naming the file,
 * the byte offset and what was wrong. */
int gguf_open(gguf_file *g, const char *path, char *err, size_t errlen);
/* The same through io: the other shards' names follow llama.cpp's rule
 * ("<prefix>-%05d-of-%05d.gguf"), which holds for URLs too. */
int gguf_open_io(gguf_file *g, const char *path, const gguf_io *io, char *err, size_t errlen);
/* Parse an in-memory image (tests, the fuzzer); shards are not followed. */
int gguf_parse_buffer(gguf_file *g, const void *data, size_t len, char *err, size_t errlen);
void gguf_release(gguf_file *g);

const gguf_kv *gguf_get(const gguf_file *g, const char *key);
/* Typed getters: 0 when present with a compatible type, -1 otherwise.
 * Integers accept every integer type (and bool); floats accept floats and
 * integers. */
int gguf_get_int(const gguf_file *g, const char *key, int64_t *out);
int gguf_get_float(const gguf_file *g, const char *key, double *out);
int gguf_get_bool(const gguf_file *g, const char *key, bool *out);
const char *gguf_get_str(const gguf_file *g, const char *key); /* NULL when absent or not kept */
/* "{arch}.suffix" for the file's general.architecture. */
int gguf_get_arch_int(const gguf_file *g, const char *suffix, int64_t *out);
int gguf_get_arch_float(const gguf_file *g, const char *suffix, double *out);
/* A per-layer hyperparameter: a scalar (broadcast) or an integer array.
 * Fills out[0..n_layer); 0, or -1 when absent or the array is too short. */
int gguf_get_arch_layers(const gguf_file *g, const char *suffix, int64_t *out, size_t n_layer);
const gguf_tensor *gguf_tensor_find(const gguf_file *g, const char *name);

const char *gguf_vtype_name(gguf_vtype t);

#endif
