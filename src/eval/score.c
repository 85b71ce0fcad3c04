/* score.c - the scorers (see score.h).
 *
 * Design: extraction decides what the answer is (and records the rule);
 * each scorer only compares, and says why in a short reason the item
 * record keeps.  An empty reply is an error, a reply whose answer cannot
 * be found is a failure: the first is the server's, the second the
 * model's. */
#include "eval/score.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "eval/jschema.h"
#include "util/jstrict.h"

const char *const score_state_names[] = {"pass", "fail", "error", "judge", NULL};

ex_mode score_mode(int scorer)
{
    switch (scorer) {
    case SC_NUMBER: return EXM_NUMBER;
    case SC_CHOICE: return EXM_CHOICE;
    case SC_EXACT:
    case SC_CONTAINS:
    case SC_REGEX: return EXM_ANSWER;
    default: return EXM_TEXT;
    }
}

static bool blank(const char *s)
{
    for (; s && *s; s++)
        if (!isspace((unsigned char)*s)) return false;
    return true;
}

static void verdict(eval_score *o, bool pass, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void verdict(eval_score *o, bool pass, const char *fmt, ...)
{
    o->state = pass ? SCORE_PASS : SCORE_FAIL;
    o->reason[0] = '\0';
    if (pass) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->reason, sizeof o->reason, fmt, ap);
    va_end(ap);
}

/* trimmed span of s */
static size_t trimmed(const char **s)
{
    const char *p = *s;
    size_t n = strlen(p);
    while (n && isspace((unsigned char)*p)) p++, n--;
    while (n && isspace((unsigned char)p[n - 1])) n--;
    *s = p;
    return n;
}

static bool same_text(const char *a, size_t na, const char *b, size_t nb, bool fold)
{
    return na == nb && (fold ? !strncasecmp(a, b, na) : !memcmp(a, b, na));
}

static void score_exact(eval_score *o, const eval_item *it)
{
    const char *a = o->answer, *e = it->expected;
    size_t na = trimmed(&a), ne = trimmed(&e);
    /* the answer lost a full stop in extraction; an expected one may too */
    bool ok = same_text(a, na, e, ne, it->ignore_case) ||
              (ne > 1 && e[ne - 1] == '.' && same_text(a, na, e, ne - 1, it->ignore_case));
    verdict(o, ok, "expected '%.80s', got '%.80s'%s", it->expected, o->answer,
            !it->ignore_case && same_text(a, na, e, ne, true) ? " (case differs)" : "");
}

static void score_contains(eval_score *o, const eval_item *it)
{
    bool ok = (it->ignore_case ? strcasestr(o->answer, it->expected) : strstr(o->answer, it->expected)) != NULL;
    verdict(o, ok, "'%.80s' is not in the answer", it->expected);
}

static void score_regex(eval_score *o, const eval_item *it)
{
    bool ok = it->re && regexec(it->re, o->answer, 0, NULL, 0) == 0;
    verdict(o, ok, "the answer does not match /%.80s/", it->pattern);
}

static void score_number(eval_score *o, const eval_item *it)
{
    double got;
    if (!ex_first_number(o->answer, strlen(o->answer), &got, NULL, NULL)) {
        verdict(o, false, "no number in the answer '%.80s'", o->answer);
        return;
    }
    double want = it->expected_num;
    bool ok = fabs(got - want) <= it->tol_abs + it->tol_rel * fabs(want);
    verdict(o, ok, "expected %.15g, got %.15g", want, got);
}

static void score_choice(eval_score *o, const eval_item *it)
{
    char got = ex_choice_in(o->answer, strlen(o->answer), it->letters);
    if (!got)
        verdict(o, false, "no choice letter A-%c in the answer '%.80s'", (char)('A' + it->letters - 1), o->answer);
    else
        verdict(o, got == it->expected[0], "expected %s, got %c", it->expected, got);
}

/* the inside of the first ``` fence (its language tag dropped), or all */
static char *unfence(const char *s)
{
    const char *f = strstr(s, "```");
    if (!f) return xstrdup(s);
    const char *body = strchr(f + 3, '\n');
    if (!body) return xstrdup(s);
    body++;
    const char *end = strstr(body, "```");
    return xstrndup(body, end ? (size_t)(end - body) : strlen(body));
}

