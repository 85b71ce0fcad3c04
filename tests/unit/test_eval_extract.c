/* test_eval_extract.c - answer extraction on adversarial replies: the
 * answer only in the thinking (in a block, an unclosed block, or
 * reasoning_content), answer lines in the thinking against the content,
 * two \boxed answers (the last counts) and nested braces, a choice letter
 * inside a word ("Absolutely" is not A), the strong and bare letter forms,
 * numbers with units, thousands commas, signs (U+2212 too), fractions and
 * LaTeX, empty and blank replies, unicode around the answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "eval/extract.h"

typedef struct ecase {
    const char *content, *reasoning;
    ex_mode mode;
    int letters;
    ex_rule rule;
    const char *answer; /* NULL: none */
} ecase;

static void run_cases(const ecase *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ex_result r;
        extract_answer(&r, c[i].content, c[i].reasoning, c[i].mode, c[i].letters);
        bool ok = r.rule == c[i].rule && (c[i].answer ? r.answer && !strcmp(r.answer, c[i].answer) : !r.answer);
        if (!ok)
            fail_msg("case %zu %.60s: rule %s answer '%s', want %s '%s'", i, c[i].content ? c[i].content : "(null)",
                     ex_rule_name(r.rule), r.answer ? r.answer : "(null)", ex_rule_name(c[i].rule),
                     c[i].answer ? c[i].answer : "(null)");
        ex_release(&r);
    }
}

static void thinking(void **state)
{
    static const ecase c[] = {
        /* the answer only in the thinking does not count */
        {"<think>The answer: 42</think>", NULL, EXM_NUMBER, 0, EX_THINKING_ONLY, "42"},
        {"<think>so 6*7 = 42</think>\n", NULL, EXM_NUMBER, 0, EX_THINKING_ONLY, "42"},
        {"", "Answer: 42", EXM_NUMBER, 0, EX_THINKING_ONLY, "42"},
        {NULL, "the answer is \\boxed{7}", EXM_ANSWER, 0, EX_THINKING_ONLY, "7"},
        /* never closed: it ran out of tokens while thinking */
        {"<think>Answer: B, and then", NULL, EXM_CHOICE, 4, EX_THINKING_ONLY, "B, and then"},
        /* an answer line in the thinking loses to the content's */
        {"<think>Answer: 41</think>\nAnswer: 42", NULL, EXM_NUMBER, 0, EX_ANSWER_LINE, "42"},
        {"<think>Answer: 41</think>\n\nIt is 42.", NULL, EXM_NUMBER, 0, EX_LAST_NUMBER, "42"},
        {"Answer: 42", "Answer: 41", EXM_NUMBER, 0, EX_ANSWER_LINE, "42"},
        /* the LAST </think> ends the thinking */
        {"<think>a</think>Answer: 1<think>b</think>Answer: 2", NULL, EXM_ANSWER, 0, EX_ANSWER_LINE, "2"},
        {"<think>x</think></think>Answer: 3", NULL, EXM_ANSWER, 0, EX_ANSWER_LINE, "3"},
        /* thinking with nothing extractable, and nothing after it */
        {"<think>hmm</think>", NULL, EXM_NUMBER, 0, EX_NONE, NULL},
        {"<think>hmm</think>  \n", NULL, EXM_ANSWER, 0, EX_NONE, NULL},
        /* text mode never looks into the thinking */
        {"<think>{\"a\": 1}</think>", NULL, EXM_TEXT, 0, EX_NONE, NULL},
    };
    run_cases(c, sizeof c / sizeof *c);
    ex_result r;
    extract_answer(&r, "<think>x</think>Paris", NULL, EXM_ANSWER, 0);
    assert_true(r.thinking);
    ex_release(&r);
    extract_answer(&r, "Paris", "", EXM_ANSWER, 0);
    assert_false(r.thinking);
    ex_release(&r);
    view th;
    view v = ex_visible("pre<think>inner</think>post", &th);
    assert_int_equal(v.len, 4);
    assert_memory_equal(v.p, "post", 4);
    assert_int_equal(th.len, 5);
    assert_memory_equal(th.p, "inner", 5);
}

