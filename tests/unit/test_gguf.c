/* test_gguf.c - the GGUF header parser and the ggml type table: synthetic
 * headers for every value type and every rule, hostile inputs (each must
 * fail with the error a user would read, at the byte where it went wrong),
 * truncation at every byte, a sparse 100 GB file that must be inspected in
 * milliseconds, split models, and the two real models in tests/fixtures/models. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gguf_synth.h"
#include "model/ggml_type.h"
#include "model/gguf.h"
#include "util/buf.h"

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/test_gguf.XXXXXX", t && *t ? t : "/tmp");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return rmdir(tmpdir); /* every test removes its own files: this fails if one did not */
}

static char *tmp_path(const char *name)
{
    return xasprintf("%s/%s", tmpdir, name);
}

/* writes img and then `extra` bytes of file (a hole: costs no disk) */
static char *write_file(const char *name, const buf *img, uint64_t extra)
{
    char *p = tmp_path(name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, img->p, img->len), (ssize_t)img->len);
    assert_int_equal(ftruncate(fd, (off_t)(img->len + extra)), 0);
    close(fd);
    return p;
}

static int parse(gguf_file *g, const buf *img, char *err)
{
    return gguf_parse_buffer(g, img->p, img->len, err, 512);
}

/* parse must fail with an error containing want */
static void refuse(const buf *img, const char *want)
{
    gguf_file g;
    char err[512] = "";
    int rc = parse(&g, img, err);
    if (rc == 0 || !strstr(err, want))
        fail_msg("expected an error with \"%s\", got rc %d \"%s\"", want, rc, err);
    static const gguf_file zero;
    assert_memory_equal(&g, &zero, sizeof g); /* released on failure */
    gguf_release(&g);
}

static void base(gsynth *s, uint32_t version)
{
    gs_init(s, version);
    gs_str(s, "general.architecture", "llama");
    gs_u32(s, "llama.block_count", 4);
    gs_u32(s, "llama.context_length", 4096);
    gs_u32(s, "llama.embedding_length", 256);
}

/* ---- the type table ---- */

static void type_table(void **state)
{
    (void)state;
    static const struct {
        uint32_t id;
        const char *name;
        uint32_t blck, size;
    } want[] = {
        {0, "f32", 1, 4},         {1, "f16", 1, 2},         {2, "q4_0", 32, 18},
        {3, "q4_1", 32, 20},      {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},
        {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},      {10, "q2_k", 256, 84},
        {11, "q3_k", 256, 110},   {12, "q4_k", 256, 144},   {13, "q5_k", 256, 176},
        {14, "q6_k", 256, 210},   {15, "q8_k", 256, 292},   {16, "iq2_xxs", 256, 66},
        {17, "iq2_xs", 256, 74},  {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50},
        {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},  {22, "iq2_s", 256, 82},
        {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},         {25, "i16", 1, 2},
        {26, "i32", 1, 4},        {27, "i64", 1, 8},        {28, "f64", 1, 8},
        {29, "iq1_m", 256, 56},   {30, "bf16", 1, 2},       {34, "tq1_0", 256, 54},
        {35, "tq2_0", 256, 66},   {39, "mxfp4", 32, 17},    {40, "nvfp4", 64, 36},
        {41, "q1_0", 128, 18},    {42, "q2_0", 64, 18},
    };
    size_t known = 0;
    for (uint32_t id = 0; id < 300; id++)
        if (ggml_type_get(id)) known++;
    assert_int_equal(known, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const ggml_type_info *t = ggml_type_get(want[i].id);
        assert_non_null(t);
        assert_string_equal(t->name, want[i].name);
        assert_int_equal(t->blck, want[i].blck);
        assert_int_equal(t->size, want[i].size);
        assert_int_equal(ggml_type_by_name(want[i].name), want[i].id);
    }
    const uint32_t removed[] = {4, 5, 31, 32, 33, 36, 37, 38, 43, 1000, UINT32_MAX};
    for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++)
        assert_null(ggml_type_get(removed[i]));
    assert_int_equal(ggml_type_by_name("Q4_K"), 12);
    assert_int_equal(ggml_type_by_name("F16"), 1);
    assert_int_equal(ggml_type_by_name("BF16"), 30);
    assert_int_equal(ggml_type_by_name("IQ4_NL"), 20);
    assert_int_equal(ggml_type_by_name("q4_2"), -1);
    assert_int_equal(ggml_type_by_name("q4_0_4_4"), -1);
    assert_int_equal(ggml_type_by_name(""), -1);
    assert_int_equal(ggml_type_by_name(NULL), -1);
    assert_int_equal(ggml_type_by_name("f16 "), -1);
}

static void row_bytes(void **state)
{
    (void)state;
    assert_int_equal(ggml_row_bytes(0, 4096), 16384);
    assert_int_equal(ggml_row_bytes(1, 4096), 8192);
    assert_int_equal(ggml_row_bytes(2, 4096), 128 * 18);
    assert_int_equal(ggml_row_bytes(12, 4096), 16 * 144);
    assert_int_equal(ggml_row_bytes(39, 2880), 90 * 17);
    assert_int_equal(ggml_row_bytes(12, 0), 0);
    assert_int_equal(ggml_row_bytes(12, 100), 0);            /* not a whole block */
    assert_int_equal(ggml_row_bytes(4, 4096), 0);            /* removed */
    assert_int_equal(ggml_row_bytes(999, 4096), 0);          /* unknown */
    assert_int_equal(ggml_row_bytes(28, UINT64_MAX / 4), 0); /* overflows */
}

/* ---- well-formed files ---- */

