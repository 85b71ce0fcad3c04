/* tmodel.c - the model_info tool: a GGUF file's metadata and the
 * estimate of what llama-server takes at a context (model/mjson.h, the
 * same JSON as `gpumod --json model inspect`), for a path on this host or
 * for a service's model; for a service also the daemon's own need (POST
 * /preflight: measured, else estimated with its preset's flags), which
 * is what the gate counts. */
#include "mcp/tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"
#include "config/config.h"
#include "mcp/dcall.h"
#include "model/mjson.h"

/* The GGUF file described and estimated at ctx (0: the estimator's
 * default), or NULL with the error in o. */
static cJSON *inspect(const char *file, int64_t ctx, tool_out *o)
{
    gguf_file g;
    char err[512];
    if (gguf_open(&g, file, err, sizeof err)) {
        tout_error(o, "model_info: %s", err);
        return NULL;
    }
    model_summary m;
    if (model_describe(&g, &m, err, sizeof err)) {
        tout_error(o, "model_info: '%s': %s", file, err);
        gguf_release(&g);
        return NULL;
    }
    est_params ep;
    est_params_default(&ep);
    ep.ndev = 1;
    if (ctx > 0) ep.ctx = ctx;
    estimate e;
    char eerr[512] = "";
    int erc = estimate_llamacpp(&g, &ep, &e, eerr, sizeof eerr);
    buf b = BUF_INIT;
    model_inspect_json(&b, file, &g, &m, &ep, erc ? NULL : &e, eerr);
    gguf_release(&g);
    cJSON *j = cJSON_Parse(b.p);
    buf_release(&b);
    if (!j) tout_error(o, "model_info: '%s': the description could not be built", file);
    return j;
}

/* The daemon's need for the service (at ctx when given), into r. */
static void daemon_need(tool_ctx *c, const char *id, int64_t ctx, cJSON *r)
{
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "service", id);
    if (ctx > 0)
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(body, "overrides"), "context_size",
                                (double)ctx);
    char *b = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    cJSON *j;
    tool_out o = {0};
    dcall(c->srv, "POST", "/preflight", b, 30000, &j, &o);
    free(b);
    cJSON *need = j ? cJSON_DetachItemFromObjectCaseSensitive(j, "need") : NULL;
    cJSON_AddItemToObject(r, "need", need ? need : cJSON_CreateNull());
    if (o.error) cJSON_AddStringToObject(r, "need_error", o.error);
    cJSON_Delete(j);
    free(o.error);
    cJSON_Delete(o.value);
}

static void service_model(tool_ctx *c, const char *id, int64_t ctx, tool_out *o)
{
    char *e = dc_escape(id);
    char *t = xasprintf("/services/%s", e);
    cJSON *svc;
    dcall(c->srv, "GET", t, NULL, CTL_QUICK_MS, &svc, o);
    free(t);
    free(e);
    if (!svc) return;
    cJSON_Delete(svc);
    config cfg;
    config_load_preset(&cfg, &c->srv->paths, id);
    const preset *p = config_preset(&cfg, id);
    cJSON *r = NULL;
    if (!p || !p->model_path) {
        r = cJSON_CreateObject();
        cJSON_AddItemToObject(r, "model", cJSON_CreateNull());
        cJSON_AddStringToObject(r, "note",
                                p ? "the service's preset names no model file (only a model id)"
                                  : "the service's preset could not be read here");
    } else {
        r = inspect(p->model_path, ctx > 0 ? ctx : p->context_size, o);
    }
    if (r) {
        cJSON_AddStringToObject(r, "service_id", id);
        daemon_need(c, id, ctx, r);
        o->value = r;
    }
    config_release(&cfg);
}

void tool_model_info(tool_ctx *c, tool_out *o)
{
    const char *id = jstr(c->args, "model_id");
    const cJSON *cx = cJSON_GetObjectItemCaseSensitive(c->args, "ctx");
    int64_t ctx = cJSON_IsNumber(cx) ? (int64_t)cx->valuedouble : 0;
    size_t n = strlen(id);
    bool gguf = n > 5 && !strcmp(id + n - 5, ".gguf");
    if (strchr(id, '/') && !gguf) {
        tout_error(
            o,
            "model_info: '%s' is a path but not a .gguf file (give a service id or a .gguf path)",
            id);
        return;
    }
    if (gguf) {
        o->value = inspect(id, ctx, o);
        return;
    }
    service_model(c, id, ctx, o);
}
