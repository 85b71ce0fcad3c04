/* fuzz_gguf.c - libFuzzer target for the GGUF header parser.
 *
 * Each input is parsed twice: as a buffer (gguf_parse_buffer) and as a
 * file (gguf_open on a memfd, through the windowed pread reader, which the
 * fuzz build shrinks to 16..64 bytes so that every field straddles a
 * refill).  Beyond "no crash, no leak, no sanitizer report" the target
 * checks what the parser promises: a failure leaves an error and an empty
 * gguf_file; a success satisfies every rule the parser claims to enforce
 * (unique keys and names, n_dims <= 4, contiguous offsets, nbytes from the
 * type table, ...); the getters agree with the stored values; and the two
 * readers agree, except that only gguf_open checks the data extent and
 * follows shards.  A third reader, gguf_open_io over a source that serves
 * the image in short reads (the models helper's remote files), must agree
 * with the file reader, and fail cleanly when the size it claims is larger
 * than the bytes it has (a lying server), never reading past that size.
 * check_input() returns NULL or what broke, so the replay driver
 * (replay.c, which #includes this file) can report it as TAP. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/ggml_type.h"
#include "model/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char why[1024];

static const char *broke(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *broke(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return why;
}

static int is_zeroed(const gguf_file *g)
{
    static const gguf_file zero;
    return !memcmp(g, &zero, sizeof zero);
}

static const char *check_error(const char *err)
{
    size_t n = strlen(err);
    if (!n) return broke("failed without an error message");
    if (err[n - 1] == '.' || err[n - 1] == '\n')
        return broke("error ends in a full stop or newline: %s", err);
    return NULL;
}

static const char *check_kv(const gguf_file *g, size_t i, size_t size)
{
    const gguf_kv *kv = &g->kv[i];
    if (!kv->key || !kv->key[0]) return broke("key %zu is empty", i);
    if (i < 512)
        for (size_t j = 0; j < i; j++)
            if (!strcmp(g->kv[j].key, kv->key)) return broke("duplicate key '%s'", kv->key);
    if ((unsigned)kv->type > GGUF_T_FLOAT64)
        return broke("key '%s' has type %d", kv->key, (int)kv->type);
    if (gguf_get(g, kv->key) != kv && i < 512)
        return broke("gguf_get('%s') finds another entry", kv->key);
    int64_t iv;
    double fv;
    bool bv;
    int ri = gguf_get_int(g, kv->key, &iv);
    int rf = gguf_get_float(g, kv->key, &fv);
    gguf_get_bool(g, kv->key, &bv);
    const char *sv = gguf_get_str(g, kv->key);
    switch (kv->type) {
    case GGUF_T_INT8:
    case GGUF_T_INT16:
    case GGUF_T_INT32:
    case GGUF_T_INT64:
        if (ri || iv != kv->i) return broke("gguf_get_int('%s') lost the signed value", kv->key);
        break;
    case GGUF_T_UINT8:
    case GGUF_T_UINT16:
    case GGUF_T_UINT32:
    case GGUF_T_UINT64:
    case GGUF_T_BOOL:
        if (kv->u <= INT64_MAX && (ri || (uint64_t)iv != kv->u))
            return broke("gguf_get_int('%s') lost the unsigned value", kv->key);
        if (kv->u > INT64_MAX && !ri)
            return broke("gguf_get_int('%s') took a uint64 beyond int64", kv->key);
        if (kv->type == GGUF_T_BOOL && kv->u > 1)
            return broke("bool '%s' is %llu", kv->key, (unsigned long long)kv->u);
        break;
    case GGUF_T_FLOAT32:
    case GGUF_T_FLOAT64:
        if (!ri || rf) return broke("float getters wrong for '%s'", kv->key);
        break;
    case GGUF_T_STRING:
        if (!ri || !rf) return broke("numeric getter took string '%s'", kv->key);
        if (kv->len > size) return broke("string '%s' is longer than the input", kv->key);
        if (kv->len <= GGUF_MAX_KEPT_STRING && (!kv->str || sv != kv->str))
            return broke("string '%s' was not kept", kv->key);
        if (kv->len > GGUF_MAX_KEPT_STRING && kv->str)
            return broke("long string '%s' was kept", kv->key);
        break;
    case GGUF_T_ARRAY:
        if (!ri || !rf || sv) return broke("scalar getter took array '%s'", kv->key);
        if (kv->arr_type == GGUF_T_ARRAY || (unsigned)kv->arr_type > GGUF_T_FLOAT64)
            return broke("array '%s' has element type %d", kv->key, (int)kv->arr_type);
        if (kv->arr_n > size)
            return broke("array '%s' has more elements than the input has bytes", kv->key);
        if (kv->arr_type == GGUF_T_STRING && (kv->arr_i || kv->arr_f))
            return broke("string array '%s' kept", kv->key);
        if (kv->arr_type != GGUF_T_STRING && kv->arr_n && kv->arr_n <= GGUF_MAX_KEPT_ARRAY &&
            !(kv->arr_i || kv->arr_f))
            return broke("short numeric array '%s' not kept", kv->key);
        break;
    }
    return NULL;
}

static const char *check_tensors(const gguf_file *g)
{
    uint64_t expect = 0;
    int after_unknown = 0, unknown = 0;
    for (size_t i = 0; i < g->ntensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        if (!t->name || strlen(t->name) >= 64) return broke("tensor %zu name", i);
        if (i < 512 && gguf_tensor_find(g, t->name) != t)
            return broke("tensor '%s' is not unique", t->name);
        if (t->n_dims > 4) return broke("tensor '%s' has %u dims", t->name, t->n_dims);
        int64_t ne = 1;
        for (unsigned j = 0; j < 4; j++) {
            if (t->ne[j] < 0) return broke("tensor '%s' ne[%u] < 0", t->name, j);
            if (j >= t->n_dims && t->ne[j] != 1)
                return broke("tensor '%s' unused dim %u is not 1", t->name, j);
            if (__builtin_mul_overflow(ne, t->ne[j], &ne))
                return broke("tensor '%s' overflows", t->name);
        }
        const ggml_type_info *ti = ggml_type_get(t->type);
        if (ti) {
            uint64_t want = ggml_row_bytes(t->type, (uint64_t)t->ne[0]) * (uint64_t)t->ne[1] *
                            (uint64_t)t->ne[2] * (uint64_t)t->ne[3];
            if (t->ne[0] % ti->blck) return broke("tensor '%s' row not a block multiple", t->name);
            if (t->ne[0] && t->nbytes != want)
                return broke("tensor '%s' nbytes %llu", t->name, (unsigned long long)t->nbytes);
        } else {
            unknown = 1;
            if (t->nbytes) return broke("tensor '%s' of unknown type has nbytes", t->name);
        }
        if (!after_unknown && t->offset != expect)
            return broke("tensor '%s' offset not contiguous", t->name);
        if (after_unknown && t->offset % g->alignment)
            return broke("tensor '%s' offset not aligned", t->name);
        uint64_t a = g->alignment;
        expect = t->offset + (t->nbytes + a - 1) / a * a;
        after_unknown = !ti;
    }
    if (unknown != g->unknown_types)
        return broke("unknown_types is %d, expected %d", g->unknown_types, unknown);
    return NULL;
}

static const char *check_parsed(const gguf_file *g, size_t size)
{
    const char *e;
    if (g->version != 2 && g->version != 3) return broke("version %u accepted", g->version);
    if (!g->alignment || (g->alignment & (g->alignment - 1)))
        return broke("alignment %u", g->alignment);
    if (g->data_offset > size) return broke("data_offset beyond the input");
    if (g->ntensors && g->data_offset % g->alignment) return broke("data_offset not aligned");
    if (g->header_bytes_read > g->data_offset) return broke("header_bytes_read beyond data_offset");
    if (g->split_count < 1) return broke("split_count 0");
    for (size_t i = 0; i < g->nkv; i++)
        if ((e = check_kv(g, i, size))) return e;
    if ((e = check_tensors(g))) return e;
    int64_t n_layer;
    if (gguf_get_arch_int(g, "block_count", &n_layer) == 0 && n_layer >= 0 && n_layer <= 4096) {
        int64_t *v = calloc((size_t)n_layer + 1, sizeof *v);
        for (size_t i = 0; i < g->nkv; i++) {
            const char *arch = gguf_get_str(g, "general.architecture");
            size_t al = strlen(arch);
            const char *k = g->kv[i].key;
            if (!strncmp(k, arch, al) && k[al] == '.')
                gguf_get_arch_layers(g, k + al + 1, v, (size_t)n_layer);
        }
        free(v);
    }
    return NULL;
}

/* the same image through gguf_open; NULL when the readers agree */
static const char *check_file(const uint8_t *data, size_t size, int buf_rc, const gguf_file *gb,
                              const char *berr)
{
    static int fd = -1;
    if (fd < 0 && (fd = memfd_create("gguf", MFD_CLOEXEC)) < 0) return NULL;
    if (ftruncate(fd, 0) < 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) return NULL;
    char path[64], err[1024];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    gguf_file g;
    memset(&g, 0x5a, sizeof g);
    int rc = gguf_open(&g, path, err, sizeof err);
    const char *e = NULL;
    size_t plen = strlen(path) + 4; /* "'path': " */
    if (rc < 0) {
        if (!is_zeroed(&g))
            e = broke("gguf_open failed but left data behind");
        else if ((e = check_error(err)))
            ;
        else if (strncmp(err, "'", 1) || strncmp(err + 1, path, strlen(path)))
            e = broke("gguf_open error does not name the file: %s", err);
        else if (buf_rc < 0 && strcmp(err + plen, berr))
            e = broke("readers disagree: buffer '%s', file '%s'", berr, err + plen);
        else if (buf_rc == 0 && strncmp(err + plen, "truncated: tensor '", 19) &&
                 gb->split_count < 2)
            e = broke("file failed where the buffer passed: %s", err);
        return e;
    }
    if (buf_rc < 0)
        e = broke("file passed where the buffer failed: %s", berr);
    else if (g.nkv != gb->nkv || g.ntensors != gb->ntensors || g.data_offset != gb->data_offset ||
             g.alignment != gb->alignment || g.file_bytes != size ||
             g.unknown_types != gb->unknown_types)
        e = broke("readers disagree on the shape");
    for (size_t i = 0; !e && i < g.nkv; i++) {
        const gguf_kv *a = &g.kv[i], *b = &gb->kv[i];
        if (strcmp(a->key, b->key) || a->type != b->type || a->u != b->u || a->i != b->i ||
            memcmp(&a->f, &b->f, sizeof a->f) || a->len != b->len || !a->str != !b->str ||
            (a->str && memcmp(a->str, b->str, a->len)) || a->arr_type != b->arr_type ||
            a->arr_n != b->arr_n || !a->arr_i != !b->arr_i || !a->arr_f != !b->arr_f ||
            (a->arr_i && memcmp(a->arr_i, b->arr_i, a->arr_n * 8)) ||
            (a->arr_f && memcmp(a->arr_f, b->arr_f, a->arr_n * 8)))
            e = broke("readers disagree on key %zu '%s'", i, a->key);
    }
    for (size_t i = 0; !e && i < g.ntensors; i++) {
        const gguf_tensor *a = &g.tensors[i], *b = &gb->tensors[i];
        if (strcmp(a->name, b->name) || a->n_dims != b->n_dims ||
            memcmp(a->ne, b->ne, sizeof a->ne) || a->type != b->type || a->offset != b->offset ||
            a->nbytes != b->nbytes || a->shard != b->shard)
            e = broke("readers disagree on tensor %zu '%s'", i, a->name);
    }
    gguf_release(&g);
    return e;
}

