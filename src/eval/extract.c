/* extract.c - the answer in a reply (see extract.h for the rules).
 *
 * Design: the rules run in a fixed order on the visible text and then,
 * only to explain a failure, on the thinking.  Everything works on
 * (pointer, length) spans of the reply, and allocates once, for the
 * normalized answer.  ds4-eval takes the FIRST "answer" in the text, so a
 * sentence like "the answer depends on..." can win; here it is the LAST
 * line that starts with it. */
#include "eval/extract.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const rule_names[] = {
    "none", "answer_line", "boxed", "last_number", "choice_letter", "whole_text", "thinking_only", "tool_calls",
};

const char *ex_rule_name(ex_rule r)
{
    return (unsigned)r < sizeof rule_names / sizeof *rule_names ? rule_names[r] : "?";
}

/* a byte of a word: a choice letter next to one is part of the word
 * (UTF-8 bytes count, so "Aé" is a word) */
static bool word_byte(unsigned char c)
{
    return isalnum(c) || c == '_' || c == '\'' || c >= 0x80;
}

static bool space_byte(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static const char *find_last(const char *s, size_t len, const char *needle)
{
    size_t nl = strlen(needle);
    const char *last = NULL;
    for (const char *p = s, *e = s + len; (size_t)(e - p) >= nl;) {
        const char *q = memmem(p, (size_t)(e - p), needle, nl);
        if (!q) break;
        last = q;
        p = q + 1;
    }
    return last;
}

view ex_visible(const char *content, view *thinking)
{
    view vis = {content ? content : "", content ? strlen(content) : 0}, th = {"", 0};
    const char *close = find_last(vis.p, vis.len, "</think>");
    const char *open = memmem(vis.p, close ? (size_t)(close - vis.p) : vis.len, "<think>", 7);
    if (close) {
        th.p = open ? open + 7 : vis.p;
        th.len = (size_t)(close - th.p);
        vis.len -= (size_t)(close + 8 - vis.p);
        vis.p = close + 8;
    } else if (open) { /* never closed: out of tokens while thinking */
        th.p = open + 7;
        th.len = vis.len - (size_t)(th.p - vis.p);
        vis.len = (size_t)(open - vis.p);
    }
    if (thinking) *thinking = th;
    return vis;
}

/* The '}' that closes the '{' at s[open], or len when it never closes. */
static size_t brace_end(const char *s, size_t len, size_t open)
{
    int depth = 0;
    for (size_t i = open; i < len; i++) {
        if (s[i] == '\\' && i + 1 < len) {
            i++; /* \{ and \} are literal braces */
        } else if (s[i] == '{') {
            depth++;
        } else if (s[i] == '}' && --depth == 0) {
            return i;
        }
    }
    return len;
}

static bool has_prefix(const char *p, size_t n, const char *pre)
{
    size_t l = strlen(pre);
    return n >= l && !memcmp(p, pre, l);
}

/* The whole of [p, p+n) is \cmd{...} for one of cmds: narrows to the inside. */
static bool unwrap_cmd(const char **p, size_t *n, const char *const *cmds)
{
    for (size_t i = 0; cmds[i]; i++) {
        size_t l = strlen(cmds[i]);
        if (!has_prefix(*p, *n, cmds[i]) || brace_end(*p, *n, l - 1) != *n - 1) continue;
        *p += l;
        *n -= l + 1;
        return true;
    }
    return false;
}

/* markdown and LaTeX wrappers around a whole answer */
static bool unwrap_once(const char **pp, size_t *nn)
{
    static const char *const cmds[] = {"\\boxed{", "\\fbox{", "\\text{", "\\textbf{", "\\mathrm{", "\\mathbf{", NULL};
    static const char *const pairs[][2] = {{"$", "$"}, {"\\(", "\\)"}, {"\\[", "\\]"}};
    const char *p = *pp;
    size_t n = *nn;
    while (n && (space_byte((unsigned char)*p) || *p == '*' || *p == '_' || *p == '`')) p++, n--;
    while (n && (space_byte((unsigned char)p[n - 1]) || p[n - 1] == '*' || p[n - 1] == '_' || p[n - 1] == '`')) n--;
    bool changed = p != *pp || n != *nn;
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        size_t a = strlen(pairs[i][0]), b = strlen(pairs[i][1]);
        if (n > a + b && has_prefix(p, n, pairs[i][0]) && !memcmp(p + n - b, pairs[i][1], b) &&
            !(i == 0 && memchr(p + a, '$', n - a - b))) { /* "$5 and $6" is no $math$ */
            p += a;
            n -= a + b;
            changed = true;
        }
    }
    if (unwrap_cmd(&p, &n, cmds)) changed = true;
    *pp = p;
    *nn = n;
    return changed;
}

