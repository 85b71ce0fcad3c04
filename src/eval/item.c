/* item.c - one suite item (see item.h and suite.h).
 *
 * Design: the configuration's field-table engine (config/schema.h) reads
 * each item into a raw record, with the same wording for unknown keys
 * (and their "did you mean"), types and ranges; what depends on the
 * scorer is kept as nodes and judged once the scorer is known, so a key
 * the scorer would not read is an error at that key, never dropped.  An
 * import is classified by its keys (question or problem) and rewritten as
 * a native item: prompt with the choices and the answer format, scorer,
 * expected. */
#include "eval/item.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/schema.h"
#include "eval/extract.h"
#include "eval/jschema.h"

const char *const eval_scorer_names[] = {"exact",      "regex",       "number",    "choice", "contains",
                                         "json_valid", "json_schema", "tool_call", "judge",  NULL};
const char *const eval_role_names[] = {"system", "user", "assistant", NULL};

#define MAX_TOKENS_MAX 1048576
#define MAX_CHOICES 26

/* what the tables fill; nodes for what the scorer decides */
typedef struct raw_item {
    char *id, *prompt, *system, *category, *pattern, *rubric;
    int scorer;
    int64_t max_tokens, pass_score;
    bool ignore_case;
    const ynode *messages, *tools, *expected, *tolerance, *schema, *choices;
    /* imports */
    char *question, *problem, *subject, *type, *unique_id;
    const ynode *answer;
} raw_item;

static void keep_node(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    *(const ynode **)((char *)obj + f->off) = yscalar_is_null(n) ? NULL : n;
}

static void not_shown(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
}

#define R(x) offsetof(raw_item, x)
static const field native_tab[] = {
    {.key = "id", .type = F_STR, .off = R(id), .doc = "unique in the suite; default FILE:LINE"},
    {.key = "prompt", .type = F_STR, .off = R(prompt), .flags = FL_TEXT, .doc = "the user turn"},
    {.key = "messages", .type = F_CUSTOM, .off = R(messages), .parse = keep_node, .doc = "the turns: role, content"},
    {.key = "system", .type = F_STR, .off = R(system), .flags = FL_TEXT, .doc = "a system turn first"},
    {.key = "expected", .type = F_CUSTOM, .off = R(expected), .parse = keep_node, .doc = "what the scorer wants"},
    {.key = "category", .type = F_STR, .off = R(category), .doc = "a group in the report"},
    {.key = "scorer", .type = F_ENUM, .off = R(scorer), .names = eval_scorer_names, .doc = "how to score"},
    {.key = "max_tokens", .type = F_INT, .off = R(max_tokens), .min = 1, .max = MAX_TOKENS_MAX},
    {.key = "tools", .type = F_CUSTOM, .off = R(tools), .parse = keep_node, .doc = "OpenAI tools array"},
    {.key = "choices", .type = F_CUSTOM, .off = R(choices), .parse = keep_node, .doc = "options, shown as A. B. ..."},
    {.key = "tolerance", .type = F_CUSTOM, .off = R(tolerance), .parse = keep_node, .doc = "number: 0.5 or 1%"},
    {.key = "ignore_case", .type = F_BOOL, .off = R(ignore_case), .doc = "exact, contains, regex"},
    {.key = "pattern", .type = F_STR, .off = R(pattern), .flags = FL_TEXT, .doc = "regex: POSIX extended"},
    {.key = "schema", .type = F_CUSTOM, .off = R(schema), .parse = keep_node, .doc = "json_schema: the schema"},
    {.key = "rubric", .type = F_STR, .off = R(rubric), .flags = FL_TEXT, .doc = "judge: what a good answer is"},
    {.key = "pass_score", .type = F_INT, .off = R(pass_score), .min = 1, .max = 5, .doc = "judge: default 4"},
    {NULL},
};

