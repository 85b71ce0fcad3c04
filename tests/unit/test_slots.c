/* test_slots.c - the slot directory (daemon/slots.h): made 0700 (and
 * kept when it exists; a file in its place refused), the bound deleting
 * the oldest files first (modification time, then name) until the total
 * fits, and the free-disk check's wording. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include "daemon/slots.h"
#include "util/buf.h"

static char *tmpdir(void)
{
    char tmpl[] = "/tmp/test_slots.XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return xstrdup(d);
}

/* a file of n bytes whose modification time is now - age_s */
static void put(const char *dir, const char *name, size_t n, long age_s)
{
    char *p = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    for (size_t i = 0; i < n; i++)
        fputc('x', f);
    fclose(f);
    struct timespec ts[2];
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= age_s;
    ts[1] = ts[0];
    assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
    free(p);
}

static bool exists(const char *dir, const char *name)
{
    char *p = xasprintf("%s/%s", dir, name);
    struct stat st;
    bool r = stat(p, &st) == 0;
    free(p);
    return r;
}

static void test_make_dir(void **state)
{
    (void)state;
    char *d = tmpdir(), err[512];
    assert_int_equal(slots_make_dir(d, "svc", err, sizeof err), 0);
    assert_int_equal(slots_make_dir(d, "svc", err, sizeof err), 0); /* exists: kept */
    char *p = xasprintf("%s/slots/svc", d);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    free(p);
    p = xasprintf("%s/slots/file", d);
    FILE *f = fopen(p, "w");
    fclose(f);
    assert_int_equal(slots_make_dir(d, "file", err, sizeof err), -1);
    assert_non_null(strstr(err, "a file of that name exists"));
    assert_non_null(strstr(err, p));
    free(p);
    const char *rm[] = {"slots/file", "slots/svc", "slots", ""};
    for (size_t i = 0; i < sizeof rm / sizeof *rm; i++) {
        char *x = xasprintf("%s/%s", d, rm[i]);
        if (remove(x) != 0) fail_msg("cannot remove %s", x);
        free(x);
    }
    free(d);
}

static void test_bound(void **state)
{
    (void)state;
    char *d = tmpdir(), err[512];
    put(d, "a-0.bin", 400, 300);
    put(d, "b-0.bin", 400, 200);
    put(d, "c-0.bin", 400, 100);
    put(d, "c-1.bin", 400, 100); /* same time as c-0: the name decides */
    assert_int_equal(slots_bound(d, 1600, err, sizeof err), 0); /* fits */
    assert_int_equal(slots_bound(d, 1000, err, sizeof err), 2);
    assert_false(exists(d, "a-0.bin"));
    assert_false(exists(d, "b-0.bin"));
    assert_true(exists(d, "c-0.bin"));
    assert_int_equal(slots_bound(d, 500, err, sizeof err), 1);
    assert_false(exists(d, "c-0.bin"));
    assert_true(exists(d, "c-1.bin"));
    assert_int_equal(slots_bound(d, 0, err, sizeof err), 1);
    assert_false(exists(d, "c-1.bin"));
    char *gone = xasprintf("%s/nope", d);
    assert_int_equal(slots_bound(gone, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot list the slot directory"));
    free(gone);
    rmdir(d);
    free(d);
}

static void test_disk(void **state)
{
    (void)state;
    char why[512];
    assert_true(slots_disk_ok("/tmp", 0, why, sizeof why) ||
                strstr(why, "MiB wanted (1 GiB + slots_max_mb/4)") != NULL);
    /* far more than any disk: refused, with the figures */
    assert_false(slots_disk_ok("/tmp", (int64_t)1 << 40, why, sizeof why));
    assert_non_null(strstr(why, "MiB free on the file system of '/tmp'"));
    assert_false(slots_disk_ok("/nonexistent/x", 1, why, sizeof why));
    assert_non_null(strstr(why, "cannot read the free space of '/nonexistent/x'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_make_dir),
        cmocka_unit_test(test_bound),
        cmocka_unit_test(test_disk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
