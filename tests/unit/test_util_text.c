/* test_util_text.c - the one-of-each text helpers in util: errf and
 * errf_ret, view_ieq, the JSON string-or-null and time writers, the
 * two duration formats (exact, for the configuration; human), xvasprintf,
 * and the helpers' strict options and subcommand dispatch (util/opt). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/buf.h"
#include "util/dur.h"
#include "util/errf.h"
#include "util/opt.h"
#include "util/utf8.h"

static void errf_writes_and_tolerates_null(void **st)
{
    (void)st;
    char e[16];
    errf(e, sizeof e, "bad %d of %s", 3, "twelve-letters");
    assert_string_equal(e, "bad 3 of twelve"); /* truncated to the buffer */
    errf(NULL, 0, "nowhere %d", 1);            /* no buffer: nothing happens */
    assert_int_equal(errf_ret(-1, e, sizeof e, "x=%d", 7), -1);
    assert_string_equal(e, "x=7");
    assert_int_equal(errf_ret(42, NULL, 0, "ignored"), 42);
}

static void view_ieq_ignores_ascii_case_only(void **st)
{
    (void)st;
    assert_true(view_ieq((view){"Content-Length", 14}, "content-length"));
    assert_false(
        view_ieq((view){"Content-Length", 7}, "content-length")); /* a prefix is not equal */
    assert_false(view_ieq((view){"chunkedx", 8}, "chunked"));
    assert_true(view_ieq((view){"", 0}, ""));
}

static void json_helpers(void **st)
{
    (void)st;
    buf b = BUF_INIT;
    buf_json_str_or_null(&b, NULL);
    buf_addc(&b, ',');
    buf_json_str_or_null(&b, "a\"b");
    buf_addc(&b, ',');
    buf_json_time(&b, 1764205808333LL);
    assert_string_equal(b.p, "null,\"a\\\"b\",\"2025-11-27T01:10:08.333Z\"");
    buf_release(&b);
}

static void durations_exact_and_human(void **st)
{
    (void)st;
    static const struct {
        int64_t ms;
        const char *exact, *human;
    } cases[] = {
        {-5, "null", "0ms"},         {0, "0s", "0ms"},         {410, "410ms", "410ms"},
        {1500, "1500ms", "1.5s"},    {90000, "90s", "1m30s"},  {300000, "5m", "5m00s"},
        {192000, "192s", "3m12s"},   {7200000, "2h", "2h00m"}, {7500000, "125m", "2h05m"},
        {273600000, "76h", "3d04h"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        buf e = BUF_INIT, h = BUF_INIT;
        dur_exact(&e, cases[i].ms);
        dur_human(&h, cases[i].ms);
        assert_string_equal(e.p, cases[i].exact);
        assert_string_equal(h.p, cases[i].human);
        buf_release(&e);
        buf_release(&h);
    }
}

static char *vfmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

static int g_called;
static int sub_a(int argc, char **argv)
{
    g_called = 100 + argc;
    return strcmp(argv[0], "a") ? 9 : 7;
}
static int run_main(int argc, char **argv)
{
    g_called = 200 + argc;
    return 5;
}

static void utf8_rules(void **st)
{
    (void)st;
    uint32_t c = 0;
    assert_int_equal(utf8_next((const unsigned char *)"\xc3\xa9", &c), 2);
    assert_int_equal(c, 0xe9);
    assert_int_equal(utf8_next((const unsigned char *)"\xc0\x80", &c), 0);     /* overlong */
    assert_int_equal(utf8_next((const unsigned char *)"\xed\xa0\x80", &c), 0); /* surrogate */
    assert_int_equal(utf8_next((const unsigned char *)"\xf4\x90\x80\x80", &c), 0);
    static const uint32_t unsafe[] = {0,      0x1b,   0x7f,   0x85,    0x9f,
                                      0x200e, 0x2028, 0x202e, 0x2066,  0xfeff,
                                      0xfdd0, 0xfffe, 0xffff, 0x1fffe, 0x10ffff};
    for (size_t i = 0; i < sizeof unsafe / sizeof *unsafe; i++)
        assert_true(utf8_unsafe(unsafe[i]));
    static const uint32_t safe[] = {' ', 'a', 0xa0, 0xe9, 0x4e2d, 0xfffd, 0x1f600};
    for (size_t i = 0; i < sizeof safe / sizeof *safe; i++)
        assert_false(utf8_unsafe(safe[i]));
    char *t = utf8_clean("a\x1b[31mb\xef\xbf\xbe\xff\xc3\xa9");
    assert_string_equal(t, "a?[31mb??\xc3\xa9");
    free(t);
    t = utf8_clean(NULL);
    assert_string_equal(t, "");
    free(t);
    assert_true(utf8_safe("caf\xc3\xa9"));
    assert_false(utf8_safe("a\nb"));
}

static void options_and_dispatch(void **st)
{
    (void)st;
    char *s = vfmt("%s-%d", "x", 12);
    assert_string_equal(s, "x-12");
    free(s);
    long l;
    double d;
    assert_int_equal(opt_long("8", 1, 10, &l), 0);
    assert_int_equal(l, 8);
    assert_int_equal(opt_long("8x", 1, 10, &l), -1);
    assert_int_equal(opt_long("11", 1, 10, &l), -1);
    assert_int_equal(opt_double("1e999", 0, 1e300, &d), -1);
    static const opt_sub subs[] = {{"a", sub_a}, {NULL, NULL}};
    char *none[] = {"tool"}, *sub[] = {"tool", "a", "b"}, *run[] = {"tool", "URL", "--x"};
    char *help1[] = {"tool", "help"}, *help2[] = {"tool", "URL", "--help"};
    g_called = 0;
    assert_int_equal(opt_dispatch(1, none, "", subs, run_main), 2); /* usage */
    assert_int_equal(g_called, 0);
    assert_int_equal(opt_dispatch(3, sub, "", subs, run_main), 7); /* a subcommand, its own argv */
    assert_int_equal(g_called, 102);
    assert_int_equal(opt_dispatch(3, run, "", subs, run_main), 5); /* the run, argv whole */
    assert_int_equal(g_called, 203);
    g_called = 0;
    assert_int_equal(opt_dispatch(2, help1, "", subs, run_main), 0);
    assert_int_equal(opt_dispatch(3, help2, "", subs, run_main), 0);
    assert_int_equal(g_called, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(errf_writes_and_tolerates_null),
        cmocka_unit_test(view_ieq_ignores_ascii_case_only),
        cmocka_unit_test(json_helpers),
        cmocka_unit_test(durations_exact_and_human),
        cmocka_unit_test(options_and_dispatch),
        cmocka_unit_test(utf8_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
