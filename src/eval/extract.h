/* extract.h - the answer in a model's reply: which part of the text a
 * scorer judges, and which rule found it (every item record says so).
 *
 * Thinking never counts.  The visible text is what follows the LAST
 * `</think>` of the content (an opened `<think>` that never closes is all
 * thinking: the reply ran out of tokens while thinking); a separate
 * `reasoning_content` is thinking too.  The answer is then taken from the
 * visible text by the first rule that finds one, in this order:
 *
 *   answer_line    the last line that starts (after spaces and markdown
 *                  marks * _ # > -) with "answer" or "final answer"
 *                  (any case), then ':' '=' or a full-width '：'; the rest
 *                  of the line, or the next non-empty line when it is empty
 *   boxed          the last \boxed{...} or \fbox{...}, braces balanced
 *   last_number    (number scorers) the last number in the text
 *   choice_letter  (choice scorers) a standalone choice letter: see
 *                  ex_choice_fallback
 *   whole_text     (the others) the whole visible text
 *
 * When the visible text gives nothing and the thinking does (by the same
 * rules, whole_text aside), the rule is thinking_only and the answer is
 * recorded but fails: a model that only thought the answer did not give
 * it.  An answer is trimmed, unwrapped from **bold**, `code`, $math$,
 * \text{} and \boxed{}, and loses one trailing '.'; the whole text of
 * EXM_TEXT is only trimmed (JSON and its fences stay as written).  Pure;
 * no state. */
#ifndef GPUMOD_EVAL_EXTRACT_H
#define GPUMOD_EVAL_EXTRACT_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

typedef enum {
    EX_NONE,          /* nothing found */
    EX_ANSWER_LINE,
    EX_BOXED,
    EX_LAST_NUMBER,
    EX_CHOICE_LETTER,
    EX_WHOLE_TEXT,
    EX_THINKING_ONLY, /* found only in the thinking: does not count */
    EX_TOOL_CALLS,    /* tool_call items: the reply's tool_calls, no text */
} ex_rule;

/* "none", "answer_line", "boxed", "last_number", "choice_letter",
 * "whole_text", "thinking_only", "tool_calls": stable, in results. */
const char *ex_rule_name(ex_rule r);

/* What the fallback after answer_line and boxed is, per scorer kind. */
typedef enum {
    EXM_TEXT,   /* no rules: the whole visible text (json, judge) */
    EXM_ANSWER, /* answer_line, boxed, whole_text (exact, contains, regex) */
    EXM_NUMBER, /* answer_line, boxed, last_number */
    EXM_CHOICE, /* answer_line, boxed, choice_letter */
} ex_mode;

typedef struct ex_result {
    ex_rule rule;
    char *answer;  /* normalized; NULL when rule is EX_NONE (ex_release frees) */
    bool thinking; /* the reply had thinking (a block or reasoning_content) */
} ex_result;

/* The answer of a reply.  content and reasoning may be NULL.  letters:
 * how many choice letters count (A.., 1..26), for EXM_CHOICE.  out is
 * always filled; release it with ex_release. */
void extract_answer(ex_result *out, const char *content, const char *reasoning, ex_mode mode,
                    int letters);
void ex_release(ex_result *r);

/* The visible part of content (borrowed view into it) and, in *thinking
 * when not NULL, the thinking part (without its tags). */
view ex_visible(const char *content, view *thinking);

/* Numbers as answers are written: a sign (- + or U+2212), '$' or '\$',
 * digits with ',' (or LaTeX '{,}') between groups of three, decimals, an
 * exponent, a fraction a/b or \frac{a}{b} (\dfrac, \tfrac).  "1,234.5 km"
 * is 1234.5, "$42" 42, "-3/4" -0.75, "1,2" 1 (a comma not before three
 * digits ends the number).  The first number in s[0..len): 1 with *v and,
 * when not NULL, its span [*b, *e); 0 when there is none. */
int ex_first_number(const char *s, size_t len, double *v, size_t *b, size_t *e);
/* The last number, as ex_first_number. */
int ex_last_number(const char *s, size_t len, double *v, size_t *b, size_t *e);
/* s is one number and nothing else but spaces, a trailing '.', '%' or a
 * unit word ("42", "$1,000", "5 km", "1/2", "50%"): 0 with *v, else -1
 * ("2x+1", "\sqrt{2}", "3 or 4"). */
int ex_parse_number(const char *s, double *v);

/* The choice letter of an answer that was extracted ("B", "(B)", "B.
 * Paris", "**C**", "\text{D}"): the first standalone letter among the
 * first letters of the alphabet; 0 when there is none.  A letter inside a
 * word never counts ("Absolutely" is not A). */
char ex_choice_in(const char *s, size_t len, int letters);
/* The fallback over a whole text: the last strong form -- "(B)", "B)",
 * "B." or "B:" before a space, "**B**", "answer is B", "option B",
 * "choice B" -- else the last bare standalone letter, except an A or I
 * followed by a lowercase word (English, not a choice).  0 when none. */
char ex_choice_fallback(const char *s, size_t len, int letters);

#endif
