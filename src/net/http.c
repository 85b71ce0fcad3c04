/* http.c - the strict HTTP/1.1 message parser (see http.h for the API and
 * docs/http.md for the rules and the divergences from llhttp).
 *
 * Two scanners.  Sections that the caller must keep contiguous (the head,
 * a chunked body's trailer section) go through a line scanner that keeps
 * only offsets and resumes where the previous call stopped; each line is
 * validated whole once its CRLF is in.  The chunk framing in between goes
 * through a byte-at-a-time state machine, because its bytes are consumed
 * as they come and may be split anywhere.
 *
 * Every error is detected at the byte where a byte-at-a-time feed would
 * detect it (limits at the first byte over the limit, line errors at the
 * line's LF), so the error and its offset do not depend on how the input
 * was split: the fuzzer checks exactly that. */
#include "net/http.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum {
    ST_HEAD,        /* scanning a head that starts at data[0] */
    ST_NOBODY,      /* head reported, DONE next */
    ST_LENGTH,      /* Content-Length body, p->remaining left */
    ST_CHUNK,       /* chunk framing, p->chunk_state */
    ST_TRAILERS,    /* scanning a trailer section that starts at data[0] */
    ST_UNTIL_CLOSE, /* response body up to EOF */
    ST_CLOSED,      /* after a message that closes the connection */
    ST_ERROR,
};

enum {
    CH_SIZE,       /* first hex digit */
    CH_SIZE_MORE,  /* more hex digits, ';' or CR */
    CH_EXT_NAME0,  /* after ';': first tchar of the extension name */
    CH_EXT_NAME,   /* tchar, '=', ';' or CR */
    CH_EXT_VAL0,   /* after '=': a token or a quoted-string */
    CH_EXT_TOKEN,  /* tchar, ';' or CR */
    CH_EXT_QUOTED, /* inside the quotes */
    CH_EXT_ESC,    /* after a backslash */
    CH_EXT_QEND,   /* after the closing quote: ';' or CR */
    CH_SIZE_LF,    /* LF after the size line */
    CH_DATA,
    CH_DATA_CR,
    CH_DATA_LF,
};

