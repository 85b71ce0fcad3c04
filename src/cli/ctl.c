/* ctl.c - the CLI side of the control API (see ctl.h).  A `gpumod status`
 * is a short-lived process: this file keeps its cost to one small file
 * read (gpumod.yaml, only when the socket is not given) and one
 * request. */
#include "cli/ctl.h"
#include "cli/hostview.h"
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

char *ctl_socket_path(const cli *c)
{
    if (c->paths.socket) return xstrdup(c->paths.socket);
    const char *env = getenv("GPUMOD_SOCKET");
    if (env && *env) return xstrdup(env);
    if (!resolved_sock) {
        config cfg;
        config_load_settings(&cfg, &c->paths); /* an error in it still leaves the defaults */
        resolved_sock = xstrdup(cfg.set.socket);
        config_release(&cfg);
    }
    return xstrdup(resolved_sock);
}

static int call_failed(const char *sock, const char *method, const char *target, int rc, const char *err)
{
    if (rc == HTTPC_E_CONNECT && strstr(err, strerror(EACCES)))
        fprintf(stderr,
                "gpumod: permission denied on socket %s: this user may not use the daemon's socket or a "
                "directory above it (socket_group, docs/configuration.md)\n",
                sock);
    else if (rc == HTTPC_E_CONNECT && strstr(err, "daemon unreachable"))
        fprintf(stderr, "gpumod: no daemon is running (socket %s); start one with 'gpumod serve'\n", sock);
    else if (rc == HTTPC_E_GONE)
        fprintf(stderr, "gpumod: %s %s: %s (the daemon stopped or restarted)\n", method, target, err);
    else
        fprintf(stderr, "gpumod: %s %s: %s\n", method, target, err);
    return http_client_exit_code(rc);
}

int ctl_call(const cli *c, const char *method, const char *target, const char *body, int64_t timeout_ms,
             bool quiet, http_reply *out)
{
    char *sock = ctl_socket_path(c);
    char err[512];
    memset(out, 0, sizeof *out);
    int rc = http_request(sock, method, target, body ? "application/json" : NULL, body, body ? strlen(body) : 0,
                          timeout_ms, out, err, sizeof err);
    if (rc != HTTPC_OK) rc = quiet ? http_client_exit_code(rc) : call_failed(sock, method, target, rc, err);
    free(sock);
    return rc;
}

int ctl_stream(const cli *c, const char *target, const http_stream_opts *o, bool quiet, http_reply *out)
{
    char *sock = ctl_socket_path(c);
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

void fmt_duration(buf *b, int64_t ms)
{
    if (ms < 0) ms = 0;
    if (ms < 1000) {
        buf_printf(b, "%lldms", (long long)ms);
        return;
    }
    long long s = ms / 1000;
    if (s < 60)
        buf_printf(b, "%lld.%llds", s, (long long)(ms % 1000) / 100);
    else if (s < 3600)
        buf_printf(b, "%lldm%02llds", s / 60, s % 60);
    else if (s < 86400)
        buf_printf(b, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
    else
        buf_printf(b, "%lldd%02lldh", s / 86400, (s % 86400) / 3600);
}

void fmt_age(buf *b, const char *ts)
{
    int64_t t;
    if (!ts || clock_parse_rfc3339(ts, &t)) {
        buf_adds(b, "?");
        return;
    }
    fmt_duration(b, clock_unix_ms() - t);
}

void service_row_header(buf *b)
{
    buf_printf(b, "%-20s %-10s %-8s %-6s %s\n", "SERVICE", "STATE", "PID", "PORT", "SINCE");
}

void service_row(buf *b, const cJSON *svc)
{
    const char *id = jstr(svc, "id"), *state = jstr(svc, "state");
    char pid[24] = "-", port[24] = "-";
    if (!jnull(svc, "pid")) snprintf(pid, sizeof pid, "%.0f", jnum(svc, "pid", 0));
    if (jnum(svc, "port", 0) > 0) snprintf(port, sizeof port, "%.0f", jnum(svc, "port", 0));
    buf_printf(b, "%-20s %-10s %-8s %-6s ", id ? id : "?", state ? state : "?", pid, port);
    fmt_age(b, jstr(svc, "since"));
    if (!jnull(svc, "progress_pct") && state && !strcmp(state, "starting"))
        buf_printf(b, "  loading %.0f%%", jnum(svc, "progress_pct", 0));
    if (!jnull(svc, "queued")) buf_printf(b, "  queued #%.0f", jnum(svc, "queued", 0));
    /* the need it was admitted with, and which source bound it */
    const cJSON *adm = cJSON_GetObjectItemCaseSensitive(svc, "admitted"), *g;
    if (cJSON_IsObject(adm)) {
        double total = jnum(adm, "host_bytes", 0);
        cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(adm, "gpu_bytes")) total += cJSON_GetNumberValue(g);
        buf_adds(b, "  need ");
        fmt_bytes(b, (uint64_t)total);
        if (jstr(adm, "source")) buf_printf(b, " (%s)", jstr(adm, "source"));
    }
    const cJSON *cc = cJSON_GetObjectItemCaseSensitive(svc, "config_changed");
    if (cJSON_IsTrue(cc)) buf_adds(b, "  config changed (restart to apply)");
    const cJSON *conf = cJSON_GetObjectItemCaseSensitive(svc, "configured");
    if (cJSON_IsFalse(conf)) buf_adds(b, "  no longer configured");
    buf_addc(b, '\n');
}

void event_line(buf *b, const cJSON *ev)
{
    const char *ts = jstr(ev, "ts"), *svc = jstr(ev, "service"), *kind = jstr(ev, "kind");
    const char *from = jstr(ev, "from"), *to = jstr(ev, "to"), *reason = jstr(ev, "reason");
    buf_printf(b, "%s #%.0f %s %s", ts ? ts : "?", jnum(ev, "id", 0), svc ? svc : "-", kind ? kind : "?");
    if (from || to) buf_printf(b, " %s -> %s", from ? from : "-", to ? to : "-");
    if (reason) buf_printf(b, ": %s", reason);
    buf_addc(b, '\n');
}
