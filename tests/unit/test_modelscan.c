/* test_modelscan.c - the request body scanner: every body is scanned in
 * one piece, a byte at a time and in pieces of every size 2..7, and the
 * results must agree; then what a user of the router would see: the model
 * and its span, the BOM and whitespace rules, nested and escaped keys,
 * duplicates, each kind of refusal with its exact message and offset,
 * UTF-8 and surrogates in the value, the length, depth and body limits,
 * and the "default" rewrite with its Content-Length delta. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router/modelscan.h"

typedef struct res {
    modelscan_status st;
    modelscan s;
} res;

static void scan_chunked(const char *body, size_t len, size_t limit, size_t piece, res *r)
{
    modelscan_init(&r->s, limit);
    r->st = MODELSCAN_MORE;
    for (size_t at = 0; at < len && r->st != MODELSCAN_ERROR;) {
        size_t n = piece && piece < len - at ? piece : len - at;
        char *tmp = malloc(n); /* exact size: a read past it is a valgrind/ASan report */
        memcpy(tmp, body + at, n);
        r->st = modelscan_feed(&r->s, tmp, n);
        free(tmp);
        at += n;
    }
    if (r->st != MODELSCAN_ERROR) r->st = modelscan_finish(&r->s);
}

/* Scan in one piece and check every other chunking agrees. */
static res scanl(const char *body, size_t len, size_t limit)
{
    res one, other;
    scan_chunked(body, len, limit, 0, &one);
    for (size_t piece = 1; piece <= 7; piece++) {
        scan_chunked(body, len, limit, piece, &other);
        assert_int_equal(other.st, one.st);
        assert_int_equal(other.s.err.code, one.s.err.code);
        assert_int_equal(other.s.err.offset, one.s.err.offset);
        assert_string_equal(other.s.err.msg, one.s.err.msg);
        assert_int_equal(other.s.found, one.s.found);
        if (one.s.found) {
            assert_string_equal(other.s.model, one.s.model);
            assert_int_equal(other.s.span_start, one.s.span_start);
            assert_int_equal(other.s.span_end, one.s.span_end);
        }
    }
    return one;
}

static res scan(const char *body)
{
    return scanl(body, strlen(body), 0);
}

static void expect_model(const char *body, const char *model, size_t start, size_t end)
{
    res r = scan(body);
    if (r.st != MODELSCAN_DONE) fail_msg("'%s': %s", body, r.s.err.msg);
    assert_true(r.s.found);
    assert_string_equal(r.s.model, model);
    assert_int_equal(r.s.model_len, strlen(model));
    assert_int_equal(r.s.span_start, start);
    assert_int_equal(r.s.span_end, end);
    assert_int_equal(r.s.err.code, MODELSCAN_E_NONE);
}

static void expect_err(const char *body, modelscan_code code, size_t off, const char *msg)
{
    res r = scan(body);
    if (r.st != MODELSCAN_ERROR) fail_msg("'%s' scanned, expected '%s'", body, msg);
    assert_int_equal(r.s.err.code, code);
    assert_int_equal(r.s.err.offset, off);
    assert_string_equal(r.s.err.msg, msg);
}

static void finds_model(void **state)
{
    expect_model("{\"model\":\"qwen3\"}", "qwen3", 9, 16);
    expect_model(
        "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"model\":\"q\",\"stream\":true}",
        "q", 53, 56);
    /* JSON whitespace everywhere it may be */
    expect_model(" \t\r\n{ \"model\"\n:\t\"a b\" , \"n\" : 0 } \r\n", "a b", 16, 21);
    /* every literal and number form before and after */
    expect_model(
        "{\"a\":[true,false,null,0,-0,1.5,-2e10,3E+2,4e-1,[],{}],\"model\":\"m\",\"b\":{}}", "m",
        62, 65);
}