/* The answer as recorded: unwrapped, trimmed, a full stop gone ("..."
 * stays). */
static char *normalize(const char *p, size_t n)
{
    for (;;) {
        bool changed = unwrap_once(&p, &n);
        if (n > 1 && p[n - 1] == '.' && p[n - 2] != '.') n--, changed = true;
        if (!changed) break;
    }
    return xstrndup(p, n);
}

/* "answer:" or "final answer =" at the start of [p, e): the value's start */
static const char *answer_label(const char *p, const char *e)
{
    while (p < e && (space_byte((unsigned char)*p) || strchr("*_#>-", *p))) p++;
    if (e - p >= 5 && !strncasecmp(p, "final", 5)) {
        const char *q = p + 5;
        while (q < e && (*q == ' ' || *q == '\t' || *q == '*' || *q == '_')) q++;
        if (q > p + 5) p = q;
    }
    if (e - p < 6 || strncasecmp(p, "answer", 6)) return NULL;
    p += 6;
    while (p < e && (*p == ' ' || *p == '\t' || *p == '*' || *p == '_')) p++;
    if (p < e && (*p == ':' || *p == '='))
        p++;
    else if (e - p >= 3 && !memcmp(p, "\xef\xbc\x9a", 3)) /* U+FF1A FULLWIDTH COLON */
        p += 3;
    else
        return NULL;
    return p;
}

static bool blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!space_byte((unsigned char)p[i]) && p[i] != '*' && p[i] != '_') return false;
    return true;
}

/* The value of the last answer line: [*vb, *ve).  An empty value is taken
 * from the next non-empty line ("Answer:\n42"). */
static bool find_answer_line(const char *s, size_t len, const char **vb, const char **ve)
{
    bool found = false;
    const char *e = s + len;
    for (const char *ls = s; ls < e;) {
        const char *le = memchr(ls, '\n', (size_t)(e - ls));
        if (!le) le = e;
        const char *v = answer_label(ls, le);
        if (v) {
            const char *vend = le;
            while (blank(v, (size_t)(vend - v)) && vend < e) { /* the next line */
                v = vend + 1;
                vend = memchr(v, '\n', (size_t)(e - v));
                if (!vend) vend = e;
            }
            if (!blank(v, (size_t)(vend - v))) {
                *vb = v;
                *ve = vend;
                found = true;
            }
        }
        ls = le + 1;
    }
    return found;
}

/* The inside of the last \boxed{...} / \fbox{...} that closes. */
static bool find_boxed(const char *s, size_t len, const char **vb, const char **ve)
{
    static const char *const cmds[] = {"\\boxed{", "\\fbox{"};
    bool found = false;
    const char *best = NULL;
    for (size_t c = 0; c < 2; c++) {
        size_t l = strlen(cmds[c]);
        for (const char *p = s; (p = memmem(p, len - (size_t)(p - s), cmds[c], l)); p++) {
            size_t open = (size_t)(p - s) + l - 1, close = brace_end(s, len, open);
            if (close == len || (best && p < best)) continue;
            best = p;
            *vb = s + open + 1;
            *ve = s + close;
            found = true;
        }
    }
    return found;
}

