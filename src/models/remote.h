/* remote.h (models) - a GGUF file on an HTTP server read as model/gguf.h's
 * gguf_io: every read is a Range request, in windows of 256 KiB doubling
 * to 8 MiB, so a 40 GB file costs what its header costs (its metadata,
 * tokenizer arrays included, and its tensor table).  Split models: the
 * reader opens the other parts by name, each its own requests. */
#ifndef GPUMOD_MODELS_REMOTE_H
#define GPUMOD_MODELS_REMOTE_H

#include <stdint.h>

#include "model/gguf.h"
#include "models/http.h"

typedef struct mremote {
    mhttp_opts base;        /* token, deadline per request, interrupted flag */
    uint64_t bytes_fetched; /* body bytes of every request */
    int requests;
} mremote;

/* io reads through m (which must outlive it). */
void mremote_io(mremote *m, gguf_io *io);

#endif
