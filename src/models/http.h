/* http.h (models) - one blocking HTTP request for the models helper (the
 * Hub's JSON, GGUF headers by range, downloads), on libcurl easy, with
 * what a client of someone else's server needs: a deadline (whole, and a
 * stall limit for long downloads), a bound on the body, redirects followed
 * by hand so that each hop is checked (https, or http to a loopback
 * address) and the token goes to the first host only, and the headers the
 * Hub answers with (Content-Range, ETag, X-Linked-Size, X-Linked-Etag,
 * Link). */
#ifndef GPUMOD_MODELS_HTTP_H
#define GPUMOD_MODELS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define MHTTP_UNKNOWN UINT64_MAX

typedef struct mhttp_opts {
    /* Bearer token or NULL: sent only to hops whose origin (scheme, host,
     * port) is token_origin's, a URL of the Hub (NULL: the first URL's) */
    const char *token;
    const char *token_origin;
    int64_t timeout_ms; /* the whole request, redirects included; 0: none (then stall_ms) */
    int64_t stall_ms;   /* abort when under 1 byte/s for this long; 0: 30 s */
    int64_t connect_ms; /* 0: 10 s */
    uint64_t max_bytes; /* the body's bound when no sink; 0: 16 MiB */
    uint64_t range_from, range_len; /* range_len > 0: Range: bytes=from-(from+len-1);
                                       range_len MHTTP_UNKNOWN: bytes=from- */
    const char *if_range;           /* If-Range value, or NULL */
    bool head;                      /* HEAD instead of GET */
    int max_redirects;              /* 0: 5 */
    /* when set, a 2xx body goes here instead of into the reply (other
     * statuses' bodies are kept, bounded, for the error); -1 aborts */
    int (*sink)(void *ud, const void *p, size_t n);
    void *sink_ud;
    volatile int *interrupted; /* when it becomes non-zero the request ends "interrupted" */
} mhttp_opts;

typedef struct mhttp_reply {
    int status;     /* the last hop's, once the request ended */
    int hop_status; /* the status line now being answered (a sink may read it) */
    buf body;
    char *final_url;         /* after redirects */
    uint64_t content_length; /* MHTTP_UNKNOWN when not said */
    uint64_t range_start, range_end,
        range_total;       /* a 206's Content-Range; MHTTP_UNKNOWN otherwise */
    uint64_t linked_size;  /* X-Linked-Size of any hop, MHTTP_UNKNOWN when absent */
    char etag[160];        /* without quotes; a weak one keeps its W/ (never an If-Range) */
    char linked_etag[160]; /* X-Linked-Etag without quotes or W/ (the Hub's sha256) */
    char link_next[2048];  /* Link: <...>; rel="next" */
    bool link_overlong;    /* a next link longer than link_next: not kept */
    char error_code[64];   /* X-Error-Code (the Hub's RepoNotFound, GatedRepo...) */
    uint64_t bytes_in;     /* body bytes received, all hops */
    int redirects;
    bool over_bound; /* failed because the body passed max_bytes */
    char err[512];   /* "" when a reply came */
} mhttp_reply;

/* 0 when a reply came (any status), -1 with r->err ("GET URL: ...").
 * The reply must be released either way. */
int mhttp_get(const char *url, const mhttp_opts *o, mhttp_reply *r);
void mhttp_release(mhttp_reply *r);
/* 0 when url may be fetched: https, or http to localhost, 127.0.0.0/8 or
 * [::1]; -1 with err saying why not.  (mhttp_get also keeps a request that
 * began on https on https: no redirect from the Internet to a loopback.) */
int mhttp_url_ok(const char *url, char *err, size_t errlen);
/* "https://host:port" of url into out; 0, or -1 when it does not parse. */
int mhttp_origin(const char *url, char *out, size_t outlen);
/* What a failed status means for a user of the Hub: 401 "unauthorized
 * (...HF_TOKEN...)", 403, 404, 416, 429, 5xx; NULL for 2xx. */
const char *mhttp_status_text(int status, const char *error_code);

#endif
