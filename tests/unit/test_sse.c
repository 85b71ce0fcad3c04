/* test_sse.c - the text/event-stream parser: every rule of sse.h (LF,
 * CRLF and CR line ends, a CR at the end of one feed and the LF at the
 * start of the next, the BOM, comments, multi-line data, the one leading
 * space, blank-line dispatch, events without data dropped, the sticky
 * max_event error, pending at end), and the recorded streams of
 * tests/fixtures/bench/streams fed in one piece, split at every position,
 * byte by byte and re-framed with CRLF and CR: always the same events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "oai/sse.h"
#include "testenv.h"

/* What the callbacks saw: "type|data" per event and "#text" per comment,
 * each followed by '\n' (data may hold LF: compare whole logs). */
typedef struct seen {
    buf log;
    int events, comments;
} seen;

static void on_event(void *ud, const char *type, const char *data, size_t len)
{
    seen *s = ud;
    assert_int_equal(strlen(data), len); /* NUL-terminated, len excludes it */
    buf_printf(&s->log, "%s|", type);
    buf_add(&s->log, data, len);
    buf_addc(&s->log, '\n');
    s->events++;
}

static void on_comment(void *ud, const char *text, size_t len)
{
    seen *s = ud;
    buf_addc(&s->log, '#');
    buf_add(&s->log, text, len);
    buf_addc(&s->log, '\n');
    s->comments++;
}

/* Parse text in pieces of `step` bytes (0: one piece); returns the log. */
static char *parse(const char *text, size_t len, size_t step, bool *pending, int *rc)
{
    seen s = {BUF_INIT, 0, 0};
    sse_parser p;
    sse_init(&p, 1 << 20, on_event, on_comment, &s);
    int r = 0;
    if (!step) step = len ? len : 1;
    for (size_t at = 0; at < len && r == 0; at += step) {
        size_t n = len - at < step ? len - at : step;
        char *piece = xmalloc(n ? n : 1); /* exactly its bytes: ASan sees over-reads */
        memcpy(piece, text + at, n);
        r = sse_feed(&p, piece, n);
        free(piece);
    }
    if (pending) *pending = sse_pending(&p);
    if (rc) *rc = r;
    assert_int_equal(p.n_events, (size_t)s.events);
    assert_int_equal(p.n_comments, (size_t)s.comments);
    sse_release(&p);
    return buf_detach(&s.log);
}

