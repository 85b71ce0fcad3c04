/* ggml_type.c - the ggml tensor type table: id -> name, elements per block,
 * bytes per block (research/memory.md §1.3, from ggml's type_traits[] and
 * the block_* structs of ggml-common.h).
 *
 * The table is the whole design: ids that ggml removed (Q4_2, Q4_3, the
 * Q4_0_x_y and IQ4_NL_x_y repacks) and ids newer than the table are absent
 * rather than guessed, so a model that uses them is "cannot estimate", and
 * adding a type later is one line.  Names are lowercase, as llama.cpp's
 * command line spells cache types (-ctk q8_0), including the k-quants
 * (q4_k, not ggml's q4_K), so a name round-trips through the CLI. */
#include "model/ggml_type.h"

#include <stddef.h>
#include <strings.h>

static const ggml_type_info types[] = {
    [0] = {"f32", 1, 4},
    [1] = {"f16", 1, 2},
    [2] = {"q4_0", 32, 18},
    [3] = {"q4_1", 32, 20},
    /* 4, 5: q4_2, q4_3 (removed) */
    [6] = {"q5_0", 32, 22},
    [7] = {"q5_1", 32, 24},
    [8] = {"q8_0", 32, 34},
    [9] = {"q8_1", 32, 36},
    [10] = {"q2_k", 256, 84},
    [11] = {"q3_k", 256, 110},
    [12] = {"q4_k", 256, 144},
    [13] = {"q5_k", 256, 176},
    [14] = {"q6_k", 256, 210},
    [15] = {"q8_k", 256, 292},
    [16] = {"iq2_xxs", 256, 66},
    [17] = {"iq2_xs", 256, 74},
    [18] = {"iq3_xxs", 256, 98},
    [19] = {"iq1_s", 256, 50},
    [20] = {"iq4_nl", 32, 18},
    [21] = {"iq3_s", 256, 110},
    [22] = {"iq2_s", 256, 82},
    [23] = {"iq4_xs", 256, 136},
    [24] = {"i8", 1, 1},
    [25] = {"i16", 1, 2},
    [26] = {"i32", 1, 4},
    [27] = {"i64", 1, 8},
    [28] = {"f64", 1, 8},
    [29] = {"iq1_m", 256, 56},
    [30] = {"bf16", 1, 2},
    /* 31-33: q4_0_4_4, q4_0_4_8, q4_0_8_8 (removed: repacked at load time) */
    [34] = {"tq1_0", 256, 54},
    [35] = {"tq2_0", 256, 66},
    /* 36-38: iq4_nl_4_4, iq4_nl_4_8, iq4_nl_8_8 (removed) */
    [39] = {"mxfp4", 32, 17},
    [40] = {"nvfp4", 64, 36},
    [41] = {"q1_0", 128, 18},
    [42] = {"q2_0", 64, 18},
};

#define NTYPES (sizeof types / sizeof types[0])

const ggml_type_info *ggml_type_get(uint32_t id)
{
    if (id >= NTYPES || !types[id].name) return NULL;
    return &types[id];
}

int ggml_type_by_name(const char *name)
{
    if (!name) return -1;
    for (size_t i = 0; i < NTYPES; i++)
        if (types[i].name && !strcasecmp(types[i].name, name)) return (int)i;
    return -1;
}

/* 0 also when the byte count would not fit in 64 bits: a caller that gets
 * 0 for a non-empty row cannot size it, whatever the reason. */
uint64_t ggml_row_bytes(uint32_t id, uint64_t n)
{
    const ggml_type_info *t = ggml_type_get(id);
    if (!t || n % t->blck) return 0;
    uint64_t r;
    if (__builtin_mul_overflow(n / t->blck, (uint64_t)t->size, &r)) return 0;
    return r;
}
