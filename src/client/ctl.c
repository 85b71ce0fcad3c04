/* ctl.c - the client side of the control API (see ctl.h).  A `gpumod
 * status` is a short-lived process: this file keeps its cost to one small
 * file read (gpumod.yaml, only when the socket is not given) and one
 * request. */
#include "client/ctl.h"
#include "util/buf.h"
#include "util/clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Resolved once per process: a command that polls (service start) must
 * not parse gpumod.yaml on every request. */
static char *resolved_sock;

void ctl_prime_socket(const char *configured)
{
    if (resolved_sock || !configured) return;
    resolved_sock = xstrdup(configured);
}

char *ctl_socket_path(const config_paths *paths)
{
    if (paths->socket) return xstrdup(paths->socket);
    const char *env = getenv("GPUMOD_SOCKET");
    if (env && *env) return xstrdup(env);
    if (!resolved_sock) {
        config cfg;
        config_load_settings(&cfg, paths); /* an error in it still leaves the defaults */
        resolved_sock = xstrdup(cfg.set.socket);
        config_release(&cfg);
    }
    return xstrdup(resolved_sock);
}

/* The one line a failed request is told with (no "gpumod: " prefix). */
static void failure_text(char *msg, size_t len, const char *sock, const char *method, const char *target, int rc,
                         const char *err)
{
    if (rc == HTTPC_E_CONNECT && strstr(err, strerror(EACCES)))
        snprintf(msg, len,
                 "permission denied on socket %s: this user may not use the daemon's socket or a "
                 "directory above it (socket_group, docs/configuration.md)",
                 sock);
    else if (rc == HTTPC_E_CONNECT && strstr(err, "daemon unreachable"))
        snprintf(msg, len, "no daemon is running (socket %s); start one with 'gpumod serve'", sock);
    else if (rc == HTTPC_E_GONE)
        snprintf(msg, len, "%s %s: %s (the daemon stopped or restarted)", method, target, err);
    else
        snprintf(msg, len, "%s %s: %s", method, target, err);
}

static int call_failed(const char *sock, const char *method, const char *target, int rc, const char *err)
{
    char msg[1024];
    failure_text(msg, sizeof msg, sock, method, target, rc, err);
    fprintf(stderr, "gpumod: %s\n", msg);
    return http_client_exit_code(rc);
}

int ctl_call(const config_paths *paths, const char *method, const char *target, const char *body, int64_t timeout_ms,
             bool quiet, http_reply *out)
{
    char *sock = ctl_socket_path(paths);
    char err[512];
    memset(out, 0, sizeof *out);
    int rc = http_request(sock, method, target, body ? "application/json" : NULL, body, body ? strlen(body) : 0,
                          timeout_ms, out, err, sizeof err);
    if (rc != HTTPC_OK) rc = quiet ? http_client_exit_code(rc) : call_failed(sock, method, target, rc, err);
    free(sock);
    return rc;
}

int ctl_request(const config_paths *paths, const char *method, const char *target, const char *body,
                int64_t timeout_ms, http_reply *out, char *msg, size_t msglen)
{
    char *sock = ctl_socket_path(paths);
    char err[512];
    memset(out, 0, sizeof *out);
    int rc = http_request(sock, method, target, body ? "application/json" : NULL, body, body ? strlen(body) : 0,
                          timeout_ms, out, err, sizeof err);
    if (rc != HTTPC_OK) {
        failure_text(msg, msglen, sock, method, target, rc, err);
        rc = http_client_exit_code(rc);
    }
    free(sock);
    return rc;
}

int ctl_stream_msg(const config_paths *paths, const char *target, const http_stream_opts *o, http_reply *out,
                   char *msg, size_t msglen)
{
    char *sock = ctl_socket_path(paths);
    char err[512];
    memset(out, 0, sizeof *out);
    int rc = http_request_stream(sock, target, CTL_QUICK_MS, o, out, err, sizeof err);
    if (rc != HTTPC_OK) {
        failure_text(msg, msglen, sock, "GET", target, rc, err);
        rc = http_client_exit_code(rc);
    }
    free(sock);
    return rc;
}

int ctl_stream(const config_paths *paths, const char *target, const http_stream_opts *o, bool quiet, http_reply *out)
{
    char *sock = ctl_socket_path(paths);
    char err[512];
    memset(out, 0, sizeof *out);
    int rc = http_request_stream(sock, target, CTL_QUICK_MS, o, out, err, sizeof err);
    if (rc != HTTPC_OK) rc = quiet ? http_client_exit_code(rc) : call_failed(sock, "GET", target, rc, err);
    free(sock);
    return rc;
}

cJSON *ctl_json(const http_reply *r, const char *what)
{
    cJSON *j = cJSON_ParseWithLength(r->body.p, r->body.len);
    if (!j) fprintf(stderr, "gpumod: %s: the daemon's answer is not JSON (HTTP %d)\n", what, r->status);
    return j;
}

const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

double jnum(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

bool jnull(const cJSON *o, const char *key)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return !v || cJSON_IsNull(v);
}

static const char *error_code(const http_reply *r, cJSON **keep)
{
    cJSON *j = cJSON_ParseWithLength(r->body.p, r->body.len);
    *keep = j;
    const cJSON *e = j ? cJSON_GetObjectItemCaseSensitive(j, "error") : NULL;
    return jstr(e, "code");
}

int ctl_exit_code(const http_reply *r)
{
    int s = r->status;
    if (s >= 200 && s < 300) return EXIT_OK;
    if (s == 400 || s == 404 || s == 405) return EXIT_USAGE;
    if (s == 503) return EXIT_DAEMON;
    if (s == 504) return EXIT_TIMEOUT;
    if (s == 422) {
        cJSON *j;
        const char *code = error_code(r, &j);
        int rc = code && (!strcmp(code, "config_invalid") || !strcmp(code, "need_unknown")) ? EXIT_USAGE
                                                                                              : EXIT_REFUSED;
        cJSON_Delete(j);
        return rc;
    }
    return EXIT_REFUSED;
}

int ctl_fail(const http_reply *r, const char *what)
{
    cJSON *j = cJSON_ParseWithLength(r->body.p, r->body.len);
    const cJSON *e = j ? cJSON_GetObjectItemCaseSensitive(j, "error") : NULL;
    const char *msg = jstr(e, "message");
    if (msg)
        fprintf(stderr, "gpumod: %s: %s\n", what, msg);
    else
        fprintf(stderr, "gpumod: %s: the daemon answered HTTP %d: %.200s\n", what, r->status, r->body.p);
    cJSON_Delete(j);
    return ctl_exit_code(r);
}

void ctl_print_body(const http_reply *r)
{
    fwrite(r->body.p, 1, r->body.len, stdout);
    if (!r->body.len || r->body.p[r->body.len - 1] != '\n') fputc('\n', stdout);
}
