/* test_eval_score.c - the scorers on what models really send: right and
 * wrong answers for every scorer, case and full stops, numbers with
 * units, commas, signs and tolerances, choice letters inside words, the
 * answer only in the thinking, empty and blank replies (errors, not
 * failures), JSON in fences and in prose, the schema subset (and what
 * it refuses), tool calls with string or object arguments, and the
 * judge's prompt and the parsing of its reply. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "eval/jschema.h"
#include "eval/score.h"
#include "eval/suite.h"

static eval_suite suite;

static const char suite_text[] =
    "items:\n"
    "  - {id: exact, prompt: p, expected: Paris}\n"
    "  - {id: exact-ci, prompt: p, expected: Paris, ignore_case: true}\n"
    "  - {id: exact-dot, prompt: p, expected: Paris.}\n"
    "  - {id: contains, prompt: p, scorer: contains, expected: Jupiter}\n"
    "  - {id: contains-ci, prompt: p, scorer: contains, expected: jupiter, ignore_case: true}\n"
    "  - {id: regex, prompt: p, scorer: regex, pattern: '^#?[fF]{2}0{4}$'}\n"
    "  - {id: regex-ci, prompt: p, scorer: regex, pattern: '^yes$', ignore_case: true}\n"
    "  - {id: num, prompt: p, scorer: number, expected: '1,234.5'}\n"
    "  - {id: neg, prompt: p, scorer: number, expected: -7}\n"
    "  - {id: pct, prompt: p, scorer: number, expected: 100, tolerance: 1%}\n"
    "  - {id: abs, prompt: p, scorer: number, expected: 150 km, tolerance: 0.5}\n"
    "  - {id: exact0, prompt: p, scorer: number, expected: 42, tolerance: 0}\n"
    "  - {id: def, prompt: p, scorer: number, expected: 42}\n"
    "  - {id: choice, prompt: p, choices: [a, b, c, d], expected: B}\n"
    "  - {id: json, prompt: p, scorer: json_valid}\n"
    "  - id: schema\n"
    "    prompt: p\n"
    "    scorer: json_schema\n"
    "    schema:\n"
    "      type: object\n"
    "      required: [name, age]\n"
    "      additionalProperties: false\n"
    "      properties:\n"
    "        name: {type: string, minLength: 1}\n"
    "        age: {type: integer, minimum: 0, maximum: 150}\n"
    "        tags: {type: array, items: {enum: [a, b]}, maxItems: 2}\n"
    "  - id: tool\n"
    "    prompt: p\n"
    "    scorer: tool_call\n"
    "    tools: [{type: function, function: {name: get_weather}}, {type: function, function: {name: search}}]\n"
    "    expected: {name: get_weather, arguments: {city: Paris, days: 2}}\n"
    "  - id: tool-any\n"
    "    prompt: p\n"
    "    scorer: tool_call\n"
    "    tools: [{type: function, function: {name: search}}]\n"
    "    expected: {name: search}\n"
    "  - {id: judge, prompt: Explain TCP., scorer: judge, rubric: Mentions reliability., expected: A reliable stream}\n"
    "  - {id: judge3, scorer: judge, rubric: r, pass_score: 3, messages: [{role: user, content: hi}]}\n";

static int setup(void **state)
{
    if (suite_load_text(&suite, suite_text, sizeof suite_text - 1, "t.yaml", false)) {
        buf b = BUF_INIT;
        diags_text(&b, &suite.diags, NULL);
        print_error("%s", b.p);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    suite_release(&suite);
    return 0;
}

static const eval_item *item(const char *id)
{
    const eval_item *it = suite_find(&suite, id);
    if (!it) fail_msg("no item %s", id);
    return it;
}

/* score content (and reasoning) against item id; checks state, rule and
 * that the reason holds `why` (NULL: any) */
#define check(id, content, reasoning, st, rule, why) \
    check_at((id), (content), (reasoning), NULL, (st), (rule), (why), __FILE__, __LINE__)
