/* jstrict.c - strict JSON request bodies (see jstrict.h).
 *
 * cJSON parses; two small passes add what it does not check.  The byte
 * pass walks the text once, tracking only whether it is inside a string
 * (outside, cJSON has judged every byte), and refuses NUL and raw control
 * bytes there.  The tree pass sorts each object's keys (already unescaped
 * by cJSON, and NUL-free after the byte pass, so strcmp is exact) and
 * refuses a repeat: O(n log n) per object, whatever the body holds. */
#include "util/jstrict.h"
#include "util/buf.h"
#include "util/errf.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* NUL and raw control bytes inside strings; 0, or -1 with err. */
static int check_strings(const char *p, size_t len, char *err, size_t errlen)
{
    bool in = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        if (!in) {
            in = c == '"';
            continue;
        }
        if (c == '"') {
            in = false;
        } else if (c < 0x20) {
            errf(err, errlen, "a string holds a raw control byte 0x%02x at byte %zu (escape it)", c, i);
            return -1;
        } else if (c == '\\' && i + 1 < len) {
            if (p[i + 1] == 'u' && i + 5 < len && !memcmp(p + i + 2, "0000", 4)) {
                errf(err, errlen, "a string holds U+0000 (\\u0000) at byte %zu", i);
                return -1;
            }
            i++; /* the escaped byte: never a closing quote */
        }
    }
    return 0;
}

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The path of `key` under `path` ($.a.b), for messages. */
static void path_add(buf *path, const char *key)
{
    buf_addc(path, '.');
    buf_adds(path, key);
}

/* Repeated keys in any object under j; 0, or -1 with err. */
static int check_keys(const cJSON *j, buf *path, char *err, size_t errlen)
{
    size_t n = 0;
    for (const cJSON *c = j->child; c; c = c->next) n++;
    if (cJSON_IsObject(j) && n > 1) {
        const char **keys = xcalloc(n, sizeof *keys);
        size_t k = 0;
        for (const cJSON *c = j->child; c; c = c->next) keys[k++] = c->string ? c->string : "";
        qsort(keys, n, sizeof *keys, cmp_keys);
        for (k = 1; k < n; k++)
            if (!strcmp(keys[k - 1], keys[k])) break;
        if (k < n) {
            errf(err, errlen, "key '%.100s' appears twice in the object at %s", keys[k], path->p);
            free(keys);
            return -1;
        }
        free(keys);
    }
    size_t at = path->len, i = 0;
    for (const cJSON *c = j->child; c; c = c->next, i++) {
        if (!c->child) continue;
        if (cJSON_IsObject(j)) path_add(path, c->string ? c->string : "");
        else buf_printf(path, "[%zu]", i);
        int rc = check_keys(c, path, err, errlen);
        path->len = at;
        path->p[at] = '\0';
        if (rc) return -1;
    }
    return 0;
}

cJSON *jstrict_parse(const char *p, size_t len, char *err, size_t errlen)
{
    if (len == 0) {
        errf(err, errlen, "the body is empty");
        return NULL;
    }
    if (check_strings(p, len, err, errlen)) return NULL;
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(p, len, &end, false);
    if (!j) {
        size_t off = end && end >= p ? (size_t)(end - p) : 0;
        errf(err, errlen, "not JSON (at byte %zu)", off);
        return NULL;
    }
    size_t off = (size_t)(end - p);
    while (off < len && json_space(p[off])) off++;
    if (off < len) {
        errf(err, errlen, "data after the JSON value at byte %zu", off);
        cJSON_Delete(j);
        return NULL;
    }
    buf path = BUF_INIT;
    buf_adds(&path, "$");
    int rc = check_keys(j, &path, err, errlen);
    buf_release(&path);
    if (rc) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}
