/* target.c (oai) - what a helper talks to: a URL, or a service id /
 * model name resolved through the daemon's route table to the router, and
 * the server's identity (flavor, build, model path, context, config hash).
 *
 * Router targets go through the router because that is the path every
 * client takes; the server's own endpoints (/metrics, /tokenize, /props)
 * are reached through /upstream/ID/ so that bench's deltas are the
 * service's, not the router's.  The API key is a header only: it is never
 * printed and never lands in a document. */
#include "oai/target.h"

#include <strings.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"
#include "config/config.h"
#include "util/buf.h"
#include "util/errf.h"
#include "util/url.h"
#include "oai/fetch.h"

#define PROBE_MS 10000 /* bfetch caps it at --timeout */

/* The first probe that timed out: the server accepts but does not answer,
 * and every later probe would wait as long, so none is sent. */
static char unresponsive[300];

static const char *hdrs_of(const btarget *t, const char **h)
{
    h[0] = t->auth_header;
    h[1] = NULL;
    return NULL;
}

const char *const *btarget_headers(const btarget *t)
{
    /* a static pair is enough: one target per process */
    static const char *h[2];
    hdrs_of(t, h);
    return h;
}

static void set_key(btarget *t, const char *var)
{
    const char *v = var ? getenv(var) : NULL;
    if (!v || !*v) return;
    /* router.api_keys_env may hold several keys: the first one */
    while (*v == ' ' || *v == '\t') v++;
    size_t n = strcspn(v, ", \t\n");
    if (!n) return;
    t->auth_header = xasprintf("Authorization: Bearer %.*s", (int)n, v);
}

/* GET base+path, parsed; NULL when no reply, not 200 or not JSON. */
static cJSON *get_json(const btarget *t, const char *base, const char *path, char *ferr, size_t ferrlen)
{
    if (unresponsive[0]) {
        if (ferr) errf(ferr, ferrlen, "%s", unresponsive);
        return NULL;
    }
    char *u = xasprintf("%s%s", base, path);
    bfetch f;
    int rc = bfetch_do(u, btarget_headers(t), NULL, PROBE_MS, &f);
    cJSON *j = NULL;
    if (rc) {
        if (strstr(f.err, "timed out") || strstr(f.err, "interrupted"))
            snprintf(unresponsive, sizeof unresponsive, "%s", f.err);
        if (ferr) errf(ferr, ferrlen, "%s", f.err);
    } else if (f.status == 200) {
        j = cJSON_Parse(f.body.p);
        if (!j && ferr) errf(ferr, ferrlen, "GET %s: the reply is not JSON", u);
    } else if (ferr) {
        errf(ferr, ferrlen, "GET %s: HTTP %d", u, f.status);
    }
    bfetch_release(&f);
    free(u);
    return j;
}

/* Identity from /props (llama-server), /version and /v1/models (vLLM). */
static void identify(btarget *t, const char *probe_base)
{
    t->identity = cJSON_CreateObject();
    cJSON *props = get_json(t, probe_base, "/props", NULL, 0);
    const char *bi = cJSON_GetStringValue(cJSON_GetObjectItem(props, "build_info"));
    if (props && bi) {
        t->flavor = xstrdup("llamacpp");
        t->build = xstrdup(bi);
        cJSON_AddStringToObject(t->identity, "build_info", bi);
        const char *mp = cJSON_GetStringValue(cJSON_GetObjectItem(props, "model_path"));
        if (mp) cJSON_AddStringToObject(t->identity, "model_path", mp);
        const cJSON *ts = cJSON_GetObjectItem(props, "total_slots");
        if (cJSON_IsNumber(ts)) cJSON_AddNumberToObject(t->identity, "total_slots", ts->valuedouble);
        const cJSON *nc = cJSON_GetObjectItem(cJSON_GetObjectItem(props, "default_generation_settings"), "n_ctx");
        if (cJSON_IsNumber(nc)) cJSON_AddNumberToObject(t->identity, "n_ctx", nc->valuedouble);
    }
    cJSON_Delete(props);
    cJSON *models = get_json(t, probe_base, "/v1/models", NULL, 0);
    const cJSON *d0 = cJSON_GetArrayItem(cJSON_GetObjectItem(models, "data"), 0);
    const char *owner = cJSON_GetStringValue(cJSON_GetObjectItem(d0, "owned_by"));
    if (owner && !strcmp(owner, "vllm") && !t->flavor) {
        t->flavor = xstrdup("vllm");
        const cJSON *ml = cJSON_GetObjectItem(d0, "max_model_len");
        if (cJSON_IsNumber(ml)) cJSON_AddNumberToObject(t->identity, "max_model_len", ml->valuedouble);
        cJSON *ver = get_json(t, probe_base, "/version", NULL, 0);
        const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(ver, "version"));
        if (v) {
            t->build = xasprintf("vllm %s", v);
            cJSON_AddStringToObject(t->identity, "version", v);
        }
        cJSON_Delete(ver);
    }
    if (d0) {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(d0, "id"));
        if (id) cJSON_AddStringToObject(t->identity, "model_id", id);
        if (owner) cJSON_AddStringToObject(t->identity, "owned_by", owner);
    }
    cJSON_Delete(models);
    if (!t->flavor) t->flavor = xstrdup("unknown");
}

