/* ctl.h - how the CLI shows what the daemon answers: durations, ages,
 * service rows and event lines; the requests themselves are the
 * control-API client's (client/ctl.h), which bench and the coming TUI and
 * MCP server use without the CLI. */
#ifndef GPUMOD_CLI_CTL_H
#define GPUMOD_CLI_CTL_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "client/ctl.h"
#include "util/buf.h"
#include "util/dur.h"

/* The age of an RFC 3339 time ("3m12s"), or "?" */
void fmt_age(buf *b, const char *ts);
/* One service as a table row or a block of lines (status, service list/show). */
void service_row(buf *b, const cJSON *svc);
void service_row_header(buf *b);
/* One event as a line. */
void event_line(buf *b, const cJSON *ev);
/* A start's overrides (a service's "overrides" object) for people:
 * "context_size 512, threads 8, env FOO=1". */
void overrides_text_json(buf *b, const cJSON *ov);

#endif