/* ---- the reader over a gguf_io (the models helper's remote files) ---- */

/* An image served as a remote server would: reads cut short (step bytes
 * at most), and a size that may be claimed larger than the bytes there. */
typedef struct memsrc {
    const uint8_t *d;
    size_t n;
    uint64_t claimed;
    size_t step;
    int opens, closes;
    int asked_past; /* a read past the claimed size was asked for */
} memsrc;

static int mem_open(void *ctx, const char *name, void **h, uint64_t *size, char *err, size_t errlen)
{
    memsrc *m = ctx;
    if (strcmp(name, "mem://m.gguf")) { /* another shard: there is none */
        snprintf(err, errlen, "cannot open: No such file or directory");
        return -1;
    }
    m->opens++;
    *h = m;
    *size = m->claimed;
    return 0;
}

static long mem_pread(void *h, void *dst, size_t n, uint64_t off, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    memsrc *m = h;
    if (off + n > m->claimed) { /* never asked past the size it was told */
        m->asked_past = 1;
        return -1;
    }
    if (off >= m->n) return 0;
    size_t k = m->n - off < n ? m->n - off : n;
    if (m->step && k > m->step) k = m->step;
    memcpy(dst, m->d + off, k);
    return (long)k;
}

static void mem_close(void *h)
{
    ((memsrc *)h)->closes++;
}

