/* test_upstream.c - the router's backend client (src/router/upstream.c)
 * against three kinds of backend, all on loopback:
 *   - the libuv HTTP server (src/net/server.c) on the same loop, for
 *     framing, field filtering, pooling and backpressure;
 *   - raw sockets on a thread, replaying canned bytes, for what a real
 *     server would never send (malformed replies, deaths mid-body,
 *     silence);
 *   - fakellm (a separate process) for SSE streams and the abort counter
 *     a backend keeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uv.h>

#include "testenv.h"

#include "net/client.h"
#include "net/server.h"
#include "router/upstream.h"
#include "util/buf.h"

extern char **environ;

/* ---- one request's outcome ---- */

typedef struct res {
    upstream_req *r;
    int status;
    int n_heads;
    buf fields; /* "name: value\n" as delivered */
    buf body;
    int n_data;
    bool ended;
    int code;
    char msg[512];
    /* behaviours */
    bool pause_first;  /* upstream_pause at the first on_data */
    bool abort_first;  /* upstream_abort at the first on_data */
    bool aborted;
    size_t at_pause;
    int writable;      /* on_writable calls */
    bool got_writable;
} res;

static void res_init(res *x)
{
    memset(x, 0, sizeof *x);
    buf_init(&x->fields);
    buf_init(&x->body);
}

static void res_release(res *x)
{
    buf_release(&x->fields);
    buf_release(&x->body);
}

static void cb_head(upstream_req *r, const http_msg *m, void *ud)
{
    res *x = ud;
    assert_ptr_equal(r, x->r);
    x->status = m->status;
    x->n_heads++;
    for (size_t i = 0; i < m->n_fields; i++)
        buf_printf(&x->fields, "%.*s: %.*s\n", (int)m->fields[i].name.len, m->fields[i].name.p,
                   (int)m->fields[i].value.len, m->fields[i].value.p);
}

static void cb_data(upstream_req *r, const view *d, void *ud)
{
    res *x = ud;
    assert_false(x->aborted);
    buf_add(&x->body, d->p, d->len);
    x->n_data++;
    if (x->n_data == 1 && x->pause_first) {
        upstream_pause(r);
        x->at_pause = x->body.len;
    }
    if (x->n_data == 1 && x->abort_first) {
        x->aborted = true;
        upstream_abort(r);
    }
}

static void cb_end(upstream_req *r, int code, const char *msg, void *ud)
{
    res *x = ud;
    assert_false(x->aborted); /* nothing after an abort */
    assert_false(x->ended);   /* once */
    x->ended = true;
    x->code = code;
    snprintf(x->msg, sizeof x->msg, "%s", msg ? msg : "");
}

static const upstream_cbs cbs = {.on_head = cb_head, .on_data = cb_data, .on_end = cb_end};

static void cb_writable(upstream_req *r, void *ud)
{
    res *x = ud;
    assert_ptr_equal(r, x->r);
    x->writable++;
    x->got_writable = true;
}

static const upstream_cbs wcbs = {.on_head = cb_head, .on_data = cb_data, .on_end = cb_end,
                                  .on_writable = cb_writable};

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *q = hay; (q = strstr(q, needle)); q++) n++;
    return n;
}

/* ---- the loop ---- */

static uv_loop_t loop;

static void tick(uv_timer_t *t)
{
    (void)t;
}

