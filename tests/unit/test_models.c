/* test_models.c - the models helper's remote header reader: gguf_open_io
 * over an in-memory gguf_io that lies (a claimed size larger than its
 * bytes, short reads of 1..7 bytes, a header cut at every byte, a read
 * error, a tensor table that claims more bytes than the file), each of
 * which must fail with a clear message and never ask outside the claimed
 * size; and the same bytes read through the io and from a file must give
 * the same gguf_file.  And the text rules of preset new (presetgen.h):
 * nothing a model file or a listing says can end a YAML comment or a
 * quoted value. */
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
#include <unistd.h>

#include "config/yaml.h"
#include "gguf_synth.h"
#include "model/gguf.h"
#include "models/presetgen.h"
#include "util/utf8.h"
#include "util/buf.h"

typedef struct memsrc {
    const uint8_t *bytes;
    size_t nbytes;      /* what is really there */
    uint64_t claimed;   /* what open() says */
    bool short_reads;   /* 1..7 bytes a call */
    uint64_t fail_at;   /* a pread covering this offset fails; UINT64_MAX never */
    uint64_t max_asked; /* the highest off + n asked */
    int opens, closes;
    unsigned seed;
} memsrc;

static int m_open(void *ctx, const char *name, void **h, uint64_t *size, char *err, size_t errlen)
{
    memsrc *m = ctx;
    if (strcmp(name, "mem://model.gguf")) {
        snprintf(err, errlen, "cannot open: %s", name);
        return -1;
    }
    m->opens++;
    *h = m;
    *size = m->claimed;
    return 0;
}

static long m_pread(void *h, void *dst, size_t n, uint64_t off, char *err, size_t errlen)
{
    memsrc *m = h;
    assert_true(n > 0);
    assert_true(off + n <= m->claimed); /* never past what the source said */
    if (off + n > m->max_asked) m->max_asked = off + n;
    if (m->fail_at != UINT64_MAX && off <= m->fail_at && m->fail_at < off + n) {
        snprintf(err, errlen, "connection reset");
        return -1;
    }
    if (off >= m->nbytes) return 0;
    size_t k = n;
    if (k > m->nbytes - off) k = (size_t)(m->nbytes - off);
    if (m->short_reads) {
        size_t r = 1 + (size_t)(rand_r(&m->seed) % 7);
        if (k > r) k = r;
    }
    memcpy(dst, m->bytes + off, k);
    return (long)k;
}

static void m_close(void *h)
{
    ((memsrc *)h)->closes++;
}

static gguf_io mem_io(memsrc *m)
{
    return (gguf_io){m_open, m_pread, m_close, m, 0, 0};
}

static void memsrc_init(memsrc *m, const buf *img, size_t nbytes, uint64_t claimed)
{
    memset(m, 0, sizeof *m);
    m->bytes = (const uint8_t *)img->p;
    m->nbytes = nbytes;
    m->claimed = claimed;
    m->fail_at = UINT64_MAX;
    m->seed = 12345;
}

/* header + tensor data (zeros), as a file would have it */
static uint64_t build(buf *img)
{
    gsynth s;
    gs_init(&s, 3);
    gs_str(&s, "general.architecture", "llama");
    gs_u32(&s, "llama.block_count", 2);
    gs_u32(&s, "llama.context_length", 2048);
    gs_u32(&s, "general.alignment", 64);
    gs_arr_str(&s, "tokenizer.ggml.tokens", (const char *const[]){"<s>", "</s>", "hi", ""}, 4);
    gs_f32(&s, "eps", 1e-5f);
    gs_tensor(&s, "token_embd.weight", 1, 2, 64, 4, 1, 1);
    gs_tensor(&s, "blk.0.attn_q.weight", 0, 2, 64, 64, 1, 1);
    gs_tensor(&s, "output_norm.weight", 0, 1, 64, 1, 1, 1);
    gs_finish(&s, img);
    uint64_t data = s.next_offset;
    gs_release(&s);
    size_t hdr = img->len;
    for (uint64_t i = 0; i < data; i++)
        buf_addc(img, 0);
    return hdr;
}