static void check_at(const char *id, const char *content, const char *reasoning, const cJSON *calls, score_state st,
                     ex_rule rule, const char *why, const char *file, int line)
{
    eval_reply r = {content, reasoning, calls};
    eval_score s;
    score_reply(&s, item(id), &r);
    bool ok = s.state == st && s.rule == rule && (!why || strstr(s.reason, why));
    if (!ok) {
        print_error("%s on '%s': %s %s '%s' (answer '%s'), want %s %s '%s'\n", id, content ? content : "(null)",
                    score_state_names[s.state], ex_rule_name(s.rule), s.reason, s.answer ? s.answer : "(null)",
                    score_state_names[st], ex_rule_name(rule), why ? why : "");
        score_release(&s);
        _fail(file, line);
    }
    score_release(&s);
}

static void text_scorers(void **state)
{
    check("exact", "Answer: Paris", NULL, SCORE_PASS, EX_ANSWER_LINE, "");
    check("exact", "  Paris.\n", NULL, SCORE_PASS, EX_WHOLE_TEXT, "");
    check("exact", "paris", NULL, SCORE_FAIL, EX_WHOLE_TEXT, "expected 'Paris', got 'paris' (case differs)");
    check("exact", "It is Paris", NULL, SCORE_FAIL, EX_WHOLE_TEXT, "expected 'Paris', got 'It is Paris'");
    check("exact-ci", "**PARIS**", NULL, SCORE_PASS, EX_WHOLE_TEXT, "");
    check("exact-dot", "Paris", NULL, SCORE_PASS, EX_WHOLE_TEXT, "");
    check("contains", "The largest is Jupiter, by far.", NULL, SCORE_PASS, EX_WHOLE_TEXT, "");
    check("contains", "the largest is jupiter", NULL, SCORE_FAIL, EX_WHOLE_TEXT, "'Jupiter' is not in the answer");
    check("contains-ci", "JUPITER", NULL, SCORE_PASS, EX_WHOLE_TEXT, "");
    check("regex", "Answer: #FF0000", NULL, SCORE_PASS, EX_ANSWER_LINE, "");
    check("regex", "ff0000", NULL, SCORE_PASS, EX_WHOLE_TEXT, "");
    check("regex", "red is #FF0000", NULL, SCORE_FAIL, EX_WHOLE_TEXT, "does not match /^#?[fF]{2}0{4}$/");
    check("regex-ci", "YES", NULL, SCORE_PASS, EX_WHOLE_TEXT, "");
}

static void numbers(void **state)
{
    check("num", "The distance is 1,234.5 km", NULL, SCORE_PASS, EX_LAST_NUMBER, "");
    check("num", "Answer: 1234.5 km (about)", NULL, SCORE_PASS, EX_ANSWER_LINE, "");
    check("num", "Answer: 1,234", NULL, SCORE_FAIL, EX_ANSWER_LINE, "expected 1234.5, got 1234");
    check("num", "Answer: about a thousand", NULL, SCORE_FAIL, EX_ANSWER_LINE, "no number in the answer");
    check("neg", "Answer: -7", NULL, SCORE_PASS, EX_ANSWER_LINE, "");
    check("neg", "It is \xe2\x88\x92" "7.", NULL, SCORE_PASS, EX_LAST_NUMBER, "");
    check("neg", "Answer: 7", NULL, SCORE_FAIL, EX_ANSWER_LINE, "expected -7, got 7");
    check("neg", "from 3-7", NULL, SCORE_FAIL, EX_LAST_NUMBER, "expected -7, got 7");
    check("pct", "Answer: 101", NULL, SCORE_PASS, EX_ANSWER_LINE, "");
    check("pct", "Answer: 98.9", NULL, SCORE_FAIL, EX_ANSWER_LINE, "expected 100, got 98.9");
    check("abs", "\\boxed{150.4}", NULL, SCORE_PASS, EX_BOXED, "");
    check("abs", "\\boxed{150.6}", NULL, SCORE_FAIL, EX_BOXED, "");
    check("exact0", "$42", NULL, SCORE_PASS, EX_LAST_NUMBER, "");
    check("exact0", "42.0000001", NULL, SCORE_FAIL, EX_LAST_NUMBER, "");
    check("def", "42.00001", NULL, SCORE_PASS, EX_LAST_NUMBER, "");   /* 2.4e-7 relative */
    check("def", "42.0001", NULL, SCORE_FAIL, EX_LAST_NUMBER, "");    /* 2.4e-6 */
    check("def", "\\boxed{\\frac{84}{2}}", NULL, SCORE_PASS, EX_BOXED, "");
    check("def", "84/2", NULL, SCORE_PASS, EX_LAST_NUMBER, "");
    check("def", "\\boxed{4} then \\boxed{42}", NULL, SCORE_PASS, EX_BOXED, "");
    check("def", "\\boxed{42} then \\boxed{4}", NULL, SCORE_FAIL, EX_BOXED, "got 4");
    check("def", "I don't know", NULL, SCORE_FAIL, EX_NONE, "no number in the reply");
}