/* ---- numbers ---- */

static bool digit(const char *s, size_t len, size_t i)
{
    return i < len && isdigit((unsigned char)s[i]);
}

static size_t num_at(const char *s, size_t len, size_t i, double *v);

/* \frac{a}{b} at s[i] (also \dfrac, \tfrac): its end, or 0 */
static size_t frac_at(const char *s, size_t len, size_t i, double *v)
{
    static const char *const cmds[] = {"\\frac{", "\\dfrac{", "\\tfrac{"};
    for (size_t c = 0; c < 3; c++) {
        size_t l = strlen(cmds[c]);
        if (!has_prefix(s + i, len - i, cmds[c])) continue;
        size_t a0 = i + l, a1 = brace_end(s, len, a0 - 1);
        if (a1 >= len - 1 || s[a1 + 1] != '{') return 0;
        size_t b0 = a1 + 2, b1 = brace_end(s, len, a1 + 1);
        double a, b;
        if (b1 == len || num_at(s, a1, a0, &a) != a1 - a0 || num_at(s, b1, b0, &b) != b1 - b0 || b == 0) return 0;
        *v = a / b;
        return b1 + 1;
    }
    return 0;
}

/* digits with thousands groups from s[*p], appended to out (commas out) */
static void int_part(const char *s, size_t len, size_t *p, buf *out)
{
    size_t q = *p;
    while (digit(s, len, q)) buf_addc(out, s[q++]);
    if (q - *p > 3) {
        *p = q;
        return;
    }
    for (;;) { /* ",ddd" or "{,}ddd", never followed by a fourth digit */
        size_t sep = s[q] == ',' ? 1 : has_prefix(s + q, len - q, "{,}") ? 3 : 0;
        if (q >= len || !sep || !digit(s, len, q + sep) || !digit(s, len, q + sep + 1) ||
            !digit(s, len, q + sep + 2) || digit(s, len, q + sep + 3))
            break;
        buf_add(out, s + q + sep, 3);
        q += sep + 3;
    }
    *p = q;
}

/* A number starting exactly at s[i]: its length, or 0. */
static size_t num_at(const char *s, size_t len, size_t i, double *v)
{
    size_t p = i;
    bool neg = false;
    if (!(i > 0 && word_byte((unsigned char)s[i - 1]))) { /* "3-5" is 3 and 5 */
        if (p < len && (s[p] == '-' || s[p] == '+'))
            neg = s[p++] == '-';
        else if (has_prefix(s + p, len - p, "\xe2\x88\x92")) /* U+2212 MINUS SIGN */
            neg = true, p += 3;
    }
    if (p < len && s[p] == '$')
        p++;
    else if (has_prefix(s + p, len - p, "\\$"))
        p += 2;
    size_t f = p < len && s[p] == '\\' ? frac_at(s, len, p, v) : 0;
    if (f) {
        if (neg) *v = -*v;
        return f - i;
    }
    if (!digit(s, len, p) && !(p + 1 < len && s[p] == '.' && digit(s, len, p + 1))) return 0;
    buf t = BUF_INIT;
    if (neg) buf_addc(&t, '-');
    int_part(s, len, &p, &t);
    bool integer = true;
    if (p + 1 < len && s[p] == '.' && digit(s, len, p + 1)) {
        integer = false;
        buf_addc(&t, s[p++]);
        while (digit(s, len, p)) buf_addc(&t, s[p++]);
    }
    size_t x = p + 1 + (p + 1 < len && (s[p + 1] == '-' || s[p + 1] == '+'));
    if (p < len && (s[p] == 'e' || s[p] == 'E') && digit(s, len, x)) {
        integer = false;
        buf_add(&t, s + p, x - p);
        for (p = x; digit(s, len, p);) buf_addc(&t, s[p++]);
    }
    *v = strtod(t.p, NULL);
    buf_release(&t);
    if (integer && p + 1 < len && s[p] == '/' && digit(s, len, p + 1)) { /* a/b */
        size_t q = p + 1;
        double d = 0;
        while (digit(s, len, q)) d = d * 10 + (s[q++] - '0');
        if (d != 0) {
            *v /= d;
            p = q;
        }
    }
    return p - i;
}

