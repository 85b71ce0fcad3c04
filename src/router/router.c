/* router.c - the router's listener and everything around the relay: API
 * keys, CORS, the endpoints it answers itself (/health, /v1/models,
 * /metrics, preflight), dispatch to the relay (src/router/relay.c), the
 * route table and the router default, the view of each service's state
 * (fed by the supervisor's events), router-mode model lists, the drain
 * hook of mode switches, the access log and the control API's /route.
 *
 * Design: every request is taken in streaming mode (on_head answers
 * SRV_STREAM), so the router decides from the head alone and a routed
 * body is never buffered by the server; the answers of its own go out
 * from on_head.  The route table is rebuilt only on reload, on `route
 * default` and when a router-mode service lists its models: never per
 * request.  The default given by `gpumod route default` is kept in a
 * one-line file in the state directory, written atomically, so it
 * survives restarts without a schema change. */
#include "router/rint.h"
#include "util/log.h"
#include "util/clock.h"
#include "util/jstrict.h"
#include "util/slurp.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_FILE "route-default"

/* ---- small things ---- */

static bool view_eq(view v, const char *s)
{
    size_t n = strlen(s);
    return v.len == n && !memcmp(v.p, s, n);
}

static const view *field(const http_msg *m, const char *name)
{
    for (size_t i = 0; i < m->n_fields; i++)
        if (view_ieq(m->fields[i].name, name)) return &m->fields[i].value;
    return NULL;
}

void rsvc_ref(rsvc *s)
{
    s->refs++;
}

void rsvc_unref(rsvc *s)
{
    if (--s->refs > 0) return;
    if (s->pool) upstream_pool_close(s->pool, NULL, NULL); /* in-flight requests finish first */
    free(s->pool_ip);
    s->pool = NULL;
    s->pool_ip = NULL;
    free(s->conf_err);
    free(s->id);
    free(s->host);
    free(s->prefix);
    free(s->auth);
    free(s->key_env);
    buf_release(&s->list_body);
    buf_release(&s->mbody);
    free(s);
}

rsvc *router_svc_find(router *rt, const char *id)
{
    for (size_t i = 0; i < rt->n_svcs; i++)
        if (!strcmp(rt->svcs[i]->id, id)) return rt->svcs[i];
    return NULL;
}

static size_t svc_index(router *rt, const rsvc *s)
{
    for (size_t i = 0; i < rt->n_svcs; i++)
        if (rt->svcs[i] == s) return i;
    return SIZE_MAX;
}

/* ---- answers ---- */

static const char *openai_type(int status)
{
    switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "invalid_request_error";
    case 429: return "rate_limit_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
    }
}

static const char *anthropic_type(int status)
{
    switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
    }
}

void router_error_json(buf *b, bool anthropic, int status, const char *code, const char *message)
{
    if (anthropic) {
        buf_adds(b, "{\"type\":\"error\",\"error\":{\"type\":");
        buf_json_str(b, anthropic_type(status));
        buf_adds(b, ",\"message\":");
        buf_json_str(b, message);
        buf_adds(b, "}}");
        return;
    }
    buf_adds(b, "{\"error\":{\"message\":");
    buf_json_str(b, message);
    buf_adds(b, ",\"type\":");
    buf_json_str(b, openai_type(status));
    buf_adds(b, ",\"code\":");
    buf_json_str(b, code);
    buf_adds(b, "}}");
}

const char *router_cors_origin(router *rt, const http_msg *m, size_t *len)
{
    if (!rt->cors.n) return NULL;
    const view *o = field(m, "origin");
    if (!o || !o->len) return NULL;
    for (size_t i = 0; i < rt->cors.n; i++) {
        if (!strcmp(rt->cors.v[i], "*") || view_eq(*o, rt->cors.v[i])) {
            *len = o->len;
            return o->p;
        }
    }
    return NULL;
}

void router_respond(router *rt, srv_conn *c, const http_msg *m, int status, const char *ctype, const char *body,
                    size_t len, int retry_after_s)
{
    http_field f[5];
    size_t n = 0;
    char ra[24];
    if (ctype) f[n++] = (http_field){{"Content-Type", 12}, {ctype, strlen(ctype)}};
    size_t olen = 0;
    const char *origin = router_cors_origin(rt, m, &olen);
    if (origin) {
        f[n++] = (http_field){{"Access-Control-Allow-Origin", 27}, {origin, olen}};
        f[n++] = (http_field){{"Vary", 4}, {"Origin", 6}};
    }
    if (retry_after_s > 0) {
        snprintf(ra, sizeof ra, "%d", retry_after_s);
        f[n++] = (http_field){{"Retry-After", 11}, {ra, strlen(ra)}};
    }
    if (srv_respond_head(c, status, f, n, (int64_t)len) == 0 && len) srv_write(c, body, len);
    srv_end(c);
}

void access_info_fill(access_info *a, srv_conn *c, const http_msg *m)
{
    if (srv_conn_addr(c, a->peer, sizeof a->peer)) snprintf(a->peer, sizeof a->peer, "-");
    snprintf(a->method, sizeof a->method, "%.*s", (int)m->method.len, m->method.p);
    const char *q = memchr(m->target.p, '?', m->target.len);
    size_t pl = q ? (size_t)(q - m->target.p) : m->target.len;
    snprintf(a->path, sizeof a->path, "%.*s", (int)pl, m->target.p);
}

void router_access_log(router *rt, const access_info *a, const char *model, const char *service, int status,
                       uint64_t in, uint64_t out, int64_t ttfb_us, int64_t dur_us, bool aborted)
{
    (void)rt;
    /* one line per request; the query string and headers never appear */
    char ttfb[32];
    if (ttfb_us >= 0) snprintf(ttfb, sizeof ttfb, "%.3f", (double)ttfb_us / 1000.0);
    else snprintf(ttfb, sizeof ttfb, "-");
    log_info("access %s \"%s %s\" model=%s -> %s status=%d in=%llu out=%llu ttfb_ms=%s dur_ms=%.3f aborted=%s",
             a->peer, a->method, a->path, model ? model : "-", service ? service : "-", status,
             (unsigned long long)in, (unsigned long long)out, ttfb, (double)dur_us / 1000.0,
             aborted ? "yes" : "no");
}

