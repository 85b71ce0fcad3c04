/* upstream.h - the router's client side: one HTTP/1.1 request to a
 * backend over libuv TCP (optionally through a TLS transport hook), with a
 * keep-alive connection pool per backend.
 *
 * Design:
 *   - A pool (upstream_pool) per backend (host, port, deadlines, TLS).  A
 *     request takes an idle connection from it or opens a new one; a
 *     connection goes back to it only after a complete keep-alive
 *     exchange (whole request written, whole response read).  Idle
 *     connections are bounded (max_idle) and closed after pool_idle_ms.
 *   - The request head is re-serialised from a method, a target and a list
 *     of fields (never raw header bytes): hop-by-hop fields (Connection and
 *     the names it lists, Keep-Alive, Proxy-*, TE, Trailer,
 *     Transfer-Encoding, Upgrade) and the caller's Host and Content-Length
 *     are dropped; Host is set from the pool; the body is framed with
 *     Content-Length when the caller knows the length, else chunked.
 *   - The response goes through http_parse (HTTP_KIND_RESPONSE) and is
 *     delivered as callbacks: on_head once (1xx interim responses are
 *     skipped), on_data per decoded body span, on_end once.
 *   - No per-chunk work beyond the parse: no logging, no allocation.  Body
 *     spans are views into the connection's read buffer (TLS: into the
 *     decrypted buffer), valid for the call only.
 *   - A pooled connection the backend has closed is detected before the
 *     request is written (a MSG_PEEK probe when it is taken), then another
 *     connection is used: a request is retried only when none of its bytes
 *     was written, so a POST is never sent twice.
 *
 * Everything runs on the caller's loop thread; nothing blocks. */
#ifndef GPUMOD_UPSTREAM_H
#define GPUMOD_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "net/http.h"
#include "util/buf.h"

/* ---- the TLS transport hook (src/router/tls.c implements it) ----
 *
 * Memory-BIO shaped: upstream owns the socket and moves bytes; the hook
 * turns ciphertext into plaintext and back.  One session per connection.
 * Every function appends to the caller's bufs (never replaces), returns 0
 * or -1 with err filled ("tls handshake with 'api.example.com':
 * certificate verify failed"), and never blocks or touches the socket.
 *
 *   sess = open(ctx, server_name, out, err)  create a client session (SNI
 *          and certificate name = server_name); the first handshake
 *          records (ClientHello) are appended to *out, which upstream
 *          sends.
 *   feed(sess, in, n, plain, out, err)       ciphertext received from the
 *          socket: decrypted application data is appended to *plain,
 *          records to send (handshake, alerts, key updates) to *out.
 *          Returns 1 once the handshake is complete (on this call and
 *          every later one), 0 while it is in progress, -1 on error.
 *          A close_notify from the peer yields no more plaintext; upstream
 *          treats the socket EOF that follows as the end of the stream.
 *   write(sess, plain, n, out, err)          encrypt application data into
 *          *out.  Upstream calls it only after feed returned 1.
 *   close(sess)                              free the session (no I/O; the
 *          connection is being dropped).
 *
 * ctx is the hook's own per-backend state (an SSL_CTX with the CA store),
 * given in upstream_opts.tls_ctx and passed back unchanged. */
typedef struct upstream_tls_ops {
    void *(*open)(void *ctx, const char *server_name, buf *out, char *err, size_t errlen);
    int (*feed)(void *sess, const char *in, size_t n, buf *plain, buf *out, char *err,
                size_t errlen);
    int (*write)(void *sess, const void *plain, size_t n, buf *out, char *err, size_t errlen);
    void (*close)(void *sess);
} upstream_tls_ops;

/* ---- pools ---- */

typedef struct upstream_pool upstream_pool;
typedef struct upstream_req upstream_req;

typedef struct upstream_opts {
    const char *host;           /* numeric v4/v6 or "localhost" (never DNS here); copied */
    int port;
    const char *host_header;    /* Host sent; NULL: host[:port] (port omitted when 80/443) */
    int64_t connect_timeout_ms; /* TCP connect + TLS handshake; 0: 5 s */
    int64_t header_timeout_ms;  /* request end to the response head; 0: 600 s (a long
                                 * prompt is processed before a non-streamed answer starts) */
    int64_t idle_timeout_ms;    /* no byte from the backend while its body flows (not
                                 * counted while paused); 0: 300 s */
    int64_t pool_idle_ms;       /* an idle pooled connection is closed after; 0: 30 s */
    size_t max_idle;            /* idle connections kept; 0: 32 */
    http_limits limits;         /* response parsing; 0 fields: 64 KiB head, 200 fields,
                                 * no body limit (UINT64_MAX) */
    const upstream_tls_ops *tls; /* NULL: plain TCP */
    void *tls_ctx;              /* passed to tls->open */
    const char *tls_name;       /* SNI and certificate name; NULL: host; copied */
    const char *const *more_hosts; /* further numeric addresses of the same backend (a DNS
                                 * name's other answers), tried in turn when a connect to
                                 * the current one fails; copied */
    size_t n_more_hosts;
} upstream_opts;

