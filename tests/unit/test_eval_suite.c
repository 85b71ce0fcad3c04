/* test_eval_suite.c - suites as a user writes them: the YAML header and
 * defaults, every scorer's keys, JSONL lines, the imports of GPQA-, AIME-,
 * MATH- and GSM8K-shaped lines, generated ids, directories (order, what
 * is read, ids across files), the shipped example; and every mistake
 * with its file:line[:col] and wording -- unknown keys, keys the scorer
 * does not read, duplicate ids, empty suites, bad regexes, unsupported
 * schema keywords, bad JSON lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>
#include <unistd.h>

#include "testenv.h" /* before config.h: its write_file has a parameter named mode */
#include "eval/suite.h"

static char *diag_text(const eval_suite *s)
{
    buf b = BUF_INIT;
    diags_text(&b, &s->diags, NULL);
    return buf_detach(&b);
}

/* needle is in t, else the test fails showing t (line by line: cmocka
 * cuts long messages) */
#define assert_has(t, needle) has_at((t), (needle), __FILE__, __LINE__)
static void has_at(const char *t, const char *needle, const char *file, int line)
{
    if (strstr(t, needle)) return;
    print_error("missing: %s\nin:\n", needle);
    for (const char *p = t; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        print_error("  %.*s\n", (int)n, p);
        p += n + (nl != NULL);
    }
    _fail(file, line);
}

/* loads text, expects it to fail with each needle in the diags */
static void expect_errors(const char *file, const char *text, bool jsonl, const char *const *needles)
{
    eval_suite s;
    int rc = suite_load_text(&s, text, strlen(text), file, jsonl);
    char *t = diag_text(&s);
    if (rc != -1) fail_msg("loaded without error:\n%s", t);
    for (size_t i = 0; needles[i]; i++) assert_has(t, needles[i]);
    free(t);
    suite_release(&s);
}

static const eval_item *load_ok(eval_suite *s, const char *file, const char *text, bool jsonl)
{
    int rc = suite_load_text(s, text, strlen(text), file, jsonl);
    if (rc) {
        char *t = diag_text(s);
        fail_msg("%s", t);
    }
    return s->items;
}

static const char yaml_all[] = "name: smoke\n"
                               "description: one of each\n"
                               "defaults:\n"
                               "  max_tokens: 64\n"
                               "  category: basics\n"
                               "  system: Be brief.\n"
                               "items:\n"
                               "  - id: add\n"
                               "    prompt: What is 2+2?\n"
                               "    scorer: number\n"
                               "    expected: 4\n"
                               "    tolerance: 1%\n"
                               "  - id: echo\n"
                               "    prompt: Say OK\n"
                               "    expected: OK\n"
                               "    ignore_case: true\n"
                               "    max_tokens: 8\n"
                               "    category: echo\n"
                               "  - id: pick\n"
                               "    prompt: Which is a fruit?\n"
                               "    choices: [rock, apple, chair]\n"
                               "    expected: apple\n"
                               "  - id: re\n"
                               "    scorer: regex\n"
                               "    prompt: A date?\n"
                               "    pattern: '^[0-9]{4}-[0-9]{2}$'\n"
                               "  - id: js\n"
                               "    scorer: json_schema\n"
                               "    messages:\n"
                               "      - {role: system, content: JSON only}\n"
                               "      - {role: user, content: 'Give {\"n\": 1}'}\n"
                               "    schema: {type: object, required: [n], properties: {n: {type: integer}}}\n"
                               "  - id: tool\n"
                               "    scorer: tool_call\n"
                               "    prompt: Weather in Paris?\n"
                               "    tools:\n"
                               "      - type: function\n"
                               "        function: {name: get_weather, parameters: {type: object}}\n"
                               "    expected: {name: get_weather, arguments: {city: Paris, days: 2}}\n"
                               "  - id: j\n"
                               "    scorer: judge\n"
                               "    prompt: Explain TCP.\n"
                               "    rubric: Mentions reliability.\n"
                               "    pass_score: 3\n"
                               "  - prompt: anything\n"
                               "    scorer: json_valid\n"
                               "    tolerance: 0.5\n"
                               "    scorer: number\n";