/* An answer of the router's own, with its access-log line. */
static void answer(router *rt, srv_conn *c, const http_msg *m, int status, const char *ctype, const char *body,
                   size_t len, int retry_after_s)
{
    uint64_t t0 = uv_hrtime();
    access_info a;
    access_info_fill(&a, c, m);
    router_respond(rt, c, m, status, ctype, body, len, retry_after_s);
    int64_t us = (int64_t)((uv_hrtime() - t0) / 1000);
    router_access_log(rt, &a, NULL, NULL, status, 0, len, us, us, false);
    if (rt->rm) rm_request(rt->rm, NULL, NULL, status, 0, len, (double)us / 1e6, (double)us / 1e6);
}

static void answer_error(router *rt, srv_conn *c, const http_msg *m, bool anthropic, int status, const char *code,
                         const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static void answer_error(router *rt, srv_conn *c, const http_msg *m, bool anthropic, int status, const char *code,
                         const char *fmt, ...)
{
    buf msg = BUF_INIT, b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    router_error_json(&b, anthropic, status, code, msg.p);
    buf_addc(&b, '\n');
    answer(rt, c, m, status, "application/json", b.p, b.len, 0);
    buf_release(&msg);
    buf_release(&b);
}

/* ---- the listen address and API keys ---- */

static int parse_listen(const char *s, char *host, size_t hl, int *port)
{
    const char *colon;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':') return -1;
        snprintf(host, hl, "%.*s", (int)(close - s - 1), s + 1);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon || colon == s) return -1;
        snprintf(host, hl, "%.*s", (int)(colon - s), s);
    }
    char *end;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    if (errno || *end || end == colon + 1 || p < 0 || p > 65535) return -1;
    *port = (int)p;
    return 0;
}

static bool is_loopback(const char *h)
{
    return !strcmp(h, "localhost") || !strncmp(h, "127.", 4) || !strcmp(h, "::1");
}

static void load_keys(strv *keys, const char *env)
{
    strv_release(keys);
    *keys = (strv)STRV_INIT;
    const char *v = env && *env ? getenv(env) : NULL;
    if (!v) return;
    const char *p = v;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t') p++;
        const char *s = p;
        while (*p && *p != ',') p++;
        const char *e = p;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
        if (e > s) strv_push_own(keys, xstrndup(s, (size_t)(e - s)));
    }
}

int router_check_listen(const settings *set, const char *listen, bool insecure, char *err, size_t errlen)
{
    const char *l = listen ? listen : set->router.listen;
    char host[256];
    int port;
    if (!l || parse_listen(l, host, sizeof host, &port)) {
        snprintf(err, errlen, "router: listen address '%s' is not HOST:PORT (e.g. 127.0.0.1:8010)", l ? l : "");
        return -1;
    }
    strv keys = STRV_INIT;
    load_keys(&keys, set->router.api_keys_env);
    size_t n = keys.n;
    strv_release(&keys);
    if (set->router.api_keys_env && *set->router.api_keys_env && !n) {
        /* keys were asked for: never serve without them, whatever the address */
        snprintf(err, errlen,
                 "router: router.api_keys_env names the variable '%s', but it is %s: refusing to serve without the "
                 "API keys it should hold; set it to comma-separated keys, or remove router.api_keys_env",
                 set->router.api_keys_env, getenv(set->router.api_keys_env) ? "empty (no key in it)" : "not set");
        return -1;
    }
    if (is_loopback(host) || insecure || n) return 0;
    if (set->router.api_keys_env)
        snprintf(err, errlen,
                 "router: listen address '%s' is not loopback and the variable '%s' (router.api_keys_env) holds no "
                 "API key: refusing to serve every model to the network without authentication; set it, listen on "
                 "127.0.0.1, or pass --insecure",
                 l, set->router.api_keys_env);
    else
        snprintf(err, errlen,
                 "router: listen address '%s' is not loopback and no API keys are configured (router.api_keys_env): "
                 "refusing to serve every model to the network without authentication; set router.api_keys_env, "
                 "listen on 127.0.0.1, or pass --insecure",
                 l);
    return -1;
}

/* Constant time in the key's content: every key is compared whole. */
static bool key_ok(router *rt, const char *k, size_t kl)
{
    unsigned ok = 0;
    for (size_t i = 0; i < rt->keys.n; i++) {
        const char *w = rt->keys.v[i];
        size_t wl = strlen(w);
        unsigned char d = (unsigned char)(kl != wl);
        for (size_t j = 0; j < kl; j++) d |= (unsigned char)(k[j] ^ w[wl ? j % wl : 0]);
        ok |= d == 0;
    }
    return ok != 0;
}

static bool authorized(router *rt, const http_msg *m)
{
    if (!rt->keys.n) return true;
    const view *a = field(m, "authorization");
    if (a && a->len > 7 && !strncasecmp(a->p, "bearer ", 7)) {
        const char *k = a->p + 7;
        size_t kl = a->len - 7;
        while (kl && *k == ' ') k++, kl--;
        if (key_ok(rt, k, kl)) return true;
    }
    const view *x = field(m, "x-api-key");
    return x && key_ok(rt, x->p, x->len);
}

/* ---- services and the route table ---- */

static bool running_state(svc_state s)
{
    return s == SVC_STARTING || s == SVC_READY || s == SVC_UNHEALTHY;
}

static void refresh_flags(router *rt)
{
    char cur[256];
    const mode *md = NULL;
    if (rt->h.committed && rt->h.committed(rt->h.ud, cur, sizeof cur)) md = config_mode(rt->cfg, cur);
    for (size_t i = 0; i < rt->n_svcs; i++) {
        unsigned f = running_state(rt->svcs[i]->state) ? ROUTE_F_RUNNING : 0;
        if (md && strv_find(&md->services, rt->svcs[i]->id) >= 0) f |= ROUTE_F_IN_MODE;
        route_table_set_flags(&rt->table, i, f);
    }
}

static void list_fetch(router *rt, rsvc *s);

static void seed_states(router *rt)
{
    rh_usage u[128];
    size_t n = rt->h.usages ? rt->h.usages(rt->h.ud, u, 128) : 0;
    for (size_t i = 0; i < rt->n_svcs; i++) {
        rsvc *s = rt->svcs[i];
        for (size_t k = 0; k < n; k++)
            if (!strcmp(u[k].id, s->id)) s->state = u[k].state;
    }
}

/* The default: `route default` (stored) when it still names a service,
 * else router.default. */
