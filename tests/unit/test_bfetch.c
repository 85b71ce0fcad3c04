/* test_bfetch.c - bench's one blocking request (src/bench/fetch.c)
 * against fakellm and a canned-answer server: replies of any status are
 * replies, and a refused connection or a deadline says which. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testenv.h"
#include "bench_fake.h"

static void get_and_post_fakellm(void **state)
{
    (void)state;
    bf_fake f;
    bf_fake_start(&f, NULL, NULL);
    char *url = xasprintf("%s/v1/models", f.base);
    bfetch r;
    assert_int_equal(bfetch_do(url, NULL, NULL, 2000 * scale(), &r), 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.err, "");
    assert_non_null(strstr(r.body.p, "\"data\""));
    bfetch_release(&r);
    free(url);

    url = xasprintf("%s/tokenize", f.base);
    const char *hdrs[] = {"X-Test: 1", NULL};
    assert_int_equal(bfetch_do(url, hdrs, "{\"content\":\"hello world\"}", 2000 * scale(), &r), 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body.p, "\"tokens\""));
    bfetch_release(&r);

    /* a 4xx is a reply, with its body */
    assert_int_equal(bfetch_do(url, NULL, "[1,2]", 2000 * scale(), &r), 0);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body.p, "error"));
    bfetch_release(&r);
    free(url);
    bf_fake_stop(&f);
}

static void server_error_is_a_reply(void **state)
{
    (void)state;
    bf_canned s;
    bf_canned_start(&s, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
                        "Content-Length: 30\r\nConnection: close\r\n\r\n{\"error\":{\"message\":\"broken\"}}");
    char *url = xasprintf("http://127.0.0.1:%d/metrics", s.port);
    bfetch r;
    assert_int_equal(bfetch_do(url, NULL, NULL, 2000 * scale(), &r), 0);
    assert_int_equal(r.status, 500);
    assert_string_equal(r.body.p, "{\"error\":{\"message\":\"broken\"}}");
    bfetch_release(&r);
    free(url);
    bf_canned_stop(&s);
}

static void connection_refused(void **state)
{
    (void)state;
    int port = bf_free_port();
    char *url = xasprintf("http://127.0.0.1:%d/v1/models", port);
    bfetch r;
    assert_int_equal(bfetch_do(url, NULL, NULL, 2000 * scale(), &r), -1);
    assert_int_equal(r.status, 0);
    char *want = xasprintf("connect to %s: Connection refused", url);
    assert_string_equal(r.err, want);
    bfetch_release(&r);
    free(want);
    free(url);
}

static void deadline(void **state)
{
    (void)state;
    bf_canned s;
    bf_canned_start(&s, NULL); /* accepts, never answers */
    char *url = xasprintf("http://127.0.0.1:%d/props", s.port);
    bfetch r;
    assert_int_equal(bfetch_do(url, NULL, NULL, 200, &r), -1);
    char *want = xasprintf("timed out after 200 ms: GET %s", url);
    assert_string_equal(r.err, want);
    bfetch_release(&r);
    free(want);
    free(url);
    bf_canned_stop(&s);
}

/* the run's --timeout caps every probe; a SIGINT ends them */
static void cap_and_interrupt(void **state)
{
    (void)state;
    bf_canned s;
    bf_canned_start(&s, NULL); /* accepts, never answers */
    char *url = xasprintf("http://127.0.0.1:%d/metrics", s.port);
    bfetch r;
    bfetch_limit(NULL, 300);
    assert_int_equal(bfetch_do(url, NULL, NULL, 10000, &r), -1);
    char *want = xasprintf("timed out after 300 ms: GET %s", url);
    assert_string_equal(r.err, want);
    bfetch_release(&r);
    free(want);
    static volatile int intr = 1;
    bfetch_limit(&intr, 0);
    assert_int_equal(bfetch_do(url, NULL, "{}", 10000, &r), -1);
    want = xasprintf("POST %s: interrupted", url);
    assert_string_equal(r.err, want);
    bfetch_release(&r);
    free(want);
    bfetch_limit(NULL, 0);
    free(url);
    bf_canned_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(get_and_post_fakellm),
        cmocka_unit_test(server_error_is_a_reply),
        cmocka_unit_test(connection_refused),
        cmocka_unit_test(deadline),
        cmocka_unit_test(cap_and_interrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
