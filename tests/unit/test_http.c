/* test_http.c - the strict HTTP/1.1 parser: every rule of docs/http.md,
 * accepted and refused, with the exact error code and byte offset.
 *
 * Most cases go through the fuzzer's harness (tests/fuzz/fuzz_http.c is
 * #included): each stream is parsed in one piece, one byte at a time and
 * in random pieces, the three canonical logs must be equal, and the test
 * then compares the one-piece log with the expected one.  So every case
 * here is also a split-invariance case.  The API details the log cannot
 * show (zero-copy pointers, consumption of the head, realloc between
 * calls) are tested on the parser directly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define FUZZ_HTTP_NO_MAIN
#include "../fuzz/fuzz_http.c"

#define REQ 0
#define RES FUZZ_F_RESPONSE
#define HEADRES (FUZZ_F_RESPONSE | FUZZ_F_HEAD)
#define TINY FUZZ_F_TINY

/* The canonical log of s (caller frees), after checking that one piece,
 * a byte at a time and random pieces agree. */
static char *feed_log(int flags, const char *s, size_t n)
{
    uint8_t *in = malloc(n + 1);
    in[0] = (uint8_t)flags;
    memcpy(in + 1, s, n);
    for (int seed = 0; seed < 4; seed++) {
        in[0] = (uint8_t)(flags | seed << 3);
        const char *e = http_check_input(in, n + 1, NULL);
        if (e) fail_msg("%s", e);
    }
    free(in);
    fz_run r;
    const char *e = fz_feed(s, n, flags, 0, 0, &r);
    if (e) fail_msg("%s", e);
    return buf_detach(&r.log);
}

static void expect_log(int flags, const char *s, const char *want)
{
    char *got = feed_log(flags, s, strlen(s));
    if (strcmp(got, want)) fail_msg("input:\n%s\nwant:\n%s\ngot:\n%s", s, want, got);
    free(got);
}

static void expect_err(int flags, const char *s, http_err code, unsigned long long off)
{
    char *got = feed_log(flags, s, strlen(s));
    char want[64];
    snprintf(want, sizeof want, "ERROR %d @%llu ", (int)code, off);
    if (!strstr(got, want)) fail_msg("input:\n%s\nwant '%s' in:\n%s", s, want, got);
    free(got);
}

#define H11 " HTTP/1.1\r\nHost: x\r\n"

/* ---- requests: accepted ---- */

static void test_get_views_point_into_buffer(void **state)
{
    const char data[] = "GET /v1/models?x=1 HTTP/1.1\r\nHost: localhost\r\n"
                        "X-Empty:\r\nX-Trim: \t a b \t\r\n\r\nGET";
    http_limits lim = {8192, 64, 2048, 1 << 20};
    http_parser p;
    http_parser_init(&p, HTTP_KIND_REQUEST, &lim);
    size_t used;
    view body;
    assert_int_equal(http_parse(&p, data, sizeof data - 1, &used, &body), HTTP_EV_HEAD);
    assert_int_equal(used, sizeof data - 1 - 3);
    const http_msg *m = &p.msg;
    assert_ptr_equal(m->method.p, data);
    assert_int_equal(m->method.len, 3);
    assert_ptr_equal(m->target.p, data + 4);
    assert_int_equal(m->target.len, 14);
    assert_int_equal(m->minor, 1);
    assert_int_equal(m->n_fields, 3);
    assert_ptr_equal(m->fields[0].name.p, data + 29);
    assert_int_equal(m->fields[1].value.len, 0);
    assert_int_equal(m->fields[2].value.len, 3);
    assert_memory_equal(m->fields[2].value.p, "a b", 3);
    assert_int_equal(m->framing, HTTP_FRAME_NONE);
    assert_true(m->keep_alive);
    const view *v = http_msg_field(m, "HOST", 0);
    assert_non_null(v);
    assert_memory_equal(v->p, "localhost", 9);
    assert_null(http_msg_field(m, "host", 1));
    assert_int_equal(http_parse(&p, data + used, 3, &used, &body), HTTP_EV_DONE);
    assert_int_equal(used, 0);
    http_parser_release(&p);
}

/* The head is consumed only once complete, and only offsets are kept:
 * the caller may move its buffer between calls. */
