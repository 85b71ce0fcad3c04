/* tls.c - TLS client sessions over memory BIOs, OpenSSL loaded on demand.
 *
 * Why dlopen: only a remote https service needs TLS, and linking libssl
 * would make every `gpumod` command pay its relocation at start-up
 * (docs/startup.md) and make libssl3 a hard dependency of a tool that
 * mostly talks to local sockets.  So libcrypto.so.3 and libssl.so.3 are
 * opened the first time a session is asked for, and the handful of calls
 * used are declared here (their ABI is fixed for the 3.x series); the
 * OpenSSL macros we need (SNI, minimum version, modes, mem-BIO EOF) are
 * SSL_ctrl / SSL_CTX_ctrl / BIO_ctrl calls with the constants below.
 *
 * Why memory BIOs: the upstream client owns the libuv socket and its
 * backpressure; OpenSSL only transforms bytes.  Ciphertext in goes into
 * the read BIO, ciphertext out accumulates in the write BIO until the
 * caller takes it.  A mem BIO grows, so SSL_write never wants to write and
 * the only "retry" state is WANT_READ (feed more).
 *
 * One SSL_CTX, made on first use and kept (loading the system CA bundle
 * costs milliseconds); it is rebuilt when $GPUMOD_TLS_CA_FILE changes, so
 * tests can switch trust anchors.  Sessions hold their own reference. */
#include "router/tls.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router/upstream.h"
#include "util/errf.h"

/* ---- the OpenSSL 3 ABI we use (ssl.h, bio.h, x509_vfy.h) --------------- */

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_method_st SSL_METHOD;
typedef struct bio_st BIO;
typedef struct bio_method_st BIO_METHOD;

#define SSL_VERIFY_PEER 0x01
#define SSL_ERROR_SSL 1
#define SSL_ERROR_WANT_READ 2
#define SSL_ERROR_WANT_WRITE 3
#define SSL_ERROR_SYSCALL 5
#define SSL_ERROR_ZERO_RETURN 6
#define SSL_CTRL_MODE 33
#define SSL_CTRL_SET_TLSEXT_HOSTNAME 55
#define SSL_CTRL_SET_MIN_PROTO_VERSION 123
#define SSL_MODE_AUTO_RETRY 0x4L
#define SSL_MODE_RELEASE_BUFFERS 0x10L /* idle pooled sessions drop their buffers */
#define TLSEXT_NAMETYPE_host_name 0
#define TLS1_2_VERSION 0x0303
#define BIO_C_SET_BUF_MEM_EOF_RETURN 130
#define X509_V_OK 0
#define X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY 20
#define SSL_R_UNEXPECTED_EOF_WHILE_READING 294
#define ERR_REASON_MASK 0x7FFFFFUL

struct ossl {
    /* libcrypto */
    BIO *(*BIO_new)(const BIO_METHOD *);
    const BIO_METHOD *(*BIO_s_mem)(void);
    int (*BIO_free)(BIO *);
    int (*BIO_write)(BIO *, const void *, int);
    int (*BIO_read)(BIO *, void *, int);
    long (*BIO_ctrl)(BIO *, int, long, void *);
    size_t (*BIO_ctrl_pending)(BIO *);
    unsigned long (*ERR_get_error)(void);
    void (*ERR_clear_error)(void);
    const char *(*ERR_reason_error_string)(unsigned long);
    void (*ERR_error_string_n)(unsigned long, char *, size_t);
    const char *(*X509_verify_cert_error_string)(long);
    /* libssl */
    int (*OPENSSL_init_ssl)(uint64_t, const void *);
    const SSL_METHOD *(*TLS_client_method)(void);
    SSL_CTX *(*SSL_CTX_new)(const SSL_METHOD *);
    void (*SSL_CTX_free)(SSL_CTX *);
    long (*SSL_CTX_ctrl)(SSL_CTX *, int, long, void *);
    void (*SSL_CTX_set_verify)(SSL_CTX *, int, void *);
    int (*SSL_CTX_set_default_verify_paths)(SSL_CTX *);
    int (*SSL_CTX_load_verify_locations)(SSL_CTX *, const char *, const char *);
    SSL *(*SSL_new)(SSL_CTX *);
    void (*SSL_free)(SSL *);
    void (*SSL_set_bio)(SSL *, BIO *, BIO *);
    void (*SSL_set_connect_state)(SSL *);
    long (*SSL_ctrl)(SSL *, int, long, void *);
    int (*SSL_set1_host)(SSL *, const char *);
    int (*SSL_do_handshake)(SSL *);
    int (*SSL_read)(SSL *, void *, int);
    int (*SSL_write)(SSL *, const void *, int);
    int (*SSL_shutdown)(SSL *);
    int (*SSL_get_error)(const SSL *, int);
    long (*SSL_get_verify_result)(const SSL *);
};

