/* api_tune.h - the tune lease's routes of the control API (docs/api.md
 * "Tune lease"): POST /tune, GET /tune, PUT /tune/ID, DELETE /tune/ID,
 * hooked into api.c's route table; the lease itself is tunelease.c's. */
#ifndef GPUMOD_API_TUNE_H
#define GPUMOD_API_TUNE_H

#include "daemon/api.h"
#include "daemon/tunelease.h"

void api_tune_post(gpumodd *d, srv_conn *c, const view *body);
void api_tune_get(gpumodd *d, srv_conn *c);
void api_tune_put(gpumodd *d, srv_conn *c, const char *id, const view *body);
void api_tune_delete(gpumodd *d, srv_conn *c, const char *id);

/* The body of POST /tune, strictly (util/jstrict.h): {"service": ID,
 * "allow_traffic": false, "ttl_ms": 30000, "state": {...}}, service
 * required, the others optional (null: the default).  0 with *out
 * filled (release with tl_take_release), or -1 with err (a 400's
 * message naming the key and what it takes). */
int api_tune_take_parse(const view *body, tl_take *out, char *err, size_t errlen);
/* The body of PUT /tune/ID: none, {} or {"state": {...} | null}.  0 with
 * *state the new state's JSON text (caller frees) or NULL (keep), or -1
 * with err. */
int api_tune_renew_parse(const view *body, char **state, char *err, size_t errlen);

#endif