static void apply_default(router *rt)
{
    char err[256];
    if (rt->stored_default && route_table_set_default(&rt->table, rt->stored_default, err, sizeof err) == 0) return;
    if (rt->stored_default)
        log_warn("router: the stored default '%s' is not a service any more (%s); using router.default",
                 rt->stored_default, err);
    const char *d = rt->cfg->set.router.default_service;
    if (route_table_set_default(&rt->table, d, err, sizeof err)) {
        log_warn("router: router.default: %s", err);
        route_table_set_default(&rt->table, NULL, err, sizeof err);
    }
}

static void build_table(router *rt)
{
    route_table_release(&rt->table);
    route_service *rs = xcalloc(rt->n_svcs ? rt->n_svcs : 1, sizeof *rs);
    for (size_t i = 0; i < rt->n_svcs; i++) {
        const preset *p = &rt->cfg->presets[i];
        bool rmode = p->driver == DRV_LLAMACPP && p->llama.models_dir && !p->model_path;
        rs[i] = (route_service){.id = p->id,
                                .aliases = (const char *const *)p->aliases.v,
                                .n_aliases = p->aliases.n,
                                .model_id = p->model_id,
                                .upstream = p->driver == DRV_REMOTE ? p->model_id : rmode ? p->llama.default_model : NULL,
                                .router_mode = rmode,
                                .remote = p->driver == DRV_REMOTE};
    }
    char err[512];
    if (route_table_init(&rt->table, rs, rt->n_svcs, NULL, err, sizeof err))
        log_error("router: the route table cannot be built: %s", err);
    free(rs);
    apply_default(rt);
    refresh_flags(rt);
}

static void kill_list(relay **head, int status, const char *code, const char *msg)
{
    while (*head) relay_kill(*head, status, code, msg);
}

static void apply_config(router *rt, const config *cfg)
{
    /* API keys are read once, at start (the daemon's environment does not
     * change after it): a reload naming another variable says so */
    const char *oenv = rt->cfg ? rt->cfg->set.router.api_keys_env : NULL, *nenv = cfg->set.router.api_keys_env;
    if (!rt->cfg)
        load_keys(&rt->keys, nenv);
    else if (strcmp(oenv ? oenv : "", nenv ? nenv : ""))
        log_warn("router: router.api_keys_env changed from '%s' to '%s': API keys are read at start; the keys "
                 "of '%s' stay in force until the daemon is restarted",
                 oenv ? oenv : "", nenv ? nenv : "", oenv ? oenv : "");
    rt->cfg = cfg;
    strv_release(&rt->cors);
    rt->cors = (strv)STRV_INIT;
    strv_copy(&rt->cors, &cfg->set.router.cors_origins);
    /* the names router-mode services listed survive the table's rebuild
     * (until their next GET /models answer, or down/failed): taken out of
     * the old table here, matched to the new index by rsvc (the new ones
     * are allocated before any dropped one is released, so none can reuse
     * an old address) */
    size_t n_old = rt->n_svcs;
    rsvc **old = xcalloc(n_old ? n_old : 1, sizeof *old);
    char ***old_listed = xcalloc(n_old ? n_old : 1, sizeof *old_listed);
    for (size_t k = 0; k < n_old; k++) {
        old[k] = rt->svcs[k];
        if (rt->table.listed && k < rt->table.n_svc) {
            old_listed[k] = rt->table.listed[k];
            rt->table.listed[k] = NULL;
        }
    }
    rsvc **nv = xcalloc(cfg->n_presets ? cfg->n_presets : 1, sizeof *nv);
    for (size_t i = 0; i < cfg->n_presets; i++) {
        const preset *p = &cfg->presets[i];
        rsvc *s = NULL;
        for (size_t k = 0; k < rt->n_svcs; k++)
            if (rt->svcs[k] && !strcmp(rt->svcs[k]->id, p->id)) {
                s = rt->svcs[k];
                rt->svcs[k] = NULL;
                break;
            }
        if (!s) {
            s = xcalloc(1, sizeof *s);
            s->refs = 1;
            s->rt = rt;
            s->id = xstrdup(p->id);
            s->state = SVC_DOWN;
            s->list_body = (buf)BUF_INIT;
            s->mbody = (buf)BUF_INIT;
            s->idle_last_ms = clock_mono_ms();
        }
        s->live = true;
        char *oh = s->host ? xstrdup(s->host) : NULL, *op = s->prefix ? xstrdup(s->prefix) : NULL;
        int oport = s->port;
        bool ohttps = s->https;
        char err[512];
        if (rsvc_endpoint(s, p, err, sizeof err)) log_warn("router: %s", err);
        if (!oh || !s->host || strcmp(oh, s->host) || oport != s->port || ohttps != s->https) {
            /* a lookup of the old host is abandoned; its waiters go on
             * with the new endpoint (or its error) */
            rsvc_pool_drop(rt, s);
            rsvc_endpoint_changed(s, NULL);
        }
        free(oh);
        free(op);
        nv[i] = s;
    }
    /* services the new configuration dropped */
    for (size_t k = 0; k < rt->n_svcs; k++) {
        rsvc *s = rt->svcs[k];
        if (!s) continue;
        s->live = false;
        kill_list(&s->parked, 503, "unavailable", "the service was removed from the configuration");
        kill_list(&s->listwait, 503, "unavailable", "the service was removed from the configuration");
        rsvc_endpoint_changed(s, "the service was removed from the configuration");
        if (s->listing) {
            upstream_abort(s->listing);
            s->listing = NULL;
            rsvc_unref(s);
        }
        rsvc_pool_drop(rt, s);
        rsvc_unref(s);
    }
    free(rt->svcs);
    rt->svcs = nv;
    rt->n_svcs = cfg->n_presets;
    rt->max_body = (size_t)cfg->set.router.max_body_mb << 20;
    seed_states(rt);
    build_table(rt);
    for (size_t i = 0; i < rt->n_svcs; i++) {
        size_t k = 0, n = 0;
        while (k < n_old && old[k] != rt->svcs[i]) k++;
        if (k == n_old || !old_listed[k] || !rt->svcs[i]->router_mode) continue;
        while (old_listed[k][n]) n++;
        route_table_set_listed(&rt->table, i, (const char *const *)old_listed[k], n);
    }
    for (size_t k = 0; k < n_old; k++) {
        for (char **l = old_listed[k]; l && *l; l++) free(*l);
        free(old_listed[k]);
    }
    free(old_listed);
    free(old);
    for (size_t i = 0; i < rt->n_svcs; i++)
        if (rt->svcs[i]->router_mode && rt->svcs[i]->state == SVC_READY) list_fetch(rt, rt->svcs[i]);
}