static void bom_and_whitespace(void **state)
{
    /* one UTF-8 BOM at byte 0 is skipped; the span counts it */
    expect_model("\xef\xbb\xbf{\"model\":\"m\"}", "m", 12, 15);
    expect_model("\xef\xbb\xbf  {\"model\":\"m\"}", "m", 14, 17);
    expect_err(" \xef\xbb\xbf{\"model\":\"m\"}", MODELSCAN_E_SYNTAX, 1,
               "malformed JSON at byte 1: expected a JSON object, found byte 0xef");
    expect_err("\xef\xbb\xbf\xef\xbb\xbf{}", MODELSCAN_E_SYNTAX, 3,
               "malformed JSON at byte 3: expected a JSON object, found byte 0xef");
    expect_err("\xef\xbb{}", MODELSCAN_E_SYNTAX, 2,
               "malformed JSON at byte 2: expected the rest of a UTF-8 byte order mark (EF BB BF), "
               "found '{'");
    /* form feed and vertical tab are not JSON whitespace */
    expect_err("\f{\"model\":\"m\"}", MODELSCAN_E_SYNTAX, 0,
               "malformed JSON at byte 0: expected a JSON object, found byte 0x0c");
}

static void nested_and_quoted_model_ignored(void **state)
{
    expect_model("{\"a\":{\"model\":\"inner\"},\"model\":\"outer\"}", "outer", 31, 38);
    expect_model("{\"a\":[{\"model\":\"x\"},\"model\",{\"b\":{\"model\":1}}],\"model\":\"o\"}", "o",
                 55, 58);
    expect_model("{\"prompt\":\"say \\\"model\\\":\\\"x\\\"\",\"model\":\"o\"}", "o", 40, 43);
    /* keys that only look like it */
    expect_err("{\"models\":\"a\",\"mode\":\"b\",\"Model\":\"c\",\"modeL\":\"d\",\"\":\"e\"}",
               MODELSCAN_E_NO_MODEL, 55,
               "no \"model\" key at the top level of the JSON object (it ends at byte 55)");
    expect_err("{\"a\":{\"model\":\"inner\"}}", MODELSCAN_E_NO_MODEL, 22,
               "no \"model\" key at the top level of the JSON object (it ends at byte 22)");
    expect_err("{}", MODELSCAN_E_NO_MODEL, 1,
               "no \"model\" key at the top level of the JSON object (it ends at byte 1)");
}

static void escaped_key_is_model(void **state)
{
    /* a backend decodes the key, so the scanner does too */
    expect_model("{\"mod\\u0065l\":\"m\"}", "m", 14, 17);
    expect_model("{\"\\u006D\\u006f\\u0064\\u0065\\u006c\":\"m\"}", "m", 34, 37);
    expect_err("{\"model\":\"a\",\"m\\u006fdel\":\"b\"}", MODELSCAN_E_DUPLICATE, 13,
               "\"model\" appears twice at the top level (bytes 1 and 13): ambiguous");
    /* an escaped key that decodes to something else, a lone surrogate */
    expect_err("{\"model\\u0000\":\"a\",\"\\ud800model\":\"b\",\"model\\ud800\":\"c\"}",
               MODELSCAN_E_NO_MODEL, 54,
               "no \"model\" key at the top level of the JSON object (it ends at byte 54)");
}

static void duplicate_model(void **state)
{
    expect_err("{\"model\":\"a\",\"model\":\"b\"}", MODELSCAN_E_DUPLICATE, 13,
               "\"model\" appears twice at the top level (bytes 1 and 13): ambiguous");
    expect_err("{\"model\":\"a\",\"x\":[1],\"model\":\"a\"}", MODELSCAN_E_DUPLICATE, 21,
               "\"model\" appears twice at the top level (bytes 1 and 21): ambiguous");
    /* the first is already found when the second arrives: the router sees
     * the error in the piece that holds the second key */
    modelscan s;
    modelscan_init(&s, 0);
    assert_int_equal(modelscan_feed(&s, "{\"model\":\"a\",", 13), MODELSCAN_MORE);
    assert_true(s.found);
    assert_string_equal(s.model, "a");
    assert_int_equal(modelscan_feed(&s, "\"mode", 5), MODELSCAN_MORE);
    assert_int_equal(modelscan_feed(&s, "l\"", 2), MODELSCAN_ERROR);
    assert_int_equal(s.err.code, MODELSCAN_E_DUPLICATE);
}

