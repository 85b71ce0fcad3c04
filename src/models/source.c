/* source.c (models) - SOURCE to a list of models (groups of files).
 *
 * Split models follow llama.cpp's naming ("<prefix>-%05d-of-%05d.gguf",
 * 1-based): the parts of one prefix and count form one group, in order;
 * a missing part is an error naming it, so fit never estimates two
 * thirds of a model.  Projectors (mmproj*) and importance matrices
 * (imatrix*) are GGUF files but not models: listed as skipped, with why. */
#include "models/source.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "models/http.h"
#include "util/buf.h"
#include "util/errf.h"

static bool ends_with_gguf(const char *s)
{
    size_t n = strlen(s);
    return n > 5 && !strcasecmp(s + n - 5, ".gguf");
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

void mquant_from_name(const char *name, char *out, size_t len)
{
    static const char *const pre[] = {"IQ1_", "IQ2_", "IQ3_", "IQ4_",  "Q2_K",  "Q3_K",
                                      "Q4_K", "Q5_K", "Q6_K", "Q8_K",  "Q4_0",  "Q4_1",
                                      "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4",
                                      "BF16", "F16",  "F32",  "FP16",  "FP32",  NULL};
    out[0] = 0;
    const char *b = base_name(name);
    size_t n = strlen(b);
    /* the last token (between '-', '.' or '_'-led quant words) that starts a known quant */
    for (size_t i = 0; i < n; i++) {
        if (i && b[i - 1] != '-' && b[i - 1] != '.' && b[i - 1] != '_') continue;
        for (const char *const *p = pre; *p; p++) {
            size_t k = strlen(*p);
            if (strncasecmp(b + i, *p, k)) continue;
            size_t e = i + k;
            while (e < n && (isalnum((unsigned char)b[e]) || b[e] == '_'))
                e++;
            if (e - i < len) snprintf(out, len, "%.*s", (int)(e - i), b + i);
        }
    }
}

/* "<prefix>-00002-of-00003.gguf": 1 with the prefix length, part and count */
static int split_name(const char *name, size_t *plen, unsigned *part, unsigned *count)
{
    size_t n = strlen(name);
    static const size_t tail = sizeof "-00001-of-00003.gguf" - 1;
    if (n <= tail) return 0;
    const char *t = name + n - tail;
    unsigned a, b;
    char end[8];
    if (sscanf(t, "-%5u-of-%5u%7s", &a, &b, end) != 3 || strcasecmp(end, ".gguf")) return 0;
    for (int i = 1; i <= 5; i++)
        if (!isdigit((unsigned char)t[i]) || !isdigit((unsigned char)t[i + 9])) return 0;
    if (a < 1 || b < 2 || a > b) return 0;
    *plen = n - tail;
    *part = a;
    *count = b;
    return 1;
}

static const char *not_a_model(const char *name)
{
    const char *b = base_name(name);
    if (!strncasecmp(b, "mmproj", 6) || strstr(b, "mmproj"))
        return "a multimodal projector, not a model";
    if (!strncasecmp(b, "imatrix", 7) || strstr(b, ".imatrix"))
        return "an importance matrix, not a model";
    return NULL;
}

static void file_release(mfile *f)
{
    free(f->path);
    free(f->url);
}

static void group_add(msource *s, mfile *parts, size_t n)
{
    s->groups = xrealloc(s->groups, (s->ngroups + 1) * sizeof *s->groups);
    mgroup *g = &s->groups[s->ngroups++];
    memset(g, 0, sizeof *g);
    g->parts = parts;
    g->nparts = n;
    g->first = xstrdup(parts[0].url ? parts[0].url : parts[0].path);
    if (n == 1)
        g->label = xstrdup(base_name(parts[0].path));
    else
        g->label = xasprintf("%s (%zu parts)", base_name(parts[0].path), n);
    g->bytes = 0;
    for (size_t i = 0; i < n; i++) /* unknown, or past 2^64: unknown */
        if (g->bytes == UINT64_MAX || parts[i].size == UINT64_MAX ||
            __builtin_add_overflow(g->bytes, parts[i].size, &g->bytes))
            g->bytes = UINT64_MAX;
    mquant_from_name(parts[0].path, g->quant, sizeof g->quant);
}

static int cmp_path(const void *a, const void *b)
{
    return strcmp(((const mfile *)a)->path, ((const mfile *)b)->path);
}

/* the parts of files[i]'s split set: moved into a new group; 0 or -1 */
static int take_split(msource *s, mfile *files, size_t n, bool *used, size_t i, char *err,
                      size_t errlen)
{
    size_t plen;
    unsigned part, count;
    split_name(files[i].path, &plen, &part, &count);
    mfile *parts = xcalloc(count, sizeof *parts);
    for (size_t j = i; j < n; j++) {
        size_t pl;
        unsigned p, c;
        if (used[j] || !split_name(files[j].path, &pl, &p, &c) || pl != plen || c != count ||
            strncmp(files[j].path, files[i].path, plen))
            continue;
        parts[p - 1] = files[j];
        used[j] = true;
    }
    for (unsigned p = 0; p < count; p++) {
        if (parts[p].path) continue;
        errf_ret(-1, err, errlen,
                 "split model '%.*s': part %u of %u (%.*s-%05u-of-%05u.gguf) is missing", (int)plen,
                 files[i].path, p + 1, count, (int)plen, files[i].path, p + 1, count);
        for (unsigned q = 0; q < count; q++)
            file_release(&parts[q]);
        free(parts);
        return -1;
    }
    group_add(s, parts, count);
    return 0;
}

int msource_group(msource *s, mfile *files, size_t n, char *err, size_t errlen)
{
    qsort(files, n, sizeof *files, cmp_path);
    for (size_t i = 1; i < n; i++) {
        if (strcmp(files[i].path, files[i - 1].path)) continue;
        errf_ret(-1, err, errlen, "'%s' is listed twice", files[i].path);
        for (size_t j = 0; j < n; j++)
            file_release(&files[j]);
        free(files);
        return -1;
    }
    bool *used = xcalloc(n ? n : 1, sizeof *used);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (used[i]) continue;
        const char *why = not_a_model(files[i].path);
        size_t plen;
        unsigned part, count;
        if (why) {
            strv_pushf(&s->skipped, "%s: %s", files[i].path, why);
            used[i] = true;
            file_release(&files[i]);
        } else if (split_name(files[i].path, &plen, &part, &count)) {
            if (rc == 0 && take_split(s, files, n, used, i, err, errlen) < 0) rc = -1;
        } else {
            mfile *one = xmalloc(sizeof *one);
            *one = files[i];
            used[i] = true;
            group_add(s, one, 1);
        }
    }
    for (size_t i = 0; i < n; i++)
        if (!used[i]) file_release(&files[i]);
    free(used);
    free(files);
    return rc;
}

