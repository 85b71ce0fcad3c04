/* server.h - the HTTP/1.1 server on libuv: listeners (a Unix socket for
 * the control API, TCP for the router), connections, limits, timeouts and
 * responses.  Parsing is src/net/http.c; this file owns what happens
 * around it.
 *
 * Design: one request at a time per connection.  A request is handed to
 * on_request once its whole body is in (control API bodies are small and
 * bounded by max_body); the connection parses nothing more until the
 * response to it has ended, so pipelined requests are answered in order
 * without a queue.  The response may be given from inside on_request or
 * later (from another callback on the same loop); until it is, the
 * srv_conn stays valid even if the peer has gone.
 *
 * Streaming requests (the router): an optional on_head sees each head
 * first and may answer SRV_STREAM.  The handler then owes the response
 * from that moment, and the body comes to on_body span by span as it is
 * decoded, zero-copy (views into the read buffer, valid for the call),
 * the last call with last=true (also for a request without a body).  The
 * response may start (or end) before the body has; once it has ended,
 * the rest of the body is read and discarded (the connection stays
 * usable).  Limits apply as in the buffered mode: max_body (413), the
 * body deadline (408), the parser's errors; when the handler has not
 * started its response the server answers the error itself, and either
 * way on_abort follows.  srv_pause_body / srv_resume_body stop and
 * restart reading (backpressure toward a slow backend; the body deadline
 * does not run while paused, and resuming continues it with the time it
 * had left, not a fresh one).  A peer EOF while a streamed request is
 * owed is taken as the client leaving (on_abort), not as a half-close:
 * HTTP clients close to cancel, and a backend generating for nobody costs
 * GPU time.
 *
 * Write backpressure: when more than write_high bytes are queued for a
 * peer, srv_conn_congested turns true; when the queue falls to write_low,
 * on_drain is called (a relay stops reading its upstream in between).
 * Writes go to the socket at once when its queue is empty (no copy);
 * only what the kernel does not take is copied.
 *
 * Everything runs on the caller's loop thread; nothing here blocks.
 * Errors the server answers itself (parser errors 400/413/414/431/501/505,
 * 408 timeouts, 403 refused peer, 503 over the connection cap) carry a
 * small JSON body {"error":{"code":..,"message":..}} and close the
 * connection. */
#ifndef GPUMOD_SERVER_H
#define GPUMOD_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "net/http.h"
#include "util/buf.h"

typedef struct srv srv;
typedef struct srv_conn srv_conn;

/* Who is at the other end of a Unix socket (SO_PEERCRED and
 * SO_PEERGROUPS, both taken at accept, so a pid reused later cannot lie).
 * known is false for TCP.  groups_known is false where the kernel has no
 * SO_PEERGROUPS (before 4.13); a reader then falls back to /proc. */
typedef struct srv_peer {
    bool known;
    uid_t uid;
    gid_t gid;
    pid_t pid;
    bool groups_known;
    size_t ngroups;
    gid_t *groups; /* the supplementary groups; owned by the connection */
} srv_peer;

/* m and body are borrowed for the duration of the call only (copy what an
 * asynchronous handler needs).  body is empty when there is none.  The
 * handler must end the response exactly once, now or later: srv_respond,
 * or srv_respond_start ... srv_end. */
typedef void (*srv_request_cb)(srv_conn *c, const http_msg *m, const view *body, void *ud);
/* Unix sockets: false refuses the peer with 403 before a byte is read. */
typedef bool (*srv_allow_cb)(const srv_peer *peer, void *ud);
/* The connection died (peer gone, write error, srv_close during a
 * streamed response) while the handler still owed it srv_end/srv_respond.
 * The handler must still make that call (it then only frees); until then
 * c stays valid.  Optional: without it, writes just start failing.
 * Called at most once per request. */
typedef void (*srv_abort_cb)(srv_conn *c, void *ud);

/* What on_head wants for this request's body. */
typedef enum srv_mode {
    SRV_BUFFER = 0, /* buffer it up to max_body, then on_request (the default) */
    SRV_STREAM = 1, /* hand it to on_body as it arrives; the handler owes the response */
} srv_mode;
/* A request head has arrived.  m's views stay valid until the response
 * has ended (the head is kept in a per-connection copy).  Returning
 * SRV_STREAM makes the handler owe the response now (it may answer from
 * inside this call); with SRV_BUFFER it must not answer here. */
typedef srv_mode (*srv_head_cb)(srv_conn *c, const http_msg *m, void *ud);
/* Streaming mode: decoded body bytes (chunk framing removed), a view into
 * the read buffer valid for the call only; last=true once, at the end
 * (chunk may then be empty).  Not called after the response has ended or
 * after on_abort. */
typedef void (*srv_body_cb)(srv_conn *c, const view *chunk, bool last, void *ud);
/* The queued output of c fell to write_low after passing write_high. */
typedef void (*srv_drain_cb)(srv_conn *c, void *ud);

