/* tcall.c - tools/call: the checks a call passes before its tool runs
 * (the tool exists and is offered, the arguments meet its schema, a
 * mutating tool's rate limit), the tool on a thread of its own, and its
 * result: the JSON as text content (and as structuredContent from
 * protocol 2025-06-18 on), every string sanitised; isError with the
 * message when the tool failed; nothing at all when the caller cancelled
 * the call (MCP: a cancelled request is not answered). */
#include "mcp/tools.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/rpc.h"
#include "mcp/sanitize.h"
#include "mcp/schema.h"
#include "util/clock.h"

typedef struct job {
    mcp_server *srv;
    const tool_def *tool;
    cJSON *id, *args, *progress;
    mcp_call *call;
} job;

static cJSON *result_of(mcp_server *s, tool_out *o)
{
    /* clean before the text is printed from it: an escape in a string
     * would otherwise reach the text content as \u001b */
    sanitize_json(o->value);
    cJSON *r = cJSON_CreateObject();
    cJSON *content = cJSON_AddArrayToObject(r, "content");
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "type", "text");
    if (o->error) {
        cJSON_AddStringToObject(t, "text", o->error);
    } else {
        char *txt = cJSON_PrintUnformatted(o->value);
        cJSON_AddStringToObject(t, "text", txt ? txt : "null");
        free(txt);
    }
    cJSON_AddItemToArray(content, t);
    /* structuredContent is an object: a tool's value always is one */
    if (mcp_v2025_06(s) && cJSON_IsObject(o->value)) {
        cJSON_AddItemToObject(r, "structuredContent", o->value);
        o->value = NULL;
    }
    cJSON_AddBoolToObject(r, "isError", o->error != NULL);
    sanitize_json(r);
    return r;
}

static void *run_job(void *arg)
{
    job *j = arg;
    tool_out o = {0};
    tool_ctx c = {.srv = j->srv, .args = j->args, .progress = j->progress, .call = j->call};
    j->tool->run(&c, &o);
    if (!o.error && !o.value) tout_error(&o, "%s: the tool gave no result", j->tool->name);
    cJSON *r = result_of(j->srv, &o);
    if (j->call->cancelled)
        cJSON_Delete(r);
    else
        mcp_send(j->srv, rpc_result(j->id, r));
    free(o.error);
    cJSON_Delete(o.value);
    mcp_call_end(j->srv, j->call);
    cJSON_Delete(j->id);
    cJSON_Delete(j->args);
    cJSON_Delete(j->progress);
    free(j);
    return NULL;
}

/* An isError result at once (the rate limit, too many calls). */
static void refuse(mcp_server *s, const cJSON *id, const char *msg)
{
    tool_out o = {0};
    tout_error(&o, "%s", msg);
    mcp_send(s, rpc_result(id, result_of(s, &o)));
    free(o.error);
}

static const tool_def *offered(mcp_server *s, const cJSON *params, char *err, size_t errlen)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
    if (!cJSON_IsString(name)) {
        snprintf(err, errlen,
                 "tools/call: params.name must be a string (a tool's name from tools/list)");
        return NULL;
    }
    const tool_def *t = tool_find(name->valuestring);
    if (t && t->mutating && s->read_only) {
        snprintf(err, errlen,
                 "tools/call: the tool '%s' is not offered: this server runs --read-only", t->name);
        return NULL;
    }
    if (t && t->pull_only && !s->allow_pull) {
        snprintf(err, errlen,
                 "tools/call: the tool '%s' is not offered: downloads are allowed only when gpumod "
                 "mcp runs with --allow-pull",
                 t->name);
        return NULL;
    }
    if (!t)
        snprintf(err, errlen, "tools/call: unknown tool '%.100s' (tools/list names them)",
                 name->valuestring);
    return t;
}

static bool args_ok(const tool_def *t, const cJSON *args, char *err, size_t errlen)
{
    if (args && !cJSON_IsObject(args) && !cJSON_IsNull(args)) {
        snprintf(err, errlen, "tools/call %s: params.arguments must be an object", t->name);
        return false;
    }
    cJSON *schema = cJSON_Parse(t->schema);
    cJSON *empty = cJSON_CreateObject();
    char e[400];
    int rc = schema_check(schema, cJSON_IsObject(args) ? args : empty, "arguments", e, sizeof e);
    cJSON_Delete(schema);
    cJSON_Delete(empty);
    if (rc) snprintf(err, errlen, "tools/call %s: %s", t->name, e);
    if (!rc && t->check && t->check(cJSON_IsObject(args) ? args : NULL, e, sizeof e)) {
        snprintf(err, errlen, "tools/call %s: arguments: %s", t->name, e);
        rc = -1;
    }
    return !rc;
}

static bool rate_ok(mcp_server *s, const tool_def *t, const cJSON *id)
{
    if (!t->mutating) return true;
    int64_t retry = 0;
    pthread_mutex_lock(&s->mu);
    bool ok = rate_take(&s->rate, clock_mono_ms(), &retry);
    pthread_mutex_unlock(&s->mu);
    if (!ok) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "%s: rate limit: this session may make %d changing calls a minute (gpumod mcp "
                 "--rate N); the next "
                 "one is allowed in %.1f s",
                 t->name, s->rate.max, (double)retry / 1000);
        refuse(s, id, msg);
    }
    return ok;
}

void tools_call(mcp_server *s, const cJSON *id, const cJSON *params)
{
    char err[600];
    const tool_def *t = offered(s, params, err, sizeof err);
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
    if (!t || !args_ok(t, args, err, sizeof err)) {
        mcp_send(s, rpc_error(id, RPC_INVALID_PARAMS, err, NULL));
        return;
    }
    mcp_call *call = mcp_call_begin(s, id);
    if (!call) {
        snprintf(err, sizeof err,
                 "%s: %d calls are in flight already, or one with this id: wait for one to end, "
                 "and give "
                 "each request an id of its own",
                 t->name, MCP_MAX_INFLIGHT);
        refuse(s, id, err);
        return;
    }
    if (!rate_ok(s, t, id)) {
        mcp_call_end(s, call);
        return;
    }
    if (t->mutating) {
        char *a = args ? cJSON_PrintUnformatted(args) : NULL;
        fprintf(stderr, "gpumod-mcp: tool %s %s\n", t->name, a ? a : "{}");
        free(a);
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
    job *j = xcalloc(1, sizeof *j);
    *j = (job){s,
               t,
               cJSON_Duplicate(id, 1),
               cJSON_IsObject(args) ? cJSON_Duplicate(args, 1) : cJSON_CreateObject(),
               (cJSON_IsString(tok) || cJSON_IsNumber(tok)) ? cJSON_Duplicate(tok, 1) : NULL,
               call};
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &at, run_job, j)) {
        refuse(s, id, "cannot start a thread for the call (out of resources)");
        mcp_call_end(s, call);
        cJSON_Delete(j->id);
        cJSON_Delete(j->args);
        cJSON_Delete(j->progress);
        free(j);
    }
    pthread_attr_destroy(&at);
}