static void test_head_not_consumed_until_complete(void **state)
{
    const char *full = "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi";
    http_limits lim = {8192, 64, 2048, 1 << 20};
    http_parser p;
    http_parser_init(&p, HTTP_KIND_REQUEST, &lim);
    size_t used, n = strlen(full);
    view body;
    for (size_t k = 1; k < 48; k++) {
        char *b = malloc(k); /* a new buffer each time, as after a realloc */
        memcpy(b, full, k);
        assert_int_equal(http_parse(&p, b, k, &used, &body), HTTP_EV_NEED_MORE);
        assert_int_equal(used, 0);
        free(b);
    }
    char *b = malloc(n);
    memcpy(b, full, n);
    assert_int_equal(http_parse(&p, b, n, &used, &body), HTTP_EV_HEAD);
    assert_int_equal(used, 48);
    assert_ptr_equal(p.msg.method.p, b);
    assert_ptr_equal(p.msg.fields[1].value.p, b + 43);
    assert_int_equal(p.msg.content_length, 2);
    assert_int_equal(http_parse(&p, b + 48, 2, &used, &body), HTTP_EV_BODY);
    assert_ptr_equal(body.p, b + 48);
    assert_int_equal(body.len, 2);
    assert_int_equal(http_parse(&p, b + 50, 0, &used, &body), HTTP_EV_DONE);
    free(b);
    http_parser_release(&p);
}

static void test_content_length_body(void **state)
{
    expect_log(REQ, "POST /c" H11 "content-LENGTH: 5\r\n\r\nhello",
               "REQ 4:POST 2:/c 1.1 framing=1 cl=5 ka=1\n  4:Host 1:x\n  14:content-LENGTH 1:5\n"
               "BODY 5:hello\nDONE\nEOF 0\n");
    /* Content-Length: 0 is no body; leading zeros are digits */
    expect_log(REQ, "POST /c" H11 "Content-Length: 0\r\n\r\n",
               "REQ 4:POST 2:/c 1.1 framing=0 cl=0 ka=1\n  4:Host 1:x\n  14:Content-Length 1:0\n"
               "DONE\nEOF 0\n");
    expect_log(REQ, "POST /c" H11 "Content-Length: 003\r\n\r\nabc",
               "REQ 4:POST 2:/c 1.1 framing=1 cl=3 ka=1\n  4:Host 1:x\n  14:Content-Length 3:003\n"
               "BODY 3:abc\nDONE\nEOF 0\n");
}

static void test_chunked_with_extensions_and_trailers(void **state)
{
    expect_log(REQ,
               "POST /c" H11 "Transfer-Encoding: chunked\r\n\r\n"
               "5;name=val;q=\"a \\\"b\\\" c\"\r\nhello\r\n"
               "6;flag\r\n world\r\n"
               "A\r\n0123456789\r\n"
               "0;last=1\r\nX-Trailer: yes\r\nX-Sum:   42\r\n\r\n"
               "GET /next" H11 "\r\n",
               "REQ 4:POST 2:/c 1.1 framing=2 cl=0 ka=1\n  4:Host 1:x\n  17:Transfer-Encoding 7:chunked\n"
               "BODY 21:hello world0123456789\nDONE\n"
               "REQ 3:GET 5:/next 1.1 framing=0 cl=0 ka=1\n  4:Host 1:x\nDONE\nEOF 0\n");
    /* no trailers, upper-case hex, "CHUNKED" */
    expect_log(REQ, "POST /c" H11 "Transfer-Encoding: CHUNKED\r\n\r\n1F\r\n" "0123456789012345678901234567890\r\n0\r\n\r\n",
               "REQ 4:POST 2:/c 1.1 framing=2 cl=0 ka=1\n  4:Host 1:x\n  17:Transfer-Encoding 7:CHUNKED\n"
               "BODY 31:0123456789012345678901234567890\nDONE\nEOF 0\n");
}

static void test_pipelined_requests(void **state)
{
    expect_log(REQ,
               "GET /a" H11 "\r\n"
               "POST /b" H11 "Content-Length: 3\r\n\r\nxyz"
               "POST /c" H11 "Transfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
               "DELETE /d" H11 "Connection: close\r\n\r\n",
               "REQ 3:GET 2:/a 1.1 framing=0 cl=0 ka=1\n  4:Host 1:x\nDONE\n"
               "REQ 4:POST 2:/b 1.1 framing=1 cl=3 ka=1\n  4:Host 1:x\n  14:Content-Length 1:3\nBODY 3:xyz\nDONE\n"
               "REQ 4:POST 2:/c 1.1 framing=2 cl=0 ka=1\n  4:Host 1:x\n  17:Transfer-Encoding 7:chunked\n"
               "BODY 2:ok\nDONE\n"
               "REQ 6:DELETE 2:/d 1.1 framing=0 cl=0 ka=0\n  4:Host 1:x\n  10:Connection 5:close\nDONE\nEOF 0\n");
}