static void score_json(eval_score *o, const eval_item *it)
{
    char err[300];
    char *text = unfence(o->answer);
    const char *t = text;
    size_t n = trimmed(&t);
    cJSON *j = jstrict_parse(t, n, err, sizeof err);
    if (!j)
        verdict(o, false, "not JSON: %s", err);
    else if (it->scorer == SC_JSON_SCHEMA && jschema_validate(it->schema, j, err, sizeof err))
        verdict(o, false, "%s", err);
    else
        verdict(o, true, "%s", "");
    cJSON_Delete(j);
    free(text);
}

/* a call's arguments as an object: OpenAI sends them as a JSON string */
static cJSON *call_args(const cJSON *fn, bool *owned)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
    *owned = false;
    if (cJSON_IsObject(a)) return (cJSON *)a;
    if (!cJSON_IsString(a)) return NULL;
    *owned = true;
    return jstrict_parse(a->valuestring, strlen(a->valuestring), NULL, 0);
}

/* the call's arguments have every expected value: "" or why not */
static void args_match(const eval_item *it, const cJSON *args, char *why, size_t n)
{
    const cJSON *want;
    why[0] = '\0';
    cJSON_ArrayForEach(want, it->call_args)
    {
        const cJSON *got = cJSON_GetObjectItemCaseSensitive(args, want->string);
        if (got && json_equal(got, want)) continue;
        char *ws = cJSON_PrintUnformatted(want), *gs = got ? cJSON_PrintUnformatted(got) : NULL;
        if (got)
            snprintf(why, n, "call '%s': argument '%s' is %.60s, expected %.60s", it->call_name, want->string, gs, ws);
        else
            snprintf(why, n, "call '%s': argument '%s' is missing (expected %.60s)", it->call_name, want->string, ws);
        cJSON_free(ws);
        cJSON_free(gs);
        return;
    }
}

static void score_tool_call(eval_score *o, const eval_item *it, const eval_reply *r)
{
    char why[sizeof o->reason] = "";
    buf names = BUF_INIT;
    const cJSON *call;
    o->rule = EX_TOOL_CALLS;
    cJSON_ArrayForEach(call, r->tool_calls)
    {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        const char *nm = cJSON_IsString(name) ? name->valuestring : "?";
        buf_printf(&names, "%s%s", names.len ? ", " : "", nm);
        if (strcmp(nm, it->call_name)) continue;
        bool owned;
        cJSON *args = call_args(fn, &owned);
        if (!args)
            snprintf(why, sizeof why, "call '%s': the arguments are not a JSON object", nm);
        else
            args_match(it, args, why, sizeof why);
        if (!o->answer || !why[0]) {
            free(o->answer);
            char *a = args ? cJSON_PrintUnformatted(args) : NULL;
            o->answer = xasprintf("%s(%s)", nm, a ? a : "");
            cJSON_free(a);
        }
        if (owned) cJSON_Delete(args);
        if (!why[0]) break;
    }
    if (!o->answer && names.len)
        snprintf(why, sizeof why, "no call to '%s' (calls: %.120s)", it->call_name, names.p);
    else if (!names.len)
        snprintf(why, sizeof why, "no tool call (expected a call to '%s')", it->call_name);
    verdict(o, !why[0], "%s", why);
    buf_release(&names);
}

/* why no answer was found */
static void no_answer(eval_score *o, const eval_item *it, const eval_reply *r, bool thinking)
{
    view vis = ex_visible(r->content, NULL);
    bool empty = true;
    for (size_t i = 0; i < vis.len && empty; i++) empty = isspace((unsigned char)vis.p[i]);
    if (o->rule == EX_THINKING_ONLY)
        verdict(o, false, "the answer is only in the thinking");
    else if (empty && thinking)
        verdict(o, false, "no answer after the thinking (did it run out of max_tokens?)");
    else if (empty)
        verdict(o, false, "no text in the reply, only tool calls");
    else if (it->scorer == SC_NUMBER)
        verdict(o, false, "no number in the reply");
    else if (it->scorer == SC_CHOICE)
        verdict(o, false, "no choice letter A-%c in the reply", (char)('A' + it->letters - 1));
    else
        verdict(o, false, "no answer in the reply");
}

