/* suite.h - eval suites: the items `gpumod eval` sends and how each is
 * scored, read from a YAML file, a JSONL file, or a directory of them
 * (docs/eval.md "Suites").
 *
 * A YAML suite is a mapping (name, description, defaults, items) or a bare
 * list of items; a JSONL suite is one item per line.  An item is either
 * native (prompt or messages, with scorer, expected and the scorer's own
 * keys) or an import of a common dataset shape:
 *
 *   {question, choices, answer}  multiple choice (GPQA, MMLU): the choices
 *                                are appended as "A. ...", scorer choice;
 *                                answer a letter, a choice's text, or a
 *                                0-based index (a number)
 *   {problem, answer}            AIME / MATH: scorer number when the
 *                                answer is a number, else exact
 *   {question, answer}           GSM8K: an answer ending "#### 42" is the
 *                                number 42; else as {problem, answer}
 *
 * Loading never stops at the first mistake: every one is a diag with
 * file:line[:col] (the configuration's diags and wording), and any error
 * fails the load.  Unknown keys, a key the item's scorer does not read, a
 * duplicate id (across the files of a directory too), a file or a suite
 * without items, a bad regex or an unsupported schema keyword are errors.
 * An item without an id gets "FILE:LINE" (the file's base name, so the id
 * does not depend on where the suite lives: `eval compare` pairs items by
 * id). */
#ifndef GPUMOD_EVAL_SUITE_H
#define GPUMOD_EVAL_SUITE_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "util/buf.h"
#include "util/strv.h"

typedef enum {
    SC_EXACT,
    SC_REGEX,
    SC_NUMBER,
    SC_CHOICE,
    SC_CONTAINS,
    SC_JSON_VALID,
    SC_JSON_SCHEMA,
    SC_TOOL_CALL,
    SC_JUDGE,
    SC__COUNT
} eval_scorer;

/* "exact" "regex" "number" "choice" "contains" "json_valid" "json_schema"
 * "tool_call" "judge", NULL */
extern const char *const eval_scorer_names[];

typedef enum { ROLE_SYSTEM, ROLE_USER, ROLE_ASSISTANT } eval_role;
extern const char *const eval_role_names[]; /* "system" "user" "assistant", NULL */

typedef struct eval_msg {
    int role; /* eval_role */
    char *content;
} eval_msg;

#define EVAL_TOL_REL_DEFAULT 1e-6

typedef struct eval_item {
    char *id;
    srcpos pos;          /* the item's first line; file borrowed from the suite */
    int scorer;          /* eval_scorer */
    bool imported;       /* from a question/problem shape */
    char *category;      /* never NULL: the item's, the defaults', else the file's base name */
    char *system;        /* NULL: none */
    char *prompt;        /* the user turn as sent (choices appended); NULL when messages */
    eval_msg *messages;  /* when not prompt: the turns, system ones included */
    size_t n_messages;
    int64_t max_tokens;  /* -1: the runner's default */
    char *tools;         /* OpenAI tools array as JSON text, NULL: none */
    /* what is expected, by scorer */
    char *expected;      /* exact, contains, number (as written), choice (the letter), judge (a
                            reference, may be NULL); NULL for the others */
    double expected_num; /* number */
    double tol_abs, tol_rel; /* number: passes when |got - want| <= tol_abs + tol_rel |want| */
    bool ignore_case;    /* exact, contains, regex (ASCII letters only) */
    char **choices;      /* the options' texts when given (choices key or an import) */
    size_t n_choices;
    int letters;         /* choice: letters A.. that count as answers (choices, else 4 or up to expected) */
    char *pattern;       /* regex: POSIX extended, searched in the answer */
    regex_t *re;         /* regex: compiled at load */
    cJSON *schema;       /* json_schema: the schema (eval/jschema.h subset) */
    char *call_name;     /* tool_call: the function that must be called */
    cJSON *call_args;    /* tool_call: arguments that must have these values (object), or NULL */
    char *rubric;        /* judge */
    int pass_score;      /* judge: a score at or above passes (default 4) */
} eval_item;

typedef struct eval_suite {
    char *name;     /* the header's name, else the file's or directory's base name */
    char *description; /* the header's (the first file's that has one), or NULL */
    char *path;     /* as given to suite_load */
    strv files;     /* every file read; srcpos.file and items' pos.file point here */
    eval_item *items;
    size_t n_items;
    diags diags;    /* errors and warnings, in the order found */
} eval_suite;

/* Read a suite: a .yaml/.yml or .jsonl file, or a directory whose such
 * files (not hidden, not below a subdirectory) are read in byte order of
 * their names.  Returns 0 when there is no error (warnings allowed), -1
 * otherwise; s is filled either way and must be released. */
int suite_load(eval_suite *s, const char *path);
/* The same from text: file names the text in diags and ids; jsonl picks
 * the format.  For tests and for suites that do not live in a file. */
int suite_load_text(eval_suite *s, const char *text, size_t len, const char *file, bool jsonl);
void suite_release(eval_suite *s);

const eval_item *suite_find(const eval_suite *s, const char *id);
/* The item's chat messages as sent: the system turn first when there is
 * one, then the prompt as a user turn or the item's messages.  Caller
 * frees (cJSON_Delete). */
cJSON *eval_item_messages(const eval_item *it);
/* The largest prompt of the suite in bytes (system and every turn
 * counted), for sizing a context. */
size_t suite_max_prompt_bytes(const eval_suite *s);

#endif
