/* tools.c - the tool table and the plumbing of tools/call (see tools.h). */
#include "mcp/tools.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID_S(what)                                                                                 \
    "{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,\"description\":\"" what "\"}"
#define OBJ(props, req)                                                                            \
    "{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req                           \
    "],\"additionalProperties\":false}"
#define IDS_S(what)                                                                                \
    "{\"type\":\"array\",\"maxItems\":64,\"items\":" ID_S(                                         \
        "a service id") ",\"description\":\"" what "\"}"
#define REPO_S                                                                                     \
    "{\"type\":\"string\",\"minLength\":3,\"maxLength\":200,\"description\":\"a Hub "              \
    "repository, ORG/REPO\"}"
#define LIMIT_S                                                                                    \
    "{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"description\":\"how many, newest "     \
    "first\"}"

const tool_def mcp_tools[] = {
    {"gpu_status", "GPU and host status",
     "The daemon's view of the host now: every GPU's memory (used, reserved by starts in "
     "flight, free), the "
     "host's available memory and PSI, every service's state and footprint, the load slot, the "
     "watchdog.",
     OBJ("", ""), false, false, false, tool_gpu_status},
    {"list_services", "List services",
     "Every configured service with its driver, port, state and footprint.", OBJ("", ""), false,
     false, false, tool_list_services},
    {"list_modes", "List modes",
     "Every mode (a set of services), which one is current, and any switch in progress.",
     OBJ("", ""), false, false, false, tool_list_modes},
    {"service_info", "Service details",
     "One service: state and since when, footprint measured against the need admitted, "
     "restarts, last start and "
     "exit, log file.",
     OBJ("\"service_id\":" ID_S("the service's id"), "\"service_id\""), false, false, false,
     tool_service_info},
    {"model_info", "Model file and memory estimate",
     "A GGUF model's metadata (architecture, parameters, layers, context, quantisation) and "
     "the estimate of what "
     "llama-server takes at a context: weights, KV cache, compute, per device. model_id is a "
     "service id (its "
     "model, and the daemon's need for it) or the path of a .gguf file on this host.",
     OBJ("\"model_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":"
         "\"a service id or a "
         "path to a .gguf "
         "file\"},\"ctx\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":16777216,"
         "\"description\":\"context size for the estimate\"}",
         "\"model_id\""),
     false, false, false, tool_model_info},
    {"simulate_mode", "Simulate a mode switch",
     "The daemon's plan for switching to a mode, without changing anything: what stops, what "
     "starts, each start's "
     "gate verdict and the memory after each step. add_services / remove_services change the "
     "mode's set and "
     "context_overrides a service's context size, for the question 'what if'.",
     OBJ("\"mode_id\":" ID_S("the mode (or \\\"none\\\")") ",\"add_services\":" IDS_S(
             "services to add to the mode") ",\"remove_services\":" IDS_S("services to leave "
                                                                          "out") ",\"context_"
                                                                                 "overrides\":{"
                                                                                 "\"type\":"
                                                                                 "\"object\","
                                                                                 "\"additionalP"
                                                                                 "roperties\":{"
                                                                                 "\"type\":"
                                                                                 "\"integer\","
                                                                                 "\"minimum\":"
                                                                                 "1,"
                                                                                 "\"maximum\":"
                                                                                 "16777216},"
                                                                                 "\"description"
                                                                                 "\":\"service "
                                                                                 "id -> "
                                                                                 "context "
                                                                                 "size\"}",
         "\"mode_id\""),
     false, false, false, tool_simulate_mode},
    {"preflight", "Would it fit?",
     "The gate's verdict for starting a service now (optionally with start overrides, as a "
     "restart with them "
     "would be judged), or for a whole mode: fits or not, the binding limit and why, the "
     "memory available.",
     OBJ("\"service_id\":" ID_S("a service (or give mode_id)") ",\"mode_id\":" ID_S(
             "a mode (or give service_id)") ",\"overrides\":{\"type\":\"object\","
                                            "\"description\":\"start overrides, e.g. "
                                            "{\\\"context_size\\\": 8192}\"}",
         ""),
     false, false, false, tool_preflight},
    {"events", "Daemon events",
     "The daemon's events, oldest first: state changes, spawns, exits, gate refusals, switch "
     "phases, "
     "activations, canaries.",
     OBJ("\"since\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":9007199254740991,"
         "\"description\":\"only events after "
         "this id\"},"
         "\"service_id\":" ID_S(
             "only this service's") ",\"kind\":{\"type\":\"string\",\"maxLength\":200,"
                                    "\"description\":\"a kind or a comma list (state, spawn, "
                                    "exit, restart, gate, watchdog, footprint, reload, "
                                    "switch.phase, router.activation, canary, "
                                    "tune)\"},\"limit\":" LIMIT_S,
         ""),
     false, false, false, tool_events},
    {"bench_results", "Benchmark results",
     "The newest gpumod bench results the daemon keeps (summaries).",
     OBJ("\"service_id\":" ID_S("only this service's") ",\"limit\":" LIMIT_S, ""), false, false,
     false, tool_bench_results},
    {"eval_results", "Quality results",
     "The newest gpumod eval results the daemon keeps (accuracy with intervals).",
     OBJ("\"service_id\":" ID_S("only this service's") ",\"limit\":" LIMIT_S, ""), false, false,
     false, tool_eval_results},
    {"service_logs", "Service log tail",
     "The last lines of a service's output, with secret values redacted.",
     OBJ("\"service_id\":" ID_S("the service") ",\"lines\":" LIMIT_S, "\"service_id\""), false,
     false, false, tool_service_logs},
    {"switch_status", "Mode switch status",
     "One mode switch from the journal: its phases, outcome and, once it has ended, its "
     "result.",
     OBJ("\"switch_id\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":9007199254740991,"
         "\"description\":\"the id "
         "switch_mode returned\"}",
         "\"switch_id\""),
     false, false, false, tool_switch_status},
    {"switch_mode", "Switch mode",
     "Switch the host to a mode as one transaction: stop what the mode does not run, verify "
     "the memory is free, "
     "start what it runs (each through the gate), or roll back. Takes as long as the loads "
     "(minutes for large "
     "models): sends progress when given a progressToken; wait=false answers the switch id at "
     "once "
     "(then switch_status).",
     OBJ("\"mode_id\":" ID_S(
             "the mode (\\\"none\\\" stops everything)") ",\"wait\":{\"type\":\"boolean\","
                                                         "\"description\":\"wait for the end "
                                                         "(default "
                                                         "true)\"},\"timeout_s\":{\"type\":"
                                                         "\"number\",\"minimum\":1,"
                                                         "\"maximum\":86400,\"description\":"
                                                         "\"the switch's timeout (default: the "
                                                         "daemon's switch.timeout)\"}",
         "\"mode_id\""),
     true, true, true, tool_switch_mode},
    {"start_service", "Start a service",
     "Start one service through the gate (refused when it would not fit, with the reason), "
     "wait until it is "
     "ready unless wait=false.",
     OBJ("\"service_id\":" ID_S(
             "the service") ",\"wait\":{\"type\":\"boolean\",\"description\":\"wait until "
                            "ready (default true)\"}",
         "\"service_id\""),
     true, false, true, tool_start_service},
    {"stop_service", "Stop a service", "Stop one service and wait until its memory is really free.",
     OBJ("\"service_id\":" ID_S("the service"), "\"service_id\""), true, true, true,
     tool_stop_service},
    {"search_hf_models", "Search GGUF models on the Hub",
     "GGUF repositories on the Hugging Face Hub (the hf_endpoint setting or HF_ENDPOINT), most "
     "downloaded first: id, author, downloads, likes, tags, pipeline tag, gated, last modified. "
     "search is a substring of the repository id; task narrows to code, chat, embed or "
     "reasoning models. Then list_gguf_files on a result.",
     OBJ("\"search\":{\"type\":\"string\",\"maxLength\":200,\"description\":\"a substring of the "
         "repository id\"},\"author\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":96,"
         "\"description\":\"only this organisation's or user's repositories\"},\"task\":{"
         "\"type\":\"string\",\"enum\":[\"code\",\"chat\",\"embed\",\"reasoning\"],"
         "\"description\":\"the kind of model\"},\"limit\":{\"type\":\"integer\",\"minimum\":1,"
         "\"maximum\":100,\"description\":\"how many (default 20)\"}",
         ""),
     false, false, false, tool_search_hf_models, mcp_check_search_args, true, false},
    {"list_gguf_files", "GGUF files of a repository, with what each needs here",
     "Every GGUF model of a Hub repository (split files grouped): size, quantisation, the "
     "memory estimate at the default context from its header (read with range requests, no "
     "download), whether it fits this host now and alone, and the largest context that fits. "
     "vram_budget_mb marks the files whose GPU need is within it (fits_budget, gpu_need_mb).",
     OBJ("\"repo_id\":" REPO_S ",\"vram_budget_mb\":{\"type\":\"integer\",\"minimum\":1,"
         "\"maximum\":16777216,\"description\":\"a GPU memory budget in MiB\"}",
         "\"repo_id\""),
     false, false, false, tool_list_gguf_files, mcp_check_repo_args, true, false},
    {"fetch_model_config", "A repository's config.json",
     "The model's config.json on the Hub summed up: architectures, model type, parameters, "
     "mixture of experts and how many, context length, vocabulary, hidden size, layers, "
     "attention and KV heads, dtype. GGUF-only repositories often have none (an error says "
     "so).",
     OBJ("\"repo_id\":" REPO_S, "\"repo_id\""), false, false, false, tool_fetch_model_config,
     mcp_check_repo_args, true, false},
    {"generate_preset", "Draft a preset for a Hub GGUF file",
     "The preset YAML `gpumod preset new --from hf:REPO/FILE` would write for this host (a "
     "free port, the context and GPU layers that fit), returned as text: nothing is written "
     "and nothing is downloaded.",
     OBJ("\"repo_id\":" REPO_S ",\"gguf_file\":{\"type\":\"string\",\"minLength\":6,"
         "\"maxLength\":1024,\"description\":\"the .gguf path inside the repository (the first "
         "part of a split model)\"},\"context_size\":{\"type\":\"integer\",\"minimum\":512,"
         "\"maximum\":262144,\"description\":\"the context size (default: the largest that "
         "fits, up to the model's)\"},\"service_id\":" ID_S("the preset's id (default: from the "
                                                            "file name)"),
         "\"repo_id\",\"gguf_file\""),
     false, false, false, tool_generate_preset, mcp_check_preset_args, true, false},
    {"pull_model", "Download a GGUF model",
     "Download one GGUF model of a Hub repository (a single file, or every part of a split "
     "model) into the models directory: resumable, free disk checked first, SHA-256 verified. "
     "A repository holding several models needs `file`; the answer lists the files, their "
     "paths and whether each was verified. Offered only when gpumod mcp runs with "
     "--allow-pull.",
     OBJ("\"repo_id\":" REPO_S ",\"file\":{\"type\":\"string\",\"minLength\":6,\"maxLength\":"
         "1024,\"description\":\"the .gguf path inside the repository (the first part of a "
         "split model); needed when the repository holds more than one model\"}",
         "\"repo_id\""),
     true, false, true, tool_pull_model, mcp_check_pull_args, true, true},
    {NULL, NULL, NULL, NULL, false, false, false, NULL, NULL, false, false},
};