/* Honest size, short reads: the same result as the file reader (errors
 * after the name).  A size claimed larger: a clean failure or a parse
 * that never needed the missing bytes. */
static const char *check_io(const uint8_t *data, size_t size, int file_rc, const gguf_file *gf,
                            const char *ferr_tail)
{
    size_t step = size ? 1 + data[size / 2] % 7 : 1;
    for (int lie = 0; lie < 2; lie++) {
        memsrc m = {data, size, size + (lie ? 1 + (size ? data[0] % 64 : 0) : 0), step, 0, 0, 0};
        gguf_io io = {mem_open, mem_pread, mem_close, &m, 0, 0};
        gguf_file g;
        char err[1024];
        memset(&g, 0x5a, sizeof g);
        int rc = gguf_open_io(&g, "mem://m.gguf", &io, err, sizeof err);
        const char *e = NULL;
        if (m.opens != m.closes) e = broke("gguf_open_io: %d opens, %d closes", m.opens, m.closes);
        if (!e && rc < 0 && !is_zeroed(&g)) e = broke("gguf_open_io failed but left data behind");
        if (!e && rc < 0) e = check_error(err);
        if (!e && m.asked_past) e = broke("gguf_open_io asked past the size it was told");
        const char *tail = rc < 0 ? err + strlen("'mem://m.gguf': ") : NULL;
        if (!e && !lie && (rc < 0) != (file_rc < 0))
            e = broke("io and file readers disagree: io %s, file %s", tail ? tail : "ok",
                      file_rc < 0 ? ferr_tail : "ok");
        if (!e && !lie && rc < 0 && strcmp(tail, ferr_tail) && !strstr(tail, "shard"))
            e = broke("io and file errors differ: '%s' / '%s'", tail, ferr_tail);
        if (!e && !lie && rc == 0 &&
            (g.nkv != gf->nkv || g.ntensors != gf->ntensors || g.data_offset != gf->data_offset))
            e = broke("io and file readers disagree on the shape");
        if (!e && lie && rc == 0 && g.file_bytes != m.claimed)
            e = broke("io reader: file_bytes %llu, claimed %llu", (unsigned long long)g.file_bytes,
                      (unsigned long long)m.claimed);
        if (rc == 0) gguf_release(&g);
        if (e) return e;
    }
    return NULL;
}

