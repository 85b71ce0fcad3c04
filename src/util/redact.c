/* redact.c - secret-looking names and the values that follow them.
 *
 * The decision is made per word of the name, not by a plain substring
 * search: "contains TOKEN" would hide the value of vLLM's --tokenizer and
 * --max-num-batched-tokens, and a config dump that hides ordinary values
 * teaches people to stop reading it.  A word that ends in TOKEN or KEY
 * (HFTOKEN, APIKEY, ACCESS_TOKEN) still counts, so gluing words together
 * does not leak a secret. */
#include "util/redact.h"
#include "util/buf.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool ends_with_ci(const char *w, size_t n, const char *suffix)
{
    size_t sl = strlen(suffix);
    return n >= sl && !strncasecmp(w + n - sl, suffix, sl);
}

static bool contains_ci(const char *w, size_t n, const char *needle)
{
    size_t nl = strlen(needle);
    for (size_t i = 0; i + nl <= n; i++)
        if (!strncasecmp(w + i, needle, nl)) return true;
    return false;
}

static bool equals_ci(const char *w, size_t n, const char *s)
{
    return strlen(s) == n && !strncasecmp(w, s, n);
}

static bool word_is_secret(const char *w, size_t n)
{
    return contains_ci(w, n, "SECRET") || contains_ci(w, n, "PASSWORD") ||
           contains_ci(w, n, "PASSWD") || contains_ci(w, n, "CREDENTIAL") ||
           ends_with_ci(w, n, "KEY") || ends_with_ci(w, n, "KEYS") || ends_with_ci(w, n, "TOKEN") ||
           equals_ci(w, n, "AUTH") || equals_ci(w, n, "AUTHORIZATION");
}

bool redact_is_secret_name(const char *name)
{
    if (!name) return false;
    while (*name == '-')
        name++;
    const char *w = name;
    for (const char *c = name;; c++) {
        if (*c == '\0' || *c == '-' || *c == '_' || *c == '.') {
            if (c > w && word_is_secret(w, (size_t)(c - w))) return true;
            if (*c == '\0') return false;
            w = c + 1;
        }
    }
}

/* NAME=VALUE where NAME is a shell variable name. */
static bool env_word(const char *s, size_t *namelen)
{
    if (!(isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
    size_t i = 1;
    while (isalnum((unsigned char)s[i]) || s[i] == '_')
        i++;
    if (s[i] != '=') return false;
    *namelen = i;
    return true;
}

static void replace_value(char **word, size_t keep)
{
    char *nw = xasprintf("%.*s%s", (int)keep, *word, REDACTED);
    free(*word);
    *word = nw;
}

static bool secret_prefix(const char *s, size_t n)
{
    char *name = xstrndup(s, n);
    bool r = redact_is_secret_name(name);
    free(name);
    return r;
}

void redact_argv(strv *argv)
{
    for (size_t i = 0; i < argv->n; i++) {
        char *w = argv->v[i];
        size_t nl;
        if (w[0] == '-' && w[1] != '\0') {
            char *eq = strchr(w, '=');
            if (eq) {
                if (secret_prefix(w, (size_t)(eq - w)))
                    replace_value(&argv->v[i], (size_t)(eq - w) + 1);
            } else if (redact_is_secret_name(w) && i + 1 < argv->n &&
                       strncmp(argv->v[i + 1], "--", 2) != 0) {
                replace_value(&argv->v[i + 1], 0);
                i++;
            }
        } else if (i > 0 && env_word(w, &nl) && secret_prefix(w, nl)) {
            replace_value(&argv->v[i], nl + 1);
        }
    }
}

void redact_env(strv *env)
{
    for (size_t i = 0; i < env->n; i++) {
        char *eq = strchr(env->v[i], '=');
        if (eq && secret_prefix(env->v[i], (size_t)(eq - env->v[i])))
            replace_value(&env->v[i], (size_t)(eq - env->v[i]) + 1);
    }
}

/* ---- free text ---------------------------------------------------------
 * One pass per line over whitespace-separated words.  A word is either a
 * whole secret name ("--api-key", "Authorization:", "'api_key':") whose
 * value is the next word, or NAME<sep>VALUE in one word ("HF_TOKEN=x",
 * "--api-key=x", "\"api_key\":\"x\"").  Only '=' names are restricted to
 * shell-variable characters, so llama.cpp's
 * "tokenizer.ggml.add_bos_token=bool:false" is left alone as redact_argv
 * leaves it. */

static bool text_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\0';
}

static bool open_punct(char c)
{
    return c == '{' || c == '[' || c == '(' || c == '\'' || c == '"';
}

static bool close_punct(char c)
{
    return c == ',' || c == ';' || c == ')' || c == ']' || c == '}';
}

static bool auth_scheme(const char *w, size_t n)
{
    return equals_ci(w, n, "Bearer") || equals_ci(w, n, "Basic") || equals_ci(w, n, "Token") ||
           equals_ci(w, n, "Digest");
}

/* Split a value word into kept prefix (opening quotes and brackets), the
 * secret body, and kept suffix (closing quote and punctuation). */
static void value_parts(const char *w, size_t n, size_t *pre, size_t *body)
{
    size_t a = 0;
    while (a < n && open_punct(w[a]))
        a++;
    size_t b;
    if (a > 0 && (w[a - 1] == '\'' || w[a - 1] == '"')) {
        b = a;
        while (b < n && w[b] != w[a - 1])
            b++;
    } else {
        b = n;
        while (b > a && (close_punct(w[b - 1]) || w[b - 1] == '\'' || w[b - 1] == '"'))
            b--;
    }
    *pre = a;
    *body = b - a;
}

static void emit_value(buf *out, const char *w, size_t n)
{
    size_t pre, body;
    value_parts(w, n, &pre, &body);
    if (body == 0) {
        buf_add(out, w, n);
        return;
    }
    buf_add(out, w, pre);
    buf_adds(out, REDACTED);
    buf_add(out, w + pre + body, n - pre - body);
}

static bool secret_span(const char *s, size_t n)
{
    return n > 0 && secret_prefix(s, n);
}

static bool name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.';
}

