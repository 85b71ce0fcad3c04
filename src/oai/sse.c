/* sse.c - the text/event-stream parser of sse.h.
 *
 * Bytes are scanned for line ends in runs (memchr-like), so a feed of a
 * whole read costs one pass; a line is buffered only until its end
 * arrives.  Everything the parser keeps (the line, the data and the type)
 * counts against max_event: with no blank line, no line end or an endless
 * comment the buffers stop growing at that bound and the error is sticky
 * (max_event 0: no bound, for tests).
 * A BOM split across feeds is matched byte by byte in the line buffer,
 * whose bytes become ordinary line content when the match fails. */
#include "oai/sse.h"

#include <stdio.h>
#include <string.h>

static const unsigned char bom[3] = {0xEF, 0xBB, 0xBF};

void sse_init(sse_parser *p, size_t max_event, sse_event_fn on_event, sse_comment_fn on_comment, void *ud)
{
    memset(p, 0, sizeof *p);
    p->on_event = on_event;
    p->on_comment = on_comment;
    p->ud = ud;
    p->max_event = max_event;
    buf_init(&p->line);
    buf_init(&p->data);
    buf_init(&p->type);
}

void sse_release(sse_parser *p)
{
    buf_release(&p->line);
    buf_release(&p->data);
    buf_release(&p->type);
}

static void fail(sse_parser *p)
{
    p->failed = true;
    snprintf(p->err, sizeof p->err,
             "server-sent event larger than %zu bytes: expected a blank line to end it", p->max_event);
    buf_release(&p->line);
    buf_release(&p->data);
    buf_release(&p->type);
    p->has_data = false;
}

static bool too_big(const sse_parser *p, size_t more)
{
    return p->max_event && p->line.len + p->data.len + p->type.len + more > p->max_event;
}

static void dispatch(sse_parser *p)
{
    if (p->has_data) {
        p->n_events++;
        if (p->on_event)
            p->on_event(p->ud, p->type.len ? p->type.p : "message", p->data.p, p->data.len);
    }
    buf_clear(&p->data);
    buf_clear(&p->type);
    p->has_data = false;
}

static void field(sse_parser *p, const char *name, size_t nlen, const char *val, size_t vlen)
{
    if (nlen == 4 && memcmp(name, "data", 4) == 0) {
        if (p->has_data)
            buf_addc(&p->data, '\n');
        buf_add(&p->data, val, vlen);
        p->has_data = true;
    } else if (nlen == 5 && memcmp(name, "event", 5) == 0) {
        buf_clear(&p->type);
        buf_add(&p->type, val, vlen);
    }
    /* id, retry and unknown fields: nothing a benchmark needs */
}

static void line_done(sse_parser *p)
{
    const char *s = p->line.p;
    size_t n = p->line.len;
    if (n == 0) {
        dispatch(p);
    } else if (s[0] == ':') {
        size_t skip = 1 + (n > 1 && s[1] == ' ');
        p->n_comments++;
        if (p->on_comment)
            p->on_comment(p->ud, s + skip, n - skip);
    } else {
        const char *colon = memchr(s, ':', n);
        size_t nlen = colon ? (size_t)(colon - s) : n;
        const char *v = colon ? colon + 1 : s + n;
        size_t vlen = (size_t)(s + n - v);
        if (vlen && *v == ' ') {
            v++;
            vlen--;
        }
        field(p, s, nlen, v, vlen);
    }
    buf_clear(&p->line);
}

int sse_feed(sse_parser *p, const char *bytes, size_t n)
{
    if (p->failed)
        return -1;
    size_t i = 0;
    /* the BOM, possibly split across feeds, only at the very start */
    while (i < n && !p->started) {
        if (p->line.len < 3 && (unsigned char)bytes[i] == bom[p->line.len]) {
            buf_addc(&p->line, bytes[i++]);
            if (p->line.len == 3) {
                buf_clear(&p->line);
                p->started = true;
            }
        } else {
            p->started = true; /* a partial match stays as line content */
        }
    }
    while (i < n) {
        if (p->cr_pending) {
            p->cr_pending = false;
            if (bytes[i] == '\n') {
                i++;
                continue;
            }
        }
        size_t j = i;
        while (j < n && bytes[j] != '\n' && bytes[j] != '\r')
            j++;
        if (j > i) {
            if (too_big(p, j - i)) {
                fail(p);
                return -1;
            }
            buf_add(&p->line, bytes + i, j - i);
        }
        if (j == n)
            break;
        if (bytes[j] == '\r') {
            if (j + 1 < n) {
                if (bytes[j + 1] == '\n')
                    j++;
            } else {
                p->cr_pending = true;
            }
        }
        i = j + 1;
        line_done(p);
        if (too_big(p, 0)) { /* the joining LF of a data line at the bound */
            fail(p);
            return -1;
        }
    }
    return 0;
}

bool sse_pending(const sse_parser *p)
{
    return !p->failed && (p->line.len > 0 || p->has_data);
}

const char *sse_error(const sse_parser *p)
{
    return p->failed ? p->err : NULL;
}