static void test_keep_alive(void **state)
{
    /* HTTP/1.0: close unless keep-alive; Host optional */
    expect_log(REQ, "GET / HTTP/1.0\r\n\r\n", "REQ 3:GET 1:/ 1.0 framing=0 cl=0 ka=0\nDONE\nEOF 0\n");
    expect_log(REQ, "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\nGET / HTTP/1.0\r\n\r\n",
               "REQ 3:GET 1:/ 1.0 framing=0 cl=0 ka=1\n  10:Connection 10:Keep-Alive\nDONE\n"
               "REQ 3:GET 1:/ 1.0 framing=0 cl=0 ka=0\nDONE\nEOF 0\n");
    /* close wins over keep-alive; tokens in a list */
    expect_log(REQ, "GET /" H11 "Connection: keep-alive, CLOSE\r\n\r\n",
               "REQ 3:GET 1:/ 1.1 framing=0 cl=0 ka=0\n  4:Host 1:x\n  10:Connection 17:keep-alive, CLOSE\n"
               "DONE\nEOF 0\n");
    /* after a message that closes the connection, more bytes are an error */
    expect_err(REQ, "GET /" H11 "Connection: close\r\n\r\nGET /", HTTP_E_AFTER_CLOSE, 46);
    expect_err(REQ, "GET / HTTP/1.0\r\n\r\nX", HTTP_E_AFTER_CLOSE, 18);
}

static void test_field_values(void **state)
{
    /* HTAB and SP inside, obs-text (0x80..0xff) accepted, OWS trimmed */
    expect_log(REQ, "GET /" H11 "A: \t\xc3\xa9 \t x\t\r\nB:\r\nC:  \r\n\r\n",
               "REQ 3:GET 1:/ 1.1 framing=0 cl=0 ka=1\n  4:Host 1:x\n  1:A 6:\xc3\xa9 \t x\n  1:B 0:\n  1:C 0:\n"
               "DONE\nEOF 0\n");
    expect_log(REQ, "M-._~!#$%&'*+^`| /" H11 "\r\n",
               "REQ 16:M-._~!#$%&'*+^`| 1:/ 1.1 framing=0 cl=0 ka=1\n  4:Host 1:x\nDONE\nEOF 0\n");
}

/* ---- requests: refused, with the code and the offset ---- */

static void test_bare_lf(void **state)
{
    expect_err(REQ, "GET / HTTP/1.1\nHost: x\r\n\r\n", HTTP_E_BARE_LF, 14);
    expect_err(REQ, "GET / HTTP/1.1\r\nHost: x\n\r\n", HTTP_E_BARE_LF, 23);
    expect_err(REQ, "GET / HTTP/1.1\r\nHost: x\r\n\n", HTTP_E_BARE_LF, 25);
    expect_err(REQ, "\nGET / HTTP/1.1\r\n", HTTP_E_BARE_LF, 0);
    /* a bare CR is a control character where it stands */
    expect_err(REQ, "GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", HTTP_E_FIELD_VALUE, 23);
    expect_err(REQ, "GET / HTTP/1.1\r\r\nHost: a\r\n\r\n", HTTP_E_REQUEST_LINE, 6);
}

static void test_field_syntax(void **state)
{
    expect_err(REQ, "GET /" H11 "X: a\r\n  b\r\n\r\n", HTTP_E_OBS_FOLD, 31);
    expect_err(REQ, "GET / HTTP/1.1\r\n\tHost: x\r\n\r\n", HTTP_E_OBS_FOLD, 16);
    expect_err(REQ, "GET /" H11 "Bad : x\r\n\r\n", HTTP_E_FIELD_NAME, 28);
    expect_err(REQ, "GET /" H11 "Bad\t: x\r\n\r\n", HTTP_E_FIELD_NAME, 28);
    expect_err(REQ, "GET /" H11 "B(d: x\r\n\r\n", HTTP_E_FIELD_NAME, 26);
    expect_err(REQ, "GET /" H11 ": x\r\n\r\n", HTTP_E_FIELD_NAME, 25);
    expect_err(REQ, "GET /" H11 "NoColon\r\n\r\n", HTTP_E_FIELD_NAME, 32);
    expect_err(REQ, "GET /" H11 "X: a\x01" "b\r\n\r\n", HTTP_E_FIELD_VALUE, 29);
    expect_err(REQ, "GET /" H11 "X: a\x7f\r\n\r\n", HTTP_E_FIELD_VALUE, 29);
}

