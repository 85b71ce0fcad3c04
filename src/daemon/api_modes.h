/* api_modes.h - the mode routes of the control API (docs/api.md):
 * GET /modes/current, POST /modes/switch, GET /switches and GET
 * /switches/ID, hooked into
 * api.c's route table. */
#ifndef GPUMOD_API_MODES_H
#define GPUMOD_API_MODES_H

#include "daemon/api.h"

/* origin: the request's ?origin= ("cli" or "api"; anything else is "api").
 * wait: the request's ?wait= or NULL ("0"/"false": answer 202 with the
 * switch's id and wait_ms at once, as does "wait": false in the body).
 * While a tune lease is held (or its restore runs) a switch that is not
 * a dry run is 409 tune_in_progress (tunelease.h). */
void api_modes_switch(gpumodd *d, srv_conn *c, const view *body, const char *origin, const char *wait);
void api_modes_current(gpumodd *d, srv_conn *c);
/* GET /switches/ID: one journal entry with "result" (the answer a
 * blocking request got, while this daemon remembers it). */
void api_switch_get(gpumodd *d, srv_conn *c, const char *id);
/* limit: the query value or NULL. */
void api_switches(gpumodd *d, srv_conn *c, const char *limit);

#endif
