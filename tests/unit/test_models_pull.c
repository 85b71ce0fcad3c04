/* test_models_pull.c - model pull's pure parts: byte figures, the disk
 * check, what a reply to a resumed request means, the progress line and
 * when it is drawn (10 a second at most on a terminal, each 10 %
 * elsewhere). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/pull.h"

#define GiB (1ull << 30)
#define MiB (1ull << 20)

static void bytes_for_people(void **state)
{
    (void)state;
    char b[32];
    mpull_bytes(0, b, sizeof b);
    assert_string_equal(b, "0 B");
    mpull_bytes(1023, b, sizeof b);
    assert_string_equal(b, "1023 B");
    mpull_bytes(1536, b, sizeof b);
    assert_string_equal(b, "1.5 KiB");
    mpull_bytes(5 * GiB / 2, b, sizeof b);
    assert_string_equal(b, "2.5 GiB");
    mpull_bytes(UINT64_MAX, b, sizeof b);
    assert_string_equal(b, "unknown size");
}

static void disk_check(void **state)
{
    (void)state;
    char err[512] = "";
    assert_int_equal(mpull_disk_ok(4 * GiB, 5 * GiB, "/m", err, sizeof err), 0);
    assert_int_equal(mpull_disk_ok(4 * GiB, 5 * GiB - 1, "/m", err, sizeof err), -1);
    assert_non_null(strstr(err, "not enough disk"));
    assert_non_null(strstr(err, "4.0 GiB (4294967296 bytes)"));
    assert_non_null(strstr(err, "/m has 5.0 GiB (5368709119 bytes) free"));
    assert_non_null(strstr(err, "plus 1.0 GiB"));
    /* nothing to fetch needs nothing, even on a full disk */
    assert_int_equal(mpull_disk_ok(0, 0, "/m", err, sizeof err), 0);
    /* less than the margin free: no underflow */
    assert_int_equal(mpull_disk_ok(1, MiB, "/m", err, sizeof err), -1);
}

static void resume_decisions(void **state)
{
    (void)state;
    assert_int_equal(mpull_decide(206, 100, 100, 1000), MPULL_APPEND);
    assert_int_equal(mpull_decide(206, 100, 0, 1000), MPULL_BAD); /* not from our end */
    assert_int_equal(mpull_decide(200, 100, UINT64_MAX, 1000), MPULL_RESTART);
    assert_int_equal(mpull_decide(200, 0, UINT64_MAX, 1000), MPULL_RESTART);
    assert_int_equal(mpull_decide(416, 1000, 0, 1000), MPULL_WHOLE);
    assert_int_equal(mpull_decide(416, 1200, 0, 1000), MPULL_RESTART);
    assert_int_equal(mpull_decide(416, 500, 0, 1000), MPULL_BAD);
    assert_int_equal(mpull_decide(416, 500, 0, UINT64_MAX), MPULL_RESTART);
    assert_int_equal(mpull_decide(404, 500, 0, 1000), MPULL_BAD);
    assert_true(
        mpull_is_sha256("81f226c62d28ed4a1a9b9fa080fcd9f0cc40e0f9d5680036583ff98fbcd035cb"));
    assert_false(mpull_is_sha256("81f226c62d28ed4a1a9b9fa080fcd9f0"));
    assert_false(
        mpull_is_sha256("zzf226c62d28ed4a1a9b9fa080fcd9f0cc40e0f9d5680036583ff98fbcd035cb"));
    assert_false(mpull_is_sha256(""));
}

static void eta_and_line(void **state)
{
    (void)state;
    char e[16];
    mprog_eta(65, e, sizeof e);
    assert_string_equal(e, "1:05");
    mprog_eta(3723, e, sizeof e);
    assert_string_equal(e, "1:02:03");
    mprog_eta(-1, e, sizeof e);
    assert_string_equal(e, "--:--");
    mprog_eta(1e9, e, sizeof e);
    assert_string_equal(e, "--:--");
    char l[256];
    mprog_line(l, sizeof l, "m.gguf", 512 * MiB, GiB, 64.0 * MiB, 100);
    assert_non_null(strstr(l, "m.gguf ["));
    assert_non_null(strstr(l, " 50% "));
    assert_non_null(strstr(l, "512.0 MiB / 1.0 GiB"));
    assert_non_null(strstr(l, "64.0 MiB/s"));
    assert_non_null(strstr(l, "ETA 0:08"));
    assert_true(strlen(l) < 100);
    /* the bar keeps its width as figures change */
    char l2[256];
    mprog_line(l2, sizeof l2, "m.gguf", 5 * MiB, GiB, 1.5 * MiB, 100);
    assert_int_equal(strchr(l, ']') - l, strchr(l2, ']') - l2);
    /* unknown size: bytes and rate only */
    mprog_line(l, sizeof l, "m.gguf", 3 * MiB, UINT64_MAX, 0, 80);
    assert_null(strchr(l, '%'));
    assert_non_null(strstr(l, "3.0 MiB"));
    assert_non_null(strstr(l, "-- MiB/s"));
    /* no room for a bar: the figures */
    mprog_line(l, sizeof l, "m.gguf", 10, 100, 0, 0);
    assert_null(strchr(l, '['));
    assert_non_null(strstr(l, " 10% "));
}

static void smoothing(void **state)
{
    (void)state;
    assert_true(mprog_smooth(0, 100) == 100);
    double r = mprog_smooth(100, 200);
    assert_true(r > 100 && r < 200);
}

static size_t count(const char *s, char c)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

static void lines_each_tenth(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    mprog p;
    mprog_start(&p, f, true, false, "m.gguf", 1000, 0, 0);
    for (int i = 0; i < 1000; i++)
        mprog_add(&p, 1, i); /* 1000 calls: 10 lines */
    mprog_end(&p, 1000);
    fclose(f);
    assert_int_equal(count(text, '\n'), 10);
    assert_non_null(strstr(text, "gpumod: pull: m.gguf  100%"));
    free(text);
    /* resumed at 55 %: the steps after it only */
    f = open_memstream(&text, &len);
    mprog_start(&p, f, true, false, "m.gguf", 1000, 550, 0);
    mprog_add(&p, 450, 10);
    fclose(f);
    assert_int_equal(count(text, '\n'), 1);
    free(text);
}

static void tty_at_most_ten_a_second(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    mprog p;
    mprog_start(&p, f, true, true, "m.gguf", 1000000, 0, 0);
    for (int ms = 0; ms < 1000; ms++) /* 1000 calls in one second */
        mprog_add(&p, 1000, ms);
    size_t draws = count(text, '\r');
    assert_true(draws >= 9 && draws <= 11);
    assert_int_equal(count(text, '\n'), 0);
    mprog_end(&p, 1000);
    fclose(f);
    assert_int_equal(count(text, '\n'), 1);
    free(text);
    /* quiet: nothing */
    f = open_memstream(&text, &len);
    mprog_start(&p, f, false, true, "m.gguf", 1000, 0, 0);
    mprog_add(&p, 1000, 500);
    mprog_end(&p, 600);
    fclose(f);
    assert_int_equal(len, 0);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bytes_for_people),
        cmocka_unit_test(disk_check),
        cmocka_unit_test(resume_decisions),
        cmocka_unit_test(eta_and_line),
        cmocka_unit_test(smoothing),
        cmocka_unit_test(lines_each_tenth),
        cmocka_unit_test(tty_at_most_ten_a_second),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
