/* mconfig.c (models) - `gpumod model config hf:ORG/REPO[@REV] [--endpoint
 * URL] [--json]`: the summary of a repository's config.json (the
 * Python project's fetch_model_config): architectures, parameters,
 * mixture of experts, context length, sizes, dtype.
 *
 * GET {endpoint}/{repo}/resolve/{rev}/config.json (file_download.py,
 * hf_hub_url), bounded to 1 MiB.  A GGUF repository often has none: 404
 * says "no config.json". */
#include "models/models.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "models/http.h"
#include "models/source.h"
#include "util/buf.h"
#include "util/utf8.h"
#include "util/errf.h"
#include "util/exitcode.h"
#include "util/opt.h"

#define CONFIG_MAX_BYTES (1u << 20)

/* ORG/REPO, each [A-Za-z0-9][A-Za-z0-9._-]*, no ".." */
static bool repo_ok(const char *r, size_t n)
{
    int parts = 0;
    size_t i = 0;
    while (i < n) {
        if (!isalnum((unsigned char)r[i])) return false;
        while (i < n && r[i] != '/') {
            if (!isalnum((unsigned char)r[i]) && !strchr("._-", r[i])) return false;
            if (r[i] == '.' && i + 1 < n && r[i + 1] == '.') return false;
            i++;
        }
        parts++;
        if (i < n) i++;
        if (i == n && r[n - 1] == '/') return false;
    }
    return parts == 2;
}

/* hf:ORG/REPO[@REV]: 0 with repo and rev (malloc), else -1 with err */
static int parse_spec(const char *spec, char **repo, char **rev, char *err, size_t errlen)
{
    if (strncmp(spec, "hf:", 3))
        return errf_ret(-1, err, errlen, "'%s': expected hf:ORG/REPO[@REVISION]", spec);
    const char *p = spec + 3;
    size_t n = strcspn(p, "@");
    if (!repo_ok(p, n))
        return errf_ret(-1, err, errlen,
                        "'%s': expected hf:ORG/REPO[@REVISION] (letters, digits, '.', '_', '-'; "
                        "no '..')",
                        spec);
    const char *r = p[n] == '@' ? p + n + 1 : "main";
    for (const char *c = r; *c; c++)
        if ((!isalnum((unsigned char)*c) && !strchr("._-/", *c)) || !strncmp(c, "..", 2))
            return errf_ret(-1, err, errlen, "'%s': '%c' is not allowed in a revision", spec, *c);
    if (!*r) return errf_ret(-1, err, errlen, "'%s': the revision after '@' is empty", spec);
    *repo = xstrndup(p, n);
    *rev = xstrdup(r);
    return 0;
}

static const cJSON *first_of(const cJSON *c, const char *const *keys)
{
    for (; *keys; keys++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, *keys);
        if (v && !cJSON_IsNull(v)) return v;
    }
    return NULL;
}

/* keys[i] of c (or, when absent, of c's text_config: multimodal models
 * keep the language model's figures there) as a number, else null */
static cJSON *num_of(const cJSON *c, const char *const *keys)
{
    const cJSON *v = first_of(c, keys);
    if (!v) v = first_of(cJSON_GetObjectItemCaseSensitive(c, "text_config"), keys);
    return cJSON_IsNumber(v) ? cJSON_CreateNumber(v->valuedouble) : cJSON_CreateNull();
}

static cJSON *summary(const char *repo, const char *rev, const cJSON *c)
{
    static const char *const params[] = {"num_parameters", NULL};
    static const char *const experts[] = {"num_experts", "num_local_experts", "n_routed_experts",
                                          NULL};
    static const char *const ctx[] = {"max_position_embeddings", "max_sequence_length",
                                      "n_positions", "seq_length", NULL};
    static const char *const
        vocab[] = {"vocab_size", NULL},
        *const hidden[] = {"hidden_size", NULL}, *const layers[] = {"num_hidden_layers", NULL},
        *const heads[] = {"num_attention_heads", NULL}, *const kv[] = {"num_key_value_heads", NULL};
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "repo_id", repo);
    cJSON_AddStringToObject(o, "revision", rev);
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(c, "architectures");
    cJSON_AddItemToObject(o, "architectures",
                          cJSON_IsArray(arch) ? cJSON_Duplicate(arch, 1) : cJSON_CreateArray());
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(c, "model_type");
    cJSON_AddItemToObject(o, "model_type",
                          cJSON_IsString(mt) ? cJSON_CreateString(mt->valuestring)
                                             : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "total_params", num_of(c, params));
    cJSON *ne = num_of(c, experts);
    cJSON_AddBoolToObject(o, "is_moe", cJSON_IsNumber(ne) && ne->valuedouble > 0);
    cJSON_AddItemToObject(o, "num_experts", ne);
    cJSON_AddItemToObject(o, "context_length", num_of(c, ctx));
    cJSON_AddItemToObject(o, "vocab_size", num_of(c, vocab));
    cJSON_AddItemToObject(o, "hidden_size", num_of(c, hidden));
    cJSON_AddItemToObject(o, "num_hidden_layers", num_of(c, layers));
    cJSON_AddItemToObject(o, "num_attention_heads", num_of(c, heads));
    cJSON_AddItemToObject(o, "num_key_value_heads", num_of(c, kv));
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(c, "torch_dtype");
    if (!cJSON_IsString(dt)) dt = cJSON_GetObjectItemCaseSensitive(c, "dtype");
    cJSON_AddItemToObject(o, "torch_dtype",
                          cJSON_IsString(dt) ? cJSON_CreateString(dt->valuestring)
                                             : cJSON_CreateNull());
    return o;
}

