/* strv.c - string vectors.  Kept NULL-terminated at all times so a vector
 * can be handed to execve() as it is. */
#include "util/strv.h"
#include "util/buf.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void strv_push_own(strv *s, char *str)
{
    if (s->n + 2 > s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->v = xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = str;
    s->v[s->n] = NULL;
}

void strv_push(strv *s, const char *str)
{
    strv_push_own(s, xstrdup(str));
}

void strv_pushf(strv *s, const char *fmt, ...)
{
    buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    strv_push_own(s, buf_detach(&b));
}

void strv_extend(strv *s, const strv *from)
{
    for (size_t i = 0; i < from->n; i++) strv_push(s, from->v[i]);
}

void strv_release(strv *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

void strv_copy(strv *dst, const strv *src)
{
    strv_release(dst);
    strv_extend(dst, src);
}

int strv_find(const strv *s, const char *str)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], str)) return (int)i;
    return -1;
}

static int env_index(const strv *s, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i < s->n; i++)
        if (!strncmp(s->v[i], key, kl) && s->v[i][kl] == '=') return (int)i;
    return -1;
}

void strv_setenv(strv *s, const char *key, const char *val)
{
    char *e = xasprintf("%s=%s", key, val);
    int i = env_index(s, key);
    if (i >= 0) {
        free(s->v[i]);
        s->v[i] = e;
    } else {
        strv_push_own(s, e);
    }
}

const char *strv_getenv(const strv *s, const char *key)
{
    int i = env_index(s, key);
    return i < 0 ? NULL : s->v[i] + strlen(key) + 1;
}