/* The \0 case needs its length: strlen would stop at it. */
static void test_nul_in_value(void **state)
{
    static const char s[] = "GET / HTTP/1.1\r\nHost: x\r\nX: a\0b\r\n\r\n";
    char *got = feed_log(REQ, s, sizeof s - 1);
    assert_non_null(strstr(got, "ERROR 10 @29 "));
    free(got);
}

static void test_request_line(void **state)
{
    expect_err(REQ, "G(T /" H11 "\r\n", HTTP_E_METHOD, 1);
    expect_err(REQ, " / HTTP/1.1\r\nHost: x\r\n\r\n", HTTP_E_METHOD, 0);
    expect_err(REQ, "GET  /" H11 "\r\n", HTTP_E_TARGET, 4);
    expect_err(REQ, "GET /\x80" H11 "\r\n", HTTP_E_TARGET, 5);
    expect_err(REQ, "GET /a\tb" H11 "\r\n", HTTP_E_TARGET, 6);
    expect_err(REQ, "GET /\r\nHost: x\r\n\r\n", HTTP_E_REQUEST_LINE, 5);
    expect_err(REQ, "GET\r\nHost: x\r\n\r\n", HTTP_E_REQUEST_LINE, 3);
    expect_err(REQ, "GET / HTTP/1.1 \r\nHost: x\r\n\r\n", HTTP_E_REQUEST_LINE, 6);
    expect_err(REQ, "GET / http/1.1\r\nHost: x\r\n\r\n", HTTP_E_REQUEST_LINE, 6);
    expect_err(REQ, "GET / HTTP/1.10\r\nHost: x\r\n\r\n", HTTP_E_REQUEST_LINE, 6);
    expect_err(REQ, "GET / HTTP/1.2\r\nHost: x\r\n\r\n", HTTP_E_VERSION, 6);
    expect_err(REQ, "GET / HTTP/2.0\r\nHost: x\r\n\r\n", HTTP_E_VERSION, 6);
    expect_err(REQ, "\r\nGET /" H11 "\r\n", HTTP_E_REQUEST_LINE, 0);
}

static void test_host(void **state)
{
    expect_err(REQ, "GET / HTTP/1.1\r\n\r\n", HTTP_E_HOST, 16);
    expect_err(REQ, "GET /" H11 "Host: y\r\n\r\n", HTTP_E_HOST, 34);
    expect_err(REQ, "GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n", HTTP_E_HOST, 34);
}

static void test_content_length_rules(void **state)
{
    expect_err(REQ, "POST /" H11 "Content-Length: abc\r\n\r\n", HTTP_E_CONTENT_LENGTH, 42);
    expect_err(REQ, "POST /" H11 "Content-Length: -1\r\n\r\n", HTTP_E_CONTENT_LENGTH, 42);
    expect_err(REQ, "POST /" H11 "Content-Length: +1\r\n\r\n", HTTP_E_CONTENT_LENGTH, 42);
    expect_err(REQ, "POST /" H11 "Content-Length: 1 2\r\n\r\n", HTTP_E_CONTENT_LENGTH, 43);
    expect_err(REQ, "POST /" H11 "Content-Length: 5,5\r\n\r\n", HTTP_E_CONTENT_LENGTH, 43);
    expect_err(REQ, "POST /" H11 "Content-Length: 0x10\r\n\r\n", HTTP_E_CONTENT_LENGTH, 43);
    expect_err(REQ, "POST /" H11 "Content-Length:\r\n\r\n", HTTP_E_CONTENT_LENGTH, 41);
    /* 2^64 overflows; 2^64-1 parses and is then over the body limit */
    expect_err(REQ, "POST /" H11 "Content-Length: 18446744073709551616\r\n\r\n",
               HTTP_E_CONTENT_LENGTH, 61);
    expect_err(REQ, "POST /" H11 "Content-Length: 18446744073709551615\r\n\r\n",
               HTTP_E_BODY_TOO_LARGE, 64);
    /* duplicates are refused even when equal */
    expect_err(REQ, "POST /" H11 "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
               HTTP_E_DUP_LENGTH, 45);
    expect_err(REQ, "POST /" H11 "Content-Length: 5\r\ncontent-length: 6\r\n\r\nhello",
               HTTP_E_DUP_LENGTH, 45);
}

