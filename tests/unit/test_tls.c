/* test_tls.c - src/router/tls.c against `openssl s_server` with a test CA.
 *
 * The group setup makes two throw-away CAs and two server certificates
 * with the openssl binary (package openssl, scripts/install-deps) in a
 * temp dir, and starts s_server -www instances on 127.0.0.1 (port 0; the
 * port is read from its "ACCEPT 127.0.0.1:PORT" line):
 *   plain  localhost + 127.0.0.1 certificate
 *   sni    serves other.test by default, localhost only to a client whose
 *          SNI says localhost (-servername/-cert2): proves SNI is sent
 *   tls12  the plain certificate, TLS 1.2 only
 * The client side is a blocking socket moving bytes in and out of the
 * memory-BIO session the way the upstream client does on libuv, fed in
 * chunks of a given size (1 byte: every partial-record path).
 *
 * tls.c is included to reset its once-per-process loader between the
 * "libssl missing" cases and the rest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "testenv.h"
#include "util/run.h"

#include "../../src/router/tls.c"

extern char **environ;

static char *dir;
struct srv {
    pid_t pid;
    int port;
};
static struct srv plain, sni, tls12;

static char *path_in(const char *name)
{
    return xasprintf("%s/%s", dir, name);
}

/* forget the loaded library and the context, as a fresh process would */
static void tls_reset(void)
{
    if (L.ctx) SSLF.SSL_CTX_free(L.ctx);
    free(L.ctx_ca);
    if (L.ssl) dlclose(L.ssl);
    if (L.crypto) dlclose(L.crypto);
    memset(&L, 0, sizeof L);
}

static void sh(const char *const *argv)
{
    buf out = BUF_INIT;
    char err[256];
    run_opts o = {.timeout_ms = 20000 * scale(), .cwd = dir};
    run_result res;
    if (run_capture((char *const *)argv, &o, &out, &res, err, sizeof err) != 0) {
        print_error("%s\n%s\n", err, out.p);
        if (res.start_errno == ENOENT) print_error("the openssl program is needed: scripts/install-deps installs it\n");
        fail();
    }
    buf_release(&out);
}

/* a key and a certificate for name, signed by ca (NULL: a self-signed CA) */
static void make_cert(const char *ca, const char *name, const char *san)
{
    char *key = xasprintf("%s.key", name), *pem = xasprintf("%s.pem", name);
    char *subj = xasprintf("/CN=%s", name), *cakey = ca ? xasprintf("%s.key", ca) : NULL;
    char *capem = ca ? xasprintf("%s.pem", ca) : NULL, *alt = san ? xasprintf("subjectAltName=%s", san) : NULL;
    const char *argv[32];
    int n = 0;
    const char *base[] = {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                          "-nodes", "-keyout", key, "-out", pem, "-days", "2", "-subj", subj};
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) argv[n++] = base[i];
    if (ca) {
        const char *more[] = {"-CA", capem, "-CAkey", cakey, "-addext", alt,
                              "-addext", "basicConstraints=critical,CA:FALSE",
                              "-addext", "extendedKeyUsage=serverAuth"};
        for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) argv[n++] = more[i];
    }
    argv[n] = NULL;
    sh(argv);
    free(key), free(pem), free(subj), free(cakey), free(capem), free(alt);
}

/* start s_server with extra args; wait for its ACCEPT line */
static struct srv serve(const char *log, const char *const *extra)
{
    const char *argv[32] = {"openssl", "s_server", "-accept", "127.0.0.1:0", "-www"};
    int n = 5;
    for (; *extra; extra++) argv[n++] = *extra;
    argv[n] = NULL;
    char *logp = path_in(log);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addchdir_np(&fa, dir);
    struct srv s = {0};
    int rc = posix_spawnp(&s.pid, "openssl", &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        print_error("cannot start openssl s_server: %s\n", strerror(rc));
        fail();
    }
    int64_t until = mono_ms() + 10000 * scale();
    while (s.port == 0 && mono_ms() < until) {
        char *t = read_text(logp);
        const char *a = t ? strstr(t, "ACCEPT 127.0.0.1:") : NULL;
        if (a && strchr(a, '\n')) s.port = atoi(a + strlen("ACCEPT 127.0.0.1:"));
        free(t);
        if (s.port == 0) {
            if (waitpid(s.pid, NULL, WNOHANG) == s.pid) break;
            usleep(10000);
        }
    }
    if (s.port == 0) {
        char *t = read_text(logp);
        print_error("openssl s_server %s did not listen within 10 s: %s\n", log, t ? t : "(no output)");
        free(t);
        fail();
    }
    free(logp);
    return s;
}

