/* remote.c - where a service's requests go: a local engine's address, or
 * a remote service's base_url (http or https, a path prefix, a host name
 * resolved with uv_getaddrinfo under a deadline and cached for a TTL),
 * and the keep-alive upstream pool per service.
 *
 * Design: the pool is made on first use and kept; a remote whose host is
 * a name is resolved on the thread pool (never on the loop: getaddrinfo
 * blocks) and every request that needs the address meanwhile waits on
 * the service's list, so one resolution serves them all.  The deadline is
 * a loop timer: when it fires the waiters get 502 and the lookup's late
 * answer is dropped.  The API key is read from its environment variable
 * when the configuration is applied and lives only in rsvc.auth: it is
 * never logged, never in /v1/models or an error message. */
#include "router/rint.h"
#include "router/tls.h"
#include "util/clock.h"
#include "util/url.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct gai_op {
    uv_getaddrinfo_t req;
    uv_timer_t timer;
    router *rt;
    rsvc *svc; /* NULL once abandoned */
    int open;  /* the lookup and the timer handle: freed when both are done */
};

static bool is_numeric_host(const char *h)
{
    unsigned char tmp[16];
    return inet_pton(AF_INET, h, tmp) == 1 || inet_pton(AF_INET6, h, tmp) == 1;
}

int rsvc_endpoint(rsvc *s, const preset *p, char *err, size_t errlen)
{
    free(s->host);
    free(s->prefix);
    free(s->auth);
    free(s->key_env);
    free(s->conf_err);
    s->host = s->prefix = s->auth = s->key_env = s->conf_err = NULL;
    s->remote = p->driver == DRV_REMOTE;
    s->https = false;
    s->router_mode = p->driver == DRV_LLAMACPP && p->llama.models_dir && !p->model_path;
    if (!s->remote) {
        const char *h = p->host && *p->host ? p->host : "127.0.0.1";
        /* an engine listening on every address is reached on loopback */
        if (!strcmp(h, "0.0.0.0")) h = "127.0.0.1";
        else if (!strcmp(h, "::") || !strcmp(h, "[::]")) h = "::1";
        s->host = xstrdup(h);
        s->port = (int)p->port;
        s->prefix = xstrdup("");
        return 0;
    }
    const char *u = p->remote.base_url;
    url_base ub;
    char uerr[400];
    char *err0 = err;
    size_t errlen0 = errlen;
    if (!u) {
        snprintf(err, errlen, "remote service '%s': remote.base_url is not set", p->id);
    } else if (url_base_parse(u, &ub, uerr, sizeof uerr)) {
        snprintf(err, errlen, "remote service '%s': %s", p->id, uerr);
    } else {
        s->https = ub.https;
        s->host = xstrdup(ub.host);
        s->port = ub.port;
        s->prefix = xstrdup(ub.path);
        err = NULL;
    }
    if (err) {
        s->conf_err = xstrdup(err);
        return -1;
    }
    if (p->remote.api_key_env && *p->remote.api_key_env) {
        s->key_env = xstrdup(p->remote.api_key_env);
        const char *k = getenv(p->remote.api_key_env);
        if (k && *k) {
            bool clean = true;
            for (const char *q = k; *q; q++)
                if ((unsigned char)*q < 0x21 || *q == 0x7f) clean = false;
            if (clean) {
                s->auth = xasprintf("Bearer %s", k);
            } else {
                /* never sent without it, silently: every request says why */
                s->conf_err = xasprintf("remote service '%s': the variable '%s' (remote.api_key_env) holds a key "
                                        "with a space or a control character; it cannot be sent",
                                        p->id, p->remote.api_key_env);
                snprintf(err0, errlen0, "%s", s->conf_err);
                return -1;
            }
        }
    }
    return 0;
}

char *rsvc_target(const rsvc *s, const char *target, size_t len)
{
    if (!s->remote) return xstrndup(target, len);
    /* base_url stands for the API root a client calls /v1: /v1/x -> prefix/x */
    if (len >= 3 && !memcmp(target, "/v1", 3) && (len == 3 || target[3] == '/' || target[3] == '?'))
        return xasprintf("%s%.*s", s->prefix, (int)(len - 3), target + 3);
    return xasprintf("%s%.*s", s->prefix, (int)len, target);
}