static const field import_tab[] = {
    {.key = "id", .type = F_STR, .off = R(id)},
    {.key = "question", .type = F_STR, .off = R(question), .flags = FL_TEXT},
    {.key = "problem", .type = F_STR, .off = R(problem), .flags = FL_TEXT},
    {.key = "choices", .type = F_CUSTOM, .off = R(choices), .parse = keep_node},
    {.key = "answer", .type = F_CUSTOM, .off = R(answer), .parse = keep_node},
    {.key = "category", .type = F_STR, .off = R(category)},
    {.key = "system", .type = F_STR, .off = R(system), .flags = FL_TEXT},
    {.key = "max_tokens", .type = F_INT, .off = R(max_tokens), .min = 1, .max = MAX_TOKENS_MAX},
    /* what MATH and AIME dumps carry: subject or type names the category,
     * unique_id the id; the rest is never shown to the model */
    {.key = "subject", .type = F_STR, .off = R(subject)},
    {.key = "type", .type = F_STR, .off = R(type)},
    {.key = "unique_id", .type = F_STR, .off = R(unique_id)},
    {.key = "solution", .type = F_CUSTOM, .parse = not_shown},
    {.key = "level", .type = F_CUSTOM, .parse = not_shown},
    {.key = "url", .type = F_CUSTOM, .parse = not_shown},
    {NULL},
};
#undef R

/* the keys only some scorers read */
#define M(s) (1u << (s))
static const struct {
    const char *key;
    unsigned mask;
} scorer_keys[] = {
    {"expected", M(SC_EXACT) | M(SC_NUMBER) | M(SC_CHOICE) | M(SC_CONTAINS) | M(SC_TOOL_CALL) | M(SC_JUDGE)},
    {"tolerance", M(SC_NUMBER)},
    {"ignore_case", M(SC_EXACT) | M(SC_CONTAINS) | M(SC_REGEX)},
    {"choices", M(SC_CHOICE)},
    {"pattern", M(SC_REGEX)},
    {"schema", M(SC_JSON_SCHEMA)},
    {"rubric", M(SC_JUDGE)},
    {"pass_score", M(SC_JUDGE)},
};

/* a temporary subject suffix ("item 'q1': messages[2]") */
typedef struct subj_saved {
    char s[sizeof((schema_ctx *)0)->subject];
} subj_saved;

static void subj_push(schema_ctx *c, subj_saved *sv, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void subj_push(schema_ctx *c, subj_saved *sv, const char *fmt, ...)
{
    memcpy(sv->s, c->subject, sizeof sv->s);
    size_t l = strlen(c->subject);
    if (l + 2 >= sizeof c->subject) return;
    memcpy(c->subject + l, ": ", 3);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->subject + l + 2, sizeof c->subject - l - 2, fmt, ap);
    va_end(ap);
}

static void subj_pop(schema_ctx *c, const subj_saved *sv)
{
    memcpy(c->subject, sv->s, sizeof sv->s);
}

cJSON *ynode_to_json(const ynode *n)
{
    if (n->kind == Y_MAP) {
        cJSON *o = cJSON_CreateObject();
        for (size_t i = 0; i < n->npairs; i++)
            cJSON_AddItemToObject(o, n->pairs[i].key->s, ynode_to_json(n->pairs[i].val));
        return o;
    }
    if (n->kind == Y_SEQ) {
        cJSON *a = cJSON_CreateArray();
        for (size_t i = 0; i < n->n; i++) cJSON_AddItemToArray(a, ynode_to_json(n->items[i]));
        return a;
    }
    if (!n->plain) return cJSON_CreateString(n->s);
    if (yscalar_is_null(n)) return cJSON_CreateNull();
    int b = yscalar_bool(n);
    if (b >= 0) return cJSON_CreateBool(b);
    int64_t i;
    if (!parse_int64(n->s, &i)) return cJSON_CreateNumber((double)i);
    char *end;
    errno = 0;
    double d = strtod(n->s, &end);
    if (end != n->s && !*end && !errno && isfinite(d) && (isdigit((unsigned char)n->s[0]) || strchr("+-.", n->s[0])))
        return cJSON_CreateNumber(d);
    return cJSON_CreateString(n->s);
}

/* ---- pieces of an item ---- */

