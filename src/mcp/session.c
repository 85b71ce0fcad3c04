/* session.c - the methods of an MCP session but tools/call: initialize
 * (the version negotiated), ping, the lists, resources/read and the
 * subscriptions, the notifications; a batch (protocol 2025-03-26 only).
 *
 *   initialize -> the newest version when the client's is not spoken
 *   anything but initialize and ping before it -> -32600
 *   an unknown method -> -32601; params of the wrong shape -> -32602
 *   a notification is never answered, not even when it is wrong
 *   a response from the client (we send no requests) is dropped */
#include "mcp/server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/resources.h"
#include "mcp/rpc.h"
#include "mcp/tools.h"
#include "util/buf.h"

static const char *const versions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

static const char instructions[] =
    "gpumod owns this host's GPU inference servers (llama.cpp, vLLM). Read the host with "
    "gpu_status, "
    "list_services and list_modes; ask simulate_mode or preflight before changing anything: they "
    "say what "
    "would stop, what would start and whether it fits in memory. switch_mode, start_service and "
    "stop_service change the host; every start passes the gate, which refuses what would not fit.";

static void reply(mcp_server *s, const cJSON *id, cJSON *result, buf *batch)
{
    char *l = rpc_result(id, result);
    if (batch) {
        buf_printf(batch, "%s%s", batch->len ? "," : "", l);
        free(l);
    } else {
        mcp_send(s, l);
    }
}

static void fail(mcp_server *s, const cJSON *id, int code, const char *msg, buf *batch)
{
    char *l = rpc_error(id, code, msg, NULL);
    if (batch) {
        buf_printf(batch, "%s%s", batch->len ? "," : "", l);
        free(l);
    } else {
        mcp_send(s, l);
    }
}

static cJSON *initialize(mcp_server *s, const cJSON *params, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
    if (!cJSON_IsString(v)) {
        snprintf(err, errlen, "initialize: params.protocolVersion must be a string (e.g. \"%s\")",
                 MCP_VERSION_LATEST);
        return NULL;
    }
    const char *use = MCP_VERSION_LATEST;
    for (size_t i = 0; i < sizeof versions / sizeof *versions; i++)
        if (!strcmp(v->valuestring, versions[i])) use = versions[i];
    pthread_mutex_lock(&s->mu);
    snprintf(s->version, sizeof s->version, "%s", use);
    s->initialized = true;
    pthread_mutex_unlock(&s->mu);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "protocolVersion", use);
    cJSON *caps = cJSON_AddObjectToObject(r, "capabilities");
    cJSON_AddBoolToObject(cJSON_AddObjectToObject(caps, "tools"), "listChanged", false);
    cJSON *res = cJSON_AddObjectToObject(caps, "resources");
    cJSON_AddBoolToObject(res, "subscribe", s->events); /* --no-events: nothing would fire */
    cJSON_AddBoolToObject(res, "listChanged", false);
    cJSON *info = cJSON_AddObjectToObject(r, "serverInfo");
    cJSON_AddStringToObject(info, "name", "gpumod");
    if (mcp_v2025_06(s)) cJSON_AddStringToObject(info, "title", "gpumod: GPU service manager");
    cJSON_AddStringToObject(info, "version", GPUMOD_VERSION);
    cJSON_AddStringToObject(r, "instructions", instructions);
    return r;
}

/* A cursor: we never hand one out, so any is invalid. */
static bool cursor_ok(const cJSON *params, const char *method, char *err, size_t errlen)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(params, "cursor");
    if (!c || cJSON_IsNull(c)) return true;
    snprintf(err, errlen,
             "%s: invalid cursor (this server returns every item at once and gives no cursor)",
             method);
    return false;
}

static void subscribe(mcp_server *s, const cJSON *id, const cJSON *params, bool on, buf *batch)
{
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(params, "uri");
    char err[512];
    if (!cJSON_IsString(u)) {
        fail(s, id, RPC_INVALID_PARAMS, "resources/subscribe: params.uri must be a string", batch);
        return;
    }
    if (!resource_uri_known(u->valuestring, err, sizeof err)) {
        fail(s, id, RPC_RESOURCE_NOT_FOUND, err, batch);
        return;
    }
    pthread_mutex_lock(&s->mu);
    int at = strv_find(&s->subs, u->valuestring);
    if (on && at < 0 && s->subs.n < 256) strv_push(&s->subs, u->valuestring);
    if (!on && at >= 0) {
        free(s->subs.v[at]);
        memmove(&s->subs.v[at], &s->subs.v[at + 1], (s->subs.n - (size_t)at) * sizeof *s->subs.v);
        s->subs.n--;
    }
    pthread_mutex_unlock(&s->mu);
    reply(s, id, cJSON_CreateObject(), batch);
}

static void read_resource(mcp_server *s, const cJSON *id, const cJSON *params, buf *batch)
{
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(params, "uri");
    if (!cJSON_IsString(u)) {
        fail(s, id, RPC_INVALID_PARAMS, "resources/read: params.uri must be a string", batch);
        return;
    }
    char err[1024];
    int code = 0;
    cJSON *r = resource_read(s, u->valuestring, &code, err, sizeof err);
    if (r)
        reply(s, id, r, batch);
    else
        fail(s, id, code, err, batch);
}