/* ---- router-mode model lists ---- */

static void list_data(upstream_req *r, const view *d, void *ud)
{
    rsvc *s = ud;
    /* past the bound nothing more is kept: a body with a hole is no JSON */
    if (s->list_over || s->list_body.len + d->len > ROUTER_LIST_MAX) s->list_over = true;
    else buf_add(&s->list_body, d->p, d->len);
}

static void list_end(upstream_req *r, int err, const char *msg, void *ud)
{
    rsvc *s = ud;
    router *rt = s->rt;
    s->listing = NULL;
    size_t idx = rt && s->live ? svc_index(rt, s) : SIZE_MAX;
    if (idx != SIZE_MAX) {
        if (err) {
            log_warn("router: cannot list the models of router-mode service '%s': %s", s->id, msg ? msg : "");
        } else if (s->list_over) {
            log_warn("router: router-mode service '%s': GET /models answered more than %zu bytes; its model list is "
                     "kept as it was",
                     s->id, (size_t)ROUTER_LIST_MAX);
        } else {
            cJSON *j = cJSON_ParseWithLength(s->list_body.p, s->list_body.len);
            const cJSON *data = j ? cJSON_GetObjectItemCaseSensitive(j, "data") : NULL, *e;
            strv names = STRV_INIT;
            cJSON_ArrayForEach(e, data)
            {
                const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
                if (cJSON_IsString(id) && *id->valuestring && strlen(id->valuestring) <= MODELSCAN_MAX_MODEL)
                    strv_push(&names, id->valuestring);
            }
            if (!j || !cJSON_IsArray(data))
                log_warn("router: router-mode service '%s': GET /models did not answer {\"data\":[...]}", s->id);
            route_table_set_listed(&rt->table, idx, (const char *const *)names.v, names.n);
            log_info("router: router-mode service '%s' lists %zu model(s)", s->id, names.n);
            strv_release(&names);
            cJSON_Delete(j);
        }
    }
    buf_clear(&s->list_body);
    s->list_over = false;
    while (s->listwait) relay_redispatch(s->listwait); /* unlists it */
    rsvc_unref(s);
}

static const upstream_cbs list_cbs = {NULL, list_data, list_end, NULL};

void rsvc_list_fetch(router *rt, rsvc *s)
{
    list_fetch(rt, s);
}

static void list_fetch(router *rt, rsvc *s)
{
    if (s->listing || rt->closing) return;
    upstream_pool *pool;
    char err[512];
    if (rsvc_pool(rt, s, NULL, &pool, err, sizeof err) != 1) {
        log_warn("router: router-mode service '%s': %s", s->id, err);
        return;
    }
    upstream_head h = {.method = {"GET", 3}, .target = {"/models", 7}, .body_len = 0};
    buf_clear(&s->list_body);
    s->list_over = false;
    s->listing = upstream_start(pool, &h, &list_cbs, s);
    if (!s->listing) return;
    rsvc_ref(s);
    upstream_end(s->listing);
}

/* ---- events ---- */

static int state_from_name(const char *n)
{
    for (int i = 0; i < SVC__STATES; i++)
        if (!strcmp(svc_state_names[i], n)) return i;
    return -1;
}

activator *router_activator(router *rt)
{
    return rt ? rt->act : NULL;
}

rmetrics *router_metrics(router *rt)
{
    return rt ? rt->rm : NULL;
}

void router_on_event(router *rt, const store_event *e)
{
    if (!rt || !e->kind || strcmp(e->kind, "state") || !e->service || !e->to) return;
    rsvc *s = router_svc_find(rt, e->service);
    int st = state_from_name(e->to);
    if (!s || st < 0) return;
    s->state = (svc_state)st;
    idle_on_state(rt, s, s->state);
    size_t idx = svc_index(rt, s);
    if (s->router_mode && st == SVC_READY) list_fetch(rt, s);
    if (s->router_mode && (st == SVC_DOWN || st == SVC_FAILED)) route_table_set_listed(&rt->table, idx, NULL, 0);
    refresh_flags(rt);
}

/* ---- drain ---- */

static void drain_timer_cb(uv_timer_t *t);

static bool drain_done(router *rt)
{
    for (size_t i = 0; i < rt->n_svcs; i++)
        if (rt->svcs[i]->draining && rt->svcs[i]->n_inflight) return false;
    return true;
}

void router_inflight_changed(router *rt, rsvc *s)
{
    if (rt->draining && s->draining && !s->n_inflight && drain_done(rt))
        uv_timer_start(&rt->drain_timer, drain_timer_cb, 0, 0); /* switch_drained from a later turn */
}

static void drain_timer_cb(uv_timer_t *t)
{
    router *rt = t->data;
    if (!rt->draining) return;
    /* the deadline: whatever still runs on a leaving service is cut off */
    for (size_t i = 0; i < rt->n_svcs; i++) {
        rsvc *s = rt->svcs[i];
        if (!s->draining) continue;
        char msg[300];
        snprintf(msg, sizeof msg, "service '%s' is being switched out and drain_timeout passed", s->id);
        kill_list(&s->inflight, 503, "draining", msg);
    }
    rt->draining = false;
    if (rt->h.drained) rt->h.drained(rt->h.ud, rt->drain_ticket);
}

static void on_drain_hook(uint64_t ticket, const char *const *leaving, size_t n, int64_t timeout_ms, void *ud)
{
    router *rt = ud;
    rt->draining = true;
    rt->drain_ticket = ticket;
    size_t inflight = 0;
    for (size_t i = 0; i < n; i++) {
        rsvc *s = router_svc_find(rt, leaving[i]);
        if (!s) continue;
        s->draining = true;
        inflight += s->n_inflight;
    }
    log_info("router: draining %zu service(s) for a mode switch: %zu request(s) in flight, up to %lld ms", n,
             inflight, (long long)timeout_ms);
    /* switch_drained from a later loop turn, never from inside the hook.
     * The switch's own backstop timer runs for the same drain_timeout and
     * was started first (libuv fires equal deadlines in start order): ours
     * is due 1 ms earlier, so what still runs is cut off, with its
     * "draining" error, before the switch stops the service under it. */
    int64_t due = timeout_ms > 1 ? timeout_ms - 1 : 0;
    uv_timer_start(&rt->drain_timer, drain_timer_cb, inflight ? (uint64_t)due : 0, 0);
}

