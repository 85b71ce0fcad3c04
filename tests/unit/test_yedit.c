/* test_yedit.c - setting one scalar in YAML text (every other byte kept,
 * each refusal with its text), quoting, and the unified diff (checked
 * against exact hunks and by applying it back). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/yaml.h"
#include "config/yedit.c" /* verify(), to hand it a splice gone wrong */

#define P(...) ((const char *const[]){__VA_ARGS__, NULL})
#define PREFIX "gpumod tune:"

static void expect_set_n(const char *text, size_t len, const char *const *path, const char *value,
                         const char *note, const char *expect)
{
    buf out = BUF_INIT;
    char err[512] = "";
    int rc = yedit_set(text, len, path, value, note, PREFIX, &out, err, sizeof err);
    if (rc) print_message("unexpected error: %s\n", err);
    assert_int_equal(rc, 0);
    assert_string_equal(out.p, expect);
    buf_release(&out);
}

static void expect_set(const char *text, const char *const *path, const char *value,
                       const char *note, const char *expect)
{
    expect_set_n(text, strlen(text), path, value, note, expect);
}

static void expect_refused_n(const char *text, size_t len, const char *const *path,
                             const char *value, const char *note, const char *needle)
{
    buf out = BUF_INIT;
    char err[512] = "";
    assert_int_equal(yedit_set(text, len, path, value, note, PREFIX, &out, err, sizeof err), -1);
    assert_int_equal(out.len, 0);
    if (!strstr(err, needle)) print_message("error '%s' lacks '%s'\n", err, needle);
    assert_non_null(strstr(err, needle));
    buf_release(&out);
}

static void expect_refused(const char *text, const char *const *path, const char *value,
                           const char *needle)
{
    expect_refused_n(text, strlen(text), path, value, NULL, needle);
}

static const char ptext[] = "# a preset\n"
                            "id: q   # the id\n"
                            "\n"
                            "context_size: 4096\n"
                            "unit_vars:\n"
                            "  # threads for llama.cpp\n"
                            "  threads: 20   # was 20\n"
                            "  batch_size: '512'\n"
                            "\n"
                            "# the environment\n"
                            "env:\n"
                            "  HF_HOME: /srv/hf\n"
                            "canary: true\n";

static void block_value_replaced_in_place(void **state)
{
    (void)state;
    expect_set(ptext, P("unit_vars", "threads"), "8", NULL,
               "# a preset\nid: q   # the id\n\ncontext_size: 4096\nunit_vars:\n  # threads for "
               "llama.cpp\n"
               "  threads: 8   # was 20\n  batch_size: '512'\n\n# the environment\nenv:\n  "
               "HF_HOME: /srv/hf\n"
               "canary: true\n");
    expect_set(ptext, P("context_size"), "8192", NULL,
               "# a preset\nid: q   # the id\n\ncontext_size: 8192\nunit_vars:\n  # threads for "
               "llama.cpp\n"
               "  threads: 20   # was 20\n  batch_size: '512'\n\n# the environment\nenv:\n  "
               "HF_HOME: /srv/hf\n"
               "canary: true\n");
    /* a quoted value is replaced whole, quotes and all */
    expect_set(ptext, P("unit_vars", "batch_size"), "1024", NULL,
               "# a preset\nid: q   # the id\n\ncontext_size: 4096\nunit_vars:\n  # threads for "
               "llama.cpp\n"
               "  threads: 20   # was 20\n  batch_size: 1024\n\n# the environment\nenv:\n  "
               "HF_HOME: /srv/hf\n"
               "canary: true\n");
    /* the value on the line under its key; an empty (null) value */
    expect_set("a:\n  b:\n    7\n", P("a", "b"), "9", NULL, "a:\n  b:\n    9\n");
    expect_set("a:\n  b:\n  c: 1\n", P("a", "b"), "9", NULL, "a:\n  b: 9\n  c: 1\n");
    expect_set("a:\n  b:   # none yet\n", P("a", "b"), "9", NULL, "a:\n  b: 9   # none yet\n");
}