/* RFC 9110 5.6.2 tchar */
static const unsigned char tchar[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1,
    ['+'] = 1, ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1,
    ['~'] = 1,
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1,
    ['7'] = 1, ['8'] = 1, ['9'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1,
    ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1,
    ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1,
    ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1,
    ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1,
    ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1,
    ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

static bool is_tchar(unsigned char c)
{
    return tchar[c];
}

/* field-content: VCHAR, SP, HTAB and obs-text (RFC 9110 5.5) */
static bool is_field_char(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Set the error at data offset `off` of the current call. */
static http_event fail(http_parser *p, http_err code, const char *msg, size_t off)
{
    p->err.code = code;
    p->err.msg = msg;
    p->err.offset = p->pos + off;
    p->state = ST_ERROR;
    return HTTP_EV_ERROR;
}

static void section_reset(http_parser *p)
{
    p->scan = p->line = p->sp1 = p->sp2 = p->first_end = p->n_lines = 0;
}

/* Per message: everything but the limits, the kind and the storage. */
static void message_reset(http_parser *p)
{
    http_field *fields = p->msg.fields;
    memset(&p->msg, 0, sizeof p->msg);
    p->msg.fields = fields;
    section_reset(p);
    p->n_length = p->n_host = 0;
    p->te_other = p->te_chunked = p->conn_close = p->conn_keep_alive = false;
    p->remaining = p->body_total = p->chunk_size = 0;
    p->chunk_state = CH_SIZE;
    p->chunk_line = 0;
}

void http_parser_init(http_parser *p, http_kind kind, const http_limits *lim)
{
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->lim = *lim;
    /* offsets are kept as uint32 */
    if (p->lim.max_head > UINT32_MAX) p->lim.max_head = UINT32_MAX;
    if (p->lim.max_fields == 0) p->lim.max_fields = 1;
    p->msg.fields = xcalloc(p->lim.max_fields, sizeof *p->msg.fields);
    p->spans = xcalloc(p->lim.max_fields, sizeof *p->spans);
    message_reset(p);
    p->state = ST_HEAD;
}

void http_parser_release(http_parser *p)
{
    free(p->msg.fields);
    free(p->spans);
    p->msg.fields = NULL;
    p->spans = NULL;
}

void http_parser_skip_body(http_parser *p)
{
    p->skip_body = true;
}

int http_error_status(http_err code)
{
    switch (code) {
    case HTTP_E_VERSION: return 505;
    case HTTP_E_TE_UNSUPPORTED: return 501;
    case HTTP_E_HEAD_TOO_LARGE:
    case HTTP_E_TOO_MANY_FIELDS: return 431;
    case HTTP_E_TARGET_TOO_LONG: return 414;
    case HTTP_E_BODY_TOO_LARGE: return 413;
    default: return 400;
    }
}

const view *http_msg_field(const http_msg *m, const char *name, size_t n)
{
    for (size_t i = 0; i < m->n_fields; i++)
        if (view_ieq(m->fields[i].name, name) && n-- == 0)
            return &m->fields[i].value;
    return NULL;
}

/* "HTTP/1.0" or "HTTP/1.1": the minor version; -2 for another HTTP/d.d
 * (505), -1 for anything else. */
static int parse_version(const char *s, size_t n)
{
    if (n != 8 || memcmp(s, "HTTP/", 5) || s[6] != '.') return -1;
    if (s[5] < '0' || s[5] > '9' || s[7] < '0' || s[7] > '9') return -1;
    if (s[5] == '1' && (s[7] == '0' || s[7] == '1')) return s[7] - '0';
    return -2;
}

/* request-line = method SP request-target SP HTTP-version, [0,e) */
static http_event request_line(http_parser *p, const char *d, size_t e)
{
    if (!p->sp1) return fail(p, HTTP_E_REQUEST_LINE, "request line without a target", e);
    size_t m_end = p->sp1 - 1;
    if (m_end == 0) return fail(p, HTTP_E_METHOD, "empty method", 0);
    for (size_t i = 0; i < m_end; i++)
        if (!is_tchar((unsigned char)d[i])) return fail(p, HTTP_E_METHOD, "method is not a token", i);
    if (!p->sp2) return fail(p, HTTP_E_REQUEST_LINE, "request line without a version", e);
    size_t t = p->sp1, t_end = p->sp2 - 1;
    if (t_end == t) return fail(p, HTTP_E_TARGET, "empty request target", t);
    for (size_t i = t; i < t_end; i++) {
        unsigned char c = (unsigned char)d[i];
        if (c < 0x21 || c > 0x7e) return fail(p, HTTP_E_TARGET, "invalid byte in request target", i);
    }
    int minor = parse_version(d + p->sp2, e - p->sp2);
    if (minor == -2) return fail(p, HTTP_E_VERSION, "unsupported http version", p->sp2);
    if (minor < 0) return fail(p, HTTP_E_REQUEST_LINE, "malformed http version", p->sp2);
    p->msg.minor = minor;
    p->first_end = e;
    return HTTP_EV_NEED_MORE;
}

/* status-line = HTTP-version SP 3DIGIT SP [ reason-phrase ], [0,e) */
static http_event status_line(http_parser *p, const char *d, size_t e)
{
    if (!p->sp1) return fail(p, HTTP_E_STATUS_LINE, "status line without a status code", e);
    int minor = parse_version(d, p->sp1 - 1);
    if (minor == -2) return fail(p, HTTP_E_VERSION, "unsupported http version", 0);
    if (minor < 0) return fail(p, HTTP_E_STATUS_LINE, "malformed http version", 0);
    size_t s = p->sp1;
    if (e < s + 4 || d[s + 3] != ' ')
        return fail(p, HTTP_E_STATUS_LINE, "status code not followed by a space", s + 3 < e ? s + 3 : e);
    int code = 0;
    for (size_t i = s; i < s + 3; i++) {
        if (d[i] < '0' || d[i] > '9') return fail(p, HTTP_E_STATUS, "status code is not 3 digits", i);
        code = code * 10 + (d[i] - '0');
    }
    if (code < 100 || code > 599) return fail(p, HTTP_E_STATUS, "status code out of 100..599", s);
    for (size_t i = s + 4; i < e; i++)
        if (!is_field_char((unsigned char)d[i]))
            return fail(p, HTTP_E_STATUS_LINE, "control character in reason phrase", i);
    p->msg.minor = minor;
    p->msg.status = code;
    p->first_end = e;
    return HTTP_EV_NEED_MORE;
}

/* Comma-separated tokens of a Connection value. */
static void connection_tokens(http_parser *p, const char *v, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t a = i;
        while (i < n && v[i] != ',') i++;
        size_t b = i++;
        while (a < b && is_ows(v[a])) a++;
        while (b > a && is_ows(v[b - 1])) b--;
        if (view_ieq((view){v + a, b - a}, "close")) p->conn_close = true;
        if (view_ieq((view){v + a, b - a}, "keep-alive")) p->conn_keep_alive = true;
    }
}

/* Transfer-Encoding elements, in order across field lines: only
 * "chunked", once and last, is supported. */
static http_event te_codings(http_parser *p, const char *v, size_t n, size_t off)
{
    size_t i = 0;
    do {
        size_t a = i;
        while (i < n && v[i] != ',') i++;
        size_t b = i++;
        while (a < b && is_ows(v[a])) a++;
        while (b > a && is_ows(v[b - 1])) b--;
        if (a == b) return fail(p, HTTP_E_TE, "empty transfer coding", off + a);
        for (size_t k = a; k < b; k++)
            if (!is_tchar((unsigned char)v[k]))
                return fail(p, HTTP_E_TE, "transfer coding is not a token", off + k);
        if (p->te_chunked) return fail(p, HTTP_E_TE, "chunked is not the final transfer coding", off + a);
        if (view_ieq((view){v + a, b - a}, "chunked"))
            p->te_chunked = true;
        else
            p->te_other = true; /* a coding we cannot decode */
    } while (i <= n);
    return HTTP_EV_NEED_MORE;
}

static http_event field_line(http_parser *p, const char *d, size_t a, size_t e, bool trailer)
{
    if (is_ows(d[a])) return fail(p, HTTP_E_OBS_FOLD, "line folding (obs-fold)", a);
    size_t c = a;
    while (c < e && is_tchar((unsigned char)d[c])) c++;
    if (c == e) return fail(p, HTTP_E_FIELD_NAME, "field line without a colon", e);
    if (d[c] != ':') {
        if (is_ows(d[c])) return fail(p, HTTP_E_FIELD_NAME, "whitespace before the colon", c);
        return fail(p, HTTP_E_FIELD_NAME, "field name is not a token", c);
    }
    if (c == a) return fail(p, HTTP_E_FIELD_NAME, "empty field name", a);
    size_t v = c + 1, ve = e;
    for (size_t i = v; i < e; i++)
        if (!is_field_char((unsigned char)d[i]))
            return fail(p, HTTP_E_FIELD_VALUE, "control character in field value", i);
    while (v < ve && is_ows(d[v])) v++;
    while (ve > v && is_ows(d[ve - 1])) ve--;

    size_t count = trailer ? p->n_lines - 1 : p->msg.n_fields;
    if (count >= p->lim.max_fields) return fail(p, HTTP_E_TOO_MANY_FIELDS, "too many field lines", a);
    if (trailer) return HTTP_EV_NEED_MORE; /* validated, bounded, dropped */
    p->spans[p->msg.n_fields++] = (struct http_span){(uint32_t)a, (uint32_t)(c - a), (uint32_t)v,
                                                     (uint32_t)(ve - v)};

    const char *name = d + a, *val = d + v;
    size_t nlen = c - a, vlen = ve - v;
    if (view_ieq((view){name, nlen}, "content-length")) {
        if (p->n_length++) return fail(p, HTTP_E_DUP_LENGTH, "duplicate content-length", a);
        if (vlen == 0) return fail(p, HTTP_E_CONTENT_LENGTH, "empty content-length", v);
        uint64_t n = 0;
        for (size_t i = 0; i < vlen; i++) {
            if (val[i] < '0' || val[i] > '9')
                return fail(p, HTTP_E_CONTENT_LENGTH, "content-length is not a number", v + i);
            uint64_t digit = (uint64_t)(val[i] - '0');
            if (n > (UINT64_MAX - digit) / 10)
                return fail(p, HTTP_E_CONTENT_LENGTH, "content-length overflows", v + i);
            n = n * 10 + digit;
        }
        p->msg.content_length = n;
    } else if (view_ieq((view){name, nlen}, "transfer-encoding")) {
        if (te_codings(p, val, vlen, v) == HTTP_EV_ERROR) return HTTP_EV_ERROR;
    } else if (view_ieq((view){name, nlen}, "connection")) {
        connection_tokens(p, val, vlen);
    } else if (view_ieq((view){name, nlen}, "host")) {
        p->n_host++;
    }
    return HTTP_EV_NEED_MORE;
}

/* The first line's spaces, searched incrementally over [from, to): a
 * start line fed a byte at a time is still scanned once. */
static void first_line_spaces(http_parser *p, const char *d, size_t from, size_t to)
{
    for (size_t i = from; i < to && !p->sp2; i++) {
        if (d[i] != ' ') continue;
        if (!p->sp1)
            p->sp1 = i + 1;
        else
            p->sp2 = i + 1;
    }
}

/* Scan the section at d[0..len) (the head, or trailers when `trailer`)
 * from where the previous call stopped.  `k` is d's offset in the call's
 * data (for error offsets).  1 with *section_len when its empty line is
 * in, 0 for more bytes, -1 on error. */
static int scan_section(http_parser *p, const char *d, size_t len, size_t k, bool trailer,
                        size_t *section_len)
{
    bool head = !trailer;
    while (p->scan < len) {
        const char *lf = memchr(d + p->scan, '\n', len - p->scan);
        size_t stop = lf ? (size_t)(lf - d) : len;
        size_t end = lf ? stop + 1 : len;

        /* limits first, at the first byte over them, whatever the split */
        size_t off414 = SIZE_MAX, off431 = SIZE_MAX;
        if (head && p->n_lines == 0 && p->kind == HTTP_KIND_REQUEST) {
            first_line_spaces(p, d, p->scan, stop);
            if (p->sp1) {
                size_t t_end = p->sp2 ? p->sp2 - 1 : stop;
                if (t_end - p->sp1 > p->lim.max_target) off414 = p->sp1 + p->lim.max_target;
            }
        } else if (head && p->n_lines == 0) {
            first_line_spaces(p, d, p->scan, stop);
        }
        if (end > p->lim.max_head) off431 = p->lim.max_head;
        if (off414 != SIZE_MAX && off414 <= off431) {
            fail(p, HTTP_E_TARGET_TOO_LONG, "request target too long", k + off414);
            return -1;
        }
        if (off431 != SIZE_MAX) {
            fail(p, HTTP_E_HEAD_TOO_LARGE, trailer ? "trailer section too large" : "header section too large",
                 k + off431);
            return -1;
        }
        if (!lf) {
            p->scan = len;
            return 0;
        }
        if (stop == p->line || d[stop - 1] != '\r') {
            fail(p, HTTP_E_BARE_LF, "bare lf line ending", k + stop);
            return -1;
        }
        size_t a = p->line, e = stop - 1;
        p->n_lines++;
        p->scan = p->line = stop + 1;
        if (head && p->n_lines == 1) {
            if (a == e) {
                fail(p, HTTP_E_REQUEST_LINE, p->kind == HTTP_KIND_REQUEST
                                                 ? "empty line before the request line"
                                                 : "empty line before the status line",
                     k + a);
                return -1;
            }
            http_event ev = p->kind == HTTP_KIND_REQUEST ? request_line(p, d, e) : status_line(p, d, e);
            if (ev == HTTP_EV_ERROR) {
                p->err.offset += k;
                return -1;
            }
            continue;
        }
        if (a == e) {
            *section_len = stop + 1;
            return 1;
        }
        if (field_line(p, d, a, e, trailer) == HTTP_EV_ERROR) {
            p->err.offset += k;
            return -1;
        }
    }
    return 0;
}

/* The head is in d[0..n): views, framing, keep-alive. */
static http_event head_done(http_parser *p, const char *d, size_t n)
{
    http_msg *m = &p->msg;
    m->head_len = n;
    size_t crlf = n - 2;
    if (p->kind == HTTP_KIND_REQUEST) {
        m->method = (view){d, p->sp1 - 1};
        m->target = (view){d + p->sp1, p->sp2 - 1 - p->sp1};
    } else {
        m->reason = (view){d + p->sp1 + 4, p->first_end - p->sp1 - 4};
    }
    for (size_t i = 0; i < m->n_fields; i++) {
        struct http_span *s = &p->spans[i];
        m->fields[i].name = (view){d + s->name_off, s->name_len};
        m->fields[i].value = (view){d + s->val_off, s->val_len};
    }

    bool te = p->te_other || p->te_chunked;
    if (p->kind == HTTP_KIND_REQUEST && m->minor == 1 && p->n_host == 0)
        return fail(p, HTTP_E_HOST, "http/1.1 request without host", crlf);
    if (p->n_host > 1) return fail(p, HTTP_E_HOST, "duplicate host", crlf);
    if (te && m->minor == 0)
        return fail(p, HTTP_E_TE, "transfer-encoding in an http/1.0 message", crlf);
    if (te && p->n_length)
        return fail(p, HTTP_E_LENGTH_AND_TE, "content-length with transfer-encoding", crlf);
    if (te && !p->te_chunked)
        return fail(p, HTTP_E_TE, "chunked is not the final transfer coding", crlf);
    if (te && p->te_other)
        return fail(p, HTTP_E_TE_UNSUPPORTED, "unsupported transfer coding", crlf);

    bool nobody = p->kind == HTTP_KIND_RESPONSE &&
                  (p->skip_body || m->status < 200 || m->status == 204 || m->status == 304);
    if (nobody)
        m->framing = HTTP_FRAME_NONE;
    else if (te)
        m->framing = HTTP_FRAME_CHUNKED;
    else if (p->n_length)
        m->framing = m->content_length ? HTTP_FRAME_LENGTH : HTTP_FRAME_NONE;
    else
        m->framing = p->kind == HTTP_KIND_RESPONSE ? HTTP_FRAME_UNTIL_CLOSE : HTTP_FRAME_NONE;
    if (m->framing == HTTP_FRAME_LENGTH && m->content_length > p->lim.max_body)
        return fail(p, HTTP_E_BODY_TOO_LARGE, "content-length over the body limit", crlf);

    m->keep_alive = !p->conn_close && (m->minor == 1 || p->conn_keep_alive) &&
                    m->framing != HTTP_FRAME_UNTIL_CLOSE;
    switch (m->framing) {
    case HTTP_FRAME_NONE: p->state = ST_NOBODY; break;
    case HTTP_FRAME_LENGTH:
        p->state = ST_LENGTH;
        p->remaining = m->content_length;
        break;
    case HTTP_FRAME_CHUNKED: p->state = ST_CHUNK; break;
    case HTTP_FRAME_UNTIL_CLOSE: p->state = ST_UNTIL_CLOSE; break;
    }
    return HTTP_EV_HEAD;
}

static http_event message_done(http_parser *p)
{
    bool ka = p->msg.keep_alive;
    p->skip_body = false;
    p->state = ka ? ST_HEAD : ST_CLOSED;
    /* the head's views stay in p->msg until the next head starts */
    section_reset(p);
    return HTTP_EV_DONE;
}

/* The chunk framing, a byte at a time, from d[0]; stops at data (BODY),
 * at the trailer section or at the end of d. */
static http_event chunked(http_parser *p, const char *d, size_t len, size_t *used, view *body)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)d[i];
        int st = p->chunk_state;
        if (st == CH_DATA) {
            size_t n = len - i < p->remaining ? len - i : (size_t)p->remaining;
            *body = (view){d + i, n};
            p->remaining -= n;
            if (!p->remaining) p->chunk_state = CH_DATA_CR;
            *used = i + n;
            return HTTP_EV_BODY;
        }
        if (st == CH_DATA_CR || st == CH_DATA_LF) {
            if (c != (st == CH_DATA_CR ? '\r' : '\n'))
                return fail(p, HTTP_E_CHUNK, "chunk data not followed by crlf", i);
            p->chunk_state = st == CH_DATA_CR ? CH_DATA_LF : CH_SIZE;
            p->chunk_line = 0;
            p->chunk_size = 0;
            i++;
            continue;
        }
        if (st == CH_SIZE_LF) {
            if (c != '\n') return fail(p, HTTP_E_CHUNK, "cr without lf after the chunk size", i);
            i++;
            if (p->chunk_size == 0) {
                /* last-chunk: the trailer section, scanned like a head */
                p->state = ST_TRAILERS;
                section_reset(p);
                *used = i;
                return HTTP_EV_NEED_MORE; /* the caller is called back by http_parse */
            }
            p->remaining = p->chunk_size;
            p->chunk_state = CH_DATA;
            continue;
        }
        /* the chunk-size line */
        if (c == '\n') return fail(p, HTTP_E_BARE_LF, "bare lf line ending", i);
        if (c == '\r') {
            if (st == CH_SIZE || st == CH_EXT_NAME0 || st == CH_EXT_VAL0 || st == CH_EXT_QUOTED ||
                st == CH_EXT_ESC)
                return fail(p, HTTP_E_CHUNK, "malformed chunk size line", i);
            p->chunk_state = CH_SIZE_LF;
            i++;
            continue;
        }
        if (++p->chunk_line > HTTP_CHUNK_LINE_MAX)
            return fail(p, HTTP_E_CHUNK, "chunk size line too long", i);
        switch (st) {
        case CH_SIZE:
        case CH_SIZE_MORE: {
            int h = hex_value(c);
            if (h < 0) {
                if (st == CH_SIZE_MORE && c == ';') {
                    p->chunk_state = CH_EXT_NAME0;
                    break;
                }
                return fail(p, HTTP_E_CHUNK, "invalid chunk size", i);
            }
            if (p->chunk_size > (UINT64_MAX >> 4)) return fail(p, HTTP_E_CHUNK, "chunk size overflows", i);
            p->chunk_size = p->chunk_size * 16 + (uint64_t)h;
            if (p->chunk_size > p->lim.max_body - p->body_total)
                return fail(p, HTTP_E_BODY_TOO_LARGE, "chunked body over the body limit", i);
            p->chunk_state = CH_SIZE_MORE;
            break;
        }
        case CH_EXT_NAME0:
            if (!is_tchar(c)) return fail(p, HTTP_E_CHUNK, "chunk extension name is not a token", i);
            p->chunk_state = CH_EXT_NAME;
            break;
        case CH_EXT_NAME:
        case CH_EXT_TOKEN:
            if (c == ';')
                p->chunk_state = CH_EXT_NAME0;
            else if (c == '=' && st == CH_EXT_NAME)
                p->chunk_state = CH_EXT_VAL0;
            else if (!is_tchar(c))
                return fail(p, HTTP_E_CHUNK, "malformed chunk extension", i);
            break;
        case CH_EXT_VAL0:
            if (c == '"')
                p->chunk_state = CH_EXT_QUOTED;
            else if (is_tchar(c))
                p->chunk_state = CH_EXT_TOKEN;
            else
                return fail(p, HTTP_E_CHUNK, "malformed chunk extension value", i);
            break;
        case CH_EXT_QUOTED:
            if (c == '"')
                p->chunk_state = CH_EXT_QEND;
            else if (c == '\\')
                p->chunk_state = CH_EXT_ESC;
            else if (!is_field_char(c))
                return fail(p, HTTP_E_CHUNK, "control character in chunk extension", i);
            break;
        case CH_EXT_ESC:
            if (!is_field_char(c)) return fail(p, HTTP_E_CHUNK, "control character in chunk extension", i);
            p->chunk_state = CH_EXT_QUOTED;
            break;
        case CH_EXT_QEND:
            if (c != ';') return fail(p, HTTP_E_CHUNK, "malformed chunk extension", i);
            p->chunk_state = CH_EXT_NAME0;
            break;
        }
        i++;
    }
    *used = len;
    return HTTP_EV_NEED_MORE;
}

