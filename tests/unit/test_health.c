/* test_health.c - the asynchronous GET probe against an in-process
 * server (src/net/server.c): 200, another status, a refused connection,
 * a server that never answers (deadline), garbage, and cancel; and the
 * request with a body (the canary's): the POST body arrives, the whole
 * answer comes back, a body over the limit is an error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/health.h"
#include "net/server.h"
#include "testenv.h"

typedef struct fixture {
    uv_loop_t loop;
    srv *server;
    int port;
    int answer; /* status to answer; 0: never answer */
    srv_conn *held;
    int got_status;
    char got_err[256];
    int calls;
    const char *path_seen;
    char path[64];
    char method[16];
    char body_seen[256];
    size_t big; /* answer a body of this many bytes */
    char got_body[256];
    size_t got_len;
} fixture;

static void on_request(srv_conn *c, const http_msg *m, const view *body, void *ud)
{
    fixture *f = ud;
    snprintf(f->path, sizeof f->path, "%.*s", (int)m->target.len, m->target.p);
    snprintf(f->method, sizeof f->method, "%.*s", (int)m->method.len, m->method.p);
    snprintf(f->body_seen, sizeof f->body_seen, "%.*s", body ? (int)body->len : 0, body ? body->p : "");
    if (f->big) {
        char *b = xcalloc(1, f->big);
        memset(b, 'x', f->big);
        srv_respond(c, 200, "text/plain", b, f->big);
        free(b);
        return;
    }
    if (f->answer && f->body_seen[0]) {
        srv_respond(c, f->answer, "application/json", f->body_seen, strlen(f->body_seen));
        return;
    }
    if (!f->answer) {
        f->held = c;
        return;
    }
    srv_respond(c, f->answer, "application/json", "{}", 2);
}

static void probed(int status, const char *err, void *ud)
{
    fixture *f = ud;
    f->calls++;
    f->got_status = status;
    snprintf(f->got_err, sizeof f->got_err, "%s", err ? err : "");
    if (f->held) {
        srv_respond(f->held, 503, NULL, "", 0);
        f->held = NULL;
    }
}

