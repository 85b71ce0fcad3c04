/* http.h - gpumod's strict, zero-copy, incremental HTTP/1.1 message parser
 * (requests for the control API and the router, responses for the client
 * side of the proxy and the CLI).  No callbacks, no allocation per
 * message, no copying: the parser reports views into the caller's buffer.
 *
 * Design: a pull parser over the caller's accumulating buffer.
 *
 *   - The caller offers the bytes it holds from the first byte the parser
 *     has not consumed yet: http_parse(p, data, len, &used, &body).  The
 *     parser consumes `used` bytes; the caller drops them and offers the
 *     rest again, with whatever arrived since, on the next call.
 *   - The head (start line + fields) is never consumed piecemeal: until the
 *     empty line arrives http_parse consumes nothing and answers
 *     HTTP_EV_NEED_MORE, so the caller's buffer holds the whole head
 *     contiguously.  Internally only offsets are kept, so the caller may
 *     realloc its buffer between calls.  When the head is complete the
 *     call answers HTTP_EV_HEAD, consumes the head, and p->msg holds views
 *     into that call's `data`: they stay valid as long as the caller keeps
 *     those bytes where they are (a proxy re-serialises the head from
 *     them, then drops them).  Scanning resumes where it stopped, so a
 *     head fed one byte at a time costs O(n), not O(n^2).
 *   - Body bytes are consumed as they come: each HTTP_EV_BODY event is a view
 *     of decoded body data inside `data` (chunk framing is skipped, never
 *     copied out), so a proxy streams it and forgets it.
 *   - The trailer section of a chunked body is accumulated like the head
 *     (consumed only once complete), validated with the field rules and
 *     bounded by the head limits, then dropped: it is never reported.
 *
 * The caller's loop:
 *
 *     for (;;) {
 *         ev = http_parse(p, buf + off, len - off, &used, &body);
 *         off += used;
 *         if (ev == HTTP_EV_NEED_MORE) break; // read more, offer buf+off again
 *         if (ev == HTTP_EV_ERROR) ...        // http_error_status(p->err.code)
 *         if (ev == HTTP_EV_HEAD) ...         // p->msg
 *         if (ev == HTTP_EV_BODY) ...         // body
 *         if (ev == HTTP_EV_DONE) ...         // next message starts at buf+off
 *     }
 *     on EOF: http_parse_eof(p)  // HTTP_EV_DONE ends a read-until-close body
 *
 * Strictness and limits are documented in docs/http.md (with the list of
 * intended divergences from llhttp). */
#ifndef GPUMOD_HTTP_H
#define GPUMOD_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* A chunk-size line (size and extensions, without CRLF) longer than this
 * is refused. */
#define HTTP_CHUNK_LINE_MAX 1024

typedef enum http_kind { HTTP_KIND_REQUEST, HTTP_KIND_RESPONSE } http_kind;

typedef enum http_event {
    HTTP_EV_ERROR = -1,    /* p->err says what; every later call answers the same */
    HTTP_EV_NEED_MORE = 0, /* offer the unconsumed rest again with more bytes */
    HTTP_EV_HEAD,          /* p->msg is complete */
    HTTP_EV_BODY,          /* *body is a view of body data */
    HTTP_EV_DONE,          /* the message is complete; the next one starts after `used` */
} http_event;

typedef enum http_err {
    HTTP_E_NONE = 0,
    HTTP_E_BARE_LF,          /* 400: LF without CR */
    HTTP_E_REQUEST_LINE,     /* 400 */
    HTTP_E_METHOD,           /* 400: not a token */
    HTTP_E_TARGET,           /* 400: empty or a byte outside 0x21..0x7e */
    HTTP_E_VERSION,          /* 505: HTTP/x.y other than 1.0 and 1.1 */
    HTTP_E_STATUS_LINE,      /* 400 (a client answers 502) */
    HTTP_E_STATUS,           /* 400: status code not 3 digits in 100..599 */
    HTTP_E_OBS_FOLD,         /* 400: a field line starting with SP or HTAB */
    HTTP_E_FIELD_NAME,       /* 400: empty, not a token, no colon, space before colon */
    HTTP_E_FIELD_VALUE,      /* 400: a control character other than HTAB */
    HTTP_E_HOST,             /* 400: HTTP/1.1 request without Host, or two of them */
    HTTP_E_CONTENT_LENGTH,   /* 400: not all digits, or overflows */
    HTTP_E_DUP_LENGTH,       /* 400: Content-Length twice, even with equal values */
    HTTP_E_LENGTH_AND_TE,    /* 400: Content-Length with Transfer-Encoding */
    HTTP_E_TE,               /* 400: coding list malformed, chunked not last or twice, HTTP/1.0 */
    HTTP_E_TE_UNSUPPORTED,   /* 501: a coding other than chunked before chunked */
    HTTP_E_CHUNK,            /* 400: chunk size line or chunk framing */
    HTTP_E_HEAD_TOO_LARGE,   /* 431: head (or trailer section) over max_head bytes */
    HTTP_E_TOO_MANY_FIELDS,  /* 431: more than max_fields field lines */
    HTTP_E_TARGET_TOO_LONG,  /* 414: request-target over max_target bytes */
    HTTP_E_BODY_TOO_LARGE,   /* 413: Content-Length or decoded body over max_body */
    HTTP_E_AFTER_CLOSE,      /* 400: bytes after a message that closes the connection */
    HTTP_E_TRUNCATED,        /* 400: EOF inside a message */
} http_err;