static int resolve_url(btarget *t, const btarget_opts *o, char *err, size_t errlen)
{
    url_base u;
    char uerr[300];
    if (url_base_parse(o->target, &u, uerr, sizeof uerr)) {
        errf(err, errlen, "%s: target '%s': %s", o->who, o->target, uerr);
        return EXIT_USAGE;
    }
    size_t pl = strlen(u.path);
    if (pl >= 3 && !strcmp(u.path + pl - 3, "/v1")) u.path[pl - 3] = 0; /* the endpoints add it */
    bool v6 = strchr(u.host, ':') != NULL;
    t->base_url = xasprintf("%s://%s%s%s:%d%s", u.https ? "https" : "http", v6 ? "[" : "", u.host, v6 ? "]" : "",
                            u.port, u.path);
    t->via = xstrdup("url");
    set_key(t, o->api_key_env ? o->api_key_env : "OPENAI_API_KEY");
    t->metrics_url = xasprintf("%s/metrics", t->base_url);
    t->tokenize_url = xasprintf("%s/tokenize", t->base_url);
    t->props_url = xasprintf("%s/props", t->base_url);
    if (o->model) {
        t->model = xstrdup(o->model);
    } else {
        char ferr[300] = "";
        cJSON *m = get_json(t, t->base_url, "/v1/models", ferr, sizeof ferr);
        if (!m) {
            errf(err, errlen, "%s: %s (asking for the model; give --model NAME)", o->who, ferr);
            return EXIT_REFUSED;
        }
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(m, "data"), 0), "id"));
        if (!id) {
            cJSON_Delete(m);
            errf(err, errlen, "%s: %s/v1/models lists no model: give --model NAME", o->who, t->base_url);
            return EXIT_REFUSED;
        }
        t->model = xstrdup(id);
        cJSON_Delete(m);
    }
    identify(t, t->base_url);
    if (unresponsive[0]) {
        errf(err, errlen, "%s: the server does not answer: %s", o->who, unresponsive);
        return EXIT_REFUSED;
    }
    return 0;
}

/* The router's address from router.listen with the port the daemon
 * reports (a --listen given to serve wins over the file). */
static char *router_base(const config *cfg, const cJSON *table)
{
    const char *listen = cfg->set.router.listen ? cfg->set.router.listen : "127.0.0.1:8080";
    const char *colon = strrchr(listen, ':');
    char host[256] = "127.0.0.1";
    if (colon && colon > listen) {
        size_t hl = (size_t)(colon - listen);
        if (hl < sizeof host) {
            memcpy(host, listen, hl);
            host[hl] = 0;
        }
    }
    if (!strcmp(host, "0.0.0.0") || !*host) snprintf(host, sizeof host, "127.0.0.1");
    if (!strcmp(host, "[::]") || !strcmp(host, "::")) snprintf(host, sizeof host, "[::1]");
    int port = colon ? atoi(colon + 1) : 8080;
    const cJSON *lp = cJSON_GetObjectItem(table, "listen");
    if (cJSON_IsNumber(lp) && lp->valuedouble > 0) port = (int)lp->valuedouble;
    return xasprintf("http://%s:%d", host, port);
}

/* The service the router sends a request naming name to, asked of the
 * router itself (GET /route/resolve), so a result is labelled with the
 * service that served it, whatever the collision rules say.  Caller
 * frees; NULL with err (the router's own message). */
