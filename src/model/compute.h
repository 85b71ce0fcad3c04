/* compute.h - the compute buffers a llama-server context reserves: its
 * worst-case graphs built from the model's shape and replayed through
 * ggml's scheduler and allocator (model/ggml_replay.h). */
#ifndef GPUMOD_COMPUTE_H
#define GPUMOD_COMPUTE_H

#include <stdint.h>

#include "model/estimate_impl.h"
#include "model/gguf.h"

/* sizes[d] for GPU d < p->ndev and sizes[p->ndev] for the host buffer (the
 * CPU's, pinned CUDA_Host with GPUs).  0, or -1 with err. */
int compute_buffers(const gguf_file *g, const hparams *h, const ctxsize *c, const placement *pl,
                    const est_params *p, uint64_t *sizes, char *err, size_t errlen);

#endif
