/* test_yaml.c - the YAML layer: positions, the 1.1 dialect, merges,
 * duplicates, and hostile input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/yaml.h"

static int load(ydoc *doc, diags *d, const char *text)
{
    memset(d, 0, sizeof *d);
    return yaml_load_string(doc, text, strlen(text), "t.yaml", d);
}

static void positions_are_one_based(void **state)
{
    ydoc doc;
    diags d;
    assert_int_equal(load(&doc, &d, "a: 1\nbb:\n  c: [x, y]\n"), 0);
    const ynode *bb = ymap_get(doc.root, "bb");
    assert_non_null(bb);
    const ynode *c = ymap_get(bb, "c");
    assert_int_equal(c->kind, Y_SEQ);
    assert_int_equal(c->line, 3);
    assert_int_equal(c->col, 6);
    assert_int_equal(c->items[1]->col, 10);
    assert_string_equal(c->items[1]->s, "y");
    yaml_release(&doc);
    diags_release(&d);
}

static void yaml11_booleans_plain_only(void **state)
{
    ydoc doc;
    diags d;
    assert_int_equal(load(&doc, &d, "a: yes\nb: Off\nc: 'yes'\nd: y\ne: ~\nf: \n"), 0);
    assert_int_equal(yscalar_bool(ymap_get(doc.root, "a")), 1);
    assert_int_equal(yscalar_bool(ymap_get(doc.root, "b")), 0);
    assert_int_equal(yscalar_bool(ymap_get(doc.root, "c")), -1); /* quoted: a string */
    assert_int_equal(yscalar_bool(ymap_get(doc.root, "d")), -1); /* PyYAML: y is a string */
    assert_true(yscalar_is_null(ymap_get(doc.root, "e")));
    assert_true(yscalar_is_null(ymap_get(doc.root, "f")));
    yaml_release(&doc);
    diags_release(&d);
}

static void merge_keys_explicit_wins(void **state)
{
    ydoc doc;
    diags d;
    assert_int_equal(load(&doc, &d, "base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\n"), 0);
    const ynode *m = ymap_get(doc.root, "m");
    assert_int_equal(m->npairs, 2);
    assert_string_equal(ymap_get(m, "x")->s, "1");
    assert_string_equal(ymap_get(m, "y")->s, "3");
    yaml_release(&doc);
    diags_release(&d);
}

static void merge_list_earlier_wins(void **state)
{
    ydoc doc;
    diags d;
    assert_int_equal(load(&doc, &d, "m:\n  <<: [{x: 1}, {x: 2, z: 3}]\n"), 0);
    const ynode *m = ymap_get(doc.root, "m");
    assert_string_equal(ymap_get(m, "x")->s, "1");
    assert_string_equal(ymap_get(m, "z")->s, "3");
    yaml_release(&doc);
    diags_release(&d);
}

static void merge_of_scalar_is_error(void **state)
{
    ydoc doc;
    diags d;
    assert_int_equal(load(&doc, &d, "m:\n  <<: 5\n"), -1);
    assert_int_equal(d.errors, 1);
    assert_non_null(strstr(d.v[0].msg, "merge key '<<' needs a mapping"));
    yaml_release(&doc);
    diags_release(&d);
}

static void duplicate_key_names_first_line(void **state)
{
    ydoc doc;
    diags d;
    assert_int_equal(load(&doc, &d, "a: 1\nb: 2\na: 3\n"), -1);
    assert_int_equal(d.errors, 1);
    assert_string_equal(d.v[0].msg, "duplicate key 'a' (first at line 1)");
    assert_int_equal(d.v[0].pos.line, 3);
    yaml_release(&doc);
    diags_release(&d);
}

static void syntax_error_has_position(void **state)
{
    ydoc doc;
    diags d;
    assert_int_equal(load(&doc, &d, "a: [1, 2\nb: 3\n"), -1);
    assert_int_equal(d.errors, 1);
    assert_true(d.v[0].pos.line >= 2);
    assert_non_null(strstr(d.v[0].msg, "invalid YAML"));
    yaml_release(&doc);
    diags_release(&d);
}

static void second_document_is_error(void **state)
{
    ydoc doc;
    diags d;
    assert_int_equal(load(&doc, &d, "a: 1\n---\nb: 2\n"), -1);
    assert_non_null(strstr(d.v[0].msg, "a second YAML document"));
    yaml_release(&doc);
    diags_release(&d);
}

static void non_scalar_key_is_error(void **state)
{
    ydoc doc;
    diags d;
    assert_int_equal(load(&doc, &d, "? [a, b]\n: 1\n"), -1);
    assert_non_null(strstr(d.v[0].msg, "a key must be a plain string"));
    yaml_release(&doc);
    diags_release(&d);
}

static void alias_bomb_is_bounded(void **state)
{
    char text[4096];
    size_t n = 0;
    n += (size_t)snprintf(text + n, sizeof text - n, "a: &a [x,x,x,x,x,x,x,x,x,x]\n");
    const char *names = "bcdefg";
    char prev = 'a';
    for (const char *p = names; *p; p++) {
        n += (size_t)snprintf(text + n, sizeof text - n, "%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n", *p, *p,
                              prev, prev, prev, prev, prev, prev, prev, prev, prev, prev);
        prev = *p;
    }
    ydoc doc;
    diags d;
    assert_int_equal(load(&doc, &d, text), -1);
    assert_non_null(strstr(d.v[0].msg, "nodes after alias expansion"));
    yaml_release(&doc);
    diags_release(&d);
}

