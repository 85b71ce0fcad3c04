/* http.c - fakellm's HTTP/1.1 server: libuv TCP, requests parsed by
 * llhttp, responses written whole or as a chunked (SSE) stream.
 *
 * llhttp, not gpumod's own parser, so that the fake shares no bug with
 * the code it tests.  One request per connection is answered at a time:
 * the parser pauses at the end of each message, and bytes that arrive
 * while the answer is being produced wait in `pending` (pipelining works,
 * in order).  Reading goes on meanwhile, so a client that hangs up
 * mid-stream is seen at once, not at the next token; the handler that
 * holds the request hears about it through on_abort, which runs from the
 * uv_close callback - the one place a conn is freed - so no callback ever
 * sees a freed conn or has its caller freed under it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fakellm.h"
#include "llhttp.h"

#define MAX_BODY (64u << 20)
#define MAX_PENDING (1u << 20)

struct conn {
    uv_tcp_t tcp;
    uv_shutdown_t shutdown;
    llhttp_t parser;
    struct conn *prev, *next;
    struct conn *pump_next;
    buf url, body, hfield, hval, auth, rid, pending;
    bool msg_done;    /* the parser paused at the end of a request */
    bool busy;        /* that request is being answered */
    bool keep_alive;
    bool closing;
    bool in_parse;
    bool pump_queued;
    bool body_too_big;
    bool read_stopped;
    bool expect_continue;
    char method[16];
    unsigned long id;
    double recv_mono, recv_real, first_mono, first_real, last_active;
    double last_token_mono; /* the last write that carried a token (0: none) */
    void (*on_abort)(void *);
    void *abort_arg;
};

static uv_tcp_t server;
static uv_timer_t sweep_timer;
static uv_idle_t pump_idle;
static conn *conns;       /* every open conn, for the idle sweep and shutdown */
static conn *pump_head;   /* conns with pipelined bytes to parse */
static unsigned long next_id;
static llhttp_settings_t settings;

static void conn_pump(conn *c);
static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b);
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b);

static void on_conn_closed(uv_handle_t *h)
{
    conn *c = h->data;
    if (c->busy) {
        fk.st.aborted++;
        if (fk.env.log_requests)
            fk_log('I', "srv:log_request", "id=%lu %s %s aborted: client disconnected after %.3f ms",
                   c->id, c->method, c->url.p, fk_mono_ms() - c->recv_mono);
        if (c->on_abort)
            c->on_abort(c->abort_arg);
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    for (conn **pp = &pump_head; *pp; pp = &(*pp)->pump_next)
        if (*pp == c) {
            *pp = c->pump_next;
            break;
        }
    buf_release(&c->url);
    buf_release(&c->body);
    buf_release(&c->hfield);
    buf_release(&c->hval);
    buf_release(&c->auth);
    buf_release(&c->rid);
    buf_release(&c->pending);
    free(c);
}

static void conn_close(conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

struct wreq {
    uv_write_t req;
    conn *c;
    char data[];
};

static void on_write(uv_write_t *req, int status)
{
    struct wreq *w = (struct wreq *)req;
    if (status < 0)
        conn_close(w->c); /* a no-op when already closing */
    free(w);
}

static void raw_send(conn *c, const char *p, size_t n)
{
    struct wreq *w = xmalloc(sizeof *w + n);
    w->c = c;
    memcpy(w->data, p, n);
    uv_buf_t b = uv_buf_init(w->data, (unsigned)n);
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_write) < 0) {
        free(w);
        conn_close(c);
    }
}

/* The response's bytes; the first write is the request's first send. */
static void conn_send(conn *c, const char *p, size_t n)
{
    if (c->closing)
        return;
    if (!c->first_mono) {
        c->first_mono = fk_mono_ms();
        c->first_real = fk_real_ms();
    }
    raw_send(c, p, n);
}

static const char *status_text(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Unknown";
    }
}

static void head(buf *b, conn *c, int status, const char *ctype)
{
    buf_printf(b, "HTTP/1.1 %d %s\r\nServer: %s\r\n", status, status_text(status),
               fk.cfg.mode == FK_VLLM ? "uvicorn" : "llama.cpp");
    if (fk.cfg.mode != FK_VLLM)
        buf_adds(b, "Access-Control-Allow-Origin: *\r\n");
    if (ctype)
        buf_printf(b, "Content-Type: %s\r\n", ctype);
    if (!c->keep_alive)
        buf_adds(b, "Connection: close\r\n");
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    conn_close(req->data);
}

