/* canary.h - the canary run (docs/canary.md): after a service's health
 * check first answers 200, and before it counts as ready, its known-answer
 * prompts are sent one after another (core/canary.h has the prompts and
 * the pass rule) and every answer must pass.  One request at a time, each
 * under the deadline given; the first failure ends the run.
 *
 * On the daemon's loop; nothing blocks. */
#ifndef GPUMOD_DAEMON_CANARY_H
#define GPUMOD_DAEMON_CANARY_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

typedef struct canary_run canary_run;

typedef struct canary_spec {
    const char *host;   /* as the health probe takes it */
    int port;
    bool embed;         /* an embedding service: the embedding rule instead of prompts */
    const char *prompt; /* NULL: the built-in prompts */
    const char *expect; /* with prompt: the text its answer must contain (NULL: any answer) */
    int64_t max_tokens;
    int64_t timeout_ms; /* each request's deadline */
} canary_spec;

typedef struct canary_report {
    bool ok;
    int64_t ms;        /* from the first request to the verdict */
    int sent, passed;  /* requests sent, answers that passed */
    char why[256];     /* not ok: what failed ("prompt 2: expected '...' in the answer, got '...'") */
    char sample[200];  /* the last answer judged (thinking stripped), cut */
    char prompt[128];  /* the prompt it was judged for, cut ("embeddings" for an embedding service) */
} canary_report;

/* r borrowed for the call. */
typedef void (*canary_cb)(const canary_report *r, void *ud);

/* Strings of spec are copied.  cb exactly once unless cancelled first.
 * NULL when the run ended at once (a host the probe cannot use): cb was
 * called before this returned. */
canary_run *canary_start(uv_loop_t *loop, const canary_spec *spec, canary_cb cb, void *ud);
/* No callback after this. */
void canary_cancel(canary_run *c);

#endif