/* the file reader's own result, then the io reader against it */
static const char *check_io_vs_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    if (fd < 0 && (fd = memfd_create("gguf-io", MFD_CLOEXEC)) < 0) return NULL;
    if (ftruncate(fd, 0) < 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) return NULL;
    char path[64], err[1024];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    gguf_file g;
    int rc = gguf_open(&g, path, err, sizeof err);
    const char *e = check_io(data, size, rc, &g, rc < 0 ? err + strlen(path) + 4 : "");
    if (rc == 0) gguf_release(&g);
    return e;
}

static const char *check_input(const uint8_t *data, size_t size)
{
    gguf_file g;
    char err[1024];
    memset(&g, 0x5a, sizeof g);
    int rc = gguf_parse_buffer(&g, data, size, err, sizeof err);
    const char *e;
    if (rc < 0) {
        if (!is_zeroed(&g)) return broke("gguf_parse_buffer failed but left data behind");
        if ((e = check_error(err))) return e;
    } else if ((e = check_parsed(&g, size))) {
        gguf_release(&g);
        return e;
    }
    e = check_file(data, size, rc, &g, err);
    if (!e) e = check_io_vs_file(data, size);
    gguf_release(&g);
    gguf_release(&g); /* releasing twice is allowed */
    return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *e = check_input(data, size);
    if (e) {
        fprintf(stderr, "fuzz_gguf: %s\n", e);
        abort();
    }
    return 0;
}
