/* rmodels.h - llama.cpp router mode as a first-class service: the models of
 * each ready router-mode service (a llamacpp preset with unit_vars.models_dir
 * and no model_path), polled from the engine's GET /models every 2 s and
 * after each load or unload, and the gated per-model load and unload.
 *
 * A load is judged by the gate like a start: the model's need is the
 * estimate of its own GGUF (<models_dir>/MODEL.gguf, else the first shard of
 * <models_dir>/MODEL/) with the preset's settings, against a fresh snapshot
 * and every reservation in flight; when the service already has models_max
 * models loaded (llama-server's default 4; 0 no limit) the engine unloads its
 * least recently used one first, and the gate counts that model's need as
 * freed.  Then POST /models/load {"model"} and GET /models until the model
 * is "loaded" (deadline: the preset's startup_timeout).  An unload is POST
 * /models/unload and GET /models until it is "unloaded".  Loads and unloads
 * run one at a time, daemon-wide, so two gates never judge the same memory.
 *
 * Everything on the daemon's loop; each HTTP call has a deadline. */
#ifndef GPUMOD_RMODELS_H
#define GPUMOD_RMODELS_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "config/config.h"
#include "daemon/hostmon.h"
#include "daemon/supervisor.h"
#include "store/db.h"
#include "util/buf.h"

typedef struct rmodels rmodels;

typedef enum { RM_UNLOADED, RM_LOADING, RM_LOADED, RM__STATES } rm_state;
extern const char *const rm_state_names[]; /* "unloaded", "loading", "loaded" */

/* cfg: the daemon's configuration pointer (reload swaps what it points to). */
rmodels *rmodels_new(uv_loop_t *loop, sup *s, hostmon *hm, const config *const *cfg);
/* Answers every load or unload in flight SUP_SHUTTING_DOWN, stops the
 * polls, frees, then cb on the loop. */
void rmodels_close(rmodels *rm, void (*cb)(void *ud), void *ud);

/* Whether preset p runs llama.cpp in router mode. */
bool rmodels_is_router(const preset *p);

/* A state event of the supervisor's: poll a router-mode service that became
 * ready now; forget the models of one that went down. */
void rmodels_on_event(rmodels *rm, const store_event *e);

/* The state of model in service's engine as last polled; -1 when the
 * service is not a ready router-mode service or the model is not listed. */
int rmodels_state(rmodels *rm, const char *service, const char *model);

/* Appends ,"models":[{"id","state","since"}...] for a router-mode service
 * (nothing for others); hooked into the service JSON (sup_set_json_ext). */
void rmodels_json(const char *service, buf *out, void *ud);

/* Load (load true) or unload model in service.  cb exactly once, always
 * on a later loop turn (never before rmodels_op returns, errors found at
 * once included): SUP_OK when the engine says loaded (unloaded);
 * SUP_NOT_FOUND (no such service, or no such model file); SUP_BAD_REQUEST
 * (not a router-mode service, a bad model name, a load of an id with '/'
 * - a model of llama-server's cache or presets, with no GGUF in models_dir
 * to estimate its need from); SUP_CONFLICT (the service is not ready, or
 * it is going to sleep; supervisor.h: a sleep of it is refused while the
 * op runs); SUP_GATE_REFUSED (with the verdict); SUP_NEED_UNKNOWN (its
 * GGUF cannot be estimated); SUP_START_FAILED (the engine refused, or the
 * deadline passed); SUP_SHUTTING_DOWN.  An admitted load holds a
 * reservation (sup_reserve_extra: every gate counts it) until GET /models
 * says loaded or the op fails.  An unload the engine answers 400 (the
 * model is not running) is confirmed by GET /models.  Returns a ticket
 * (never 0) for rmodels_cancel. */
uint64_t rmodels_op(rmodels *rm, const char *service, const char *model, bool load,
                    const char *origin, sup_cb cb, void *ud);
/* No callback for ticket any more (the load goes on); returns the ud it
 * was given (for the caller to free), NULL when it already ended. */
void *rmodels_cancel(rmodels *rm, uint64_t ticket);

#endif