static void stop(struct srv *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
    }
}

static int setup(void **state)
{
    signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/gpumod-test-tls.XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    dir = xstrdup(tmpl);
    make_cert(NULL, "ca", NULL);
    make_cert(NULL, "ca2", NULL);
    make_cert("ca", "localhost", "DNS:localhost,IP:127.0.0.1");
    make_cert("ca", "other.test", "DNS:other.test");
    plain = serve("plain.log", (const char *[]){"-cert", "localhost.pem", "-key", "localhost.key", NULL});
    sni = serve("sni.log", (const char *[]){"-cert", "other.test.pem", "-key", "other.test.key",
                                            "-servername", "localhost", "-cert2", "localhost.pem",
                                            "-key2", "localhost.key", NULL});
    tls12 = serve("tls12.log", (const char *[]){"-cert", "localhost.pem", "-key", "localhost.key",
                                                "-tls1_2", NULL});
    return 0;
}

static int teardown(void **state)
{
    stop(&plain), stop(&sni), stop(&tls12);
    tls_reset();
    rm_rf(dir);
    free(dir);
    unsetenv("GPUMOD_TLS_CA_FILE");
    return 0;
}

static void use_ca(const char *name)
{
    if (!name) {
        unsetenv("GPUMOD_TLS_CA_FILE");
        return;
    }
    char *p = path_in(name);
    setenv("GPUMOD_TLS_CA_FILE", p, 1);
    free(p);
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static void send_out(tls_conn *c, int fd)
{
    buf out = BUF_INIT;
    tls_take_out_buf(c, &out);
    for (size_t off = 0; off < out.len;) {
        ssize_t w = send(fd, out.p + off, out.len - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) break; /* the peer went away: its alert is what matters */
        off += (size_t)w;
    }
    buf_release(&out);
}

/* GET / over TLS to port as host, ciphertext fed `chunk` bytes at a time.
 * Returns the last tls rc (TLS_CLOSED after a whole response); the
 * plaintext goes to resp, the error to err. */
static int exchange(const char *host, int port, size_t chunk, buf *resp, char *err, size_t errlen)
{
    tls_conn *c = tls_conn_new(host, err, errlen);
    if (!c) return -99;
    int fd = dial(port);
    const char req[] = "GET / HTTP/1.0\r\n\r\n";
    /* written before the handshake: kept and sent once it completes */
    assert_int_equal(tls_write(c, req, sizeof req - 1), TLS_OK);
    assert_false(tls_handshake_done(c));
    int64_t until = mono_ms() + 10000 * scale();
    int rc;
    for (;;) {
        char plain_buf[1024];
        size_t got;
        rc = tls_read(c, plain_buf, sizeof plain_buf, &got);
        send_out(c, fd);
        if (rc == TLS_OK) {
            buf_add(resp, plain_buf, got);
            continue;
        }
        if (rc != TLS_WANT) break;
        int64_t left = until - mono_ms();
        assert_true(left > 0); /* a hang is a failure */
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)left) <= 0) continue;
        char cipher[16384];
        ssize_t n = recv(fd, cipher, sizeof cipher, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            tls_feed_eof(c);
            continue;
        }
        for (ssize_t off = 0; off < n; off += (ssize_t)chunk) {
            size_t k = (size_t)(n - off) < chunk ? (size_t)(n - off) : chunk;
            assert_int_equal(tls_feed(c, cipher + off, k), TLS_OK);
        }
    }
    if (rc == TLS_CLOSED || rc == TLS_ERR) errf(err, errlen, "%s", tls_error(c));
    if (rc == TLS_CLOSED) assert_true(tls_handshake_done(c));
    tls_conn_free(c);
    close(fd);
    return rc;
}

