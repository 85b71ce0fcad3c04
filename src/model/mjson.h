/* mjson.h - a GGUF file described and estimated, as JSON: what `gpumod
 * --json model inspect` prints and what the MCP tool model_info answers
 * (one writer, so the two never drift). */
#ifndef GPUMOD_MODEL_MJSON_H
#define GPUMOD_MODEL_MJSON_H

#include "model/estimate.h"
#include "model/gguf.h"
#include "util/buf.h"

/* {"file", "model": {...}, "params": {...}, "estimate": {...} | null,
 * "error"?} and a newline; e NULL when the estimate failed (eerr says
 * why). */
void model_inspect_json(buf *b, const char *file, const gguf_file *g, const model_summary *m,
                        const est_params *ep, const estimate *e, const char *eerr);

/* The pieces: the "model" object (no newline) and the "estimate" object. */
void model_summary_json(buf *b, const model_summary *m, const gguf_file *g);
void model_estimate_json(buf *b, const estimate *e);

#endif