static void yaml_suite(void **state)
{
    /* the last item repeats `scorer`: the reader refuses that; drop it */
    const char *cut = strstr(yaml_all, "  - prompt: anything");
    char *text = xstrndup(yaml_all, (size_t)(cut - yaml_all));
    eval_suite s;
    const eval_item *it = load_ok(&s, "smoke.yaml", text, false);
    assert_string_equal(s.name, "smoke");
    assert_string_equal(s.description, "one of each");
    assert_int_equal(s.n_items, 7);

    assert_string_equal(it[0].id, "add");
    assert_int_equal(it[0].scorer, SC_NUMBER);
    assert_true(it[0].expected_num == 4);
    assert_true(it[0].tol_abs == 0 && fabs(it[0].tol_rel - 0.01) < 1e-15);
    assert_int_equal(it[0].max_tokens, 64);
    assert_string_equal(it[0].category, "basics");
    assert_string_equal(it[0].system, "Be brief.");
    assert_int_equal(it[0].pos.line, 8);
    assert_int_equal(it[0].pos.col, 5);
    assert_string_equal(it[0].pos.file, "smoke.yaml");

    assert_int_equal(it[1].scorer, SC_EXACT); /* the default */
    assert_true(it[1].ignore_case);
    assert_int_equal(it[1].max_tokens, 8);
    assert_string_equal(it[1].category, "echo");

    assert_int_equal(it[2].scorer, SC_CHOICE); /* choices imply it */
    assert_string_equal(it[2].expected, "B");
    assert_int_equal(it[2].letters, 3);
    assert_string_equal(it[2].prompt, "Which is a fruit?\n\nA. rock\nB. apple\nC. chair");

    assert_int_equal(it[3].scorer, SC_REGEX);
    assert_non_null(it[3].re);

    assert_int_equal(it[4].n_messages, 2);
    assert_null(it[4].system); /* its own system turn wins over the defaults */
    assert_null(it[4].prompt);
    assert_non_null(it[4].schema);

    assert_string_equal(it[5].call_name, "get_weather");
    assert_non_null(it[5].call_args);
    assert_true(cJSON_GetObjectItem(it[5].call_args, "days")->valuedouble == 2);
    assert_non_null(strstr(it[5].tools, "\"name\":\"get_weather\""));

    assert_string_equal(it[6].rubric, "Mentions reliability.");
    assert_int_equal(it[6].pass_score, 3);

    cJSON *m = eval_item_messages(&it[4]);
    char *t = cJSON_PrintUnformatted(m);
    assert_string_equal(t, "[{\"role\":\"system\",\"content\":\"JSON only\"},{\"role\":\"user\",\"content\":\"Give "
                           "{\\\"n\\\": 1}\"}]");
    cJSON_free(t);
    cJSON_Delete(m);
    m = eval_item_messages(&it[0]);
    t = cJSON_PrintUnformatted(m);
    assert_string_equal(t, "[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"What is "
                           "2+2?\"}]");
    cJSON_free(t);
    cJSON_Delete(m);
    assert_true(suite_max_prompt_bytes(&s) >= strlen(it[5].tools) + strlen("Weather in Paris?"));
    assert_ptr_equal(suite_find(&s, "tool"), &it[5]);
    assert_null(suite_find(&s, "nope"));
    suite_release(&s);
    free(text);

    /* a repeated key is the YAML reader's error, at its line and column */
    static const char *const dup[] = {"smoke.yaml:48:5: error: duplicate key 'scorer' (first at line 46)", NULL};
    expect_errors("smoke.yaml", yaml_all, false, dup);
}

static void yaml_forms(void **state)
{
    /* a bare list; ids from the file's base name and the line; the
     * category from the file's name */
    eval_suite s;
    const char *bare = "- prompt: hi\n  expected: hello\n\n- prompt: x\n  expected: y\n";
    const eval_item *it = load_ok(&s, "dir/quick.yml", bare, false);
    assert_string_equal(s.name, "quick");
    assert_int_equal(s.n_items, 2);
    assert_string_equal(it[0].id, "quick.yml:1");
    assert_string_equal(it[1].id, "quick.yml:4");
    assert_string_equal(it[0].category, "quick");
    assert_int_equal(it[0].max_tokens, -1);
    assert_null(it[0].system);
    assert_true(it[0].tol_rel == EVAL_TOL_REL_DEFAULT);
    suite_release(&s);
    /* a header name names the default category */
    it = load_ok(&s, "x.yaml", "name: arith\ndefaults: {scorer: number}\nitems:\n  - {prompt: 1+1, expected: 2}\n",
                 false);
    assert_string_equal(it[0].category, "arith");
    assert_int_equal(it[0].scorer, SC_NUMBER);
    suite_release(&s);
}