static void expect_ok(const char *host, int port, size_t chunk, const char *proto)
{
    buf resp = BUF_INIT;
    char err[512] = "";
    int rc = exchange(host, port, chunk, &resp, err, sizeof err);
    if (rc != TLS_CLOSED) print_error("rc %d: %s\n", rc, err);
    assert_int_equal(rc, TLS_CLOSED);
    if (strncmp(resp.p, "HTTP/1.0 200 ok\r\n", 17) != 0) print_error("response: %.200s\n", resp.p);
    assert_int_equal(strncmp(resp.p, "HTTP/1.0 200 ok\r\n", 17), 0);
    /* s_server's page names the session's protocol: "New, TLSv1.3, Cipher is ..." */
    char *want = xasprintf("New, %s, Cipher is", proto);
    if (!strstr(resp.p, want)) print_error("no '%s' in: %.600s\n", want, resp.p);
    assert_non_null(strstr(resp.p, want));
    free(want);
    buf_release(&resp);
}

static void expect_err(const char *host, int port, const char *msg)
{
    buf resp = BUF_INIT;
    char err[512] = "";
    int rc = exchange(host, port, 4096, &resp, err, sizeof err);
    if (rc != TLS_ERR || strcmp(err, msg) != 0)
        print_error("rc %d\n  got:  %s\n  want: %s\n", rc, err, msg);
    assert_int_equal(rc, TLS_ERR);
    assert_string_equal(err, msg);
    assert_int_equal(resp.len, 0); /* nothing readable from an unverified peer */
    buf_release(&resp);
}

static void test_get_by_name(void **state)
{
    use_ca("ca.pem");
    expect_ok("localhost", plain.port, 65536, "TLSv1.3");
}

static void test_get_byte_at_a_time(void **state)
{
    use_ca("ca.pem");
    expect_ok("localhost", plain.port, 1, "TLSv1.3");
}

static void test_get_by_ip(void **state)
{
    use_ca("ca.pem");
    expect_ok("127.0.0.1", plain.port, 4096, "TLSv1.3");
    expect_ok("[127.0.0.1]", plain.port, 4096, "TLSv1.3");
}

static void test_tls12_server(void **state)
{
    use_ca("ca.pem");
    expect_ok("localhost", tls12.port, 4096, "TLSv1.2");
}

static void test_wrong_ca(void **state)
{
    use_ca("ca2.pem");
    expect_err("localhost", plain.port,
               "TLS handshake with 'localhost' failed: certificate verify failed: unable to get local "
               "issuer certificate (the server's CA is not in GPUMOD_TLS_CA_FILE)");
}

static void test_system_store_lacks_test_ca(void **state)
{
    use_ca(NULL);
    expect_err("localhost", plain.port,
               "TLS handshake with 'localhost' failed: certificate verify failed: unable to get local "
               "issuer certificate (the server's CA is not in the system store: is ca-certificates "
               "installed?)");
}

static void test_hostname_mismatch(void **state)
{
    use_ca("ca.pem");
    expect_err("wrong.test", plain.port,
               "TLS handshake with 'wrong.test' failed: certificate verify failed: hostname mismatch");
    expect_err("127.0.0.2", plain.port,
               "TLS handshake with '127.0.0.2' failed: certificate verify failed: IP address mismatch");
}

/* the sni server hands out the localhost certificate only to a client
 * whose SNI says localhost; an IP literal sends none and gets other.test's */
static void test_sni(void **state)
{
    use_ca("ca.pem");
    expect_ok("localhost", sni.port, 4096, "TLSv1.3");
    expect_ok("other.test", sni.port, 4096, "TLSv1.3");
    expect_err("127.0.0.1", sni.port,
               "TLS handshake with '127.0.0.1' failed: certificate verify failed: IP address mismatch");
}