/* the text of key's node, required; false with an error */
static bool need_text(schema_ctx *c, const ynode *m, const char *key, const ynode *n, const char *why,
                      const char **out)
{
    if (!n) {
        schema_error(c, m, "required key '%s' is missing (%s)", key, why);
        return false;
    }
    if (n->kind != Y_SCALAR) {
        schema_error(c, n, "%s: expected a string, found %s", key, ykind_name(n));
        return false;
    }
    if (text_has_control(n->s, true)) {
        schema_error(c, n, "%s: control character in string", key);
        return false;
    }
    if (!n->s[0]) {
        schema_error(c, n, "%s: empty", key);
        return false;
    }
    *out = n->s;
    return true;
}

/* the options of a multiple-choice item */
static void parse_choices(schema_ctx *c, const ynode *n, eval_item *it)
{
    if (n->kind != Y_SEQ || n->n < 2 || n->n > MAX_CHOICES) {
        schema_error(c, n, "choices: expected a list of 2 to %d options, found %s%s", MAX_CHOICES, ykind_name(n),
                     n->kind == Y_SEQ ? " of another length" : "");
        return;
    }
    it->choices = xcalloc(n->n, sizeof *it->choices);
    for (size_t i = 0; i < n->n; i++) {
        const ynode *o = n->items[i];
        if (o->kind != Y_SCALAR || yscalar_is_null(o)) {
            schema_error(c, o, "choices[%zu]: expected a string, found %s", i, ykind_name(o));
            continue;
        }
        if (text_has_control(o->s, true)) {
            schema_error(c, o, "choices[%zu]: control character in string", i);
            continue;
        }
        it->choices[it->n_choices++] = xstrdup(o->s);
    }
    it->letters = (int)n->n;
}

static void trim_span(const char **p, size_t *n)
{
    while (*n && isspace((unsigned char)**p)) (*p)++, (*n)--;
    while (*n && isspace((unsigned char)(*p)[*n - 1])) (*n)--;
}

/* The letter an answer key names: a letter, the text of a choice, or a
 * 0-based index (a number, not a quoted string).  0 with an error. */
static char choice_key(schema_ctx *c, const char *key, const ynode *n, const eval_item *it)
{
    int64_t idx;
    size_t nc = it->n_choices;
    if (n->plain && !parse_int64(n->s, &idx)) {
        if (nc && idx >= 0 && (size_t)idx < nc) return (char)('A' + idx);
        if (nc) schema_error(c, n, "%s: index %s is out of range: expected 0..%zu (0-based)", key, n->s, nc - 1);
        if (!nc) schema_error(c, n, "%s: an index (%s) needs choices to count in", key, n->s);
        return 0;
    }
    const char *p = n->s;
    size_t len = strlen(p), hits = 0;
    trim_span(&p, &len);
    char c1 = len == 1 ? (char)toupper((unsigned char)p[0]) : 0;
    if (c1 >= 'A' && c1 <= 'Z' && (!nc || (size_t)(c1 - 'A') < nc)) return c1;
    char found = 0;
    for (size_t i = 0; i < nc; i++) {
        const char *q = it->choices[i];
        size_t ql = strlen(q);
        trim_span(&q, &ql);
        if (ql == len && !memcmp(p, q, len) && hits++ == 0) found = (char)('A' + i);
    }
    if (hits == 1) return found;
    if (hits > 1)
        schema_error(c, n, "%s: '%s' is the text of more than one choice", key, n->s);
    else if (nc)
        schema_error(c, n, "%s: '%s' is neither a letter A-%c, the text of a choice nor a 0-based index", key,
                     n->s, (char)('A' + nc - 1));
    else
        schema_error(c, n, "%s: expected a choice letter A-Z, found '%s'", key, n->s);
    return 0;
}

static void set_letter(eval_item *it, char letter)
{
    it->expected = xstrndup(&letter, 1);
    if (!it->letters) it->letters = letter - 'A' + 1 > 4 ? letter - 'A' + 1 : 4;
}

/* "0.5" (absolute) or "1%" (relative): replaces the default */
static void parse_tolerance(schema_ctx *c, const ynode *n, eval_item *it)
{
    double v = NAN;
    bool pct = false;
    if (n->kind == Y_SCALAR) {
        char *end;
        errno = 0;
        v = strtod(n->s, &end);
        if (end == n->s || errno) v = NAN;
        while (*end == ' ') end++;
        if ((pct = *end == '%')) end++;
        if (*end) v = NAN;
    }
    if (!(v >= 0) || !isfinite(v)) {
        schema_error(c, n, "tolerance: expected a number >= 0 (absolute) or a percentage like 1%%, found %s%s%s",
                     n->kind == Y_SCALAR ? "'" : "", n->kind == Y_SCALAR ? n->s : ykind_name(n),
                     n->kind == Y_SCALAR ? "'" : "");
        return;
    }
    it->tol_abs = pct ? 0 : v;
    it->tol_rel = pct ? v / 100 : 0;
}