static void note_added_then_replaced(void **state)
{
    (void)state;
    const char *t = "id: x\nunit_vars:\n  threads: 20\n";
    buf one = BUF_INIT, two = BUF_INIT;
    char err[256];
    assert_int_equal(yedit_set(t, strlen(t), P("unit_vars", "threads"), "8",
                               PREFIX " threads 8 (+6.1 t/s, run r1)", PREFIX, &one, err,
                               sizeof err),
                     0);
    assert_string_equal(
        one.p, "id: x\nunit_vars:\n  # gpumod tune: threads 8 (+6.1 t/s, run r1)\n  threads: 8\n");
    /* applying again replaces the note, never piles a second one up */
    assert_int_equal(yedit_set(one.p, one.len, P("unit_vars", "threads"), "10",
                               PREFIX " threads 10 (run r2)", PREFIX, &two, err, sizeof err),
                     0);
    assert_string_equal(two.p,
                        "id: x\nunit_vars:\n  # gpumod tune: threads 10 (run r2)\n  threads: 10\n");
    /* a comment of the user's above it stays; the note goes below it */
    expect_set("u:\n  # mine: keep\n  t: 1\n", P("u", "t"), "2", PREFIX " t 2",
               "u:\n  # mine: keep\n  # gpumod tune: t 2\n  t: 2\n");
    /* no prefix given: an earlier note is kept, the new one added */
    buf_clear(&one);
    assert_int_equal(yedit_set(two.p, two.len, P("unit_vars", "threads"), "12", PREFIX " x", NULL,
                               &one, err, sizeof err),
                     0);
    assert_string_equal(
        one.p, "id: x\nunit_vars:\n  # gpumod tune: threads 10 (run r2)\n  # gpumod tune: x\n"
               "  threads: 12\n");
    /* a top-level key: the note at column 0 */
    expect_set("a: 1\nb: 2\n", P("b"), "3", "n", "a: 1\n# n\nb: 3\n");
    buf_release(&one);
    buf_release(&two);
}

static void missing_key_appended_to_block(void **state)
{
    (void)state;
    expect_set(ptext, P("unit_vars", "cache_type_k"), "q8_0", NULL,
               "# a preset\nid: q   # the id\n\ncontext_size: 4096\nunit_vars:\n  # threads for "
               "llama.cpp\n"
               "  threads: 20   # was 20\n  batch_size: '512'\n  cache_type_k: q8_0\n\n# the "
               "environment\nenv:\n"
               "  HF_HOME: /srv/hf\ncanary: true\n");
    expect_set(ptext, P("env", "VLLM_MARLIN_USE_ATOMIC_ADD"), "\"1\"", PREFIX " +6.25 t/s",
               "# a preset\nid: q   # the id\n\ncontext_size: 4096\nunit_vars:\n  # threads for "
               "llama.cpp\n"
               "  threads: 20   # was 20\n  batch_size: '512'\n\n# the environment\nenv:\n  "
               "HF_HOME: /srv/hf\n"
               "  # gpumod tune: +6.25 t/s\n  VLLM_MARLIN_USE_ATOMIC_ADD: \"1\"\ncanary: true\n");
    /* the siblings' indentation, 4 here; a trailing comment on the last line */
    expect_set("u:\n    a: 1\n    b: 2  # two\nv: 3\n", P("u", "c"), "x", NULL,
               "u:\n    a: 1\n    b: 2  # two\n    c: x\nv: 3\n");
    /* after a nested block and a block scalar ending at the parent's indentation */
    expect_set("top:\n  a:\n    x: |\n      foo\n  b: 1\n", P("top", "a", "z"), "2", NULL,
               "top:\n  a:\n    x: |\n      foo\n    z: 2\n  b: 1\n");
    expect_set("top:\n  a:\n    deep:\n      k: v\n  b: 1\n", P("top", "a", "z"), "2", NULL,
               "top:\n  a:\n    deep:\n      k: v\n    z: 2\n  b: 1\n");
    /* a mapping with a merge key: a key the merge does not bring is added */
    expect_set("base: &b {threads: 4}\nu:\n  <<: *b\n  batch: 1\n", P("u", "ctx"), "2", NULL,
               "base: &b {threads: 4}\nu:\n  <<: *b\n  batch: 1\n  ctx: 2\n");
}

