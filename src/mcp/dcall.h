/* dcall.h - the MCP server's requests to the daemon (through
 * client/ctl.h), with the failure told as a tool's error: "no daemon is
 * running (socket S); start one with 'gpumod serve'" (the server keeps
 * running and the next call tries again), or the daemon's own message
 * (the gate's reason, the switch's rollback) with the HTTP status. */
#ifndef GPUMOD_MCP_DCALL_H
#define GPUMOD_MCP_DCALL_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "mcp/server.h"
#include "mcp/tools.h"

/* method target [body] within timeout_ms.  Returns the HTTP status with
 * *out the answer's JSON (owned; NULL when it was not JSON), or 0 when
 * no answer came.  A status outside 2xx or no answer fills o->error (and
 * o->value with {"status", "error": the daemon's error object}); a 2xx
 * leaves o alone. */
int dcall(mcp_server *s, const char *method, const char *target, const char *body,
          int64_t timeout_ms, cJSON **out, tool_out *o);

/* A path segment percent-encoded (caller frees). */
char *dc_escape(const char *s);

#endif