void score_reply(eval_score *out, const eval_item *it, const eval_reply *r)
{
    memset(out, 0, sizeof *out);
    bool calls = cJSON_GetArraySize(r->tool_calls) > 0;
    if (blank(r->content) && blank(r->reasoning) && !calls) {
        out->state = SCORE_ERROR;
        snprintf(out->reason, sizeof out->reason, "empty reply");
        return;
    }
    if (it->scorer == SC_TOOL_CALL) {
        score_tool_call(out, it, r);
        return;
    }
    ex_result ex;
    extract_answer(&ex, r->content, r->reasoning, score_mode(it->scorer), it->letters);
    out->rule = ex.rule;
    out->answer = ex.answer;
    if (ex.rule == EX_NONE || ex.rule == EX_THINKING_ONLY) {
        no_answer(out, it, r, ex.thinking);
        return;
    }
    switch (it->scorer) {
    case SC_EXACT: score_exact(out, it); break;
    case SC_CONTAINS: score_contains(out, it); break;
    case SC_REGEX: score_regex(out, it); break;
    case SC_NUMBER: score_number(out, it); break;
    case SC_CHOICE: score_choice(out, it); break;
    case SC_JSON_VALID:
    case SC_JSON_SCHEMA: score_json(out, it); break;
    case SC_JUDGE: out->state = SCORE_JUDGE; break;
    }
}

void score_release(eval_score *s)
{
    free(s->answer);
    s->answer = NULL;
}

/* ---- the judge ---- */

void judge_prompt(buf *out, const eval_item *it, const char *answer)
{
    buf_adds(out, "You are grading an answer to a question against a rubric.\n\nRubric:\n");
    buf_adds(out, it->rubric ? it->rubric : "");
    buf_adds(out, "\n\nQuestion:\n");
    if (it->system) buf_printf(out, "system: %s\n", it->system);
    if (it->prompt) buf_adds(out, it->prompt);
    for (size_t i = 0; i < it->n_messages; i++)
        buf_printf(out, "%s%s: %s", i ? "\n" : "", eval_role_names[it->messages[i].role], it->messages[i].content);
    if (it->expected) buf_printf(out, "\n\nReference answer:\n%s", it->expected);
    buf_printf(out, "\n\nAnswer to grade:\n%s\n\n", answer ? answer : "");
    buf_adds(out, "Rate how well the answer meets the rubric on a scale of 1 to 5: 1 wrong or useless, 2 mostly "
                  "wrong, 3 partly right, 4 right with minor flaws, 5 fully right. Explain briefly, then end with "
                  "a last line of the form \"Score: N\" where N is 1, 2, 3, 4 or 5.\n");
}

/* "score" at s[i] as a label: the number after it, or -1; *frac when it
 * has decimals ("4.5") */
static long score_after(const char *s, size_t len, size_t i, bool *frac)
{
    if (i > 0 && (isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_')) return -1;
    size_t p = i + 5;
    while (p < len && (s[p] == ' ' || s[p] == '*' || s[p] == '_')) p++;
    if (p < len && (s[p] == ':' || s[p] == '='))
        p++;
    else if (p + 1 < len && !strncasecmp(s + p, "is", 2))
        p += 2;
    else
        return -1;
    while (p < len && (s[p] == ' ' || s[p] == '*' || s[p] == '_')) p++;
    if (p >= len || !isdigit((unsigned char)s[p])) return -1;
    long v = 0;
    while (p < len && isdigit((unsigned char)s[p]) && v < 1000) v = v * 10 + (s[p++] - '0');
    *frac = p + 1 < len && s[p] == '.' && isdigit((unsigned char)s[p + 1]);
    return v;
}

int judge_parse(const char *reply, const char *reasoning, int *score, char *err, size_t errlen)
{
    view vis = ex_visible(reply, NULL);
    long found = -1;
    bool frac = false;
    for (size_t i = 0; i + 5 <= vis.len; i++) {
        if (strncasecmp(vis.p + i, "score", 5)) continue;
        bool f;
        long v = score_after(vis.p, vis.len, i, &f);
        if (v >= 0) found = v, frac = f;
    }
    if (found < 0) {
        snprintf(err, errlen, "no \"Score: N\" line in the judge's reply%s",
                 blank(reasoning) ? "" : " (its reasoning is not read)");
        return -1;
    }
    if (frac || found < 1 || found > 5) {
        snprintf(err, errlen, "the judge's score %ld%s is not one of 1, 2, 3, 4, 5", found, frac ? ".x" : "");
        return -1;
    }
    *score = (int)found;
    return 0;
}

void score_judged(eval_score *s, const eval_item *it, const char *judge_content, const char *judge_reasoning)
{
    char err[160];
    int n;
    if (judge_parse(judge_content, judge_reasoning, &n, err, sizeof err)) {
        s->state = SCORE_ERROR;
        snprintf(s->reason, sizeof s->reason, "judge: %s", err);
        return;
    }
    s->judge = n;
    verdict(s, n >= it->pass_score, "the judge scored %d (passing is %d or more)", n, it->pass_score);
}