static void missing_section_created(void **state)
{
    (void)state;
    expect_set("id: x\nport: 8000\n", P("unit_vars", "threads"), "8", NULL,
               "id: x\nport: 8000\nunit_vars:\n  threads: 8\n");
    expect_set("id: x\nport: 8000\n", P("unit_vars", "threads"), "8", PREFIX " n",
               "id: x\nport: 8000\nunit_vars:\n  # gpumod tune: n\n  threads: 8\n");
    /* the file's own indentation step */
    expect_set("id: x\nenv:\n    A: b\n", P("unit_vars", "threads"), "8", NULL,
               "id: x\nenv:\n    A: b\nunit_vars:\n    threads: 8\n");
    expect_set("a:\n  b: 1\n", P("a", "c", "d"), "2", NULL, "a:\n  b: 1\n  c:\n    d: 2\n");
    /* a key that needs quoting as a key */
    expect_set("id: x\n", P("env", "on"), "\"1\"", NULL, "id: x\nenv:\n  \"on\": \"1\"\n");
    /* an empty document, one of comments only, one of only --- */
    expect_set("", P("a"), "1", NULL, "a: 1\n");
    expect_set("# just a comment\n", P("a", "b"), "1", NULL, "# just a comment\na:\n  b: 1\n");
    expect_set("---\n", P("a"), "1", NULL, "---\na: 1\n");
}

static void null_section_filled(void **state)
{
    (void)state;
    expect_set("id: x\nenv:\nport: 1\n", P("env", "A"), "\"1\"", NULL,
               "id: x\nenv:\n  A: \"1\"\nport: 1\n");
    expect_set("env: ~  # none\nport: 1\n", P("env", "A"), "\"1\"", "n",
               "env:   # none\n  # n\n  A: \"1\"\nport: 1\n");
    expect_set("x: {a: ~}\n", P("x", "a", "b"), "1", NULL, "x: {a: {b: 1}}\n");
}

static void flow_mappings(void **state)
{
    (void)state;
    const char *t = "id: x\nunit_vars: {threads: 20, batch: 512}  # c\n";
    expect_set(t, P("unit_vars", "threads"), "8", NULL,
               "id: x\nunit_vars: {threads: 8, batch: 512}  # c\n");
    expect_set(t, P("unit_vars", "cache"), "q8_0", NULL,
               "id: x\nunit_vars: {threads: 20, batch: 512, cache: q8_0}  # c\n");
    expect_set(t, P("unit_vars", "threads"), "8", "n",
               "id: x\n# n\nunit_vars: {threads: 8, batch: 512}  # c\n");
    expect_set("env: {}\n", P("env", "A"), "\"1\"", NULL, "env: {A: \"1\"}\n");
    expect_set("x: {a: 1, n: [p, q]}\n", P("x", "b", "c"), "2", NULL,
               "x: {a: 1, n: [p, q], b: {c: 2}}\n");
    expect_set("unit_vars: {\n  threads: 20,\n  batch: 512\n}\n", P("unit_vars", "cache"), "q8_0",
               PREFIX " n",
               "unit_vars: {\n  threads: 20,\n  # gpumod tune: n\n  batch: 512, cache: q8_0\n}\n");
    /* the whole document a flow mapping */
    expect_set("{a: 1, b: 2}\n", P("b"), "3", NULL, "{a: 1, b: 3}\n");
    /* a plain value that a flow mapping would split */
    expect_refused("u: {a: 1}\n", P("u", "b"), "x,y", "is not one YAML scalar in a flow mapping");
}