static void test_ca_file_unreadable(void **state)
{
    setenv("GPUMOD_TLS_CA_FILE", "/nonexistent/ca.pem", 1);
    char err[512] = "";
    assert_null(tls_conn_new("localhost", err, sizeof err));
    if (!strstr(err, "cannot read the CA file '/nonexistent/ca.pem' (GPUMOD_TLS_CA_FILE): "))
        print_error("got: %s\n", err);
    assert_non_null(strstr(err, "cannot read the CA file '/nonexistent/ca.pem' (GPUMOD_TLS_CA_FILE): "));
    /* and back: a good file rebuilds the context */
    use_ca("ca.pem");
    expect_ok("localhost", plain.port, 4096, "TLSv1.3");
}

static void test_bad_host(void **state)
{
    char err[512] = "";
    assert_null(tls_conn_new("a b", err, sizeof err));
    assert_string_equal(err, "TLS host 'a b': character 0x20 not allowed in a host name");
    assert_null(tls_conn_new("", err, sizeof err));
    assert_string_equal(err, "TLS host '': expected a DNS name or an IP address of 1 to 253 characters");
}

/* a peer that is not TLS at all: a clear error, not a hang */
static void test_not_tls(void **state)
{
    use_ca("ca.pem");
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(ls, 1), 0);
    assert_int_equal(getsockname(ls, (struct sockaddr *)&a, &al), 0);
    pid_t kid = fork();
    if (kid == 0) {
        int fd = accept(ls, NULL, NULL);
        const char r[] = "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n";
        char junk[512];
        (void)!read(fd, junk, sizeof junk);
        (void)!write(fd, r, sizeof r - 1);
        close(fd);
        _exit(0);
    }
    buf resp = BUF_INIT;
    char err[512] = "";
    int rc = exchange("localhost", ntohs(a.sin_port), 4096, &resp, err, sizeof err);
    waitpid(kid, NULL, 0);
    close(ls);
    assert_int_equal(rc, TLS_ERR);
    if (strcmp(err, "TLS handshake with 'localhost' failed: wrong version number") != 0) print_error("got: %s\n", err);
    assert_string_equal(err, "TLS handshake with 'localhost' failed: wrong version number");
    buf_release(&resp);
}

static void test_libssl_missing(void **state)
{
    char err[512] = "";
    tls_reset();
    setenv("GPUMOD_LIBSSL", "libssl-missing.so.3", 1);
    assert_int_equal(tls_require("openrouter", err, sizeof err), -1);
    assert_string_equal(err, "remote service 'openrouter' needs HTTPS but libssl-missing.so.3 cannot be "
                             "loaded: install libssl3 (cannot load 'libssl-missing.so.3': "
                             "libssl-missing.so.3: cannot open shared object file: No such file or "
                             "directory)");
    /* every later call gives the same answer, without retrying */
    assert_null(tls_conn_new("localhost", err, sizeof err));
    assert_string_equal(err, "cannot load 'libssl-missing.so.3': libssl-missing.so.3: cannot open shared "
                             "object file: No such file or directory");
    unsetenv("GPUMOD_LIBSSL");
    assert_int_equal(tls_load(err, sizeof err), -1);

    tls_reset();
    setenv("GPUMOD_LIBCRYPTO", "/nonexistent/libcrypto.so.3", 1);
    assert_int_equal(tls_require("openrouter", err, sizeof err), -1);
    assert_non_null(strstr(err, "remote service 'openrouter' needs HTTPS but libssl.so.3 cannot be loaded: "
                                "install libssl3 (cannot load '/nonexistent/libcrypto.so.3': "));
    unsetenv("GPUMOD_LIBCRYPTO");

    /* a library that is not OpenSSL 3 */
    tls_reset();
    setenv("GPUMOD_LIBSSL", "libc.so.6", 1);
    assert_int_equal(tls_load(err, sizeof err), -1);
    assert_string_equal(err, "cannot load 'libc.so.6': no symbol 'OPENSSL_init_ssl' (OpenSSL 3 expected)");
    unsetenv("GPUMOD_LIBSSL");

    tls_reset();
    assert_int_equal(tls_require("openrouter", err, sizeof err), 0);
    use_ca("ca.pem");
    expect_ok("localhost", plain.port, 4096, "TLSv1.3");
}

static void send_all(int fd, buf *out)
{
    for (size_t off = 0; off < out->len;) {
        ssize_t w = send(fd, out->p + off, out->len - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) break;
        off += (size_t)w;
    }
    buf_clear(out);
}