/* NAME<sep>... inside w, sep '=' or ':' and NAME the run of name
 * characters just before it (quotes between them allowed): returns the
 * offset of the first separator whose name is a secret, or 0. */
static size_t secret_sep(const char *w, size_t n)
{
    for (size_t s = 1; s < n; s++) {
        if (w[s] != '=' && w[s] != ':') continue;
        size_t e = s;
        while (e > 0 && (w[e - 1] == '\'' || w[e - 1] == '"'))
            e--;
        size_t a = e;
        while (a > 0 && name_char(w[a - 1]))
            a--;
        if (a == e) continue;
        if (w[s] == '=' && w[a] != '-') {
            /* shell-variable names only, see above */
            if (isdigit((unsigned char)w[a])) continue;
            bool ok = true;
            for (size_t i = a; i < e; i++)
                if (w[i] == '.' || w[i] == '-') ok = false;
            if (!ok) continue;
        }
        if (secret_span(w + a, e - a)) return s;
    }
    return 0;
}

static void redact_line(buf *out, const char *line, size_t n)
{
    bool want_value = false; /* the previous word was a secret name */
    size_t i = 0;
    while (i < n) {
        if (text_space(line[i])) {
            buf_addc(out, line[i++]);
            continue;
        }
        size_t e = i;
        while (e < n && !text_space(line[e]))
            e++;
        const char *w = line + i;
        size_t wn = e - i;
        i = e;

        if (want_value) {
            want_value = false;
            if (!(wn >= 2 && w[0] == '-' && w[1] == '-')) {
                size_t pre, body;
                value_parts(w, wn, &pre, &body);
                if (auth_scheme(w + pre, body) && pre + body == wn) {
                    buf_add(out, w, wn); /* "Bearer" is kept, the token after it is not */
                    want_value = true;
                } else {
                    emit_value(out, w, wn);
                }
                continue;
            }
        }

        size_t sep = secret_sep(w, wn);
        if (sep) {
            size_t pre, body;
            value_parts(w + sep + 1, wn - sep - 1, &pre, &body);
            if (body == 0 && pre + body == wn - sep - 1) {
                /* "Authorization:", "'api_key':", "--api-key=" then a space */
                buf_add(out, w, wn);
                want_value = true;
            } else {
                buf_add(out, w, sep + 1);
                emit_value(out, w + sep + 1, wn - sep - 1);
            }
            continue;
        }
        buf_add(out, w, wn);
        if (w[0] == '-' && wn > 1 && secret_span(w, wn)) {
            want_value = true;
        } else {
            size_t pre, body;
            value_parts(w, wn, &pre, &body);
            if (equals_ci(w + pre, body, "Bearer")) want_value = true;
        }
    }
}

char *redact_text(const char *text, size_t len, size_t *out_len)
{
    buf out = BUF_INIT;
    buf_grow(&out, len + 16);
    size_t i = 0;
    while (i < len) {
        size_t eol = i;
        while (eol < len && text[eol] != '\n')
            eol++;
        redact_line(&out, text + i, eol - i);
        if (eol < len) {
            buf_addc(&out, '\n');
            eol++;
        }
        i = eol;
    }
    if (out_len) *out_len = out.len;
    return buf_detach(&out);
}