int ex_first_number(const char *s, size_t len, double *v, size_t *b, size_t *e)
{
    for (size_t i = 0; i < len; i++) {
        size_t n = num_at(s, len, i, v);
        if (!n) continue;
        if (b) *b = i;
        if (e) *e = i + n;
        return 1;
    }
    return 0;
}

int ex_last_number(const char *s, size_t len, double *v, size_t *b, size_t *e)
{
    int found = 0;
    for (size_t i = 0; i < len; i++) {
        double x;
        size_t n = num_at(s, len, i, &x);
        if (!n) continue;
        *v = x;
        if (b) *b = i;
        if (e) *e = i + n;
        found = 1;
        i += n - 1;
    }
    return found;
}

int ex_parse_number(const char *s, double *v)
{
    size_t len = strlen(s), i = 0;
    while (i < len && space_byte((unsigned char)s[i])) i++;
    size_t n = num_at(s, len, i, v);
    if (!n) return -1;
    /* what may follow: a unit, %, a full stop; never another number or
     * an operator ("3 or 4", "2x+1", "3\sqrt{2}") */
    for (i += n; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalpha(c) || space_byte(c) || c == '%' || c == '.' || c == '$' || c >= 0x80) &&
            !(c == '\\' && i + 1 < len && s[i + 1] == '%'))
            return -1;
    }
    return 0;
}

/* ---- choice letters ---- */

static bool in_range(char c, int letters)
{
    return c >= 'A' && c < 'A' + letters;
}

static bool standalone(const char *s, size_t len, size_t k)
{
    return (k == 0 || !word_byte((unsigned char)s[k - 1])) && (k + 1 >= len || !word_byte((unsigned char)s[k + 1]));
}

/* the text before s[k] ends with one of the words that name a choice */
static bool named_before(const char *s, size_t k)
{
    static const char *const words[] = {"answer is", "answer:", "answer is:", "option", "choice"};
    size_t j = k;
    while (j > 0 && (s[j - 1] == ' ' || s[j - 1] == '(' || s[j - 1] == '*')) j--;
    for (size_t w = 0; w < sizeof words / sizeof *words; w++) {
        size_t l = strlen(words[w]);
        if (j >= l && !strncasecmp(s + j - l, words[w], l) && (j == l || !word_byte((unsigned char)s[j - l - 1])))
            return true;
    }
    return false;
}

static bool strong_at(const char *s, size_t len, size_t k)
{
    char next = k + 1 < len ? s[k + 1] : '\0';
    if (next == ')') return true; /* (B) and B) */
    if ((next == '.' || next == ':') && (k + 2 >= len || space_byte((unsigned char)s[k + 2]) || s[k + 2] == '*'))
        return true;
    if (k >= 2 && !memcmp(s + k - 2, "**", 2) && k + 2 < len && !memcmp(s + k + 1, "**", 2)) return true;
    return named_before(s, k);
}

/* "A car", "I think": a capital A or I before a lowercase word */
static bool english(const char *s, size_t len, size_t k)
{
    return (s[k] == 'A' || s[k] == 'I') && k + 2 < len && s[k + 1] == ' ' && islower((unsigned char)s[k + 2]);
}

/* the text is a single letter, perhaps in any case */
static char lone_letter(const char *s, size_t len, int letters)
{
    while (len && space_byte((unsigned char)*s)) s++, len--;
    while (len && space_byte((unsigned char)s[len - 1])) len--;
    if (len != 1) return 0;
    char c = (char)toupper((unsigned char)s[0]);
    return in_range(c, letters) ? c : 0;
}