static void test_transfer_encoding_rules(void **state)
{
    expect_err(REQ, "POST /" H11 "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
               HTTP_E_LENGTH_AND_TE, 73);
    expect_err(REQ, "POST /" H11 "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
               HTTP_E_LENGTH_AND_TE, 73);
    expect_err(REQ, "POST /" H11 "Transfer-Encoding: gzip\r\n\r\n", HTTP_E_TE, 51);
    expect_err(REQ, "POST /" H11 "Transfer-Encoding: chunked, gzip\r\n\r\n", HTTP_E_TE, 54);
    expect_err(REQ, "POST /" H11 "Transfer-Encoding: chunked, chunked\r\n\r\n", HTTP_E_TE, 54);
    expect_err(REQ, "POST /" H11 "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
               HTTP_E_TE, 73);
    expect_err(REQ, "POST /" H11 "Transfer-Encoding: chunked,\r\n\r\n", HTTP_E_TE, 53);
    expect_err(REQ, "POST /" H11 "Transfer-Encoding:\r\n\r\n", HTTP_E_TE, 44);
    expect_err(REQ, "POST /" H11 "Transfer-Encoding: chunked;x=1\r\n\r\n", HTTP_E_TE, 52);
    expect_err(REQ, "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", HTTP_E_TE, 45);
    /* decodable only as chunked: 501, not 400 */
    expect_err(REQ, "POST /" H11 "Transfer-Encoding: gzip, chunked\r\n\r\n", HTTP_E_TE_UNSUPPORTED, 60);
    assert_int_equal(http_error_status(HTTP_E_TE_UNSUPPORTED), 501);
    assert_int_equal(http_error_status(HTTP_E_TE), 400);
}

static void test_chunk_framing_errors(void **state)
{
#define TE "POST /" H11 "Transfer-Encoding: chunked\r\n\r\n"
    /* TE is 56 bytes */
    expect_err(REQ, TE "zz\r\n", HTTP_E_CHUNK, 56);
    expect_err(REQ, TE "\r\n", HTTP_E_CHUNK, 56);
    expect_err(REQ, TE "5\nhello\r\n", HTTP_E_BARE_LF, 57);
    expect_err(REQ, TE "5\rhello\r\n", HTTP_E_CHUNK, 58);
    expect_err(REQ, TE "5 \r\nhello\r\n0\r\n\r\n", HTTP_E_CHUNK, 57);
    expect_err(REQ, TE "5; a=b\r\nhello\r\n0\r\n\r\n", HTTP_E_CHUNK, 58);
    expect_err(REQ, TE "5;a=\r\nhello\r\n", HTTP_E_CHUNK, 60);
    expect_err(REQ, TE "5;a=\"x\r\nhello\r\n", HTTP_E_CHUNK, 62);
    expect_err(REQ, TE "5;a=\"x\"y\r\nhello\r\n", HTTP_E_CHUNK, 63);
    expect_err(REQ, TE "5;\r\nhello\r\n", HTTP_E_CHUNK, 58);
    expect_err(REQ, TE "5\r\nhelloX\r\n", HTTP_E_CHUNK, 64);
    expect_err(REQ, TE "5\r\nhello\rX", HTTP_E_CHUNK, 65);
    expect_err(REQ, TE "5\r\nhello\r\n0\r\nX: a\r\n b\r\n\r\n", HTTP_E_OBS_FOLD, 75);
    expect_err(REQ, TE "5\r\nhello\r\n0\r\nX: a\n\r\n", HTTP_E_BARE_LF, 73);
    expect_err(REQ, TE "0\r\n\n", HTTP_E_BARE_LF, 59);
    /* a chunk-size line over HTTP_CHUNK_LINE_MAX, through a long extension */
    char s[2200];
    int n = snprintf(s, sizeof s, TE "1;x=");
    memset(s + n, 'a', 1500);
    strcpy(s + n + 1500, "\r\nz\r\n0\r\n\r\n");
    expect_err(REQ, s, HTTP_E_CHUNK, 56 + HTTP_CHUNK_LINE_MAX);
    /* truncated */
    expect_err(REQ, TE "5\r\nhel", HTTP_E_TRUNCATED, 62);
    expect_err(REQ, TE "5\r\nhello\r\n0\r\nX: y\r\n", HTTP_E_TRUNCATED, 75);
}

/* Overflow needs a body limit above 2^64 / 16: not reachable with the
 * harness's limits, so on the parser directly. */
