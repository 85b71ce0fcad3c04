/* md.h - Markdown renderings of the daemon's answers, for the MCP
 * resources: short tables a model reads as easily as a person.  Pure. */
#ifndef GPUMOD_MCP_MD_H
#define GPUMOD_MCP_MD_H

#include <cjson/cJSON.h>

#include "util/buf.h"

/* GET /status with GET /modes/current (may be NULL). */
void md_status(buf *b, const cJSON *status, const cJSON *current);
/* GET /modes */
void md_modes(buf *b, const cJSON *modes);
/* one mode of GET /modes, with GET /services for its services' states */
void md_mode(buf *b, const cJSON *mode, const cJSON *services);
/* GET /services (an array) */
void md_services(buf *b, const cJSON *services);
/* GET /services/ID */
void md_service(buf *b, const cJSON *svc);
/* GET /events */
void md_events(buf *b, const cJSON *events);


#endif