static struct {
    bool tried;
    int rc;
    char err[512];
    void *crypto, *ssl;
    struct ossl f;
    SSL_CTX *ctx;
    char *ctx_ca; /* the $GPUMOD_TLS_CA_FILE ctx was built with, NULL: system store */
} L;

#define SSLF L.f

struct tls_conn {
    SSL *ssl;
    BIO *rbio, *wbio; /* owned by ssl */
    char *host;
    buf early; /* plaintext written before the handshake finished */
    bool done, eof, dead, closed; /* closed: our close_notify is queued */
    char err[512];
};

/* ---- loading ------------------------------------------------------------ */

struct sym {
    const char *name;
    size_t off;
    bool crypto;
};
#define S(n, c) {#n, offsetof(struct ossl, n), c}
static const struct sym syms[] = {
    S(BIO_new, 1), S(BIO_s_mem, 1), S(BIO_free, 1), S(BIO_write, 1), S(BIO_read, 1), S(BIO_ctrl, 1),
    S(BIO_ctrl_pending, 1), S(ERR_get_error, 1), S(ERR_clear_error, 1),
    S(ERR_reason_error_string, 1), S(ERR_error_string_n, 1), S(X509_verify_cert_error_string, 1),
    S(OPENSSL_init_ssl, 0), S(TLS_client_method, 0), S(SSL_CTX_new, 0), S(SSL_CTX_free, 0),
    S(SSL_CTX_ctrl, 0), S(SSL_CTX_set_verify, 0), S(SSL_CTX_set_default_verify_paths, 0),
    S(SSL_CTX_load_verify_locations, 0), S(SSL_new, 0), S(SSL_free, 0), S(SSL_set_bio, 0),
    S(SSL_set_connect_state, 0), S(SSL_ctrl, 0), S(SSL_set1_host, 0), S(SSL_do_handshake, 0),
    S(SSL_read, 0), S(SSL_write, 0), S(SSL_shutdown, 0), S(SSL_get_error, 0),
    S(SSL_get_verify_result, 0),
};
#undef S

static const char *libname(const char *env, const char *dflt)
{
    const char *s = getenv(env);
    return s && *s ? s : dflt;
}

static void *open_lib(const char *path)
{
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        errf(L.err, sizeof L.err, "cannot load '%s': %s", path, why ? why : "dlopen failed");
    }
    return h;
}

static int load_once(void)
{
    const char *crypto = libname("GPUMOD_LIBCRYPTO", "libcrypto.so.3");
    const char *ssl = libname("GPUMOD_LIBSSL", "libssl.so.3");
    if (!(L.crypto = open_lib(crypto))) return -1;
    if (!(L.ssl = open_lib(ssl))) return -1;
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *h = syms[i].crypto ? L.crypto : L.ssl;
        void *p = dlsym(h, syms[i].name);
        if (!p) {
            errf(L.err, sizeof L.err, "cannot load '%s': no symbol '%s' (OpenSSL 3 expected)",
                 syms[i].crypto ? crypto : ssl, syms[i].name);
            return -1;
        }
        memcpy((char *)&L.f + syms[i].off, &p, sizeof p);
    }
    if (SSLF.OPENSSL_init_ssl(0, NULL) != 1) {
        errf(L.err, sizeof L.err, "cannot load '%s': OPENSSL_init_ssl failed", ssl);
        return -1;
    }
    return 0;
}