typedef struct srv_opts {
    http_limits limits;        /* 0 fields: 16 KiB head, 100 fields, 8 KiB target, 1 MiB body */
    int64_t header_timeout_ms; /* connection (or first byte) to end of head; 0: 10 s */
    int64_t body_timeout_ms;   /* end of head to end of body; 0: 30 s */
    int64_t idle_timeout_ms;   /* keep-alive wait for the next request; 0: 60 s */
    size_t max_conns;          /* open connections; the next one gets 503; 0: 256 */
    srv_request_cb on_request; /* required */
    srv_allow_cb allow;        /* optional (Unix sockets only) */
    srv_abort_cb on_abort;     /* optional */
    srv_head_cb on_head;       /* optional: absent, every request is buffered */
    srv_body_cb on_body;       /* required when on_head may answer SRV_STREAM */
    srv_drain_cb on_drain;     /* optional */
    size_t write_high;         /* congested above this many queued bytes; 0: 256 KiB */
    size_t write_low;          /* on_drain at or below; 0: write_high / 4 */
    void *ud;
} srv_opts;

/* A server on loop (borrowed; must outlive the server).  Listens on
 * nothing until srv_listen_*.  Freed by srv_close. */
srv *srv_new(uv_loop_t *loop, const srv_opts *o);

/* Listen on a Unix socket at path, mode 0600.  A socket file already
 * there is replaced only when nothing answers on it (a stale one left by
 * a crash); a live daemon's socket is never touched: -1 with err
 * "socket '/run/x.sock' is in use by another process" (errno EADDRINUSE).
 * The file is unlinked by srv_close. */
int srv_listen_unix(srv *s, const char *path, char *err, size_t errlen);

/* Listen on TCP host:port; host is numeric (v4 or v6) or "localhost";
 * port 0 picks a free one (srv_tcp_port tells which). */
int srv_listen_tcp(srv *s, const char *host, int port, char *err, size_t errlen);
/* The port of the last TCP listener, or -1. */
int srv_tcp_port(const srv *s);

/* Stop accepting, close idle connections and streamed responses
 * (on_abort), let requests in progress finish (with Connection: close),
 * then free the server and call cb (which may be NULL) on the loop.  A
 * handler that never answers keeps the server open. */
void srv_close(srv *s, void (*cb)(void *ud), void *ud);

/* A whole response; body is copied.  Content-Length is set (no body for
 * HEAD, 204, 304).  content_type may be NULL.  Returns 0, or -1 when the
 * connection is already gone (the request is finished either way). */
int srv_respond(srv_conn *c, int status, const char *content_type, const void *body, size_t len);

/* A streamed response: chunked on HTTP/1.1, read-until-close on 1.0.
 * srv_write copies data (0 bytes is a no-op, never the last chunk);
 * srv_end finishes the response.  -1 when the connection is gone. */
int srv_respond_start(srv_conn *c, int status, const char *content_type);
int srv_write(srv_conn *c, const void *data, size_t len);
int srv_end(srv_conn *c);

/* A relay's response head: status and the backend's fields, in order,
 * minus those the server owns (Connection and the names it lists,
 * Keep-Alive, Transfer-Encoding, Content-Length, Trailer, TE, Upgrade,
 * Proxy-*); fields are copied.  content_length >= 0 sends Content-Length
 * and srv_write then passes bytes unframed (a write past the length is
 * refused with -1; srv_end short of it closes the connection, so the
 * client sees a truncated body, never a wrong next response); -1 streams
 * as srv_respond_start does.  No body for HEAD, 1xx, 204, 304.  Then
 * srv_write ... srv_end. */
int srv_respond_head(srv_conn *c, int status, const http_field *fields, size_t n_fields,
                     int64_t content_length);

/* End the response by closing the connection, without the last chunk (a
 * relay whose backend died inside a non-SSE body: the client must see a
 * truncated body, never a complete-looking one).  No on_abort follows.
 * -1 when no response is owed. */
int srv_close_response(srv_conn *c);
/* The TCP peer as "1.2.3.4:5678" or "[v6]:port"; -1 (out "") for a Unix
 * socket or a closed connection. */
int srv_conn_addr(const srv_conn *c, char *out, size_t outlen);

/* Bytes queued for the peer and not yet written (for a streamer that
 * wants to stop producing when a slow reader falls behind). */
size_t srv_conn_queued(const srv_conn *c);
const srv_peer *srv_conn_peer(const srv_conn *c);
/* Still connected (a handler answering late may skip its work). */
bool srv_conn_alive(const srv_conn *c);
/* More than write_high bytes queued: stop producing until on_drain. */
bool srv_conn_congested(const srv_conn *c);

/* Streaming requests: stop reading the body (and the socket) until
 * srv_resume_body.  Resuming delivers what is already buffered from inside
 * the call (on_body may run before it returns).  No-ops outside a
 * streamed request body. */
void srv_pause_body(srv_conn *c);
void srv_resume_body(srv_conn *c);

/* The status of the error the server answered the current request with
 * itself (413, 408, 400 ... while a streamed body was read), or 0.  A
 * handler that gets on_abort may read it to record what the client got. */
int srv_conn_fail_status(const srv_conn *c);
/* The body bytes of that answer (what an access log records as out). */
size_t srv_conn_fail_bytes(const srv_conn *c);

/* The handler's own pointer for this connection (NULL at accept); it
 * lives as long as c, across requests, and is never freed by the server. */
void srv_conn_set_ud(srv_conn *c, void *ud);
void *srv_conn_ud(const srv_conn *c);

#endif