static void not_an_object(void **state)
{
    expect_err("[{\"model\":\"m\"}]", MODELSCAN_E_NOT_OBJECT, 0,
               "the request body is not a JSON object: found an array at byte 0");
    expect_err("  \"model\"", MODELSCAN_E_NOT_OBJECT, 2,
               "the request body is not a JSON object: found a string at byte 2");
    expect_err("42", MODELSCAN_E_NOT_OBJECT, 0,
               "the request body is not a JSON object: found a number at byte 0");
    expect_err("-1", MODELSCAN_E_NOT_OBJECT, 0,
               "the request body is not a JSON object: found a number at byte 0");
    expect_err("true", MODELSCAN_E_NOT_OBJECT, 0,
               "the request body is not a JSON object: found a boolean at byte 0");
    expect_err("null", MODELSCAN_E_NOT_OBJECT, 0,
               "the request body is not a JSON object: found null at byte 0");
    expect_err("model=x", MODELSCAN_E_SYNTAX, 0,
               "malformed JSON at byte 0: expected a JSON object, found 'm'");
    expect_err("", MODELSCAN_E_SYNTAX, 0, "the request body is empty, expected a JSON object");
    expect_err(" \n", MODELSCAN_E_SYNTAX, 2, "the request body is empty, expected a JSON object");
}

static void model_not_a_string(void **state)
{
    expect_err("{\"model\":42}", MODELSCAN_E_MODEL_TYPE, 9,
               "\"model\" must be a string, found a number at byte 9");
    expect_err("{\"model\": null}", MODELSCAN_E_MODEL_TYPE, 10,
               "\"model\" must be a string, found null at byte 10");
    expect_err("{\"model\":false}", MODELSCAN_E_MODEL_TYPE, 9,
               "\"model\" must be a string, found a boolean at byte 9");
    expect_err("{\"model\":[\"a\"]}", MODELSCAN_E_MODEL_TYPE, 9,
               "\"model\" must be a string, found an array at byte 9");
    expect_err("{\"model\":{\"id\":\"a\"}}", MODELSCAN_E_MODEL_TYPE, 9,
               "\"model\" must be a string, found an object at byte 9");
    expect_err("{\"model\":-1}", MODELSCAN_E_MODEL_TYPE, 9,
               "\"model\" must be a string, found a number at byte 9");
    expect_err("{\"model\":}", MODELSCAN_E_SYNTAX, 9,
               "malformed JSON at byte 9: expected a value, found '}'");
}