static void v3_and_v2(void **state)
{
    (void)state;
    for (uint32_t v = 2; v <= 3; v++) {
        gsynth s;
        base(&s, v);
        uint64_t a = gs_tensor(&s, "token_embd.weight", 12, 2, 256, 1000, 1, 1);
        uint64_t b = gs_tensor(&s, "output_norm.weight", 0, 1, 256, 1, 1, 1);
        uint64_t c = gs_tensor(&s, "blk.0.attn_q.weight", 8, 3, 256, 8, 2, 1);
        buf img = BUF_INIT;
        gs_finish(&s, &img);
        gguf_file g;
        char err[512];
        assert_int_equal(parse(&g, &img, err), 0);
        assert_int_equal(g.version, v);
        assert_int_equal(g.alignment, 32);
        assert_int_equal(g.nkv, 4);
        assert_int_equal(g.ntensors, 3);
        assert_int_equal(g.data_offset, img.len);
        assert_int_equal(g.split_count, 1);
        assert_false(g.unknown_types);
        assert_int_equal(a, 1000 * 144);
        assert_int_equal(g.tensors[0].nbytes, a);
        assert_int_equal(g.tensors[1].nbytes, b);
        assert_int_equal(g.tensors[1].offset, a);
        assert_int_equal(g.tensors[2].offset, a + 1024);
        assert_int_equal(g.tensors[2].nbytes, c);
        assert_int_equal(g.tensors[2].n_dims, 3);
        assert_int_equal(g.tensors[2].ne[2], 2);
        assert_int_equal(g.tensors[2].ne[3], 1);
        assert_int_equal(g.tensors[1].ne[1], 1);
        assert_ptr_equal(gguf_tensor_find(&g, "output_norm.weight"), &g.tensors[1]);
        assert_null(gguf_tensor_find(&g, "output.weight"));
        int64_t n;
        assert_int_equal(gguf_get_arch_int(&g, "block_count", &n), 0);
        assert_int_equal(n, 4);
        assert_string_equal(gguf_get_str(&g, "general.architecture"), "llama");
        gguf_release(&g);
        gguf_release(&g);
        buf_release(&img);
        gs_release(&s);
    }
}

static void value_types(void **state)
{
    (void)state;
    gsynth s;
    gs_init(&s, 3);
    gs_str(&s, "general.architecture", "x");
    uint8_t u8 = 200;
    int8_t i8 = -100;
    uint16_t u16 = 60000;
    int16_t i16 = -30000;
    int64_t i64 = -5000000000;
    double f64 = 2.5;
    gs_scalar(&s, "u8", 0, &u8, 1);
    gs_scalar(&s, "i8", 1, &i8, 1);
    gs_scalar(&s, "u16", 2, &u16, 2);
    gs_scalar(&s, "i16", 3, &i16, 2);
    gs_u32(&s, "u32", 4000000000u);
    gs_i32(&s, "i32", -2000000000);
    gs_f32(&s, "f32", 0.5f);
    gs_bool(&s, "bool", 1);
    gs_scalar(&s, "bool2", 7, "\x07", 1); /* ggml: any non-zero byte is true */
    gs_str(&s, "str", "hello");
    gs_str(&s, "empty", "");
    gs_u64(&s, "u64", 1234567890123ULL);
    gs_u64(&s, "u64max", UINT64_MAX);
    gs_scalar(&s, "i64", 11, &i64, 8);
    gs_scalar(&s, "f64", 12, &f64, 8);
    buf img = BUF_INIT;
    gs_finish(&s, &img);
    gguf_file g;
    char err[512];
    assert_int_equal(parse(&g, &img, err), 0);
    static const struct {
        const char *key;
        gguf_vtype type;
        int64_t v;
    } ints[] = {
        {"u8", GGUF_T_UINT8, 200},
        {"i8", GGUF_T_INT8, -100},
        {"u16", GGUF_T_UINT16, 60000},
        {"i16", GGUF_T_INT16, -30000},
        {"u32", GGUF_T_UINT32, 4000000000},
        {"i32", GGUF_T_INT32, -2000000000},
        {"bool", GGUF_T_BOOL, 1},
        {"bool2", GGUF_T_BOOL, 1},
        {"u64", GGUF_T_UINT64, 1234567890123},
        {"i64", GGUF_T_INT64, -5000000000},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        int64_t v = 0;
        double d = 0;
        assert_int_equal(gguf_get(&g, ints[i].key)->type, ints[i].type);
        assert_int_equal(gguf_get_int(&g, ints[i].key, &v), 0);
        assert_int_equal(v, ints[i].v);
        assert_int_equal(gguf_get_float(&g, ints[i].key, &d), 0);
        assert_true(d == (double)ints[i].v);
        assert_null(gguf_get_str(&g, ints[i].key));
    }
    int64_t v;
    double d;
    bool b = false;
    assert_int_equal(gguf_get_int(&g, "u64max", &v), -1); /* does not fit an int64 */
    assert_int_equal(gguf_get(&g, "u64max")->u, UINT64_MAX);
    assert_int_equal(gguf_get_int(&g, "f32", &v), -1);
    assert_int_equal(gguf_get_int(&g, "str", &v), -1);
    assert_int_equal(gguf_get_int(&g, "absent", &v), -1);
    assert_int_equal(gguf_get_float(&g, "f32", &d), 0);
    assert_true(d == 0.5);
    assert_int_equal(gguf_get_float(&g, "f64", &d), 0);
    assert_true(d == 2.5);
    assert_int_equal(gguf_get_float(&g, "str", &d), -1);
    assert_int_equal(gguf_get_bool(&g, "bool", &b), 0);
    assert_true(b);
    assert_int_equal(gguf_get_bool(&g, "f32", &b), -1);
    assert_string_equal(gguf_get_str(&g, "str"), "hello");
    assert_int_equal(gguf_get(&g, "str")->len, 5);
    assert_string_equal(gguf_get_str(&g, "empty"), "");
    assert_null(gguf_get_str(&g, "absent"));
    assert_null(gguf_get(&g, "absent"));
    assert_string_equal(gguf_vtype_name(GGUF_T_FLOAT64), "float64");
    assert_string_equal(gguf_vtype_name(GGUF_T_ARRAY), "array");
    assert_string_equal(gguf_vtype_name((gguf_vtype)13), "unknown");
    gguf_release(&g);
    buf_release(&img);
    gs_release(&s);
}