static void quoting(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"1", "\"1\""},
        {"8", "\"8\""},
        {"1.5", "\"1.5\""},
        {"on", "\"on\""},
        {"yes", "\"yes\""},
        {"No", "\"No\""},
        {"null", "\"null\""},
        {"~", "\"~\""},
        {"", "\"\""},
        {"y", "\"y\""},
        {"a: b", "\"a: b\""},
        {"a #b", "\"a #b\""},
        {"x,y", "\"x,y\""},
        {"{a}", "\"{a}\""},
        {" x", "\" x\""},
        {"x ", "\"x \""},
        {"-x", "\"-x\""},
        {".inf", "\".inf\""},
        {"2024-01-02", "\"2024-01-02\""},
        {"say \"hi\"\\", "\"say \\\"hi\\\"\\\\\""},
        {"a\tb\n", "\"a\\tb\\n\""},
        {"\x01", "\"\\x01\""},
        {"\xc2\x85", "\"\\N\""},
        {"caf\xc3\xa9", "\"caf\xc3\xa9\""},
        {"q8_0", "q8_0"},
        {"/srv/hf", "/srv/hf"},
        {"bf16", "bf16"},
        {"TRITON_ATTN", "TRITON_ATTN"},
        {"a b", "a b"},
        {"a  b", "\"a  b\""},
        {"v1.2-rc+3", "v1.2-rc+3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        buf b = BUF_INIT;
        yedit_quote(cases[i][0], &b);
        assert_string_equal(b.p, cases[i][1]);
        /* and it reads back as the string, in a block and a flow mapping */
        for (int flow = 0; flow < 2; flow++) {
            char *t = flow ? xasprintf("{x: %s}", b.p) : xasprintf("x: %s\n", b.p);
            ydoc doc;
            diags d = {0};
            assert_int_equal(yaml_load_string(&doc, t, strlen(t), "q", &d), 0);
            const ynode *x = ymap_get(doc.root, "x");
            assert_non_null(x);
            assert_string_equal(x->s, cases[i][0]);
            assert_true(yscalar_bool(x) < 0 && !yscalar_is_null(x));
            yaml_release(&doc);
            diags_release(&d);
            free(t);
        }
        buf_release(&b);
    }
}

static void env_string_reads_back(void **state)
{
    (void)state;
    static const char *const vals[] = {"1", "on", "yes", "null", "a: b", "x #y", "0"};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        buf q = BUF_INIT, out = BUF_INIT;
        char err[256];
        yedit_quote(vals[i], &q);
        assert_int_equal(
            yedit_set(ptext, strlen(ptext), P("env", "V"), q.p, NULL, NULL, &out, err, sizeof err),
            0);
        ydoc doc;
        diags d = {0};
        assert_int_equal(yaml_load_string(&doc, out.p, out.len, "t", &d), 0);
        const ynode *v = ymap_get(ymap_get(doc.root, "env"), "V");
        assert_string_equal(v->s, vals[i]);
        assert_false(v->plain);
        yaml_release(&doc);
        diags_release(&d);
        buf_release(&q);
        buf_release(&out);
    }
}

static void crlf_kept(void **state)
{
    (void)state;
    const char *t = "id: x\r\nunit_vars:\r\n  threads: 20  # c\r\n";
    expect_set(t, P("unit_vars", "threads"), "8", PREFIX " a",
               "id: x\r\nunit_vars:\r\n  # gpumod tune: a\r\n  threads: 8  # c\r\n");
    expect_set(t, P("unit_vars", "batch"), "512", NULL,
               "id: x\r\nunit_vars:\r\n  threads: 20  # c\r\n  batch: 512\r\n");
    expect_set(t, P("env", "A"), "b", NULL,
               "id: x\r\nunit_vars:\r\n  threads: 20  # c\r\nenv:\r\n  A: b\r\n");
    expect_set("u:\r\n  # gpumod tune: old\r\n  t: 1\r\n", P("u", "t"), "2", PREFIX " new",
               "u:\r\n  # gpumod tune: new\r\n  t: 2\r\n");
}

static void no_trailing_newline_kept(void **state)
{
    (void)state;
    expect_set("id: x\nport: 1", P("port"), "2", NULL, "id: x\nport: 2");
    expect_set("id: x\nport: 1", P("unit_vars", "threads"), "8", NULL,
               "id: x\nport: 1\nunit_vars:\n  threads: 8");
    expect_set("u:\n  a: 1", P("u", "b"), "2", "n", "u:\n  a: 1\n  # n\n  b: 2");
    expect_set("# c", P("a"), "1", NULL, "# c\na: 1");
}