static void on_pump_idle(uv_idle_t *h)
{
    while (pump_head) {
        conn *c = pump_head;
        pump_head = c->pump_next;
        c->pump_queued = false;
        conn_pump(c);
    }
    uv_idle_stop(h);
}

void http_token_sent(conn *c)
{
    c->last_token_mono = fk_mono_ms();
}

/* The answer is out: log the request's times, then read the next one.
 * last_send_mono_ms (the last write that carried a token) and rid (the
 * request's X-Request-Id) follow only when there is one, so a line
 * without them reads as it always did. */
static void response_done(conn *c, int status)
{
    double now = fk_mono_ms();
    if (fk.env.log_requests > 1 ||
        (fk.env.log_requests && strcmp(c->url.p, "/health") != 0)) {
        char last[48] = "";
        if (c->last_token_mono)
            snprintf(last, sizeof last, " last_send_mono_ms=%.3f", c->last_token_mono);
        fk_log('I', "srv:log_request",
               "id=%lu %s %s %d recv_mono_ms=%.3f recv_real_ms=%.3f first_send_mono_ms=%.3f "
               "first_send_real_ms=%.3f done_mono_ms=%.3f%s%s%s",
               c->id, c->method, c->url.p, status, c->recv_mono, c->recv_real, c->first_mono,
               c->first_real, now, last, c->rid.len ? " rid=" : "", c->rid.len ? c->rid.p : "");
    }
    c->busy = false;
    c->on_abort = NULL;
    c->last_active = now;
    if (c->closing)
        return;
    if (!c->keep_alive) {
        c->shutdown.data = c;
        if (uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
            conn_close(c);
        return;
    }
    if (c->read_stopped) {
        c->read_stopped = false;
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    }
    /* Parse pipelined bytes from the loop, not from inside the handler
     * that just finished (it may still be unwinding). */
    if (c->pending.len && !c->in_parse && !c->pump_queued) {
        c->pump_queued = true;
        c->pump_next = pump_head;
        pump_head = c;
        uv_idle_start(&pump_idle, on_pump_idle);
    }
}

void http_respond(conn *c, int status, const char *ctype, const char *body, size_t len)
{
    buf b = BUF_INIT;
    head(&b, c, status, ctype);
    buf_printf(&b, "Content-Length: %zu\r\n\r\n", len);
    buf_add(&b, body, len);
    conn_send(c, b.p, b.len);
    buf_release(&b);
    response_done(c, status);
}

void http_respond_json(conn *c, int status, const char *json)
{
    http_respond(c, status, "application/json; charset=utf-8", json, strlen(json));
}

void http_stream_begin(conn *c, const char *ctype)
{
    buf b = BUF_INIT;
    head(&b, c, 200, ctype);
    buf_adds(&b, "Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\n\r\n");
    conn_send(c, b.p, b.len);
    buf_release(&b);
}

void http_stream_send(conn *c, const char *p, size_t len)
{
    if (!len)
        return; /* a zero chunk would end the stream */
    buf b = BUF_INIT;
    buf_printf(&b, "%zx\r\n", len);
    buf_add(&b, p, len);
    buf_adds(&b, "\r\n");
    conn_send(c, b.p, b.len);
    buf_release(&b);
}

void http_stream_finish(conn *c, const char *p, size_t len)
{
    buf b = BUF_INIT;
    if (len) {
        buf_printf(&b, "%zx\r\n", len);
        buf_add(&b, p, len);
        buf_adds(&b, "\r\n");
    }
    buf_adds(&b, "0\r\n\r\n");
    conn_send(c, b.p, b.len);
    buf_release(&b);
    response_done(c, 200);
}

void http_hold(conn *c, void (*on_abort)(void *), void *arg)
{
    c->on_abort = on_abort;
    c->abort_arg = arg;
}

/* llhttp callbacks: collect the request; headers other than
 * Authorization do not change what a fake answers (X-Request-Id is only
 * logged). */
static int on_message_begin(llhttp_t *p)
{
    conn *c = p->data;
    buf_clear(&c->url);
    buf_clear(&c->body);
    buf_clear(&c->auth);
    buf_clear(&c->rid);
    buf_clear(&c->hfield);
    buf_clear(&c->hval);
    c->body_too_big = false;
    c->expect_continue = false;
    c->id = ++next_id;
    c->recv_mono = fk_mono_ms();
    c->recv_real = fk_real_ms();
    c->first_mono = c->first_real = c->last_token_mono = 0;
    return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n)
{
    conn *c = p->data;
    if (c->url.len + n > 65536)
        return -1;
    buf_add(&c->url, at, n);
    return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t n)
{
    conn *c = p->data;
    if (c->hfield.len + n > 8192)
        return -1;
    buf_add(&c->hfield, at, n);
    return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n)
{
    conn *c = p->data;
    if (c->hval.len + n > 65536)
        return -1;
    buf_add(&c->hval, at, n);
    return 0;
}

static int on_header_value_complete(llhttp_t *p)
{
    conn *c = p->data;
    if (strcasecmp(c->hfield.p, "authorization") == 0) {
        buf_clear(&c->auth);
        buf_add(&c->auth, c->hval.p, c->hval.len);
    } else if (strcasecmp(c->hfield.p, "x-request-id") == 0) {
        /* logged as rid=: no spaces, 128 bytes at most, so a line parses */
        buf_clear(&c->rid);
        for (size_t i = 0; i < c->hval.len && c->rid.len < 128; i++)
            buf_addc(&c->rid, c->hval.p[i] > ' ' && c->hval.p[i] < 127 ? c->hval.p[i] : '_');
    } else if (strcasecmp(c->hfield.p, "expect") == 0 && strcasecmp(c->hval.p, "100-continue") == 0) {
        c->expect_continue = true;
    }
    buf_clear(&c->hfield);
    buf_clear(&c->hval);
    return 0;
}

/* curl sends "Expect: 100-continue" before a body over 1 KiB and waits
 * a second for this line: without it every long prompt would look slow. */
static int on_headers_complete(llhttp_t *p)
{
    conn *c = p->data;
    if (c->expect_continue && !c->closing)
        raw_send(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    c->expect_continue = false;
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
    conn *c = p->data;
    if (c->body.len + n > MAX_BODY)
        c->body_too_big = true;
    else
        buf_add(&c->body, at, n);
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    conn *c = p->data;
    c->msg_done = true;
    c->keep_alive = llhttp_should_keep_alive(p);
    snprintf(c->method, sizeof c->method, "%s", llhttp_method_name(llhttp_get_method(p)));
    return HPE_PAUSED;
}

static void dispatch(conn *c)
{
    c->busy = true;
    if (c->body_too_big) {
        api_error(c, 413, "invalid_request_error", "request body is larger than %u bytes", MAX_BODY);
        return;
    }
    char *path = xstrdup(c->url.p);
    char *q = strchr(path, '?');
    if (q)
        *q++ = '\0';
    struct http_req r = {c->method, path, q ? q : "", c->body.p, c->body.len, c->auth.p};
    api_handle(c, &r);
    free(path);
}

/* Parse what is pending until a request is being answered
 * asynchronously or the bytes run out. */
static void conn_pump(conn *c)
{
    while (!c->busy && !c->closing && c->pending.len) {
        buf in = c->pending;
        buf_init(&c->pending);
        c->in_parse = true;
        enum llhttp_errno e = llhttp_execute(&c->parser, in.p, in.len);
        if (e == HPE_PAUSED) {
            const char *pos = llhttp_get_error_pos(&c->parser);
            llhttp_resume(&c->parser);
            /* keep the rest ahead of anything read meanwhile */
            buf rest = BUF_INIT;
            buf_add(&rest, pos, (size_t)(in.p + in.len - pos));
            buf_add(&rest, c->pending.p, c->pending.len);
            buf_release(&c->pending);
            c->pending = rest;
            if (c->msg_done) {
                c->msg_done = false;
                dispatch(c);
            }
        } else if (e != HPE_OK) {
            c->keep_alive = false;
            c->busy = true;
            snprintf(c->method, sizeof c->method, "?");
            buf_clear(&c->url);
            buf_printf(&c->url, "(bad request: %s)", llhttp_errno_name(e));
            http_respond(c, 400, "text/plain", "Bad Request", 11);
            buf_release(&c->pending);
        }
        c->in_parse = false;
        buf_release(&in);
    }
}

static char rbuf[65536];

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    *b = uv_buf_init(rbuf, sizeof rbuf); /* consumed before the next read */
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    conn *c = s->data;
    if (n < 0) {
        conn_close(c); /* EOF or reset: a held request is aborted */
        return;
    }
    if (!n)
        return;
    c->last_active = fk_mono_ms();
    buf_add(&c->pending, b->base, (size_t)n);
    if (c->busy && c->pending.len > MAX_PENDING) {
        uv_read_stop(s); /* a client that pipelines this much can wait */
        c->read_stopped = true;
    }
    conn_pump(c);
}

static void on_reject_closed(uv_handle_t *h)
{
    free(h->data);
}

static void on_connection(uv_stream_t *srv, int status)
{
    if (status < 0)
        return;
    conn *c = xcalloc(1, sizeof *c);
    uv_tcp_init(fk.loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(srv, (uv_stream_t *)&c->tcp) < 0) {
        uv_close((uv_handle_t *)&c->tcp, on_reject_closed);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1); /* a token must not wait for Nagle */
    llhttp_init(&c->parser, HTTP_REQUEST, &settings);
    c->parser.data = c;
    buf_init(&c->url);
    buf_init(&c->body);
    buf_init(&c->hfield);
    buf_init(&c->hval);
    buf_init(&c->auth);
    buf_init(&c->rid);
    buf_init(&c->pending);
    c->last_active = fk_mono_ms();
    c->next = conns;
    if (conns)
        conns->prev = c;
    conns = c;
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* The read timeout of llama-server's -to: an idle keep-alive connection
 * is closed, so no client can hold a conn forever. */
static void on_sweep(uv_timer_t *t)
{
    double now = fk_mono_ms();
    for (conn *c = conns; c; c = c->next)
        if (!c->busy && now - c->last_active > fk.cfg.timeout_s * 1000.0)
            conn_close(c);
}

/* Bind now, listen later: a port conflict must fail before the load (as
 * both real servers do), while vLLM refuses connections until ready. */
int http_bind(const char *host, int port, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        sl = sizeof *s4;
    } else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        sl = sizeof *s6;
    } else {
        /* a name: /etc/hosts (localhost) answers without the network */
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai;
        int e = getaddrinfo(host, NULL, &hints, &ai);
        if (e) {
            snprintf(err, errlen, "cannot resolve '%s': %s", host, gai_strerror(e));
            return -1;
        }
        memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
        sl = ai->ai_addrlen;
        freeaddrinfo(ai);
        if (ss.ss_family == AF_INET)
            s4->sin_port = htons((uint16_t)port);
        else
            s6->sin6_port = htons((uint16_t)port);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, sl) < 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        close(fd);
        return -1;
    }
    uv_tcp_init(fk.loop, &server);
    if (uv_tcp_open(&server, fd) < 0) {
        snprintf(err, errlen, "uv_tcp_open failed");
        close(fd);
        return -1;
    }
    settings.on_message_begin = on_message_begin;
    settings.on_url = on_url;
    settings.on_header_field = on_header_field;
    settings.on_header_value = on_header_value;
    settings.on_header_value_complete = on_header_value_complete;
    settings.on_headers_complete = on_headers_complete;
    settings.on_body = on_body;
    settings.on_message_complete = on_message_complete;
    uv_timer_init(fk.loop, &sweep_timer);
    uv_timer_start(&sweep_timer, on_sweep, 1000, 1000);
    uv_idle_init(fk.loop, &pump_idle);
    return 0;
}

int http_listen(char *err, size_t errlen)
{
    int e = uv_listen((uv_stream_t *)&server, 4096, on_connection);
    if (e < 0) {
        snprintf(err, errlen, "%s", uv_strerror(e));
        return -1;
    }
    return 0;
}

/* At exit nothing is aborted: gen_shutdown frees what the conns held. */
void http_shutdown(void)
{
    for (conn *c = conns; c; c = c->next) {
        c->on_abort = NULL;
        c->busy = false;
        conn_close(c);
    }
    pump_head = NULL;
}
