/* fetch.h (oai) - one blocking HTTP request with a deadline (libcurl
 * easy), for what a helper asks a server outside its load: /v1/models,
 * /props, /tokenize, /metrics.  Used by bench and eval alike. */
#ifndef GPUMOD_OAI_FETCH_H
#define GPUMOD_OAI_FETCH_H

#include <stdint.h>

#include "util/buf.h"

typedef struct bfetch {
    int status;      /* 0 when no reply */
    buf body;
    char err[256];   /* "" on a reply */
} bfetch;

/* GET when body is NULL, else POST of a JSON body.  0 when a reply came
 * (any status), -1 with f->err ("connect to URL: ...", "timed out after
 * N ms"). */
int bfetch_do(const char *url, const char *const *headers, const char *body, int64_t timeout_ms, bfetch *f);
void bfetch_release(bfetch *f);
/* For every later bfetch_do of this process: the deadline is at most
 * max_ms (0: no cap), and a request ends ("interrupted") as soon as
 * *interrupted is set (NULL: never).  Call before other threads fetch. */
void bfetch_limit(volatile int *interrupted, int64_t max_ms);

#endif