static void utf8_and_bom_offsets(void **state)
{
    (void)state;
    /* libyaml's marks count characters: the splice must land on bytes */
    expect_set("\xef\xbb\xbf# caf\xc3\xa9\nname: na\xc3\xafve \xe2\x9c\x93\nport: 1  # \xc3\xbc\n",
               P("port"), "2", "\xc3\xa9t\xc3\xa9",
               "\xef\xbb\xbf# caf\xc3\xa9\nname: na\xc3\xafve \xe2\x9c\x93\n# "
               "\xc3\xa9t\xc3\xa9\nport: 2  # \xc3\xbc\n");
    expect_set("n: \xe2\x9c\x93\xe2\x9c\x93\nu: {a: \xc3\xa9, b: 1}\n", P("u", "c"), "2", NULL,
               "n: \xe2\x9c\x93\xe2\x9c\x93\nu: {a: \xc3\xa9, b: 1, c: 2}\n");
    expect_refused_n("\xff\xfe"
                     "a\0:\0 \0"
                     "1\0",
                     10, P("a"), "2", NULL, "UTF-16");
    expect_refused("a: 1\rb: 2\r", P("a"), "2", "a line ending in a bare CR");
    expect_refused("a: 1\r\nb: 2\r", P("a"), "2", "a line ending in a bare CR");
}

static void refusals(void **state)
{
    (void)state;
    expect_refused("u:\n  t: {a: 1}\n", P("u", "t"), "8",
                   "'u.t' (line 2) is a mapping, not a one-line value; edit the file by hand");
    expect_refused("u:\n  t: [1, 2]\n", P("u", "t"), "8",
                   "'u.t' (line 2) is a list, not a one-line value");
    expect_refused("u:\n  t:\n    - 1\n", P("u", "t"), "8", "'u.t' (line 3) is a list");
    expect_refused("u: [a, b]\n", P("u", "t"), "8", "'u' (line 1) is a list, not a mapping");
    expect_refused("u: 5\n", P("u", "t"), "8", "'u' (line 1) is a scalar, not a mapping");
    expect_refused("cmd: |\n  a\n  b\n", P("cmd"), "x",
                   "'cmd' (line 1) is a block scalar (|): only one-line values");
    expect_refused("cmd: >\n  a\n", P("cmd"), "x", "is a block scalar (>)");
    expect_refused("cmd: \"a\n  b\"\n", P("cmd"), "x",
                   "'cmd' (line 1) is a scalar spanning lines 1-2");
    expect_refused("cmd: a\n  b\nc: 1\n", P("cmd"), "x", "is a scalar spanning lines 1-2");
    expect_refused("base: &b 4\nthreads: *b\n", P("threads"), "8",
                   "'threads' (line 2) is an alias (*b) of a value written elsewhere");
    expect_refused("threads: &t 4\nother: *t\n", P("threads"), "8",
                   "'threads' (line 1) carries the anchor &t, so its aliases would change too");
    expect_refused("u: &u\n  t: 4\nv: *u\n", P("u", "t"), "8",
                   "'u' (line 1) carries the anchor &u");
    expect_refused("base: &b {threads: 4}\nu:\n  <<: *b\n  batch: 1\n", P("u", "threads"), "8",
                   "'u.threads' is not written in its mapping (line 3) but comes from the merge "
                   "key '<<' at line 3");
    expect_refused("k: &k t\nu:\n  *k : 4\n", P("u", "t"), "8", "comes from an alias");
    expect_refused("t: !!str 4\n", P("t"), "8",
                   "'t' (line 1) has the explicit tag tag:yaml.org,2002:str");
    expect_refused("- a\n- b\n", P("t"), "8", "the document is a list (line 1), not a mapping");
    expect_refused("just text\n", P("t"), "8", "the document is a scalar");
    expect_refused("a: [1\n", P("a"), "8", "the file is not valid YAML; fix it first (line 2");
    expect_refused("a: 1\n---\nb: 2\n", P("a"), "8", "second YAML document");
    expect_refused("a: 1\n", P("a"), "{b: 1}",
                   "value '{b: 1}' for 'a' is not one YAML scalar; quote it");
    expect_refused("a: 1\n", P("a"), "b: c", "is not one YAML scalar");
    expect_refused("a: 1\n", P("a"), "*x", "is not one YAML scalar");
    expect_refused("a: 1\n", P("a"), "8\n", "holds a line break");
    expect_refused("a: 1\n", P("a"), NULL, "is missing");
    expect_refused_n("a: 1\n", 5, P("a"), "8", "two\nlines", "the note holds a line break");
    expect_refused("a: 1\n", (const char *const[]){NULL}, "8", "an empty path");
    expect_refused("a: 1\n", P("a", ""), "8", "key 2 of the path is empty");
}