static void arrays(void **state)
{
    (void)state;
    gsynth s;
    gs_init(&s, 3);
    gs_str(&s, "general.architecture", "x");
    uint16_t a16[3] = {1, 2, 65535};
    int16_t s16[2] = {-1, 5};
    float af[2] = {1.5f, -2.0f};
    double ad[2] = {0.25, 1e300};
    uint64_t a64[2] = {7, UINT64_MAX};
    gs_arr(&s, "u16", 2, a16, 3, 2);
    gs_arr(&s, "i16", 3, s16, 2, 2);
    gs_arr(&s, "f32", 6, af, 2, 4);
    gs_arr(&s, "f64", 12, ad, 2, 8);
    gs_arr(&s, "u64", 10, a64, 2, 8);
    gs_arr_bool(&s, "bools", (const uint8_t[]){0, 1, 9}, 3);
    gs_arr_str(&s, "strs", (const char *const[]){"a", "", "ccc"}, 3);
    gs_arr(&s, "empty", 4, a16, 0, 4);
    /* one past what is kept: counted, not stored */
    size_t big = GGUF_MAX_KEPT_ARRAY + 1;
    uint8_t *bytes = xcalloc(big, 1);
    gs_arr(&s, "big", 0, bytes, big, 1);
    gs_arr(&s, "kept", 0, bytes, big - 1, 1);
    free(bytes);
    buf img = BUF_INIT;
    gs_finish(&s, &img);
    gguf_file g;
    char err[512];
    assert_int_equal(parse(&g, &img, err), 0);
    const gguf_kv *kv = gguf_get(&g, "u16");
    assert_int_equal(kv->type, GGUF_T_ARRAY);
    assert_int_equal(kv->arr_type, GGUF_T_UINT16);
    assert_int_equal(kv->arr_n, 3);
    assert_int_equal(kv->arr_i[2], 65535);
    assert_int_equal(gguf_get(&g, "i16")->arr_i[0], -1);
    assert_true(gguf_get(&g, "f32")->arr_f[0] == 1.5);
    assert_true(gguf_get(&g, "f64")->arr_f[1] == 1e300);
    assert_null(gguf_get(&g, "f64")->arr_i);
    assert_int_equal(gguf_get(&g, "u64")->arr_i[0], 7);
    kv = gguf_get(&g, "bools");
    assert_int_equal(kv->arr_i[0], 0);
    assert_int_equal(kv->arr_i[2], 1);
    kv = gguf_get(&g, "strs");
    assert_int_equal(kv->arr_type, GGUF_T_STRING);
    assert_int_equal(kv->arr_n, 3);
    assert_null(kv->arr_i);
    assert_null(kv->arr_f);
    assert_int_equal(gguf_get(&g, "empty")->arr_n, 0);
    kv = gguf_get(&g, "big");
    assert_int_equal(kv->arr_n, big);
    assert_null(kv->arr_i);
    kv = gguf_get(&g, "kept");
    assert_int_equal(kv->arr_n, big - 1);
    assert_non_null(kv->arr_i);
    int64_t v;
    assert_int_equal(gguf_get_int(&g, "u16", &v), -1); /* an array is not a scalar */
    assert_null(gguf_get_str(&g, "strs"));
    gguf_release(&g);
    buf_release(&img);
    gs_release(&s);
}

static void long_string(void **state)
{
    (void)state;
    gsynth s;
    gs_init(&s, 3);
    char *big = xmalloc(GGUF_MAX_KEPT_STRING + 2);
    memset(big, 'x', GGUF_MAX_KEPT_STRING + 1);
    big[GGUF_MAX_KEPT_STRING + 1] = 0;
    gs_str(&s, "too.long", big);
    big[GGUF_MAX_KEPT_STRING] = 0;
    gs_str(&s, "just.kept", big);
    buf img = BUF_INIT;
    gs_finish(&s, &img);
    gguf_file g;
    char err[512];
    assert_int_equal(parse(&g, &img, err), 0);
    assert_null(gguf_get_str(&g, "too.long"));
    assert_int_equal(gguf_get(&g, "too.long")->len, GGUF_MAX_KEPT_STRING + 1);
    assert_string_equal(gguf_get_str(&g, "just.kept"), big);
    gguf_release(&g);
    free(big);
    buf_release(&img);
    gs_release(&s);
}

static void arch_layers(void **state)
{
    (void)state;
    gsynth s;
    base(&s, 3);
    gs_u32(&s, "llama.attention.head_count", 8);
    gs_arr_i32(&s, "llama.attention.head_count_kv", (const int32_t[]){0, 2, 0, 2}, 4);
    gs_arr_i32(&s, "llama.feed_forward_length", (const int32_t[]){1, 2, 3}, 3);
    gs_arr_bool(&s, "llama.attention.sliding_window_pattern", (const uint8_t[]){1, 1, 0, 1}, 4);
    gs_arr(&s, "llama.rope.freqs", 6, (const float[]){1, 2, 3, 4}, 4, 4);
    gs_arr(&s, "llama.big", 10, (const uint64_t[]){1, UINT64_MAX, 1, 1}, 4, 8);
    gs_f32(&s, "llama.rope.freq_base", 10000.0f);
    buf img = BUF_INIT;
    gs_finish(&s, &img);
    gguf_file g;
    char err[512];
    assert_int_equal(parse(&g, &img, err), 0);
    int64_t out[4] = {-9, -9, -9, -9};
    assert_int_equal(gguf_get_arch_layers(&g, "attention.head_count", out, 4), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(out[i], 8);
    assert_int_equal(gguf_get_arch_layers(&g, "attention.head_count_kv", out, 4), 0);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 2);
    assert_int_equal(out[3], 2);
    assert_int_equal(gguf_get_arch_layers(&g, "attention.head_count_kv", out, 3),
                     0); /* longer is fine */
    assert_int_equal(gguf_get_arch_layers(&g, "feed_forward_length", out, 4), -1); /* too short */
    assert_int_equal(gguf_get_arch_layers(&g, "attention.sliding_window_pattern", out, 4), 0);
    assert_int_equal(out[2], 0);
    assert_int_equal(out[3], 1);
    assert_int_equal(gguf_get_arch_layers(&g, "rope.freqs", out, 4), -1); /* floats */
    assert_int_equal(gguf_get_arch_layers(&g, "rope.freq_base", out, 4), -1);
    assert_int_equal(gguf_get_arch_layers(&g, "big", out, 4), -1); /* beyond int64 */
    assert_int_equal(gguf_get_arch_layers(&g, "absent", out, 4), -1);
    double d;
    assert_int_equal(gguf_get_arch_float(&g, "rope.freq_base", &d), 0);
    assert_true(d == 10000.0);
    assert_int_equal(gguf_get_arch_float(&g, "embedding_length", &d), 0);
    assert_true(d == 256.0);
    gguf_release(&g);
    buf_release(&img);
    gs_release(&s);

    /* no architecture: nothing arch-relative resolves */
    gs_init(&s, 3);
    gs_u32(&s, "llama.block_count", 4);
    gs_u32(&s, "general.architecture", 1);
    gs_finish(&s, &img);
    assert_int_equal(parse(&g, &img, err), 0);
    int64_t n;
    assert_int_equal(gguf_get_arch_int(&g, "block_count", &n), -1);
    assert_int_equal(gguf_get_arch_layers(&g, "block_count", out, 1), -1);
    gguf_release(&g);
    buf_release(&img);
    gs_release(&s);
}

