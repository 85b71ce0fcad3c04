/* searchfit.h (models) - `model search --fit`: each result's best file
 * that fits this host alone (searchfit.c). */
#ifndef GPUMOD_MODELS_SEARCHFIT_H
#define GPUMOD_MODELS_SEARCHFIT_H

#include <cjson/cJSON.h>

#include "model/eflags.h"
#include "models/models.h"
#include "models/source.h"
#include "util/buf.h"

/* Add "fit" to every model of the array models (objects with "id"):
 * {"files": N, "file": label, "quant", "size", "bits_per_weight",
 * "max_ctx"} for the best file that fits alone, else {"file": null,
 * "reason", "error"?}.  ep: the estimator's flags (given: which the user
 * set).  0, or -1 with err when the host cannot be read. */
int msearch_fit(const mctx *c, const mhub *hub, est_params *ep, unsigned given, cJSON *models,
                char *err, size_t errlen);
/* One model's "fit" in a line: "X-Q4_K_M.gguf, 4.1 GiB, ctx up to 32768"
 * or "none fits this host alone". */
void msearch_fit_text(buf *b, const cJSON *fit);

#endif