static char *resolve_name(const config_paths *daemon, const char *name, char *err, size_t errlen)
{
    buf path = BUF_INIT;
    buf_adds(&path, "/route/resolve?model=");
    url_query_escape(&path, name);
    http_reply r = {0};
    int rc = ctl_call(daemon, "GET", path.p, NULL, CTL_QUICK_MS, true, &r);
    buf_release(&path);
    cJSON *j = rc ? NULL : cJSON_Parse(r.body.p);
    const char *svc = r.status == 200 ? cJSON_GetStringValue(cJSON_GetObjectItem(j, "service")) : NULL;
    char *out = svc ? xstrdup(svc) : NULL;
    if (!out) {
        const char *m = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "message"));
        snprintf(err, errlen, "%s", rc ? "the daemon did not answer GET /route/resolve" : m ? m : "an error status");
    }
    cJSON_Delete(j);
    http_reply_release(&r);
    return out;
}

static int resolve_router(btarget *t, const btarget_opts *o, char *err, size_t errlen)
{
    config cfg;
    config_paths paths = {0};
    memset(&cfg, 0, sizeof cfg);
    /* GPUMOD_CONFIG_DIR / GPUMOD_SOCKET are read by the loader itself */
    if (config_load_settings(&cfg, &paths) != 0 && cfg.diags.errors) {
        errf(err, errlen, "%s: the configuration has errors (see gpumod config check); "
                          "'%s' is not a URL, so it is looked up through the daemon", o->who,
             o->target);
        config_release(&cfg);
        return EXIT_USAGE;
    }
    config_paths daemon = {0};
    if (cfg.set.socket) ctl_prime_socket(cfg.set.socket);
    http_reply r = {0};
    int rc = ctl_call(&daemon, "GET", "/route", NULL, CTL_QUICK_MS, true, &r);
    if (rc == EXIT_DAEMON) {
        errf(err, errlen, "%s: %s is a service name but no daemon runs; start it with gpumod serve, or give a URL", o->who,
             o->target);
        http_reply_release(&r);
        config_release(&cfg);
        return EXIT_DAEMON;
    }
    if (rc || r.status != 200) {
        errf(err, errlen, "%s: GET /route from the daemon failed (%s)", o->who,
             rc ? "no reply" : r.status == 503 ? "the router is not up" : "an error status");
        http_reply_release(&r);
        config_release(&cfg);
        return rc ? rc : EXIT_REFUSED;
    }
    cJSON *table = cJSON_Parse(r.body.p);
    http_reply_release(&r);
    char rerr[600];
    char *svc = resolve_name(&daemon, o->target, rerr, sizeof rerr);
    if (!svc) {
        errf(err, errlen, "%s: '%s' is neither a URL nor a name the router routes: %s", o->who, o->target, rerr);
        cJSON_Delete(table);
        config_release(&cfg);
        return EXIT_USAGE;
    }
    t->via = xstrdup("router");
    t->service = svc;
    t->base_url = router_base(&cfg, table);
    t->model = xstrdup(o->model ? o->model : o->target);
    t->metrics_url = xasprintf("%s/upstream/%s/metrics", t->base_url, svc);
    t->tokenize_url = xasprintf("%s/upstream/%s/tokenize", t->base_url, svc);
    t->props_url = xasprintf("%s/upstream/%s/props", t->base_url, svc);
    set_key(t, o->api_key_env ? o->api_key_env : cfg.set.router.api_keys_env);

    /* /upstream/ does not start a service: one small request by name does */
    const char *state = NULL;
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(table, "services")) {
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(s, "id")) ?: "", svc))
            state = cJSON_GetStringValue(cJSON_GetObjectItem(s, "state"));
    }
    if (state && strcmp(state, "ready")) {
        char *u = xasprintf("%s/v1/completions", t->base_url);
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "model", t->model);
        cJSON_AddStringToObject(b, "prompt", "hello");
        cJSON_AddNumberToObject(b, "max_tokens", 1);
        char *body = cJSON_PrintUnformatted(b);
        cJSON_Delete(b);
        bfetch f;
        int frc = bfetch_do(u, btarget_headers(t), body, (int64_t)(o->timeout_s * 1000), &f);
        free(body);
        if (frc || f.status >= 400) {
            cJSON *e = frc ? NULL : cJSON_Parse(f.body.p);
            const char *msg = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "error"), "message"));
            errf(err, errlen, "%s: service '%s' (%s) could not be started through the router: %s", o->who, svc, state,
                 frc ? f.err : msg ? msg : "an error status");
            cJSON_Delete(e);
            bfetch_release(&f);
            free(u);
            cJSON_Delete(table);
            config_release(&cfg);
            return EXIT_REFUSED;
        }
        bfetch_release(&f);
        free(u);
    }
    cJSON_Delete(table);
    svc = t->service; /* the table's strings are gone */

    char *path = xasprintf("/services/%s", svc);
    memset(&r, 0, sizeof r);
    if (ctl_call(&daemon, "GET", path, NULL, CTL_QUICK_MS, true, &r) == 0 && r.status == 200) {
        cJSON *d = cJSON_Parse(r.body.p);
        const char *h = cJSON_GetStringValue(cJSON_GetObjectItem(d, "running_hash"));
        if (!h) h = cJSON_GetStringValue(cJSON_GetObjectItem(d, "config_hash"));
        if (h) t->config_hash = xstrdup(h);
        cJSON_Delete(d);
    }
    http_reply_release(&r);
    free(path);
    config_release(&cfg);

    char *probe = xasprintf("%s/upstream/%s", t->base_url, svc);
    identify(t, probe);
    free(probe);
    if (unresponsive[0]) {
        errf(err, errlen, "%s: service '%s' does not answer through the router: %s", o->who, svc, unresponsive);
        return EXIT_REFUSED;
    }
    return 0;
}