static void answer_lines(void **state)
{
    static const ecase c[] = {
        {"Some prose.\nAnswer: Paris", NULL, EXM_ANSWER, 0, EX_ANSWER_LINE, "Paris"},
        /* the last line counts, not the first: "the answer depends" is no answer */
        {"Answer: 1\nwait, no.\nFinal answer: 2", NULL, EXM_ANSWER, 0, EX_ANSWER_LINE, "2"},
        {"the answer depends on x.\nANSWER = 12", NULL, EXM_NUMBER, 0, EX_ANSWER_LINE, "12"},
        {"**Final Answer:** **Paris**.", NULL, EXM_ANSWER, 0, EX_ANSWER_LINE, "Paris"},
        {"## Answer: `exit 0`", NULL, EXM_ANSWER, 0, EX_ANSWER_LINE, "exit 0"},
        {"- answer: $42$", NULL, EXM_ANSWER, 0, EX_ANSWER_LINE, "42"},
        /* the value on the next line */
        {"Answer:\n\n  Rome  \n", NULL, EXM_ANSWER, 0, EX_ANSWER_LINE, "Rome"},
        /* a boxed value inside the answer line */
        {"Final Answer: The final answer is $\\boxed{5}$. I hope", NULL, EXM_ANSWER, 0, EX_ANSWER_LINE, "5"},
        /* full-width colon (CJK models) */
        {"答案\nAnswer\xef\xbc\x9a 7", NULL, EXM_NUMBER, 0, EX_ANSWER_LINE, "7"},
        /* not labels: "answers", "answered", mid-line */
        {"The answers: 3 and 4", NULL, EXM_ANSWER, 0, EX_WHOLE_TEXT, "The answers: 3 and 4"},
        {"I answered: 5", NULL, EXM_NUMBER, 0, EX_LAST_NUMBER, "5"},
        /* an empty answer line is skipped */
        {"Answer:\n", NULL, EXM_ANSWER, 0, EX_WHOLE_TEXT, "Answer:"},
    };
    run_cases(c, sizeof c / sizeof *c);
}

static void boxed(void **state)
{
    static const ecase c[] = {
        /* two boxed answers: the last counts */
        {"first \\boxed{3}, corrected: \\boxed{4}", NULL, EXM_NUMBER, 0, EX_BOXED, "4"},
        {"\\boxed{\\frac{1}{2}}", NULL, EXM_ANSWER, 0, EX_BOXED, "\\frac{1}{2}"},
        {"\\fbox{B} then \\boxed{C}", NULL, EXM_CHOICE, 4, EX_BOXED, "C"},
        {"\\boxed{\\text{Paris}}.", NULL, EXM_ANSWER, 0, EX_BOXED, "Paris"},
        /* an unclosed box does not count; the one before it does */
        {"\\boxed{12} and \\boxed{13", NULL, EXM_NUMBER, 0, EX_BOXED, "12"},
        {"\\boxed{13", NULL, EXM_NUMBER, 0, EX_LAST_NUMBER, "13"},
        /* escaped braces inside */
        {"\\boxed{\\{1,2\\}}", NULL, EXM_ANSWER, 0, EX_BOXED, "\\{1,2\\}"},
        /* the answer line outranks a box */
        {"\\boxed{9}\nAnswer: 8", NULL, EXM_NUMBER, 0, EX_ANSWER_LINE, "8"},
    };
    run_cases(c, sizeof c / sizeof *c);
}