/* GET / through upstream's transport hook, as upstream.c drives it:
 * returns the last feed rc; plaintext in plain, the error in err */
static int hook_exchange(const char *name, int port, buf *pt, char *err, size_t errlen)
{
    const upstream_tls_ops *ops = &tls_upstream_ops;
    buf out = BUF_INIT;
    void *sess = ops->open(NULL, name, &out, err, errlen);
    if (!sess) return -99;
    assert_true(out.len > 0); /* the ClientHello, before any input */
    int fd = dial(port);
    send_all(fd, &out);
    int64_t until = mono_ms() + 10000 * scale();
    int rc = 0;
    bool sent = false;
    for (;;) {
        int64_t left = until - mono_ms();
        assert_true(left > 0);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)left) <= 0) continue;
        char cipher[16384];
        ssize_t n = recv(fd, cipher, sizeof cipher, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* EOF: the end of the stream */
        rc = ops->feed(sess, cipher, (size_t)n, pt, &out, err, errlen);
        send_all(fd, &out);
        if (rc < 0) break;
        if (rc == 1 && !sent) {
            const char req[] = "GET / HTTP/1.0\r\n\r\n";
            assert_int_equal(ops->write(sess, req, sizeof req - 1, &out, err, errlen), 0);
            assert_true(out.len > 0);
            send_all(fd, &out);
            sent = true;
        }
    }
    ops->close(sess);
    close(fd);
    buf_release(&out);
    return rc;
}

static void test_upstream_hook(void **state)
{
    use_ca("ca.pem");
    buf pt = BUF_INIT;
    char err[512] = "";
    int rc = hook_exchange("localhost", sni.port, &pt, err, sizeof err);
    if (rc != 1) print_error("rc %d: %s\n", rc, err);
    assert_int_equal(rc, 1);
    assert_int_equal(strncmp(pt.p, "HTTP/1.0 200 ok\r\n", 17), 0);
    assert_non_null(strstr(pt.p, "New, TLSv1.3, Cipher is"));
    buf_clear(&pt);

    rc = hook_exchange("wrong.test", plain.port, &pt, err, sizeof err);
    assert_int_equal(rc, -1);
    assert_string_equal(err, "TLS handshake with 'wrong.test' failed: certificate verify failed: "
                             "hostname mismatch");
    assert_int_equal(pt.len, 0);
    buf_release(&pt);

    assert_null(tls_upstream_ops.open(NULL, "bad host", &pt, err, sizeof err));
    assert_string_equal(err, "TLS host 'bad host': character 0x20 not allowed in a host name");
}

/* the gpumod binary itself does not link OpenSSL: it is dlopen'ed */
static void test_gpumod_does_not_link_openssl(void **state)
{
    char *bin = build_path("gpumod");
    const char *argv[] = {"readelf", "-d", bin, NULL};
    buf out = BUF_INIT;
    char err[256];
    run_opts o = {.timeout_ms = 10000 * scale()};
    int rc = run_capture((char *const *)argv, &o, &out, NULL, err, sizeof err);
    if (rc != 0) print_error("%s (build it first: make all)\n%s\n", err, out.p);
    free(bin);
    if (rc != 0) buf_release(&out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out.p, "(NEEDED)"));
    assert_null(strstr(out.p, "libssl"));
    assert_null(strstr(out.p, "libcrypto"));
    buf_release(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_by_name),
        cmocka_unit_test(test_get_byte_at_a_time),
        cmocka_unit_test(test_get_by_ip),
        cmocka_unit_test(test_tls12_server),
        cmocka_unit_test(test_wrong_ca),
        cmocka_unit_test(test_system_store_lacks_test_ca),
        cmocka_unit_test(test_hostname_mismatch),
        cmocka_unit_test(test_sni),
        cmocka_unit_test(test_ca_file_unreadable),
        cmocka_unit_test(test_bad_host),
        cmocka_unit_test(test_not_tls),
        cmocka_unit_test(test_upstream_hook),
        cmocka_unit_test(test_libssl_missing),
        cmocka_unit_test(test_gpumod_does_not_link_openssl),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