static void choices(void **state)
{
    check("choice", "Answer: (B)", NULL, SCORE_PASS, EX_ANSWER_LINE, "");
    check("choice", "Answer: B. b", NULL, SCORE_PASS, EX_ANSWER_LINE, "");
    check("choice", "I'd say **B**.", NULL, SCORE_PASS, EX_CHOICE_LETTER, "");
    check("choice", "Answer: C", NULL, SCORE_FAIL, EX_ANSWER_LINE, "expected B, got C");
    check("choice", "Absolutely.", NULL, SCORE_FAIL, EX_NONE, "no choice letter A-D in the reply");
    check("choice", "Answer: Absolutely", NULL, SCORE_FAIL, EX_ANSWER_LINE, "no choice letter A-D in the answer");
    check("choice", "\\boxed{B}", NULL, SCORE_PASS, EX_BOXED, "");
}

static void thinking_and_empty(void **state)
{
    check("def", "<think>Answer: 42</think>", NULL, SCORE_FAIL, EX_THINKING_ONLY, "only in the thinking");
    check("def", "", "so the answer is 42", SCORE_FAIL, EX_THINKING_ONLY, "only in the thinking");
    check("exact", "<think>Answer: Paris</think>", NULL, SCORE_FAIL, EX_THINKING_ONLY, "");
    check("def", "<think>Answer: 41</think>Answer: 42", NULL, SCORE_PASS, EX_ANSWER_LINE, "");
    check("exact", "<think>I need to recall the capital of", NULL, SCORE_FAIL, EX_NONE,
          "no answer after the thinking (did it run out of max_tokens?)");
    check("json", "<think>{}</think>", NULL, SCORE_FAIL, EX_NONE, "no answer after the thinking");
    /* nothing at all is the server's failure, not the model's: an error */
    check("exact", "", NULL, SCORE_ERROR, EX_NONE, "empty reply");
    check("exact", NULL, NULL, SCORE_ERROR, EX_NONE, "empty reply");
    check("exact", " \n ", "  ", SCORE_ERROR, EX_NONE, "empty reply");
    check("judge", "", NULL, SCORE_ERROR, EX_NONE, "empty reply");
    check("exact", "Answer: Zürich", NULL, SCORE_FAIL, EX_ANSWER_LINE, "got 'Zürich'");
}

static void json_scorers(void **state)
{
    check("json", "```json\n{\"ok\": true}\n```", NULL, SCORE_PASS, EX_WHOLE_TEXT, "");
    check("json", "  [1, 2]  ", NULL, SCORE_PASS, EX_WHOLE_TEXT, "");
    check("json", "Here it is:\n```\n{\"ok\": true}\n```\nDone.", NULL, SCORE_PASS, EX_WHOLE_TEXT, "");
    check("json", "{ok: true}", NULL, SCORE_FAIL, EX_WHOLE_TEXT, "not JSON");
    check("json", "Sure! {\"ok\": true}", NULL, SCORE_FAIL, EX_WHOLE_TEXT, "not JSON");
    check("json", "{\"a\": 1, \"a\": 2}", NULL, SCORE_FAIL, EX_WHOLE_TEXT, "appears twice");
    check("json", "{\"a\": 1} trailing", NULL, SCORE_FAIL, EX_WHOLE_TEXT, "data after the JSON value");
    check("schema", "{\"name\": \"Ada\", \"age\": 36}", NULL, SCORE_PASS, EX_WHOLE_TEXT, "");
    check("schema", "{\"name\": \"Ada\", \"age\": 36, \"tags\": [\"a\"]}", NULL, SCORE_PASS, EX_WHOLE_TEXT, "");
    check("schema", "{\"name\": \"Ada\", \"age\": 200}", NULL, SCORE_FAIL, EX_WHOLE_TEXT,
          "$.age: 200 is above the maximum 150");
    check("schema", "{\"name\": \"Ada\", \"age\": 36.5}", NULL, SCORE_FAIL, EX_WHOLE_TEXT,
          "$.age: expected integer, found number");
    check("schema", "{\"name\": \"Ada\"}", NULL, SCORE_FAIL, EX_WHOLE_TEXT, "$: required property 'age' is missing");
    check("schema", "{\"name\": \"\", \"age\": 1}", NULL, SCORE_FAIL, EX_WHOLE_TEXT,
          "$.name: 0 characters, fewer than 1");
    check("schema", "{\"name\": \"A\", \"age\": 1, \"x\": 0}", NULL, SCORE_FAIL, EX_WHOLE_TEXT,
          "property 'x' is not allowed (additionalProperties is false)");
    check("schema", "{\"name\": \"A\", \"age\": 1, \"tags\": [\"a\", \"c\"]}", NULL, SCORE_FAIL, EX_WHOLE_TEXT,
          "$.tags[1]: \"c\" is not one of the enum's values");
    check("schema", "{\"name\": \"A\", \"age\": 1, \"tags\": [\"a\", \"b\", \"a\"]}", NULL, SCORE_FAIL, EX_WHOLE_TEXT,
          "$.tags: 3 items, more than 2");
    check("schema", "[]", NULL, SCORE_FAIL, EX_WHOLE_TEXT, "$: expected object, found array");
}

