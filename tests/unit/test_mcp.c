/* test_mcp.c - the MCP server's pure parts: the JSON-RPC framing
 * (src/mcp/rpc.c: every shape of a bad message and its code), the schema
 * subset (src/mcp/schema.c, and every tool's schema parses and uses only
 * that subset), the sanitiser (src/mcp/sanitize.c: controls, escapes,
 * bidi overrides, invalid UTF-8), the rate limit (src/mcp/rate.c) and
 * which resources an event changes (src/mcp/events.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/events.h"
#include "mcp/rate.h"
#include "mcp/rpc.h"
#include "mcp/sanitize.h"
#include "mcp/schema.h"
#include "mcp/tools.h"

static rpc_msg parse(const char *s)
{
    rpc_msg m;
    cJSON *batch;
    assert_int_equal(rpc_parse_line(s, strlen(s), &m, &batch), 0);
    return m;
}

static void bad_is(const char *line, int code, const char *text)
{
    rpc_msg m = parse(line);
    assert_int_equal(m.kind, RPC_BAD);
    assert_int_equal(m.code, code);
    if (!strstr(m.message, text)) fail_msg("'%s': message '%s' lacks '%s'", line, m.message, text);
    rpc_msg_release(&m);
}

static void rpc_kinds(void **state)
{
    rpc_msg m = parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}");
    assert_int_equal(m.kind, RPC_REQUEST);
    assert_string_equal(m.method, "ping");
    assert_int_equal(m.id->valuedouble, 7);
    rpc_msg_release(&m);
    m = parse(
        "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}");
    assert_int_equal(m.kind, RPC_REQUEST);
    assert_non_null(m.params);
    rpc_msg_release(&m);
    m = parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    assert_int_equal(m.kind, RPC_NOTIFICATION);
    rpc_msg_release(&m);
    m = parse("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}");
    assert_int_equal(m.kind, RPC_RESPONSE);
    rpc_msg_release(&m);
    cJSON *batch;
    assert_int_equal(rpc_parse_line("[{}]", 4, &m, &batch), 1);
    assert_true(cJSON_IsArray(batch));
    cJSON_Delete(batch);
}

static void rpc_bad(void **state)
{
    bad_is("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":", RPC_PARSE_ERROR, "parse error");
    bad_is("not json", RPC_PARSE_ERROR, "parse error");
    bad_is("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"} x", RPC_PARSE_ERROR, "parse error");
    bad_is("{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"a\"}", RPC_PARSE_ERROR,
           "parse error");
    bad_is("\"hello\"", RPC_INVALID_REQUEST, "a JSON object");
    bad_is("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"a\"}", RPC_INVALID_REQUEST, "\"2.0\"");
    bad_is("{\"id\":1,\"method\":\"a\"}", RPC_INVALID_REQUEST, "\"2.0\"");
    bad_is("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"a\"}", RPC_INVALID_REQUEST,
           "string or an integer");
    bad_is("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"a\"}", RPC_INVALID_REQUEST,
           "string or an integer");
    bad_is("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"a\"}", RPC_INVALID_REQUEST,
           "string or an integer");
    bad_is("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}", RPC_INVALID_REQUEST, "non-empty");
    bad_is("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", RPC_INVALID_REQUEST, "non-empty");
    bad_is("{\"jsonrpc\":\"2.0\",\"id\":1}", RPC_INVALID_REQUEST, "missing");
    bad_is("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"params\":[1]}", RPC_INVALID_PARAMS,
           "an object");
    bad_is("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"extra\":1}", RPC_INVALID_REQUEST,
           "extra");
    bad_is("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"result\":{}}", RPC_INVALID_REQUEST,
           "not both");
    bad_is("{\"jsonrpc\":\"2.0\",\"result\":{}}", RPC_INVALID_REQUEST, "needs an id");
    bad_is("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{}}", RPC_INVALID_REQUEST,
           "needs an id");
    /* a raw control byte in a string, a NUL escaped */
    bad_is("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\x01\"}", RPC_PARSE_ERROR, "parse error");
    bad_is("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\\u0000b\"}", RPC_PARSE_ERROR,
           "parse error");
    /* the id is kept when it could be read, for the error's answer */
    rpc_msg m = parse("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"\"}");
    assert_non_null(m.id);
    assert_false(m.no_reply);
    rpc_msg_release(&m);
    /* a bad notification, a bad response: answered to nobody */
    m = parse("{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":[1]}");
    assert_int_equal(m.kind, RPC_BAD);
    assert_true(m.no_reply);
    rpc_msg_release(&m);
    m = parse("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":1,\"message\":\"x\"}}");
    assert_int_equal(m.kind, RPC_BAD);
    assert_true(m.no_reply);
    rpc_msg_release(&m);
    m = parse("{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"extra\":1}");
    assert_true(m.no_reply);
    rpc_msg_release(&m);
}

