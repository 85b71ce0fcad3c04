/* tread.c - the tools that only read: each one request (or two) to the
 * daemon's control API, its answer handed back as it came (see
 * docs/api.md for every field) with the error told for a person. */
#include "mcp/tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"
#include "mcp/dcall.h"
#include "util/buf.h"

static const char *arg_str(const tool_ctx *c, const char *key)
{
    return jstr(c->args, key);
}

static long arg_int(const tool_ctx *c, const char *key, long dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->args, key);
    return cJSON_IsNumber(v) ? (long)v->valuedouble : dflt;
}

/* GET target into o->value (the object), or the error */
static cJSON *get(tool_ctx *c, const char *target, tool_out *o)
{
    cJSON *j;
    dcall(c->srv, "GET", target, NULL, CTL_QUICK_MS, &j, o);
    return j;
}

/* GET target into o->value (o keeps the error when it failed) */
static void get_into(tool_ctx *c, const char *target, tool_out *o)
{
    cJSON *j = get(c, target, o);
    if (j) o->value = j;
}

/* An answer that is a bare array wrapped as {key: [...]} (a tool's result
 * is an object). */
static cJSON *wrap(cJSON *j, const char *key)
{
    if (!j || cJSON_IsObject(j)) return j;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, key, j);
    return o;
}

void tool_gpu_status(tool_ctx *c, tool_out *o)
{
    cJSON *st = get(c, "/status", o);
    if (!st) return;
    tool_out o2 = {0};
    cJSON *cur = get(c, "/modes/current", &o2);
    cJSON_AddItemToObject(st, "mode", cur ? cur : cJSON_CreateNull());
    free(o2.error);
    cJSON_Delete(o2.value);
    o->value = st;
}

void tool_list_services(tool_ctx *c, tool_out *o)
{
    cJSON *j = get(c, "/services", o);
    if (j) o->value = wrap(j, "services");
}

void tool_list_modes(tool_ctx *c, tool_out *o)
{
    cJSON *m = get(c, "/modes", o);
    if (!m) return;
    tool_out o2 = {0};
    cJSON *cur = get(c, "/modes/current", &o2);
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(cur, "switching");
    cJSON_AddItemToObject(m, "switching", sw ? cJSON_Duplicate(sw, 1) : cJSON_CreateNull());
    cJSON_Delete(cur);
    free(o2.error);
    cJSON_Delete(o2.value);
    o->value = m;
}

void tool_service_info(tool_ctx *c, tool_out *o)
{
    char *id = dc_escape(arg_str(c, "service_id"));
    char *t = xasprintf("/services/%s", id);
    get_into(c, t, o);
    free(t);
    free(id);
}

static void copy_arg(const tool_ctx *c, cJSON *body, const char *from, const char *to)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->args, from);
    if (v) cJSON_AddItemToObject(body, to, cJSON_Duplicate(v, 1));
}

/* POST target with body (taken) into o */
static void post(tool_ctx *c, const char *target, cJSON *body, int64_t timeout_ms, tool_out *o)
{
    char *b = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    cJSON *j;
    dcall(c->srv, "POST", target, b, timeout_ms, &j, o);
    free(b);
    if (j) o->value = j;
}

void tool_simulate_mode(tool_ctx *c, tool_out *o)
{
    cJSON *body = cJSON_CreateObject();
    copy_arg(c, body, "mode_id", "mode");
    cJSON_AddBoolToObject(body, "dry_run", true);
    copy_arg(c, body, "add_services", "add_services");
    copy_arg(c, body, "remove_services", "remove_services");
    copy_arg(c, body, "context_overrides", "context_overrides");
    post(c, "/modes/switch", body, 30000, o);
}

void tool_preflight(tool_ctx *c, tool_out *o)
{
    const char *svc = arg_str(c, "service_id"), *mname = arg_str(c, "mode_id");
    if (!svc == !mname) {
        tout_error(o, "preflight: give exactly one of service_id (a service's start) or mode_id (a "
                      "whole mode)");
        return;
    }
    if (mname && cJSON_GetObjectItemCaseSensitive(c->args, "overrides")) {
        tout_error(o, "preflight: overrides apply to a service's start, not to a mode");
        return;
    }
    cJSON *body = cJSON_CreateObject();
    copy_arg(c, body, svc ? "service_id" : "mode_id", svc ? "service" : "mode");
    copy_arg(c, body, "overrides", "overrides");
    post(c, "/preflight", body, 30000, o);
}

static void query_str(buf *q, const char *key, const char *v)
{
    if (!v) return;
    char *e = dc_escape(v);
    buf_printf(q, "%c%s=%s", q->len ? '&' : '?', key, e);
    free(e);
}

void tool_events(tool_ctx *c, tool_out *o)
{
    buf q = BUF_INIT;
    long since = arg_int(c, "since", -1), limit = arg_int(c, "limit", 100);
    if (since >= 0) buf_printf(&q, "?since=%ld", since);
    buf_printf(&q, "%climit=%ld", q.len ? '&' : '?', limit);
    query_str(&q, "service", arg_str(c, "service_id"));
    query_str(&q, "kind", arg_str(c, "kind"));
    char *t = xasprintf("/events%s", q.p);
    get_into(c, t, o);
    free(t);
    buf_release(&q);
}

/* The newest `limit` results of the kinds wanted (NULL: bench's). */
static void results(tool_ctx *c, tool_out *o, const char *kind)
{
    long limit = arg_int(c, "limit", 5);
    buf q = BUF_INIT;
    /* bench has three kinds (load, ctx_sweep, switch): ask for more and keep its */
    buf_printf(&q, "?n=%ld", kind ? limit : (limit * 4 > 1000 ? 1000 : limit * 4));
    query_str(&q, "service", arg_str(c, "service_id"));
    query_str(&q, "kind", kind);
    char *t = xasprintf("/results%s", q.p);
    cJSON *j = get(c, t, o);
    free(t);
    buf_release(&q);
    if (!j) return;
    cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "results");
    long kept = 0;
    for (cJSON *r = list ? list->child : NULL, *next; r; r = next) {
        next = r->next;
        const char *k = jstr(r, "kind");
        bool bench = k && (!strcmp(k, "load") || !strcmp(k, "ctx_sweep") || !strcmp(k, "switch"));
        if ((!kind && !bench) || kept >= limit)
            cJSON_Delete(cJSON_DetachItemViaPointer(list, r));
        else
            kept++;
    }
    o->value = j;
}

void tool_bench_results(tool_ctx *c, tool_out *o)
{
    results(c, o, NULL);
}

void tool_eval_results(tool_ctx *c, tool_out *o)
{
    results(c, o, "eval");
}

void tool_service_logs(tool_ctx *c, tool_out *o)
{
    char *id = dc_escape(arg_str(c, "service_id"));
    char *t = xasprintf("/services/%s/logs?n=%ld", id, arg_int(c, "lines", 50));
    get_into(c, t, o); /* the daemon redacts secret values (docs/api.md) */
    free(t);
    free(id);
}

void tool_switch_status(tool_ctx *c, tool_out *o)
{
    char *t = xasprintf("/switches/%ld", arg_int(c, "switch_id", 0));
    get_into(c, t, o);
    free(t);
}
