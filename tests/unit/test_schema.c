/* test_schema.c - the field-table engine and its small parsers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/schema.h"
#include "util/argsplit.h"

static void durations(void **state)
{
    int64_t ms;
    assert_int_equal(parse_duration_ms("30", &ms), 0);
    assert_int_equal(ms, 30000);
    assert_int_equal(parse_duration_ms("250ms", &ms), 0);
    assert_int_equal(ms, 250);
    assert_int_equal(parse_duration_ms("10m", &ms), 0);
    assert_int_equal(ms, 600000);
    assert_int_equal(parse_duration_ms("1.5s", &ms), 0);
    assert_int_equal(ms, 1500);
    assert_int_equal(parse_duration_ms("2h", &ms), 0);
    assert_int_equal(ms, 7200000);
    assert_int_equal(parse_duration_ms("30d", &ms), 0);
    assert_int_equal(ms, 2592000000);
    assert_int_equal(parse_duration_ms("-1s", &ms), -1);
    assert_int_equal(parse_duration_ms("soon", &ms), -1);
    assert_int_equal(parse_duration_ms("5 fortnights", &ms), -1);
    assert_int_equal(parse_duration_ms("", &ms), -1);
}

static void settings_retention_defaults(void **state)
{
    settings s;
    settings_defaults(&s);
    assert_int_equal(s.events_keep, 100000);
    assert_int_equal(s.events_max_age_ms, 30LL * 86400000);
    settings_release(&s);
}

static void integers(void **state)
{
    int64_t v;
    assert_int_equal(parse_int64("1_000", &v), 0);
    assert_int_equal(v, 1000);
    assert_int_equal(parse_int64("-5", &v), 0);
    assert_int_equal(v, -5);
    assert_int_equal(parse_int64("1.5", &v), -1);
    assert_int_equal(parse_int64("12ab", &v), -1);
    assert_int_equal(parse_int64("99999999999999999999999", &v), -1);
    assert_int_equal(parse_int64("-", &v), -1);
}

static void did_you_mean(void **state)
{
    const char *c[] = {"context_size", "model_path", "port"};
    assert_string_equal(schema_did_you_mean("contxt_size", c, 3), "context_size");
    assert_string_equal(schema_did_you_mean("prot", c, 3), "port");
    assert_null(schema_did_you_mean("zzzqqq", c, 3));
}

static void expandvars_like_python(void **state)
{
    setenv("GPUMOD_T_X", "/home/x", 1);
    unsetenv("GPUMOD_T_UNSET");
    char *s = expand_vars("$GPUMOD_T_X/a ${GPUMOD_T_X}/b $GPUMOD_T_UNSET ${GPUMOD_T_UNSET} $ ${ $1x");
    assert_string_equal(s, "/home/x/a /home/x/b $GPUMOD_T_UNSET ${GPUMOD_T_UNSET} $ ${ $1x");
    free(s);
}

static void control_characters(void **state)
{
    assert_true(text_has_control("a\nb", false));
    assert_false(text_has_control("a\nb", true));
    assert_true(text_has_control("a\rb", true));
    assert_true(text_has_control("a\x7f", false));
    assert_false(text_has_control("plain text – ünïcode", false));
}

static void split(const char *in, const char *const *want, size_t n)
{
    strv out = STRV_INIT;
    char err[128];
    assert_int_equal(argsplit(in, &out, err, sizeof err), 0);
    assert_int_equal(out.n, n);
    for (size_t i = 0; i < n; i++) assert_string_equal(out.v[i], want[i]);
    strv_release(&out);
}

static void argsplit_rules(void **state)
{
    const char *a[] = {"--parallel", "5", "--cont-batching"};
    split("  --parallel 5\t--cont-batching \n", a, 3);
    const char *b[] = {"a b", "c\"d", "e\\f", "$HOME", "x;y|z", "`id`"};
    split("'a b' \"c\\\"d\" e\\\\f '$HOME' x;y|z `id`", b, 6);
    const char *c[] = {"ab c"};
    split("a'b c'", c, 1);
    const char *d[] = {""};
    split("''", d, 1);
    split("", NULL, 0);
}

static void argsplit_errors(void **state)
{
    strv out = STRV_INIT;
    char err[128];
    assert_int_equal(argsplit("--foo 'bar", &out, err, sizeof err), -1);
    assert_string_equal(err, "unterminated single quote at offset 6");
    strv_release(&out);
    assert_int_equal(argsplit("\"x", &out, err, sizeof err), -1);
    assert_string_equal(err, "unterminated double quote at offset 0");
    strv_release(&out);
    assert_int_equal(argsplit("x \\", &out, err, sizeof err), -1);
    assert_string_equal(err, "trailing backslash at offset 2");
    strv_release(&out);
}

typedef struct obj {
    int64_t n;
    int64_t dur;
    bool b;
    char *s;
    int e;
    strv list;
} obj;

static const char *const colours[] = {"red", "green", NULL};
static const field tab[] = {
    {"n", F_INT, offsetof(obj, n), 1, 10, .deflt = "5"},
    {"dur", F_DURATION, offsetof(obj, dur), .deflt = "2s"},
    {"b", F_BOOL, offsetof(obj, b), .deflt = "yes"},
    {"s", F_STR, offsetof(obj, s), .flags = FL_REQUIRED},
    {"e", F_ENUM, offsetof(obj, e), .names = colours, .deflt = "green"},
    {"list", F_STRV, offsetof(obj, list)},
    {NULL},
};

static void table_defaults_and_errors(void **state)
{
    obj o = {0};
    schema_defaults(tab, &o);
    assert_int_equal(o.n, 5);
    assert_int_equal(o.dur, 2000);
    assert_true(o.b);
    assert_int_equal(o.e, 1);

    const char *text = "n: 11\ndur: 250ms\nb: off\ne: gren\nlist: [a, b]\nextra: 1\n";
    ydoc doc;
    diags d = {0};
    assert_int_equal(yaml_load_string(&doc, text, strlen(text), "t.yaml", &d), 0);
    schema_ctx c = {"t.yaml", &d, "thing 'x'", false};
    schema_parse(&c, tab, doc.root, &o);
    assert_true(c.failed);
    assert_int_equal(o.n, 5); /* rejected value keeps the default */
    assert_int_equal(o.dur, 250);
    assert_false(o.b);
    assert_int_equal(o.list.n, 2);
    assert_int_equal(d.errors, 4);
    assert_string_equal(d.v[0].msg, "thing 'x': n: 11 is out of range: expected an integer in 1..10");
    assert_string_equal(d.v[1].msg, "thing 'x': e: expected one of red, green, found 'gren' (did you mean 'green'?)");
    assert_string_equal(d.v[2].msg, "thing 'x': unknown key 'extra'");
    assert_string_equal(d.v[3].msg, "thing 'x': required key 's' is missing");
    assert_int_equal(d.v[0].pos.line, 1);
    assert_int_equal(d.v[0].pos.col, 4);

    buf b = BUF_INIT;
    schema_show_json(&b, tab, &o);
    assert_string_equal(b.p, "{\"n\":5,\"dur_ms\":250,\"b\":false,\"s\":null,\"e\":\"green\",\"list\":[\"a\",\"b\"]}");
    buf_release(&b);
    schema_release(tab, &o);
    yaml_release(&doc);
    diags_release(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(durations),        cmocka_unit_test(integers),
        cmocka_unit_test(did_you_mean),     cmocka_unit_test(expandvars_like_python),
        cmocka_unit_test(control_characters), cmocka_unit_test(argsplit_rules),
        cmocka_unit_test(argsplit_errors),  cmocka_unit_test(table_defaults_and_errors),
        cmocka_unit_test(settings_retention_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