int tls_load(char *err, size_t errlen)
{
    if (!L.tried) {
        L.tried = true;
        L.rc = load_once();
        if (L.rc != 0) {
            /* a half-loaded pair is of no use; keep the message */
            if (L.ssl) dlclose(L.ssl);
            if (L.crypto) dlclose(L.crypto);
            L.ssl = L.crypto = NULL;
        }
    }
    if (L.rc != 0) errf(err, errlen, "%s", L.err);
    return L.rc;
}

int tls_require(const char *service, char *err, size_t errlen)
{
    char why[512];
    if (tls_load(why, sizeof why) == 0) return 0;
    errf(err, errlen, "remote service '%s' needs HTTPS but %s cannot be loaded: install libssl3 (%s)",
         service, libname("GPUMOD_LIBSSL", "libssl.so.3"), why);
    return -1;
}

/* ---- the context -------------------------------------------------------- */

/* the oldest queued OpenSSL error as text; clears the queue */
static void ossl_reason(char *out, size_t outlen)
{
    unsigned long e = SSLF.ERR_get_error(), more;
    while ((more = SSLF.ERR_get_error()) != 0) (void)more;
    if (!e) {
        errf(out, outlen, "unknown error");
        return;
    }
    const char *r = SSLF.ERR_reason_error_string(e);
    if (r) errf(out, outlen, "%s", r);
    else SSLF.ERR_error_string_n(e, out, outlen);
}

static SSL_CTX *ctx_get(char *err, size_t errlen)
{
    const char *ca = getenv("GPUMOD_TLS_CA_FILE");
    if (ca && !*ca) ca = NULL;
    if (L.ctx && ((!ca && !L.ctx_ca) || (ca && L.ctx_ca && strcmp(ca, L.ctx_ca) == 0))) return L.ctx;
    if (L.ctx) {
        SSLF.SSL_CTX_free(L.ctx); /* live sessions keep their reference */
        L.ctx = NULL;
        free(L.ctx_ca);
        L.ctx_ca = NULL;
    }
    SSLF.ERR_clear_error();
    SSL_CTX *ctx = SSLF.SSL_CTX_new(SSLF.TLS_client_method());
    if (!ctx) {
        char why[256];
        ossl_reason(why, sizeof why);
        errf(err, errlen, "cannot create a TLS context: %s", why);
        return NULL;
    }
    SSLF.SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    int ok = ca ? SSLF.SSL_CTX_load_verify_locations(ctx, ca, NULL)
                : SSLF.SSL_CTX_set_default_verify_paths(ctx);
    if (ok == 1 && SSLF.SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL) != 1) ok = 0;
    if (ok != 1) {
        char why[256];
        ossl_reason(why, sizeof why);
        if (ca) errf(err, errlen, "cannot read the CA file '%s' (GPUMOD_TLS_CA_FILE): %s", ca, why);
        else errf(err, errlen, "cannot set up the TLS context: %s", why);
        SSLF.SSL_CTX_free(ctx);
        return NULL;
    }
    SSLF.SSL_CTX_ctrl(ctx, SSL_CTRL_MODE, SSL_MODE_AUTO_RETRY | SSL_MODE_RELEASE_BUFFERS, NULL);
    L.ctx = ctx;
    L.ctx_ca = ca ? xstrdup(ca) : NULL;
    return ctx;
}

/* ---- sessions ----------------------------------------------------------- */

static bool is_ip(const char *h)
{
    unsigned char a[16];
    return inet_pton(AF_INET, h, a) == 1 || inet_pton(AF_INET6, h, a) == 1;
}

