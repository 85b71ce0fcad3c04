/* hub.c (models) - the Hugging Face Hub's repository listing.
 *
 * GET {endpoint}/api/models/{repo}/tree/{revision}?recursive=true answers
 * a JSON array of entries {"type": "file"|"directory", "path", "size",
 * "oid", "lfs": {"oid": sha256, "size", "pointerSize"}} (huggingface_hub
 * hf_api.py, list_repo_tree / RepoFile); long listings come in pages, the
 * next one named by a Link: <...>; rel="next" header (hf_api's
 * paginate()).  A file is fetched from {endpoint}/{repo}/resolve/{rev}/
 * {path} (file_download.py, hf_hub_url).  docs/models.md cites both. */
#include "models/source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "models/http.h"
#include "util/buf.h"
#include "util/errf.h"
#include "util/url.h"
#include "util/utf8.h"

#define LIST_MAX_BYTES (32u << 20)
#define LIST_MAX_PAGES 200
#define LIST_MAX_FILES 20000

/* each path segment escaped, the '/' between them kept */
static void path_escape(buf *b, const char *path)
{
    char *dup = xstrdup(path);
    char *save = NULL;
    bool first = true;
    for (char *seg = strtok_r(dup, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
        if (!first) buf_addc(b, '/');
        url_query_escape(b, seg);
        first = false;
    }
    free(dup);
}

/* {endpoint}/{pre}{repo}/{verb}/{rev}{tail}, each part escaped */
static char *hub_url(const mhub *h, const char *pre, const char *repo, const char *verb,
                     const char *rev)
{
    buf b = BUF_INIT;
    buf_printf(&b, "%s/%s", h->endpoint, pre);
    path_escape(&b, repo);
    buf_printf(&b, "/%s/", verb);
    url_query_escape(&b, rev);
    return buf_detach(&b);
}

char *mhub_resolve_url(const mhub *h, const char *repo, const char *rev, const char *path)
{
    buf b = BUF_INIT;
    char *base = hub_url(h, "", repo, "resolve", rev);
    buf_printf(&b, "%s/", base);
    free(base);
    path_escape(&b, path);
    return buf_detach(&b);
}

mhttp_opts mhub_opts(const mhub *h, uint64_t max_bytes)
{
    return (mhttp_opts){.token = h->token,
                        .token_origin = h->endpoint,
                        .timeout_ms = h->timeout_ms,
                        .max_bytes = max_bytes,
                        .interrupted = h->interrupted};
}

/* A size from JSON: an integer in [0, 2^53] (a double holds those
 * exactly); anything else (1e30, -1, 1.5) is a lie. */
static bool json_size(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d) return false;
    *out = (uint64_t)d;
    return true;
}

/* A repository path gpumod may use as a file name under a directory: no
 * absolute path, no empty, '.' or '..' segment, no backslash, no control
 * byte; NULL when fine, else why. */
const char *mhub_path_problem(const char *p)
{
    size_t n = strlen(p);
    if (!n || n > 1024) return "an empty or over-long path";
    if (p[0] == '/') return "an absolute path";
    for (const char *c = p; *c; c++) {
        if ((unsigned char)*c < 0x20 || *c == 0x7f) return "a control character in the path";
        if (*c == '\\') return "a backslash in the path";
    }
    if (!utf8_safe(p))
        return "bytes that are not UTF-8, or an invisible or reordering character, in the path";
    for (const char *seg = p; seg;) {
        const char *end = strchr(seg, '/');
        size_t len = end ? (size_t)(end - seg) : strlen(seg);
        if (!len || (len == 1 && seg[0] == '.') || (len == 2 && !strncmp(seg, "..", 2)))
            return "a path that leaves the repository (an empty, '.' or '..' part)";
        seg = end ? end + 1 : NULL;
    }
    return NULL;
}

/* the path as a message may show it: control bytes as \xNN */
static void path_shown(buf *b, const char *p)
{
    for (int i = 0; p[i] && i < 200; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x20 || c == 0x7f || c == '\\')
            buf_printf(b, "\\x%02x", c);
        else
            buf_addc(b, (char)c);
    }
}