/* config.json of repo@rev parsed (caller deletes), or NULL with err */
static cJSON *fetch(const mhub *h, const char *repo, const char *rev, char *err, size_t errlen)
{
    char *url = mhub_resolve_url(h, repo, rev, "config.json");
    mhttp_opts o = mhub_opts(h, CONFIG_MAX_BYTES);
    mhttp_reply r;
    cJSON *j = NULL;
    if (mhttp_get(url, &o, &r) < 0)
        errf(err, errlen, "hf:%s@%s: %s", repo, rev, r.err);
    else if (r.status == 404 && !strcmp(r.error_code, "RevisionNotFound"))
        errf(err, errlen, "hf:%s@%s: no such revision (GET %s: HTTP 404)", repo, rev, url);
    else if (r.status == 404 && !strcmp(r.error_code, "RepoNotFound"))
        errf(err, errlen, "hf:%s: no such repository (or it is private) (GET %s: HTTP 404)", repo,
             url);
    else if (r.status == 404)
        errf(err, errlen, "hf:%s@%s has no config.json (GET %s: HTTP 404)", repo, rev, url);
    else if (r.status != 200)
        errf(err, errlen, "hf:%s@%s: GET %s: HTTP %d: %s", repo, rev, url, r.status,
             mhttp_status_text(r.status, r.error_code));
    else if (!(j = cJSON_ParseWithLength(r.body.p ? r.body.p : "", r.body.len)) ||
             !cJSON_IsObject(j)) {
        errf(err, errlen, "hf:%s@%s: config.json is not a JSON object (GET %s)", repo, rev, url);
        cJSON_Delete(j);
        j = NULL;
    }
    mhttp_release(&r);
    free(url);
    return j;
}

/* a string of the Hub's config.json, on a terminal: cleaned */
static void put_clean(const char *s)
{
    char *c = utf8_clean(s);
    fputs(c, stdout);
    free(c);
}

static void print_text(const cJSON *s)
{
    for (const cJSON *m = s->child; m; m = m->next) {
        printf("%-20s ", m->string);
        if (cJSON_IsString(m))
            put_clean(m->valuestring), putchar('\n');
        else if (cJSON_IsNumber(m))
            printf("%.0f\n", m->valuedouble);
        else if (cJSON_IsBool(m))
            printf("%s\n", cJSON_IsTrue(m) ? "yes" : "no");
        else if (cJSON_IsArray(m)) {
            const cJSON *e;
            int i = 0;
            cJSON_ArrayForEach(e, m)
            {
                fputs(i++ ? ", " : "", stdout);
                put_clean(cJSON_IsString(e) ? e->valuestring : "?");
            }
            printf("%s\n", i ? "" : "-");
        } else
            printf("-\n");
    }
}

int model_config_cmd(mctx *c, int argc, char **argv)
{
    const char *spec = NULL, *endpoint = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r = opt_value(argc, argv, &i, "--endpoint", &v);
        if (r < 0) {
            fprintf(stderr, "gpumod: model config: --endpoint needs a value\n");
            return EXIT_USAGE;
        }
        if (r > 0)
            endpoint = v;
        else if (argv[i][0] == '-' || spec) {
            fprintf(stderr,
                    "gpumod: model config: unexpected '%s'\nusage: gpumod model config "
                    "hf:ORG/REPO[@REV] [--endpoint URL] [--json]\n",
                    argv[i]);
            return EXIT_USAGE;
        } else
            spec = argv[i];
    }
    char err[1024], *repo = NULL, *rev = NULL;
    if (!spec) {
        fprintf(stderr, "gpumod: model config: give hf:ORG/REPO[@REV]\n");
        return EXIT_USAGE;
    }
    if (parse_spec(spec, &repo, &rev, err, sizeof err) < 0) {
        fprintf(stderr, "gpumod: model config: %s\n", err);
        return EXIT_USAGE;
    }
    mhub h;
    if (mhub_init(&h, &c->cfg.set, endpoint, err, sizeof err) < 0) {
        fprintf(stderr, "gpumod: model config: %s\n", err);
        free(repo);
        free(rev);
        return EXIT_USAGE;
    }
    h.interrupted = c->interrupted;
    cJSON *j = fetch(&h, repo, rev, err, sizeof err);
    int rc = EXIT_OK;
    if (!j) {
        fprintf(stderr, "gpumod: model config: %s\n", err);
        rc = EXIT_REFUSED;
    } else {
        cJSON *s = summary(repo, rev, j);
        char *txt = c->json ? cJSON_Print(s) : NULL;
        if (txt)
            printf("%s\n", txt);
        else
            print_text(s);
        free(txt);
        cJSON_Delete(s);
        cJSON_Delete(j);
    }
    mhub_release(&h);
    free(repo);
    free(rev);
    return rc;
}
