/* test_hostmon.c - snapshots on the thread pool: a take answers with a
 * snapshot of the fixture, takes asked while one runs share the next one,
 * hostmon_last keeps a copy, close waits for a take in flight. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/hostmon.h"
#include "testenv.h"

typedef struct counter {
    int calls;
    const snapshot *seen;
    uint64_t mem_total;
    int closed;
} counter;

static void got(const snapshot *s, void *ud)
{
    counter *c = ud;
    c->calls++;
    c->seen = s;
    c->mem_total = s->host.mem_total;
}

static void closed(void *ud)
{
    ((counter *)ud)->closed++;
}

static snapshot_opts fixture_opts(char **root)
{
    *root = src_path("tests/fixtures/proc/healthy");
    snapshot_opts o = {.proc_root = *root, .nvml_lib = "/nonexistent/libnvidia-ml.so.1",
                       .smi_path = "/nonexistent/nvidia-smi", .nvml_timeout_ms = 1000, .smi_timeout_ms = 1000};
    return o;
}

static void take_and_last(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    char *root;
    snapshot_opts o = fixture_opts(&root);
    hostmon *h = hostmon_new(&loop, &o);
    free(root); /* copied */
    assert_null(hostmon_last(h, NULL));
    counter a = {0}, b = {0}, c = {0};
    hostmon_take(h, got, &a);
    hostmon_take(h, got, &b); /* asked while the first runs: gets the next take */
    hostmon_take(h, got, &c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(a.calls, 1);
    assert_int_equal(b.calls, 1);
    assert_int_equal(c.calls, 1);
    assert_true(a.mem_total > 0);
    assert_true(b.seen == c.seen); /* one snapshot for both waiters of the second take */
    int64_t at = 0;
    const snapshot *last = hostmon_last(h, &at);
    assert_non_null(last);
    assert_true(at > 0);
    assert_int_equal(last->host.mem_total, a.mem_total);
    assert_false(last->nvml == NVML_OK);
    counter d = {0};
    hostmon_close(h, closed, &d);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(d.closed, 1);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void close_waits_for_a_take_in_flight(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    char *root;
    snapshot_opts o = fixture_opts(&root);
    hostmon *h = hostmon_new(&loop, &o);
    free(root);
    counter a = {0}, d = {0};
    hostmon_take(h, got, &a);
    hostmon_close(h, closed, &d);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(a.calls, 0); /* pending takes are not answered after close */
    assert_int_equal(d.closed, 1);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(take_and_last),
        cmocka_unit_test(close_waits_for_a_take_in_flight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
