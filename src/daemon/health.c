/* health.c - see health.h.  One connection per probe (engines answer
 * /health in microseconds; a pooled connection would save nothing worth
 * its state machine), Connection: close.  A probe reads only the status
 * line and head (the body of /health means nothing to us); a request
 * (the canary's) reads its body to the end, up to limits.max_body. */
#include "daemon/health.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/http.h"
#include "util/buf.h"
#include "util/errf.h"

struct health_probe {
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_connect_t conn;
    uv_write_t wr;
    int open;
    bool done;
    buf req, in;
    size_t off;    /* bytes of in the parser consumed */
    buf body;      /* health_request: the response's body */
    bool want_body;
    http_parser hp;
    health_cb cb;
    health_body_cb body_cb;
    void *ud;
    char fail[128]; /* a connect that failed at once: reported from the timer */
};

static const http_limits limits = {.max_head = 16 * 1024, .max_fields = 100, .max_target = 8192, .max_body = 1 << 20};

static void closed(uv_handle_t *h)
{
    health_probe *p = h->data;
    if (--p->open > 0) return;
    buf_release(&p->req);
    buf_release(&p->in);
    buf_release(&p->body);
    http_parser_release(&p->hp);
    free(p);
}

static void finish(health_probe *p, int status, const char *err)
{
    if (p->done) return;
    p->done = true;
    uv_timer_stop(&p->timer);
    if (p->cb) p->cb(status, err, p->ud);
    if (p->body_cb) p->body_cb(status, err ? NULL : p->body.p ? p->body.p : "", err ? 0 : p->body.len, err, p->ud);
    p->cb = NULL;
    p->body_cb = NULL;
    uv_close((uv_handle_t *)&p->tcp, closed);
    uv_close((uv_handle_t *)&p->timer, closed);
}

static void on_timeout(uv_timer_t *t)
{
    health_probe *p = t->data;
    finish(p, 0, p->fail[0] ? p->fail : "timed out");
}

static void on_alloc(uv_handle_t *h, size_t sugg, uv_buf_t *b)
{
    health_probe *p = h->data;
    buf_grow(&p->in, 4096);
    b->base = p->in.p + p->in.len;
    b->len = p->in.cap - p->in.len - 1;
}

/* Parse what came: the head ends a probe; a request reads its body to the end. */
static void parse_in(health_probe *p, bool eof)
{
    for (;;) {
        size_t used = 0;
        view body;
        http_event ev = eof ? http_parse_eof(&p->hp) : http_parse(&p->hp, p->in.p + p->off, p->in.len - p->off, &used,
                                                                  &body);
        p->off += used;
        if (ev == HTTP_EV_ERROR) {
            char e[160];
            snprintf(e, sizeof e, "malformed response: %s", p->hp.err.msg);
            finish(p, 0, e);
            return;
        }
        if (ev == HTTP_EV_HEAD && !p->want_body) {
            finish(p, p->hp.msg.status, NULL);
            return;
        }
        if (ev == HTTP_EV_BODY) buf_add(&p->body, body.p, body.len);
        if (ev == HTTP_EV_DONE) {
            finish(p, p->hp.msg.status, NULL);
            return;
        }
        if (ev == HTTP_EV_NEED_MORE || eof) break;
    }
    if (eof)
        finish(p, 0, "connection closed before a complete response");
    else if (p->in.len - p->off > limits.max_head)
        finish(p, 0, "response head too large");
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    health_probe *p = s->data;
    if (p->done) return;
    if (n == UV_EOF && p->want_body && p->hp.msg.status) {
        parse_in(p, true);
        return;
    }
    if (n < 0) {
        char e[128];
        snprintf(e, sizeof e, "connection closed before a response (%s)", n == UV_EOF ? "eof" : uv_strerror((int)n));
        finish(p, 0, e);
        return;
    }
    p->in.len += (size_t)n;
    p->in.p[p->in.len] = 0;
    parse_in(p, false);
}

static void on_write(uv_write_t *w, int status)
{
    health_probe *p = w->data;
    if (status < 0 && !p->done) {
        char e[128];
        snprintf(e, sizeof e, "cannot send the request: %s", uv_strerror(status));
        finish(p, 0, e);
    }
}