static void yaml_mistakes(void **state)
{
    /* one file, every line a mistake, each said at its line and column */
    const char *text = "items:\n"
                       "  - promt: hi\n"
                       "  - id: b\n"
                       "    prompt: x\n"
                       "    tolerance: 1\n"
                       "    max_tokens: 0\n"
                       "    expected: x\n"
                       "  - id: d\n"
                       "    prompt: n\n"
                       "    scorer: number\n"
                       "    expected: many\n"
                       "  - {id: e, scorer: regex, prompt: x, pattern: 'a(('}\n"
                       "  - {id: f, scorer: json_schema, prompt: x, schema: {properties: {n: {pattern: '^a'}}}}\n"
                       "  - {id: g, prompt: x}\n"
                       "  - {id: b, prompt: x, expected: y}\n"
                       "  - {id: h, scorer: exakt, prompt: x}\n"
                       "  - {id: i, prompt: x, choices: [only], expected: A}\n"
                       "  - {id: j, prompt: x, expected: E, choices: [a, b, c]}\n"
                       "  - {id: k, scorer: tool_call, prompt: x, expected: {name: nope}, tools: [{type: function, "
                       "function: {name: f}}]}\n"
                       "  - {id: l, scorer: json_valid, expected: x, prompt: y}\n"
                       "  - {id: m, scorer: judge, prompt: y}\n";
    eval_suite s;
    assert_int_equal(suite_load_text(&s, text, strlen(text), "s.yaml", false), -1);
    char *t = diag_text(&s);
    static const char *const want[] = {
        "s.yaml:2:5: error: item 's.yaml:2': unknown key 'promt' (did you mean 'prompt'?)\n",
        "s.yaml:2:5: error: item 's.yaml:2': an item needs prompt or messages (or question or problem, to import a "
        "dataset's item)\n",
        "s.yaml:5:5: error: item 'b': tolerance: the exact scorer does not read it (read by: number)\n",
        "s.yaml:6:17: error: item 'b': max_tokens: 0 is out of range: expected an integer in 1..1048576\n",
        "s.yaml:11:15: error: item 'd': expected: 'many' is not a number (like 42, -1.5, 1,234, $5, 3/4, 5 km)\n",
        "s.yaml:12:48: error: item 'e': pattern: not a POSIX extended regular expression: Unmatched ( or \\(\n",
        "s.yaml:13:53: error: item 'f': schema: properties.n: keyword 'pattern' is not supported (supported: type,",
        "s.yaml:14:5: error: item 'g': required key 'expected' is missing (the scorer compares the answer with it)\n",
        "s.yaml:15:5: error: item 'b': the id is also used at s.yaml:3\n",
        "s.yaml:16:21: error: item 'h': scorer: expected one of exact, regex, number, choice, contains, json_valid, "
        "json_schema, tool_call, judge, found 'exakt' (did you mean 'exact'?)\n",
        "s.yaml:17:33: error: item 'i': choices: expected a list of 2 to 26 options, found a list of another length\n",
        "s.yaml:18:34: error: item 'j': expected: 'E' is neither a letter A-C, the text of a choice nor a 0-based "
        "index\n",
        "s.yaml:19:60: error: item 'k': expected.name: 'nope' is not one of the item's tools\n",
        "s.yaml:20:33: error: item 'l': expected: the json_valid scorer does not read it (read by: exact, number, "
        "choice, contains, tool_call, judge)\n",
        "s.yaml:21:5: error: item 'm': required key 'rubric' is missing (the judge scores the answer against it)\n",
        NULL,
    };
    for (size_t i = 0; want[i]; i++) assert_has(t, want[i]);
    assert_int_equal(s.diags.errors, 15);
    assert_int_equal(s.n_items, 1); /* the second b: sound alone, a repeat of a failed one */
    free(t);
    suite_release(&s);

    static const char *const empty[] = {"e.yaml:1:8: error: items: the list is empty", NULL};
    expect_errors("e.yaml", "items: []\n", false, empty);
    static const char *const nofile[] = {"e.yaml: error: empty suite file", NULL};
    expect_errors("e.yaml", "# nothing\n", false, nofile);
    static const char *const noitems[] = {"e.yaml:1:1: error: required key 'items' is missing", NULL};
    expect_errors("e.yaml", "name: x\n", false, noitems);
    static const char *const scalar[] = {"e.yaml:1:1: error: a suite is a mapping (name, description, defaults, items) "
                                         "or a list of items, found a scalar",
                                         NULL};
    expect_errors("e.yaml", "hello\n", false, scalar);
    static const char *const hdr[] = {"e.yaml:1:1: error: unknown key 'nmae' (did you mean 'name'?)",
                                      "e.yaml:2:20: error: defaults: scorer: expected one of", NULL};
    expect_errors("e.yaml", "nmae: x\ndefaults: {scorer: best}\nitems: [{prompt: a, expected: b}]\n", false, hdr);
    static const char *const syntax[] = {"e.yaml:3:1: error: invalid YAML: did not find expected ',' or ']'", NULL};
    expect_errors("e.yaml", "items:\n  - prompt: [unclosed\n", false, syntax);
    static const char *const both[] = {"item 'x': an item has prompt or messages, not both", NULL};
    expect_errors("e.yaml", "- {id: x, prompt: a, messages: [{role: user, content: b}], expected: c}\n", false, both);
    static const char *const msgs[] = {"item 'x': messages[0]: role: expected one of system, user, assistant, found "
                                       "'robot'",
                                       "item 'x': messages[1]: required key 'content' is missing",
                                       "item 'y': messages: no user turn", NULL};
    expect_errors("e.yaml",
                  "- {id: x, messages: [{role: robot, content: a}, {role: user}], expected: c}\n"
                  "- {id: y, messages: [{role: system, content: a}], expected: c}\n",
                  false, msgs);
    static const char *const tools[] = {"item 't': tools[0]: expected {type: function, function: {name: ..., "
                                        "parameters: ...}}",
                                        "item 'u': required key 'tools' is missing", NULL};
    expect_errors("e.yaml",
                  "- {id: t, prompt: a, tools: [{type: fn}], scorer: json_valid}\n"
                  "- {id: u, prompt: a, scorer: tool_call, expected: {name: f}}\n",
                  false, tools);
    static const char *const ctrl[] = {"item 'c': expected: control character in string", NULL};
    expect_errors("e.yaml", "- {id: c, prompt: a, expected: \"x\\a\"}\n", false, ctrl);
}

