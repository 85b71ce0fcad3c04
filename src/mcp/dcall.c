/* dcall.c - the daemon's answers as tool results (see dcall.h). */
#include "mcp/dcall.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"
#include "util/buf.h"

static void http_failed(const http_reply *r, cJSON *j, tool_out *o)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    const char *msg = jstr(e, "message"), *code = jstr(e, "code");
    if (msg)
        tout_error(o, "%s (%s, HTTP %d)", msg, code ? code : "error", r->status);
    else
        tout_error(o, "the daemon answered HTTP %d: %.300s", r->status, r->body.p);
    cJSON *v = cJSON_CreateObject();
    cJSON_AddNumberToObject(v, "status", r->status);
    cJSON_AddItemToObject(v, "error", e ? cJSON_Duplicate(e, 1) : cJSON_CreateNull());
    cJSON_Delete(o->value);
    o->value = v;
}

int dcall(mcp_server *s, const char *method, const char *target, const char *body,
          int64_t timeout_ms, cJSON **out, tool_out *o)
{
    http_reply r;
    char msg[1024];
    *out = NULL;
    int rc = ctl_request(&s->paths, method, target, body, timeout_ms, &r, msg, sizeof msg);
    if (rc) {
        tout_error(o,
                   "the gpumod daemon did not answer: %s (this server keeps running and tries "
                   "again on the "
                   "next call)",
                   msg);
        http_reply_release(&r);
        return 0;
    }
    cJSON *j = cJSON_ParseWithLength(r.body.p, r.body.len);
    int status = r.status;
    if (status < 200 || status > 299) {
        http_failed(&r, j, o);
        cJSON_Delete(j);
    } else if (!j) {
        tout_error(o, "%s %s: the daemon's answer is not JSON (HTTP %d)", method, target, status);
    } else {
        *out = j;
    }
    http_reply_release(&r);
    return status;
}

char *dc_escape(const char *s)
{
    buf b = BUF_INIT;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p))
            buf_addc(&b, (char)*p);
        else
            buf_printf(&b, "%%%02X", *p);
    }
    return buf_detach(&b);
}