static void jschema_subset(void **state)
{
    static const struct {
        const char *schema, *err; /* err NULL: accepted */
    } chk[] = {
        {"{\"type\": [\"string\", \"null\"], \"title\": \"t\", \"description\": \"d\", \"$schema\": \"x\"}", NULL},
        {"true", NULL},
        {"{\"items\": false, \"const\": {\"a\": [1]}, \"exclusiveMinimum\": 0}", NULL},
        {"{\"type\": \"date\"}", "the schema: 'type' takes a type name or a list of them"},
        {"{\"$ref\": \"#/x\"}", "the schema: keyword '$ref' is not supported"},
        {"{\"properties\": {\"a\": {\"oneOf\": []}}}", "properties.a: keyword 'oneOf' is not supported"},
        {"{\"items\": [{\"type\": \"string\"}]}", "items: a schema is a mapping (or true/false), found array"},
        {"{\"required\": \"a\"}", "'required' takes a list of property names, found string"},
        {"{\"minLength\": -1}", "'minLength' takes a non-negative integer"},
        {"{\"enum\": []}", "'enum' takes a non-empty list"},
        {"{\"maximum\": \"5\"}", "'maximum' takes a number, found string"},
        {"[1]", "the schema: a schema is a mapping (or true/false), found array"},
    };
    char err[300];
    for (size_t i = 0; i < sizeof chk / sizeof *chk; i++) {
        cJSON *s = cJSON_Parse(chk[i].schema);
        int rc = jschema_check(s, err, sizeof err);
        if (chk[i].err ? rc != -1 || !strstr(err, chk[i].err) : rc != 0)
            fail_msg("%s: rc %d '%s', want '%s'", chk[i].schema, rc, rc ? err : "", chk[i].err ? chk[i].err : "ok");
        cJSON_Delete(s);
    }
    static const struct {
        const char *schema, *value, *err;
    } val[] = {
        {"{\"type\": [\"string\", \"null\"]}", "null", NULL},
        {"{\"type\": [\"string\", \"null\"]}", "1", "$: number is none of the types allowed"},
        {"{\"type\": \"integer\"}", "3.0", NULL},
        {"{\"type\": \"number\"}", "3", NULL},
        {"{\"maxLength\": 2}", "\"\xc3\xa9\xc3\xa9\"", NULL}, /* two characters, four bytes */
        {"{\"maxLength\": 2}", "\"abc\"", "$: 3 characters, more than 2"},
        {"{\"const\": {\"a\": [1, 2]}}", "{\"a\": [1.0, 2]}", NULL},
        {"{\"const\": {\"a\": [1, 2]}}", "{\"a\": [2, 1]}", "$: expected the value {\"a\":[1,2]}"},
        {"{\"exclusiveMinimum\": 0}", "0", "$: 0 is not above 0"},
        {"{\"exclusiveMaximum\": 1}", "0.5", NULL},
        {"false", "1", "$: no value is allowed here"},
        {"{\"items\": {\"type\": \"object\", \"properties\": {\"n\": {\"minimum\": 1}}}}", "[{\"n\": 1}, {\"n\": 0}]",
         "$[1].n: 0 is below the minimum 1"},
        {"{\"additionalProperties\": {\"type\": \"string\"}}", "{\"a\": \"x\", \"b\": 1}",
         "$.b: expected string, found number"},
    };
    for (size_t i = 0; i < sizeof val / sizeof *val; i++) {
        cJSON *s = cJSON_Parse(val[i].schema), *v = cJSON_Parse(val[i].value);
        assert_int_equal(jschema_check(s, err, sizeof err), 0);
        int rc = jschema_validate(s, v, err, sizeof err);
        if (val[i].err ? rc != -1 || !strstr(err, val[i].err) : rc != 0)
            fail_msg("%s on %s: rc %d '%s', want '%s'", val[i].schema, val[i].value, rc, rc ? err : "",
                     val[i].err ? val[i].err : "ok");
        cJSON_Delete(s);
        cJSON_Delete(v);
    }
}