static void jsonl_suite(void **state)
{
    eval_suite s;
    const eval_item *it = load_ok(&s, "set.jsonl",
                                  "{\"id\": \"n1\", \"prompt\": \"1+1?\", \"scorer\": \"number\", \"expected\": 2}\n"
                                  "\n"
                                  "{\"prompt\": \"say yes\", \"expected\": \"yes\", \"max_tokens\": 5}\r\n"
                                  "{\"prompt\": \"Pick\", \"choices\": [\"x\", \"y\"], \"expected\": 1}\n",
                                  true);
    assert_int_equal(s.n_items, 3);
    assert_string_equal(s.name, "set");
    assert_string_equal(it[0].expected, "2");
    assert_true(it[0].expected_num == 2);
    /* "yes" stays a string: a JSON string is never read as YAML's boolean */
    assert_string_equal(it[1].expected, "yes");
    assert_string_equal(it[1].id, "set.jsonl:3");
    assert_int_equal(it[1].pos.line, 3);
    assert_int_equal(it[1].max_tokens, 5);
    /* a JSON number is a 0-based index */
    assert_string_equal(it[2].expected, "B");
    suite_release(&s);

    static const char *const bad[] = {
        "b.jsonl:1: error: not a JSON line: not JSON (at byte 10)",
        "b.jsonl:2: error: a line is one item, a JSON object; found an array",
        "b.jsonl:3: error: not a JSON line: key 'prompt' appears twice in the object at $",
        "b.jsonl:4: error: item 'b.jsonl:4': unknown key 'expect' (did you mean 'expected'?)",
        "b.jsonl:5: error: item 'q': required key 'expected' is missing",
        "b.jsonl:6: error: not a JSON line: data after the JSON value at byte 3",
        NULL,
    };
    expect_errors("b.jsonl",
                  "{\"prompt\" \"x\"}\n"
                  "[1, 2]\n"
                  "{\"prompt\": \"a\", \"prompt\": \"b\", \"expected\": \"c\"}\n"
                  "{\"prompt\": \"a\", \"expect\": \"b\"}\n"
                  "{\"id\": \"q\", \"prompt\": \"a\"}\n"
                  "{} {}\n",
                  true, bad);
    static const char *const empty[] = {"e.jsonl: error: empty suite file: no item lines", NULL};
    expect_errors("e.jsonl", "\n  \n", true, empty);
}

