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