static void result_must_read_back(void **state)
{
    (void)state;
    /* a flow key without a colon: the splice cannot give it a value, and
     * the check after it says so instead of writing `{a 8}` */
    expect_refused("u: {a}\n", P("u", "a"), "8",
                   "setting 'u.a' to 8 would not read back as that value");
}

/* A splice that changed another key, or put the value elsewhere, is
 * refused by the check after it, whatever the splice code did. */
static void verify_catches_a_wrong_splice(void **state)
{
    (void)state;
    const char *before = "a: 1\nb: 2\nu:\n  t: 4\n";
    ydoc doc, vd;
    diags d = {0};
    char err[256];
    assert_int_equal(yaml_load_string(&doc, before, strlen(before), "t", &d), 0);
    assert_int_equal(parse_value(&vd, "8", false, "u.t", err, sizeof err), 0);
    const ynode *want = ymap_get(vd.root, "x");
    static const struct {
        const char *out, *needle;
    } cases[] = {
        {"a: 1\nb: 2\nu:\n  t: 8\n", NULL},
        {"a: 1\nb: 3\nu:\n  t: 8\n",
         "setting 'u.t' would change more than its value (a gpumod bug)"},
        {"a: 1\nb: 2\nu:\n  t: 8\n  s: 1\n", "would change more than its value"},
        {"a: 1\nu:\n  t: 8\n", "would change more than its value"},
        {"a: 1\nb: 2\nu:\n  t: '8'\n", "setting 'u.t' to 8 would not read back as that value"},
        {"a: 1\nb: 2\nu:\n  t: 4\nt: 8\n", "would not read back"},
        {"a: 1\nb: 2\nu:\n  t: 8\n t: 9\n",
         "setting 'u.t' to 8 would leave invalid YAML; the file is left as it was (line"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        buf out = BUF_INIT;
        buf_adds(&out, cases[i].out);
        err[0] = '\0';
        int rc = verify(&doc, &out, P("u", "t"), want, "u.t", "8", err, sizeof err);
        assert_int_equal(rc, cases[i].needle ? -1 : 0);
        if (cases[i].needle && !strstr(err, cases[i].needle)) print_message("%s\n", err);
        if (cases[i].needle) assert_non_null(strstr(err, cases[i].needle));
        buf_release(&out);
    }
    yaml_release(&vd);
    yaml_release(&doc);
    diags_release(&d);
}

static void several_at_once(void **state)
{
    (void)state;
    const yedit_op ops[] = {
        {P("unit_vars", "threads"), "8", PREFIX " threads", PREFIX},
        {P("env", "VLLM_MARLIN_USE_ATOMIC_ADD"), "\"1\"", NULL, NULL},
        {P("context_size"), "8192", NULL, NULL},
        {P("unit_vars", "threads"), "10", PREFIX " threads again", PREFIX},
    };
    buf out = BUF_INIT;
    char err[256];
    assert_int_equal(yedit_apply(ptext, strlen(ptext), ops, 4, &out, err, sizeof err), 0);
    assert_string_equal(
        out.p,
        "# a preset\nid: q   # the id\n\ncontext_size: 8192\nunit_vars:\n"
        "  # threads for llama.cpp\n  # gpumod tune: threads again\n  threads: 10   # was 20\n"
        "  batch_size: '512'\n\n# the environment\nenv:\n  HF_HOME: /srv/hf\n"
        "  VLLM_MARLIN_USE_ATOMIC_ADD: \"1\"\ncanary: true\n");
    const yedit_op bad[] = {ops[0], {P("canary", "x"), "1", NULL, NULL}};
    assert_int_equal(yedit_apply(ptext, strlen(ptext), bad, 2, &out, err, sizeof err), -1);
    assert_int_equal(out.len, 0);
    assert_non_null(strstr(err, "'canary' (line 14) is a scalar, not a mapping"));
    buf_release(&out);
}

/* --- diff ---------------------------------------------------------------- */

static char *diff_of(const char *a, const char *b)
{
    buf out = BUF_INIT;
    yedit_diff(a, strlen(a), b, strlen(b), "a/p.yaml", "b/p.yaml", &out);
    return buf_detach(&out);
}

static void expect_diff(const char *a, const char *b, const char *hunks)
{
    char *d = diff_of(a, b);
    char *want = *hunks ? xasprintf("--- a/p.yaml\n+++ b/p.yaml\n%s", hunks) : xstrdup("");
    assert_string_equal(d, want);
    free(d);
    free(want);
}

static char *numbered(int n, int changed1, int changed2)
{
    buf b = BUF_INIT;
    for (int i = 1; i <= n; i++)
        buf_printf(&b, (i == changed1 || i == changed2) ? "L%d\n" : "l%d\n", i);
    return buf_detach(&b);
}

static void diff_hunks(void **state)
{
    (void)state;
    expect_diff("a\nb\n", "a\nb\n", "");
    expect_diff("", "", "");
    char *a = numbered(20, 0, 0), *b = numbered(20, 5, 0);
    expect_diff(a, b, "@@ -2,7 +2,7 @@\n l2\n l3\n l4\n-l5\n+L5\n l6\n l7\n l8\n");
    free(b);
    b = numbered(20, 2, 18); /* far apart: two hunks, clipped at both ends */
    expect_diff(a, b,
                "@@ -1,5 +1,5 @@\n l1\n-l2\n+L2\n l3\n l4\n l5\n"
                "@@ -15,6 +15,6 @@\n l15\n l16\n l17\n-l18\n+L18\n l19\n l20\n");
    free(b);
    b = numbered(20, 5, 11); /* 5 lines between: one hunk */
    expect_diff(
        a, b,
        "@@ -2,13 +2,13 @@\n l2\n l3\n l4\n-l5\n+L5\n l6\n l7\n l8\n l9\n l10\n-l11\n+L11\n l12\n"
        " l13\n l14\n");
    free(b);
    free(a);
}

static void diff_edges(void **state)
{
    (void)state;
    expect_diff("x\ny\n", "new\nx\ny\n", "@@ -1,2 +1,3 @@\n+new\n x\n y\n");
    expect_diff("x\ny\nz\n", "x\ny\n", "@@ -1,3 +1,2 @@\n x\n y\n-z\n");
    expect_diff("x\ny\nz\n", "y\nz\n", "@@ -1,3 +1,2 @@\n-x\n y\n z\n");
    expect_diff("x\ny", "x\ny\n", "@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+y\n");
    expect_diff("x\ny", "x\nz",
                "@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+z\n"
                "\\ No newline at end of file\n");
    expect_diff("", "a\nb\n", "@@ -0,0 +1,2 @@\n+a\n+b\n");
    expect_diff("a\n", "", "@@ -1 +0,0 @@\n-a\n");
    expect_diff("a\r\nb\r\n", "a\r\nc\r\n", "@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r\n");
}

/* The diff applied to a gives b (a small patch(1) for the tests). */
static char *patch(const char *a, const char *d)
{
    buf out = BUF_INIT;
    const char *ap = a, *p = d;
    size_t aline = 0; /* lines of a consumed */
    char last = 0;
    p = strchr(p, '\n') + 1; /* --- */
    p = strchr(p, '\n') + 1; /* +++ */
    while (*p) {
        const char *nl = strchr(p, '\n'), *next = nl + 1;
        if (!strncmp(p, "@@ -", 4)) {
            size_t s = strtoul(p + 4, NULL, 10), c = 1;
            const char *comma = strchr(p + 4, ',');
            if (comma && comma < strchr(p + 4, ' ')) c = strtoul(comma + 1, NULL, 10);
            size_t first = c ? s - 1 : s;
            for (; aline < first; aline++) {
                const char *e = strchr(ap, '\n');
                size_t n = e ? (size_t)(e - ap) + 1 : strlen(ap);
                buf_add(&out, ap, n);
                ap += n;
            }
        } else if (*p == ' ' || *p == '-') {
            const char *e = strchr(ap, '\n');
            size_t n = e ? (size_t)(e - ap) + 1 : strlen(ap);
            if (*p == ' ') buf_add(&out, ap, n);
            ap += n;
            aline++;
            last = *p;
        } else if (*p == '+') {
            buf_add(&out, p + 1, (size_t)(next - p - 1));
            last = '+';
        } else if (*p == '\\' && last == '+') {
            out.p[--out.len] = '\0';
        }
        p = next;
    }
    buf_adds(&out, ap);
    return buf_detach(&out);
}

static char *random_text(unsigned *seed, int maxlines)
{
    static const char *const words[] = {"a", "b", "c", "d", "a: 1", "  b: 2"};
    buf b = BUF_INIT;
    int n = rand_r(seed) % (maxlines + 1);
    for (int i = 0; i < n; i++)
        buf_printf(&b, "%s\n", words[rand_r(seed) % 6]);
    if (b.len && rand_r(seed) % 4 == 0) b.p[--b.len] = '\0';
    return buf_detach(&b);
}

static void diff_applies_back(void **state)
{
    (void)state;
    unsigned seed = 18;
    for (int i = 0; i < 2000; i++) {
        char *a = random_text(&seed, 14), *b = random_text(&seed, 14), *d = diff_of(a, b);
        if (!strcmp(a, b)) {
            assert_string_equal(d, "");
        } else {
            char *got = patch(a, d);
            if (strcmp(got, b)) print_message("a:\n%s\nb:\n%s\ndiff:\n%s\n", a, b, d);
            assert_string_equal(got, b);
            free(got);
        }
        free(a);
        free(b);
        free(d);
    }
}

static void diff_bounded(void **state)
{
    (void)state;
    /* 3000 lines each, none alike: past Myers' bound, one block */
    buf a = BUF_INIT, b = BUF_INIT;
    for (int i = 0; i < 3000; i++) {
        buf_printf(&a, "a%d\n", i);
        buf_printf(&b, "b%d\n", i);
    }
    buf_adds(&a, "same\n");
    buf_adds(&b, "same\n");
    char *d = diff_of(a.p, b.p);
    assert_non_null(strstr(d, "@@ -1,3001 +1,3001 @@\n-a0\n"));
    char *got = patch(a.p, d);
    assert_string_equal(got, b.p);
    free(got);
    free(d);
    buf_release(&a);
    buf_release(&b);
}

static void diff_of_an_edit(void **state)
{
    (void)state;
    buf out = BUF_INIT, d = BUF_INIT;
    char err[256];
    assert_int_equal(yedit_set(ptext, strlen(ptext), P("unit_vars", "threads"), "8",
                               PREFIX " threads 8", PREFIX, &out, err, sizeof err),
                     0);
    yedit_diff(ptext, strlen(ptext), out.p, out.len, "presets/q.yaml", "presets/q.yaml (tuned)",
               &d);
    assert_string_equal(
        d.p,
        "--- presets/q.yaml\n+++ presets/q.yaml (tuned)\n@@ -4,7 +4,8 @@\n context_size: 4096\n"
        " unit_vars:\n   # threads for llama.cpp\n-  threads: 20   # was 20\n"
        "+  # gpumod tune: threads 8\n+  threads: 8   # was 20\n   batch_size: '512'\n \n"
        " # the environment\n");
    buf_release(&out);
    buf_release(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(block_value_replaced_in_place),
        cmocka_unit_test(note_added_then_replaced),
        cmocka_unit_test(missing_key_appended_to_block),
        cmocka_unit_test(missing_section_created),
        cmocka_unit_test(null_section_filled),
        cmocka_unit_test(flow_mappings),
        cmocka_unit_test(quoting),
        cmocka_unit_test(env_string_reads_back),
        cmocka_unit_test(crlf_kept),
        cmocka_unit_test(no_trailing_newline_kept),
        cmocka_unit_test(utf8_and_bom_offsets),
        cmocka_unit_test(refusals),
        cmocka_unit_test(result_must_read_back),
        cmocka_unit_test(verify_catches_a_wrong_splice),
        cmocka_unit_test(several_at_once),
        cmocka_unit_test(diff_hunks),
        cmocka_unit_test(diff_edges),
        cmocka_unit_test(diff_applies_back),
        cmocka_unit_test(diff_bounded),
        cmocka_unit_test(diff_of_an_edit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