static void test_chunk_size_overflow(void **state)
{
    const char *s = TE "10000000000000000\r\n";
    http_limits lim = {8192, 64, 2048, UINT64_MAX};
    http_parser p;
    http_parser_init(&p, HTTP_KIND_REQUEST, &lim);
    size_t used;
    view body;
    assert_int_equal(http_parse(&p, s, strlen(s), &used, &body), HTTP_EV_HEAD);
    assert_int_equal(http_parse(&p, s + used, strlen(s) - used, &used, &body), HTTP_EV_ERROR);
    assert_int_equal(p.err.code, HTTP_E_CHUNK);
    assert_string_equal(p.err.msg, "chunk size overflows");
    assert_int_equal(p.err.offset, 56 + 16);
    /* every later call answers the same error */
    assert_int_equal(http_parse(&p, "", 0, &used, &body), HTTP_EV_ERROR);
    assert_int_equal(http_parse_eof(&p), HTTP_EV_ERROR);
    http_parser_release(&p);
    /* 16 f's fit */
    http_parser_init(&p, HTTP_KIND_REQUEST, &lim);
    s = TE "ffffffffffffffff\r\nabc";
    assert_int_equal(http_parse(&p, s, strlen(s), &used, &body), HTTP_EV_HEAD);
    assert_int_equal(http_parse(&p, s + used, strlen(s) - used, &used, &body), HTTP_EV_BODY);
    assert_int_equal(body.len, 3);
    http_parser_release(&p);
#undef TE
}

/* ---- limits (TINY: head 64, fields 4, target 16, body 64) ---- */

static void test_limit_head(void **state)
{
    /* exactly 64 bytes passes */
    const char *ok = "GET / HTTP/1.1\r\nHost: x\r\nX: 01234567890123456789012345678901\r\n\r\n";
    assert_int_equal(strlen(ok), 64);
    expect_log(TINY, ok,
               "REQ 3:GET 1:/ 1.1 framing=0 cl=0 ka=1\n  4:Host 1:x\n  1:X 32:01234567890123456789012345678901\n"
               "DONE\nEOF 0\n");
    expect_err(TINY, "GET / HTTP/1.1\r\nHost: x\r\nX: 012345678901234567890123456789012\r\n\r\n",
               HTTP_E_HEAD_TOO_LARGE, 64);
    /* refused at the 65th byte, without waiting for a line end */
    expect_err(TINY, "GET / HTTP/1.1\r\nHost: x\r\nX: 0123456789012345678901234567890123456789",
               HTTP_E_HEAD_TOO_LARGE, 64);
    assert_int_equal(http_error_status(HTTP_E_HEAD_TOO_LARGE), 431);
}

static void test_limit_fields(void **state)
{
    expect_log(TINY, "GET /" H11 "A:\r\nB:\r\nC:\r\n\r\n",
               "REQ 3:GET 1:/ 1.1 framing=0 cl=0 ka=1\n  4:Host 1:x\n  1:A 0:\n  1:B 0:\n  1:C 0:\nDONE\nEOF 0\n");
    expect_err(TINY, "GET /" H11 "A:\r\nB:\r\nC:\r\nD:\r\n\r\n", HTTP_E_TOO_MANY_FIELDS, 37);
    assert_int_equal(http_error_status(HTTP_E_TOO_MANY_FIELDS), 431);
}

static void test_limit_target(void **state)
{
    expect_log(TINY, "GET /123456789abcdef" H11 "\r\n",
               "REQ 3:GET 16:/123456789abcdef 1.1 framing=0 cl=0 ka=1\n  4:Host 1:x\nDONE\nEOF 0\n");
    expect_err(TINY, "GET /123456789abcdefX" H11 "\r\n", HTTP_E_TARGET_TOO_LONG, 20);
    /* before the line ends, and before the head limit */
    expect_err(TINY, "GET /123456789abcdefX", HTTP_E_TARGET_TOO_LONG, 20);
    expect_err(TINY, "POST /123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz",
               HTTP_E_TARGET_TOO_LONG, 21);
    assert_int_equal(http_error_status(HTTP_E_TARGET_TOO_LONG), 414);
}