static void same_file(const gguf_file *a, const gguf_file *b)
{
    assert_int_equal(a->version, b->version);
    assert_int_equal(a->alignment, b->alignment);
    assert_int_equal(a->data_offset, b->data_offset);
    assert_int_equal(a->file_bytes, b->file_bytes);
    assert_int_equal(a->split_count, b->split_count);
    assert_int_equal(a->nkv, b->nkv);
    for (size_t i = 0; i < a->nkv; i++) {
        assert_string_equal(a->kv[i].key, b->kv[i].key);
        assert_int_equal(a->kv[i].type, b->kv[i].type);
        assert_int_equal(a->kv[i].u, b->kv[i].u);
        assert_int_equal(a->kv[i].i, b->kv[i].i);
        assert_true(a->kv[i].f == b->kv[i].f);
        assert_int_equal(a->kv[i].len, b->kv[i].len);
        assert_int_equal(a->kv[i].arr_n, b->kv[i].arr_n);
        if (a->kv[i].str) assert_string_equal(a->kv[i].str, b->kv[i].str);
    }
    assert_int_equal(a->ntensors, b->ntensors);
    for (size_t i = 0; i < a->ntensors; i++) {
        const gguf_tensor *x = &a->tensors[i], *y = &b->tensors[i];
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->n_dims, y->n_dims);
        assert_memory_equal(x->ne, y->ne, sizeof x->ne);
        assert_int_equal(x->type, y->type);
        assert_int_equal(x->offset, y->offset);
        assert_int_equal(x->nbytes, y->nbytes);
        assert_int_equal(x->shard, y->shard);
    }
}

/* the io and a file of the same bytes agree, with reads of any length */
static void io_equals_file(void **state)
{
    (void)state;
    buf img = BUF_INIT;
    build(&img);
    char path[] = "/tmp/test_models.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, img.p, img.len), (ssize_t)img.len);
    close(fd);
    gguf_file f, g;
    char err[512];
    assert_int_equal(gguf_open(&f, path, err, sizeof err), 0);
    for (int sr = 0; sr < 2; sr++) {
        memsrc m;
        memsrc_init(&m, &img, img.len, img.len);
        m.short_reads = sr;
        gguf_io io = mem_io(&m);
        if (gguf_open_io(&g, "mem://model.gguf", &io, err, sizeof err)) fail_msg("%s", err);
        same_file(&f, &g);
        assert_int_equal(m.opens, m.closes);
        gguf_release(&g);
    }
    gguf_release(&f);
    unlink(path);
    buf_release(&img);
}

/* honest size, header cut at every byte: "truncated at byte N reading" */
static void cut_everywhere(void **state)
{
    (void)state;
    buf img = BUF_INIT;
    size_t hdr = build(&img);
    char err[512], want[96];
    for (size_t n = 0; n < hdr; n++) {
        memsrc m;
        memsrc_init(&m, &img, n, n);
        m.short_reads = n % 2;
        gguf_io io = mem_io(&m);
        gguf_file g;
        err[0] = 0;
        snprintf(want, sizeof want, "'mem://model.gguf': truncated at byte %zu reading ", n);
        if (gguf_open_io(&g, "mem://model.gguf", &io, err, sizeof err) != -1 ||
            strncmp(err, want, strlen(want)))
            fail_msg("cut at %zu: \"%s\"", n, err);
        assert_int_equal(m.opens, m.closes);
    }
    buf_release(&img);
}

/* a size that lies: more claimed than there is, the bytes end anywhere in
 * the header; short reads at random.  Either it fails "truncated", or the
 * bytes it never needed were the padding, and it reads what a file gives. */
static void size_lies(void **state)
{
    (void)state;
    buf img = BUF_INIT;
    size_t hdr = build(&img);
    char err[512];
    gguf_file ref;
    memsrc r;
    memsrc_init(&r, &img, img.len, (uint64_t)img.len + 1000000);
    gguf_io rio = mem_io(&r);
    assert_int_equal(gguf_open_io(&ref, "mem://model.gguf", &rio, err, sizeof err), 0);
    size_t failed = 0;
    for (size_t n = 0; n < hdr; n++) {
        memsrc m;
        memsrc_init(&m, &img, n, (uint64_t)img.len + 1000000);
        m.short_reads = true;
        m.seed = (unsigned)n;
        gguf_io io = mem_io(&m);
        gguf_file g;
        err[0] = 0;
        int rc = gguf_open_io(&g, "mem://model.gguf", &io, err, sizeof err);
        if (rc == 0) {
            assert_true(n + ref.alignment > ref.data_offset); /* only the padding was missing */
            same_file(&ref, &g);
            gguf_release(&g);
        } else if (!strstr(err, "truncated at byte ")) {
            fail_msg("%zu bytes of %zu claimed: \"%s\"", n, img.len + 1000000, err);
        } else {
            failed++;
        }
        assert_true(m.max_asked <= m.claimed);
        assert_int_equal(m.opens, m.closes);
    }
    assert_true(failed + ref.alignment >= hdr);
    gguf_release(&ref);
    buf_release(&img);
}