static int resolve_dir(msource *s, const char *dir, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d)
        return errf_ret(-1, err, errlen, "'%s': cannot read the directory: %s", dir,
                        strerror(errno));
    mfile *files = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !ends_with_gguf(e->d_name)) continue;
        char *p = xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) < 0 || !S_ISREG(st.st_mode)) {
            free(p);
            continue;
        }
        files = xrealloc(files, (n + 1) * sizeof *files);
        files[n++] = (mfile){.path = p, .size = (uint64_t)st.st_size};
    }
    closedir(d);
    if (!n) {
        free(files);
        return errf_ret(-1, err, errlen, "'%s': no .gguf file in this directory", dir);
    }
    return msource_group(s, files, n, err, errlen);
}

static int resolve_file(msource *s, const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return errf_ret(-1, err, errlen,
                        "'%s': %s (expected a .gguf file, a directory, an https:// "
                        "URL or hf:ORG/REPO)",
                        path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        s->kind = MSRC_DIR;
        return resolve_dir(s, path, err, errlen);
    }
    mfile *one = xcalloc(1, sizeof *one);
    one->path = xstrdup(path);
    one->size = (uint64_t)st.st_size;
    group_add(s, one, 1); /* a split model's first part: gguf_open finds the others */
    return 0;
}

static int resolve_url(msource *s, const char *url, char *err, size_t errlen)
{
    if (mhttp_url_ok(url, err, errlen) < 0) return -1;
    size_t q = strcspn(url, "?#");
    char *path = xstrndup(url, q);
    if (!ends_with_gguf(path)) {
        errf_ret(-1, err, errlen, "'%s': the URL does not name a .gguf file", path);
        free(path);
        return -1;
    }
    mfile *one = xcalloc(1, sizeof *one);
    one->path = xstrdup(base_name(path));
    one->url = xstrdup(url);
    one->size = UINT64_MAX;
    free(path);
    group_add(s, one, 1);
    return 0;
}