static void on_undrain_hook(uint64_t ticket, const char *const *names, size_t n, void *ud)
{
    router *rt = ud;
    if (rt->drain_ticket == ticket && rt->draining) {
        rt->draining = false;
        uv_timer_stop(&rt->drain_timer);
    }
    for (size_t i = 0; i < n; i++) {
        rsvc *s = router_svc_find(rt, names[i]);
        if (!s) continue;
        s->draining = false;
        /* what waited goes on per the new state: ready again after a
         * rollback, or activated anew */
        while (s->parked) relay_redispatch(s->parked);
    }
}

/* ---- endpoints ---- */

/* ,"model_state": a router-mode service's model as the daemon last polled it */
static void model_state_json(router *rt, const rsvc *s, const char *name, buf *b)
{
    static const char *const names[] = {"unloaded", "loading", "loaded"};
    int st = s->router_mode && rt->h.model_state ? rt->h.model_state(rt->h.ud, s->id, name) : -1;
    if (st >= 0 && st < 3) buf_printf(b, ",\"model_state\":\"%s\"", names[st]);
}

static void get_models(router *rt, srv_conn *c, const http_msg *m)
{
    buf b = BUF_INIT;
    buf_adds(&b, "{\"object\":\"list\",\"data\":[");
    bool first = true;
    for (size_t i = 0; i < rt->table.n_names; i++) {
        const route_name *n = &rt->table.names[i];
        if (n->service >= rt->n_svcs) continue;
        rsvc *s = rt->svcs[n->service];
        buf_adds(&b, first ? "{\"id\":" : ",{\"id\":");
        first = false;
        buf_json_str(&b, n->name);
        buf_printf(&b, ",\"object\":\"model\",\"created\":%lld,\"owned_by\":\"gpumod\",\"service\":",
                   (long long)rt->started_unix_s);
        buf_json_str(&b, s->id);
        buf_adds(&b, ",\"kind\":");
        buf_json_str(&b, route_kind_names[n->kind]);
        buf_adds(&b, ",\"state\":");
        buf_json_str(&b, svc_state_names[s->state]);
        model_state_json(rt, s, n->name, &b);
        buf_addc(&b, '}');
    }
    if (rt->table.def < rt->n_svcs) {
        rsvc *s = rt->svcs[rt->table.def];
        buf_adds(&b, first ? "{\"id\":\"default\"" : ",{\"id\":\"default\"");
        buf_printf(&b, ",\"object\":\"model\",\"created\":%lld,\"owned_by\":\"gpumod\",\"service\":",
                   (long long)rt->started_unix_s);
        buf_json_str(&b, s->id);
        buf_adds(&b, ",\"kind\":\"default\",\"state\":");
        buf_json_str(&b, svc_state_names[s->state]);
        buf_addc(&b, '}');
    }
    buf_adds(&b, "]}\n");
    answer(rt, c, m, 200, "application/json", b.p, b.len, 0);
    buf_release(&b);
}

static void get_metrics(router *rt, srv_conn *c, const http_msg *m)
{
    buf b = BUF_INIT;
    char err[256];
    if (!rt->rm || rm_render(rt->rm, &rt->h, &b, err, sizeof err)) {
        answer_error(rt, c, m, false, 500, "internal_error", "metrics: %s", rt->rm ? err : "no metrics");
    } else {
        answer(rt, c, m, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.len, 0);
    }
    buf_release(&b);
}

static void preflight(router *rt, srv_conn *c, const http_msg *m)
{
    size_t olen = 0;
    const char *origin = router_cors_origin(rt, m, &olen);
    const view *o = field(m, "origin");
    if (o && !origin) {
        answer_error(rt, c, m, false, 403, "cors_refused", "origin '%.*s' is not in router.cors_origins",
                     (int)(o->len > 200 ? 200 : o->len), o->p);
        return;
    }
    http_field f[8];
    size_t n = 0;
    if (origin) {
        const view *rh = field(m, "access-control-request-headers");
        f[n++] = (http_field){{"Access-Control-Allow-Origin", 27}, {origin, olen}};
        f[n++] = (http_field){{"Vary", 4}, {"Origin", 6}};
        f[n++] = (http_field){{"Access-Control-Allow-Methods", 28}, {"GET, POST, OPTIONS", 18}};
        if (rh && rh->len) f[n++] = (http_field){{"Access-Control-Allow-Headers", 28}, *rh};
        else
            f[n++] = (http_field){{"Access-Control-Allow-Headers", 28},
                                  {"authorization, content-type, x-api-key, anthropic-version", 57}};
        f[n++] = (http_field){{"Access-Control-Max-Age", 22}, {"600", 3}};
    }
    f[n++] = (http_field){{"Allow", 5}, {"GET, POST, OPTIONS", 18}};
    access_info a;
    access_info_fill(&a, c, m);
    srv_respond_head(c, 204, f, n, 0);
    srv_end(c);
    router_access_log(rt, &a, NULL, NULL, 204, 0, 0, 0, 0, false);
}

/* Why a path given after /upstream/{service} is refused, or NULL: a "."
 * or ".." segment (also written %2e), an encoded '/' or '\\' (%2f, %5c)
 * or a '\\' would reach paths above a remote's base path, with the
 * operator's key. */
static const char *upstream_path_bad(view p)
{
    for (size_t i = 0; i < p.len; i++) {
        if (p.p[i] == '\\') return "a '\\' is not allowed in the path";
        if (p.p[i] == '%' && i + 2 < p.len) {
            char a = p.p[i + 1], b = (char)(p.p[i + 2] | 0x20);
            if ((a == '2' && b == 'f') || (a == '5' && b == 'c'))
                return "an encoded '/' or '\\' (%2F, %5C) is not allowed in the path";
        }
    }
    size_t i = 0;
    while (i < p.len) {
        while (i < p.len && p.p[i] == '/') i++;
        size_t j = i, dots = 0, other = 0;
        while (j < p.len && p.p[j] != '/') {
            if (p.p[j] == '.') {
                dots++;
                j++;
            } else if (p.p[j] == '%' && j + 2 < p.len && p.p[j + 1] == '2' && (p.p[j + 2] | 0x20) == 'e') {
                dots++;
                j += 3;
            } else {
                other++;
                j++;
            }
        }
        if (j > i && !other && dots <= 2) return "a '.' or '..' segment is not allowed in the path";
        i = j;
    }
    return NULL;
}