static void expect(const char *text, const char *want)
{
    bool pending;
    int rc;
    char *got = parse(text, strlen(text), 0, &pending, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(got, want);
    free(got);
    /* a byte at a time gives the same */
    got = parse(text, strlen(text), 1, NULL, NULL);
    assert_string_equal(got, want);
    free(got);
}

static void line_ends(void **state)
{
    expect("data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\n\r\n", "message|a\nmessage|b\nmessage|c\nmessage|d\n");
    /* CR then LF in one feed is one line end, not a blank line */
    expect("data: a\r\ndata: b\r\n\r\n", "message|a\nb\n");
}

static void cr_at_feed_boundary(void **state)
{
    seen s = {BUF_INIT, 0, 0};
    sse_parser p;
    sse_init(&p, 4096, on_event, NULL, &s);
    assert_int_equal(sse_feed(&p, "data: x\r", 8), 0);
    assert_int_equal(sse_feed(&p, "\ndata: y\r", 9), 0); /* LF continues the CR: no dispatch */
    assert_int_equal(s.events, 0);
    assert_int_equal(sse_feed(&p, "\n", 1), 0);
    assert_int_equal(s.events, 0);
    assert_int_equal(sse_feed(&p, "\r", 1), 0); /* blank line */
    assert_int_equal(s.events, 1);
    assert_string_equal(s.log.p, "message|x\ny\n");
    assert_false(sse_pending(&p));
    /* a CR at the end, then a non-LF byte: the byte starts the next line */
    assert_int_equal(sse_feed(&p, "data: z\r", 8), 0);
    assert_int_equal(sse_feed(&p, "\r", 1), 0);
    assert_int_equal(s.events, 2);
    assert_string_equal(s.log.p, "message|x\ny\nmessage|z\n");
    sse_release(&p);
    buf_release(&s.log);
}

static void bom(void **state)
{
    expect("\xEF\xBB\xBF" "data: a\n\n", "message|a\n");
    /* only at the very start */
    expect("data: a\n\n\xEF\xBB\xBF" "data: b\n\n", "message|a\n");
    /* a partial BOM is content: the line is the unknown field "\xEF\xBBdata" */
    expect("\xEF\xBB" "data: a\n\n", "");
    /* split across feeds */
    const char *bq = "\xEF\xBB\xBF" "data: q\n\n";
    char *got = parse(bq, strlen(bq), 1, NULL, NULL);
    assert_string_equal(got, "message|q\n");
    free(got);
}

static void comments_fields_space(void **state)
{
    expect(": ping\n:\n:x\ndata: a\n\n", "#ping\n#\n#x\nmessage|a\n");
    /* one leading space dropped, only one; no colon: field with empty value */
    expect("data:a\n\ndata:  two\n\ndata\n\n", "message|a\nmessage| two\nmessage|\n");
    /* multi-line data joined with LF; event type; id/retry/unknown ignored */
    expect("event: error\nid: 7\nretry: 100\nfoo: bar\ndata: l1\ndata:\ndata: l3\n\n", "error|l1\n\nl3\n");
    /* the type resets after dispatch */
    expect("event: x\ndata: 1\n\ndata: 2\n\n", "x|1\nmessage|2\n");
    /* "data" with a colon inside the value */
    expect("data: {\"a\":\"b: c\"}\n\n", "message|{\"a\":\"b: c\"}\n");
}

static void no_data_dropped(void **state)
{
    expect("event: x\n\nid: 1\n\n\n\ndata: y\n\n", "message|y\n");
    /* "event: x" without data: dropped, and its type does not leak */
}

static void max_event_sticky(void **state)
{
    seen s = {BUF_INIT, 0, 0};
    sse_parser p;
    sse_init(&p, 32, on_event, NULL, &s);
    assert_int_equal(sse_feed(&p, "data: 0123456789\n\n", 18), 0);
    assert_int_equal(s.events, 1);
    assert_null(sse_error(&p));
    /* a server that never sends a blank line */
    const char *three = "data: 0123456789\ndata: 0123456789\ndata: 0123456789\n";
    assert_int_equal(sse_feed(&p, three, strlen(three)), -1);
    assert_non_null(sse_error(&p));
    assert_string_equal(sse_error(&p), "server-sent event larger than 32 bytes: expected a blank line to end it");
    /* sticky: later input is ignored */
    assert_int_equal(sse_feed(&p, "\n\ndata: ok\n\n", 12), -1);
    assert_int_equal(s.events, 1);
    assert_false(sse_pending(&p));
    sse_release(&p);
    /* one endless line (no line end at all) hits the bound too */
    sse_init(&p, 32, on_event, NULL, &s);
    int rc = 0;
    for (int i = 0; i < 10 && rc == 0; i++) rc = sse_feed(&p, "aaaaaaaa", 8);
    assert_int_equal(rc, -1);
    assert_non_null(sse_error(&p));
    sse_release(&p);
    buf_release(&s.log);
}

static void pending_at_end(void **state)
{
    bool pending;
    int rc;
    char *got = parse("data: a\n\ndata: b\n", 17, 0, &pending, &rc);
    assert_string_equal(got, "message|a\n");
    assert_true(pending); /* an undispatched event */
    free(got);
    got = parse("data: a\n\ndata: par", 18, 0, &pending, &rc);
    assert_true(pending); /* half a line */
    free(got);
    got = parse("data: a\n\n", 9, 0, &pending, &rc);
    assert_false(pending);
    free(got);
    got = parse("data: a\n\n: bye\n", 15, 0, &pending, &rc);
    assert_false(pending); /* a comment leaves nothing behind */
    free(got);
}

static char *fixture(const char *name)
{
    char *rel = xasprintf("tests/fixtures/bench/streams/%s", name);
    char *path = src_path(rel);
    char *text = read_text(path);
    if (!text) fail_msg("cannot read %s", path);
    free(rel);
    free(path);
    return text;
}

/* text with every "\n" replaced by eol */
static char *reframe(const char *text, const char *eol)
{
    buf b = BUF_INIT;
    for (const char *p = text; *p; p++) {
        if (*p == '\n')
            buf_adds(&b, eol);
        else
            buf_addc(&b, *p);
    }
    return buf_detach(&b);
}

static void check_splits(const char *name, int want_events, int want_comments)
{
    char *text = fixture(name);
    size_t len = strlen(text);
    bool pending;
    int rc;
    char *whole = parse(text, len, 0, &pending, &rc);
    assert_int_equal(rc, 0);
    assert_false(pending);
    int events = 0, comments = 0;
    for (const char *l = whole; *l;) {
        if (*l == '#') comments++;
        else if (!strncmp(l, "message|", 8)) events++;
        l = strchr(l, '\n') + 1;
    }
    assert_int_equal(events, want_events);
    assert_int_equal(comments, want_comments);
    /* split in two at every position */
    for (size_t cut = 0; cut <= len; cut++) {
        seen s = {BUF_INIT, 0, 0};
        sse_parser p;
        sse_init(&p, 1 << 20, on_event, on_comment, &s);
        char *a = xmalloc(cut + 1), *b = xmalloc(len - cut + 1);
        memcpy(a, text, cut);
        memcpy(b, text + cut, len - cut);
        assert_int_equal(sse_feed(&p, a, cut), 0);
        assert_int_equal(sse_feed(&p, b, len - cut), 0);
        free(a);
        free(b);
        if (strcmp(s.log.p, whole)) fail_msg("%s split at %zu: got\n%s\nwant\n%s", name, cut, s.log.p, whole);
        assert_false(sse_pending(&p));
        sse_release(&p);
        buf_release(&s.log);
    }
    /* a byte at a time, and in 7-byte pieces */
    char *got = parse(text, len, 1, NULL, NULL);
    assert_string_equal(got, whole);
    free(got);
    got = parse(text, len, 7, NULL, NULL);
    assert_string_equal(got, whole);
    free(got);
    /* CRLF and CR framing give the same events (a byte at a time too: CR at every boundary) */
    const char *eols[] = {"\r\n", "\r"};
    for (int e = 0; e < 2; e++) {
        char *re = reframe(text, eols[e]);
        got = parse(re, strlen(re), 0, &pending, NULL);
        assert_string_equal(got, whole);
        assert_false(pending);
        free(got);
        got = parse(re, strlen(re), 1, NULL, NULL);
        assert_string_equal(got, whole);
        free(got);
        free(re);
    }
    free(whole);
    free(text);
}

static void recorded_streams(void **state)
{
    check_splits("llama-chat.sse", 8, 0);
    check_splits("llama-native-spec.sse", 6, 0);
    check_splits("vllm-chat.sse", 8, 1);
    check_splits("vllm-completions-spec.sse", 6, 0);
}

static void recorded_vllm_payloads(void **state)
{
    char *text = fixture("vllm-chat.sse");
    char *got = parse(text, strlen(text), 0, NULL, NULL);
    /* the comment arrives in order, the payloads intact, [DONE] as data */
    assert_non_null(strstr(got, "\"content\":\"Paris\""));
    assert_non_null(strstr(got, "\n#ping\nmessage|{"));
    size_t n = strlen(got);
    assert_true(n > 15);
    assert_string_equal(got + n - 15, "message|[DONE]\n");
    free(got);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(line_ends),
        cmocka_unit_test(cr_at_feed_boundary),
        cmocka_unit_test(bom),
        cmocka_unit_test(comments_fields_space),
        cmocka_unit_test(no_data_dropped),
        cmocka_unit_test(max_event_sticky),
        cmocka_unit_test(pending_at_end),
        cmocka_unit_test(recorded_streams),
        cmocka_unit_test(recorded_vllm_payloads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