char ex_choice_in(const char *s, size_t len, int letters)
{
    char c = lone_letter(s, len, letters), bare = 0;
    if (c) return c;
    for (size_t k = 0; k < len; k++) {
        if (!in_range(s[k], letters) || !standalone(s, len, k)) continue;
        if (strong_at(s, len, k)) return s[k];
        if (!bare && !(s[k] == 'I' && english(s, len, k))) bare = s[k];
    }
    return bare;
}

char ex_choice_fallback(const char *s, size_t len, int letters)
{
    char c = lone_letter(s, len, letters), strong = 0, bare = 0;
    if (c) return c;
    for (size_t k = 0; k < len; k++) {
        if (!in_range(s[k], letters) || !standalone(s, len, k)) continue;
        if (strong_at(s, len, k))
            strong = s[k];
        else if (!english(s, len, k))
            bare = s[k];
    }
    return strong ? strong : bare;
}

/* ---- the rules ---- */

/* The value of an answer line, preferring a \boxed{} inside it. */
static char *line_value(const char *vb, const char *ve)
{
    const char *bb, *be;
    if (find_boxed(vb, (size_t)(ve - vb), &bb, &be)) return normalize(bb, (size_t)(be - bb));
    return normalize(vb, (size_t)(ve - vb));
}

/* The rules on one text; whole_text only when allowed.  EX_NONE when
 * nothing is found. */
static ex_rule run_rules(const char *s, size_t len, ex_mode mode, int letters, bool whole, char **answer)
{
    const char *vb, *ve;
    double v;
    size_t b, e;
    if (mode != EXM_TEXT && find_answer_line(s, len, &vb, &ve)) {
        *answer = line_value(vb, ve);
        return EX_ANSWER_LINE;
    }
    if (mode != EXM_TEXT && find_boxed(s, len, &vb, &ve)) {
        *answer = normalize(vb, (size_t)(ve - vb));
        return EX_BOXED;
    }
    if (mode == EXM_NUMBER && ex_last_number(s, len, &v, &b, &e)) {
        *answer = xstrndup(s + b, e - b);
        return EX_LAST_NUMBER;
    }
    char c = mode == EXM_CHOICE ? ex_choice_fallback(s, len, letters) : 0;
    if (c) {
        *answer = xstrndup(&c, 1);
        return EX_CHOICE_LETTER;
    }
    if ((mode == EXM_TEXT || mode == EXM_ANSWER) && whole && !blank(s, len)) {
        if (mode == EXM_ANSWER) {
            *answer = normalize(s, len);
        } else { /* as written, but for the spaces around (a ```json fence stays) */
            while (space_byte((unsigned char)*s)) s++, len--;
            while (space_byte((unsigned char)s[len - 1])) len--;
            *answer = xstrndup(s, len);
        }
        return EX_WHOLE_TEXT;
    }
    return EX_NONE;
}

void extract_answer(ex_result *out, const char *content, const char *reasoning, ex_mode mode, int letters)
{
    view th;
    view vis = ex_visible(content, &th);
    size_t rl = reasoning ? strlen(reasoning) : 0;
    memset(out, 0, sizeof *out);
    out->thinking = th.len > 0 || rl > 0 || (content && strstr(content, "</think>"));
    if (letters < 1) letters = 1;
    if (letters > 26) letters = 26;
    out->rule = run_rules(vis.p, vis.len, mode, letters, true, &out->answer);
    if (out->rule != EX_NONE || mode == EXM_TEXT) return;
    /* only to say why it failed: the answer was there, in the thinking */
    if (run_rules(th.p, th.len, mode, letters, false, &out->answer) != EX_NONE ||
        run_rules(reasoning ? reasoning : "", rl, mode, letters, false, &out->answer) != EX_NONE)
        out->rule = EX_THINKING_ONLY;
}

void ex_release(ex_result *r)
{
    free(r->answer);
    r->answer = NULL;
    r->rule = EX_NONE;
}
