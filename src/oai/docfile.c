/* docfile.c (oai) - result documents on disk (docfile.h).  A write is
 * checked to its close (a full disk shows at fclose), and a parse error
 * names its line and column, since these are files people edit and diff. */
#include "oai/docfile.h"

#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/errf.h"

int docfile_write(const char *path, const buf *b, const char *what, char *err, size_t errlen)
{
    if (!strcmp(path, "-")) {
        fwrite(b->p, 1, b->len, stdout);
        fflush(stdout);
        return 0;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        errf(err, errlen, "cannot write the %s to '%s': %s", what, path, strerror(errno));
        return -1;
    }
    size_t w = fwrite(b->p, 1, b->len, f);
    int e = ferror(f) ? errno : 0;
    int c = fclose(f); /* once, whatever it says: the FILE is gone after it */
    if (!e && c != 0) e = errno;
    if (w != b->len || e || c != 0) {
        errf(err, errlen, "cannot write the %s to '%s': %s", what, path, strerror(e ? e : EIO));
        return -1;
    }
    return 0;
}

int docfile_writable(const char *opt, const char *path, char *err, size_t errlen)
{
    if (!path || !strcmp(path, "-")) return 0;
    bool existed = access(path, F_OK) == 0;
    FILE *f = fopen(path, "a");
    if (!f) {
        errf(err, errlen, "%s '%s': cannot write there: %s", opt, path, strerror(errno));
        return -1;
    }
    fclose(f);
    if (!existed) unlink(path);
    return 0;
}

cJSON *docfile_read(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        errf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        return NULL;
    }
    buf b = BUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_add(&b, chunk, n);
    fclose(f);
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithOpts(b.p ? b.p : "", &end, true);
    if (!j) {
        const char *at = end ? end : cJSON_GetErrorPtr();
        size_t off = at && b.p && at >= b.p && at <= b.p + b.len ? (size_t)(at - b.p) : 0;
        int line = 1, col = 1;
        for (size_t i = 0; i < off; i++) {
            if (b.p[i] == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        errf(err, errlen, "'%s': not valid JSON at line %d, column %d (byte %zu)", path, line, col, off);
    }
    buf_release(&b);
    return j;
}

cJSON *docfile_new(const char *schema, const char *kind, const char *tool, int64_t started_unix_ms, int argc,
                   char **argv)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "schema", schema);
    cJSON_AddStringToObject(d, "kind", kind);
    char ts[40];
    clock_rfc3339(started_unix_ms, ts, sizeof ts);
    cJSON_AddStringToObject(d, "started", ts);
    cJSON_AddNullToObject(d, "finished");
    cJSON_AddStringToObject(d, "gpumod_version", GPUMOD_VERSION);
    cJSON *a = cJSON_AddArrayToObject(d, "argv");
    cJSON_AddItemToArray(a, cJSON_CreateString("gpumod"));
    cJSON_AddItemToArray(a, cJSON_CreateString(tool));
    for (int i = 1; i < argc; i++) cJSON_AddItemToArray(a, cJSON_CreateString(argv[i]));
    return d;
}

void docfile_num(cJSON *o, const char *key, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}