int btarget_resolve(btarget *t, const btarget_opts *o, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->spec = xstrdup(o->target);
    t->endpoint = xstrdup(o->completions ? "/v1/completions" : "/v1/chat/completions");
    if (!strncasecmp(o->target, "http://", 7) || !strncasecmp(o->target, "https://", 8))
        return resolve_url(t, o, err, errlen);
    /* HOST:PORT, [v6]:PORT or a dotted address: a URL without its scheme
     * (a service or model name is neither) */
    const char *colon = strrchr(o->target, ':');
    bool port = colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1);
    bool dotted = strchr(o->target, '.') && strspn(o->target, "0123456789.") == strlen(o->target);
    if (!strstr(o->target, "://") && (port || dotted || o->target[0] == '[')) {
        errf(err, errlen, "%s: target '%s': expected http://HOST:PORT (no scheme given; add http://)", o->who, o->target);
        return EXIT_USAGE;
    }
    if (strchr(o->target, '/') && strstr(o->target, "://")) {
        errf(err, errlen, "%s: target '%s': expected an http:// or https:// URL, a service id or a model name", o->who,
             o->target);
        return EXIT_USAGE;
    }
    return resolve_router(t, o, err, errlen);
}

void btarget_release(btarget *t)
{
    free(t->spec);
    free(t->via);
    free(t->service);
    free(t->base_url);
    free(t->model);
    free(t->endpoint);
    free(t->metrics_url);
    free(t->tokenize_url);
    free(t->props_url);
    free(t->flavor);
    free(t->build);
    free(t->config_hash);
    free(t->auth_header);
    cJSON_Delete(t->identity);
    memset(t, 0, sizeof *t);
}

static void add_str_or_null(cJSON *o, const char *k, const char *v)
{
    if (v)
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

cJSON *btarget_json(const btarget *t)
{
    cJSON *j = cJSON_CreateObject();
    add_str_or_null(j, "spec", t->spec);
    add_str_or_null(j, "via", t->via);
    add_str_or_null(j, "service", t->service);
    add_str_or_null(j, "base_url", t->base_url);
    add_str_or_null(j, "model", t->model);
    add_str_or_null(j, "endpoint", t->endpoint);
    add_str_or_null(j, "flavor", t->flavor);
    add_str_or_null(j, "build", t->build);
    add_str_or_null(j, "config_hash", t->config_hash);
    cJSON_AddItemToObject(j, "identity", t->identity ? cJSON_Duplicate(t->identity, true) : cJSON_CreateObject());
    return j;
}

long btarget_ctx(const btarget *t)
{
    const cJSON *v = cJSON_GetObjectItem(t->identity, "n_ctx");
    if (!cJSON_IsNumber(v)) v = cJSON_GetObjectItem(t->identity, "max_model_len");
    return cJSON_IsNumber(v) && v->valuedouble > 0 ? (long)v->valuedouble : -1;
}
