/* test_logring.c - the per-service output ring and its rotated file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/logring.h"
#include "testenv.h"

static void offsets_and_lines(void **state)
{
    logring *r = logring_new(NULL, 0, 0);
    logring_write(r, "one\ntwo\nthr", 11);
    logring_write(r, "ee\nfour\n", 8);
    assert_int_equal(logring_end(r), 19);
    assert_int_equal(logring_start(r), 0);
    buf b = BUF_INIT;
    uint64_t next = 0;
    logring_read(r, 0, LOGRING_ALL, &b, &next);
    assert_string_equal(b.p, "one\ntwo\nthree\nfour\n");
    assert_int_equal(next, 19);
    buf_clear(&b);
    logring_read(r, 4, 2, &b, &next); /* two lines after "one\n" */
    assert_string_equal(b.p, "two\nthree\n");
    assert_int_equal(next, 14);
    buf_clear(&b);
    logring_read(r, next, LOGRING_ALL, &b, &next);
    assert_string_equal(b.p, "four\n");
    buf_clear(&b);
    logring_read(r, UINT64_MAX, 2, &b, &next); /* the last two lines */
    assert_string_equal(b.p, "three\nfour\n");
    assert_int_equal(next, 19);
    buf_clear(&b);
    logring_write(r, "partial", 7);
    logring_tail(r, 2, &b);
    assert_string_equal(b.p, "four\npartial");
    buf_clear(&b);
    logring_read(r, 1000, LOGRING_ALL, &b, &next); /* past the end: clamped */
    assert_string_equal(b.p, "");
    assert_int_equal(next, 26);
    logring_read(r, UINT64_MAX, 0, &b, &next); /* zero lines: nothing, next at the end */
    assert_string_equal(b.p, "");
    assert_int_equal(next, 26);
    logring_read(r, 4, 0, &b, &next); /* zero lines after 4: nothing, next stays */
    assert_string_equal(b.p, "");
    assert_int_equal(next, 4);
    buf_release(&b);
    logring_free(r);
}

static void wraps_and_keeps_the_last_bytes(void **state)
{
    logring *r = logring_new(NULL, 0, 0);
    char line[100];
    for (int i = 0; i < 10000; i++) {
        int n = snprintf(line, sizeof line, "line %05d %s\n", i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        logring_write(r, line, (size_t)n);
    }
    uint64_t end = logring_end(r);
    assert_true(end > LOGRING_SIZE);
    assert_int_equal(logring_start(r), end - LOGRING_SIZE);
    buf b = BUF_INIT;
    uint64_t next;
    logring_read(r, 0, LOGRING_ALL, &b, &next); /* from 0: clamped to what is held */
    assert_int_equal(b.len, LOGRING_SIZE);
    assert_int_equal(next, end);
    buf_clear(&b);
    logring_tail(r, 1, &b);
    assert_non_null(strstr(b.p, "line 09999 "));
    assert_null(strstr(b.p, "line 09998"));
    /* a single write larger than the ring */
    char *big = xmalloc(LOGRING_SIZE + 10);
    memset(big, 'a', LOGRING_SIZE + 10);
    big[LOGRING_SIZE + 9] = 'z';
    logring_write(r, big, LOGRING_SIZE + 10);
    buf_clear(&b);
    logring_read(r, 0, LOGRING_ALL, &b, &next);
    assert_int_equal(b.len, LOGRING_SIZE);
    assert_int_equal(b.p[b.len - 1], 'z');
    free(big);
    buf_release(&b);
    logring_free(r);
}

static void file_is_appended_and_rotated(void **state)
{
    char tmpl[] = "/tmp/gpumod-logring.XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    char *path = xasprintf("%s/chat.log", dir);
    logring *r = logring_new(path, 100, 2);
    assert_string_equal(logring_error(r), "");
    char line[64];
    for (int i = 0; i < 12; i++) { /* 12 x 30 bytes: rotates at 120, 240, 360 */
        snprintf(line, sizeof line, "%02d-aaaaaaaaaaaaaaaaaaaaaaaaaa\n", i);
        assert_int_equal(strlen(line), 29 + 1);
        logring_write(r, line, 30);
    }
    logring_free(r);
    char *p1 = xasprintf("%s.1", path), *p2 = xasprintf("%s.2", path), *p3 = xasprintf("%s.3", path);
    char *t0 = read_text(path), *t1 = read_text(p1), *t2 = read_text(p2), *t3 = read_text(p3);
    assert_non_null(t0); /* reopened empty after the last rotation */
    assert_string_equal(t0, "");
    assert_non_null(t1);
    assert_non_null(strstr(t1, "08-"));
    assert_non_null(strstr(t1, "11-"));
    assert_non_null(t2);
    assert_non_null(strstr(t2, "04-"));
    assert_null(t3); /* keep 2 */
    /* reopening appends */
    r = logring_new(path, 0, 0);
    logring_write(r, "again\n", 6);
    logring_free(r);
    free(t0);
    t0 = read_text(path);
    assert_string_equal(t0, "again\n");
    free(t0);
    free(t1);
    free(t2);
    free(p1);
    free(p2);
    free(p3);
    free(path);
    rm_rf(dir);
}

static void unwritable_file_keeps_the_ring(void **state)
{
    logring *r = logring_new("/nonexistent/dir/x.log", 0, 0);
    assert_non_null(strstr(logring_error(r), "/nonexistent/dir/x.log"));
    logring_write(r, "kept\n", 5);
    buf b = BUF_INIT;
    logring_tail(r, 5, &b);
    assert_string_equal(b.p, "kept\n");
    buf_release(&b);
    logring_free(r);
}

/* A FIFO where the service's log should be (log_dir comes from the
 * configuration): refused at once, never waited on; the ring keeps working.
 * alarm() turns a block into a failure instead of a hang. */
static void fifo_log_is_refused(void **state)
{
    char tmpl[] = "/tmp/gpumod-logring.XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    char *path = xasprintf("%s/x.log", dir);
    assert_int_equal(mkfifo(path, 0644), 0);
    alarm(10);
    logring *r = logring_new(path, 0, 0);
    alarm(0);
    char *want = xasprintf("cannot open log '%s': a FIFO, not a regular file", path);
    assert_string_equal(logring_error(r), want);
    free(want);
    logring_write(r, "kept\n", 5);
    buf b = BUF_INIT;
    logring_tail(r, 5, &b);
    assert_string_equal(b.p, "kept\n");
    buf_release(&b);
    logring_free(r);
    free(path);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(offsets_and_lines),
        cmocka_unit_test(wraps_and_keeps_the_last_bytes),
        cmocka_unit_test(file_is_appended_and_rotated),
        cmocka_unit_test(unwritable_file_keeps_the_ring),
        cmocka_unit_test(fifo_log_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