static const struct {
    const char *path;
    rep ep;
} routed[] = {
    {"/v1/chat/completions", EP_CHAT}, {"/v1/completions", EP_COMPLETIONS}, {"/v1/embeddings", EP_EMBEDDINGS},
    {"/v1/rerank", EP_RERANK},         {"/v1/responses", EP_RESPONSES},     {"/v1/messages", EP_MESSAGES},
};

static srv_mode on_head(srv_conn *c, const http_msg *m, void *ud)
{
    router *rt = ud;
    const char *q = memchr(m->target.p, '?', m->target.len);
    view path = {m->target.p, q ? (size_t)(q - m->target.p) : m->target.len};
    bool anthropic = view_eq(path, "/v1/messages");
    bool get = view_eq(m->method, "GET") || view_eq(m->method, "HEAD");
    if (rt->closing) {
        answer_error(rt, c, m, anthropic, 503, "shutting_down", "the daemon is shutting down");
        return SRV_STREAM;
    }
    if (view_eq(m->method, "OPTIONS")) {
        preflight(rt, c, m);
        return SRV_STREAM;
    }
    if (view_eq(path, "/health")) {
        if (!get) answer_error(rt, c, m, false, 405, "method_not_allowed", "/health answers GET");
        else answer(rt, c, m, 200, "application/json", "{\"status\":\"ok\"}\n", 16, 0);
        return SRV_STREAM;
    }
    if (!authorized(rt, m)) {
        answer_error(rt, c, m, anthropic, 401, "invalid_api_key",
                     "a valid API key is required: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'");
        return SRV_STREAM;
    }
    if (view_eq(path, "/v1/models") || view_eq(path, "/models")) {
        if (!get) answer_error(rt, c, m, false, 405, "method_not_allowed", "%.*s answers GET", (int)path.len, path.p);
        else get_models(rt, c, m);
        return SRV_STREAM;
    }
    if (view_eq(path, "/metrics")) {
        if (!get) answer_error(rt, c, m, false, 405, "method_not_allowed", "/metrics answers GET");
        else get_metrics(rt, c, m);
        return SRV_STREAM;
    }
    for (size_t i = 0; i < sizeof routed / sizeof routed[0]; i++) {
        if (!view_eq(path, routed[i].path)) continue;
        if (!view_eq(m->method, "POST")) {
            answer_error(rt, c, m, anthropic, 405, "method_not_allowed", "%s answers POST", routed[i].path);
            return SRV_STREAM;
        }
        relay_begin(rt, c, m, routed[i].ep, NULL, NULL);
        return SRV_STREAM;
    }
    if (path.len > 10 && !memcmp(path.p, "/upstream/", 10)) {
        /* the service id and the rest are split on the path only; the
         * query is appended as it came */
        const char *sid = path.p + 10, *pend = path.p + path.len;
        const char *slash = memchr(sid, '/', (size_t)(pend - sid));
        size_t sl = slash ? (size_t)(slash - sid) : (size_t)(pend - sid);
        char id[128];
        snprintf(id, sizeof id, "%.*s", (int)(sl < sizeof id ? sl : sizeof id - 1), sid);
        rsvc *s = sl < sizeof id ? router_svc_find(rt, id) : NULL;
        if (!s) {
            answer_error(rt, c, m, false, 404, "service_not_found", "/upstream/%s/...: no service '%s' is configured",
                         id, id);
            return SRV_STREAM;
        }
        view rest = slash ? (view){slash, (size_t)(pend - slash)} : (view){"/", 1};
        const char *why = upstream_path_bad(rest);
        if (why) {
            answer_error(rt, c, m, false, 400, "bad_path",
                         "/upstream/%s%.*s: %s; the path goes to the service as it is written, below its base path",
                         id, (int)(rest.len > 200 ? 200 : rest.len), rest.p, why);
            return SRV_STREAM;
        }
        if (s->state != SVC_READY) {
            answer_error(rt, c, m, false, 503, "service_not_ready",
                         "service '%s' is %s: /upstream/ does not start services (send a request naming its model, "
                         "or run 'gpumod service start %s')",
                         s->id, svc_state_names[s->state], s->id);
            return SRV_STREAM;
        }
        size_t ql = q ? (size_t)(m->target.p + m->target.len - q) : 0;
        char *t = xasprintf("%.*s%.*s", (int)rest.len, rest.p, (int)ql, q ? q : "");
        char *target = rsvc_target(s, t, strlen(t));
        free(t);
        relay_begin(rt, c, m, EP_UPSTREAM, s, target);
        free(target);
        return SRV_STREAM;
    }
    answer_error(rt, c, m, anthropic, 404, "not_found",
                 "no route %.*s %.*s: the router serves /v1/models, /v1/chat/completions, /v1/completions, "
                 "/v1/embeddings, /v1/rerank, /v1/responses, /v1/messages, /upstream/SERVICE/PATH, /health, /metrics",
                 (int)m->method.len, m->method.p, (int)(path.len > 200 ? 200 : path.len), path.p);
    return SRV_STREAM;
}

static void on_body(srv_conn *c, const view *chunk, bool last, void *ud)
{
    relay *x = srv_conn_ud(c);
    if (x) relay_body(x, chunk, last);
}

static void on_abort(srv_conn *c, void *ud)
{
    relay *x = srv_conn_ud(c);
    if (x) relay_client_gone(x);
}

static void on_drain(srv_conn *c, void *ud)
{
    relay *x = srv_conn_ud(c);
    if (x) relay_client_drained(x);
}

static void on_request(srv_conn *c, const http_msg *m, const view *body, void *ud)
{
    srv_respond(c, 500, "application/json", "{\"error\":{\"message\":\"unexpected buffered request\"}}\n", 52);
}

/* ---- the default, kept in the state dir ---- */

static char *default_path(router *rt)
{
    return xasprintf("%s/%s", rt->state_dir, DEFAULT_FILE);
}

static void default_load(router *rt)
{
    char *p = default_path(rt);
    char why[128];
    /* slurp_open: a FIFO planted in the state dir must not block the start */
    int fd = slurp_open(p, why, sizeof why);
    if (fd < 0 && errno != ENOENT) log_warn("router: '%s' is not read: %s", p, why);
    free(p);
    FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return;
    }
    char line[256] = "";
    if (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (*line) rt->stored_default = xstrdup(line);
    }
    fclose(f);
}