static void imports(void **state)
{
    eval_suite s;
    const eval_item *it = load_ok(
        &s, "mix.jsonl",
        /* GPQA / MMLU shapes: a letter, a choice's text, a 0-based index */
        "{\"question\": \"2+2?\", \"choices\": [\"3\", \"4\", \"5\", \"22\"], \"answer\": \"B\"}\n"
        "{\"question\": \"Capital of France?\", \"choices\": [\"Rome\", \"Paris\"], \"answer\": \"Paris\"}\n"
        "{\"question\": \"Which?\", \"choices\": [\"1\", \"2\", \"3\"], \"answer\": 2, \"subject\": \"math\"}\n"
        /* AIME: a number; MATH: not a number, so exact; extra keys of the dumps */
        "{\"id\": 7, \"problem\": \"Find n.\", \"answer\": \"033\", \"solution\": \"...\", \"url\": \"u\"}\n"
        "{\"problem\": \"Simplify.\", \"answer\": \"\\\\sqrt{2}\", \"level\": \"Level 5\", \"type\": \"Algebra\", "
        "\"unique_id\": \"test/algebra/1.json\"}\n"
        /* GSM8K: the number after #### */
        "{\"question\": \"Sold 48 then half?\", \"answer\": \"48/2 = <<48/2=24>>24\\n48+24 = 72\\n#### 1,072\"}\n",
        true);
    assert_int_equal(s.n_items, 6);
    assert_int_equal(it[0].scorer, SC_CHOICE);
    assert_true(it[0].imported);
    assert_string_equal(it[0].expected, "B");
    assert_int_equal(it[0].letters, 4);
    assert_string_equal(it[0].prompt, "2+2?\n\nA. 3\nB. 4\nC. 5\nD. 22\n\nAnswer with the letter of the correct "
                                      "choice, on a last line of the form \"Answer: X\".");
    assert_string_equal(it[1].expected, "B");
    assert_string_equal(it[2].expected, "C");
    assert_string_equal(it[2].category, "math");
    assert_string_equal(it[3].id, "7");
    assert_int_equal(it[3].scorer, SC_NUMBER);
    assert_true(it[3].expected_num == 33);
    assert_string_equal(it[3].prompt, "Find n.\n\nGive the final answer on a last line of the form \"Answer: "
                                      "<answer>\".");
    assert_int_equal(it[4].scorer, SC_EXACT);
    assert_string_equal(it[4].expected, "\\sqrt{2}");
    assert_string_equal(it[4].id, "test/algebra/1.json");
    assert_string_equal(it[4].category, "Algebra");
    assert_int_equal(it[5].scorer, SC_NUMBER);
    assert_true(it[5].expected_num == 1072);
    assert_string_equal(it[5].expected, "1,072");
    assert_string_equal(it[5].category, "mix");
    suite_release(&s);

    static const char *const bad[] = {
        "i.jsonl:1: error: item 'i.jsonl:1': answer: index 4 is out of range: expected 0..3 (0-based)",
        "i.jsonl:2: error: item 'i.jsonl:2': answer: 'x' is the text of more than one choice",
        "i.jsonl:3: error: item 'i.jsonl:3': answer: the text after '####' is not a number: 'many'",
        "i.jsonl:4: error: item 'i.jsonl:4': unknown key 'scorer'",
        "i.jsonl:5: error: item 'i.jsonl:5': an item has prompt or messages, or the question or problem of an "
        "import, not both",
        "i.jsonl:6: error: item 'i.jsonl:6': required key 'answer' is missing (an import's right answer)",
        "i.jsonl:7: error: item 'i.jsonl:7': an import has question or problem, not both",
        NULL,
    };
    expect_errors("i.jsonl",
                  "{\"question\": \"q\", \"choices\": [\"a\", \"b\", \"c\", \"d\"], \"answer\": 4}\n"
                  "{\"question\": \"q\", \"choices\": [\"x\", \"x\"], \"answer\": \"x\"}\n"
                  "{\"question\": \"q\", \"answer\": \"so #### many\"}\n"
                  "{\"question\": \"q\", \"answer\": \"1\", \"scorer\": \"exact\"}\n"
                  "{\"question\": \"q\", \"prompt\": \"p\", \"answer\": \"1\"}\n"
                  "{\"problem\": \"q\"}\n"
                  "{\"problem\": \"q\", \"question\": \"r\", \"answer\": \"1\"}\n",
                  true, bad);
}

