/* store.c (oai) - a helper's result sent to the daemon (POST /results), which keeps
 * the newest ones in its state database (docs/api.md "Results").
 *
 * The socket is found exactly as every CLI command finds it (client/ctl.c:
 * GPUMOD_SOCKET, else the `socket` of gpumod.yaml under GPUMOD_CONFIG_DIR,
 * else the default); `gpumod bench` passes its global options down as
 * those variables.  No daemon is not an error: bench works without one. */
#include "oai/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"
#include "net/client.h"

int bstore_post(const cJSON *result, int64_t timeout_ms, int64_t *id, char *err, size_t errlen)
{
    if (id) *id = 0;
    /* the raw requests (--raw) stay in the user's file: the daemon would
     * drop them anyway, and they are most of a large document's bytes */
    cJSON *doc = cJSON_Duplicate(result, true);
    cJSON *pt;
    cJSON_ArrayForEach(pt, cJSON_GetObjectItemCaseSensitive(doc, "points"))
    {
        cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(pt, "iterations"))
            if (cJSON_IsObject(it)) cJSON_DeleteItemFromObjectCaseSensitive(it, "requests");
    }
    char *body = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    config_paths paths = {0};
    char *sock = ctl_socket_path(&paths);
    http_reply r;
    char e[512];
    int rc = http_request(sock, "POST", "/results", "application/json", body, strlen(body), timeout_ms, &r, e,
                          sizeof e);
    free(body);
    int out = -1;
    if (rc == HTTPC_E_CONNECT && strstr(e, "daemon unreachable")) {
        out = 1; /* nothing listens: nothing to do */
    } else if (rc != HTTPC_OK) {
        snprintf(err, errlen, "storing the result in the daemon (socket %s): %s", sock, e);
    } else if (r.status != 201) {
        cJSON *j = cJSON_ParseWithLength(r.body.p, r.body.len);
        const cJSON *ej = cJSON_GetObjectItemCaseSensitive(j, "error");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(ej, "message");
        snprintf(err, errlen, "the daemon did not store the result: HTTP %d: %s", r.status,
                 cJSON_IsString(msg) ? msg->valuestring : "(no error message)");
        cJSON_Delete(j);
    } else {
        cJSON *j = cJSON_ParseWithLength(r.body.p, r.body.len);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "id");
        if (cJSON_IsNumber(v) && v->valuedouble >= 1) {
            if (id) *id = (int64_t)v->valuedouble;
            out = 0;
        } else {
            snprintf(err, errlen, "the daemon stored the result but its answer has no id: %.100s", r.body.p);
        }
        cJSON_Delete(j);
    }
    http_reply_release(&r);
    free(sock);
    return out;
}