static void compile_pattern(schema_ctx *c, const ynode *m, const raw_item *r, eval_item *it)
{
    if (!r->pattern || !r->pattern[0]) {
        schema_error(c, m, "required key 'pattern' is missing (the regex scorer searches the answer with it)");
        return;
    }
    it->pattern = xstrdup(r->pattern);
    it->re = xmalloc(sizeof *it->re);
    int rc = regcomp(it->re, it->pattern, REG_EXTENDED | REG_NOSUB | (it->ignore_case ? REG_ICASE : 0));
    if (rc) {
        char why[160];
        regerror(rc, it->re, why, sizeof why);
        schema_error(c, ymap_get(m, "pattern"), "pattern: not a POSIX extended regular expression: %s", why);
        free(it->re);
        it->re = NULL;
    }
}

static void parse_schema(schema_ctx *c, const ynode *m, const raw_item *r, eval_item *it)
{
    char why[400];
    if (!r->schema) {
        schema_error(c, m, "required key 'schema' is missing (the json_schema scorer checks the answer with it)");
        return;
    }
    it->schema = ynode_to_json(r->schema);
    if (jschema_check(it->schema, why, sizeof why)) schema_error(c, r->schema, "schema: %s", why);
}

/* the function names of a tools list, after tools_json checked it */
static bool tool_named(const ynode *tools, const char *name)
{
    for (size_t i = 0; i < tools->n; i++) {
        const ynode *nm = ymap_get(ymap_get(tools->items[i], "function"), "name");
        if (nm && nm->kind == Y_SCALAR && !strcmp(nm->s, name)) return true;
    }
    return false;
}

static char *tools_json(schema_ctx *c, const ynode *n)
{
    if (n->kind != Y_SEQ || !n->n) {
        schema_error(c, n, "tools: expected a non-empty list of tools (OpenAI's tools array), found %s",
                     ykind_name(n));
        return NULL;
    }
    bool ok = true;
    for (size_t i = 0; i < n->n; i++) {
        const ynode *t = n->items[i], *ty = ymap_get(t, "type"), *fn = ymap_get(t, "function");
        const ynode *nm = ymap_get(fn, "name");
        if (!ty || ty->kind != Y_SCALAR || strcmp(ty->s, "function") || !nm || nm->kind != Y_SCALAR ||
            yscalar_is_null(nm)) {
            schema_error(c, t, "tools[%zu]: expected {type: function, function: {name: ..., parameters: ...}}", i);
            ok = false;
        }
    }
    if (!ok) return NULL;
    cJSON *j = ynode_to_json(n);
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    char *own = xstrdup(text);
    cJSON_free(text);
    return own;
}

typedef struct raw_call {
    char *name;
    const ynode *args;
} raw_call;

static const field call_tab[] = {
    {.key = "name", .type = F_STR, .off = offsetof(raw_call, name), .flags = FL_REQUIRED},
    {.key = "arguments", .type = F_CUSTOM, .off = offsetof(raw_call, args), .parse = keep_node},
    {NULL},
};

static void parse_call(schema_ctx *c, const ynode *m, const raw_item *r, eval_item *it)
{
    if (!r->tools) {
        schema_error(c, m, "required key 'tools' is missing (the tool_call scorer needs the tools to call)");
        return;
    }
    if (!r->expected || r->expected->kind != Y_MAP) {
        if (!r->expected)
            schema_error(c, m, "required key 'expected' is missing (the tool_call scorer takes {name, arguments})");
        else
            schema_error(c, r->expected, "expected: the tool_call scorer takes a mapping {name, arguments}, found %s",
                         ykind_name(r->expected));
        return;
    }
    subj_saved sv;
    subj_push(c, &sv, "expected");
    raw_call rc = {0};
    schema_parse(c, call_tab, r->expected, &rc);
    subj_pop(c, &sv);
    if (rc.args && rc.args->kind != Y_MAP)
        schema_error(c, rc.args, "expected.arguments: expected a mapping of argument names to values, found %s",
                     ykind_name(rc.args));
    else if (rc.args)
        it->call_args = ynode_to_json(rc.args);
    if (rc.name && r->tools->kind == Y_SEQ && !tool_named(r->tools, rc.name))
        schema_error(c, ymap_get(r->expected, "name"), "expected.name: '%s' is not one of the item's tools", rc.name);
    it->call_name = rc.name;
}