static void deep_nesting_is_bounded(void **state)
{
    char text[1024];
    memset(text, '[', 200);
    text[200] = '\0';
    ydoc doc;
    diags d;
    assert_int_equal(load(&doc, &d, text), -1);
    assert_true(d.errors >= 1);
    yaml_release(&doc);
    diags_release(&d);
}

static void empty_document(void **state)
{
    ydoc doc;
    diags d;
    assert_int_equal(load(&doc, &d, ""), 0);
    assert_null(doc.root);
    yaml_release(&doc);
    diags_release(&d);
}

static void missing_file(void **state)
{
    ydoc doc;
    diags d = {0};
    assert_int_equal(yaml_load_file(&doc, "/nonexistent/x.yaml", "x.yaml", &d), -1);
    assert_non_null(strstr(d.v[0].msg, "cannot read"));
    yaml_release(&doc);
    diags_release(&d);
}

/* yaml_read_file reads straight into the buffer: all of a file, never
 * more than 4 MiB of one */
static void read_file_whole_and_bounded(void **state)
{
    char path[] = "/tmp/gpumod-test-yaml-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    char block[8192];
    memset(block, '#', sizeof block);
    for (int i = 0; i < 3; i++) assert_int_equal(write(fd, block, sizeof block), (ssize_t)sizeof block);
    assert_int_equal(write(fd, "\nid: x\n", 7), 7);
    diags d = {0};
    buf b = BUF_INIT;
    assert_int_equal(yaml_read_file(&b, path, "t.yaml", &d), 0);
    assert_int_equal(b.len, 3 * sizeof block + 7);
    assert_string_equal(b.p + 3 * sizeof block, "\nid: x\n");
    buf_release(&b);
    for (int i = 0; i < 4 * 1024 * 1024 / (int)sizeof block; i++)
        assert_int_equal(write(fd, block, sizeof block), (ssize_t)sizeof block);
    close(fd);
    assert_int_equal(yaml_read_file(&b, path, "t.yaml", &d), -1);
    assert_int_equal(d.n, 1);
    assert_string_equal(d.v[0].msg, "file larger than 4 MiB");
    buf_release(&b);
    diags_release(&d);
    unlink(path);
}

/* text -> the peek's answer and value */
static void peek_is(const char *text, int want, const char *want_val)
{
    char *v = (char *)"unset";
    int rc = yaml_peek_key(text, strlen(text), "id", &v);
    if (rc != want) fail_msg("peek of '%s': %d, expected %d", text, rc, want);
    if (want_val)
        assert_string_equal(v, want_val);
    else
        assert_null(v);
    free(v);
}

static void peek_finds_top_level_key(void **state)
{
    peek_is("id: chat\ndriver: llamacpp\n", 1, "chat");
    /* after nested mappings and lists, which are skipped */
    peek_is("name: x\nunit_vars: {a: [1, {id: no}], b: 2}\nenv:\n  id: no\nargs: [--id, no]\nid: 'late one'\n", 1,
            "late one");
    peek_is("{\"id\": flow}", 1, "flow");
    peek_is("\"id\": quoted-key\n", 1, "quoted-key");
    peek_is("id: &a anchored\n", 1, "anchored");
    /* the value as text, however the schema would judge it */
    peek_is("id: 123\n", 1, "123");
    peek_is("id:\n", 1, "");
    /* found before an error further on: the caller loads the whole file,
     * which reports it */
    peek_is("id: early\nx: [unclosed\n", 1, "early");
}

static void peek_says_absent(void **state)
{
    peek_is("", 0, NULL);
    peek_is("# only a comment\n", 0, NULL);
    peek_is("name: x\nmodel: {id: nested}\n", 0, NULL);
    peek_is("- id: in a list\n", 0, NULL);
    peek_is("just a scalar\n", 0, NULL);
}

static void peek_cannot_tell(void **state)
{
    /* a merge key or an alias may bring the key in: only the tree knows */
    peek_is("base: &b {id: merged}\n<<: *b\n", -1, NULL);
    peek_is("k: &k id\n*k : aliased-key\n", -1, NULL);
    peek_is("other: &o x\nid: *o\n", -1, NULL);
    peek_is("id: [a, list]\n", -1, NULL);
    peek_is("? [complex, key]\n: v\nid: x\n", -1, NULL);
    peek_is("name: [unclosed\nid: x\n", -1, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(positions_are_one_based),   cmocka_unit_test(yaml11_booleans_plain_only),
        cmocka_unit_test(merge_keys_explicit_wins),  cmocka_unit_test(merge_list_earlier_wins),
        cmocka_unit_test(merge_of_scalar_is_error),  cmocka_unit_test(duplicate_key_names_first_line),
        cmocka_unit_test(syntax_error_has_position), cmocka_unit_test(second_document_is_error),
        cmocka_unit_test(non_scalar_key_is_error),   cmocka_unit_test(alias_bomb_is_bounded),
        cmocka_unit_test(deep_nesting_is_bounded),   cmocka_unit_test(empty_document),
        cmocka_unit_test(missing_file),             cmocka_unit_test(peek_finds_top_level_key),
        cmocka_unit_test(peek_says_absent),         cmocka_unit_test(peek_cannot_tell),
        cmocka_unit_test(read_file_whole_and_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