static int setup(void **state)
{
    fixture *f = xcalloc(1, sizeof *f);
    uv_loop_init(&f->loop);
    srv_opts o = {.on_request = on_request, .ud = f};
    f->server = srv_new(&f->loop, &o);
    char err[256];
    assert_int_equal(srv_listen_tcp(f->server, "127.0.0.1", 0, err, sizeof err), 0);
    f->port = srv_tcp_port(f->server);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (f->server) srv_close(f->server, NULL, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    free(f);
    return 0;
}

static void run_probe(fixture *f, const char *host, int port, int64_t timeout_ms)
{
    char err[256];
    f->calls = 0;
    health_probe *p = health_get(&f->loop, host, port, "/health", timeout_ms, probed, f, err, sizeof err);
    assert_non_null(p);
    int64_t deadline = mono_ms() + 10000 * scale();
    while (f->calls == 0 && mono_ms() < deadline) uv_run(&f->loop, UV_RUN_ONCE);
    assert_int_equal(f->calls, 1);
}

static void healthy_is_200(void **state)
{
    fixture *f = *state;
    f->answer = 200;
    run_probe(f, "127.0.0.1", f->port, 2000 * scale());
    assert_int_equal(f->got_status, 200);
    assert_string_equal(f->path, "/health");
    /* a wildcard listen address is probed on loopback */
    run_probe(f, "0.0.0.0", f->port, 2000 * scale());
    assert_int_equal(f->got_status, 200);
}

static void loading_is_503(void **state)
{
    fixture *f = *state;
    f->answer = 503;
    run_probe(f, "localhost", f->port, 2000 * scale());
    assert_int_equal(f->got_status, 503);
}

static void refused_connection(void **state)
{
    fixture *f = *state;
    srv_close(f->server, NULL, NULL);
    f->server = NULL;
    run_probe(f, "127.0.0.1", f->port, 2000 * scale());
    assert_int_equal(f->got_status, 0);
    assert_non_null(strstr(f->got_err, "cannot connect"));
}

static void silent_server_hits_the_deadline(void **state)
{
    fixture *f = *state;
    f->answer = 0;
    int64_t t0 = mono_ms();
    run_probe(f, "127.0.0.1", f->port, 100);
    assert_int_equal(f->got_status, 0);
    assert_string_equal(f->got_err, "timed out");
    assert_true(mono_ms() - t0 >= 100);
}

static void cancel_means_no_callback(void **state)
{
    fixture *f = *state;
    f->answer = 200;
    char err[256];
    f->calls = 0;
    health_probe *p = health_get(&f->loop, "127.0.0.1", f->port, "/health", 2000, probed, f, err, sizeof err);
    assert_non_null(p);
    health_cancel(p);
    uv_run(&f->loop, UV_RUN_NOWAIT);
    uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_int_equal(f->calls, 0);
}

static void not_an_address(void **state)
{
    fixture *f = *state;
    char err[256];
    assert_null(health_get(&f->loop, "example.com", 80, "/health", 100, probed, f, err, sizeof err));
    assert_non_null(strstr(err, "'example.com' is not a numeric IP address or localhost"));
    /* what admission and config checks ask before any probe */
    assert_int_equal(health_check_host("myhost.lan", err, sizeof err), -1);
    assert_non_null(strstr(err, "'myhost.lan'"));
    const char *ok[] = {"127.0.0.1", "localhost", "0.0.0.0", "::", "::1", "10.1.2.3", "", NULL};
    for (size_t i = 0; ok[i]; i++)
        if (health_check_host(ok[i], err, sizeof err) != 0) fail_msg("'%s' refused: %s", ok[i], err);
    assert_int_equal(health_check_host(NULL, err, sizeof err), 0);
}

static void answered(int status, const char *body, size_t len, const char *err, void *ud)
{
    fixture *f = ud;
    f->calls++;
    f->got_status = status;
    f->got_len = len;
    snprintf(f->got_body, sizeof f->got_body, "%.*s", body ? (int)len : 0, body ? body : "");
    snprintf(f->got_err, sizeof f->got_err, "%s", err ? err : "");
}

static void run_request(fixture *f, const char *json)
{
    char err[256];
    f->calls = 0;
    health_probe *p = health_request(&f->loop, "127.0.0.1", f->port, "POST", "/v1/chat/completions", json,
                                     2000 * scale(), answered, f, err, sizeof err);
    assert_non_null(p);
    int64_t deadline = mono_ms() + 10000 * scale();
    while (f->calls == 0 && mono_ms() < deadline) uv_run(&f->loop, UV_RUN_ONCE);
    assert_int_equal(f->calls, 1);
}

static void request_reads_the_body(void **state)
{
    fixture *f = *state;
    f->answer = 200;
    run_request(f, "{\"q\":\"What is 17 + 25?\"}");
    assert_string_equal(f->method, "POST");
    assert_string_equal(f->path, "/v1/chat/completions");
    assert_string_equal(f->body_seen, "{\"q\":\"What is 17 + 25?\"}");
    assert_int_equal(f->got_status, 200);
    assert_string_equal(f->got_body, "{\"q\":\"What is 17 + 25?\"}"); /* echoed */
    /* a body of 200 KiB comes back whole */
    f->big = 200 * 1024;
    run_request(f, "{}");
    assert_int_equal(f->got_status, 200);
    assert_int_equal(f->got_len, 200 * 1024);
}

static void request_body_over_the_limit(void **state)
{
    fixture *f = *state;
    f->big = (1 << 20) + 1;
    run_request(f, "{}");
    assert_int_equal(f->got_status, 0);
    assert_non_null(strstr(f->got_err, "malformed response"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(healthy_is_200, setup, teardown),
        cmocka_unit_test_setup_teardown(loading_is_503, setup, teardown),
        cmocka_unit_test_setup_teardown(refused_connection, setup, teardown),
        cmocka_unit_test_setup_teardown(silent_server_hits_the_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(cancel_means_no_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(not_an_address, setup, teardown),
        cmocka_unit_test_setup_teardown(request_reads_the_body, setup, teardown),
        cmocka_unit_test_setup_teardown(request_body_over_the_limit, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
