/* schema.h - the JSON Schema subset the MCP tools declare, checked on
 * every call before a tool runs: type (string, integer, number, boolean,
 * object, array), required, properties, additionalProperties (false, or a
 * schema every other member must meet), enum (strings), minimum, maximum,
 * minLength, maxLength, items, maxItems.  Anything else in a schema is a
 * programming error caught by test_mcp_schema (every tool's schema is
 * walked there).  Pure. */
#ifndef GPUMOD_MCP_SCHEMA_H
#define GPUMOD_MCP_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* 0 when v meets schema; else -1 with err: where ("arguments.mode_id"),
 * what was expected and what came ("arguments.limit: 0 is below the
 * minimum 1"; "arguments: unknown argument 'mode' (expected: mode_id,
 * add_services, ...)"). */
int schema_check(const cJSON *schema, const cJSON *v, const char *where, char *err, size_t errlen);

/* Whether schema uses only the keywords above (for the tests). */
bool schema_supported(const cJSON *schema, char *err, size_t errlen);

#endif