/* Run the loop until *flag or ms (scaled) have passed; false on timeout. */
static bool run_until(const bool *flag, int64_t ms)
{
    uv_timer_t guard;
    uv_timer_init(&loop, &guard);
    uv_timer_start(&guard, tick, 5, 5);
    int64_t deadline = mono_ms() + ms * scale();
    while ((!flag || !*flag) && mono_ms() < deadline) uv_run(&loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&guard, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    return !flag || *flag;
}

/* Run the loop until the pool holds `want` idle connections or ms
 * (scaled) have passed; false on timeout. */
static bool run_until_idle(upstream_pool *p, size_t want, int64_t ms)
{
    uv_timer_t guard;
    uv_timer_init(&loop, &guard);
    uv_timer_start(&guard, tick, 5, 5);
    int64_t deadline = mono_ms() + ms * scale();
    while ((size_t)upstream_pool_idle(p) != want && mono_ms() < deadline) uv_run(&loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&guard, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    return (size_t)upstream_pool_idle(p) == want;
}

static void run_for(int64_t ms)
{
    uv_timer_t guard;
    uv_timer_init(&loop, &guard);
    uv_timer_start(&guard, tick, 5, 5);
    int64_t deadline = mono_ms() + ms;
    while (mono_ms() < deadline) uv_run(&loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&guard, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
}

/* ---- the in-process backend (src/net/server.c) ---- */

static int srv_closed;
static int backend_conns_seen;

static bool target_is(const http_msg *m, const char *t)
{
    return m->target.len == strlen(t) && memcmp(m->target.p, t, m->target.len) == 0;
}

#define BIG_CHUNKS 64
#define BIG_CHUNK (16 * 1024)

static void be_request(srv_conn *c, const http_msg *m, const view *body, void *ud)
{
    (void)ud;
    if (!srv_conn_ud(c)) { /* count connections: a fresh one has no ud yet */
        backend_conns_seen++;
        srv_conn_set_ud(c, (void *)1);
    }
    if (target_is(m, "/hello")) {
        srv_respond(c, 200, "text/plain", "hello", 5);
    } else if (target_is(m, "/stream")) {
        srv_respond_start(c, 200, "text/plain");
        srv_write(c, "abc", 3);
        srv_write(c, "defg", 4);
        srv_write(c, "hi", 2);
        srv_end(c);
    } else if (target_is(m, "/echo")) {
        /* method, framing, body, then every field as received */
        buf b = BUF_INIT;
        buf_printf(&b, "%.*s %s %zu:", (int)m->method.len, m->method.p,
                   m->framing == HTTP_FRAME_CHUNKED  ? "chunked"
                   : m->framing == HTTP_FRAME_LENGTH ? "length"
                                                     : "none",
                   body->len);
        buf_add(&b, body->p, body->len);
        buf_adds(&b, "\n");
        for (size_t i = 0; i < m->n_fields; i++)
            buf_printf(&b, "%.*s: %.*s\n", (int)m->fields[i].name.len, m->fields[i].name.p,
                       (int)m->fields[i].value.len, m->fields[i].value.p);
        srv_respond(c, 200, "text/plain", b.p, b.len);
        buf_release(&b);
    } else if (target_is(m, "/big")) {
        srv_respond_start(c, 200, "application/octet-stream");
        char chunk[BIG_CHUNK];
        for (int i = 0; i < BIG_CHUNKS; i++) {
            memset(chunk, 'a' + i % 26, sizeof chunk);
            srv_write(c, chunk, sizeof chunk);
        }
        srv_end(c);
    } else {
        srv_respond(c, 404, "application/json", "{}", 2);
    }
}

static void be_abort(srv_conn *c, void *ud)
{
    (void)ud;
    srv_end(c);
}

static void on_srv_closed(void *ud)
{
    (void)ud;
    srv_closed++;
}

static srv *backend_start(int *port, int64_t idle_ms)
{
    srv *s = srv_new(&loop, &(srv_opts){.on_request = be_request,
                                        .on_abort = be_abort,
                                        .idle_timeout_ms = idle_ms});
    char err[256];
    assert_int_equal(srv_listen_tcp(s, "127.0.0.1", 0, err, sizeof err), 0);
    *port = srv_tcp_port(s);
    return s;
}

static void backend_stop(srv *s)
{
    int before = srv_closed;
    srv_close(s, on_srv_closed, NULL);
    for (int i = 0; i < 1000 && srv_closed == before; i++) uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(srv_closed, before + 1);
}

static upstream_pool *pool_for(int port, upstream_opts o)
{
    char err[256];
    o.host = "127.0.0.1";
    o.port = port;
    upstream_pool *p = upstream_pool_new(&loop, &o, err, sizeof err);
    assert_non_null(p);
    return p;
}

static bool pool_closed;
static void on_pool_closed(void *ud)
{
    (void)ud;
    pool_closed = true;
}

static void pool_stop(upstream_pool *p)
{
    pool_closed = false;
    upstream_pool_close(p, on_pool_closed, NULL);
    assert_true(run_until(&pool_closed, 5000));
}

static void loop_setup(void)
{
    assert_int_equal(uv_loop_init(&loop), 0);
    backend_conns_seen = 0;
}

static void loop_teardown(void)
{
    uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(uv_loop_close(&loop), 0); /* every handle closed */
}

static upstream_req *get(upstream_pool *p, const char *method, const char *target, res *x)
{
    upstream_head h = {.method = {method, strlen(method)}, .target = {target, strlen(target)},
                       .body_len = 0};
    x->r = upstream_start(p, &h, &cbs, x);
    assert_non_null(x->r);
    assert_int_equal(upstream_end(x->r), 0);
    return x->r;
}

/* ---- raw backends: canned bytes from a thread ---- */

typedef struct rawb {
    int lfd, port;
    const char *replies[4]; /* per accepted connection, in order; NULL: say nothing */
    int n;
    int hold_ms;     /* after replying, wait this long for the peer to close */
    int peer_closed; /* connections whose peer closed during the hold */
    int accepted;
    atomic_int closed; /* connections the thread has closed (read while it runs) */
    buf got;         /* every request byte received */
    pthread_t th;
} rawb;

static bool read_head(int fd, buf *b, int ms)
{
    int64_t deadline = mono_ms() + ms;
    size_t start = b->len;
    while (!strstr(b->p + start, "\r\n\r\n")) {
        int64_t left = deadline - mono_ms();
        if (left <= 0) return false;
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, (int)left) <= 0) continue;
        char tmp[4096];
        ssize_t n = recv(fd, tmp, sizeof tmp, 0);
        if (n <= 0) return false;
        buf_add(b, tmp, (size_t)n);
    }
    return true;
}

static void *rawb_main(void *arg)
{
    rawb *rb = arg;
    for (int i = 0; i < rb->n; i++) {
        struct pollfd pf = {.fd = rb->lfd, .events = POLLIN};
        if (poll(&pf, 1, (int)(5000 * scale())) <= 0) break;
        int fd = accept(rb->lfd, NULL, NULL);
        if (fd < 0) break;
        rb->accepted++;
        read_head(fd, &rb->got, (int)(5000 * scale()));
        if (rb->replies[i]) send(fd, rb->replies[i], strlen(rb->replies[i]), MSG_NOSIGNAL);
        int64_t deadline = mono_ms() + rb->hold_ms;
        for (;;) {
            int64_t left = deadline - mono_ms();
            if (left <= 0) break;
            struct pollfd q = {.fd = fd, .events = POLLIN};
            if (poll(&q, 1, (int)left) <= 0) continue;
            char tmp[4096];
            if (recv(fd, tmp, sizeof tmp, 0) <= 0) {
                rb->peer_closed++;
                break;
            }
        }
        close(fd);
        atomic_fetch_add(&rb->closed, 1);
    }
    return NULL;
}

/* A client socket to 127.0.0.1:port got the peer's FIN (CLOSE_WAIT, 08,
 * in /proc/net/tcp) */
static bool client_in_close_wait(int port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    if (!f) return true; /* cannot tell: the backend's close is all there is */
    char line[512];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned rport, st;
        if (sscanf(line, " %*d: %*x:%*x %*x:%x %x", &rport, &st) == 2 && (int)rport == port && st == 0x08)
            found = true;
    }
    fclose(f);
    return found;
}