tls_conn *tls_conn_new(const char *host, char *err, size_t errlen)
{
    if (tls_load(err, errlen) != 0) return NULL;
    size_t hl = host ? strlen(host) : 0;
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') host++, hl -= 2;
    if (hl == 0 || hl > 253) {
        errf(err, errlen, "TLS host '%.*s': expected a DNS name or an IP address of 1 to 253 characters",
             (int)(hl > 64 ? 64 : hl), host ? host : "");
        return NULL;
    }
    for (size_t i = 0; i < hl; i++) {
        unsigned char ch = (unsigned char)host[i];
        if (ch <= ' ' || ch >= 0x7f || ch == '/' || ch == '@') {
            errf(err, errlen, "TLS host '%.*s': character 0x%02x not allowed in a host name", (int)hl,
                 host, ch);
            return NULL;
        }
    }
    SSL_CTX *ctx = ctx_get(err, errlen);
    if (!ctx) return NULL;

    tls_conn *c = xcalloc(1, sizeof *c);
    c->host = xstrndup(host, hl);
    buf_init(&c->early);
    SSLF.ERR_clear_error();
    c->ssl = SSLF.SSL_new(ctx);
    c->rbio = SSLF.BIO_new(SSLF.BIO_s_mem());
    c->wbio = SSLF.BIO_new(SSLF.BIO_s_mem());
    if (!c->ssl || !c->rbio || !c->wbio) {
        char why[256];
        ossl_reason(why, sizeof why);
        errf(err, errlen, "TLS session for '%s': %s", c->host, why);
        if (c->rbio) SSLF.BIO_free(c->rbio);
        if (c->wbio) SSLF.BIO_free(c->wbio);
        c->rbio = c->wbio = NULL;
        tls_conn_free(c);
        return NULL;
    }
    /* an empty read BIO means "no more yet", not EOF, until tls_feed_eof */
    SSLF.BIO_ctrl(c->rbio, BIO_C_SET_BUF_MEM_EOF_RETURN, -1, NULL);
    SSLF.SSL_set_bio(c->ssl, c->rbio, c->wbio);
    SSLF.SSL_set_connect_state(c->ssl);
    /* SNI for names only (RFC 6066: no IP literals); SSL_set1_host takes both */
    bool ip = is_ip(c->host);
    if ((!ip && SSLF.SSL_ctrl(c->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                              c->host) != 1) ||
        SSLF.SSL_set1_host(c->ssl, c->host) != 1) {
        char why[256];
        ossl_reason(why, sizeof why);
        errf(err, errlen, "TLS host '%s': %s", c->host, why);
        tls_conn_free(c);
        return NULL;
    }
    return c;
}

void tls_conn_free(tls_conn *c)
{
    if (!c) return;
    if (c->ssl) SSLF.SSL_free(c->ssl); /* frees both BIOs */
    buf_release(&c->early);
    free(c->host);
    free(c);
}

int tls_feed(tls_conn *c, const void *p, size_t n)
{
    if (c->dead) return TLS_ERR;
    const char *s = p;
    while (n > 0) {
        int k = n > INT_MAX ? INT_MAX : (int)n;
        int w = SSLF.BIO_write(c->rbio, s, k);
        if (w <= 0) {
            errf(c->err, sizeof c->err, "TLS with '%s': cannot buffer %zu received bytes", c->host, n);
            c->dead = true;
            return TLS_ERR;
        }
        s += w, n -= (size_t)w;
    }
    return TLS_OK;
}

void tls_feed_eof(tls_conn *c)
{
    c->eof = true;
    SSLF.BIO_ctrl(c->rbio, BIO_C_SET_BUF_MEM_EOF_RETURN, 0, NULL);
}

/* the message for a failed handshake step: verification result first,
 * then OpenSSL's reason, then the EOF case */