/* A request (with id) once the session is initialized. */
static void request(mcp_server *s, const char *m, const cJSON *id, const cJSON *params, buf *batch)
{
    char err[512];
    if (!strcmp(m, "tools/list") || !strcmp(m, "resources/list") ||
        !strcmp(m, "resources/templates/list")) {
        if (!cursor_ok(params, m, err, sizeof err)) {
            fail(s, id, RPC_INVALID_PARAMS, err, batch);
            return;
        }
        cJSON *r = !strcmp(m, "tools/list")       ? tools_list(s)
                   : !strcmp(m, "resources/list") ? resources_list(s)
                                                  : resources_templates(s);
        {
            reply(s, id, r, batch);
            return;
        }
    }
    if (!strcmp(m, "tools/call")) {
        if (batch) {
            fail(s, id, RPC_INVALID_REQUEST, "tools/call cannot be part of a batch here", batch);
            return;
        }
        {
            tools_call(s, id, params);
            return;
        }
    }
    if (!strcmp(m, "resources/read")) {
        read_resource(s, id, params, batch);
        return;
    }
    if (!strcmp(m, "resources/subscribe")) {
        subscribe(s, id, params, true, batch);
        return;
    }
    if (!strcmp(m, "resources/unsubscribe")) {
        subscribe(s, id, params, false, batch);
        return;
    }
    snprintf(err, sizeof err, "method not found: '%.100s' (this server offers tools and resources)",
             m);
    fail(s, id, RPC_METHOD_NOT_FOUND, err, batch);
}

static void notification(mcp_server *s, const char *m, const cJSON *params)
{
    if (!strcmp(m, "notifications/cancelled")) {
        const cJSON *rid = cJSON_GetObjectItemCaseSensitive(params, "requestId");
        if (rid && (cJSON_IsString(rid) || cJSON_IsNumber(rid))) mcp_call_cancel(s, rid);
    }
    /* notifications/initialized, progress, roots/list_changed: nothing to do */
}

static void one(mcp_server *s, rpc_msg *msg, buf *batch)
{
    char err[512];
    if (msg->kind == RPC_BAD && msg->no_reply) {
        fprintf(stderr, "gpumod-mcp: dropped a message that is answered to nobody: %s\n", msg->message);
        return;
    }
    if (msg->kind == RPC_BAD) {
        fail(s, msg->id, msg->code, msg->message, batch);
        return;
    }
    if (msg->kind == RPC_RESPONSE) return; /* we send no requests */
    if (msg->kind == RPC_NOTIFICATION) {
        notification(s, msg->method, msg->params);
        return;
    }
    const char *m = msg->method;
    if (!strcmp(m, "ping")) {
        reply(s, msg->id, cJSON_CreateObject(), batch);
        return;
    }
    if (!strcmp(m, "initialize")) {
        if (s->initialized) {
            fail(s, msg->id, RPC_INVALID_REQUEST, "initialize: already initialized", batch);
            return;
        }
        if (batch) {
            fail(s, msg->id, RPC_INVALID_REQUEST, "initialize cannot be part of a batch", batch);
            return;
        }
        cJSON *r = initialize(s, msg->params, err, sizeof err);
        if (r)
            reply(s, msg->id, r, batch);
        else
            fail(s, msg->id, RPC_INVALID_PARAMS, err, batch);
        return;
    }
    if (!s->initialized) {
        fail(s, msg->id, RPC_INVALID_REQUEST,
             "the session is not initialized: send initialize first", batch);
        return;
    }
    request(s, m, msg->id, msg->params, batch);
}

static void run_batch(mcp_server *s, cJSON *arr)
{
    if (!s->initialized || strcmp(s->version, "2025-03-26")) {
        mcp_send(s, rpc_error(NULL, RPC_INVALID_REQUEST,
                              "invalid request: a batch (JSON array) is only taken in protocol "
                              "version 2025-03-26",
                              NULL));
        cJSON_Delete(arr);
        return;
    }
    if (!cJSON_GetArraySize(arr)) {
        mcp_send(s, rpc_error(NULL, RPC_INVALID_REQUEST, "invalid request: an empty batch", NULL));
        cJSON_Delete(arr);
        return;
    }
    buf out = BUF_INIT;
    while (arr->child) {
        rpc_msg m;
        rpc_classify(cJSON_DetachItemViaPointer(arr, arr->child), &m);
        one(s, &m, &out);
        rpc_msg_release(&m);
    }
    cJSON_Delete(arr);
    if (out.len) mcp_send(s, xasprintf("[%s]", out.p));
    buf_release(&out);
}

void mcp_handle_line(mcp_server *s, const char *line, size_t len)
{
    rpc_msg m;
    cJSON *batch;
    if (rpc_parse_line(line, len, &m, &batch)) {
        run_batch(s, batch);
        return;
    }
    one(s, &m, NULL);
    rpc_msg_release(&m);
}