static void directory(void **state)
{
    char tmpl[] = "/tmp/gpumod-evalsuite-XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    char *p;
    write_file(p = xasprintf("%s/b.jsonl", dir), "{\"id\": \"one\", \"prompt\": \"x\", \"expected\": \"y\"}\n", 0644);
    free(p);
    write_file(p = xasprintf("%s/a.yaml", dir), "name: first\nitems:\n  - {id: two, prompt: x, expected: y}\n", 0644);
    free(p);
    write_file(p = xasprintf("%s/README.md", dir), "not a suite\n", 0644);
    free(p);
    write_file(p = xasprintf("%s/.hidden.yaml", dir), "garbage: [\n", 0644);
    free(p);
    p = xasprintf("%s/sub", dir);
    mkdir(p, 0755);
    free(p);
    eval_suite s;
    assert_int_equal(suite_load(&s, dir), 0);
    assert_int_equal(s.n_items, 2);
    assert_string_equal(s.items[0].id, "two"); /* a.yaml before b.jsonl */
    assert_string_equal(s.items[0].category, "first");
    assert_string_equal(s.items[1].category, "b");
    assert_string_equal(s.name, "first"); /* the first header's name */
    assert_int_equal(s.diags.warnings, 1);
    char *t = diag_text(&s);
    assert_non_null(strstr(t, "/sub: warning: a directory: a suite is read from the .yaml, .yml and .jsonl files of "
                              "one directory, not below"));
    free(t);
    suite_release(&s);

    /* an id repeated across files; a file that is not readable as YAML */
    write_file(p = xasprintf("%s/c.yml", dir), "- {id: one, prompt: z, expected: w}\n- [x\n", 0644);
    free(p);
    assert_int_equal(suite_load(&s, dir), -1);
    t = diag_text(&s);
    char *want = xasprintf("%s/c.yml:3:1: error: invalid YAML", dir);
    assert_has(t, want);
    free(want);
    free(t);
    suite_release(&s);
    write_file(p = xasprintf("%s/c.yml", dir), "- {id: one, prompt: z, expected: w}\n", 0644);
    free(p);
    assert_int_equal(suite_load(&s, dir), -1);
    t = diag_text(&s);
    want = xasprintf("%s/c.yml:1:3: error: item 'one': the id is also used at %s/b.jsonl:1\n", dir, dir);
    assert_has(t, want);
    free(want);
    free(t);
    suite_release(&s);

    /* a file of the suite given alone; its name without the extension */
    p = xasprintf("%s/b.jsonl", dir);
    assert_int_equal(suite_load(&s, p), 0);
    assert_string_equal(s.name, "b");
    free(p);
    suite_release(&s);
    /* not a suite's name; a missing file; an empty directory */
    p = xasprintf("%s/README.md", dir);
    assert_int_equal(suite_load(&s, p), -1);
    t = diag_text(&s);
    assert_non_null(strstr(t, "README.md: error: not a suite: a suite is a .yaml, .yml or .jsonl file or a directory"));
    free(t);
    free(p);
    suite_release(&s);
    p = xasprintf("%s/none.yaml", dir);
    assert_int_equal(suite_load(&s, p), -1);
    t = diag_text(&s);
    assert_non_null(strstr(t, "none.yaml: error: cannot read: "));
    free(t);
    free(p);
    suite_release(&s);
    p = xasprintf("%s/sub/", dir);
    assert_int_equal(suite_load(&s, p), -1);
    assert_string_equal(s.name, "sub");
    t = diag_text(&s);
    assert_non_null(strstr(t, "sub/: error: no .yaml, .yml or .jsonl file here"));
    free(t);
    free(p);
    suite_release(&s);
    rm_rf(dir);
}

/* the shipped example loads, and has every scorer but judge */
static void shipped_example(void **state)
{
    char *p = src_path("examples/eval/smoke.yaml");
    eval_suite s;
    int rc = suite_load(&s, p);
    if (rc) {
        char *t = diag_text(&s);
        fail_msg("%s", t);
    }
    bool seen[SC__COUNT] = {0};
    for (size_t i = 0; i < s.n_items; i++) seen[s.items[i].scorer] = true;
    for (int k = 0; k < SC__COUNT; k++)
        if (k != SC_JUDGE && !seen[k]) fail_msg("the example has no %s item", eval_scorer_names[k]);
    assert_false(seen[SC_JUDGE]);
    suite_release(&s);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(yaml_suite), cmocka_unit_test(yaml_forms), cmocka_unit_test(yaml_mistakes),
        cmocka_unit_test(jsonl_suite), cmocka_unit_test(imports),   cmocka_unit_test(directory),
        cmocka_unit_test(shipped_example),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