static int die(tls_conn *c, const char *what, int ssl_err)
{
    long v = SSLF.SSL_get_verify_result(c->ssl);
    unsigned long e = SSLF.ERR_get_error();
    const char *reason = e ? SSLF.ERR_reason_error_string(e) : NULL;
    SSLF.ERR_clear_error();
    if (v != X509_V_OK && !c->done) {
        const char *hint = "";
        if (v == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY)
            hint = L.ctx_ca ? " (the server's CA is not in GPUMOD_TLS_CA_FILE)"
                            : " (the server's CA is not in the system store: is ca-certificates installed?)";
        errf(c->err, sizeof c->err, "%s '%s' failed: certificate verify failed: %s%s", what, c->host,
             SSLF.X509_verify_cert_error_string(v), hint);
    } else if (ssl_err == SSL_ERROR_SYSCALL || (e & ERR_REASON_MASK) == SSL_R_UNEXPECTED_EOF_WHILE_READING ||
               (c->eof && !e)) {
        errf(c->err, sizeof c->err, "%s '%s' failed: connection closed by the server", what, c->host);
    } else if (reason) {
        errf(c->err, sizeof c->err, "%s '%s' failed: %s", what, c->host, reason);
    } else if (e) {
        char why[256];
        SSLF.ERR_error_string_n(e, why, sizeof why);
        errf(c->err, sizeof c->err, "%s '%s' failed: %s", what, c->host, why);
    } else {
        errf(c->err, sizeof c->err, "%s '%s' failed: SSL error %d", what, c->host, ssl_err);
    }
    c->dead = true;
    return TLS_ERR;
}

static int write_now(tls_conn *c, const void *p, size_t n)
{
    const char *s = p;
    while (n > 0) {
        int k = n > INT_MAX ? INT_MAX : (int)n;
        SSLF.ERR_clear_error();
        int w = SSLF.SSL_write(c->ssl, s, k);
        if (w <= 0) return die(c, "TLS write to", SSLF.SSL_get_error(c->ssl, w));
        s += w, n -= (size_t)w;
    }
    return TLS_OK;
}

int tls_handshake(tls_conn *c)
{
    if (c->dead) return TLS_ERR;
    if (c->done) return TLS_OK;
    SSLF.ERR_clear_error();
    int r = SSLF.SSL_do_handshake(c->ssl);
    if (r != 1) {
        int e = SSLF.SSL_get_error(c->ssl, r);
        if ((e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) && !c->eof) return TLS_WANT;
        if (e == SSL_ERROR_WANT_READ) e = SSL_ERROR_SYSCALL; /* fed EOF, still wanting */
        return die(c, "TLS handshake with", e);
    }
    c->done = true;
    if (c->early.len > 0) {
        int w = write_now(c, c->early.p, c->early.len);
        buf_release(&c->early);
        if (w != TLS_OK) return w;
    }
    return TLS_OK;
}

bool tls_handshake_done(const tls_conn *c)
{
    return c->done;
}

int tls_read(tls_conn *c, void *p, size_t cap, size_t *got)
{
    *got = 0;
    if (c->dead) return TLS_ERR;
    if (!c->done) {
        int h = tls_handshake(c);
        if (h != TLS_OK) return h;
    }
    if (cap == 0) return TLS_OK;
    int k = cap > INT_MAX ? INT_MAX : (int)cap;
    SSLF.ERR_clear_error();
    int r = SSLF.SSL_read(c->ssl, p, k);
    if (r > 0) {
        *got = (size_t)r;
        return TLS_OK;
    }
    int e = SSLF.SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_ZERO_RETURN) {
        /* answer the peer's close_notify (some servers wait for it before
         * closing the socket, which is how upstream sees the end) */
        c->err[0] = '\0';
        tls_close_notify(c);
        return TLS_CLOSED;
    }
    if ((e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) && !c->eof) return TLS_WANT;
    if (c->eof) {
        /* EOF without close_notify: OpenSSL 3 says SSL_ERROR_SSL "unexpected
         * eof while reading", older ones SSL_ERROR_SYSCALL.  The HTTP layer
         * knows whether the response was complete; we say how it ended. */
        unsigned long first = SSLF.ERR_get_error();
        if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_WANT_READ ||
            (first & ERR_REASON_MASK) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
            SSLF.ERR_clear_error();
            errf(c->err, sizeof c->err, "TLS read from '%s': connection closed without close_notify",
                 c->host);
            return TLS_CLOSED;
        }
        const char *rs = first ? SSLF.ERR_reason_error_string(first) : NULL;
        SSLF.ERR_clear_error();
        errf(c->err, sizeof c->err, "TLS read from '%s' failed: %s", c->host, rs ? rs : "unknown error");
        c->dead = true;
        return TLS_ERR;
    }
    return die(c, "TLS read from", e);
}