static void rpc_replies(void **state)
{
    cJSON *id = cJSON_CreateNumber(4);
    char *r = rpc_result(id, cJSON_CreateObject());
    assert_string_equal(r, "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}");
    free(r);
    r = rpc_error(NULL, RPC_PARSE_ERROR, "parse error: x", NULL);
    assert_string_equal(r, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                           "\"message\":\"parse error: x\"}}");
    free(r);
    r = rpc_notification("notifications/progress", NULL);
    assert_string_equal(r, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}");
    free(r);
    cJSON_Delete(id);
}

static int check(const char *schema, const char *value, char *err)
{
    cJSON *s = cJSON_Parse(schema), *v = cJSON_Parse(value);
    assert_non_null(s);
    assert_non_null(v);
    int rc = schema_check(s, v, "arguments", err, 400);
    cJSON_Delete(s);
    cJSON_Delete(v);
    return rc;
}

static void schema_rejects(const char *schema, const char *value, const char *text)
{
    char err[400];
    assert_int_equal(check(schema, value, err), -1);
    if (!strstr(err, text)) fail_msg("%s against %s: '%s' lacks '%s'", value, schema, err, text);
}

static void schema_subset(void **state)
{
    const char *obj =
        "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\",\"minLength\":1,"
        "\"maxLength\":3},\"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10},"
        "\"k\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]},\"l\":{\"type\":\"array\",\"maxItems\":"
        "2,"
        "\"items\":{\"type\":\"string\"}},\"m\":{\"type\":\"object\",\"additionalProperties\":"
        "{\"type\":\"integer\"}},\"x\":{\"type\":\"number\"},\"b\":{\"type\":\"boolean\"}},"
        "\"required\":[\"id\"],\"additionalProperties\":false}";
    char err[400];
    assert_int_equal(
        check(obj,
              "{\"id\":\"ab\",\"n\":3,\"k\":\"b\",\"l\":[\"x\"],\"m\":{\"q\":1},\"x\":1.5,"
              "\"b\":true}",
              err),
        0);
    assert_int_equal(check(obj, "{\"id\":\"\xc3\xa9\xc3\xa9\xc3\xa9\"}", err),
                     0); /* 3 characters, 6 bytes */
    schema_rejects(obj, "{}", "'id' is required");
    schema_rejects(obj, "{\"id\":\"a\",\"mode\":1}",
                   "unknown argument 'mode' (expected: id, n, k, l, m, x, b)");
    schema_rejects(obj, "{\"id\":5}", "arguments.id: expected a string, got an integer");
    schema_rejects(obj, "{\"id\":\"\"}", "shorter than 1");
    schema_rejects(obj, "{\"id\":\"abcd\"}", "longer than 3");
    schema_rejects(obj, "{\"id\":\"a\",\"n\":0}", "0 is below the minimum 1");
    schema_rejects(obj, "{\"id\":\"a\",\"n\":11}", "above the maximum 10");
    schema_rejects(obj, "{\"id\":\"a\",\"n\":2.5}", "expected an integer, got a number");
    schema_rejects(obj, "{\"id\":\"a\",\"n\":\"2\"}", "expected an integer, got a string");
    schema_rejects(obj, "{\"id\":\"a\",\"k\":\"c\"}", "\"c\" is not one of \"a\", \"b\"");
    schema_rejects(obj, "{\"id\":\"a\",\"l\":[\"x\",\"y\",\"z\"]}", "3 items, at most 2");
    schema_rejects(obj, "{\"id\":\"a\",\"l\":[\"x\",1]}", "arguments.l[1]: expected a string");
    schema_rejects(obj, "{\"id\":\"a\",\"m\":{\"q\":\"1\"}}", "arguments.m.q: expected an integer");
    schema_rejects(obj, "{\"id\":\"a\",\"b\":1}", "expected a boolean");
    schema_rejects(obj, "[]", "expected an object, got an array");
    schema_rejects("{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
                   "{\"a\":1}", "this takes no arguments");
}

/* every tool's schema is JSON, uses only the subset, and is an object
 * schema that refuses unknown arguments */