bool rsvc_forward_field(const rsvc *s, const http_field *f)
{
    if (!s->remote && !(s->rt && s->rt->keys.n)) return true;
    if (f->name.len == 13 && !strncasecmp(f->name.p, "authorization", 13)) return false;
    if (f->name.len == 9 && !strncasecmp(f->name.p, "x-api-key", 9)) return false;
    return true;
}

#define GAI_MAX 8 /* addresses of a name tried in turn */

static upstream_pool *pool_make(router *rt, rsvc *s, const char *const *ips, size_t n_ips, char *err,
                                size_t errlen)
{
    const char *ip = ips[0];
    char hh[300];
    bool dflt = s->port == (s->https ? 443 : 80);
    bool v6 = strchr(s->host, ':') != NULL;
    if (dflt) snprintf(hh, sizeof hh, v6 ? "[%s]" : "%s", s->host);
    else snprintf(hh, sizeof hh, v6 ? "[%s]:%d" : "%s:%d", s->host, s->port);
    upstream_opts o = {.host = ip, .port = s->port, .host_header = s->remote ? hh : NULL,
                       .more_hosts = n_ips > 1 ? ips + 1 : NULL, .n_more_hosts = n_ips > 1 ? n_ips - 1 : 0};
    if (s->https) {
        if (tls_require(s->id, err, errlen)) return NULL;
        o.tls = &tls_upstream_ops;
        o.tls_name = s->host;
    }
    return upstream_pool_new(rt->loop, &o, err, errlen);
}

static void pool_set(router *rt, rsvc *s, upstream_pool *p, const char *ip, int64_t expires)
{
    if (s->pool) upstream_pool_close(s->pool, NULL, NULL);
    s->pool = p;
    free(s->pool_ip);
    s->pool_ip = xstrdup(ip);
    s->pool_expires = expires;
}

static void gai_free_maybe(gai_op *op)
{
    if (--op->open == 0) free(op);
}

static void gai_timer_closed(uv_handle_t *h)
{
    gai_free_maybe(h->data);
}

/* The waiters of s go on (they find the pool, or fail with the error). */
static void wake_waiters(rsvc *s)
{
    while (s->waiting) relay_redispatch(s->waiting); /* takes it off the list first */
}

static void fail_waiters(rsvc *s, int status, const char *code, const char *msg)
{
    while (s->waiting) relay_kill(s->waiting, status, code, msg); /* unlists it */
}

static void on_gai(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    gai_op *op = req->data;
    rsvc *s = op->svc;
    uv_timer_stop(&op->timer);
    uv_close((uv_handle_t *)&op->timer, gai_timer_closed);
    if (!s) { /* abandoned (deadline, shutdown) */
        uv_freeaddrinfo(res);
        gai_free_maybe(op);
        return;
    }
    s->gai = NULL;
    /* every address, in getaddrinfo's order: a connect that fails goes on
     * to the next (a name giving ::1 first to a server on IPv4 only) */
    char ipb[GAI_MAX][INET6_ADDRSTRLEN];
    const char *ips[GAI_MAX];
    size_t n_ips = 0;
    if (status == 0 && res) {
        for (struct addrinfo *a = res; a && n_ips < GAI_MAX; a = a->ai_next) {
            char *ip = ipb[n_ips];
            if (a->ai_family == AF_INET)
                inet_ntop(AF_INET, &((struct sockaddr_in *)a->ai_addr)->sin_addr, ip, INET6_ADDRSTRLEN);
            else if (a->ai_family == AF_INET6)
                inet_ntop(AF_INET6, &((struct sockaddr_in6 *)a->ai_addr)->sin6_addr, ip, INET6_ADDRSTRLEN);
            else continue;
            bool dup = false;
            for (size_t k = 0; k < n_ips; k++) dup = dup || !strcmp(ips[k], ip);
            if (!dup) ips[n_ips++] = ip;
        }
    }
    uv_freeaddrinfo(res);
    const char *ip = n_ips ? ips[0] : "";
    router *rt = op->rt;
    gai_free_maybe(op);
    char err[512];
    if (!*ip) {
        snprintf(err, sizeof err, "remote service '%s': cannot resolve '%s': %s", s->id, s->host,
                 status ? uv_strerror(status) : "no address");
        fail_waiters(s, 502, "upstream_unreachable", err);
        rsvc_unref(s);
        return;
    }
    upstream_pool *p = pool_make(rt, s, ips, n_ips, err, sizeof err);
    if (!p) {
        fail_waiters(s, 502, "upstream_unreachable", err);
        rsvc_unref(s);
        return;
    }
    pool_set(rt, s, p, ip, clock_mono_ms() + ROUTER_DNS_TTL_MS);
    wake_waiters(s);
    rsvc_unref(s);
}