/* Wait (the loop does not run) until the raw backend has closed n
 * connections and the kernel has delivered the FIN to the client side;
 * false after 5 s x the time scale. */
static bool rawb_wait_closed(rawb *rb, int n)
{
    int64_t deadline = mono_ms() + 5000 * scale();
    while (atomic_load(&rb->closed) < n || !client_in_close_wait(rb->port)) {
        if (mono_ms() >= deadline) return false;
        usleep(1000);
    }
    return true;
}

static int listen_tcp(int backlog, int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    if (backlog >= 0) assert_int_equal(listen(fd, backlog), 0);
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    *port = ntohs(sa.sin_port);
    return fd;
}

static void rawb_start(rawb *rb)
{
    rb->lfd = listen_tcp(8, &rb->port);
    buf_init(&rb->got);
    assert_int_equal(pthread_create(&rb->th, NULL, rawb_main, rb), 0);
}

static void rawb_join(rawb *rb)
{
    pthread_join(rb->th, NULL);
    close(rb->lfd);
}

static void rawb_release(rawb *rb)
{
    buf_release(&rb->got);
}

/* ---- tests against the in-process server ---- */

static void plain_and_chunked(void **state)
{
    (void)state;
    loop_setup();
    int port;
    srv *s = backend_start(&port, 0);
    upstream_pool *p = pool_for(port, (upstream_opts){0});

    res a;
    res_init(&a);
    get(p, "GET", "/hello", &a);
    assert_true(run_until(&a.ended, 5000));
    assert_int_equal(a.code, UPSTREAM_OK);
    assert_int_equal(a.status, 200);
    assert_int_equal(a.n_heads, 1);
    assert_string_equal(a.body.p, "hello");
    assert_non_null(strstr(a.fields.p, "Content-Length: 5\n"));

    /* chunked: the decoded bytes, one span per chunk */
    res b;
    res_init(&b);
    get(p, "GET", "/stream", &b);
    assert_true(run_until(&b.ended, 5000));
    assert_int_equal(b.code, UPSTREAM_OK);
    assert_string_equal(b.body.p, "abcdefghi");
    assert_non_null(strstr(b.fields.p, "Transfer-Encoding: chunked\n"));
    assert_int_equal(b.n_data, 3);

    /* HEAD: a length, no body, and the connection is still good */
    res h;
    res_init(&h);
    get(p, "HEAD", "/hello", &h);
    assert_true(run_until(&h.ended, 5000));
    assert_int_equal(h.code, UPSTREAM_OK);
    assert_int_equal(h.body.len, 0);
    assert_non_null(strstr(h.fields.p, "Content-Length: 5\n"));

    /* 404 is a response like any other */
    res n;
    res_init(&n);
    get(p, "GET", "/nope", &n);
    assert_true(run_until(&n.ended, 5000));
    assert_int_equal(n.code, UPSTREAM_OK);
    assert_int_equal(n.status, 404);

    /* all four went over one connection */
    assert_int_equal(upstream_pool_connects(p), 1);
    assert_int_equal(backend_conns_seen, 1);
    assert_int_equal(upstream_pool_idle(p), 1);
    res_release(&a);
    res_release(&b);
    res_release(&h);
    res_release(&n);
    pool_stop(p);
    backend_stop(s);
    loop_teardown();
}

static void request_serialised(void **state)
{
    (void)state;
    loop_setup();
    int port;
    srv *s = backend_start(&port, 0);
    upstream_pool *p = pool_for(port, (upstream_opts){.host_header = "backend.test"});
#define F(n, v) {{n, sizeof n - 1}, {v, sizeof v - 1}}
    http_field fields[] = {
        F("Host", "client.example"), F("Connection", "keep-alive, X-Hop"), F("X-Hop", "drop me"),
        F("Keep-Alive", "timeout=5"), F("TE", "trailers"), F("Trailer", "X-T"),
        F("Transfer-Encoding", "chunked"), F("Upgrade", "websocket"),
        F("Proxy-Authorization", "Basic x"), F("Content-Length", "99"),
        F("Expect", "100-continue"), F("Content-Type", "application/json"),
        F("X-Keep", "kept"),
    };
    http_field extra[] = {F("Authorization", "Bearer k")};
#undef F
    /* a known length, written before the connection is up, in pieces */
    res a;
    res_init(&a);
    upstream_head h = {.method = {"POST", 4}, .target = {"/echo", 5}, .fields = fields,
                       .n_fields = sizeof fields / sizeof fields[0], .extra = extra, .n_extra = 1,
                       .body_len = 11};
    a.r = upstream_start(p, &h, &cbs, &a);
    assert_int_equal(upstream_write(a.r, "{\"a\":", 5), 0);
    assert_int_equal(upstream_write(a.r, "\"bcd\"}", 6), 0);
    assert_int_equal(upstream_end(a.r), 0);
    assert_false(a.ended); /* callbacks never come from inside a call */
    assert_true(run_until(&a.ended, 5000));
    assert_int_equal(a.code, UPSTREAM_OK);
    const char *want = "POST length 11:{\"a\":\"bcd\"}\n"
                       "Host: backend.test\n"
                       "Content-Type: application/json\n"
                       "X-Keep: kept\n"
                       "Authorization: Bearer k\n"
                       "Content-Length: 11\n";
    assert_string_equal(a.body.p, want);

    /* unknown length: chunked; written after the connection is up */
    res b;
    res_init(&b);
    h.body_len = -1;
    h.n_fields = 0;
    h.n_extra = 0;
    b.r = upstream_start(p, &h, &cbs, &b);
    assert_int_equal(upstream_write(b.r, "one ", 4), 0);
    run_for(20);
    assert_int_equal(upstream_write(b.r, "two", 3), 0);
    assert_int_equal(upstream_end(b.r), 0);
    assert_true(run_until(&b.ended, 5000));
    assert_int_equal(b.code, UPSTREAM_OK);
    assert_string_equal(b.body.p, "POST chunked 7:one two\n"
                                  "Host: backend.test\n"
                                  "Transfer-Encoding: chunked\n");

    /* a POST without a body says so; a GET does not */
    res c;
    res_init(&c);
    get(p, "POST", "/echo", &c);
    assert_true(run_until(&c.ended, 5000));
    assert_non_null(strstr(c.body.p, "Content-Length: 0\n"));
    res d;
    res_init(&d);
    get(p, "GET", "/echo", &d);
    assert_true(run_until(&d.ended, 5000));
    assert_string_equal(d.body.p, "GET none 0:\nHost: backend.test\n");

    /* a body longer than its length is the caller's error, reported at
     * once (-1) and by on_end */
    res e;
    res_init(&e);
    h.body_len = 2;
    e.r = upstream_start(p, &h, &cbs, &e);
    assert_int_equal(upstream_write(e.r, "abc", 3), -1);
    assert_false(e.ended);
    assert_true(run_until(&e.ended, 5000));
    assert_int_equal(e.code, UPSTREAM_E_REQUEST);
    assert_non_null(strstr(e.msg, "longer than its content-length 2"));
    res_release(&a);
    res_release(&b);
    res_release(&c);
    res_release(&d);
    res_release(&e);
    pool_stop(p);
    backend_stop(s);
    loop_teardown();
}