/* hf:ORG/REPO[@REV][/PATH] */
static int parse_hf(const char *spec, char **repo, char **rev, char **path, char *err,
                    size_t errlen)
{
    const char *p = spec;
    const char *slash1 = strchr(p, '/');
    if (!slash1 || slash1 == p)
        return errf_ret(-1, err, errlen, "'hf:%s': expected hf:ORG/REPO[@REVISION][/FILE.gguf]",
                        spec);
    const char *end = slash1 + 1 + strcspn(slash1 + 1, "/@");
    if (end == slash1 + 1)
        return errf_ret(-1, err, errlen, "'hf:%s': the repository name is empty", spec);
    for (const char *c = p; c < end; c++)
        if ((!isalnum((unsigned char)*c) && !strchr("-_./", *c)) || (*c == '.' && c[1] == '.'))
            return errf_ret(-1, err, errlen, "'hf:%s': '%c' is not allowed in a repository id",
                            spec, *c);
    *repo = xstrndup(p, (size_t)(end - p));
    *rev = NULL;
    *path = NULL;
    if (*end == '@') {
        const char *r = end + 1;
        size_t rl = strcspn(r, "/");
        *rev = xstrndup(r, rl);
        end = r + rl;
    }
    if (!*rev || !**rev) {
        free(*rev);
        *rev = xstrdup("main");
    }
    if (*end == '/' && end[1]) *path = xstrdup(end + 1);
    if (*path && (strstr(*path, "..") || (*path)[0] == '/'))
        return errf_ret(-1, err, errlen, "'hf:%s': the file path must stay inside the repository",
                        spec);
    return 0;
}

static int resolve_hf(const mhub *h, msource *s, const char *spec, char *err, size_t errlen)
{
    char *path = NULL;
    if (parse_hf(spec, &s->repo, &s->revision, &path, err, errlen) < 0) {
        free(path);
        return -1;
    }
    if (!h) return errf_ret(-1, err, errlen, "hf: sources need the Hub's address");
    mfile *files = NULL;
    size_t n = 0;
    if (mhub_list_files(h, s->repo, s->revision, &files, &n, err, errlen) < 0) {
        free(path);
        return -1;
    }
    size_t k = 0;
    size_t plen = 0, fl;
    unsigned part, count, fp, fc;
    bool split = path && split_name(path, &plen, &part, &count);
    for (size_t i = 0; i < n; i++) {
        /* the file asked for, or any part of its split set (same prefix and count) */
        bool keep = ends_with_gguf(files[i].path) &&
                    (!path || !strcmp(files[i].path, path) ||
                     (split && split_name(files[i].path, &fl, &fp, &fc) && fl == plen &&
                      fc == count && !strncmp(files[i].path, path, plen)));
        if (!keep) {
            file_release(&files[i]);
            continue;
        }
        if (!files[i].url) files[i].url = mhub_resolve_url(h, s->repo, s->revision, files[i].path);
        files[k++] = files[i];
    }
    if (!k) {
        errf_ret(-1, err, errlen,
                 path ? "hf:%s@%s has no file '%s'" : "hf:%s@%s has no .gguf file%s", s->repo,
                 s->revision, path ? path : "");
        free(files);
        free(path);
        return -1;
    }
    free(path);
    return msource_group(s, files, k, err, errlen);
}