static int page_files(const cJSON *arr, mfile **files, size_t *n, const char *where, char *err,
                      size_t errlen)
{
    if (!cJSON_IsArray(arr))
        return errf_ret(-1, err, errlen, "%s: expected a JSON array of entries", where);
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(e, "type");
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(e, "path");
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(e, "size");
        if (!cJSON_IsString(type) || !cJSON_IsString(path))
            return errf_ret(-1, err, errlen, "%s: an entry without \"type\" and \"path\" strings",
                            where);
        if (strcmp(type->valuestring, "file")) continue;
        size_t pl = strlen(path->valuestring);
        bool gguf = pl > 5 && !strcasecmp(path->valuestring + pl - 5, ".gguf");
        const char *bad = mhub_path_problem(path->valuestring);
        if (!gguf) continue; /* never used: only .gguf files are kept */
        if (*n >= LIST_MAX_FILES)
            return errf_ret(-1, err, errlen, "%s: more than %d .gguf files", where, LIST_MAX_FILES);
        if (bad) {
            buf shown = BUF_INIT;
            path_shown(&shown, path->valuestring);
            errf_ret(-1, err, errlen, "%s: the file '%s' is refused: %s", where, shown.p, bad);
            buf_release(&shown);
            return -1;
        }
        uint64_t sz;
        if (!json_size(size, &sz))
            return errf_ret(-1, err, errlen,
                            "%s: '%s' has no \"size\" that is a whole number of bytes up to 2^53",
                            where, path->valuestring);
        mfile f = {.path = xstrdup(path->valuestring), .size = sz};
        const cJSON *lfs = cJSON_GetObjectItemCaseSensitive(e, "lfs");
        const cJSON *oid = lfs ? cJSON_GetObjectItemCaseSensitive(lfs, "oid") : NULL;
        const cJSON *lsize = lfs ? cJSON_GetObjectItemCaseSensitive(lfs, "size") : NULL;
        if (cJSON_IsString(oid) && strlen(oid->valuestring) == 64 &&
            strspn(oid->valuestring, "0123456789abcdefABCDEF") == 64) {
            for (int i = 0; i < 64; i++) {
                char c = oid->valuestring[i];
                f.sha256[i] = (char)(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
            }
            f.sha256[64] = 0;
        }
        if (lsize && !json_size(lsize, &f.size)) {
            free(f.path);
            return errf_ret(
                -1, err, errlen,
                "%s: '%s' has an \"lfs.size\" that is not a whole number of bytes up to "
                "2^53",
                where, path->valuestring);
        }
        *files = xrealloc(*files, (*n + 1) * sizeof **files);
        (*files)[(*n)++] = f;
    }
    return 0;
}

static void files_free(mfile *files, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(files[i].path);
        free(files[i].url);
    }
    free(files);
}

int mhub_list_files(const mhub *h, const char *repo, const char *rev, mfile **files, size_t *n,
                    char *err, size_t errlen)
{
    *files = NULL;
    *n = 0;
    char *base = hub_url(h, "api/models/", repo, "tree", rev);
    char *next = xasprintf("%s?recursive=true", base);
    free(base);
    char hub_origin[512], next_origin[512];
    if (mhttp_origin(h->endpoint, hub_origin, sizeof hub_origin) < 0) hub_origin[0] = 0;
    mhttp_opts o = mhub_opts(h, LIST_MAX_BYTES);
    int rc = 0, pages = 0;
    while (next && rc == 0) {
        if (++pages > LIST_MAX_PAGES) {
            rc = errf_ret(-1, err, errlen, "hf:%s: the listing has more than %d pages", repo,
                          LIST_MAX_PAGES);
            break;
        }
        mhttp_reply r;
        if (mhttp_get(next, &o, &r) < 0) {
            rc = errf_ret(-1, err, errlen, "listing hf:%s@%s: %s", repo, rev, r.err);
        } else if (r.status != 200) {
            const char *why = r.status == 404 && !strcmp(r.error_code, "RevisionNotFound")
                                  ? "no such revision"
                              : r.status == 404 ? "no such repository (or it is private)"
                                                : mhttp_status_text(r.status, r.error_code);
            rc = errf_ret(-1, err, errlen, "listing hf:%s@%s: HTTP %d: %s", repo, rev, r.status,
                          why);
        } else {
            cJSON *j = cJSON_ParseWithLength(r.body.p ? r.body.p : "", r.body.len);
            char where[300];
            snprintf(where, sizeof where, "listing hf:%s@%s", repo, rev);
            rc = j ? page_files(j, files, n, where, err, errlen)
                   : errf_ret(-1, err, errlen, "%s: the reply is not JSON", where);
            cJSON_Delete(j);
        }
        free(next);
        next = rc == 0 && r.link_next[0] ? xstrdup(r.link_next) : NULL;
        if (rc == 0 && r.link_overlong)
            rc = errf_ret(-1, err, errlen, "listing hf:%s@%s: a next-page link over 2 KiB", repo,
                          rev);
        if (next && (mhttp_origin(next, next_origin, sizeof next_origin) < 0 ||
                     strcmp(next_origin, hub_origin))) {
            char shown[300];
            snprintf(shown, sizeof shown, "%.*s", (int)strcspn(next, "?#"), next);
            rc = errf_ret(-1, err, errlen,
                          "listing hf:%s@%s: the next page is on another server (%.200s): refused",
                          repo, rev, shown);
            free(next);
            next = NULL;
        }
        mhttp_release(&r);
    }
    free(next);
    if (rc < 0) {
        files_free(*files, *n);
        *files = NULL;
        *n = 0;
    }
    return rc;
}
