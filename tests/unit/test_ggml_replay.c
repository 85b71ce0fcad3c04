/* test_ggml_replay.c - the replay of ggml's scheduler and allocator on
 * graphs small enough to follow by hand.  Each expected size is worked out
 * in the comment beside it from the rules of ggml-alloc.c (best fit, the
 * last block only when no hole fits, in place when the parent dies there,
 * views keep their source, outputs stay) and ggml-backend.cpp (weights
 * decide the backend, inputs live on the CPU, what a backend cannot read is
 * copied into its buffer, op_offload).  The byte-for-byte comparison with
 * llama-server is in test_estimate.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model/ggml_replay.h"

#define F32 0
#define F16 1
#define NE(a, b) ((const int64_t[4]){(a), (b), 1, 1})

static int leaf(gr_graph *g, uint8_t flags, int dev, uint32_t type, int64_t a, int64_t b)
{
    int t = gr_new(g, GR_NONE, type, NE(a, b), NULL, 0);
    g->t[t].flags = flags;
    g->t[t].dev = (int16_t)dev;
    return t;
}

static int op(gr_graph *g, gr_op o, int64_t a, int64_t b, int s0, int s1)
{
    int s[2] = {s0, s1};
    return gr_new(g, o, F32, NE(a, b), s, s1 >= 0 ? 2 : 1);
}

static void reserve(gr_graph *g, int n_gpu, bool offload, uint64_t *sizes)
{
    gr_backends be = {.n_gpu = n_gpu, .op_offload = offload, .min_batch = 32};
    for (int i = 0; i <= n_gpu; i++)
        sizes[i] = 0;
    assert_int_equal(gr_reserve(g, &be, sizes), 0);
    gr_release(g);
}

static void in_place(void **state)
{
    (void)state;
    gr_graph g;
    gr_init(&g);
    /* x (input, 32 B at 0); a = scale(x): x dies there, same layout -> at
     * 0 too; b = f(a) (64 B) at 32; c = g(b, a) (64 B) at 96: peak 160 */
    int x = leaf(&g, GR_INPUT, 0, F32, 8, 1);
    int a = op(&g, GR_INPLACE, 8, 1, x, -1);
    int b = op(&g, GR_OTHER, 16, 1, a, -1);
    int c = op(&g, GR_OTHER, 16, 1, b, a);
    gr_expand(&g, c);
    uint64_t sz[1];
    reserve(&g, 0, false, sz);
    assert_int_equal(sz[0], 160);
    /* x also read by b: a gets its own block at 32, b at 64; x dies after
     * b, but its 32 B hole is too small for c, which goes at 128: 192 */
    gr_init(&g);
    x = leaf(&g, GR_INPUT, 0, F32, 8, 1);
    a = op(&g, GR_INPLACE, 8, 1, x, -1);
    b = op(&g, GR_OTHER, 16, 1, a, x);
    c = op(&g, GR_OTHER, 16, 1, b, a);
    gr_expand(&g, c);
    reserve(&g, 0, false, sz);
    assert_int_equal(sz[0], 192);
}

static void best_fit_and_views(void **state)
{
    (void)state;
    gr_graph g;
    gr_init(&g);
    /* x 32 B at 0; n1 (128 B) at 32, x dies: hole [0, 32); v = view(n1);
     * n2 = f(v) (32 B) fits the hole: at 0; n1 lives on through its view
     * until n3 = g(v, n2) (64 B) goes at 160: peak 224 */
    int x = leaf(&g, GR_INPUT, 0, F32, 8, 1);
    int n1 = op(&g, GR_OTHER, 32, 1, x, -1);
    int v = gr_view(&g, GR_VIEW, n1, NE(8, 4), NULL, 0);
    int n2 = op(&g, GR_OTHER, 8, 1, v, -1);
    int n3 = op(&g, GR_OTHER, 16, 1, v, n2);
    /* n4 (160 B): n1, n2, n3's blocks are free by then but n3 is an output,
     * never freed: [0, 160) is free, n4 fits it exactly */
    g.t[n3].flags |= GR_OUTPUT;
    int n4 = op(&g, GR_OTHER, 40, 1, n3, -1);
    gr_expand(&g, n4);
    uint64_t sz[1];
    reserve(&g, 0, false, sz);
    assert_int_equal(sz[0], 224);
}

static void copies_into_the_gpu(void **state)
{
    (void)state;
    gr_graph g;
    gr_init(&g);
    /* w (f16, on GPU 0) times x (an input: on the CPU): the product runs
     * on the GPU, which gets a copy of x (2048 B) and the product (2048 B);
     * the CPU (CUDA_Host) buffer holds x */
    int w = leaf(&g, GR_WEIGHT, 0, F16, 8, 8);
    int x = leaf(&g, GR_INPUT, 0, F32, 8, 64);
    int y = op(&g, GR_MUL_MAT, 8, 64, w, x);
    gr_expand(&g, y);
    uint64_t sz[2];
    reserve(&g, 1, true, sz);
    assert_int_equal(sz[0], 4096);
    assert_int_equal(sz[1], 2048);
}

static void op_offload(void **state)
{
    (void)state;
    uint64_t sz[2];
    for (int64_t batch = 16; batch <= 32; batch += 16) {
        gr_graph g;
        gr_init(&g);
        /* w (64 x 64 f16, 8 KiB) stays on the CPU; with a batch of 32 the
         * product is offloaded: the GPU copies w and x in (8 KiB each) and
         * holds the product (8 KiB); with 16 all of it stays on the CPU
         * (x 4 KiB, product 4 KiB) */
        int w = leaf(&g, GR_WEIGHT, 1, F16, 64, 64);
        int x = leaf(&g, GR_INPUT, 0, F32, 64, batch);
        int y = op(&g, GR_MUL_MAT, 64, batch, w, x);
        gr_expand(&g, y);
        reserve(&g, 1, true, sz);
        if (batch == 32) {
            assert_int_equal(sz[0], 3 * 8192);
            assert_int_equal(sz[1], 8192);
        } else {
            assert_int_equal(sz[0], 0);
            assert_int_equal(sz[1], 8192);
        }
    }
}

static void cuda_extra(void **state)
{
    (void)state;
    /* a flash-attention result carries CUDA's f16 K/V copies in a GPU
     * buffer (extra), not in a CPU one */
    for (int dev = 0; dev <= 1; dev++) {
        gr_graph g;
        gr_init(&g);
        int k = leaf(&g, GR_STORED, dev, F16, 64, 256);
        int q = leaf(&g, GR_INPUT, 0, F32, 64, 64);
        int s[2] = {q, k};
        int o = gr_new(&g, GR_FLASH_ATTN, F32, NE(64, 64), s, 2);
        g.t[o].extra = 1000;
        gr_expand(&g, o);
        uint64_t sz[2];
        reserve(&g, 1, true, sz);
        /* on the GPU: the copy of q (16 KiB) and o (16 KiB + 1000, to 128) */
        if (dev == 0) assert_int_equal(sz[0], 16384 + 16384 + 1024);
        /* with K on the host the op runs there: q and o, 32 KiB */
        if (dev == 1) assert_int_equal(sz[1], 32768);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(in_place),
        cmocka_unit_test(best_fit_and_views),
        cmocka_unit_test(copies_into_the_gpu),
        cmocka_unit_test(op_offload),
        cmocka_unit_test(cuda_extra),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