static void on_gai_timeout(uv_timer_t *t)
{
    gai_op *op = t->data;
    rsvc *s = op->svc;
    if (!s) return;
    op->svc = NULL;
    s->gai = NULL;
    char err[512];
    snprintf(err, sizeof err, "remote service '%s': resolving '%s' took longer than %d ms", s->id, s->host,
             ROUTER_DNS_TIMEOUT_MS);
    fail_waiters(s, 504, "upstream_timeout", err);
    rsvc_unref(s);
}

void rsvc_gai_abandon(rsvc *s)
{
    if (!s->gai) return;
    gai_op *op = s->gai;
    s->gai = NULL;
    op->svc = NULL;
    uv_timer_stop(&op->timer);
    uv_cancel((uv_req_t *)&op->req); /* still queued: on_gai comes with UV_ECANCELED */
    rsvc_unref(s);
}

int rsvc_pool(router *rt, rsvc *s, relay *x, upstream_pool **out, char *err, size_t errlen)
{
    if (s->conf_err) {
        snprintf(err, errlen, "%s", s->conf_err);
        return -1;
    }
    if (!s->host) {
        snprintf(err, errlen, "service '%s' has no usable address (remote.base_url)", s->id);
        return -1;
    }
    if (s->remote && s->https) {
        if (tls_require(s->id, err, errlen)) return -1;
    }
    bool named = !is_numeric_host(s->host) && strcmp(s->host, "localhost") != 0;
    if (s->pool && (!named || clock_mono_ms() < s->pool_expires)) {
        *out = s->pool;
        return 1;
    }
    if (!named) {
        const char *one[1] = {s->host};
        upstream_pool *p = pool_make(rt, s, one, 1, err, errlen);
        if (!p) return -1;
        pool_set(rt, s, p, s->host, INT64_MAX);
        *out = p;
        return 1;
    }
    if (!x) {
        snprintf(err, errlen, "service '%s': the address of '%s' is not resolved yet", s->id, s->host);
        return -1;
    }
    relay_list_add(&s->waiting, x);
    if (s->gai) return 0;
    gai_op *op = xcalloc(1, sizeof *op);
    op->rt = rt;
    op->svc = s;
    rsvc_ref(s);
    op->req.data = op;
    op->timer.data = op;
    op->open = 2;
    uv_timer_init(rt->loop, &op->timer);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    char port[16];
    snprintf(port, sizeof port, "%d", s->port);
    int rc = uv_getaddrinfo(rt->loop, &op->req, on_gai, s->host, port, &hints);
    if (rc) {
        relay_list_del(&s->waiting, x);
        op->open = 1; /* no lookup to wait for */
        uv_close((uv_handle_t *)&op->timer, gai_timer_closed);
        rsvc_unref(s);
        snprintf(err, errlen, "remote service '%s': cannot resolve '%s': %s", s->id, s->host, uv_strerror(rc));
        return -1;
    }
    s->gai = op;
    uv_timer_start(&op->timer, on_gai_timeout, ROUTER_DNS_TIMEOUT_MS, 0);
    return 0;
}

void rsvc_pool_drop(router *rt, rsvc *s)
{
    (void)rt;
    if (s->pool) upstream_pool_close(s->pool, NULL, NULL);
    s->pool = NULL;
    free(s->pool_ip);
    s->pool_ip = NULL;
    s->pool_expires = 0;
}

void rsvc_endpoint_changed(rsvc *s, const char *fail_msg)
{
    rsvc_gai_abandon(s); /* its late answer is dropped */
    size_t n = 0;
    for (relay *x = s->waiting; x; x = relay_next(x)) n++;
    if (!n) return;
    /* taken first: a redispatched relay may wait on the list again, for a
     * lookup of the new host */
    relay **v = xmalloc(n * sizeof *v);
    n = 0;
    for (relay *x = s->waiting; x; x = relay_next(x)) v[n++] = x;
    for (size_t i = 0; i < n; i++) {
        if (fail_msg) relay_kill(v[i], 503, "unavailable", fail_msg);
        else relay_redispatch(v[i]);
    }
    free(v);
}