typedef struct raw_msg {
    int role;
    char *content;
} raw_msg;

static const field msg_tab[] = {
    {.key = "role", .type = F_ENUM, .off = offsetof(raw_msg, role), .names = eval_role_names, .flags = FL_REQUIRED},
    {.key = "content", .type = F_STR, .off = offsetof(raw_msg, content), .flags = FL_TEXT | FL_REQUIRED},
    {NULL},
};

static void parse_messages(schema_ctx *c, const ynode *n, const raw_item *r, eval_item *it)
{
    if (n->kind != Y_SEQ || !n->n) {
        schema_error(c, n, "messages: expected a non-empty list of {role, content}, found %s", ykind_name(n));
        return;
    }
    it->messages = xcalloc(n->n, sizeof *it->messages);
    bool user = false, sys = false;
    for (size_t i = 0; i < n->n; i++) {
        raw_msg rm = {-1, NULL};
        subj_saved sv;
        subj_push(c, &sv, "messages[%zu]", i);
        schema_parse(c, msg_tab, n->items[i], &rm);
        subj_pop(c, &sv);
        if (rm.role < 0 || !rm.content) {
            free(rm.content);
            continue;
        }
        user = user || rm.role == ROLE_USER;
        sys = sys || rm.role == ROLE_SYSTEM;
        it->messages[it->n_messages++] = (eval_msg){rm.role, rm.content};
    }
    if (!user && it->n_messages == n->n) schema_error(c, n, "messages: no user turn");
    if (sys && r->system) schema_error(c, n, "messages: a system turn, and the item's system key too: keep one");
}

/* a key the item's scorer would not read: an error at the key */
static void check_scorer_keys(schema_ctx *c, const ynode *m, int scorer)
{
    for (size_t i = 0; i < m->npairs; i++) {
        for (size_t k = 0; k < sizeof scorer_keys / sizeof *scorer_keys; k++) {
            if (strcmp(m->pairs[i].key->s, scorer_keys[k].key) || (scorer_keys[k].mask & M(scorer))) continue;
            buf who = BUF_INIT;
            for (int s = 0, nb = 0; s < SC__COUNT; s++)
                if (scorer_keys[k].mask & M(s)) buf_printf(&who, "%s%s", nb++ ? ", " : "", eval_scorer_names[s]);
            schema_error(c, m->pairs[i].key, "%s: the %s scorer does not read it (read by: %s)", scorer_keys[k].key,
                         eval_scorer_names[scorer], who.p);
            buf_release(&who);
        }
    }
}

/* What the scorer needs, from the raw keys. */
static void parse_expectation(schema_ctx *c, const ynode *m, const raw_item *r, eval_item *it)
{
    const char *t;
    const char *why = it->scorer == SC_NUMBER   ? "the number scorer compares the answer with it"
                      : it->scorer == SC_CHOICE ? "the choice scorer needs the right letter"
                                                : "the scorer compares the answer with it";
    switch (it->scorer) {
    case SC_EXACT:
    case SC_CONTAINS:
        if (need_text(c, m, "expected", r->expected, why, &t)) it->expected = xstrdup(t);
        break;
    case SC_NUMBER:
        if (!need_text(c, m, "expected", r->expected, why, &t)) break;
        if (ex_parse_number(t, &it->expected_num))
            schema_error(c, r->expected, "expected: '%s' is not a number (like 42, -1.5, 1,234, $5, 3/4, 5 km)", t);
        it->expected = xstrdup(t);
        if (r->tolerance) parse_tolerance(c, r->tolerance, it);
        break;
    case SC_CHOICE: {
        char l = 0;
        if (need_text(c, m, "expected", r->expected, why, &t)) l = choice_key(c, "expected", r->expected, it);
        if (l) set_letter(it, l);
        break;
    }
    case SC_REGEX: compile_pattern(c, m, r, it); break;
    case SC_JSON_VALID: break;
    case SC_JSON_SCHEMA: parse_schema(c, m, r, it); break;
    case SC_TOOL_CALL: parse_call(c, m, r, it); break;
    case SC_JUDGE:
        if (!r->rubric || !r->rubric[0])
            schema_error(c, m, "required key 'rubric' is missing (the judge scores the answer against it)");
        it->rubric = r->rubric ? xstrdup(r->rubric) : NULL;
        if (r->expected && need_text(c, m, "expected", r->expected, why, &t)) it->expected = xstrdup(t);
        it->pass_score = r->pass_score > 0 ? (int)r->pass_score : 4;
        break;
    }
}