static void test_limit_body(void **state)
{
    char s[256];
    char body[80];
    memset(body, 'b', 65);
    body[65] = 0;
    snprintf(s, sizeof s, "POST / HTTP/1.0\r\nContent-Length: 64\r\n\r\n%.64s", body);
    char *got = feed_log(TINY, s, strlen(s));
    assert_non_null(strstr(got, "BODY 64:"));
    assert_null(strstr(got, "ERROR"));
    free(got);
    expect_err(TINY, "POST / HTTP/1.0\r\nContent-Length: 65\r\n\r\n", HTTP_E_BODY_TOO_LARGE, 37);
    /* chunked: the total counts, refused at the size digit that crosses it */
    snprintf(s, sizeof s, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "20\r\n%.32s\r\n20\r\n%.32s\r\n0\r\n\r\n", body, body);
    got = feed_log(0, s, strlen(s));
    assert_non_null(strstr(got, "BODY 64:"));
    assert_null(strstr(got, "ERROR"));
    free(got);
    snprintf(s, sizeof s, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "20\r\n%.32s\r\n21\r\n%.33s\r\n0\r\n\r\n", body, body);
    expect_err(TINY, s, HTTP_E_BODY_TOO_LARGE, 56 + 4 + 32 + 2 + 1);
    assert_int_equal(http_error_status(HTTP_E_BODY_TOO_LARGE), 413);
}

static void test_limit_trailers(void **state)
{
    /* the head is 56 bytes, "0\r\n" 3 */
    expect_err(TINY, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
                     "A:\r\nB:\r\nC:\r\nD:\r\nE:\r\n\r\n",
               HTTP_E_TOO_MANY_FIELDS, 56 + 3 + 16);
    expect_err(TINY, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
                     "X: 0123456789012345678901234567890123456789012345678901234567890123456789\r\n\r\n",
               HTTP_E_HEAD_TOO_LARGE, 56 + 3 + 64);
}

static void test_truncated(void **state)
{
    expect_err(REQ, "GET / HTTP/1.1\r\nHost: x\r\n", HTTP_E_TRUNCATED, 25);
    expect_err(REQ, "POST /" H11 "Content-Length: 5\r\n\r\nhel", HTTP_E_TRUNCATED, 50);
    expect_log(REQ, "", "EOF 0\n");
}

/* ---- responses ---- */

static void test_response_length_and_chunked(void **state)
{
    expect_log(RES, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
                    "HTTP/1.1 201 Created Now\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
               "RES 200 2:OK 1.1 framing=1 cl=2 ka=1\n  14:Content-Length 1:2\nBODY 2:hi\nDONE\n"
               "RES 201 11:Created Now 1.1 framing=2 cl=0 ka=1\n  17:Transfer-Encoding 7:chunked\n"
               "BODY 3:abc\nDONE\nEOF 0\n");
    /* empty reason after the space */
    expect_log(RES, "HTTP/1.0 404 \r\nContent-Length: 0\r\n\r\n",
               "RES 404 0: 1.0 framing=0 cl=0 ka=0\n  14:Content-Length 1:0\nDONE\nEOF 0\n");
}

static void test_response_until_close(void **state)
{
    expect_log(RES, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of this\r\n\r\nis body",
               "RES 200 2:OK 1.1 framing=3 cl=0 ka=0\n  12:Content-Type 10:text/plain\n"
               "BODY 22:all of this\r\n\r\nis body\nEOF 3\nDONE\n");
    /* and over the body limit */
    expect_err(RES | TINY,
               "HTTP/1.1 200 OK\r\n\r\n0123456789012345678901234567890123456789012345678901234567890123X",
               HTTP_E_BODY_TOO_LARGE, 19 + 64);
}

static void test_response_no_body(void **state)
{
    /* 204, 304 and 1xx have no body whatever the fields say; a 100 is
     * followed by the final response */
    expect_log(RES, "HTTP/1.1 100 Continue\r\n\r\n"
                    "HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n"
                    "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz",
               "RES 100 8:Continue 1.1 framing=0 cl=0 ka=1\nDONE\n"
               "RES 204 10:No Content 1.1 framing=0 cl=7 ka=1\n  14:Content-Length 1:7\nDONE\n"
               "RES 304 12:Not Modified 1.1 framing=0 cl=0 ka=1\n  17:Transfer-Encoding 7:chunked\nDONE\n"
               "RES 200 2:OK 1.1 framing=1 cl=1 ka=1\n  14:Content-Length 1:1\nBODY 1:z\nDONE\nEOF 0\n");
    /* HEAD: Content-Length is the GET's, no body follows (and it is not
     * held to the body limit) */
    expect_log(HEADRES | TINY, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
                               "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
               "RES 200 2:OK 1.1 framing=0 cl=1000 ka=1\n  14:Content-Length 4:1000\nDONE\n"
               "RES 200 2:OK 1.1 framing=0 cl=1000 ka=1\n  14:Content-Length 4:1000\nDONE\nEOF 0\n");
}