static int default_store(router *rt, const char *id, char *err, size_t errlen)
{
    char *p = default_path(rt);
    char *tmp = xasprintf("%s.tmp", p);
    int rc = -1;
    if (!id) {
        if (unlink(p) && errno != ENOENT) snprintf(err, errlen, "cannot remove '%s': %s", p, strerror(errno));
        else rc = 0;
        goto out;
    }
    char why[128];
    /* on the loop: a FIFO planted at tmp must fail, not wait for a reader */
    int fd = slurp_open_append(tmp, O_CREAT | O_TRUNC, 0600, why, sizeof why);
    if (fd < 0) {
        snprintf(err, errlen, "cannot write '%s': %s", tmp, why);
        goto out;
    }
    char *line = xasprintf("%s\n", id);
    bool ok = write(fd, line, strlen(line)) == (ssize_t)strlen(line) && fsync(fd) == 0;
    free(line);
    if (close(fd) || !ok || rename(tmp, p)) {
        snprintf(err, errlen, "cannot write '%s': %s", p, strerror(errno));
        unlink(tmp);
        goto out;
    }
    rc = 0;
out:
    free(tmp);
    free(p);
    return rc;
}

static void default_json(router *rt, buf *b)
{
    buf_adds(b, "{\"service\":");
    if (rt->table.def < rt->n_svcs) buf_json_str(b, rt->svcs[rt->table.def]->id);
    else buf_adds(b, "null");
    buf_adds(b, ",\"source\":");
    if (rt->table.def >= rt->n_svcs) buf_adds(b, "null");
    else if (rt->stored_default) buf_adds(b, "\"route default\"");
    else buf_adds(b, "\"settings\"");
    buf_adds(b, ",\"settings\":");
    if (rt->cfg->set.router.default_service) buf_json_str(b, rt->cfg->set.router.default_service);
    else buf_adds(b, "null");
    buf_addc(b, '}');
}

static void api_error(srv_conn *c, int status, const char *code, const char *msg)
{
    buf b = BUF_INIT;
    buf_adds(&b, "{\"error\":{\"code\":");
    buf_json_str(&b, code);
    buf_adds(&b, ",\"message\":");
    buf_json_str(&b, msg);
    buf_adds(&b, "}}\n");
    srv_respond(c, status, "application/json", b.p, b.len);
    buf_release(&b);
}

void router_api_default(router *rt, srv_conn *c, const http_msg *m, const view *body)
{
    buf b = BUF_INIT;
    if (view_eq(m->method, "PUT")) {
        char jerr[256];
        cJSON *j = jstrict_parse(body->p, body->len, jerr, sizeof jerr);
        const cJSON *sv = j ? cJSON_GetObjectItemCaseSensitive(j, "service") : NULL;
        if (!j || !cJSON_IsObject(j) || !sv || !(cJSON_IsString(sv) || cJSON_IsNull(sv))) {
            char msg[512];
            snprintf(msg, sizeof msg,
                     "PUT /route/default: expected a JSON body {\"service\": \"ID\"} (or null to go back to "
                     "router.default)%s%s",
                     j ? "" : ": ", j ? "" : jerr);
            cJSON_Delete(j);
            api_error(c, 400, "bad_request", msg);
            return;
        }
        char err[512];
        const char *id = cJSON_IsString(sv) ? sv->valuestring : NULL;
        if (id) {
            if (route_table_set_default(&rt->table, id, err, sizeof err)) {
                apply_default(rt); /* the table keeps what it had */
                cJSON_Delete(j);
                api_error(c, 404, "not_found", err);
                return;
            }
            /* an alias is stored as the id it names */
            id = rt->svcs[rt->table.def]->id;
        }
        if (default_store(rt, id, err, sizeof err)) {
            cJSON_Delete(j);
            apply_default(rt);
            api_error(c, 500, "internal", err);
            return;
        }
        free(rt->stored_default);
        rt->stored_default = id ? xstrdup(id) : NULL;
        apply_default(rt);
        log_info("router: default set to %s (route default)", id ? id : "router.default");
        cJSON_Delete(j);
    }
    default_json(rt, &b);
    buf_addc(&b, '\n');
    srv_respond(c, 200, "application/json", b.p, b.len);
    buf_release(&b);
}

void router_api_table(router *rt, srv_conn *c)
{
    buf b = BUF_INIT;
    buf_adds(&b, "{\"listen\":");
    if (rt->srv) buf_printf(&b, "%d", rt->port);
    else buf_adds(&b, "null");
    buf_adds(&b, ",\"default\":");
    default_json(rt, &b);
    buf_adds(&b, ",\"names\":[");
    bool first = true;
    for (size_t i = 0; i < rt->table.n_names; i++) {
        const route_name *n = &rt->table.names[i];
        if (n->service >= rt->n_svcs) continue;
        buf_adds(&b, first ? "{\"name\":" : ",{\"name\":");
        first = false;
        buf_json_str(&b, n->name);
        buf_adds(&b, ",\"service\":");
        buf_json_str(&b, rt->svcs[n->service]->id);
        buf_adds(&b, ",\"kind\":");
        buf_json_str(&b, route_kind_names[n->kind]);
        buf_addc(&b, '}');
    }
    buf_adds(&b, "],\"services\":[");
    for (size_t i = 0; i < rt->n_svcs; i++) {
        rsvc *s = rt->svcs[i];
        buf_adds(&b, i ? ",{\"id\":" : "{\"id\":");
        buf_json_str(&b, s->id);
        buf_adds(&b, ",\"state\":");
        buf_json_str(&b, svc_state_names[s->state]);
        buf_printf(&b, ",\"remote\":%s,\"draining\":%s,\"inflight\":%zu,\"queued\":%zu", s->remote ? "true" : "false",
                   s->draining ? "true" : "false", s->n_inflight, rt->act ? act_queue_depth(rt->act, s->id) : 0);
        buf_addc(&b, '}');
    }
    buf_adds(&b, "]}\n");
    srv_respond(c, 200, "application/json", b.p, b.len);
    buf_release(&b);
}

