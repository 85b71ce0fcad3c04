/* api_services.h - the supervisor as the control API shows it (docs/
 * api.md): a service's JSON, the list, the load slot, and the detail of
 * a start's error, each rendered from what supervisor.h lends (views and
 * results), never written by the supervisor itself. */
#ifndef GPUMOD_API_SERVICES_H
#define GPUMOD_API_SERVICES_H

#include "daemon/supervisor.h"
#include "util/buf.h"

/* The service object; -1 when id is neither configured nor running. */
int api_service_json(sup *s, const char *id, buf *out);
/* Every listed service, configured ones first in the configuration's
 * order: an array. */
void api_services_json(sup *s, buf *out);
/* {"holder","waiting"}: the load slot. */
void api_slot_json(sup *s, buf *out);
/* The detail of a supervisor error (the "detail" member of the error
 * object): the gate's verdict, the port's holder {"pid","cmdline","port"},
 * or a start guard's own JSON; nothing for any other result. */
void api_result_detail_json(buf *out, const sup_result *r);
/* POST /services/ID/sleep's answer (docs/api.md): {"service", "slept",
 * "tier", "fell_back", "ms", "message"} - tier the one it sleeps at, or
 * "stop" when it was stopped (or was down); ms 0 when nothing ran. */
void api_sleep_json(buf *out, const char *id, const sup_result *r);

/* The body of POST /services/ID/start (and /restart): nothing, or
 * {"overrides": {...}} (config/overrides.h) with "overrides" null or {}
 * for none, checked for a preset of driver (-1: none known).  Strict
 * (util/jstrict.h): an unknown key, a value of the wrong type or out of
 * the schema's range is an error that names it.  what ("start") leads the
 * message.  0 with *out filled (caller releases; empty: no overrides), or
 * -1 with err (a 400's message). */
int api_overrides_parse(const char *what, const view *body, int driver, overrides *out, char *err, size_t errlen);

#endif