/* skip_body applies to one response only */
static void test_skip_body_once(void **state)
{
    const char *s = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
    http_limits lim = {8192, 64, 2048, 1 << 20};
    http_parser p;
    http_parser_init(&p, HTTP_KIND_RESPONSE, &lim);
    http_parser_skip_body(&p);
    size_t used, off = 0, n = strlen(s);
    view body;
    assert_int_equal(http_parse(&p, s, n, &used, &body), HTTP_EV_HEAD);
    assert_int_equal(p.msg.framing, HTTP_FRAME_NONE);
    off += used;
    assert_int_equal(http_parse(&p, s + off, n - off, &used, &body), HTTP_EV_DONE);
    assert_int_equal(http_parse(&p, s + off, n - off, &used, &body), HTTP_EV_HEAD);
    assert_int_equal(p.msg.framing, HTTP_FRAME_LENGTH);
    off += used;
    assert_int_equal(http_parse(&p, s + off, n - off, &used, &body), HTTP_EV_BODY);
    assert_int_equal(body.len, 3);
    http_parser_release(&p);
}

static void test_status_line(void **state)
{
    expect_err(RES, "HTTP/1.1 200\r\n\r\n", HTTP_E_STATUS_LINE, 12);
    expect_err(RES, "HTTP/1.1 20 OK\r\n\r\n", HTTP_E_STATUS_LINE, 12);
    expect_err(RES, "HTTP/1.1 2x0 OK\r\n\r\n", HTTP_E_STATUS, 10);
    expect_err(RES, "HTTP/1.1 099 Low\r\n\r\n", HTTP_E_STATUS, 9);
    expect_err(RES, "HTTP/1.1 600 High\r\n\r\n", HTTP_E_STATUS, 9);
    expect_err(RES, "HTTP/1.1 200 O\x01K\r\n\r\n", HTTP_E_STATUS_LINE, 14);
    expect_err(RES, "HTTP/2 200 OK\r\n\r\n", HTTP_E_STATUS_LINE, 0);
    expect_err(RES, "HTTP/1.2 200 OK\r\n\r\n", HTTP_E_VERSION, 0);
    expect_err(RES, "HTTP/1.1\r\n\r\n", HTTP_E_STATUS_LINE, 8);
    expect_err(RES, "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", HTTP_E_BARE_LF, 15);
    expect_err(RES, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", HTTP_E_DUP_LENGTH, 36);
    expect_err(RES, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nx", HTTP_E_TE, 42);
}

static void test_error_status_map(void **state)
{
    assert_int_equal(http_error_status(HTTP_E_BARE_LF), 400);
    assert_int_equal(http_error_status(HTTP_E_VERSION), 505);
    assert_int_equal(http_error_status(HTTP_E_DUP_LENGTH), 400);
    assert_int_equal(http_error_status(HTTP_E_LENGTH_AND_TE), 400);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_views_point_into_buffer),
        cmocka_unit_test(test_head_not_consumed_until_complete),
        cmocka_unit_test(test_content_length_body),
        cmocka_unit_test(test_chunked_with_extensions_and_trailers),
        cmocka_unit_test(test_pipelined_requests),
        cmocka_unit_test(test_keep_alive),
        cmocka_unit_test(test_field_values),
        cmocka_unit_test(test_bare_lf),
        cmocka_unit_test(test_field_syntax),
        cmocka_unit_test(test_nul_in_value),
        cmocka_unit_test(test_request_line),
        cmocka_unit_test(test_host),
        cmocka_unit_test(test_content_length_rules),
        cmocka_unit_test(test_transfer_encoding_rules),
        cmocka_unit_test(test_chunk_framing_errors),
        cmocka_unit_test(test_chunk_size_overflow),
        cmocka_unit_test(test_limit_head),
        cmocka_unit_test(test_limit_fields),
        cmocka_unit_test(test_limit_target),
        cmocka_unit_test(test_limit_body),
        cmocka_unit_test(test_limit_trailers),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_response_length_and_chunked),
        cmocka_unit_test(test_response_until_close),
        cmocka_unit_test(test_response_no_body),
        cmocka_unit_test(test_skip_body_once),
        cmocka_unit_test(test_status_line),
        cmocka_unit_test(test_error_status_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