/* the tensor table claims more bytes than the file has */
static void table_past_end(void **state)
{
    (void)state;
    buf img = BUF_INIT;
    build(&img);
    memsrc m;
    memsrc_init(&m, &img, img.len - 1, img.len - 1);
    gguf_io io = mem_io(&m);
    gguf_file g;
    char err[512] = "";
    assert_int_equal(gguf_open_io(&g, "mem://model.gguf", &io, err, sizeof err), -1);
    assert_non_null(strstr(err, "truncated: tensor 'output_norm.weight' ends at byte"));
    buf_release(&img);
}

/* a read error mid-header names the byte and the io's reason */
static void read_error(void **state)
{
    (void)state;
    buf img = BUF_INIT;
    build(&img);
    memsrc m;
    memsrc_init(&m, &img, img.len, img.len);
    m.fail_at = 100;
    gguf_io io = mem_io(&m);
    gguf_file g;
    char err[512] = "";
    assert_int_equal(gguf_open_io(&g, "mem://model.gguf", &io, err, sizeof err), -1);
    assert_non_null(strstr(err, "read error at byte "));
    assert_non_null(strstr(err, "connection reset"));
    assert_int_equal(m.opens, m.closes);
    /* and a source that cannot be opened says so */
    assert_int_equal(gguf_open_io(&g, "mem://other.gguf", &io, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot open: mem://other.gguf"));
    buf_release(&img);
}

/* pn_clean and pn_yaml_quote: exact outputs, then each hostile string as
 * a comment and a value of one YAML document: libyaml sees one key, whose
 * value is the string itself */
static void preset_text(void **state)
{
    (void)state;
    char *c = utf8_clean("a\nb\"c\\d\x1b[0m\x7f\tz");
    assert_string_equal(c, "a?b\"c\\d?[0m??z");
    free(c);
    c = utf8_clean("nel\xc2\x85ls\xe2\x80\xa8"
                 "bidi\xe2\x80\xae"
                 "bad\xff\xc3(ok \xc3\xa9");
    assert_string_equal(c, "nel?ls?bidi?bad?"
                           "?(ok \xc3\xa9");
    free(c);
    c = utf8_clean(NULL);
    assert_string_equal(c, "");
    free(c);
    buf b = BUF_INIT;
    assert_int_equal(pn_yaml_quote(&b, "a\nb\"c\\d\x1b[0m\tz\xc2\x85\xe2\x80\xa8"), 0);
    assert_string_equal(b.p, "\"a\\nb\\\"c\\\\d\\x1b[0m\\tz\\x85\\u2028\"");
    buf_clear(&b);
    assert_int_equal(pn_yaml_quote(&b, "bad\xff"), -1);
    assert_int_equal(pn_yaml_quote(&b, "cut\xe2\x80"), -1);
    assert_int_equal(pn_yaml_quote(&b, "overlong\xc0\xaf"), -1);
    assert_int_equal(b.len, 0);
    static const char *const hostile[] = {
        "llama\nargs: [x]",
        "q\"uote: 1",
        "back\\slash\\",
        "esc\x1b[31mred",
        "nel\xc2\x85"
        "args: x",
        "ls\xe2\x80\xa8"
        "args: x",
        "cr\rargs: x",
        "del\x7f\x01\x1f",
        "bom\xef\xbb\xbf",
        "#: not a comment",
        "- [a, {b: c}] &x *y",
        "' \" \\ \\\\n",
    };
    for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
        buf_clear(&b);
        char *t = utf8_clean(hostile[i]);
        buf_printf(&b, "# %s\nk: ", t);
        free(t);
        assert_int_equal(pn_yaml_quote(&b, hostile[i]), 0);
        buf_adds(&b, "\n  # ");
        t = utf8_clean(hostile[i]);
        buf_adds(&b, t);
        free(t);
        buf_addc(&b, '\n');
        ydoc doc = {0};
        diags d = {0};
        if (yaml_load_string(&doc, b.p, b.len, "t.yaml", &d)) fail_msg("not YAML: %s", b.p);
        assert_non_null(doc.root);
        assert_int_equal(doc.root->kind, Y_MAP);
        assert_int_equal(doc.root->npairs, 1);
        const ynode *v = ymap_get(doc.root, "k");
        assert_non_null(v);
        assert_int_equal(v->kind, Y_SCALAR);
        if (strcmp(v->s, hostile[i]))
            fail_msg("'%s' came back as '%s' from %s", hostile[i], v->s, b.p);
        yaml_release(&doc);
        diags_release(&d);
    }
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(io_equals_file), cmocka_unit_test(cut_everywhere),
        cmocka_unit_test(size_lies),      cmocka_unit_test(table_past_end),
        cmocka_unit_test(read_error),     cmocka_unit_test(preset_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
