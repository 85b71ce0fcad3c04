/* api_modes.h - the mode routes of the control API (docs/api.md):
 * GET /modes/current, POST /modes/switch and GET /switches, hooked into
 * api.c's route table. */
#ifndef GPUMOD_API_MODES_H
#define GPUMOD_API_MODES_H

#include "daemon/api.h"

/* origin: the request's ?origin= ("cli" or "api"; anything else is "api"). */
void api_modes_switch(gpumodd *d, srv_conn *c, const view *body, const char *origin);
void api_modes_current(gpumodd *d, srv_conn *c);
/* limit: the query value or NULL. */
void api_switches(gpumodd *d, srv_conn *c, const char *limit);

#endif
