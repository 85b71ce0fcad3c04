/* score.h - one reply, scored against its item (docs/eval.md "Scorers").
 *
 * The scorers, by the item's `scorer`:
 *
 *   exact        the answer equals expected (both trimmed; ignore_case)
 *   contains     expected occurs in the answer (ignore_case)
 *   regex        the POSIX extended pattern matches somewhere in the answer
 *   number       the answer's first number is within tolerance of expected
 *                (|got - want| <= tol_abs + tol_rel |want|; by default a
 *                relative 1e-6)
 *   choice       the answer's choice letter is expected
 *   json_valid   the whole visible text, inside a ```json fence if it has
 *                one, is one strict JSON value
 *   json_schema  the same, and it satisfies the item's schema
 *   tool_call    the reply's tool_calls hold a call of the named function
 *                whose arguments have every expected value (more arguments
 *                are allowed)
 *   judge        another model scores the answer 1-5 against the rubric:
 *                score_reply leaves the item at SCORE_JUDGE, the runner
 *                sends judge_prompt's text to the judge and gives its
 *                reply to score_judged
 *
 * ignore_case folds ASCII letters only.  A reply with nothing in it (no
 * text, no thinking, no tool call) is an error, not a failure: the
 * runner retries it.  Pure: no I/O. */
#ifndef GPUMOD_EVAL_SCORE_H
#define GPUMOD_EVAL_SCORE_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "eval/extract.h"
#include "eval/suite.h"
#include "util/buf.h"

typedef enum {
    SCORE_PASS,
    SCORE_FAIL,
    SCORE_ERROR, /* no answer to judge (empty reply, a judge's reply without a score) */
    SCORE_JUDGE, /* a judge item waiting for its judge */
} score_state;

extern const char *const score_state_names[]; /* "pass" "fail" "error" "judge", NULL */

/* What the server answered: choices[0].message's fields. */
typedef struct eval_reply {
    const char *content;      /* NULL when absent */
    const char *reasoning;    /* reasoning_content, NULL when absent */
    const cJSON *tool_calls;  /* the tool_calls array, NULL when absent */
} eval_reply;

typedef struct eval_score {
    score_state state;
    ex_rule rule;
    char *answer;      /* what was judged, NULL when nothing (score_release frees) */
    int judge;         /* the judge's 1..5, 0 when not judged */
    char reason[240];  /* why, short: "expected 42, got 41" ("" when it passed) */
} eval_score;

/* Score a reply.  out is always filled; release it with score_release. */
void score_reply(eval_score *out, const eval_item *it, const eval_reply *r);
void score_release(eval_score *s);

/* The extraction mode of a scorer (extract.h). */
ex_mode score_mode(int scorer);

/* The judge's prompt, appended to out: the rubric, the question (the
 * prompt, or the conversation as "role: content" lines), the reference
 * answer when the item has expected, the answer, the scale (1 wrong or
 * useless .. 5 fully right) and the instruction to end with "Score: N". */
void judge_prompt(buf *out, const eval_item *it, const char *answer);
/* The score in a judge's reply: its thinking is stripped as a model's,
 * then the last "Score: N" (any case, markdown allowed, "Score = 4",
 * "Score: 4/5").  0 with *score in 1..5, or -1 with err (no score, or one
 * outside 1-5). */
int judge_parse(const char *reply, const char *reasoning, int *score, char *err, size_t errlen);
/* Settle a SCORE_JUDGE score with the judge's reply: pass at the item's
 * pass_score or above, fail below, error when the reply holds no score. */
void score_judged(eval_score *s, const eval_item *it, const char *judge_content, const char *judge_reasoning);

#endif
