/* sse.h (core) - an incremental parser of text/event-stream (the WHATWG
 * "server-sent events" format) for the bench client.  Pure: bytes in,
 * events out through a callback, in the order they complete.
 *
 * Lines end in LF, CRLF or CR (a CR at the end of one feed followed by LF
 * at the start of the next is one line end).  "data:" lines append to the
 * event's data (joined with LF; one leading space after the colon is
 * dropped); "event:" sets its type; ":" lines are comments (counted, and
 * reported to on_comment when set, for llama-server's/gpumod's progress
 * comments); "id:" and "retry:" and unknown fields are ignored; a blank
 * line dispatches the event when it has data (an event with no data line
 * is dropped, as the spec says).  A UTF-8 BOM at the very start is
 * skipped.  Data is passed NUL-terminated (len excludes the NUL); an event
 * larger than max_event bytes is an error (the parser then ignores input
 * and sse_error() says so): a server that never sends a blank line cannot
 * make the client grow without bound.  At end of stream an incomplete
 * event is discarded (sse_pending() tells whether there was one). */
#ifndef GPUMOD_CORE_SSE_H
#define GPUMOD_CORE_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

typedef void (*sse_event_fn)(void *ud, const char *type, const char *data, size_t len);
typedef void (*sse_comment_fn)(void *ud, const char *text, size_t len);

typedef struct sse_parser {
    sse_event_fn on_event;
    sse_comment_fn on_comment; /* may be NULL */
    void *ud;
    size_t max_event;
    buf line, data, type;
    bool has_data, cr_pending, started, failed;
    size_t n_events, n_comments;
    char err[128];
} sse_parser;

void sse_init(sse_parser *p, size_t max_event, sse_event_fn on_event, sse_comment_fn on_comment, void *ud);
void sse_release(sse_parser *p);
/* 0, or -1 once an event exceeded max_event (sticky). */
int sse_feed(sse_parser *p, const char *bytes, size_t n);
/* true when bytes of an undispatched event (or line) are buffered. */
bool sse_pending(const sse_parser *p);
const char *sse_error(const sse_parser *p); /* NULL or the problem */

#endif
