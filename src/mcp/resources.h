/* resources.h - the MCP resources: gpumod://status, gpumod://modes,
 * gpumod://modes/{id}, gpumod://services, gpumod://services/{id},
 * gpumod://events.  Each read asks the daemon (never a copy kept from
 * before) and answers two contents for the same URI: the daemon's JSON
 * (application/json) and a Markdown rendering for people and models
 * (text/markdown).  A subscribed URI gets notifications/resources/updated
 * when the daemon's events say it changed (mcp/events.c). */
#ifndef GPUMOD_MCP_RESOURCES_H
#define GPUMOD_MCP_RESOURCES_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "mcp/server.h"

cJSON *resources_list(mcp_server *s);
cJSON *resources_templates(mcp_server *s);

/* Whether uri has the shape of one of the resources (an id of the right
 * form; whether it exists is the read's question). */
bool resource_uri_known(const char *uri, char *err, size_t errlen);

/* resources/read's result, or NULL with *code (-32002 not found, -32603
 * the daemon did not answer) and err. */
cJSON *resource_read(mcp_server *s, const char *uri, int *code, char *err, size_t errlen);

#endif
