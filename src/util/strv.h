/* strv.h - NULL-terminated string vectors (argv, env) and ordered string
 * maps.  Every element is owned by the vector. */
#ifndef GPUMOD_STRV_H
#define GPUMOD_STRV_H

#include <stddef.h>

typedef struct strv {
    char **v; /* always NULL-terminated once anything was pushed */
    size_t n;
    size_t cap;
} strv;

#define STRV_INIT {NULL, 0, 0}

void strv_push(strv *s, const char *str);
void strv_push_own(strv *s, char *str); /* takes ownership */
void strv_pushf(strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strv_extend(strv *s, const strv *from);
void strv_release(strv *s);
void strv_copy(strv *dst, const strv *src);
int strv_find(const strv *s, const char *str); /* index or -1 */
/* Entries of a "KEY=VALUE" vector: set replaces an existing KEY. */
void strv_setenv(strv *s, const char *key, const char *val);
const char *strv_getenv(const strv *s, const char *key);

#endif
