/* test_logring_retry.c - a log file that could not be opened (or reopened
 * after a rotation) is retried on a later write instead of being given up
 * for the daemon's lifetime.  The .c is included with no retry interval,
 * so the test needs no clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define LOGRING_RETRY_MS 0
#include "daemon/logring.c"
#include "testenv.h"

static void reopens_when_the_directory_comes_back(void **state)
{
    char tmpl[] = "/tmp/gpumod-logring.XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    char *sub = xasprintf("%s/logs", dir);
    char *path = xasprintf("%s/x.log", sub);
    logring *r = logring_new(path, 0, 0); /* the directory does not exist yet */
    assert_non_null(strstr(logring_error(r), path));
    logring_write(r, "lost\n", 5);
    assert_int_equal(mkdir(sub, 0700), 0);
    logring_write(r, "kept\n", 5);
    char *got = read_text(path);
    assert_non_null(got);
    assert_string_equal(got, "kept\n");
    assert_string_equal(logring_error(r), "");
    free(got);
    logring_free(r);
    free(path);
    free(sub);
    rm_rf(dir);
}

/* keep 0: rotation truncates by reopening; when that fails, the next write
 * after the directory is back lands in a fresh file. */
static void reopens_after_a_failed_rotation(void **state)
{
    char tmpl[] = "/tmp/gpumod-logring.XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    char *sub = xasprintf("%s/logs", dir);
    char *path = xasprintf("%s/x.log", sub);
    assert_int_equal(mkdir(sub, 0700), 0);
    logring *r = logring_new(path, 8, 0);
    assert_string_equal(logring_error(r), "");
    unlink(path);
    rmdir(sub); /* the reopen of the rotation fails */
    logring_write(r, "0123456789\n", 11);
    assert_true(r->fd < 0);
    assert_int_equal(mkdir(sub, 0700), 0);
    logring_write(r, "next\n", 5);
    char *got = read_text(path);
    assert_non_null(got);
    assert_string_equal(got, "next\n");
    free(got);
    logring_free(r);
    free(path);
    free(sub);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reopens_when_the_directory_comes_back),
        cmocka_unit_test(reopens_after_a_failed_rotation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