int tls_write(tls_conn *c, const void *p, size_t n)
{
    if (c->dead) return TLS_ERR;
    if (!c->done) {
        buf_add(&c->early, p, n);
        return TLS_OK;
    }
    return write_now(c, p, n);
}

void tls_close_notify(tls_conn *c)
{
    if (c->dead || !c->done || c->closed) return;
    c->closed = true;
    SSLF.ERR_clear_error();
    (void)SSLF.SSL_shutdown(c->ssl);
    SSLF.ERR_clear_error();
}

size_t tls_pending_out(const tls_conn *c)
{
    return SSLF.BIO_ctrl_pending(c->wbio);
}

size_t tls_take_out(tls_conn *c, void *p, size_t cap)
{
    size_t total = 0;
    char *d = p;
    while (total < cap) {
        size_t want = cap - total;
        int k = want > INT_MAX ? INT_MAX : (int)want;
        int r = SSLF.BIO_read(c->wbio, d + total, k);
        if (r <= 0) break;
        total += (size_t)r;
    }
    return total;
}

size_t tls_take_out_buf(tls_conn *c, buf *out)
{
    size_t n = tls_pending_out(c);
    if (n == 0) return 0;
    buf_grow(out, n);
    size_t got = tls_take_out(c, out->p + out->len, n);
    out->len += got;
    out->p[out->len] = '\0';
    return got;
}

const char *tls_error(const tls_conn *c)
{
    return c->err;
}

/* ---- the upstream transport hook ---------------------------------------- */

static void *hook_open(void *ctx, const char *server_name, buf *out, char *err, size_t errlen)
{
    (void)ctx;
    tls_conn *c = tls_conn_new(server_name, err, errlen);
    if (!c) return NULL;
    if (tls_handshake(c) == TLS_ERR) { /* cannot happen before input; be safe */
        errf(err, errlen, "%s", tls_error(c));
        tls_conn_free(c);
        return NULL;
    }
    tls_take_out_buf(c, out); /* the ClientHello */
    return c;
}

static int hook_feed(void *sess, const char *in, size_t n, buf *plain, buf *out, char *err,
                     size_t errlen)
{
    tls_conn *c = sess;
    int rc = tls_feed(c, in, n);
    while (rc == TLS_OK) {
        buf_grow(plain, 16384); /* one TLS record's worth */
        size_t got;
        rc = tls_read(c, plain->p + plain->len, plain->cap - plain->len - 1, &got);
        if (rc == TLS_OK) {
            plain->len += got;
            plain->p[plain->len] = '\0';
        }
    }
    tls_take_out_buf(c, out); /* handshake records, or the alert that ends it */
    if (rc == TLS_ERR) {
        errf(err, errlen, "%s", tls_error(c));
        return -1;
    }
    return tls_handshake_done(c) ? 1 : 0;
}

static int hook_write(void *sess, const void *plain, size_t n, buf *out, char *err, size_t errlen)
{
    tls_conn *c = sess;
    int rc = tls_write(c, plain, n);
    tls_take_out_buf(c, out);
    if (rc != TLS_OK) {
        errf(err, errlen, "%s", tls_error(c));
        return -1;
    }
    return 0;
}

static void hook_close(void *sess)
{
    tls_conn_free(sess);
}

const upstream_tls_ops tls_upstream_ops = {
    .open = hook_open,
    .feed = hook_feed,
    .write = hook_write,
    .close = hook_close,
};