static void alignment_and_unknown_types(void **state)
{
    (void)state;
    gsynth s;
    base(&s, 3);
    gs_u32(&s, "general.alignment", 64);
    gs_tensor(&s, "a", 0, 1, 8, 1, 1, 1);
    gs_tensor(&s, "b", 0, 1, 8, 1, 1, 1);
    buf img = BUF_INIT;
    gs_finish(&s, &img);
    gguf_file g;
    char err[512];
    assert_int_equal(parse(&g, &img, err), 0);
    assert_int_equal(g.alignment, 64);
    assert_int_equal(g.tensors[1].offset, 64);
    assert_int_equal(g.data_offset % 64, 0);
    gguf_release(&g);
    gs_release(&s);

    /* a removed type and one newer than the table parse, flagged, size 0 */
    base(&s, 3);
    int64_t ne[2] = {64, 2};
    gs_tensor(&s, "a", 0, 1, 8, 1, 1, 1);
    gs_tensor_raw(&s, "removed", 4, 2, ne, 32);
    gs_tensor_raw(&s, "future", 43, 2, ne, 4096);
    gs_tensor_raw(&s, "after", 0, 2, ne, 8192);
    gs_tensor_raw(&s, "next", 0, 2, ne, 8192 + 512);
    gs_finish(&s, &img);
    assert_int_equal(parse(&g, &img, err), 0);
    assert_true(g.unknown_types);
    assert_int_equal(g.tensors[1].nbytes, 0);
    assert_int_equal(g.tensors[2].type, 43);
    assert_int_equal(g.tensors[3].nbytes, 512);
    gguf_release(&g);
    gs_release(&s);

    /* after an unknown size, order and alignment are still checked */
    base(&s, 3);
    gs_tensor_raw(&s, "u", 4, 2, ne, 0);
    gs_tensor_raw(&s, "v", 0, 2, ne, 48);
    gs_finish(&s, &img);
    refuse(&img, "tensor 1 'v' has offset 48 at byte");
    gs_release(&s);
    buf_release(&img);
}

/* ---- refusals ---- */