static void pause_resume(void **state)
{
    (void)state;
    loop_setup();
    int port;
    srv *s = backend_start(&port, 0);
    upstream_pool *p = pool_for(port, (upstream_opts){0});
    res a;
    res_init(&a);
    a.pause_first = true;
    get(p, "GET", "/big", &a);
    bool first = false;
    for (int i = 0; i < 1000 && a.n_data == 0; i++) uv_run(&loop, UV_RUN_ONCE);
    first = a.n_data == 1;
    assert_true(first);
    run_for(100); /* paused: nothing more arrives, nothing ends */
    assert_int_equal(a.n_data, 1);
    assert_int_equal(a.body.len, a.at_pause);
    assert_false(a.ended);
    upstream_resume(a.r);
    assert_int_equal(a.n_data, 1); /* not from inside the call */
    assert_true(run_until(&a.ended, 5000));
    assert_int_equal(a.code, UPSTREAM_OK);
    assert_int_equal(a.body.len, BIG_CHUNKS * BIG_CHUNK);
    for (int i = 0; i < BIG_CHUNKS; i++) {
        assert_int_equal(a.body.p[i * BIG_CHUNK], 'a' + i % 26);
        assert_int_equal(a.body.p[i * BIG_CHUNK + BIG_CHUNK - 1], 'a' + i % 26);
    }
    /* the connection went back to the pool */
    assert_int_equal(upstream_pool_idle(p), 1);
    res_release(&a);
    pool_stop(p);
    backend_stop(s);
    loop_teardown();
}

static void pool_backend_closes_idle(void **state)
{
    (void)state;
    loop_setup();
    int port;
    srv *s = backend_start(&port, 50); /* the backend drops idle connections after 50 ms */
    upstream_pool *p = pool_for(port, (upstream_opts){0});
    res a;
    res_init(&a);
    get(p, "GET", "/hello", &a);
    assert_true(run_until(&a.ended, 5000));
    assert_int_equal(upstream_pool_idle(p), 1);
    /* the backend closes it after 50 ms; the pool sees the EOF */
    assert_true(run_until_idle(p, 0, 5000));
    res b;
    res_init(&b);
    get(p, "GET", "/hello", &b);
    assert_true(run_until(&b.ended, 5000));
    assert_int_equal(b.code, UPSTREAM_OK);
    assert_string_equal(b.body.p, "hello");
    assert_int_equal(upstream_pool_connects(p), 2);
    res_release(&a);
    res_release(&b);
    pool_stop(p);
    backend_stop(s);
    loop_teardown();
}

/* The backend closes a pooled connection between two loop turns: the
 * close is in the kernel but not yet seen by the loop when the next
 * request takes the connection.  The probe catches it; the request goes
 * to a new connection, and the first one got no byte of it. */
static void pool_stale_probe(void **state)
{
    (void)state;
    loop_setup();
    rawb rb = {.n = 2,
               .hold_ms = 50, /* then it closes the first connection */
               .replies = {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nk1",
                           "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nk2"}};
    rawb_start(&rb);
    upstream_pool *p = pool_for(rb.port, (upstream_opts){0});
    res a;
    res_init(&a);
    get(p, "GET", "/one", &a);
    assert_true(run_until(&a.ended, 5000));
    assert_string_equal(a.body.p, "k1");
    assert_int_equal(upstream_pool_idle(p), 1);
    /* the backend closes it after its 50 ms hold: wait for that and for
     * the FIN to reach the pooled socket (the loop does not run, so the
     * pool has not seen it) */
    assert_true(rawb_wait_closed(&rb, 1));
    res b;
    res_init(&b);
    get(p, "GET", "/two", &b);
    assert_true(run_until(&b.ended, 5000));
    assert_int_equal(b.code, UPSTREAM_OK);
    assert_string_equal(b.body.p, "k2");
    assert_int_equal(upstream_pool_connects(p), 2);
    rawb_join(&rb);
    assert_int_equal(rb.accepted, 2);
    assert_int_equal(count_of(rb.got.p, "GET /two "), 1); /* sent once */
    assert_int_equal(count_of(rb.got.p, "GET /one "), 1);
    rawb_release(&rb);
    res_release(&a);
    res_release(&b);
    pool_stop(p);
    loop_teardown();
}

/* ---- failures ---- */

