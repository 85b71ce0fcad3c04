/* gen_corpus.c - writes the fuzzer's seed corpus (tests/fuzz/corpus/gguf):
 * synthetic headers made with tests/unit/gguf_synth.h, one per feature and
 * one per rule the parser enforces, plus the header regions of real models
 * cut at their data offset (gguf_parse_buffer does not check the data
 * extent, so they parse).
 *
 *   gen_corpus DIR [MODEL.gguf...]
 *
 * Names carry the expectation that replay.c checks: "valid-*" must parse,
 * "invalid-*" must be refused; what the fuzzer adds (hash names) only has
 * to not crash.  Seeds stay small (a few KB): libFuzzer mutates faster. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_synth.h"
#include "model/gguf.h"

static const char *dir;
static int failed;

static void save(const char *name, const buf *img)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(img->p, 1, img->len, f) != img->len || fclose(f)) {
        fprintf(stderr, "gen_corpus: cannot write '%s'\n", path);
        failed = 1;
    }
}

/* a small llama-like model: the shape every estimator test starts from */
static void base(gsynth *s, uint32_t version)
{
    gs_init(s, version);
    gs_str(s, "general.architecture", "llama");
    gs_str(s, "general.name", "seed");
    gs_u32(s, "llama.block_count", 2);
    gs_u32(s, "llama.context_length", 4096);
    gs_u32(s, "llama.embedding_length", 64);
    gs_u32(s, "llama.attention.head_count", 4);
    gs_u32(s, "llama.attention.head_count_kv", 2);
    gs_f32(s, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
}

static void tensors(gsynth *s)
{
    gs_tensor(s, "token_embd.weight", 8, 2, 64, 32, 1, 1);
    gs_tensor(s, "blk.0.attn_q.weight", 1, 2, 64, 64, 1, 1);
    gs_tensor(s, "blk.1.ffn_up.weight", 12, 2, 256, 4, 1, 1);
    gs_tensor(s, "output_norm.weight", 0, 1, 64, 1, 1, 1);
}

static void emit(const char *name, gsynth *s)
{
    buf img = BUF_INIT;
    gs_finish(s, &img);
    save(name, &img);
    buf_release(&img);
    gs_release(s);
}

static void emit_counts(const char *name, gsynth *s, uint64_t nt, uint64_t nk)
{
    buf img = BUF_INIT;
    gs_finish_counts(s, &img, nt, nk, 1);
    save(name, &img);
    buf_release(&img);
    gs_release(s);
}

static void valid(void)
{
    gsynth s;
    base(&s, 3);
    tensors(&s);
    emit("valid-llama-v3", &s);

    base(&s, 2);
    tensors(&s);
    emit("valid-llama-v2", &s);

    gs_init(&s, 3);
    emit("valid-empty", &s);

    /* every value type, scalar and array */
    gs_init(&s, 3);
    gs_str(&s, "general.architecture", "test");
    uint8_t u8 = 200;
    int8_t i8 = -100;
    uint16_t u16 = 60000;
    int16_t i16 = -30000;
    int64_t i64 = -5000000000;
    double f64 = 2.5;
    gs_scalar(&s, "t.u8", 0, &u8, 1);
    gs_scalar(&s, "t.i8", 1, &i8, 1);
    gs_scalar(&s, "t.u16", 2, &u16, 2);
    gs_scalar(&s, "t.i16", 3, &i16, 2);
    gs_u32(&s, "t.u32", 4000000000u);
    gs_i32(&s, "t.i32", -2000000000);
    gs_f32(&s, "t.f32", 0.5f);
    gs_bool(&s, "t.bool", 1);
    gs_str(&s, "t.str", "hello");
    gs_u64(&s, "t.u64", UINT64_MAX);
    gs_scalar(&s, "t.i64", 11, &i64, 8);
    gs_scalar(&s, "t.f64", 12, &f64, 8);
    uint8_t a8[4] = {1, 2, 3, 255};
    uint16_t a16[3] = {1, 2, 65535};
    int32_t a32[3] = {0, -1, 7};
    float af[2] = {1.5f, -2.0f};
    uint64_t a64[2] = {1, UINT64_MAX};
    double ad[2] = {0.25, 1e300};
    gs_arr(&s, "t.arr_u8", 0, a8, 4, 1);
    gs_arr(&s, "t.arr_i8", 1, a8, 4, 1);
    gs_arr(&s, "t.arr_u16", 2, a16, 3, 2);
    gs_arr(&s, "t.arr_i16", 3, a16, 3, 2);
    gs_arr(&s, "t.arr_u32", 4, a32, 3, 4);
    gs_arr_i32(&s, "t.arr_i32", a32, 3);
    gs_arr(&s, "t.arr_f32", 6, af, 2, 4);
    gs_arr_bool(&s, "t.arr_bool", a8, 4);
    gs_arr_str(&s, "t.arr_str", (const char *const[]){"a", "", "ccc"}, 3);
    gs_arr(&s, "t.arr_u64", 10, a64, 2, 8);
    gs_arr(&s, "t.arr_i64", 11, a64, 2, 8);
    gs_arr(&s, "t.arr_f64", 12, ad, 2, 8);
    gs_arr(&s, "t.arr_empty", 4, a32, 0, 4);
    emit("valid-all-types", &s);

    /* per-layer arrays, as hybrid and SWA models write them */
    base(&s, 3);
    int32_t kv[2] = {0, 2};
    uint8_t swa[2] = {1, 0};
    gs_arr_i32(&s, "llama.attention.head_count_kv.per_layer", kv, 2);
    gs_arr_i32(&s, "llama.feed_forward_length", (const int32_t[]){128, 0}, 2);
    gs_arr_bool(&s, "llama.attention.sliding_window_pattern", swa, 2);
    tensors(&s);
    emit("valid-layer-arrays", &s);

    base(&s, 3);
    gs_u32(&s, "general.alignment", 64);
    tensors(&s);
    emit("valid-alignment-64", &s);

    /* every known type, the block-size rule, and an unknown id in the middle */
    gs_init(&s, 3);
    gs_str(&s, "general.architecture", "llama");
    char name[32];
    for (uint32_t t = 0; t < 64; t++) {
        const ggml_type_info *ti = ggml_type_get(t);
        if (!ti) continue;
        snprintf(name, sizeof name, "t%u", t);
        gs_tensor(&s, name, t, 2, ti->blck * 2, 3, 1, 1);
    }
    emit("valid-every-type", &s);

    base(&s, 3);
    gs_tensor(&s, "a", 0, 1, 8, 1, 1, 1);
    int64_t ne[2] = {64, 2};
    gs_tensor_raw(&s, "b", 33, 2, ne, s.next_offset); /* removed Q4_0_8_8 */
    s.next_offset += 4096;
    gs_tensor_raw(&s, "c", 0, 2, ne, s.next_offset);
    emit("valid-unknown-type", &s);

    base(&s, 3);
    gs_tensor(&s, "t4d", 0, 4, 2, 3, 4, 5);
    gs_tensor(&s, "zero", 0, 2, 0, 5, 1, 1);
    gs_tensor(&s, "scalar", 0, 0, 1, 1, 1, 1);
    emit("valid-shapes", &s);

    base(&s, 3);
    gs_scalar(&s, "split.no", 2, (const uint16_t[]){0}, 2);
    gs_scalar(&s, "split.count", 2, (const uint16_t[]){3}, 2);
    gs_scalar(&s, "split.tensors.count", 5, (const int32_t[]){12}, 4);
    tensors(&s);
    emit("valid-split-first", &s);

    /* a string longer than what is kept: skipped, its length recorded */
    gs_init(&s, 3);
    char *big = malloc(GGUF_MAX_KEPT_STRING + 2);
    memset(big, 'x', GGUF_MAX_KEPT_STRING + 1);
    big[GGUF_MAX_KEPT_STRING + 1] = 0;
    gs_str(&s, "tokenizer.chat_template", big);
    free(big);
    /* not saved: 64 KiB is too big for a seed; the unit test covers it */
    gs_release(&s);
}

static void invalid(void)
{
    gsynth s;
    buf img = BUF_INIT;

    base(&s, 1);
    emit("invalid-v1", &s);
    base(&s, 4);
    emit("invalid-v4", &s);
    base(&s, 0x03000000);
    emit("invalid-big-endian", &s);

    base(&s, 3);
    tensors(&s);
    gs_finish(&s, &img);
    memcpy(img.p, "GGML", 4);
    save("invalid-magic", &img);
    gs_release(&s);

    base(&s, 3);
    gs_u32(&s, "llama.block_count", 3);
    emit("invalid-duplicate-key", &s);

    base(&s, 3);
    gs_str(&s, "", "x");
    emit("invalid-empty-key", &s);

    base(&s, 3);
    gs_raw_kv(&s, "bad.type", 13, "\0\0\0\0", 4);
    emit("invalid-value-type", &s);

    base(&s, 3);
    uint8_t nested[4 + 8 + 4 + 8 + 4] = {9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
                                         5, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
    gs_raw_kv(&s, "nested", 9, nested, sizeof nested);
    emit("invalid-nested-array", &s);

    base(&s, 3);
    uint8_t huge_arr[12] = {4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10}; /* u32 x 2^60 */
    gs_raw_kv(&s, "huge.array", 9, huge_arr, sizeof huge_arr);
    emit("invalid-huge-array", &s);

    base(&s, 3);
    uint8_t huge_str[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f};
    gs_raw_kv(&s, "huge.string", 8, huge_str, sizeof huge_str);
    emit("invalid-huge-string", &s);

    base(&s, 3);
    tensors(&s);
    emit_counts("invalid-huge-kv-count", &s, 4, UINT64_C(1) << 60);
    base(&s, 3);
    tensors(&s);
    emit_counts("invalid-huge-tensor-count", &s, UINT64_C(1) << 60, 8);
    base(&s, 3);
    emit_counts("invalid-negative-count", &s, UINT64_MAX, 8);

    base(&s, 3);
    gs_tensor(&s, "same", 0, 1, 8, 1, 1, 1);
    gs_tensor(&s, "same", 0, 1, 8, 1, 1, 1);
    emit("invalid-duplicate-tensor", &s);

    base(&s, 3);
    gs_tensor(&s, "blk.0.attn_q.weight.with.a.very.long.name.that.goes.past.63.bytes", 0, 1, 8, 1,
              1, 1);
    emit("invalid-long-name", &s);

    int64_t ne5[5] = {1, 1, 1, 1, 1};
    base(&s, 3);
    gs_tensor_raw(&s, "five", 0, 5, ne5, 0);
    emit("invalid-5-dims", &s);

    int64_t neg[2] = {8, -1};
    base(&s, 3);
    gs_tensor_raw(&s, "neg", 0, 2, neg, 0);
    emit("invalid-negative-dim", &s);

    int64_t ovf[4] = {INT64_C(1) << 32, INT64_C(1) << 32, 1, 1};
    base(&s, 3);
    gs_tensor_raw(&s, "ovf", 0, 2, ovf, 0);
    emit("invalid-overflow-dims", &s);

    int64_t q[2] = {100, 2};
    base(&s, 3);
    gs_tensor_raw(&s, "q", 12, 2, q, 0); /* q4_k rows of 100 */
    emit("invalid-block-size", &s);

    int64_t ok[2] = {8, 2};
    base(&s, 3);
    gs_tensor_raw(&s, "a", 0, 2, ok, 0);
    gs_tensor_raw(&s, "b", 0, 2, ok, 0); /* overlaps a */
    emit("invalid-offset", &s);

    base(&s, 3);
    gs_tensor_raw(&s, "neg_type", 0xffffffffu, 2, ok, 0);
    emit("invalid-tensor-type", &s);

    base(&s, 3);
    gs_scalar(&s, "general.alignment", 4, (const uint32_t[]){48}, 4);
    emit("invalid-alignment-48", &s);
    base(&s, 3);
    gs_scalar(&s, "general.alignment", 4, (const uint32_t[]){0}, 4);
    emit("invalid-alignment-0", &s);
    base(&s, 3);
    gs_u64(&s, "general.alignment", 32);
    emit("invalid-alignment-u64", &s);

    base(&s, 3);
    gs_str(&s, "split.count", "two");
    emit("invalid-split-count-type", &s);

    /* a valid header cut short in the tensor table */
    base(&s, 3);
    tensors(&s);
    gs_finish(&s, &img);
    img.len -= 40;
    save("invalid-truncated", &img);
    gs_release(&s);
    buf_release(&img);
}

/* The header region of a real model: everything before its tensor data. */
static void real(const char *path)
{
    gguf_file g;
    char err[512];
    if (gguf_open(&g, path, err, sizeof err) < 0) {
        fprintf(stderr, "gen_corpus: %s\n", err);
        failed = 1;
        return;
    }
    FILE *f = fopen(path, "rb");
    buf img = BUF_INIT;
    buf_grow(&img, g.data_offset);
    if (!f || fread(img.p, 1, g.data_offset, f) != g.data_offset) {
        fprintf(stderr, "gen_corpus: cannot read '%s'\n", path);
        failed = 1;
    } else {
        img.len = g.data_offset;
        const char *base_name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        char name[256];
        snprintf(name, sizeof name, "valid-header-%s", base_name);
        save(name, &img);
    }
    if (f) fclose(f);
    buf_release(&img);
    gguf_release(&g);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gen_corpus DIR [MODEL.gguf...]\n");
        return 2;
    }
    dir = argv[1];
    valid();
    invalid();
    for (int i = 2; i < argc; i++)
        real(argv[i]);
    return failed;
}