typedef struct http_error {
    http_err code;
    const char *msg; /* static, lowercase, no full stop: "bare lf line ending" */
    uint64_t offset; /* byte offset in the stream since http_parser_init */
} http_error;

typedef struct http_limits {
    size_t max_head;    /* start line + fields + final CRLF, bytes */
    size_t max_fields;  /* field lines in the head (and in a trailer section) */
    size_t max_target;  /* request-target bytes */
    uint64_t max_body;  /* decoded body bytes (Content-Length or chunked total) */
} http_limits;

typedef struct http_field {
    view name;  /* a token, as received (compare case-insensitively) */
    view value; /* leading and trailing SP/HTAB trimmed; may be empty */
} http_field;

typedef enum http_framing {
    HTTP_FRAME_NONE,        /* no body */
    HTTP_FRAME_LENGTH,      /* content_length bytes (> 0) */
    HTTP_FRAME_CHUNKED,     /* Transfer-Encoding: chunked */
    HTTP_FRAME_UNTIL_CLOSE, /* a response without length: the body ends at EOF */
} http_framing;

/* One message head.  Every view points into the `data` of the call that
 * answered HTTP_EV_HEAD; read-only for the caller. */
typedef struct http_msg {
    view method;        /* requests */
    view target;        /* requests */
    int status;         /* responses: 100..599 */
    view reason;        /* responses; may be empty */
    int minor;          /* HTTP/1.<minor>: 0 or 1 */
    http_field *fields; /* in order of arrival; max_fields entries of storage */
    size_t n_fields;
    size_t head_len;    /* bytes of the head, final CRLF included */
    http_framing framing;
    uint64_t content_length; /* HTTP_FRAME_LENGTH */
    bool keep_alive;    /* the connection may carry another message after this one */
} http_msg;

typedef struct http_parser {
    http_msg msg;   /* after HTTP_EV_HEAD until the next message starts */
    http_error err; /* after HTTP_EV_ERROR */

    /* private */
    http_limits lim;
    http_kind kind;
    int state;
    uint64_t pos; /* stream offset of data[0] in the current call */
    /* line scanner over a section (head or trailers) that starts at data[0] */
    size_t scan, line, sp1, sp2, first_end, n_lines;
    struct http_span { uint32_t name_off, name_len, val_off, val_len; } *spans;
    /* header semantics */
    int n_length, n_host;
    bool te_other, te_chunked, conn_close, conn_keep_alive;
    bool skip_body;
    /* body */
    uint64_t remaining, body_total;
    int chunk_state;
    uint64_t chunk_size;
    size_t chunk_line;
    bool closed;
} http_parser;

/* Fill p (caller-owned) for a stream of requests or responses.  Allocates
 * the field storage (lim->max_fields entries); free it with
 * http_parser_release. */
void http_parser_init(http_parser *p, http_kind kind, const http_limits *lim);
void http_parser_release(http_parser *p);

/* Responses only: the next response answers a HEAD request, so it has no
 * body whatever its Content-Length or Transfer-Encoding say.  Call before
 * offering its first byte; it applies to that one message. */
void http_parser_skip_body(http_parser *p);

/* Parse what the caller holds from the first unconsumed byte.  *used is
 * set to the bytes consumed (possibly 0), *body to the data on HTTP_EV_BODY.
 * See the loop at the top of this file. */
http_event http_parse(http_parser *p, const char *data, size_t len, size_t *used, view *body);

/* The peer closed the stream.  HTTP_EV_DONE: that ended a read-until-close
 * body; HTTP_EV_NEED_MORE: nothing was pending (a clean close between
 * messages); HTTP_EV_ERROR (HTTP_E_TRUNCATED): the message was incomplete. */
http_event http_parse_eof(http_parser *p);

/* The status code a server answers for an error: 400, 413, 414, 431,
 * 501 or 505. */
int http_error_status(http_err code);

/* The n-th (0-based) field of m named `name` (case-insensitive), or NULL. */
const view *http_msg_field(const http_msg *m, const char *name, size_t n);

#endif