static void versions(void **state)
{
    (void)state;
    static const struct {
        uint32_t v;
        const char *err;
    } cases[] = {
        {0, "bad GGUF version 0"},
        {1, "GGUF version 1 is not supported (only 2 and 3 are)"},
        {4, "GGUF version 4 is newer than the supported version 3"},
        {0x03000000, "big-endian GGUF is not supported"},
        {0x00020000, "big-endian GGUF is not supported"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gsynth s;
        base(&s, cases[i].v);
        buf img = BUF_INIT;
        gs_finish(&s, &img);
        refuse(&img, cases[i].err);
        buf_release(&img);
        gs_release(&s);
    }
    buf img = BUF_INIT;
    buf_add(&img, "GGML\3\0\0\0", 8);
    refuse(&img, "not a GGUF file: the magic is 'GGML', expected 'GGUF'");
    buf_clear(&img);
    buf_add(&img,
            "\x7f"
            "EL\0",
            4);
    refuse(&img, "the magic is '\\x7fEL\\x00'");
    buf_release(&img);
    gguf_file g;
    char err[512];
    assert_int_equal(gguf_parse_buffer(&g, NULL, 0, err, sizeof err), -1);
    assert_string_equal(err, "truncated at byte 0 reading the magic");
}

typedef void (*build_fn)(gsynth *s);

static void h_dup_key(gsynth *s)
{
    gs_u32(s, "llama.block_count", 5);
}
static void h_empty_key(gsynth *s)
{
    gs_str(s, "", "x");
}
static void h_nul_key(gsynth *s)
{
    gs_key(s, "ab", 4); /* rewrite "ab" as "a\0" */
    s->kvs.p[s->kvs.len - 4 - 1] = 0;
    gs_u32raw(&s->kvs, 1);
}
static void h_bad_type(gsynth *s)
{
    gs_raw_kv(s, "bad", 13, "\0\0\0\0", 4);
}
static void h_bad_elem(gsynth *s)
{
    gs_raw_kv(s, "bad", 9, "\x0d\0\0\0\0\0\0\0\0\0\0\0", 12);
}
static void h_nested(gsynth *s)
{
    gs_raw_kv(s, "nested", 9, "\x09\0\0\0\1\0\0\0\0\0\0\0\4\0\0\0\0\0\0\0\0\0\0\0", 24);
}
static void h_huge_arr(gsynth *s)
{
    gs_raw_kv(s, "huge", 9, "\4\0\0\0\0\0\0\0\0\0\0\x10", 12);
}
static void h_arr_cap(gsynth *s)
{
    gs_raw_kv(s, "cap", 9, "\0\0\0\0\1\0\0\x40\0\0\0\0", 12);
}
static void h_arr_short(gsynth *s)
{
    gs_raw_kv(s, "short", 9, "\x0a\0\0\0\0\0\0\x20\0\0\0\0", 12);
}
static void h_strarr_short(gsynth *s)
{
    gs_raw_kv(s, "tokens", 9, "\x08\0\0\0\0\0\0\x20\0\0\0\0", 12);
}
static void h_huge_str(gsynth *s)
{
    gs_raw_kv(s, "huge", 8, "\xff\xff\xff\xff\xff\xff\xff\x0f", 8);
}
static void h_str_cap(gsynth *s)
{
    gs_raw_kv(s, "cap", 8, "\1\0\0\x40\0\0\0\0", 8);
}
static void h_long_key(gsynth *s)
{
    char *k = xmalloc(GGUF_MAX_KEPT_STRING + 2);
    memset(k, 'k', GGUF_MAX_KEPT_STRING + 1);
    k[GGUF_MAX_KEPT_STRING + 1] = 0;
    gs_u32(s, k, 1);
    free(k);
}
static void h_align_npot(gsynth *s)
{
    gs_scalar(s, "general.alignment", 4, (const uint32_t[]){48}, 4);
}
static void h_align_zero(gsynth *s)
{
    gs_scalar(s, "general.alignment", 4, (const uint32_t[]){0}, 4);
}
static void h_align_huge(gsynth *s)
{
    gs_scalar(s, "general.alignment", 4, (const uint32_t[]){1u << 31}, 4);
}
static void h_align_type(gsynth *s)
{
    gs_u64(s, "general.alignment", 32);
}
static void h_split_type(gsynth *s)
{
    gs_str(s, "split.count", "2");
}
static void h_split_big(gsynth *s)
{
    gs_u32(s, "split.count", 70000);
}
static void h_dup_tensor(gsynth *s)
{
    gs_tensor(s, "w", 0, 1, 8, 1, 1, 1);
    gs_tensor(s, "w", 0, 1, 8, 1, 1, 1);
}
static void h_long_name(gsynth *s)
{
    gs_tensor(s, "0123456789012345678901234567890123456789012345678901234567890123", 0, 1, 8, 1, 1,
              1);
}
static void h_nul_name(gsynth *s)
{
    gs_tensor(s, "ab", 0, 1, 8, 1, 1, 1), s->tensors.p[9] = 0;
}
static void h_dims5(gsynth *s)
{
    gs_tensor_raw(s, "w", 0, 5, (const int64_t[]){1, 1, 1, 1, 1}, 0);
}
static void h_neg_dim(gsynth *s)
{
    gs_tensor_raw(s, "w", 0, 2, (const int64_t[]){8, -3}, 0);
}
static void h_ovf_dim(gsynth *s)
{
    gs_tensor_raw(s, "w", 0, 3, (const int64_t[]){1 << 20, 1 << 20, 1 << 30}, 0);
}
static void h_ovf_bytes(gsynth *s)
{
    gs_tensor_raw(s, "w", 28, 2, (const int64_t[]){INT64_C(1) << 31, INT64_C(1) << 31}, 0);
}
static void h_block(gsynth *s)
{
    gs_tensor_raw(s, "w", 2, 2, (const int64_t[]){48, 2}, 0);
}
static void h_neg_type(gsynth *s)
{
    gs_tensor_raw(s, "w", 0x80000000u, 2, (const int64_t[]){8, 2}, 0);
}
static void h_offset_gap(gsynth *s)
{
    gs_tensor(s, "a", 0, 1, 8, 1, 1, 1);
    gs_tensor_raw(s, "b", 0, 1, (const int64_t[]){8}, 64);
}
static void h_offset_first(gsynth *s)
{
    gs_tensor_raw(s, "a", 0, 1, (const int64_t[]){8}, 32);
}
static void h_offset_end(gsynth *s)
{
    gs_tensor_raw(s, "a", 0, 1, (const int64_t[]){8}, 0);
    gs_tensor_raw(s, "b", 4, 1, (const int64_t[]){8}, 32);
    gs_tensor_raw(s, "c", 0, 1, (const int64_t[]){INT64_C(1) << 61}, UINT64_MAX - 31);
}

static void hostile(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        build_fn fn;
        const char *err;
    } cases[] = {
        {"duplicate key", h_dup_key,
         "duplicate key 'llama.block_count' at byte 176 (keys 1 and 4)"},
        {"empty key", h_empty_key, "key 4 is empty at byte 176"},
        {"NUL in key", h_nul_key, "key 4 at byte 176 contains a NUL byte"},
        {"value type 13", h_bad_type, "key 4 'bad' has invalid value type 13 at byte 187"},
        {"element type 13", h_bad_elem,
         "key 4 'bad' has invalid array element type 13 at byte 191"},
        {"nested array", h_nested, "key 4 'nested' is a nested array at byte 194"},
        {"array count 2^60", h_huge_arr,
         "has 1152921504606846976 array elements at byte 196, the limit is 1073741824"},
        {"array count 2^30+1", h_arr_cap, "has 1073741825 array elements"},
        {"array beyond the file", h_arr_short,
         "truncated at byte 224 reading key 4 'short' element 2"},
        {"string array beyond the file", h_strarr_short,
         "truncated at byte 224 reading key 4 'tokens' element 2"},
        {"string length 2^60", h_huge_str,
         "key 4 'huge' value: string length 1152921504606846975 at byte 192 exceeds"},
        {"string length 2^30+1", h_str_cap,
         "string length 1073741825 at byte 191 exceeds the limit of 1073741824"},
        {"key of 64 KiB + 1", h_long_key,
         "key 4 at byte 176 is 65537 bytes long, the limit is 65536"},
        {"alignment 48", h_align_npot, "general.alignment 48 is not a power of two"},
        {"alignment 0", h_align_zero, "general.alignment 0 is not a power of two"},
        {"alignment 2^31", h_align_huge,
         "general.alignment 2147483648 exceeds the limit of 1048576"},
        {"alignment uint64", h_align_type, "general.alignment is a uint64, ggml requires a uint32"},
        {"split.count string", h_split_type, "split.count must be an integer from 0 to 65535"},
        {"split.count 70000", h_split_big, "split.count must be an integer from 0 to 65535"},
        {"duplicate tensor", h_dup_tensor, "duplicate tensor name 'w' at byte"},
        {"64-byte name", h_long_name,
         "tensor 0 name at byte 176 is 64 bytes long, the limit is 63"},
        {"NUL in a name", h_nul_name, "tensor 0 name at byte 176 contains a NUL byte"},
        {"5 dims", h_dims5, "tensor 0 'w' has 5 dimensions at byte 185, the limit is 4"},
        {"negative dim", h_neg_dim, "tensor 0 'w' dimension 1 is negative (-3) at byte 197"},
        {"element overflow", h_ovf_dim,
         "tensor 0 'w' with shape (1048576, 1048576, 1073741824, 1) has more elements"},
        {"byte overflow", h_ovf_bytes, "tensor 0 'w' has more bytes than 64 bits hold"},
        {"block size", h_block,
         "tensor 0 'w' of type q4_0 has 48 elements per row, not a multiple of the block size 32"},
        {"negative type", h_neg_type, "tensor 0 'w' has invalid ggml type 2147483648 at byte"},
        {"offset gap", h_offset_gap, "tensor 1 'b' has offset 64 at byte"},
        {"first offset", h_offset_first, "tensor 0 'a' has offset 32 at byte 201, expected 0"},
        {"end beyond 2^64", h_offset_end, "tensor 2 'c' ends beyond 2^64 bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gsynth s;
        base(&s, 3); /* 4 keys: the fifth key or first tensor starts at byte 176 */
        cases[i].fn(&s);
        buf img = BUF_INIT;
        gs_finish_counts(&s, &img, s.ntensors, s.nkv, 1);
        gguf_file g;
        char err[512] = "";
        int rc = parse(&g, &img, err);
        if (rc == 0 || !strstr(err, cases[i].err))
            fail_msg("%s: expected \"%s\", got rc %d \"%s\"", cases[i].name, cases[i].err, rc, err);
        gguf_release(&g);
        buf_release(&img);
        gs_release(&s);
    }
}

/* Counts the file does not back must fail on the bytes present, fast and
 * without allocating for the count. */
static void huge_counts(void **state)
{
    (void)state;
    gsynth s;
    base(&s, 3);
    buf img = BUF_INIT;
    gs_finish_counts(&s, &img, 0, UINT64_C(1) << 60, 0);
    refuse(&img, "truncated at byte 176 reading key 4 name");
    gs_tensor(&s, "a", 0, 1, 8, 1, 1, 1);
    gs_finish_counts(&s, &img, UINT64_C(1) << 60, 4, 0);
    refuse(&img, "truncated at byte 209 reading tensor 1 name");
    gs_finish_counts(&s, &img, (uint64_t)INT64_MAX + 1, 4, 0);
    refuse(&img, "tensor count 9223372036854775808 at byte 8 is negative as an int64");
    gs_finish_counts(&s, &img, 1, UINT64_MAX, 0);
    refuse(&img, "key count 18446744073709551615 at byte 16 is negative as an int64");
    /* the padding before the data section must be there (ggml seeks over it) */
    gs_finish_counts(&s, &img, 1, 4, 0);
    refuse(&img, "truncated at byte 209 reading the padding before the data section");
    buf_release(&img);
    gs_release(&s);
}

/* a header with every kind of record, cut at every byte */
static void build_rich(buf *img)
{
    gsynth s;
    base(&s, 3);
    gs_u32(&s, "general.alignment", 64);
    gs_arr_str(&s, "tokenizer.ggml.tokens", (const char *const[]){"<s>", "</s>", "hello", ""}, 4);
    gs_arr(&s, "tokenizer.ggml.scores", 6, (const float[]){0, 1, 2, 3}, 4, 4);
    gs_arr_bool(&s, "swa", (const uint8_t[]){1, 0}, 2);
    gs_f32(&s, "eps", 1e-5f);
    gs_bool(&s, "b", 1);
    gs_tensor(&s, "token_embd.weight", 12, 2, 256, 4, 1, 1);
    gs_tensor(&s, "blk.0.attn_q.weight", 1, 4, 8, 2, 3, 4);
    gs_tensor(&s, "output_norm.weight", 0, 1, 256, 1, 1, 1);
    gs_finish(&s, img);
    gs_release(&s);
}

static void truncated_everywhere(void **state)
{
    (void)state;
    buf img = BUF_INIT;
    build_rich(&img);
    gguf_file g;
    char err[512], want[64];
    assert_int_equal(parse(&g, &img, err), 0);
    gguf_release(&g);
    for (size_t n = 0; n < img.len; n++) {
        snprintf(want, sizeof want, "truncated at byte %zu reading ", n);
        err[0] = 0;
        if (gguf_parse_buffer(&g, img.p, n, err, sizeof err) != -1 ||
            strncmp(err, want, strlen(want)))
            fail_msg("cut at %zu: \"%s\"", n, err);
    }
    /* the same through gguf_open: one file, cut shorter each time */
    char *p = write_file("cut.gguf", &img, 0);
    size_t plen = strlen(p) + 4;
    for (size_t n = img.len; n-- > 0;) {
        assert_int_equal(truncate(p, (off_t)n), 0);
        snprintf(want, sizeof want, "truncated at byte %zu reading ", n);
        if (gguf_open(&g, p, err, sizeof err) != -1 || strncmp(err + plen, want, strlen(want)))
            fail_msg("file cut at %zu: \"%s\"", n, err);
    }
    unlink(p);
    free(p);
    buf_release(&img);
}

/* gguf_open checks that the data is all there; gguf_parse_buffer cannot */
static void data_extent(void **state)
{
    (void)state;
    gsynth s;
    base(&s, 3);
    uint64_t a = gs_tensor(&s, "a", 0, 2, 64, 64, 1, 1);
    uint64_t b = gs_tensor(&s, "b", 1, 1, 100, 1, 1, 1);
    buf img = BUF_INIT;
    gs_finish(&s, &img);
    uint64_t full = img.len + 16384 + b;
    assert_int_equal(a, 16384);
    char *p = write_file("extent.gguf", &img, 16384 + b);
    gguf_file g;
    char err[512], want[256];
    assert_int_equal(gguf_open(&g, p, err, sizeof err), 0);
    assert_int_equal(g.file_bytes, full);
    assert_string_equal(g.path, p);
    gguf_release(&g);
    assert_int_equal(truncate(p, (off_t)(full - 1)), 0);
    snprintf(want, sizeof want,
             "'%s': truncated: tensor 'b' ends at byte %" PRIu64 ", the file has %" PRIu64, p, full,
             full - 1);
    assert_int_equal(gguf_open(&g, p, err, sizeof err), -1);
    assert_string_equal(err, want);
    assert_int_equal(truncate(p, (off_t)img.len), 0); /* the header alone */
    assert_int_equal(gguf_open(&g, p, err, sizeof err), -1);
    assert_non_null(strstr(err, "truncated: tensor 'b' ends at byte"));
    assert_int_equal(parse(&g, &img, err), 0); /* the buffer parser accepts it */
    gguf_release(&g);
    unlink(p);
    free(p);

    char *missing = tmp_path("missing.gguf");
    assert_int_equal(gguf_open(&g, missing, err, sizeof err), -1);
    snprintf(want, sizeof want, "'%s': cannot open: No such file or directory", missing);
    assert_string_equal(err, want);
    free(missing);
    assert_int_equal(gguf_open(&g, tmpdir, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a regular file"));
    buf_release(&img);
    gs_release(&s);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A 100 GB model is a sparse file here: inspecting it must read the header
 * and nothing else, and take milliseconds. */
static void sparse_100gb(void **state)
{
    (void)state;
    gsynth s;
    base(&s, 3);
    gs_str(&s, "tokenizer.chat_template", "{% for m in messages %}{{ m.content }}{% endfor %}");
    uint64_t total = 0;
    char name[64];
    for (int l = 0; l < 48; l++) { /* q4_k 65536 x 65536: 2.25 GiB a layer */
        snprintf(name, sizeof name, "blk.%d.ffn_up.weight", l);
        total += gs_align(gs_tensor(&s, name, 12, 2, 65536, 65536, 1, 1), 32);
    }
    buf img = BUF_INIT;
    gs_finish(&s, &img);
    assert_true(total > UINT64_C(100) << 30);
    char *p = write_file("sparse-100g.gguf", &img, total);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    if ((uint64_t)st.st_size != img.len + total) skip(); /* no sparse files here */
    gguf_file g;
    char err[512];
    double t0 = now();
    assert_int_equal(gguf_open(&g, p, err, sizeof err), 0);
    double ms = (now() - t0) * 1e3;
    assert_int_equal(g.ntensors, 48);
    assert_int_equal(g.file_bytes, img.len + total);
    assert_int_equal(g.data_offset, img.len);
    assert_true(img.len < 4096);
    assert_int_equal(g.header_bytes_read, 4096); /* one read of the smallest window */
    const char *scale = getenv("GPUMOD_TEST_TIME_SCALE");
    /* one 4 KiB read (asserted above) is what proves it never scans the
     * data; reading 100 GB of holes takes far longer than this bound,
     * which only proves it did not hang */
    double limit = 5000.0 * (scale && atoi(scale) > 0 ? atoi(scale) : 1);
    if (ms > limit)
        fail_msg("gguf_open took %.1f ms on a sparse 100 GB file (limit %.0f ms)", ms, limit);
    gguf_release(&g);
    unlink(p);
    free(p);
    buf_release(&img);
    gs_release(&s);
}

/* what is not kept is skipped by seeking, not read */
static void skips_without_reading(void **state)
{
    (void)state;
    gsynth s;
    base(&s, 3);
    size_t big = 8 << 20;
    char *tmpl = xmalloc(big + 1);
    memset(tmpl, 'x', big);
    tmpl[big] = 0;
    gs_str(&s, "tokenizer.huggingface.json", tmpl);
    free(tmpl);
    size_t nbig = 4 << 20;
    uint8_t *z = xcalloc(nbig, 4);
    gs_arr(&s, "tokenizer.ggml.scores", 6, z, nbig, 4);
    free(z);
    gs_u32(&s, "after", 7);
    buf img = BUF_INIT;
    gs_finish(&s, &img);
    char *p = write_file("skip.gguf", &img, 0);
    gguf_file g;
    char err[512];
    assert_int_equal(gguf_open(&g, p, err, sizeof err), 0);
    assert_true(img.len > (24 << 20));
    if (g.header_bytes_read > 256 * 1024)
        fail_msg("read %" PRIu64 " of %zu header bytes", g.header_bytes_read, img.len);
    assert_int_equal(gguf_get(&g, "tokenizer.huggingface.json")->len, big);
    assert_int_equal(gguf_get(&g, "tokenizer.ggml.scores")->arr_n, nbig);
    int64_t v;
    assert_int_equal(gguf_get_int(&g, "after", &v), 0);
    assert_int_equal(v, 7);
    gguf_release(&g);
    unlink(p);
    free(p);
    buf_release(&img);
    gs_release(&s);
}

/* ---- split models ---- */

static char *write_shard(const char *prefix, int no, int count, const char *tensor, int64_t ne0,
                         int bad_no, uint64_t *bytes)
{
    gsynth s;
    if (no == 0) {
        base(&s, 3);
    } else {
        gs_init(&s, 3);
    }
    gs_scalar(&s, "split.no", 2, (const uint16_t[]){(uint16_t)(bad_no >= 0 ? bad_no : no)}, 2);
    gs_scalar(&s, "split.count", 2, (const uint16_t[]){(uint16_t)count}, 2);
    if (no == 0) gs_scalar(&s, "split.tensors.count", 5, (const int32_t[]){count * 2}, 4);
    char name[64];
    snprintf(name, sizeof name, "%s.a", tensor);
    uint64_t n = gs_align(gs_tensor(&s, name, 0, 1, ne0, 1, 1, 1), 32);
    snprintf(name, sizeof name, "%s.b", tensor);
    n += gs_tensor(&s, name, 1, 2, ne0, 2, 1, 1);
    buf img = BUF_INIT;
    gs_finish(&s, &img);
    snprintf(name, sizeof name, "%s-%05d-of-%05d.gguf", prefix, no + 1, count);
    char *p = write_file(name, &img, n);
    *bytes = img.len + n;
    buf_release(&img);
    gs_release(&s);
    return p;
}

static void split_model(void **state)
{
    (void)state;
    uint64_t b0, b1, b2;
    char *p0 = write_shard("m", 0, 3, "t0", 64, -1, &b0);
    char *p1 = write_shard("m", 1, 3, "t1", 128, -1, &b1);
    char *p2 = write_shard("m", 2, 3, "t2", 32, -1, &b2);
    gguf_file g;
    char err[512], want[512];
    if (gguf_open(&g, p0, err, sizeof err) < 0) fail_msg("%s", err);
    assert_int_equal(g.split_count, 3);
    assert_int_equal(g.ntensors, 6);
    assert_int_equal(g.file_bytes, b0 + b1 + b2);
    assert_string_equal(g.tensors[2].name, "t1.a");
    assert_int_equal(g.tensors[2].shard, 1);
    assert_int_equal(g.tensors[2].offset, 0);
    assert_int_equal(g.tensors[5].shard, 2);
    assert_int_equal(g.tensors[5].nbytes, 128);
    assert_int_equal(g.tensors[0].shard, 0);
    assert_string_equal(g.path, p0);
    int64_t n;
    assert_int_equal(gguf_get_arch_int(&g, "block_count", &n),
                     0); /* metadata from the first shard */
    gguf_release(&g);

    /* opened at the second shard */
    assert_int_equal(gguf_open(&g, p1, err, sizeof err), -1);
    snprintf(want, sizeof want, "'%s': this is shard 2 of 3; open the first shard '%s'", p1, p0);
    assert_string_equal(err, want);

    /* a shard missing */
    char *gone = tmp_path("gone.gguf");
    assert_int_equal(rename(p2, gone), 0);
    assert_int_equal(gguf_open(&g, p0, err, sizeof err), -1);
    snprintf(want, sizeof want, "'%s': cannot open shard 3 of 3: No such file or directory", p2);
    assert_string_equal(err, want);
    assert_int_equal(rename(gone, p2), 0);
    free(gone);

    /* a shard that says it is another one */
    free(p1);
    p1 = write_shard("m", 1, 3, "t1", 128, 2, &b1);
    assert_int_equal(gguf_open(&g, p0, err, sizeof err), -1);
    snprintf(want, sizeof want,
             "'%s': shard 2 of 3 has split.no 2 and split.count 3, expected 1 and 3", p1);
    assert_string_equal(err, want);

    /* the same tensor in two shards */
    free(p1);
    p1 = write_shard("m", 1, 3, "t2", 32, -1, &b1);
    assert_int_equal(gguf_open(&g, p0, err, sizeof err), -1);
    snprintf(want, sizeof want, "'%s': tensor 't2.a' is in shard 2 and shard 3", p0);
    assert_string_equal(err, want);

    /* a truncated shard is named */
    free(p1);
    p1 = write_shard("m", 1, 3, "t1", 128, -1, &b1);
    assert_int_equal(truncate(p1, (off_t)(b1 - 1)), 0);
    assert_int_equal(gguf_open(&g, p0, err, sizeof err), -1);
    snprintf(want, sizeof want, "'%s': truncated: tensor 't1.b' ends at byte", p1);
    assert_non_null(strstr(err, want));

    /* two shards */
    unlink(p0);
    unlink(p1);
    unlink(p2);
    free(p0);
    free(p1);
    free(p2);
    p0 = write_shard("n", 0, 2, "t0", 64, -1, &b0);
    p1 = write_shard("n", 1, 2, "t1", 64, -1, &b1);
    assert_int_equal(gguf_open(&g, p0, err, sizeof err), 0);
    assert_int_equal(g.ntensors, 4);
    gguf_release(&g);

    /* a split model whose name does not follow the pattern */
    char *odd = tmp_path("renamed.gguf");
    assert_int_equal(rename(p0, odd), 0);
    assert_int_equal(gguf_open(&g, odd, err, sizeof err), -1);
    snprintf(want, sizeof want,
             "'%s': a split model (split.count 2) whose name does not end in "
             "'-00001-of-00002.gguf': cannot find its "
             "other shards",
             odd);
    assert_string_equal(err, want);
    unlink(odd);
    unlink(p1);
    free(odd);
    free(p0);
    free(p1);
}

static void split_tensor_count(void **state)
{
    (void)state;
    uint64_t b;
    gsynth s;
    base(&s, 3);
    gs_scalar(&s, "split.no", 2, (const uint16_t[]){0}, 2);
    gs_scalar(&s, "split.count", 2, (const uint16_t[]){2}, 2);
    gs_u32(&s, "split.tensors.count", 5);
    uint64_t n = gs_tensor(&s, "x", 0, 1, 8, 1, 1, 1);
    buf img = BUF_INIT;
    gs_finish(&s, &img);
    char *p0 = write_file("c-00001-of-00002.gguf", &img, n);
    char *p1 = write_shard("c", 1, 2, "t1", 64, -1, &b);
    gguf_file g;
    char err[512], want[512];
    assert_int_equal(gguf_open(&g, p0, err, sizeof err), -1);
    snprintf(want, sizeof want, "'%s': split.tensors.count is 5 but the 2 shards hold 3 tensors",
             p0);
    assert_string_equal(err, want);
    unlink(p0);
    unlink(p1);
    free(p0);
    free(p1);
    buf_release(&img);
    gs_release(&s);
}

/* ---- the real models ---- */

static char *model_path(const char *name)
{
    const char *src = getenv("GPUMOD_SRC");
    return xasprintf("%s/tests/fixtures/models/%s", src ? src : ".", name);
}

static void check_real(const char *file, uint32_t type, int64_t layers, int64_t ctx, int64_t embd,
                       size_t ntensors, uint64_t vocab)
{
    char *p = model_path(file);
    gguf_file g;
    char err[512];
    if (gguf_open(&g, p, err, sizeof err) < 0)
        fail_msg("%s (GPUMOD_SRC=%s)", err, getenv("GPUMOD_SRC"));
    assert_int_equal(g.version, 3);
    assert_string_equal(gguf_get_str(&g, "general.architecture"), "llama");
    int64_t v;
    assert_int_equal(gguf_get_arch_int(&g, "block_count", &v), 0);
    assert_int_equal(v, layers);
    assert_int_equal(gguf_get_arch_int(&g, "context_length", &v), 0);
    assert_int_equal(v, ctx);
    assert_int_equal(gguf_get_arch_int(&g, "embedding_length", &v), 0);
    assert_int_equal(v, embd);
    assert_int_equal(g.ntensors, ntensors);
    assert_false(g.unknown_types);
    int64_t *heads = xcalloc((size_t)layers, sizeof *heads);
    assert_int_equal(gguf_get_arch_layers(&g, "attention.head_count_kv", heads, (size_t)layers), 0);
    assert_true(heads[0] > 0);
    free(heads);
    /* the tensor table accounts for the whole data section */
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(g.file_bytes, (uint64_t)st.st_size);
    uint64_t sum = 0, data = g.file_bytes - g.data_offset;
    const gguf_tensor *last = &g.tensors[0];
    for (size_t i = 0; i < g.ntensors; i++) {
        assert_int_equal(g.tensors[i].type,
                         g.tensors[i].n_dims >= 2 ? type : 0); /* norms stay f32 */
        assert_int_equal(g.tensors[i].shard, 0);
        sum += g.tensors[i].nbytes;
        if (g.tensors[i].offset > last->offset) last = &g.tensors[i];
    }
    assert_int_equal(last->offset + last->nbytes, data);
    assert_true(sum <= data && data - sum < g.ntensors * g.alignment);
    /* the vocabulary is counted, not stored */
    const gguf_kv *tok = gguf_get(&g, "tokenizer.ggml.tokens");
    assert_non_null(tok);
    assert_int_equal(tok->type, GGUF_T_ARRAY);
    assert_int_equal(tok->arr_type, GGUF_T_STRING);
    assert_int_equal(tok->arr_n, vocab);
    assert_null(tok->arr_i);
    assert_null(tok->arr_f);
    assert_int_equal(gguf_get(&g, "tokenizer.ggml.scores")->arr_n, vocab);
    assert_true(g.header_bytes_read >= g.data_offset - g.alignment);
    assert_true(g.header_bytes_read < g.data_offset + 65536);
    gguf_release(&g);
    free(p);
}

static void real_models(void **state)
{
    (void)state;
    check_real("aidreams260K-f32.gguf", 0, 4, 128, 64, 39, 512);
    check_real("llama-2-tiny-random.gguf", 1, 1, 4096, 8, 12, 32000);
    char *p = model_path("aidreams260K-f32.gguf");
    gguf_file g;
    char err[512];
    assert_int_equal(gguf_open(&g, p, err, sizeof err), 0);
    const gguf_tensor *t = gguf_tensor_find(&g, "token_embd.weight");
    assert_non_null(t);
    assert_int_equal(t->ne[0], 64);
    assert_int_equal(t->ne[1], 512);
    assert_int_equal(t->nbytes, 64 * 512 * 4);
    int64_t ff;
    assert_int_equal(gguf_get_arch_int(&g, "feed_forward_length", &ff), 0);
    assert_int_equal(ff, 172);
    gguf_release(&g);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(type_table),
        cmocka_unit_test(row_bytes),
        cmocka_unit_test(v3_and_v2),
        cmocka_unit_test(value_types),
        cmocka_unit_test(arrays),
        cmocka_unit_test(long_string),
        cmocka_unit_test(arch_layers),
        cmocka_unit_test(alignment_and_unknown_types),
        cmocka_unit_test(versions),
        cmocka_unit_test(hostile),
        cmocka_unit_test(huge_counts),
        cmocka_unit_test(truncated_everywhere),
        cmocka_unit_test(data_extent),
        cmocka_unit_test(sparse_100gb),
        cmocka_unit_test(skips_without_reading),
        cmocka_unit_test(split_model),
        cmocka_unit_test(split_tensor_count),
        cmocka_unit_test(real_models),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