static int resolve(const mhub *h, const char *source, msource *out, char *err, size_t errlen)
{
    if (!source || !*source) return errf_ret(-1, err, errlen, "the SOURCE is empty");
    if (!strncmp(source, "hf:", 3)) {
        out->kind = MSRC_HF;
        return resolve_hf(h, out, source + 3, err, errlen);
    }
    if (!strncasecmp(source, "https://", 8) || !strncasecmp(source, "http://", 7)) {
        out->kind = MSRC_URL;
        return resolve_url(out, source, err, errlen);
    }
    if (strstr(source, "://"))
        return errf_ret(-1, err, errlen,
                        "'%s': only https:// (http:// on loopback), hf: and local "
                        "paths are sources",
                        source);
    out->kind = MSRC_FILE;
    return resolve_file(out, source, err, errlen);
}

int msource_resolve(const mhub *h, const char *source, msource *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (resolve(h, source, out, err, errlen) == 0) return 0;
    msource_release(out); /* what a failed listing kept */
    return -1;
}

void msource_release(msource *s)
{
    for (size_t i = 0; i < s->ngroups; i++) {
        for (size_t j = 0; j < s->groups[i].nparts; j++)
            file_release(&s->groups[i].parts[j]);
        free(s->groups[i].parts);
        free(s->groups[i].label);
        free(s->groups[i].first);
    }
    free(s->groups);
    free(s->repo);
    free(s->revision);
    strv_release(&s->skipped);
    memset(s, 0, sizeof *s);
}

/* ---- the Hub's address and token ---- */

static char *first_line(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f) return NULL;
    char line[4096];
    char *r = fgets(line, sizeof line, f) ? line : NULL;
    fclose(f);
    if (!r) return NULL;
    size_t n = strlen(line);
    while (n && isspace((unsigned char)line[n - 1]))
        line[--n] = 0;
    char *s = line;
    while (isspace((unsigned char)*s))
        s++;
    return *s ? xstrdup(s) : NULL;
}

char *mhub_token(void)
{
    const char *t = getenv("HF_TOKEN");
    if (t && *t) return xstrdup(t);
    const char *p = getenv("HF_TOKEN_PATH");
    if (p && *p) return first_line(p);
    const char *hh = getenv("HF_HOME");
    char *path;
    if (hh && *hh) {
        path = xasprintf("%s/token", hh);
    } else {
        const char *xc = getenv("XDG_CACHE_HOME");
        const char *home = getenv("HOME");
        path = xc && *xc ? xasprintf("%s/huggingface/token", xc)
                         : xasprintf("%s/.cache/huggingface/token", home ? home : "/");
    }
    char *tok = first_line(path);
    free(path);
    return tok;
}

int mhub_init(mhub *h, const settings *s, const char *endpoint_flag, char *err, size_t errlen)
{
    memset(h, 0, sizeof *h);
    const char *env = getenv("HF_ENDPOINT");
    const char *e = endpoint_flag         ? endpoint_flag
                    : env && *env         ? env
                    : s && s->hf_endpoint ? s->hf_endpoint
                                          : "https://huggingface.co";
    const char *from = endpoint_flag ? "--endpoint" : env && *env ? "HF_ENDPOINT" : "hf_endpoint";
    char why[512];
    if (mhttp_url_ok(e, why, sizeof why) < 0) return errf_ret(-1, err, errlen, "%s: %s", from, why);
    if (strchr(e, '?') || strchr(e, '#'))
        return errf_ret(-1, err, errlen, "%s '%s': a base URL has no query or fragment", from, e);
    h->endpoint = xstrdup(e);
    size_t n = strlen(h->endpoint);
    while (n > 8 && h->endpoint[n - 1] == '/')
        h->endpoint[--n] = 0;
    h->token = mhub_token();
    h->timeout_ms = 30000;
    return 0;
}

void mhub_release(mhub *h)
{
    if (h->token) memset(h->token, 0, strlen(h->token));
    free(h->token);
    free(h->endpoint);
    memset(h, 0, sizeof *h);
}
