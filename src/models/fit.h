/* fit.h (models) - which model fits this host: the parts `model fit` and
 * `preset new` share.  A SOURCE's groups are opened (local files, or
 * their headers over Range requests, up to 4 at a time), described and
 * estimated with the functions `model inspect` uses, and each estimate is
 * put to the admission gate against three hosts: the host as it is now,
 * the host "alone" (every GPU's used memory taken as 0, host memory as it
 * is), and "alone" plus the reservations of a mode's services. */
#ifndef GPUMOD_MODELS_FIT_H
#define GPUMOD_MODELS_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/gate.h"
#include "daemon/need.h"
#include "host/types.h"
#include "model/estimate.h"
#include "model/gguf.h"
#include "models/models.h"
#include "models/source.h"

enum { FIT_NOW, FIT_ALONE, FIT_MODE };

typedef struct fit_host {
    snapshot now, alone; /* alone: a copy of now with the GPUs' used memory 0 (not released) */
    gate_policy pol;
    size_t ndev;                  /* GPUs a model is spread over (0: CPU only) */
    int dev_index[HOST_MAX_GPUS]; /* their snapshot indices */
    const char *mode;             /* --mode or NULL */
    config full;                  /* the whole config, loaded for --mode */
    bool has_full;
    reservation res[64]; /* the mode's services' needs */
    size_t nres;
} fit_host;

/* Take the snapshot, the gate's policy from the settings, the devices
 * (gpus < 0: 1 when the host has a GPU, else 0) and, with mode, the whole
 * config and the mode's reservations.  0, or -1 with err (an unknown mode
 * lists the known ones). */
int fit_host_init(fit_host *h, const mctx *c, const char *mode_id, int64_t gpus, char *err,
                  size_t errlen);
void fit_host_release(fit_host *h);

/* The need of an estimate on h's devices, and the gate's verdict against
 * `against` (FIT_NOW, FIT_ALONE, FIT_MODE). */
void fit_need(const fit_host *h, const estimate *e, need *n);
bool fit_check(const fit_host *h, int against, const estimate *e, verdict *v);
/* Estimate g with ep and check: 1 fits, 0 does not (v says why), -1 the
 * estimate failed (err). */
int fit_try(const fit_host *h, int against, const gguf_file *g, const est_params *ep, verdict *v,
            char *err, size_t errlen);
/* The largest context --ctx takes (llama.cpp's sizes stay far from
 * overflow below it). */
#define FIT_CTX_MAX 16777216
/* The largest context (a multiple of 256 in [256, min(ctx_max,
 * FIT_CTX_MAX)]) that fits with ep's other flags; 0 when even 256 does
 * not. */
int64_t fit_max_ctx(const fit_host *h, int against, const gguf_file *g, const est_params *ep,
                    int64_t ctx_max);
/* n_ctx_train, or 1 << 20 when the file does not say. */
int64_t fit_ctx_train(const model_summary *m);

/* One group of a source, opened and described. */
typedef struct fit_model {
    const mgroup *grp;
    gguf_file g;
    bool opened, described;
    model_summary m;
    char err[512];
    uint64_t fetched; /* bytes fetched over HTTP */
    int requests;
} fit_model;

/* Open every group of s (remote ones over Range requests, 30 s per
 * request, up to 4 groups at a time); out[i] for s->groups[i].  The hub
 * gives the token (sent for hf: sources and URLs under the endpoint). */
void fit_open_groups(const mctx *c, const mhub *hub, const msource *s, fit_model *out);
void fit_model_release(fit_model *fm);

#endif