static void tool(const char *id, const char *calls, const char *content, score_state st, const char *why,
                 const char *answer)
{
    cJSON *c = calls ? cJSON_Parse(calls) : NULL;
    eval_reply r = {content, NULL, c};
    eval_score s;
    score_reply(&s, item(id), &r);
    if (s.state != st || (st != SCORE_ERROR && s.rule != EX_TOOL_CALLS) || !strstr(s.reason, why) ||
        (answer && (!s.answer || strcmp(s.answer, answer))))
        fail_msg("%s: %s '%s' answer '%s', want %s '%s' '%s'", calls ? calls : "(none)", score_state_names[s.state],
                 s.reason, s.answer ? s.answer : "(null)", score_state_names[st], why, answer ? answer : "");
    score_release(&s);
    cJSON_Delete(c);
}

#define CALL(name, args) \
    "{\"id\": \"c1\", \"type\": \"function\", \"function\": {\"name\": \"" name "\", \"arguments\": " args "}}"

static void tool_calls(void **state)
{
    tool("tool", "[" CALL("get_weather", "\"{\\\"city\\\": \\\"Paris\\\", \\\"days\\\": 2.0}\"") "]", NULL, SCORE_PASS,
         "", "get_weather({\"city\":\"Paris\",\"days\":2})");
    /* arguments as an object (some servers), more arguments than expected */
    tool("tool", "[" CALL("get_weather", "{\"city\": \"Paris\", \"days\": 2, \"units\": \"metric\"}") "]", NULL,
         SCORE_PASS, "", NULL);
    tool("tool", "[" CALL("get_weather", "\"{\\\"city\\\": \\\"Rome\\\", \\\"days\\\": 2}\"") "]", NULL, SCORE_FAIL,
         "call 'get_weather': argument 'city' is \"Rome\", expected \"Paris\"", NULL);
    tool("tool", "[" CALL("get_weather", "\"{\\\"city\\\": \\\"Paris\\\"}\"") "]", NULL, SCORE_FAIL,
         "call 'get_weather': argument 'days' is missing (expected 2)", NULL);
    tool("tool", "[" CALL("get_weather", "\"{city: Paris}\"") "]", NULL, SCORE_FAIL,
         "call 'get_weather': the arguments are not a JSON object", NULL);
    tool("tool", "[" CALL("search", "\"{}\"") "]", NULL, SCORE_FAIL, "no call to 'get_weather' (calls: search)", NULL);
    /* a wrong call, then the right one */
    tool("tool",
         "[" CALL("get_weather", "\"{\\\"city\\\": \\\"Rome\\\", \\\"days\\\": 2}\"") ", " CALL(
             "get_weather", "\"{\\\"city\\\": \\\"Paris\\\", \\\"days\\\": 2}\"") "]",
         NULL, SCORE_PASS, "", "get_weather({\"city\":\"Paris\",\"days\":2})");
    tool("tool", NULL, "It is sunny in Paris.", SCORE_FAIL, "no tool call (expected a call to 'get_weather')", NULL);
    tool("tool", "[]", "", SCORE_ERROR, "empty reply", NULL);
    /* no expected arguments: any call of the function passes */
    tool("tool-any", "[" CALL("search", "\"{\\\"q\\\": 1}\"") "]", NULL, SCORE_PASS, "", NULL);
}