/* the prompt with its options as "A. text" lines */
static char *with_choices(const char *text, const eval_item *it, const char *tail)
{
    buf b = BUF_INIT;
    buf_adds(&b, text);
    buf_adds(&b, "\n");
    for (size_t i = 0; i < it->n_choices; i++) buf_printf(&b, "\n%c. %s", (char)('A' + i), it->choices[i]);
    if (tail) buf_printf(&b, "\n\n%s", tail);
    return buf_detach(&b);
}

static void build_native(schema_ctx *c, const ynode *m, const raw_item *r, const item_defaults *def, eval_item *it)
{
    it->scorer = r->scorer >= 0 ? r->scorer : def->scorer >= 0 ? def->scorer : r->choices ? SC_CHOICE : SC_EXACT;
    if (r->scorer < 0 && ymap_get(m, "scorer") && !yscalar_is_null(ymap_get(m, "scorer")))
        return; /* an unknown scorer, said already: what it needs is unknown too */
    check_scorer_keys(c, m, it->scorer);
    if (r->prompt && r->messages)
        schema_error(c, ymap_get(m, "messages"), "an item has prompt or messages, not both");
    else if (r->messages)
        parse_messages(c, r->messages, r, it);
    else if (!r->prompt || !r->prompt[0])
        schema_error(c, ymap_get(m, "prompt"), "prompt: empty");
    it->ignore_case = r->ignore_case;
    if (r->choices && it->scorer == SC_CHOICE) {
        if (r->prompt)
            parse_choices(c, r->choices, it);
        else
            schema_error(c, r->choices, "choices: only with prompt (the options are appended to it)");
    }
    if (r->tools) it->tools = tools_json(c, r->tools);
    parse_expectation(c, m, r, it);
    if (r->prompt && !r->messages) it->prompt = it->n_choices ? with_choices(r->prompt, it, NULL) : xstrdup(r->prompt);
    bool sys_turn = false;
    for (size_t i = 0; i < it->n_messages; i++) sys_turn = sys_turn || it->messages[i].role == ROLE_SYSTEM;
    if (r->system)
        it->system = xstrdup(r->system);
    else if (def->system && !sys_turn) /* the item's own system turn wins over the defaults */
        it->system = xstrdup(def->system);
}

/* GSM8K's "... #### 72": the text after the last "####" */
static const char *gsm8k_final(const char *answer)
{
    const char *last = NULL;
    for (const char *p = answer; (p = strstr(p, "####")); p += 4) last = p + 4;
    if (!last) return NULL;
    while (*last == ' ' || *last == '\t') last++;
    return last;
}