static void numbers(void **state)
{
    static const ecase c[] = {
        {"It is 1,234.5 km away", NULL, EXM_NUMBER, 0, EX_LAST_NUMBER, "1,234.5"},
        {"costs $42 in total", NULL, EXM_NUMBER, 0, EX_LAST_NUMBER, "$42"},
        {"from 3 to -7", NULL, EXM_NUMBER, 0, EX_LAST_NUMBER, "-7"},
        {"temperature \xe2\x88\x92" "5 degrees", NULL, EXM_NUMBER, 0, EX_LAST_NUMBER, "\xe2\x88\x92" "5"},
        {"steps 3-5", NULL, EXM_NUMBER, 0, EX_LAST_NUMBER, "5"},
        {"no digits here", NULL, EXM_NUMBER, 0, EX_NONE, NULL},
    };
    run_cases(c, sizeof c / sizeof *c);
    static const struct {
        const char *s;
        double v;
    } first[] = {
        {"1,234.5 km", 1234.5},
        {"$42", 42},
        {"\\$1,000,000", 1e6},
        {"-3/4", -0.75},
        {"\xe2\x88\x92" "12", -12},
        {"\\frac{3}{4}", 0.75},
        {"-\\dfrac{1}{8}", -0.125},
        {"1{,}234", 1234},
        {"1,2", 1},
        {"12,3456", 12},
        {"1234,567", 1234},
        {".5 of it", 0.5},
        {"2.5e3 J", 2500},
        {"42.", 42},
        {"x = 7", 7},
        {"100%", 100},
        {"0.1", 0.1},
        {"007", 7},
    };
    for (size_t i = 0; i < sizeof first / sizeof *first; i++) {
        double v;
        if (!ex_first_number(first[i].s, strlen(first[i].s), &v, NULL, NULL) || fabs(v - first[i].v) > 1e-12)
            fail_msg("'%s': got %.17g, want %.17g", first[i].s, v, first[i].v);
    }
    double v;
    size_t b, e;
    assert_int_equal(ex_last_number("a 1, b 2,000 c", 14, &v, &b, &e), 1);
    assert_true(v == 2000);
    assert_int_equal(b, 7);
    assert_int_equal(e, 12);
    assert_int_equal(ex_first_number("", 0, &v, NULL, NULL), 0);
    /* whole-text numbers: expected values and the import's classification */
    static const char *const yes[] = {"42", " $1,000 ", "5 km", "1/2", "50%", "-0.25", "12 apples.", "\\frac{1}{3}",
                                      "3 \\%", "42\xc2\xb0"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        if (ex_parse_number(yes[i], &v)) fail_msg("'%s' should be a number", yes[i]);
    static const char *const no[] = {"2x+1", "\\sqrt{2}", "3 or 4", "(1,2)", "", "abc", "x^2", "3\\sqrt{2}"};
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        if (!ex_parse_number(no[i], &v)) fail_msg("'%s' should not be a number", no[i]);
}

static void choices(void **state)
{
    static const ecase c[] = {
        /* a letter inside a word never counts */
        {"Absolutely, it must be so.", NULL, EXM_CHOICE, 4, EX_NONE, NULL},
        {"Absolutely: (C)", NULL, EXM_CHOICE, 4, EX_CHOICE_LETTER, "C"},
        {"The Answer is B.", NULL, EXM_CHOICE, 4, EX_CHOICE_LETTER, "B"},
        {"I pick **D** here", NULL, EXM_CHOICE, 4, EX_CHOICE_LETTER, "D"},
        {"B) is right", NULL, EXM_CHOICE, 4, EX_CHOICE_LETTER, "B"},
        {"C", NULL, EXM_CHOICE, 4, EX_CHOICE_LETTER, "C"},
        {" c ", NULL, EXM_CHOICE, 4, EX_CHOICE_LETTER, "C"},
        /* "A" the article, "I" the pronoun: not choices */
        {"A car is faster. I think so.", NULL, EXM_CHOICE, 10, EX_NONE, NULL},
        /* the last strong form wins over earlier ones and over bare letters */
        {"Not (A). Option C fits. D is tempting", NULL, EXM_CHOICE, 4, EX_CHOICE_LETTER, "C"},
        {"between B and D, D", NULL, EXM_CHOICE, 4, EX_CHOICE_LETTER, "D"},
        /* out of range letters are words */
        {"E is not an option", NULL, EXM_CHOICE, 4, EX_NONE, NULL},
        {"Answer: B. Paris", NULL, EXM_CHOICE, 4, EX_ANSWER_LINE, "B. Paris"},
        /* unicode around a letter: Ä and é are letters of a word */
        {"\xc3\x84" "B and B\xc3\xa9 but (A)", NULL, EXM_CHOICE, 4, EX_CHOICE_LETTER, "A"},
        {"\xe2\x80\x9c" "B" "\xe2\x80\x9d", NULL, EXM_CHOICE, 4, EX_NONE, NULL},
        {"B's turn", NULL, EXM_CHOICE, 4, EX_NONE, NULL},
    };
    run_cases(c, sizeof c / sizeof *c);
    /* inside an extracted answer: the first strong, else bare letter */
    static const struct {
        const char *s;
        int letters;
        char want;
    } in[] = {
        {"B", 4, 'B'},     {"(B)", 4, 'B'},          {"B. Paris", 4, 'B'},  {"**C**", 4, 'C'},
        {"\\text{D}", 4, 'D'}, {"b", 4, 'B'},         {"Absolutely", 4, 0},  {"C, not A", 4, 'C'},
        {"I think B", 10, 'B'}, {"F", 4, 0},          {"F", 6, 'F'},         {"", 4, 0},
        {"option (D)", 4, 'D'},
    };
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        char got = ex_choice_in(in[i].s, strlen(in[i].s), in[i].letters);
        if (got != in[i].want)
            fail_msg("'%s': got '%c', want '%c'", in[i].s, got ? got : '0', in[i].want ? in[i].want : '0');
    }
}

