/* client.h - one blocking HTTP/1.1 request for the CLI: connect (a Unix
 * socket path or host:port), send, read the response through http_parse,
 * all under one deadline.  No libuv, no libcurl: `gpumod status` is a
 * short-lived process and this is its whole network stack. */
#ifndef GPUMOD_CLIENT_H
#define GPUMOD_CLIENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/http.h"
#include "util/buf.h"

/* What went wrong, so the CLI can pick its exit code
 * (http_client_exit_code). */
typedef enum http_client_err {
    HTTPC_OK = 0,
    HTTPC_E_CONNECT,  /* nothing listening: ENOENT, ECONNREFUSED ("daemon unreachable") */
    HTTPC_E_TIMEOUT,  /* the deadline passed */
    HTTPC_E_PROTOCOL, /* the reply was not valid HTTP, or the peer closed mid-reply */
    HTTPC_E_GONE,     /* connected, then the peer closed or reset before a byte of the reply
                         (a daemon stopping or killed): like no connection, exit 3 */
    HTTPC_E_IO,       /* a send/recv error after connecting, a bad address, a bad argument */
} http_client_err;

/* The reply; owns its memory (release with http_reply_release). */
typedef struct http_reply {
    int status;
    int minor;
    http_field *fields; /* views into head */
    size_t n_fields;
    char *head;         /* a copy of the response head */
    buf body;           /* decoded (dechunked), NUL-terminated */
} http_reply;

/* Send method target (with body when len > 0 or body != NULL, with
 * content_type when not NULL) to `where`: a Unix socket path (anything
 * holding a '/') or host:port (numeric host, [v6]:port, or localhost).
 * The connection is closed afterwards (Connection: close).  The whole
 * exchange, connect included, ends by timeout_ms.
 *
 * Returns HTTPC_OK with *out filled (any status code is a success here),
 * else an http_client_err with err saying what failed:
 * "daemon unreachable: cannot connect to '/run/gpumod.sock': no such file
 * or directory", "timed out after 2000 ms waiting for the reply from ...",
 * "bad reply from ...: bare lf line ending".  On failure *out is empty
 * (releasing it is harmless). */
int http_request(const char *where, const char *method, const char *target,
                 const char *content_type, const char *body, size_t len, int64_t timeout_ms,
                 http_reply *out, char *err, size_t errlen);

/* GET target as a stream (a follow): the deadline covers the connection
 * and the reply's head only.  On a 2xx reply the body goes to on_body
 * span by span as it is decoded (out->body stays empty) until it ends,
 * a callback returns false, or a signal interrupts a wait with *stop set
 * (stop may be NULL); each of those returns HTTPC_OK.  With on_tick and
 * tick_ms > 0, on_tick runs once when the 2xx head has come (the stream
 * is open: what happens from here reaches on_body) and again after each
 * tick_ms without data, so that a waiter can check a deadline or a state
 * of its own.  Any other status is read whole into out->body, as
 * http_request does. */
typedef bool (*http_body_cb)(const char *p, size_t len, void *ud);
typedef bool (*http_tick_cb)(void *ud);
typedef struct http_stream_opts {
    http_body_cb on_body;
    http_tick_cb on_tick; /* may be NULL */
    int64_t tick_ms;
    void *ud;                     /* both callbacks' */
    volatile sig_atomic_t *stop;  /* may be NULL */
} http_stream_opts;
int http_request_stream(const char *where, const char *target, int64_t timeout_ms, const http_stream_opts *o,
                        http_reply *out, char *err, size_t errlen);

void http_reply_release(http_reply *r);
/* The first field named name (case-insensitive), or NULL. */
const view *http_reply_field(const http_reply *r, const char *name);
/* The CLI's exit code for a failed request: 3 unreachable or gone before
 * replying, 4 timed out, 1 otherwise (and 0 for HTTPC_OK). */
int http_client_exit_code(int rc);

#endif
