/* ggml_type.h - the ggml tensor types: block size and bytes per block
 * (research/memory.md §1.3).  Data-driven: an unknown or removed id is
 * "cannot estimate", never a guess. */
#ifndef GPUMOD_GGML_TYPE_H
#define GPUMOD_GGML_TYPE_H

#include <stdint.h>

typedef struct ggml_type_info {
    const char *name; /* "q8_0", lowercase as llama.cpp's CLI spells it */
    uint32_t blck;    /* elements per block */
    uint32_t size;    /* bytes per block */
} ggml_type_info;

/* NULL for unknown or removed ids. */
const ggml_type_info *ggml_type_get(uint32_t id);
/* The id of a name ("f16", "Q4_K", case-insensitive), or -1. */
int ggml_type_by_name(const char *name);
/* Bytes of a row of n elements; 0 when the type is unknown or n is not a
 * multiple of its block size. */
uint64_t ggml_row_bytes(uint32_t id, uint64_t n);

#endif