static void malformed(void **state)
{
    expect_err("{\"model\":\"a\"", MODELSCAN_E_SYNTAX, 12,
               "malformed JSON: the body ends at byte 12, expected ',' or '}'");
    expect_err("{\"model\":\"a", MODELSCAN_E_SYNTAX, 11,
               "malformed JSON: the body ends at byte 11, expected the end of a string '\"'");
    expect_err("{\"model\":\"a\",\"x\":[1,", MODELSCAN_E_SYNTAX, 20,
               "malformed JSON: the body ends at byte 20, expected a value");
    expect_err("{\"model\":\"a\",\"x\":[1", MODELSCAN_E_SYNTAX, 19,
               "malformed JSON: the body ends at byte 19, expected ',' or ']'");
    expect_err("{\"model\":\"a\",\"x\":tr", MODELSCAN_E_SYNTAX, 19,
               "malformed JSON: the body ends at byte 19, expected 'true'");
    expect_err("{\"model\":\"a\",\"x\":\"\\u12", MODELSCAN_E_SYNTAX, 22,
               "malformed JSON: the body ends at byte 22, expected four hex digits after \\u");
    expect_err(
        "{\"model\":\"a\"} x", MODELSCAN_E_SYNTAX, 14,
        "malformed JSON at byte 14: expected the end of the body after the JSON object, found 'x'");
    expect_err(
        "{\"model\":\"a\"}{}", MODELSCAN_E_SYNTAX, 13,
        "malformed JSON at byte 13: expected the end of the body after the JSON object, found '{'");
    expect_err("{\"model\":\"a\",}", MODELSCAN_E_SYNTAX, 13,
               "malformed JSON at byte 13: expected a string key, found '}'");
    expect_err("{'model':'a'}", MODELSCAN_E_SYNTAX, 1,
               "malformed JSON at byte 1: expected a string key or '}', found '''");
    expect_err("{\"model\" \"a\"}", MODELSCAN_E_SYNTAX, 9,
               "malformed JSON at byte 9: expected ':' after an object key, found '\"'");
    expect_err("{\"model\":\"a\" \"b\":1}", MODELSCAN_E_SYNTAX, 13,
               "malformed JSON at byte 13: expected ',' or '}', found '\"'");
    expect_err("{\"x\":[1}", MODELSCAN_E_SYNTAX, 7,
               "malformed JSON at byte 7: expected ',' or ']', found '}'");
    expect_err("{\"x\":[,1]}", MODELSCAN_E_SYNTAX, 6,
               "malformed JSON at byte 6: expected a value or ']', found ','");
    expect_err("{\"x\":\"a\\x\"}", MODELSCAN_E_SYNTAX, 8,
               "malformed JSON at byte 8: expected an escape (one of \\\" \\\\ \\/ \\b \\f \\n \\r "
               "\\t \\u), "
               "found 'x'");
    expect_err("{\"x\":\"\\u12g4\"}", MODELSCAN_E_SYNTAX, 10,
               "malformed JSON at byte 10: expected four hex digits after \\u, found 'g'");
    expect_err("{\"x\":\"a\nb\"}", MODELSCAN_E_SYNTAX, 7,
               "malformed JSON at byte 7: control byte 0x0a in a string, expected it escaped");
    expect_err("{\"x\":tru}", MODELSCAN_E_SYNTAX, 8,
               "malformed JSON at byte 8: expected 'true', found '}'");
    expect_err("{\"x\":nul}", MODELSCAN_E_SYNTAX, 8,
               "malformed JSON at byte 8: expected 'null', found '}'");
    expect_err("{\"x\":truex}", MODELSCAN_E_SYNTAX, 9,
               "malformed JSON at byte 9: expected ',' or '}', found 'x'");
    expect_err("{\"x\":\x01}", MODELSCAN_E_SYNTAX, 5,
               "malformed JSON at byte 5: expected a value, found byte 0x01");
}

static void numbers(void **state)
{
    static const char *ok[] = {"0",   "-0",  "1",    "-1",   "10",  "1.0",          "-0.5",
                               "1e5", "1E5", "1e+5", "1e-5", "0e0", "123.456e-789", "-0.0E+0"};
    static const struct {
        const char *num;
        size_t off;
        const char *expect;
    } bad[] = {
        {"01", 6, "',' or '}', found '1'"},
        {"-", 6, "a digit after '-', found '}'"},
        {"-a", 6, "a digit after '-', found 'a'"},
        {"1.", 7, "a digit after '.', found '}'"},
        {".5", 5, "a value, found '.'"},
        {"+1", 5, "a value, found '+'"},
        {"1e", 7, "a digit in the exponent, found '}'"},
        {"1e+", 8, "a digit in the exponent, found '}'"},
        {"1.e5", 7, "a digit after '.', found 'e'"},
        {"0x1", 6, "',' or '}', found 'x'"},
        {"1ee", 7, "a digit in the exponent, found 'e'"},
        {"--1", 6, "a digit after '-', found '-'"},
    };
    char body[64], msg[200];
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        snprintf(body, sizeof body, "{\"n\":%s,\"model\":\"m\",\"k\":[%s]}", ok[i], ok[i]);
        res r = scan(body);
        if (r.st != MODELSCAN_DONE) fail_msg("%s: %s", ok[i], r.s.err.msg);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(body, sizeof body, "{\"n\":%s}", bad[i].num);
        snprintf(msg, sizeof msg, "malformed JSON at byte %zu: expected %s", bad[i].off,
                 bad[i].expect);
        expect_err(body, MODELSCAN_E_SYNTAX, bad[i].off, msg);
    }
}

