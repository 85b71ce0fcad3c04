/* tls.h - HTTPS to remote upstreams: a TLS client session over memory
 * buffers, so it rides on a libuv TCP socket the caller owns.
 *
 * OpenSSL is loaded with dlopen (libcrypto.so.3, libssl.so.3) the first
 * time a remote https service needs it; gpumod does not link it, so no CLI
 * command pays for it and a host without libssl3 runs every local service.
 *
 * The caller moves bytes, this module never touches a socket:
 *
 *   socket read  -> tls_feed(ciphertext)   -> tls_read()  -> plaintext
 *   plaintext    -> tls_write()            -> tls_take_out() -> socket write
 *
 * After every tls_feed / tls_write / tls_handshake, send what
 * tls_pending_out() says is waiting.  A tls_write before the handshake is
 * done is kept and encrypted once it completes, so a request can be written
 * right after connect.
 *
 * Verification is always on: the system CA store (or, for tests only, the
 * PEM file named by $GPUMOD_TLS_CA_FILE, which then replaces it), the
 * certificate must name the host (DNS name, or IP address for an IP
 * literal), TLS 1.2 or later; SNI is sent unless the host is an IP literal.
 *
 * Test hooks: $GPUMOD_LIBSSL and $GPUMOD_LIBCRYPTO replace the sonames
 * given to dlopen (point them at a missing file to test the "not
 * installed" path).  Loop thread only: nothing here is thread-safe. */
#ifndef GPUMOD_TLS_H
#define GPUMOD_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

typedef struct tls_conn tls_conn;

enum {
    TLS_ERR = -1,   /* tls_error() says why; the session is dead */
    TLS_OK = 0,     /* done / bytes returned */
    TLS_WANT = 1,   /* needs more ciphertext from the peer (tls_feed) */
    TLS_CLOSED = 2, /* the peer closed the session (tls_read) */
};

/* Load libcrypto.so.3 and libssl.so.3 (or the $GPUMOD_LIBCRYPTO /
 * $GPUMOD_LIBSSL overrides) and resolve what we use.  Done once: later
 * calls return the first answer.  0, or -1 with err ("cannot load
 * 'libssl.so.3': libssl.so.3: cannot open shared object file: ..."). */
int tls_load(char *err, size_t errlen);

/* tls_load for a remote service: 0, or -1 with err "remote service 'x'
 * needs HTTPS but libssl.so.3 cannot be loaded: install libssl3 (why)". */
int tls_require(const char *service, char *err, size_t errlen);

/* A client session for host (a DNS name or an IP literal, IPv6 with or
 * without brackets; no port).  Loads OpenSSL if needed.  NULL with err on
 * failure (library missing, CA file unreadable, bad host). */
tls_conn *tls_conn_new(const char *host, char *err, size_t errlen);
void tls_conn_free(tls_conn *c);

/* Ciphertext received from the peer (copied).  0, or TLS_ERR. */
int tls_feed(tls_conn *c, const void *p, size_t n);
/* The socket reached EOF: tls_read reports TLS_CLOSED once what was fed
 * is consumed (tls_error says whether the peer sent close_notify: a
 * response framed by the HTTP layer is complete either way, one delimited
 * by the close is not trustworthy without it). */
void tls_feed_eof(tls_conn *c);

/* Drive the handshake as far as the fed bytes allow: TLS_OK once done
 * (also flushes writes made before it), TLS_WANT, or TLS_ERR ("TLS
 * handshake with 'h' failed: certificate verify failed: hostname
 * mismatch").  Idempotent once done. */
int tls_handshake(tls_conn *c);
bool tls_handshake_done(const tls_conn *c);

/* Plaintext from the peer: TLS_OK with *got > 0, TLS_WANT (feed more),
 * TLS_CLOSED, or TLS_ERR.  Drives the handshake if it is not done.  A
 * close_notify from the peer is answered with ours (send it). */
int tls_read(tls_conn *c, void *p, size_t cap, size_t *got);

/* Encrypt n bytes for the peer (all of them: the output buffer grows).
 * Before the handshake completes they are kept and sent after it.
 * TLS_OK or TLS_ERR. */
int tls_write(tls_conn *c, const void *p, size_t n);

/* Queue a close_notify for the peer (then send tls_pending_out). */
void tls_close_notify(tls_conn *c);

/* Ciphertext waiting to be sent, in bytes. */
size_t tls_pending_out(const tls_conn *c);
/* Move up to cap bytes of it into p; returns the count. */
size_t tls_take_out(tls_conn *c, void *p, size_t cap);
/* Append all of it to out; returns the count. */
size_t tls_take_out_buf(tls_conn *c, buf *out);

/* The last error ("" if none); valid until the next call on c. */
const char *tls_error(const tls_conn *c);

/* The upstream client's transport hook (src/router/upstream.h) over the
 * calls above: upstream_opts.tls = &tls_upstream_ops, tls_ctx = NULL (the
 * shared context: system store or $GPUMOD_TLS_CA_FILE), tls_name = the
 * remote's host name.  open fails with tls_load's message when libssl is
 * missing; call tls_require first for the service-level one. */
struct upstream_tls_ops;
extern const struct upstream_tls_ops tls_upstream_ops;

#endif
