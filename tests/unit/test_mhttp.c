/* test_mhttp.c - the models helper's HTTP client's header reading
 * (src/models/http.c): Content-Range digits only (no sign, no space, no
 * overflow, start <= end < total); ETags without quotes, a weak one
 * keeping its W/; Link rel="next" and one too long to keep; which URLs
 * may be fetched (https, http on loopback only); origins; the Hub's
 * status texts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "../../src/models/http.c"

static mhttp_reply cr(const char *v)
{
    mhttp_reply r;
    memset(&r, 0, sizeof r);
    r.range_start = r.range_end = r.range_total = MHTTP_UNKNOWN;
    content_range(&r, v);
    return r;
}

static void content_ranges(void **state)
{
    (void)state;
    mhttp_reply r = cr("bytes 0-99/1000");
    assert_true(r.range_start == 0 && r.range_end == 99 && r.range_total == 1000);
    r = cr("bytes 5-9/*");
    assert_true(r.range_start == 5 && r.range_end == 9 && r.range_total == MHTTP_UNKNOWN);
    r = cr("bytes */1000");
    assert_true(r.range_start == MHTTP_UNKNOWN && r.range_total == 1000);
    static const char *const bad[] = {"bytes -1-99/1000",
                                      "bytes 0-99/+1000",
                                      "bytes 0- 99/1000",
                                      "bytes 100-99/1000",
                                      "bytes 0-1000/1000",
                                      "bytes 0-99/1000x",
                                      "items 0-99/1000",
                                      "bytes 0-99",
                                      "bytes 0-99/*x",
                                      "bytes 9-5/*",
                                      "bytes 0-99/99999999999999999999999",
                                      NULL};
    for (const char *const *b = bad; *b; b++) {
        r = cr(*b);
        assert_true(r.range_start == MHTTP_UNKNOWN);
        assert_true(r.range_total == MHTTP_UNKNOWN);
    }
}

static void etags(void **state)
{
    (void)state;
    char out[160];
    etag_value("\"abc\"", 5, true, out, sizeof out);
    assert_string_equal(out, "abc");
    etag_value("W/\"abc\"  ", 9, true, out, sizeof out);
    assert_string_equal(out, "W/abc");
    etag_value("W/\"abc\"", 7, false, out, sizeof out);
    assert_string_equal(out, "abc");
}

static void links(void **state)
{
    (void)state;
    char out[64] = "";
    bool over = false;
    const char *v = "<https://h/a?cursor=1>; rel=\"prev\", <https://h/b?cursor=2>; rel=\"next\"";
    link_next(v, strlen(v), out, sizeof out, &over);
    assert_string_equal(out, "https://h/b?cursor=2");
    assert_false(over);
    char longv[200];
    snprintf(longv, sizeof longv, "<https://h/%0100d>; rel=\"next\"", 0);
    out[0] = 0;
    link_next(longv, strlen(longv), out, sizeof out, &over);
    assert_true(over);
    assert_string_equal(out, "");
}

static void urls(void **state)
{
    (void)state;
    char err[512];
    assert_int_equal(mhttp_url_ok("https://huggingface.co/x", err, sizeof err), 0);
    assert_int_equal(mhttp_url_ok("http://127.0.0.2:9/x", err, sizeof err), 0);
    assert_int_equal(mhttp_url_ok("http://localhost/x", err, sizeof err), 0);
    assert_int_equal(mhttp_url_ok("http://[::1]:8/x", err, sizeof err), 0);
    assert_int_equal(mhttp_url_ok("http://128.0.0.1/x", err, sizeof err), -1);
    assert_non_null(strstr(err, "http:// is accepted only for loopback addresses"));
    assert_int_equal(mhttp_url_ok("http://127.0.0.1.evil.example/x", err, sizeof err), -1);
    assert_int_equal(mhttp_url_ok("file:///etc/passwd", err, sizeof err), -1);
    assert_non_null(strstr(err, "expected https://"));
    assert_int_equal(mhttp_url_ok("ftp://h.example/x", err, sizeof err), -1);
    assert_non_null(strstr(err, "the scheme must be https"));
    assert_int_equal(mhttp_url_ok("not a url", err, sizeof err), -1);
    char o[512];
    assert_int_equal(mhttp_origin("HTTPS://Hub.Example/a/b?c", o, sizeof o), 0);
    assert_string_equal(o, "https://hub.example:443");
    assert_int_equal(mhttp_origin("http://127.0.0.1:8080/x", o, sizeof o), 0);
    assert_string_equal(o, "http://127.0.0.1:8080");
    assert_null(mhttp_status_text(206, ""));
    assert_non_null(strstr(mhttp_status_text(401, "GatedRepo"), "gated"));
    assert_non_null(strstr(mhttp_status_text(401, ""), "HF_TOKEN"));
    assert_string_equal(mhttp_status_text(404, ""), "not found");
}

static void shown_urls(void **state)
{
    (void)state;
    char out[64];
    url_show("https://cdn/x.gguf?X-Amz-Signature=secret", out, sizeof out);
    assert_string_equal(out, "https://cdn/x.gguf");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(content_ranges), cmocka_unit_test(etags),      cmocka_unit_test(links),
        cmocka_unit_test(urls),           cmocka_unit_test(shown_urls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