static void model_escapes_and_utf8(void **state)
{
    expect_model("{\"model\":\"a\\\"b\\\\c\\/d\"}", "a\"b\\c/d", 9, 21);
    expect_model("{\"model\":\"\\u00e9t\\u00C9\"}", "\xc3\xa9t\xc3\x89", 9, 24);
    expect_model("{\"model\":\"\\u20ac\"}", "\xe2\x82\xac", 9, 17);
    /* a surrogate pair is one code point, 4 bytes of UTF-8 */
    expect_model("{\"model\":\"\\ud83d\\ude00\"}", "\xf0\x9f\x98\x80", 9, 23);
    expect_model("{\"model\":\"\\uDBFF\\uDFFF\"}", "\xf4\x8f\xbf\xbf", 9, 23);
    /* raw UTF-8 is kept as is */
    expect_model("{\"model\":\"mod\xc3\xa8le-\xe6\x97\xa5\"}", "mod\xc3\xa8le-\xe6\x97\xa5", 9, 22);
    expect_model("{\"model\":\"\xf0\x9f\x98\x80\"}", "\xf0\x9f\x98\x80", 9, 15);
    /* a lone surrogate elsewhere is the backend's business */
    expect_model("{\"model\":\"m\",\"x\":\"\\udc00\\ud800\"}", "m", 9, 12);

    static const char *unpaired[] = {"\\ud83d", "\\ud83dx",       "\\ud83d\\u0041",
                                     "\\ude00", "\\ud83d\\ud83d", "a\\udfff"};
    static const char *control[] = {"\\u0000", "a\\nb", "\\t", "\\u001f", "\\u007f",
                                    "\x7f",    "\\b",   "\\f", "\\r"};
    static const char *bad_utf8[] = {"\xc3\x28",     "\xc0\x80",         "\xe0\x80\x80",
                                     "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff",
                                     "\x80",         "\xe2\x82",         "\xf0\x9f\x98"};
    char body[64];
    for (size_t i = 0; i < sizeof unpaired / sizeof *unpaired; i++) {
        snprintf(body, sizeof body, "{\"model\":\"%s\"}", unpaired[i]);
        expect_err(body, MODELSCAN_E_MODEL_VALUE, 9,
                   "\"model\" at byte 9 has an unpaired UTF-16 surrogate escape");
    }
    for (size_t i = 0; i < sizeof control / sizeof *control; i++) {
        snprintf(body, sizeof body, "{\"model\":\"%s\"}", control[i]);
        expect_err(body, MODELSCAN_E_MODEL_VALUE, 9,
                   "\"model\" at byte 9 holds a control character");
    }
    for (size_t i = 0; i < sizeof bad_utf8 / sizeof *bad_utf8; i++) {
        snprintf(body, sizeof body, "{\"model\":\"%s\"}", bad_utf8[i]);
        expect_err(body, MODELSCAN_E_MODEL_VALUE, 9, "\"model\" at byte 9 is not valid UTF-8");
    }
    expect_err("{\"model\":\"\"}", MODELSCAN_E_MODEL_VALUE, 9, "\"model\" at byte 9 is empty");
}

