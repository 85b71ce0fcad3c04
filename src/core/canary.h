/* canary.h - the canary's pure parts (docs/canary.md): the built-in
 * known-answer prompts, the request bodies, and the pass rule.  The
 * daemon sends the requests (daemon/canary.c) and reads the answers'
 * JSON; what counts as a pass is decided here, on plain text and numbers.
 *
 * Pass rule for a generation: thinking is disabled where the engine
 * allows it (chat_template_kwargs.enable_thinking false in the request);
 * whatever thinking still comes is stripped (the content up to the last
 * `</think>`; a separate reasoning_content is never looked at); the rest
 * must be non-empty and contain the expected text, compared without
 * regard to case.  Without an expected text (a preset's own prompt with
 * no `expect`), a non-empty answer with at least one letter or digit
 * passes.
 *
 * Pass rule for an embedding service: two different inputs give two
 * vectors of the same, non-zero length, every value finite, and the two
 * vectors differ. */
#ifndef GPUMOD_CANARY_H
#define GPUMOD_CANARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

typedef struct canary_probe {
    const char *prompt;
    const char *expect; /* NULL: any non-empty answer */
} canary_probe;

/* arithmetic, an exact string echoed, a one-word fact */
#define CANARY_BUILTIN_N 3
extern const canary_probe canary_builtin[CANARY_BUILTIN_N];

/* The two inputs of the embedding canary. */
extern const char *const canary_embed_inputs[2];

/* max_tokens when the preset sets none: room for the answer and a little
 * thinking an engine cannot switch off. */
#define CANARY_MAX_TOKENS_DEFAULT 32

/* The body of POST /v1/chat/completions for prompt: temperature 0, not
 * streamed, max_tokens, thinking disabled. */
void canary_chat_body(const char *prompt, int64_t max_tokens, buf *out);
/* The body of POST /v1/embeddings for canary_embed_inputs. */
void canary_embed_body(buf *out);

typedef struct canary_verdict {
    bool ok;
    char why[200];    /* not ok: what was wrong, for the event and the start's failure */
    char sample[200]; /* the answer as judged (thinking stripped), cut and on one line */
} canary_verdict;

/* The answer's text after its thinking: the part after the last
 * `</think>`, else all of content.  A pointer into content. */
const char *canary_after_thinking(const char *content);

/* Judge one generation's content against expect (NULL: any answer). */
void canary_judge_text(const char *content, const char *expect, canary_verdict *out);

/* Judge two embedding vectors (na, nb values). */
void canary_judge_vectors(const double *a, size_t na, const double *b, size_t nb, canary_verdict *out);

#endif
