/* test_health.c - the asynchronous GET probe against an in-process
 * server (src/net/server.c): 200, another status, a refused connection,
 * a server that never answers (deadline), garbage, and cancel. */
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
} fixture;

static void on_request(srv_conn *c, const http_msg *m, const view *body, void *ud)
{
    fixture *f = ud;
    snprintf(f->path, sizeof f->path, "%.*s", (int)m->target.len, m->target.p);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(healthy_is_200, setup, teardown),
        cmocka_unit_test_setup_teardown(loading_is_503, setup, teardown),
        cmocka_unit_test_setup_teardown(refused_connection, setup, teardown),
        cmocka_unit_test_setup_teardown(silent_server_hits_the_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(cancel_means_no_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(not_an_address, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