static void whole_and_empty(void **state)
{
    static const ecase c[] = {
        {"  Paris.  ", NULL, EXM_ANSWER, 0, EX_WHOLE_TEXT, "Paris"},
        {"**Paris**", NULL, EXM_ANSWER, 0, EX_WHOLE_TEXT, "Paris"},
        {"Wait...", NULL, EXM_ANSWER, 0, EX_WHOLE_TEXT, "Wait..."},
        {"", NULL, EXM_ANSWER, 0, EX_NONE, NULL},
        {NULL, NULL, EXM_ANSWER, 0, EX_NONE, NULL},
        {" \n\t ", NULL, EXM_ANSWER, 0, EX_NONE, NULL},
        {"** **", NULL, EXM_ANSWER, 0, EX_NONE, NULL},
        /* text mode: as written, fences and all, but for the spaces */
        {"\n```json\n{\"a\": 1}\n```\n", NULL, EXM_TEXT, 0, EX_WHOLE_TEXT, "```json\n{\"a\": 1}\n```"},
        {"**bold.**", NULL, EXM_TEXT, 0, EX_WHOLE_TEXT, "**bold.**"},
        /* unicode kept as it is */
        {"Answer: Zürich", NULL, EXM_ANSWER, 0, EX_ANSWER_LINE, "Zürich"},
        {"東京", NULL, EXM_ANSWER, 0, EX_WHOLE_TEXT, "東京"},
    };
    run_cases(c, sizeof c / sizeof *c);
    static const char *const names[] = {"none", "answer_line", "boxed", "last_number", "choice_letter",
                                        "whole_text", "thinking_only", "tool_calls"};
    for (int i = EX_NONE; i <= EX_TOOL_CALLS; i++) assert_string_equal(ex_rule_name((ex_rule)i), names[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(thinking), cmocka_unit_test(answer_lines), cmocka_unit_test(boxed),
        cmocka_unit_test(numbers),  cmocka_unit_test(choices),      cmocka_unit_test(whole_and_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