void router_api_resolve(router *rt, srv_conn *c, const char *name)
{
    if (!name || !*name) {
        api_error(c, 400, "bad_request", "GET /route/resolve: expected ?model=NAME");
        return;
    }
    route_result res = route_resolve(&rt->table, name);
    buf b = BUF_INIT;
    if (res.status != ROUTE_OK) {
        route_message(&rt->table, &res, name, &b);
        api_error(c, res.status, res.status == ROUTE_NOT_FOUND ? "not_found" : "ambiguous", b.p);
        buf_release(&b);
        return;
    }
    const char *up = NULL;
    buf e = BUF_INIT;
    int urc = route_upstream(&rt->table, res.service, res.kind, &up, &e);
    buf_adds(&b, "{\"model\":");
    buf_json_str(&b, name);
    buf_adds(&b, ",\"service\":");
    buf_json_str(&b, res.id);
    buf_adds(&b, ",\"kind\":");
    buf_json_str(&b, route_kind_names[res.kind]);
    buf_adds(&b, ",\"upstream_model\":");
    if (urc == 0) buf_json_str(&b, up ? up : name);
    else buf_adds(&b, "null");
    buf_adds(&b, ",\"upstream_error\":");
    if (urc) buf_json_str(&b, e.p);
    else buf_adds(&b, "null");
    buf_adds(&b, "}\n");
    srv_respond(c, 200, "application/json", b.p, b.len);
    buf_release(&b);
    buf_release(&e);
}

/* ---- life ---- */

router *router_new(const router_env *env, const config *cfg)
{
    router *rt = xcalloc(1, sizeof *rt);
    rt->loop = env->loop;
    rt->h = env->host;
    rt->state_dir = xstrdup(env->state_dir);
    rt->listen_override = env->listen ? xstrdup(env->listen) : NULL;
    rt->no_router = env->no_router;
    rt->insecure = env->insecure;
    rt->port = -1;
    rt->keys = (strv)STRV_INIT;
    rt->cors = (strv)STRV_INIT;
    rt->started_unix_s = clock_unix_ms() / 1000;
    rt->table.def = SIZE_MAX;
    default_load(rt);
    rt->rm = rm_new();
    rt->act = act_new(rt->loop, &rt->h, cfg, rt->rm);
    uv_timer_init(rt->loop, &rt->drain_timer);
    rt->drain_timer.data = rt;
    rt->drain_timer_init = true;
    idle_init(rt);
    apply_config(rt, cfg);
    if (rt->h.set_drain) {
        rt->h.set_drain(rt->h.ud, on_drain_hook, on_undrain_hook, rt);
    }
    return rt;
}

int router_listen(router *rt, char *err, size_t errlen)
{
    const settings *set = &rt->cfg->set;
    if (!set->router.enabled || rt->no_router) {
        log_info("router: not listening (%s)", rt->no_router ? "--no-router" : "router.enabled is false");
        return 0;
    }
    const char *l = rt->listen_override ? rt->listen_override : set->router.listen;
    char host[256];
    int port;
    if (router_check_listen(set, rt->listen_override, rt->insecure, err, errlen)) return -1;
    parse_listen(l, host, sizeof host, &port);
    srv_opts o = {
        .limits = {.max_head = (size_t)set->router.max_header_kb << 10, .max_fields = 128, .max_target = 8192,
                   .max_body = (uint64_t)set->router.max_body_mb << 20},
        .header_timeout_ms = set->router.header_timeout_ms,
        .body_timeout_ms = set->router.body_timeout_ms,
        .max_conns = (size_t)set->router.max_connections,
        .on_request = on_request,
        .on_abort = on_abort,
        .on_head = on_head,
        .on_body = on_body,
        .on_drain = on_drain,
        .ud = rt,
    };
    rt->srv = srv_new(rt->loop, &o);
    char e2[256];
    if (srv_listen_tcp(rt->srv, host, port, e2, sizeof e2)) {
        snprintf(err, errlen, "router: cannot listen on %s: %s", l, e2);
        srv_close(rt->srv, NULL, NULL);
        rt->srv = NULL;
        return -1;
    }
    rt->port = srv_tcp_port(rt->srv);
    log_info("router: listening on http://%s:%d (%s%s)", host, rt->port,
             rt->keys.n ? "clients must authenticate" : "no authentication", !is_loopback(host) && !rt->keys.n ? ", --insecure" : "");
    return 0;
}

int router_port(const router *rt)
{
    return rt->srv ? rt->port : -1;
}

void router_set_config(router *rt, const config *cfg)
{
    if (rt->act) act_set_config(rt->act, cfg);
    apply_config(rt, cfg);
}

static void close_step(void *ud)
{
    router *rt = ud;
    if (--rt->pending > 0) return;
    if (rt->close_cb) rt->close_cb(rt->close_ud);
}

static void srv_closed(void *ud)
{
    router *rt = ud;
    rt->srv = NULL;
    close_step(rt);
}

static void timer_closed(uv_handle_t *h)
{
    close_step(h->data);
}

void router_close(router *rt, void (*cb)(void *ud), void *ud)
{
    rt->closing = true;
    rt->close_cb = cb;
    rt->close_ud = ud;
    rt->pending = 1;
    if (rt->h.set_drain) {
        rt->h.set_drain(rt->h.ud, NULL, NULL, NULL);
    }
    while (rt->all) relay_kill(rt->all, 503, "shutting_down", "the daemon is shutting down");
    if (rt->act) {
        act_free(rt->act);
        rt->act = NULL;
    }
    if (rt->idle_init) rt->pending += 2; /* its two timers */
    idle_close(rt, timer_closed);
    for (size_t i = 0; i < rt->n_svcs; i++) {
        rsvc *s = rt->svcs[i];
        if (s->listing) {
            upstream_abort(s->listing);
            s->listing = NULL;
            rsvc_unref(s);
        }
        rsvc_gai_abandon(s);
        rsvc_pool_drop(rt, s);
    }
    if (rt->srv) {
        rt->pending++;
        srv_close(rt->srv, srv_closed, rt);
    }
    if (rt->drain_timer_init) {
        rt->pending++;
        rt->drain_timer_init = false;
        uv_close((uv_handle_t *)&rt->drain_timer, timer_closed);
    }
    close_step(rt);
}

void router_free(router *rt)
{
    if (!rt) return;
    for (size_t i = 0; i < rt->n_svcs; i++) {
        rt->svcs[i]->live = false;
        rsvc_unref(rt->svcs[i]);
    }
    free(rt->svcs);
    route_table_release(&rt->table);
    if (rt->act) act_free(rt->act);
    rm_free(rt->rm);
    strv_release(&rt->keys);
    strv_release(&rt->cors);
    free(rt->stored_default);
    free(rt->state_dir);
    free(rt->listen_override);
    free(rt);
}