static void judge(void **state)
{
    const eval_item *it = item("judge");
    eval_reply r = {"<think>hmm</think>TCP is a reliable byte stream.", NULL, NULL};
    eval_score s;
    score_reply(&s, it, &r);
    assert_int_equal(s.state, SCORE_JUDGE);
    assert_string_equal(s.answer, "TCP is a reliable byte stream.");
    buf p = BUF_INIT;
    judge_prompt(&p, it, s.answer);
    assert_non_null(strstr(p.p, "Rubric:\nMentions reliability.\n\nQuestion:\nExplain TCP.\n\nReference answer:\nA "
                                "reliable stream\n\nAnswer to grade:\nTCP is a reliable byte stream.\n\n"));
    assert_non_null(strstr(p.p, "a last line of the form \"Score: N\" where N is 1, 2, 3, 4 or 5"));
    buf_release(&p);
    score_judged(&s, it, "Clear and right.\nScore: 4", NULL);
    assert_int_equal(s.state, SCORE_PASS);
    assert_int_equal(s.judge, 4);
    score_judged(&s, it, "Score: 3", NULL);
    assert_int_equal(s.state, SCORE_FAIL);
    assert_string_equal(s.reason, "the judge scored 3 (passing is 4 or more)");
    score_judged(&s, it, "I cannot grade this.", "Score: 5");
    assert_int_equal(s.state, SCORE_ERROR);
    assert_string_equal(s.reason, "judge: no \"Score: N\" line in the judge's reply (its reasoning is not read)");
    score_release(&s);
    /* a conversation as the question; pass_score 3 */
    const eval_item *j3 = item("judge3");
    buf q = BUF_INIT;
    judge_prompt(&q, j3, "hello");
    assert_non_null(strstr(q.p, "Question:\nuser: hi\n\nAnswer to grade:\nhello\n"));
    assert_null(strstr(q.p, "Reference answer"));
    buf_release(&q);
    eval_score s3 = {.state = SCORE_JUDGE};
    score_judged(&s3, j3, "**Score:** 3/5", NULL);
    assert_int_equal(s3.state, SCORE_PASS);

    static const struct {
        const char *reply;
        int want; /* 0: error */
        const char *err;
    } tab[] = {
        {"Score: 4", 4, NULL},
        {"**Score:** 5/5", 5, NULL},
        {"<think>Score: 1</think>\nScore: 3", 3, NULL},
        {"score = 2", 2, NULL},
        {"The score is 4.", 4, NULL},
        {"Final score: 5", 5, NULL},
        {"Score: 2\nOn reflection, Score: 4", 4, NULL},
        {"SCORE:1", 1, NULL},
        {"Score: 7", 0, "the judge's score 7 is not one of 1, 2, 3, 4, 5"},
        {"Score: 0", 0, "score 0 is not one of"},
        {"Score: 4.5", 0, "score 4.x is not one of"},
        {"underscore: 5", 0, "no \"Score: N\" line"},
        {"Scores vary", 0, "no \"Score: N\" line"},
        {"", 0, "no \"Score: N\" line"},
        {"<think>Score: 5</think>", 0, "no \"Score: N\" line"},
    };
    char err[160];
    for (size_t i = 0; i < sizeof tab / sizeof *tab; i++) {
        int n = 0;
        int rc = judge_parse(tab[i].reply, NULL, &n, err, sizeof err);
        if (tab[i].want ? rc || n != tab[i].want : rc != -1 || !strstr(err, tab[i].err))
            fail_msg("'%s': rc %d n %d err '%s'", tab[i].reply, rc, n, rc ? err : "");
    }
    assert_string_equal(score_state_names[SCORE_JUDGE], "judge");
    assert_int_equal(score_mode(SC_JUDGE), EXM_TEXT);
    assert_int_equal(score_mode(SC_CHOICE), EXM_CHOICE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(text_scorers),       cmocka_unit_test(numbers),      cmocka_unit_test(choices),
        cmocka_unit_test(thinking_and_empty), cmocka_unit_test(json_scorers), cmocka_unit_test(jschema_subset),
        cmocka_unit_test(tool_calls),         cmocka_unit_test(judge),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
