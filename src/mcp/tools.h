/* tools.h - the MCP tools: their table (name, description, input schema,
 * annotations) and the plumbing of a call: check the arguments against
 * the schema, the rate limit of a mutating tool, run it on a thread of
 * its own, send its result (or nothing, when it was cancelled).
 *
 * Every tool is a client of the daemon's control API (mcp/dcall.h): its
 * answer is the daemon's truth at the time of the call.  A tool that
 * fails answers a result with isError and a message a person can act on
 * (the gate's reason, the switch's rollback, "no daemon is running"); a
 * call the protocol cannot take (an unknown tool, arguments against the
 * schema) is a JSON-RPC error -32602. */
#ifndef GPUMOD_MCP_TOOLS_H
#define GPUMOD_MCP_TOOLS_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "mcp/server.h"
#include "util/buf.h"

/* What a tool hands back: a JSON value (the structured result), or an
 * error message (and optionally structured detail). */
typedef struct tool_out {
    cJSON *value; /* owned */
    char *error;  /* owned; set: isError */
} tool_out;

/* What a tool gets. */
typedef struct tool_ctx {
    mcp_server *srv;
    const cJSON *args;     /* an object (maybe empty) */
    const cJSON *progress; /* the caller's progress token, or NULL */
    mcp_call *call;        /* cancelled when the caller cancels */
} tool_ctx;

typedef void (*tool_fn)(tool_ctx *c, tool_out *o);

typedef struct tool_def {
    const char *name;
    const char *title;
    const char *description;
    const char *schema; /* the input schema, JSON text */
    bool mutating;
    bool destructive; /* annotations of a mutating tool */
    bool idempotent;
    tool_fn run;
    /* checks beyond the schema (patterns the schema subset has no word
     * for): 0, or -1 with err; a failure is -32602 like a schema's */
    int (*check)(const cJSON *args, char *err, size_t errlen);
    bool hub;       /* asks the Hugging Face Hub (openWorldHint) */
    bool pull_only; /* listed and callable only with --allow-pull */
} tool_def;

/* Every tool (read-only ones and mutating ones), NULL-terminated by name. */
extern const tool_def mcp_tools[];

const tool_def *tool_find(const char *name);

/* tools/list's result for this session. */
cJSON *tools_list(mcp_server *s);

/* tools/call: answers on its own (at once for a protocol error, else from
 * the tool's thread).  id and params belong to the caller. */
void tools_call(mcp_server *s, const cJSON *id, const cJSON *params);

/* tool_out helpers: an error message (printf), and the value. */
void tout_error(tool_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The read-only tools (tread.c) and the mutating ones (tact.c). */
void tool_gpu_status(tool_ctx *c, tool_out *o);
void tool_list_services(tool_ctx *c, tool_out *o);
void tool_list_modes(tool_ctx *c, tool_out *o);
void tool_service_info(tool_ctx *c, tool_out *o);
void tool_model_info(tool_ctx *c, tool_out *o);
void tool_simulate_mode(tool_ctx *c, tool_out *o);
void tool_preflight(tool_ctx *c, tool_out *o);
void tool_events(tool_ctx *c, tool_out *o);
void tool_bench_results(tool_ctx *c, tool_out *o);
void tool_eval_results(tool_ctx *c, tool_out *o);
void tool_service_logs(tool_ctx *c, tool_out *o);
void tool_switch_status(tool_ctx *c, tool_out *o);
void tool_switch_mode(tool_ctx *c, tool_out *o);
void tool_start_service(tool_ctx *c, tool_out *o);
void tool_stop_service(tool_ctx *c, tool_out *o);

/* The Hub's tools (thub.c): they run the gpumod-bench helper. */
void tool_search_hf_models(tool_ctx *c, tool_out *o);
void tool_list_gguf_files(tool_ctx *c, tool_out *o);
void tool_fetch_model_config(tool_ctx *c, tool_out *o);
void tool_generate_preset(tool_ctx *c, tool_out *o);
void tool_pull_model(tool_ctx *c, tool_out *o);

/* Their argument checks (pure): a repository id ORG/REPO (each part
 * [A-Za-z0-9][A-Za-z0-9._-]*, no ".."); a .gguf path inside a
 * repository (relative, no "..", ends in .gguf); each tool's arguments.
 * 0, or -1 with err. */
int mcp_check_repo_id(const char *s, char *err, size_t errlen);
int mcp_check_gguf_path(const char *s, char *err, size_t errlen);
int mcp_check_search_args(const cJSON *args, char *err, size_t errlen);
int mcp_check_repo_args(const cJSON *args, char *err, size_t errlen);
int mcp_check_preset_args(const cJSON *args, char *err, size_t errlen);
int mcp_check_pull_args(const cJSON *args, char *err, size_t errlen);

#endif