static void model_length(void **state)
{
    char body[1000], want[300];
    memset(want, 'a', MODELSCAN_MAX_MODEL);
    want[MODELSCAN_MAX_MODEL] = '\0';
    snprintf(body, sizeof body, "{\"model\":\"%s\"}", want);
    expect_model(body, want, 9, 9 + MODELSCAN_MAX_MODEL + 2);
    snprintf(body, sizeof body, "{\"model\":\"%sa\"}", want);
    expect_err(body, MODELSCAN_E_MODEL_VALUE, 10 + MODELSCAN_MAX_MODEL,
               "\"model\" at byte 9 is longer than 256 bytes");
    /* the limit is on the unescaped bytes: 128 x \u00e9 is 256 bytes */
    char *p = body + sprintf(body, "{\"model\":\"");
    for (int i = 0; i < 128; i++)
        p += sprintf(p, "\\u00e9");
    sprintf(p, "\"}");
    res r = scan(body);
    assert_int_equal(r.st, MODELSCAN_DONE);
    assert_int_equal(r.s.model_len, 256);
    sprintf(p, "x\"}");
    expect_err(body, MODELSCAN_E_MODEL_VALUE, 10 + 128 * 6,
               "\"model\" at byte 9 is longer than 256 bytes");
    /* a long value elsewhere is fine */
    char big[5000];
    snprintf(big, sizeof big, "{\"prompt\":\"%0*d\",\"model\":\"m\"}", 4000, 7);
    expect_model(big, "m", 4021, 4024);
}

static void depth(void **state)
{
    char body[2 * MODELSCAN_MAX_DEPTH + 64];
    /* the top object is level 1: 511 arrays inside it fit */
    int n = MODELSCAN_MAX_DEPTH - 1;
    char *p = body + sprintf(body, "{\"model\":\"m\",\"a\":");
    memset(p, '[', (size_t)n), p += n;
    memset(p, ']', (size_t)n), p += n;
    strcpy(p, "}");
    res r = scan(body);
    assert_int_equal(r.st, MODELSCAN_DONE);
    p = body + sprintf(body, "{\"model\":\"m\",\"a\":");
    memset(p, '[', (size_t)n + 1), p += n + 1;
    memset(p, ']', (size_t)n + 1), p += n + 1;
    strcpy(p, "}");
    char msg[100];
    snprintf(msg, sizeof msg, "JSON nested deeper than 512 levels at byte %d", 17 + n);
    expect_err(body, MODELSCAN_E_DEPTH, (size_t)(17 + n), msg);
    /* mixed nesting closes in the right order */
    expect_model("{\"a\":[{\"b\":[[{}]]},[]],\"model\":\"m\"}", "m", 31, 34);
    expect_err("{\"a\":[{\"b\":[[{}]}]]}", MODELSCAN_E_SYNTAX, 16,
               "malformed JSON at byte 16: expected ',' or ']', found '}'");
}

static void body_limit(void **state)
{
    const char *b = "{\"model\":\"m\"}"; /* 13 bytes */
    res r = scanl(b, 13, 13);
    assert_int_equal(r.st, MODELSCAN_DONE);
    r = scanl(b, 13, 12);
    assert_int_equal(r.st, MODELSCAN_ERROR);
    assert_int_equal(r.s.err.code, MODELSCAN_E_TOO_LARGE);
    assert_int_equal(r.s.err.offset, 12);
    assert_string_equal(r.s.err.msg, "the request body is larger than the limit of 12 bytes");
    /* trailing whitespace counts too */
    r = scanl("{\"model\":\"m\"}  ", 15, 14);
    assert_int_equal(r.s.err.code, MODELSCAN_E_TOO_LARGE);
    /* an error before the limit is reported as itself */
    r = scanl("[1,2,3,4,5]", 11, 4);
    assert_int_equal(r.s.err.code, MODELSCAN_E_NOT_OBJECT);
}