/* A pool for one backend on loop (borrowed; must outlive the pool).
 * NULL with err when host is not a numeric address or localhost. */
upstream_pool *upstream_pool_new(uv_loop_t *loop, const upstream_opts *o, char *err,
                                 size_t errlen);
/* Close idle connections and free the pool once no request uses it (the
 * requests in flight finish normally); cb (may be NULL) then runs. */
void upstream_pool_close(upstream_pool *p, void (*cb)(void *ud), void *ud);
/* Idle connections held now (tests, metrics). */
size_t upstream_pool_idle(const upstream_pool *p);
/* Connections opened since the pool was made (tests: reuse shows here). */
uint64_t upstream_pool_connects(const upstream_pool *p);

/* ---- requests ---- */

typedef enum upstream_err {
    UPSTREAM_OK = 0,
    UPSTREAM_E_CONNECT,  /* refused, unreachable, or the TLS handshake failed */
    UPSTREAM_E_TIMEOUT,  /* connect, header or idle deadline */
    UPSTREAM_E_CLOSED,   /* the backend closed or reset the connection before the
                          * response was complete */
    UPSTREAM_E_PROTOCOL, /* the response is not valid HTTP (parser message) */
    UPSTREAM_E_TLS,      /* a TLS error after the handshake */
    UPSTREAM_E_REQUEST,  /* the caller's body did not match its Content-Length */
} upstream_err;

typedef struct upstream_cbs {
    /* The final response head (1xx skipped).  m's views (status, reason,
     * fields, framing, content_length, keep_alive) are valid for the call
     * only.  Optional. */
    void (*on_head)(upstream_req *r, const http_msg *m, void *ud);
    /* Decoded body bytes: Content-Length and read-until-close bodies as
     * they arrive; chunked bodies without their framing (chunk-size lines,
     * CRLFs, trailers), one call per chunk unless a socket read split it.
     * The concatenation of the spans is exactly the backend's body; a
     * relay that keeps the client's framing chunked re-chunks each span.
     * data is valid for the call only.  Optional. */
    void (*on_data)(upstream_req *r, const view *data, void *ud);
    /* Once, last: err 0 with msg NULL when the response is complete, else
     * an upstream_err and a message saying what, where and what was
     * expected ("backend 127.0.0.1:8080 closed the connection inside the
     * response body (chunked)").  r is freed when it returns.  Required. */
    void (*on_end)(upstream_req *r, int err, const char *msg, void *ud);
    /* The request bytes queued toward the backend fell below the low mark
     * after passing the high mark (upstream_congested was true): the
     * caller may resume reading the client's body.  Always from a later
     * loop turn (also when the bytes held before the connection was up
     * went out at once), never from inside an upstream_* call.  While the
     * request is congested a write deadline runs (idle_timeout_ms without
     * the backend taking a byte: UPSTREAM_E_TIMEOUT).  Optional. */
    void (*on_writable)(upstream_req *r, void *ud);
} upstream_cbs;

/* What to send.  Views are read during upstream_start only (the head is
 * serialised at once). */
typedef struct upstream_head {
    view method;
    view target;
    const http_field *fields; /* the client's fields: hop-by-hop ones, Host and
                               * Content-Length are dropped, the rest kept in order */
    size_t n_fields;
    const http_field *extra;  /* appended after fields unfiltered (Authorization for
                               * a remote, X-Forwarded-For ...); names and values must
                               * be valid field syntax */
    size_t n_extra;
    int64_t body_len;         /* >= 0: Content-Length (0 is sent as "Content-Length: 0"
                               * except for GET, HEAD, DELETE, OPTIONS, TRACE);
                               * -1: unknown, sent chunked */
} upstream_head;

/* Start a request on pool p.  Callbacks come later, never from inside
 * this call.  Then write the body (if any) with upstream_write and finish
 * it with upstream_end (always, even without a body).  Returns NULL only
 * when the pool is closing. */
upstream_req *upstream_start(upstream_pool *p, const upstream_head *h, const upstream_cbs *cb,
                             void *ud);
/* Body bytes (copied, or written at once when the socket takes them).
 * Before the connection is up they are held.  -1 once the request has
 * ended (then on_end has been or will be called). */
int upstream_write(upstream_req *r, const void *data, size_t len);
/* The body is complete (the last chunk for chunked; for Content-Length a
 * short body ends the request with UPSTREAM_E_REQUEST). */
int upstream_end(upstream_req *r);
/* More than the high mark (256 KiB) of request bytes is queued: stop
 * feeding until on_writable. */
bool upstream_congested(const upstream_req *r);
/* Stop / restart reading the backend (the client lags).  The idle deadline
 * does not run while paused.  upstream_resume delivers buffered bytes from
 * a later loop turn, never from inside the call. */
void upstream_pause(upstream_req *r);
void upstream_resume(upstream_req *r);
/* The client has gone: close the backend connection at once (so the
 * backend sees the disconnect and stops generating).  The connection is
 * never pooled; no callback is called after this; r is invalid. */
void upstream_abort(upstream_req *r);
/* The pool's "host:port" (for messages). */
const char *upstream_pool_name(const upstream_pool *p);

#endif