const tool_def *tool_find(const char *name)
{
    for (const tool_def *t = mcp_tools; t->name; t++)
        if (!strcmp(t->name, name)) return t;
    return NULL;
}

void tout_error(tool_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(o->error);
    o->error = xvasprintf(fmt, ap);
    va_end(ap);
}

static cJSON *annotations(const tool_def *t)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "title", t->title);
    cJSON_AddBoolToObject(a, "readOnlyHint", !t->mutating);
    if (t->mutating) {
        cJSON_AddBoolToObject(a, "destructiveHint", t->destructive);
        cJSON_AddBoolToObject(a, "idempotentHint", t->idempotent);
    }
    cJSON_AddBoolToObject(a, "openWorldHint", t->hub);
    return a;
}

cJSON *tools_list(mcp_server *s)
{
    cJSON *r = cJSON_CreateObject();
    cJSON *a = cJSON_AddArrayToObject(r, "tools");
    for (const tool_def *t = mcp_tools; t->name; t++) {
        if ((t->mutating && s->read_only) || (t->pull_only && !s->allow_pull)) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", t->name);
        if (mcp_v2025_06(s)) cJSON_AddStringToObject(o, "title", t->title);
        cJSON_AddStringToObject(o, "description", t->description);
        cJSON *sch = cJSON_Parse(t->schema);
        if (!sch) abort(); /* test_mcp_schema parses every schema */
        cJSON_AddItemToObject(o, "inputSchema", sch);
        if (strcmp(s->version, "2024-11-05"))
            cJSON_AddItemToObject(o, "annotations", annotations(t));
        cJSON_AddItemToArray(a, o);
    }
    return r;
}