static void connect_refused(void **state)
{
    (void)state;
    loop_setup();
    int port;
    int fd = listen_tcp(-1, &port); /* bound, never listening */
    upstream_pool *p = pool_for(port, (upstream_opts){0});
    res a;
    res_init(&a);
    get(p, "POST", "/v1/chat/completions", &a);
    assert_false(a.ended);
    assert_true(run_until(&a.ended, 5000));
    assert_int_equal(a.code, UPSTREAM_E_CONNECT);
    char want[128];
    snprintf(want, sizeof want, "cannot connect to backend 127.0.0.1:%d: connection refused", port);
    assert_string_equal(a.msg, want);
    assert_int_equal(a.n_heads, 0);
    close(fd);
    res_release(&a);
    pool_stop(p);

    /* the address is checked when the pool is made */
    char err[256];
    assert_null(upstream_pool_new(&loop, &(upstream_opts){.host = "api.example.com", .port = 443},
                                  err, sizeof err));
    assert_non_null(strstr(err, "'api.example.com' is not a numeric IP address"));
    loop_teardown();
}

static void timeouts(void **state)
{
    (void)state;
    loop_setup();
    /* no response head: the header deadline (from the end of the request) */
    rawb rb = {.n = 1, .hold_ms = (int)(5000 * scale())};
    rawb_start(&rb);
    upstream_pool *p = pool_for(rb.port, (upstream_opts){.header_timeout_ms = 100});
    res a;
    res_init(&a);
    get(p, "GET", "/slow", &a);
    assert_true(run_until(&a.ended, 5000));
    assert_int_equal(a.code, UPSTREAM_E_TIMEOUT);
    assert_non_null(strstr(a.msg, "sent no response head within 100 ms"));
    rawb_join(&rb);
    assert_int_equal(rb.peer_closed, 1); /* the connection was closed, not pooled */
    rawb_release(&rb);
    pool_stop(p);

    /* a body that stops flowing: the idle deadline */
    rawb rb2 = {.n = 1,
                .hold_ms = (int)(5000 * scale()),
                .replies = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"}};
    rawb_start(&rb2);
    p = pool_for(rb2.port, (upstream_opts){.idle_timeout_ms = 100});
    res b;
    res_init(&b);
    get(p, "GET", "/stall", &b);
    assert_true(run_until(&b.ended, 5000));
    assert_int_equal(b.code, UPSTREAM_E_TIMEOUT);
    assert_string_equal(b.body.p, "hello");
    assert_non_null(strstr(b.msg, "sent nothing for 100 ms inside its response"));
    rawb_join(&rb2);
    assert_int_equal(rb2.peer_closed, 1);
    rawb_release(&rb2);
    pool_stop(p);

    /* connect: a listener whose accept queue is full drops our SYN */
    int port;
    int lfd = listen_tcp(0, &port);
    int fill[4];
    for (int i = 0; i < 4; i++) {
        fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        connect(fill[i], (struct sockaddr *)&sa, sizeof sa);
    }
    usleep(50 * 1000);
    p = pool_for(port, (upstream_opts){.connect_timeout_ms = 150});
    res c;
    res_init(&c);
    get(p, "GET", "/", &c);
    assert_true(run_until(&c.ended, 5000));
    assert_int_equal(c.code, UPSTREAM_E_TIMEOUT);
    assert_non_null(strstr(c.msg, "did not accept the connection within 150 ms"));
    for (int i = 0; i < 4; i++) close(fill[i]);
    close(lfd);
    pool_stop(p);
    res_release(&a);
    res_release(&b);
    res_release(&c);
    loop_teardown();
}

static void bad_responses(void **state)
{
    (void)state;
    struct {
        const char *reply;
        int code;
        const char *msg;
        const char *body;
    } cases[] = {
        {"HTTP/1.1 200 OK\nContent-Length: 0\n\n", UPSTREAM_E_PROTOCOL, "bare lf line ending", ""},
        {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", UPSTREAM_E_PROTOCOL,
         "bad response from backend", ""},
        {"HTTP/1.1 101 Switching Protocols\r\n\r\n", UPSTREAM_E_PROTOCOL, "101 switching", ""},
        {"", UPSTREAM_E_CLOSED, "closed the connection before responding", ""},
        {"HTTP/1.1 200 OK\r\nContent-", UPSTREAM_E_CLOSED,
         "closed the connection before the end of its response head", ""},
        /* dies mid-stream: what came is delivered, then the error */
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n3\r\nab", UPSTREAM_E_CLOSED,
         "closed the connection inside the response body", "data: ab"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", UPSTREAM_E_CLOSED,
         "inside the response body", "abc"},
        /* read until close: EOF is the end, not an error */
        {"HTTP/1.1 200 OK\r\n\r\nall of it", UPSTREAM_OK, "", "all of it"},
        /* interim responses are skipped */
        {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", UPSTREAM_OK,
         "", "ok"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        loop_setup();
        rawb rb = {.n = 1, .replies = {cases[i].reply}};
        rawb_start(&rb);
        upstream_pool *p = pool_for(rb.port, (upstream_opts){0});
        res a;
        res_init(&a);
        get(p, "GET", "/", &a);
        assert_true(run_until(&a.ended, 5000));
        if (a.code != cases[i].code || !strstr(a.msg, cases[i].msg))
            fail_msg("case %zu: code %d msg '%s'", i, a.code, a.msg);
        assert_string_equal(a.body.p, cases[i].body);
        rawb_join(&rb);
        rawb_release(&rb);
        res_release(&a);
        pool_stop(p);
        loop_teardown();
    }
}


/* ---- the TLS transport hook, with a toy cipher ----
 * "Handshake": the client sends HELLO, the server answers OK (anything
 * else fails it); then every byte is XORed with 0x5a both ways.  Enough
 * to see upstream hold the request until the handshake is done, move
 * every byte through the hook, and report a failed handshake. */

typedef struct xsess {
    int ok; /* bytes of "OK" seen */
} xsess;

static int xor_opens;

static void *x_open(void *ctx, const char *name, buf *out, char *err, size_t errlen)
{
    assert_string_equal((const char *)ctx, "ctx");
    assert_string_equal(name, "backend.test");
    xor_opens++;
    buf_adds(out, "HELLO");
    return calloc(1, sizeof(xsess));
}

static int x_feed(void *sess, const char *in, size_t n, buf *plain, buf *out, char *err, size_t errlen)
{
    xsess *x = sess;
    size_t i = 0;
    for (; i < n && x->ok < 2; i++) {
        if (in[i] != "OK"[x->ok]) {
            snprintf(err, errlen, "bad server hello");
            return -1;
        }
        x->ok++;
    }
    for (; i < n; i++) buf_addc(plain, (char)(in[i] ^ 0x5a));
    return x->ok == 2;
}

static int x_write(void *sess, const void *p, size_t n, buf *out, char *err, size_t errlen)
{
    xsess *x = sess;
    assert_int_equal(x->ok, 2); /* never before the handshake */
    for (size_t i = 0; i < n; i++) buf_addc(out, (char)(((const char *)p)[i] ^ 0x5a));
    return 0;
}

static void x_close(void *sess)
{
    free(sess);
}

static const upstream_tls_ops xor_ops = {x_open, x_feed, x_write, x_close};

static void *xorb_main(void *arg)
{
    rawb *rb = arg;
    struct pollfd pf = {.fd = rb->lfd, .events = POLLIN};
    if (poll(&pf, 1, (int)(5000 * scale())) <= 0) return NULL;
    int fd = accept(rb->lfd, NULL, NULL);
    rb->accepted++;
    char hello[5];
    size_t got = 0;
    while (got < 5) {
        ssize_t n = recv(fd, hello + got, 5 - got, 0);
        if (n <= 0) break;
        got += (size_t)n;
    }
    send(fd, rb->replies[1], strlen(rb->replies[1]), MSG_NOSIGNAL); /* OK, or not */
    buf raw = BUF_INIT;
    if (read_head(fd, &raw, 500)) {} /* never true: the head is XORed */
    for (size_t i = 0; i < raw.len; i++) buf_addc(&rb->got, (char)(raw.p[i] ^ 0x5a));
    buf_release(&raw);
    const char *r = rb->replies[0];
    buf enc = BUF_INIT;
    for (size_t i = 0; r && r[i]; i++) buf_addc(&enc, (char)(r[i] ^ 0x5a));
    send(fd, enc.p, enc.len, MSG_NOSIGNAL);
    buf_release(&enc);
    struct pollfd q = {.fd = fd, .events = POLLIN};
    char tmp[256];
    if (poll(&q, 1, (int)(2000 * scale())) > 0 && recv(fd, tmp, sizeof tmp, 0) <= 0) rb->peer_closed++;
    close(fd);
    return NULL;
}

static void tls_hook(void **state)
{
    (void)state;
    loop_setup();
    rawb rb = {.replies = {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", "OK"}};
    rb.lfd = listen_tcp(8, &rb.port);
    buf_init(&rb.got);
    assert_int_equal(pthread_create(&rb.th, NULL, xorb_main, &rb), 0);
    upstream_pool *p = pool_for(rb.port, (upstream_opts){.tls = &xor_ops, .tls_ctx = "ctx",
                                                         .tls_name = "backend.test",
                                                         .host_header = "backend.test"});
    res a;
    res_init(&a);
    upstream_head h = {.method = {"POST", 4}, .target = {"/x", 2}, .body_len = 3};
    a.r = upstream_start(p, &h, &cbs, &a);
    assert_int_equal(upstream_write(a.r, "abc", 3), 0); /* held until the handshake */
    assert_int_equal(upstream_end(a.r), 0);
    assert_true(run_until(&a.ended, 5000));
    assert_int_equal(a.code, UPSTREAM_OK);
    assert_string_equal(a.body.p, "hello");
    assert_int_equal(xor_opens, 1);
    rawb_join(&rb);
    assert_string_equal(rb.got.p, "POST /x HTTP/1.1\r\nHost: backend.test\r\nContent-Length: 3\r\n\r\nabc");
    assert_int_equal(upstream_pool_idle(p), 1);
    pool_stop(p);
    rawb_release(&rb);
    res_release(&a);

    /* a failed handshake is a connect error, with the hook's message */
    rawb rb2 = {.replies = {NULL, "NO"}};
    rb2.lfd = listen_tcp(8, &rb2.port);
    buf_init(&rb2.got);
    assert_int_equal(pthread_create(&rb2.th, NULL, xorb_main, &rb2), 0);
    p = pool_for(rb2.port, (upstream_opts){.tls = &xor_ops, .tls_ctx = "ctx", .tls_name = "backend.test"});
    res b;
    res_init(&b);
    get(p, "GET", "/", &b);
    assert_true(run_until(&b.ended, 5000));
    assert_int_equal(b.code, UPSTREAM_E_CONNECT);
    /* one message: where, then the hook's own words (said once) */
    char want[128];
    snprintf(want, sizeof want, "backend 127.0.0.1:%d: bad server hello", rb2.port);
    assert_string_equal(b.msg, want);
    rawb_join(&rb2);
    assert_int_equal(rb2.got.len, 0); /* no request byte went out */
    rawb_release(&rb2);
    res_release(&b);
    pool_stop(p);
    loop_teardown();
}

/* ---- fakellm: SSE and aborts ---- */

typedef struct fake {
    pid_t pid;
    int port;
    char where[64];
} fake;

static int free_port(void)
{
    int port;
    int fd = listen_tcp(-1, &port);
    close(fd);
    return port;
}

static void fake_start(fake *f, const char *tps)
{
    f->port = free_port();
    snprintf(f->where, sizeof f->where, "127.0.0.1:%d", f->port);
    char *bin = build_path("fakellm");
    char *model = src_path("tests/fixtures/models/aidreams260K-f32.gguf");
    char port[16];
    snprintf(port, sizeof port, "%d", f->port);
    char *argv[] = {bin, (char *)"-m", model, (char *)"--port", port, (char *)"--metrics", NULL};
    size_t n = 0;
    while (environ[n]) n++;
    char **envp = calloc(n + 3, sizeof *envp);
    for (size_t i = 0; i < n; i++) envp[i] = environ[i];
    char *e1 = xasprintf("FAKELLM_TPS=%s", tps);
    envp[n] = e1;
    envp[n + 1] = (char *)"FAKELLM_LOG_REQUESTS=0";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    assert_int_equal(posix_spawn(&f->pid, bin, &fa, NULL, argv, envp), 0);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    free(e1);
    int64_t deadline = mono_ms() + 10000 * scale();
    int status = 0;
    while (mono_ms() < deadline) {
        http_reply r;
        char err[256];
        if (http_request(f->where, "GET", "/health", NULL, NULL, 0, 1000, &r, err, sizeof err) == 0) {
            status = r.status;
            http_reply_release(&r);
            if (status == 200) break;
        }
        usleep(10 * 1000);
    }
    if (status != 200) fail_msg("fakellm (%s) not healthy on port %d", bin, f->port);
    free(bin);
    free(model);
}

static void fake_stop(fake *f)
{
    kill(f->pid, SIGTERM);
    int st;
    waitpid(f->pid, &st, 0);
}

/* fakellm's counter of clients that hung up (-1 if unreadable) */
static long fake_aborts(fake *f)
{
    http_reply r;
    char err[256];
    if (http_request(f->where, "GET", "/metrics", NULL, NULL, 0, 2000, &r, err, sizeof err)) return -1;
    const char *m = strstr(r.body.p, "\nfakellm:aborted_requests_total ");
    long v = m ? strtol(m + strlen("\nfakellm:aborted_requests_total "), NULL, 10) : -1;
    http_reply_release(&r);
    return v;
}

static const char chat[] =
    "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true,\"max_tokens\":16}";

static void sse_relay(void **state)
{
    (void)state;
    fake f;
    fake_start(&f, "2000");
    loop_setup();
    upstream_pool *p = pool_for(f.port, (upstream_opts){0});
#define F(n, v) {{n, sizeof n - 1}, {v, sizeof v - 1}}
    http_field fields[] = {F("Content-Type", "application/json"), F("Accept", "text/event-stream")};
#undef F
    upstream_head h = {.method = {"POST", 4}, .target = {"/v1/chat/completions", 20},
                       .fields = fields, .n_fields = 2, .body_len = (int64_t)strlen(chat)};
    res a;
    res_init(&a);
    a.r = upstream_start(p, &h, &cbs, &a);
    assert_int_equal(upstream_write(a.r, chat, strlen(chat)), 0);
    assert_int_equal(upstream_end(a.r), 0);
    assert_true(run_until(&a.ended, 10000));
    assert_int_equal(a.code, UPSTREAM_OK);
    assert_int_equal(a.status, 200);
    assert_non_null(strstr(a.fields.p, "text/event-stream"));
    /* the same stream as a direct request gets: every event, in order */
    http_reply d;
    char err[256];
    assert_int_equal(http_request(f.where, "POST", "/v1/chat/completions", "application/json", chat,
                                  strlen(chat), 10000, &d, err, sizeof err),
                     0);
    assert_int_equal(count_of(a.body.p, "data: "), count_of(d.body.p, "data: "));
    assert_true(count_of(a.body.p, "data: ") >= 18);
    assert_int_equal(strncmp(a.body.p, "data: {", 7), 0);
    assert_non_null(strstr(a.body.p, "data: [DONE]\n\n"));
    assert_int_equal(strcmp(a.body.p + a.body.len - 14, "data: [DONE]\n\n"), 0);
    const char *words[] = {"\"Once\"", "\" upon\"", "\" a\"", "\" time\"", "\" small\"", "\" request.\""};
    const char *at = a.body.p;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        const char *w = strstr(at, words[i]);
        if (!w) fail_msg("token %s missing or out of order", words[i]);
        at = w;
    }
    assert_true(a.n_data > 1); /* streamed, not gathered */
    http_reply_release(&d);
    res_release(&a);
    pool_stop(p);
    loop_teardown();
    fake_stop(&f);
}

static void abort_reaches_backend(void **state)
{
    (void)state;
    fake f;
    fake_start(&f, "20"); /* 1000 tokens at 20/s: 50 s unless aborted */
    loop_setup();
    upstream_pool *p = pool_for(f.port, (upstream_opts){0});
    static const char body[] = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                               "\"stream\":true,\"max_tokens\":1000,\"ignore_eos\":true}";
    upstream_head h = {.method = {"POST", 4}, .target = {"/v1/chat/completions", 20},
                       .body_len = (int64_t)strlen(body)};
    assert_int_equal(fake_aborts(&f), 0);
    res a;
    res_init(&a);
    a.abort_first = true;
    a.r = upstream_start(p, &h, &cbs, &a);
    upstream_write(a.r, body, strlen(body));
    upstream_end(a.r);
    bool *aborted = &a.aborted;
    assert_true(run_until(aborted, 10000));
    run_for(50);
    assert_false(a.ended); /* no callback after the abort */
    assert_int_equal(upstream_pool_idle(p), 0); /* never pooled */
    /* the backend saw the client go (polled, scaled deadline) */
    long n = 0;
    int64_t deadline = mono_ms() + 5000 * scale();
    while ((n = fake_aborts(&f)) != 1 && mono_ms() < deadline) usleep(20 * 1000);
    assert_int_equal(n, 1);
    res_release(&a);
    pool_stop(p);
    loop_teardown();
    fake_stop(&f);
}

/* Over the high mark of body bytes held before the connection is up: they
 * all go out at once on connect (loopback takes them), so no uv_write
 * callback ever comes; on_writable must still follow, from a later turn,
 * or the caller (the relay) never resumes the client's body. */
static void held_body_writable(void **state)
{
    (void)state;
    loop_setup();
    int port;
    srv *s = backend_start(&port, 0);
    upstream_pool *p = pool_for(port, (upstream_opts){0});
    size_t n = 300 * 1024, total = n + 10;
    char *body = malloc(total);
    memset(body, 'b', total);
    res a;
    res_init(&a);
    upstream_head h = {.method = {"POST", 4}, .target = {"/echo", 5}, .body_len = (int64_t)total};
    a.r = upstream_start(p, &h, &wcbs, &a);
    assert_non_null(a.r);
    assert_int_equal(upstream_write(a.r, body, n), 0);
    assert_true(upstream_congested(a.r)); /* held: the connection is not up yet */
    assert_int_equal(a.writable, 0);     /* never from inside a call */
    assert_true(run_until(&a.got_writable, 5000));
    assert_int_equal(a.writable, 1);
    assert_false(upstream_congested(a.r));
    assert_int_equal(upstream_write(a.r, body + n, total - n), 0);
    assert_int_equal(upstream_end(a.r), 0);
    assert_true(run_until(&a.ended, 5000));
    assert_int_equal(a.code, UPSTREAM_OK);
    assert_int_equal(a.status, 200);
    char want[64];
    snprintf(want, sizeof want, "POST length %zu:bbbb", total);
    assert_memory_equal(a.body.p, want, strlen(want));
    assert_int_equal(upstream_pool_idle(p), 1); /* a complete exchange: pooled */
    free(body);
    res_release(&a);
    pool_stop(p);
    backend_stop(s);
    loop_teardown();
}

/* A backend that never reads the request body: the write deadline
 * (idle_timeout_ms without progress) ends the request, never a hang. */
static void write_deadline(void **state)
{
    (void)state;
    loop_setup();
    int port;
    int lfd = listen_tcp(8, &port); /* the kernel accepts; nobody reads */
    upstream_pool *p = pool_for(port, (upstream_opts){.idle_timeout_ms = 200});
    size_t n = (size_t)32 << 20;
    char *body = calloc(1, n);
    res a;
    res_init(&a);
    upstream_head h = {.method = {"POST", 4}, .target = {"/x", 2}, .body_len = (int64_t)n + 1};
    a.r = upstream_start(p, &h, &wcbs, &a);
    assert_int_equal(upstream_write(a.r, body, n), 0);
    assert_true(run_until(&a.ended, 10000));
    assert_int_equal(a.code, UPSTREAM_E_TIMEOUT);
    char want[128];
    snprintf(want, sizeof want, "backend 127.0.0.1:%d took none of the request body for 200 ms", port);
    assert_non_null(strstr(a.msg, want));
    assert_int_equal(a.writable, 0);
    free(body);
    close(lfd);
    res_release(&a);
    pool_stop(p);
    loop_teardown();
}

/* A DNS name's addresses in turn: the first refuses (::1 while the server
 * listens on IPv4 only), the next is used, and stays the pool's choice. */
static void next_address(void **state)
{
    (void)state;
    loop_setup();
    int port;
    srv *s = backend_start(&port, 0);
    const char *more[] = {"127.0.0.1"};
    upstream_pool *p = pool_for(port, (upstream_opts){0});
    pool_stop(p);
    char err[256];
    p = upstream_pool_new(&loop, &(upstream_opts){.host = "::1", .port = port, .more_hosts = more, .n_more_hosts = 1},
                          err, sizeof err);
    assert_non_null(p);
    res a, b;
    res_init(&a);
    res_init(&b);
    get(p, "GET", "/hello", &a);
    assert_true(run_until(&a.ended, 5000));
    assert_int_equal(a.code, UPSTREAM_OK);
    assert_string_equal(a.body.p, "hello");
    assert_int_equal(upstream_pool_connects(p), 2);
    char want[64];
    snprintf(want, sizeof want, "127.0.0.1:%d", port);
    assert_string_equal(upstream_pool_name(p), want);
    get(p, "GET", "/hello", &b);
    assert_true(run_until(&b.ended, 5000));
    assert_int_equal(b.code, UPSTREAM_OK);
    assert_int_equal(upstream_pool_connects(p), 2); /* the pooled IPv4 connection */
    res_release(&a);
    res_release(&b);
    pool_stop(p);
    backend_stop(s);

    /* every address refuses: the last one is named */
    int fd = listen_tcp(-1, &port);
    p = upstream_pool_new(&loop, &(upstream_opts){.host = "::1", .port = port, .more_hosts = more, .n_more_hosts = 1},
                          err, sizeof err);
    res c;
    res_init(&c);
    get(p, "GET", "/", &c);
    assert_true(run_until(&c.ended, 5000));
    assert_int_equal(c.code, UPSTREAM_E_CONNECT);
    snprintf(want, sizeof want, "cannot connect to backend 127.0.0.1:%d: ", port);
    assert_non_null(strstr(c.msg, want));
    close(fd);
    res_release(&c);
    pool_stop(p);
    loop_teardown();
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_and_chunked),
        cmocka_unit_test(request_serialised),
        cmocka_unit_test(pause_resume),
        cmocka_unit_test(pool_backend_closes_idle),
        cmocka_unit_test(pool_stale_probe),
        cmocka_unit_test(connect_refused),
        cmocka_unit_test(timeouts),
        cmocka_unit_test(bad_responses),
        cmocka_unit_test(tls_hook),
        cmocka_unit_test(sse_relay),
        cmocka_unit_test(abort_reaches_backend),
        cmocka_unit_test(held_body_writable),
        cmocka_unit_test(write_deadline),
        cmocka_unit_test(next_address),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