static void on_connect(uv_connect_t *c, int status)
{
    health_probe *p = c->data;
    if (p->done) return;
    if (status < 0) {
        char e[128];
        snprintf(e, sizeof e, "cannot connect: %s", uv_strerror(status));
        finish(p, 0, e);
        return;
    }
    uv_buf_t b = uv_buf_init(p->req.p, (unsigned)p->req.len);
    p->wr.data = p;
    int rc = uv_write(&p->wr, (uv_stream_t *)&p->tcp, &b, 1, on_write);
    if (rc == 0) rc = uv_read_start((uv_stream_t *)&p->tcp, on_alloc, on_read);
    if (rc < 0) {
        char e[128];
        snprintf(e, sizeof e, "cannot send the request: %s", uv_strerror(rc));
        finish(p, 0, e);
    }
}

/* The address probed for host; h gets the literal used (for Host:). */
static int probe_addr(const char *host, int port, struct sockaddr_storage *sa, const char **h, char *err,
                      size_t errlen)
{
    *h = host && *host ? host : "127.0.0.1";
    if (!strcmp(*h, "localhost") || !strcmp(*h, "0.0.0.0")) *h = "127.0.0.1";
    if (!strcmp(*h, "::") || !strcmp(*h, "[::]")) *h = "::1";
    if (uv_ip4_addr(*h, port, (struct sockaddr_in *)sa) != 0 && uv_ip6_addr(*h, port, (struct sockaddr_in6 *)sa) != 0) {
        errf(err, errlen, "host '%s' is not a numeric IP address or localhost", host ? host : "");
        return -1;
    }
    return 0;
}

int health_check_host(const char *host, char *err, size_t errlen)
{
    struct sockaddr_storage sa;
    const char *h;
    return probe_addr(host, 1, &sa, &h, err, errlen);
}

static health_probe *probe_new(uv_loop_t *loop, const char *host, int port, const char *method, const char *path,
                               const char *json_body, int64_t timeout_ms, void *ud, char *err, size_t errlen)
{
    struct sockaddr_storage sa;
    const char *h;
    if (probe_addr(host, port, &sa, &h, err, errlen) != 0) return NULL;
    health_probe *p = xcalloc(1, sizeof *p);
    p->ud = ud;
    buf_init(&p->req);
    buf_init(&p->in);
    buf_init(&p->body);
    const char *hosthdr = strchr(h, ':') ? "localhost" : h;
    buf_printf(&p->req, "%s %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: gpumod\r\nConnection: close\r\n", method,
               path && *path ? path : "/health", hosthdr, port);
    if (json_body)
        buf_printf(&p->req, "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s", strlen(json_body),
                   json_body);
    else
        buf_adds(&p->req, "\r\n");
    http_parser_init(&p->hp, HTTP_KIND_RESPONSE, &limits);
    uv_tcp_init(loop, &p->tcp);
    uv_timer_init(loop, &p->timer);
    p->tcp.data = p->timer.data = p->conn.data = p;
    p->open = 2;
    uv_update_time(loop); /* the deadline counts from now, not from the loop's last turn */
    uv_timer_start(&p->timer, on_timeout, (uint64_t)(timeout_ms > 0 ? timeout_ms : 1), 0);
    int rc = uv_tcp_connect(&p->conn, &p->tcp, (const struct sockaddr *)&sa, on_connect);
    if (rc < 0) {
        /* report on the loop, like every other outcome: finish from the timer */
        snprintf(p->fail, sizeof p->fail, "cannot connect: %s", uv_strerror(rc));
        uv_timer_start(&p->timer, on_timeout, 0, 0);
    }
    return p;
}

health_probe *health_get(uv_loop_t *loop, const char *host, int port, const char *path, int64_t timeout_ms,
                         health_cb cb, void *ud, char *err, size_t errlen)
{
    health_probe *p = probe_new(loop, host, port, "GET", path, NULL, timeout_ms, ud, err, errlen);
    if (p) p->cb = cb;
    return p;
}

health_probe *health_request(uv_loop_t *loop, const char *host, int port, const char *method, const char *path,
                             const char *json_body, int64_t timeout_ms, health_body_cb cb, void *ud, char *err,
                             size_t errlen)
{
    health_probe *p = probe_new(loop, host, port, method, path, json_body, timeout_ms, ud, err, errlen);
    if (!p) return NULL;
    p->body_cb = cb;
    p->want_body = true;
    return p;
}

void health_cancel(health_probe *p)
{
    if (!p || p->done) return;
    p->cb = NULL;
    finish(p, 0, NULL);
}