http_event http_parse(http_parser *p, const char *data, size_t len, size_t *used, view *body)
{
    *used = 0;
    *body = (view){NULL, 0};
    http_event ev = HTTP_EV_NEED_MORE;
    size_t k = 0, n;

    switch (p->state) {
    case ST_ERROR: return HTTP_EV_ERROR;
    case ST_CLOSED:
        if (len) return fail(p, HTTP_E_AFTER_CLOSE, "data after the last message of the connection", 0);
        return HTTP_EV_NEED_MORE;
    case ST_HEAD: {
        if (p->scan == 0 && p->n_lines == 0) message_reset(p);
        int r = scan_section(p, data, len, 0, false, &n);
        if (r < 0) return HTTP_EV_ERROR;
        if (r == 0) return HTTP_EV_NEED_MORE;
        ev = head_done(p, data, n);
        if (ev == HTTP_EV_HEAD) {
            *used = n;
            p->pos += n;
        }
        return ev;
    }
    case ST_NOBODY: return message_done(p);
    case ST_LENGTH:
        if (!p->remaining) return message_done(p);
        if (!len) return HTTP_EV_NEED_MORE;
        n = len < p->remaining ? len : (size_t)p->remaining;
        p->remaining -= n;
        *body = (view){data, n};
        *used = n;
        p->pos += n;
        return HTTP_EV_BODY;
    case ST_UNTIL_CLOSE:
        if (!len) return HTTP_EV_NEED_MORE;
        /* what fits is reported first, so the error does not depend on
         * how the bytes were split */
        if (p->body_total == p->lim.max_body)
            return fail(p, HTTP_E_BODY_TOO_LARGE, "response body over the body limit", 0);
        n = len < p->lim.max_body - p->body_total ? len : (size_t)(p->lim.max_body - p->body_total);
        p->body_total += n;
        *body = (view){data, n};
        *used = n;
        p->pos += n;
        return HTTP_EV_BODY;
    case ST_CHUNK:
        ev = chunked(p, data, len, &k, body);
        if (ev == HTTP_EV_BODY) p->body_total += body->len;
        if (ev == HTTP_EV_ERROR || p->state != ST_TRAILERS) {
            if (ev != HTTP_EV_ERROR) {
                *used = k;
                p->pos += k;
            }
            return ev;
        }
        /* fall through: the trailer section starts at data + k */
        break;
    case ST_TRAILERS: break;
    }

    int r = scan_section(p, data + k, len - k, k, true, &n);
    if (r < 0) return HTTP_EV_ERROR;
    if (r == 0) {
        *used = k;
        p->pos += k;
        return HTTP_EV_NEED_MORE;
    }
    *used = k + n;
    p->pos += k + n;
    return message_done(p);
}

http_event http_parse_eof(http_parser *p)
{
    switch (p->state) {
    case ST_ERROR: return HTTP_EV_ERROR;
    case ST_CLOSED: return HTTP_EV_NEED_MORE;
    case ST_HEAD:
        if (p->scan == 0) return HTTP_EV_NEED_MORE;
        break;
    case ST_NOBODY: return message_done(p);
    case ST_LENGTH:
        if (!p->remaining) return message_done(p);
        break;
    case ST_UNTIL_CLOSE: {
        http_event ev = message_done(p);
        p->state = ST_CLOSED;
        return ev;
    }
    default: break;
    }
    size_t off = p->state == ST_HEAD || p->state == ST_TRAILERS ? p->scan : 0;
    return fail(p, HTTP_E_TRUNCATED, "connection closed inside a message", off);
}
