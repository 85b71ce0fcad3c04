/* propose.h (tune) - the optional proposer: any OpenAI-compatible chat
 * endpoint (a local service through its URL, or a remote one) shown the
 * menu, the incumbent, the history and the hardware, asked for the next
 * single change with a one-line reason.  Its reply is validated against
 * the menu: a key or a value outside it, the incumbent's own value, a
 * change already measured against the same incumbent or a reply that is
 * not the asked JSON is invalid, logged as SKIPPED with why, and never
 * measured. */
#ifndef GPUMOD_TUNE_PROPOSE_H
#define GPUMOD_TUNE_PROPOSE_H

#include <stddef.h>

#include "tune/tune.h"

typedef enum { PROP_CHANGE, PROP_INVALID, PROP_STOP, PROP_ERROR } prop_kind;

typedef struct tune_proposal {
    prop_kind kind;
    tune_variant v;         /* PROP_CHANGE: the incumbent with the change */
    char key[80], value[260];
    char reason[512];       /* the proposer's one line, or why the reply is invalid / the call failed */
} tune_proposal;

/* The request body (chat completions, JSON) for the next proposal. */
char *propose_body(const tune_opts *o, const tune_variant *inc, const tune_result *res, const char *hardware);
/* The model's reply text judged against the menu (pure). */
void propose_parse(const char *content, const tune_space *s, const tune_variant *inc, const tune_result *res,
                   tune_proposal *out);
/* Ask the proposer (deadline timeout_ms). */
void propose_next(const tune_opts *o, const tune_variant *inc, const tune_result *res, const char *hardware,
                  int64_t timeout_ms, tune_proposal *out);

#endif