static void found_early_and_sticky(void **state)
{
    modelscan s;
    modelscan_init(&s, 0);
    /* the router can route as soon as the value closes */
    assert_int_equal(modelscan_feed(&s, "{\"model\":\"ab", 12), MODELSCAN_MORE);
    assert_false(s.found);
    assert_int_equal(modelscan_feed(&s, "\"", 1), MODELSCAN_MORE);
    assert_true(s.found);
    assert_string_equal(s.model, "ab");
    assert_int_equal(s.span_start, 9);
    assert_int_equal(s.span_end, 13);
    assert_int_equal(modelscan_feed(&s, ",\"x\":1}", 7), MODELSCAN_DONE);
    assert_int_equal(modelscan_feed(&s, " \n", 2), MODELSCAN_DONE);
    assert_int_equal(modelscan_feed(&s, "", 0), MODELSCAN_DONE);
    assert_int_equal(modelscan_finish(&s), MODELSCAN_DONE);
    assert_int_equal(modelscan_finish(&s), MODELSCAN_DONE);
    /* an error sticks */
    assert_int_equal(modelscan_feed(&s, "x", 1), MODELSCAN_ERROR);
    char msg[sizeof s.err.msg];
    strcpy(msg, s.err.msg);
    assert_int_equal(modelscan_feed(&s, " ", 1), MODELSCAN_ERROR);
    assert_int_equal(modelscan_finish(&s), MODELSCAN_ERROR);
    assert_string_equal(s.err.msg, msg);
    assert_int_equal(s.err.offset, 22);
}

static void rewrite_default(void **state)
{
    const char *body = "{\"model\":\"default\",\"messages\":[]}";
    size_t len = strlen(body);
    res r = scan(body);
    assert_int_equal(r.st, MODELSCAN_DONE);
    buf out = BUF_INIT;
    int64_t delta = 99;
    /* the router has seen the whole body */
    assert_int_equal(modelscan_rewrite(&r.s, body, len, "qwen3", &out, &delta), 0);
    assert_string_equal(out.p, "{\"model\":\"qwen3\",\"messages\":[]}");
    assert_int_equal(delta, -2);
    assert_int_equal((int64_t)len + delta, (int64_t)out.len);
    /* only up to the value's end: the rest streams unchanged */
    buf_clear(&out);
    assert_int_equal(modelscan_rewrite(&r.s, body, 18, "a-longer-service", &out, &delta), 0);
    assert_string_equal(out.p, "{\"model\":\"a-longer-service\"");
    assert_int_equal(delta, 9);
    /* the id is escaped as a JSON string */
    buf_clear(&out);
    assert_int_equal(modelscan_rewrite(&r.s, body, 18, "a\"b", &out, &delta), 0);
    assert_string_equal(out.p, "{\"model\":\"a\\\"b\"");
    assert_int_equal(delta, -3);
    /* the span must be inside the bytes given */
    buf_clear(&out);
    assert_int_equal(modelscan_rewrite(&r.s, body, 17, "x", &out, &delta), -1);
    assert_int_equal(out.len, 0);
    /* with a BOM and escapes in the old value, the span is the token */
    const char *b2 = "\xef\xbb\xbf{\"model\":\"def\\u0061ult\"}";
    res r2 = scan(b2);
    assert_string_equal(r2.s.model, "default");
    buf_clear(&out);
    assert_int_equal(modelscan_rewrite(&r2.s, b2, strlen(b2), "q", &out, &delta), 0);
    assert_string_equal(out.p, "\xef\xbb\xbf{\"model\":\"q\"}");
    assert_int_equal(delta, -11);
    /* nothing found: nothing to rewrite */
    res r3 = scan("{}");
    buf_clear(&out);
    assert_int_equal(modelscan_rewrite(&r3.s, "{}", 2, "q", &out, &delta), -1);
    buf_release(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finds_model),
        cmocka_unit_test(bom_and_whitespace),
        cmocka_unit_test(nested_and_quoted_model_ignored),
        cmocka_unit_test(escaped_key_is_model),
        cmocka_unit_test(duplicate_model),
        cmocka_unit_test(not_an_object),
        cmocka_unit_test(model_not_a_string),
        cmocka_unit_test(malformed),
        cmocka_unit_test(numbers),
        cmocka_unit_test(model_escapes_and_utf8),
        cmocka_unit_test(model_length),
        cmocka_unit_test(depth),
        cmocka_unit_test(body_limit),
        cmocka_unit_test(found_early_and_sticky),
        cmocka_unit_test(rewrite_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
