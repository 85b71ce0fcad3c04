/* rpc.c - JSON-RPC 2.0 framing for the MCP server (see rpc.h). */
#include "mcp/rpc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/sanitize.h"
#include "util/jstrict.h"

static void bad(rpc_msg *m, int code, const char *what, const char *arg)
{
    m->kind = RPC_BAD;
    m->code = code;
    snprintf(m->message, sizeof m->message, "%s%s", what, arg ? arg : "");
}

/* An id MCP accepts: a string, or a number that is an integer. */
static bool id_ok(const cJSON *id)
{
    if (cJSON_IsString(id)) return true;
    if (!cJSON_IsNumber(id)) return false;
    double d = id->valuedouble;
    return isfinite(d) && d == floor(d) && fabs(d) <= 9007199254740991.0;
}

static void classify_call(rpc_msg *m, const cJSON *method, const cJSON *params)
{
    if (!cJSON_IsString(method) || !method->valuestring[0]) {
        bad(m, RPC_INVALID_REQUEST, "invalid request: \"method\" must be a non-empty string", NULL);
        return;
    }
    if (params && !cJSON_IsObject(params)) {
        bad(m, RPC_INVALID_PARAMS, "invalid params: \"params\" must be an object in ",
            method->valuestring);
        return;
    }
    m->method = method->valuestring;
    m->params = params;
    m->kind = m->id ? RPC_REQUEST : RPC_NOTIFICATION;
}

void rpc_classify(cJSON *v, rpc_msg *m)
{
    memset(m, 0, sizeof *m);
    m->root = v;
    if (!cJSON_IsObject(v)) {
        bad(m, RPC_INVALID_REQUEST, "invalid request: a message must be a JSON object", NULL);
        return;
    }
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(v, "jsonrpc");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(v, "id");
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(v, "method");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(v, "params");
    const cJSON *result = cJSON_GetObjectItemCaseSensitive(v, "result");
    const cJSON *error = cJSON_GetObjectItemCaseSensitive(v, "error");
    if (id && id_ok(id)) m->id = id;
    /* JSON-RPC answers neither a notification nor a response, even a bad one */
    m->no_reply = (method && !id) || (!method && (result || error));
    if (!cJSON_IsString(ver) || strcmp(ver->valuestring, "2.0")) {
        bad(m, RPC_INVALID_REQUEST, "invalid request: \"jsonrpc\" must be \"2.0\"", NULL);
        return;
    }
    if (id && !m->id) {
        bad(m, RPC_INVALID_REQUEST, "invalid request: \"id\" must be a string or an integer", NULL);
        return;
    }
    for (const cJSON *k = v->child; k; k = k->next)
        if (strcmp(k->string, "jsonrpc") && strcmp(k->string, "id") &&
            strcmp(k->string, "method") && strcmp(k->string, "params") &&
            strcmp(k->string, "result") && strcmp(k->string, "error")) {
            bad(m, RPC_INVALID_REQUEST, "invalid request: unknown member ", k->string);
            return;
        }
    if (method && (result || error)) {
        bad(m, RPC_INVALID_REQUEST,
            "invalid request: a message is a request or a response, not both", NULL);
        return;
    }
    if (result || error) {
        if (!m->id || (result && error))
            bad(m, RPC_INVALID_REQUEST,
                "invalid request: a response needs an id and one of result or error", NULL);
        else
            m->kind = RPC_RESPONSE;
        return;
    }
    if (!method) {
        bad(m, RPC_INVALID_REQUEST, "invalid request: \"method\" is missing", NULL);
        return;
    }
    classify_call(m, method, params);
}

int rpc_parse_line(const char *p, size_t len, rpc_msg *m, cJSON **batch)
{
    char err[256];
    *batch = NULL;
    cJSON *v = jstrict_parse(p, len, err, sizeof err);
    if (!v) {
        memset(m, 0, sizeof *m);
        bad(m, RPC_PARSE_ERROR, "parse error: ", err);
        return 0;
    }
    if (cJSON_IsArray(v)) {
        *batch = v;
        return 1;
    }
    rpc_classify(v, m);
    return 0;
}

void rpc_msg_release(rpc_msg *m)
{
    cJSON_Delete(m->root);
    memset(m, 0, sizeof *m);
}

static char *frame(cJSON *o)
{
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) abort();
    return s;
}

static cJSON *head(const cJSON *id)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "jsonrpc", "2.0");
    cJSON_AddItemToObject(o, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
    return o;
}

char *rpc_result(const cJSON *id, cJSON *result)
{
    cJSON *o = head(id);
    cJSON_AddItemToObject(o, "result", result ? result : cJSON_CreateObject());
    return frame(o);
}

char *rpc_error(const cJSON *id, int code, const char *message, cJSON *data)
{
    cJSON *o = head(id);
    cJSON *e = cJSON_AddObjectToObject(o, "error");
    cJSON_AddNumberToObject(e, "code", code);
    char *clean = sanitize_text(message); /* it may echo the client's bytes, cut anywhere */
    cJSON_AddStringToObject(e, "message", clean);
    free(clean);
    if (data) cJSON_AddItemToObject(e, "data", data);
    return frame(o);
}

char *rpc_notification(const char *method, cJSON *params)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "jsonrpc", "2.0");
    cJSON_AddStringToObject(o, "method", method);
    if (params) cJSON_AddItemToObject(o, "params", params);
    return frame(o);
}