static void tool_schemas(void **state)
{
    int n = 0;
    for (const tool_def *t = mcp_tools; t->name; t++, n++) {
        cJSON *s = cJSON_Parse(t->schema);
        if (!s) fail_msg("tool %s: the schema is not JSON: %s", t->name, t->schema);
        char err[200];
        if (!schema_supported(s, err, sizeof err)) fail_msg("tool %s: %s", t->name, err);
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(s, "additionalProperties")));
        assert_string_equal(cJSON_GetObjectItem(s, "type")->valuestring, "object");
        assert_ptr_equal(tool_find(t->name), t);
        assert_true(t->mutating || (!t->destructive && !t->idempotent));
        cJSON_Delete(s);
    }
    assert_int_equal(n, 20);
    assert_null(tool_find("consult"));
    char err[200];
    cJSON *bad = cJSON_Parse("{\"type\":\"string\",\"pattern\":\"x\"}");
    assert_false(schema_supported(bad, err, sizeof err));
    assert_non_null(strstr(err, "pattern"));
    cJSON_Delete(bad);
}

static void clean_is(const char *in, const char *want)
{
    char *out = sanitize_text(in);
    assert_string_equal(out, want);
    free(out);
}

static void sanitize(void **state)
{
    clean_is("plain text\nwith\ttab", "plain text\nwith\ttab");
    clean_is("bell\a and \x01 and del\x7f", "bell and  and del");
    clean_is("red \x1b[31mERR\x1b[0m done", "red ERR done");
    clean_is("title \x1b]0;pwned\x07 end", "title  end");
    clean_is("st \x1b]8;;http://x\x1b\\link", "st link");
    clean_is("cr\rlf", "crlf");
    clean_is("caf\xc3\xa9 \xe2\x9c\x93", "caf\xc3\xa9 \xe2\x9c\x93"); /* é and a check mark stay */
    clean_is("c1 \xc2\x9b"
             "31m",
             "c1 31m"); /* U+009B (CSI) */
    clean_is("rlo \xe2\x80\xae"
             "evil",
             "rlo evil");                                               /* U+202E */
    clean_is("bad \xff\xfe utf8", "bad \xef\xbf\xbd\xef\xbf\xbd utf8"); /* invalid bytes: U+FFFD */
    clean_is("overlong \xc0\xaf", "overlong \xef\xbf\xbd\xef\xbf\xbd");
    clean_is("surrogate \xed\xa0\x80", "surrogate \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    clean_is("cut \xe2\x9c", "cut \xef\xbf\xbd\xef\xbf\xbd");
    clean_is("esc at end \x1b", "esc at end ");
    cJSON *j = cJSON_Parse("{\"a\\u001b[2Jb\":[\"x\\u0007y\",{\"k\":\"v\\u009bw\"}],\"n\":1}");
    sanitize_json(j);
    char *p = cJSON_PrintUnformatted(j);
    assert_string_equal(p, "{\"ab\":[\"xy\",{\"k\":\"vw\"}],\"n\":1}");
    free(p);
    cJSON_Delete(j);
}

static void rate(void **state)
{
    rate_limit r;
    int64_t retry = 0;
    rate_init(&r, 3, 60000);
    assert_true(rate_take(&r, 1000, &retry));
    assert_true(rate_take(&r, 2000, &retry));
    assert_true(rate_take(&r, 3000, &retry));
    assert_false(rate_take(&r, 4000, &retry));
    assert_int_equal(retry, 57000); /* the first call leaves the window at 61000 */
    assert_false(rate_take(&r, 60999, &retry));
    assert_int_equal(retry, 1);
    assert_true(rate_take(&r, 61000, &retry));
    assert_false(rate_take(&r, 61500, &retry));
    rate_init(&r, 0, 60000); /* no limit */
    for (int i = 0; i < 5000; i++)
        assert_true(rate_take(&r, i, &retry));
}

static void event_uris(void **state)
{
    strv subs = STRV_INIT, out = STRV_INIT;
    strv_push(&subs, "gpumod://modes/chat");
    strv_push(&subs, "gpumod://services/a");
    cJSON *ev = cJSON_Parse("{\"id\":3,\"service\":\"a\",\"kind\":\"state\"}");
    mcp_event_uris(ev, &subs, &out);
    const char *want[] = {"gpumod://status",     "gpumod://events", "gpumod://services",
                          "gpumod://services/a", "gpumod://modes",  "gpumod://modes/chat"};
    assert_int_equal(out.n, 6);
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(out.v[i], want[i]);
    cJSON_Delete(ev);
    strv_release(&out);
    out = (strv)STRV_INIT;
    ev = cJSON_Parse("{\"id\":4,\"service\":null,\"kind\":\"footprint\"}");
    mcp_event_uris(ev, &subs, &out);
    assert_int_equal(out.n, 2);
    cJSON_Delete(ev);
    strv_release(&out);
    strv_release(&subs);
}

static void rejects(int rc, const char *err, const char *want)
{
    assert_int_equal(rc, -1);
    if (!strstr(err, want)) fail_msg("error '%s' lacks '%s'", err, want);
}

/* the Hub tools' checks beyond the schema (src/mcp/thub.c) */
static void hub_args(void **state)
{
    (void)state;
    char e[400];
    assert_int_equal(mcp_check_repo_id("test/tiny-GGUF", e, sizeof e), 0);
    assert_int_equal(mcp_check_repo_id("Qwen/Qwen2.5-7B_x.y", e, sizeof e), 0);
    const char *bad[] = {"tiny",   "a/b/c",  "/a/b",  "a/",    "a//b",  "-a/b", "a/.b",
                         "a/b..c", "a/../b", "a b/c", "a/b?x", "a/b\n", "",     NULL};
    for (const char **b = bad; *b; b++)
        if (mcp_check_repo_id(*b, e, sizeof e) != -1) fail_msg("repo id '%s' accepted", *b);
    rejects(mcp_check_repo_id("a/../b", e, sizeof e), e, "expected ORG/REPO");
    assert_int_equal(mcp_check_gguf_path("m-Q4_K_M.gguf", e, sizeof e), 0);
    assert_int_equal(mcp_check_gguf_path("sub/m-00001-of-00002.gguf", e, sizeof e), 0);
    rejects(mcp_check_gguf_path("m.bin", e, sizeof e), e, "must end in .gguf");
    rejects(mcp_check_gguf_path("/etc/m.gguf", e, sizeof e), e, "not absolute");
    rejects(mcp_check_gguf_path("../m.gguf", e, sizeof e), e, "'..'");
    rejects(mcp_check_gguf_path("a b.gguf", e, sizeof e), e, "character");
    cJSON *a = cJSON_Parse("{\"repo_id\":\"a/b\",\"gguf_file\":\"x.gguf\",\"service_id\":\"-x\"}");
    rejects(mcp_check_preset_args(a, e, sizeof e), e, "service_id '-x'");
    cJSON_ReplaceItemInObject(a, "service_id", cJSON_CreateString("my-model-1"));
    assert_int_equal(mcp_check_preset_args(a, e, sizeof e), 0);
    const char *bad_ids[] = {"My-model", "my_model", "", "a b",
                             "a2345678901234567890123456789012345678901234567890123456789012345"};
    for (size_t i = 0; i < sizeof bad_ids / sizeof *bad_ids; i++) { /* as preset new --id */
        cJSON_ReplaceItemInObject(a, "service_id", cJSON_CreateString(bad_ids[i]));
        rejects(mcp_check_preset_args(a, e, sizeof e), e, "expected 1 to 64 of a-z");
    }
    cJSON_ReplaceItemInObject(
        a, "service_id",
        cJSON_CreateString("a234567890123456789012345678901234567890123456789012345678901234"));
    assert_int_equal(mcp_check_preset_args(a, e, sizeof e), 0);
    cJSON_Delete(a);
    a = cJSON_Parse("{\"repo_id\":\"a/b\",\"file\":\"x.safetensors\"}");
    rejects(mcp_check_pull_args(a, e, sizeof e), e, "must end in .gguf");
    cJSON_Delete(a);
    a = cJSON_Parse("{\"search\":\"--json\"}");
    rejects(mcp_check_search_args(a, e, sizeof e), e, "must not start with '-'");
    cJSON_Delete(a);
    a = cJSON_Parse("{\"limit\":5}");
    rejects(mcp_check_search_args(a, e, sizeof e), e, "give search, author or both");
    cJSON_Delete(a);
    a = cJSON_Parse("{\"author\":\"a b\"}");
    rejects(mcp_check_search_args(a, e, sizeof e), e, "author 'a b'");
    cJSON_Delete(a);
    assert_non_null(tool_find("pull_model"));
    assert_true(tool_find("pull_model")->pull_only && tool_find("pull_model")->mutating);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rpc_kinds),    cmocka_unit_test(rpc_bad),
        cmocka_unit_test(rpc_replies),  cmocka_unit_test(schema_subset),
        cmocka_unit_test(tool_schemas), cmocka_unit_test(sanitize),
        cmocka_unit_test(rate),         cmocka_unit_test(event_uris),
        cmocka_unit_test(hub_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