static void build_import(schema_ctx *c, const ynode *m, const raw_item *r, eval_item *it)
{
    static const char *const fmt_choice = "Answer with the letter of the correct choice, on a last line of the "
                                          "form \"Answer: X\".";
    static const char *const fmt_other = "Give the final answer on a last line of the form \"Answer: <answer>\".";
    it->imported = true;
    const char *text = r->question ? r->question : r->problem;
    const char *t;
    if (r->question && r->problem)
        schema_error(c, ymap_get(m, "problem"), "an import has question or problem, not both");
    if (!text || !text[0]) {
        const char *key = ymap_get(m, "question") ? "question" : "problem";
        schema_error(c, ymap_get(m, key), "%s: empty", key);
        return;
    }
    if (!need_text(c, m, "answer", r->answer, "an import's right answer", &t)) return;
    if (r->choices) {
        it->scorer = SC_CHOICE;
        parse_choices(c, r->choices, it);
        char l = it->n_choices == (size_t)it->letters ? choice_key(c, "answer", r->answer, it) : 0;
        if (l) set_letter(it, l);
        it->prompt = with_choices(text, it, fmt_choice);
        return;
    }
    const char *g = gsm8k_final(t);
    if (g && ex_parse_number(g, &it->expected_num)) {
        schema_error(c, r->answer, "answer: the text after '####' is not a number: '%.80s'", g);
        return;
    }
    if (g) t = g;
    it->scorer = g || !ex_parse_number(t, &it->expected_num) ? SC_NUMBER : SC_EXACT;
    it->expected = xstrdup(t);
    it->prompt = xasprintf("%s\n\n%s", text, fmt_other);
}

int item_parse(eval_item *it, const ynode *m, const char *file, const char *genid, const item_defaults *def,
               diags *d)
{
    memset(it, 0, sizeof *it);
    schema_ctx c = {file, d, "", false};
    const ynode *idn = ymap_get(m, "id");
    bool has_id = idn && idn->kind == Y_SCALAR && !yscalar_is_null(idn);
    snprintf(c.subject, sizeof c.subject, "item '%.120s'", has_id ? idn->s : genid);
    it->pos = ypos(file, m);
    it->id = xstrdup(has_id ? idn->s : genid);
    if (m->kind != Y_MAP) {
        schema_error(&c, m, "expected a mapping of keys, found %s", ykind_name(m));
        return -1;
    }
    bool native = ymap_get(m, "prompt") || ymap_get(m, "messages");
    bool import = ymap_get(m, "question") || ymap_get(m, "problem");
    raw_item r = {.scorer = -1, .max_tokens = -1, .pass_score = -1};
    if (native == import) {
        if (!native) { /* a typo of prompt is best said as one: "did you mean" */
            schema_parse(&c, native_tab, m, &r);
            schema_release(native_tab, &r);
        }
        schema_error(&c, m, native ? "an item has prompt or messages, or the question or problem of an import, not both"
                                   : "an item needs prompt or messages (or question or problem, to import a dataset's "
                                     "item)");
        return -1;
    }
    it->tol_rel = EVAL_TOL_REL_DEFAULT;
    const field *tab = native ? native_tab : import_tab;
    schema_parse(&c, tab, m, &r);
    it->max_tokens = r.max_tokens > 0 ? r.max_tokens : def->max_tokens > 0 ? def->max_tokens : -1;
    if (native)
        build_native(&c, m, &r, def, it);
    else
        build_import(&c, m, &r, it);
    if (!native && r.system) it->system = xstrdup(r.system);
    const char *id = r.id ? r.id : r.unique_id ? r.unique_id : genid;
    if (!id[0]) schema_error(&c, idn, "id: empty");
    free(it->id);
    it->id = xstrdup(id);
    const char *cat = r.category ? r.category : r.subject ? r.subject : r.type ? r.type : def->category;
    it->category = xstrdup(cat ? cat : "");
    schema_release(tab, &r);
    if (c.failed) {
        char *keep = it->id;
        srcpos at = it->pos;
        it->id = NULL;
        item_release(it);
        it->id = keep;
        it->pos = at;
        return -1;
    }
    return 0;
}

void item_release(eval_item *it)
{
    free(it->id);
    free(it->category);
    free(it->system);
    free(it->prompt);
    for (size_t i = 0; i < it->n_messages; i++) free(it->messages[i].content);
    free(it->messages);
    free(it->tools);
    free(it->expected);
    for (size_t i = 0; i < it->n_choices; i++) free(it->choices[i]);
    free(it->choices);
    free(it->pattern);
    if (it->re) regfree(it->re);
    free(it->re);
    cJSON_Delete(it->schema);
    free(it->call_name);
    cJSON_Delete(it->call_args);
    free(it->rubric);
    memset(it, 0, sizeof *it);
}
