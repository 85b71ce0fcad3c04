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

static void sums_saturate(void **state)
{
    (void)state;
    assert_int_equal(mpull_sat_add(1, 2), 3);
    assert_true(mpull_sat_add(UINT64_MAX / 2, UINT64_MAX / 2) == UINT64_MAX - 1);
    assert_true(mpull_sat_add(UINT64_MAX / 2 + 1, UINT64_MAX / 2 + 1) == MPULL_HUGE);
    assert_true(mpull_sat_add(MPULL_HUGE, 0) == MPULL_HUGE);
    assert_true(mpull_sat_add(0, UINT64_MAX) == MPULL_HUGE); /* never "unknown" */
    assert_true(mpull_sat_add(5, MPULL_HUGE - 5) == MPULL_HUGE);
    assert_true(mpull_sat_add(5, MPULL_HUGE - 6) == MPULL_HUGE - 1);
    /* a saturated need is refused by the disk check, whatever is free */
    char err[512];
    assert_int_equal(mpull_disk_ok(MPULL_HUGE, UINT64_MAX - 1, "/m", err, sizeof err), -1);
    assert_non_null(strstr(err, "not enough disk"));
}

static void paths_stay_below(void **state)
{
    (void)state;
    char err[1024];
    static const char *const good[] = {"a.gguf",  "org/repo",       "Q4/m-00001-of-00002.gguf",
                                       "..a/b..", "a/.hidden.gguf", "x...gguf"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_int_equal(mpull_path_ok(good[i], "the path", err, sizeof err), 0);
    static const struct {
        const char *p, *why;
    } bad[] = {
        {"", "it is empty"},
        {"/etc/x.gguf", "it is absolute"},
        {"../x.gguf", "'.' or '..' segment"},
        {"a/../../x.gguf", "'.' or '..' segment"},
        {"a/..", "'.' or '..' segment"},
        {"./x.gguf", "'.' or '..' segment"},
        {"a//x.gguf", "an empty segment"},
        {"a/", "an empty segment"},
        {"a\\..\\x.gguf", "a backslash"},
        {"m\nargs: x.gguf", "a control character"},
        {"m\x1b[2Jx.gguf", "a control character"},
        {"m\x7f.gguf", "a control character"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(mpull_path_ok(bad[i].p, "the repository path", err, sizeof err), -1);
        assert_non_null(strstr(err, bad[i].why));
        assert_non_null(strstr(err, "the repository path \""));
    }
    mpull_path_ok("m\nargs: [\"--host\"]\x1b.gguf", "the path", err, sizeof err);
    assert_non_null(strstr(err, "\"m\\x0aargs: [\\\"--host\\\"]\\x1b.gguf\""));
    assert_null(strchr(err, '\n'));
    assert_null(strchr(err, '\x1b'));
}

static void escaped_and_cut(void **state)
{
    (void)state;
    char out[16];
    mpull_escape("abc", out, sizeof out);
    assert_string_equal(out, "abc");
    mpull_escape("a\tb\\", out, sizeof out);
    assert_string_equal(out, "a\\x09b\\\\");
    mpull_escape("0123456789abcdefghij", out, sizeof out);
    assert_string_equal(out, "0123456789ab...");
    mpull_escape("\x01\x01\x01\x01\x01", out, sizeof out); /* never half an escape */
    assert_string_equal(out, "\\x01\\x01\\x01...");
}

static void split_names(void **state)
{
    (void)state;
    unsigned n = 0, m = 0;
    assert_true(mpull_split_name("Model-Q4_K_M-00002-of-00003.gguf", &n, &m));
    assert_int_equal(n, 2);
    assert_int_equal(m, 3);
    assert_true(mpull_split_name("x-00001-of-00001.GGUF", &n, &m));
    assert_false(mpull_split_name("x-00004-of-00003.gguf", &n, &m));
    assert_false(mpull_split_name("x-00000-of-00003.gguf", &n, &m));
    assert_false(mpull_split_name("x-0001-of-00003.gguf", &n, &m));
    assert_false(mpull_split_name("-00001-of-00003.gguf", &n, &m));
    assert_false(mpull_split_name("Model-Q4_K_M.gguf", &n, &m));
}

static void digests_lower(void **state)
{
    (void)state;
    char s[] = "4BCE04b23B28ddcca4c273812eaf5e32a0a301411912c9663597de5e1f67e0E3";
    assert_true(mpull_is_sha256(s));
    mpull_lower(s);
    assert_string_equal(s, "4bce04b23b28ddcca4c273812eaf5e32a0a301411912c9663597de5e1f67e0e3");
    assert_false(mpull_is_sha256("4bce"));
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
        cmocka_unit_test(sums_saturate),
        cmocka_unit_test(paths_stay_below),
        cmocka_unit_test(escaped_and_cut),
        cmocka_unit_test(split_names),
        cmocka_unit_test(digests_lower),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
