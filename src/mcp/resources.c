/* resources.c - the MCP resources, read from the daemon at each read
 * (see resources.h). */
#include "mcp/resources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"
#include "mcp/dcall.h"
#include "mcp/md.h"
#include "mcp/rpc.h"
#include "mcp/sanitize.h"
#include "util/buf.h"

typedef struct fixed_res {
    const char *uri, *name, *title, *description;
} fixed_res;

static const fixed_res fixed[] = {
    {"gpumod://status", "status", "Host status",
     "The daemon, every service's state, memory per GPU and for the host (in use, reserved, free), "
     "the load slot"},
    {"gpumod://modes", "modes", "Modes", "Every mode, its services, and which one is current"},
    {"gpumod://services", "services", "Services", "Every service: driver, state, port, footprint"},
    {"gpumod://events", "events", "Recent events", "The daemon's last 50 events, oldest first"},
};

static cJSON *res_entry(const char *uri_key, const char *uri, const char *name, const char *title,
                        const char *desc, bool titles)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, uri_key, uri);
    cJSON_AddStringToObject(r, "name", name);
    if (titles) cJSON_AddStringToObject(r, "title", title);
    cJSON_AddStringToObject(r, "description", desc);
    cJSON_AddStringToObject(r, "mimeType", "application/json");
    return r;
}

cJSON *resources_list(mcp_server *s)
{
    cJSON *r = cJSON_CreateObject();
    cJSON *a = cJSON_AddArrayToObject(r, "resources");
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        cJSON_AddItemToArray(a, res_entry("uri", fixed[i].uri, fixed[i].name, fixed[i].title,
                                          fixed[i].description, mcp_v2025_06(s)));
    return r;
}

cJSON *resources_templates(mcp_server *s)
{
    cJSON *r = cJSON_CreateObject();
    cJSON *a = cJSON_AddArrayToObject(r, "resourceTemplates");
    cJSON_AddItemToArray(a, res_entry("uriTemplate", "gpumod://modes/{id}", "mode", "A mode",
                                      "One mode: its services and their states", mcp_v2025_06(s)));
    cJSON_AddItemToArray(a,
                         res_entry("uriTemplate", "gpumod://services/{id}", "service", "A service",
                                   "One service: state, footprint, last start, restarts, log file",
                                   mcp_v2025_06(s)));
    return r;
}

/* The id after prefix in uri, when uri has that shape; NULL otherwise. */
static const char *id_after(const char *uri, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(uri, prefix, n)) return NULL;
    const char *id = uri + n;
    size_t len = strlen(id);
    if (!len || len > 128) return NULL;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("-_.", *p)))
            return NULL;
    return id;
}

bool resource_uri_known(const char *uri, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (!strcmp(uri, fixed[i].uri)) return true;
    if (id_after(uri, "gpumod://modes/") || id_after(uri, "gpumod://services/")) return true;
    snprintf(err, errlen,
             "resource not found: '%.200s' (resources: gpumod://status, gpumod://modes, "
             "gpumod://modes/{id}, "
             "gpumod://services, gpumod://services/{id}, gpumod://events)",
             uri);
    return false;
}

static cJSON *contents(const char *uri, cJSON *json, const buf *md)
{
    sanitize_json(json); /* before its text is printed */
    cJSON *r = cJSON_CreateObject();
    cJSON *a = cJSON_AddArrayToObject(r, "contents");
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "uri", uri);
    cJSON_AddStringToObject(j, "mimeType", "application/json");
    char *t = cJSON_PrintUnformatted(json);
    cJSON_AddStringToObject(j, "text", t ? t : "null");
    free(t);
    cJSON_AddItemToArray(a, j);
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "uri", uri);
    cJSON_AddStringToObject(m, "mimeType", "text/markdown");
    cJSON_AddStringToObject(m, "text", md->p);
    cJSON_AddItemToArray(a, m);
    return r;
}

/* GET target; NULL with the error set when the daemon did not answer 2xx
 * (a 404 is "not found"). */
static cJSON *get(mcp_server *s, const char *target, int *code, char *err, size_t errlen)
{
    tool_out o = {0};
    cJSON *j;
    int st = dcall(s, "GET", target, NULL, CTL_QUICK_MS, &j, &o);
    if (!j) {
        *code = st == 404 ? RPC_RESOURCE_NOT_FOUND : RPC_INTERNAL_ERROR;
        snprintf(err, errlen, "%s", o.error ? o.error : "no answer");
    }
    free(o.error);
    cJSON_Delete(o.value);
    return j;
}

static cJSON *read_mode(mcp_server *s, const char *uri, const char *id, int *code, char *err,
                        size_t errlen)
{
    cJSON *modes = get(s, "/modes", code, err, errlen);
    if (!modes) return NULL;
    cJSON *m, *hit = NULL;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(modes, "modes"))
    {
        if (jstr(m, "id") && !strcmp(jstr(m, "id"), id)) hit = m;
    }
    cJSON *r = NULL;
    if (!hit) {
        *code = RPC_RESOURCE_NOT_FOUND;
        snprintf(err, errlen, "resource not found: no mode '%s'", id);
    } else {
        cJSON *svcs = get(s, "/services", code, err, errlen);
        buf md = BUF_INIT;
        md_mode(&md, hit, svcs);
        r = contents(uri, hit, &md);
        buf_release(&md);
        cJSON_Delete(svcs);
    }
    cJSON_Delete(modes);
    return r;
}

cJSON *resource_read(mcp_server *s, const char *uri, int *code, char *err, size_t errlen)
{
    if (!resource_uri_known(uri, err, errlen)) {
        *code = RPC_RESOURCE_NOT_FOUND;
        return NULL;
    }
    const char *id;
    if ((id = id_after(uri, "gpumod://modes/"))) return read_mode(s, uri, id, code, err, errlen);
    char *target = NULL;
    if ((id = id_after(uri, "gpumod://services/")))
        target = xasprintf("/services/%s", id);
    else if (!strcmp(uri, "gpumod://status"))
        target = xstrdup("/status");
    else if (!strcmp(uri, "gpumod://modes"))
        target = xstrdup("/modes");
    else if (!strcmp(uri, "gpumod://services"))
        target = xstrdup("/services");
    else
        target = xstrdup("/events?limit=50");
    cJSON *j = get(s, target, code, err, errlen);
    free(target);
    if (!j) return NULL;
    buf md = BUF_INIT;
    if (id) {
        md_service(&md, j);
    } else if (!strcmp(uri, "gpumod://status")) {
        int c2;
        char e2[256];
        cJSON *cur = get(s, "/modes/current", &c2, e2, sizeof e2);
        md_status(&md, j, cur);
        cJSON_Delete(cur);
    } else if (!strcmp(uri, "gpumod://modes")) {
        md_modes(&md, j);
    } else if (!strcmp(uri, "gpumod://services")) {
        buf_adds(&md, "# gpumod services\n\n");
        md_services(&md, j);
    } else {
        md_events(&md, j);
    }
    cJSON *r = contents(uri, j, &md);
    buf_release(&md);
    cJSON_Delete(j);
    return r;
}
