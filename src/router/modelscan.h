/* modelscan.h (core) - find the top-level "model" string of a JSON request
 * body fed in arbitrary pieces (one byte at a time works), without
 * building a tree and without copying the body.  Pure: no I/O, no clock,
 * no allocation; the state is one fixed-size struct.
 *
 * The router feeds it every piece of a request body and routes once the
 * whole body is in (relay.c), so the whole body is validated first:
 *
 *   - the body must be one JSON object (RFC 8259), optionally preceded by
 *     one UTF-8 BOM (RFC 8259 8.1 lets a parser ignore it; Python's
 *     json.loads(bytes) and nlohmann::json both do) and JSON whitespace
 *     (space, tab, LF, CR) before and after it; nothing else may follow;
 *   - strings must not hold raw control bytes, escapes must be valid
 *     (\uXXXX with four hex digits), numbers follow the JSON grammar,
 *     nesting is bounded (MODELSCAN_MAX_DEPTH);
 *   - top-level keys are compared with "model" AFTER unescaping, so
 *     "mod\u0065l" is the model key too (a backend decodes it so);
 *   - a second top-level "model" key is an error, not "first wins": a
 *     backend that takes the last one (Python's dict, nlohmann) would
 *     otherwise run a model other than the one the router admitted;
 *   - the model value must be a string of at most MODELSCAN_MAX_MODEL
 *     bytes once unescaped, valid UTF-8 (no unpaired surrogate) and free
 *     of control characters (it reaches log lines and error messages).
 *
 * Because the error is reported for the piece that holds the offending
 * byte, a router that feeds each piece before forwarding it never gives
 * a backend a complete body that the scanner refused: an error found late
 * (a duplicate key, malformed JSON after the model) aborts the upstream
 * with the body short of its Content-Length, and the client still gets
 * the 400, since no response can have started.
 *
 * Offsets are byte offsets in the whole body (the BOM included), so the
 * router can splice: modelscan_rewrite() replaces the value token (quotes
 * included) in the bytes seen so far with another id. */
#ifndef GPUMOD_CORE_MODELSCAN_H
#define GPUMOD_CORE_MODELSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define MODELSCAN_MAX_MODEL 256 /* bytes of the unescaped value */
#define MODELSCAN_MAX_DEPTH 512 /* nested objects and arrays, the top one included */

typedef enum modelscan_status {
    MODELSCAN_MORE,  /* feed more: not finished (found may already be set) */
    MODELSCAN_DONE,  /* the object closed with a model; only whitespace may follow */
    MODELSCAN_ERROR, /* see err; sticky: later feeds return it again */
} modelscan_status;

typedef enum modelscan_code {
    MODELSCAN_E_NONE,
    MODELSCAN_E_SYNTAX,      /* malformed JSON, truncated body included */
    MODELSCAN_E_NOT_OBJECT,  /* a JSON value that is not an object */
    MODELSCAN_E_NO_MODEL,    /* the object closed without a top-level "model" */
    MODELSCAN_E_MODEL_TYPE,  /* "model" is not a string */
    MODELSCAN_E_MODEL_VALUE, /* too long, bad UTF-8 or a control character */
    MODELSCAN_E_DUPLICATE,   /* a second top-level "model" key */
    MODELSCAN_E_DEPTH,       /* nested deeper than MODELSCAN_MAX_DEPTH */
    MODELSCAN_E_TOO_LARGE,   /* more bytes than the limit */
} modelscan_code;

typedef struct modelscan_err {
    modelscan_code code;
    size_t offset; /* of the offending byte; the body's length for a truncation */
    char msg[160]; /* one line, lowercase, says what was expected */
} modelscan_err;

typedef struct modelscan {
    /* results */
    bool found;                          /* the model value is complete */
    char model[MODELSCAN_MAX_MODEL + 1]; /* unescaped, NUL-terminated */
    size_t model_len;
    size_t span_start, span_end; /* the value token [start, end), quotes included */
    modelscan_err err;
    /* the machine: private */
    size_t limit, pos;
    int st;           /* state */
    int role;         /* the current string: a value, a key, a top-level key, the model */
    int sub;          /* literal: chars matched; \u escape: hex digits read */
    const char *lit;  /* literal being matched: "true", "false", "null" */
    uint32_t cp, hi;  /* \u code unit being read; pending high surrogate (0: none) */
    int key_match;    /* top-level key: chars of "model" matched so far, -1: not it */
    bool want_model;  /* the next value is the model's */
    int bad;          /* model value: 1 unpaired surrogate, 2 control character */
    size_t key_start; /* offset of the current top-level key */
    size_t model_key; /* offset of the model key; SIZE_MAX until seen */
    unsigned depth;
    uint8_t stack[MODELSCAN_MAX_DEPTH / 8]; /* bit set: array, clear: object */
} modelscan;

/* limit: the most body bytes accepted (the router's max body); 0: none. */
void modelscan_init(modelscan *s, size_t limit);
/* The next n bytes of the body.  Every byte is consumed. */
modelscan_status modelscan_feed(modelscan *s, const char *p, size_t n);
/* The body ended: DONE, or ERROR (truncated JSON, no model). */
modelscan_status modelscan_finish(modelscan *s);

/* The body's first seen_len bytes, the value token [span_start, span_end)
 * replaced with id as a JSON string, appended to out.  *delta: the new
 * Content-Length minus the old one (the bytes after seen_len are sent
 * unchanged).  -1 when nothing was found or the span is not inside the
 * bytes given. */
int modelscan_rewrite(const modelscan *s, const char *seen, size_t seen_len, const char *id,
                      buf *out, int64_t *delta);

#endif
