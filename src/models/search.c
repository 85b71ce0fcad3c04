/* search.c (models) - `gpumod model search QUERY [--author A] [--task T]
 * [--limit N] [--endpoint URL] [--json]`: GGUF repositories on the Hub.
 *
 * GET {endpoint}/api/models?search=Q&author=A&filter=gguf&limit=N
 * [&pipeline_tag=T]&sort=downloads&direction=-1, the parameters
 * huggingface_hub's hf_api.py list_models sends (search, author, filter,
 * pipeline_tag, sort, direction, limit); the reply is a JSON array of
 * {id, author, downloads, likes, tags, pipeline_tag, lastModified, gated,
 * private}.
 *
 * --task, as the Python project's search_hf_models (code, chat, embed,
 * reasoning): the Hub has a pipeline tag for chat and for embeddings but
 * none for code or reasoning, so:
 *   chat       pipeline_tag=text-generation
 *   embed      pipeline_tag=feature-extraction, and sentence-similarity
 *              (two requests, merged by downloads)
 *   code       pipeline_tag=text-generation, then only ids or tags naming
 *              code (code, coder, codestral, starcoder, devstral)
 *   reasoning  pipeline_tag=text-generation, then only ids or tags naming
 *              reasoning (reason, think, -r1, qwq, magistral)
 * code and reasoning ask the Hub for 100 and keep the first N that match. */
#include "models/models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "models/http.h"
#include "models/searchfit.h"
#include "models/source.h"
#include "util/buf.h"
#include "util/utf8.h"
#include "util/errf.h"
#include "util/exitcode.h"
#include "util/opt.h"
#include "util/url.h"

#define SEARCH_MAX_BYTES (8u << 20)

static const char *const code_words[] = {"code",      "coder",    "codestral",
                                         "starcoder", "devstral", NULL};
static const char *const reason_words[] = {"reason", "think", "-r1", "qwq", "magistral", NULL};

typedef struct task {
    const char *name;
    const char *ptag[2];
    const char *const *words; /* kept only when the id or a tag holds one; NULL: all */
} task;

static const task tasks[] = {
    {"chat", {"text-generation", NULL}, NULL},
    {"code", {"text-generation", NULL}, code_words},
    {"embed", {"feature-extraction", "sentence-similarity"}, NULL},
    {"reasoning", {"text-generation", NULL}, reason_words},
};

typedef struct sargs {
    const char *query, *author, *endpoint;
    const task *task;
    long limit;
    bool fit;
    est_params ep; /* --fit's estimator flags */
    unsigned given;
} sargs;

static const char usage[] =
    "usage: gpumod model search QUERY [--author A] [--task code|chat|embed|reasoning] "
    "[--limit N] [--endpoint URL] [--fit [--ctx N --parallel N -ctk T -ctv T --ngl N|all "
    "--n-cpu-moe N -fa on|off|auto]] [--json]\n";

static int missing(const char *opt)
{
    fprintf(stderr, "gpumod: model search: %s needs a value\n%s", opt, usage);
    return -1;
}

static int parse(int argc, char **argv, sargs *a)
{
    memset(a, 0, sizeof *a);
    a->limit = 20;
    est_params_default(&a->ep);
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        char err[256];
        int r = est_flag_parse(argc, argv, &i, &a->ep, &a->given, err, sizeof err);
        if (r < 0) {
            fprintf(stderr, "gpumod: model search: %s\n%s", err, usage);
            return -1;
        }
        if (r > 0) continue;
        if (!strcmp(argv[i], "--fit")) {
            a->fit = true;
        } else if ((r = opt_value(argc, argv, &i, "--author", &v))) {
            if (r < 0) return missing("--author");
            a->author = v;
        } else if ((r = opt_value(argc, argv, &i, "--endpoint", &v))) {
            if (r < 0) return missing("--endpoint");
            a->endpoint = v;
        } else if ((r = opt_value(argc, argv, &i, "--task", &v))) {
            if (r < 0) return missing("--task");
            for (size_t k = 0; k < sizeof tasks / sizeof *tasks; k++)
                if (!strcmp(tasks[k].name, v)) a->task = &tasks[k];
            if (!a->task) {
                fprintf(stderr,
                        "gpumod: model search: --task: expected code, chat, embed or reasoning, "
                        "found '%s'\n",
                        v);
                return -1;
            }
        } else if ((r = opt_value(argc, argv, &i, "--limit", &v))) {
            if (r < 0) return missing("--limit");
            if (opt_long(v, 1, 100, &a->limit)) {
                fprintf(stderr,
                        "gpumod: model search: --limit: expected an integer from 1 to 100, found "
                        "'%s'\n",
                        v);
                return -1;
            }
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "gpumod: model search: unknown option '%s'\n%s", argv[i], usage);
            return -1;
        } else if (a->query) {
            fprintf(stderr, "gpumod: model search: one QUERY only (found '%s' after '%s')\n",
                    argv[i], a->query);
            return -1;
        } else {
            a->query = argv[i];
        }
    }
    if (a->given && !a->fit) {
        fprintf(stderr, "gpumod: model search: the estimator's flags (--ctx ...) go with --fit\n%s",
                usage);
        return -1;
    }
    if ((!a->query || !*a->query) && (!a->author || !*a->author)) {
        fprintf(stderr,
                "gpumod: model search: give a QUERY (or --author A to list an author's "
                "repositories)\n%s",
                usage);
        return -1;
    }
    return 0;
}

/* one request: the reply's array (caller deletes), or NULL with err */
static cJSON *hub_search(const mhub *h, const sargs *a, const char *ptag, long limit, char *err,
                         size_t errlen)
{
    buf u = BUF_INIT;
    buf_printf(&u, "%s/api/models?search=", h->endpoint);
    url_query_escape(&u, a->query ? a->query : "");
    if (a->author && *a->author) {
        buf_adds(&u, "&author=");
        url_query_escape(&u, a->author);
    }
    buf_printf(&u, "&filter=gguf&limit=%ld", limit);
    if (ptag) buf_printf(&u, "&pipeline_tag=%s", ptag);
    buf_adds(&u, "&sort=downloads&direction=-1");
    mhttp_opts o = mhub_opts(h, SEARCH_MAX_BYTES);
    mhttp_reply r;
    cJSON *j = NULL;
    if (mhttp_get(u.p, &o, &r) < 0) {
        errf(err, errlen, "searching the Hub: %s", r.err);
    } else if (r.status != 200) {
        errf(err, errlen, "searching the Hub: GET %s: HTTP %d: %s", u.p, r.status,
             mhttp_status_text(r.status, r.error_code));
    } else if (!(j = cJSON_ParseWithLength(r.body.p ? r.body.p : "", r.body.len))) {
        errf(err, errlen, "searching the Hub: GET %s: the reply is not JSON", u.p);
    } else if (!cJSON_IsArray(j)) {
        errf(err, errlen, "searching the Hub: GET %s: expected a JSON array of models", u.p);
        cJSON_Delete(j);
        j = NULL;
    }
    mhttp_release(&r);
    buf_release(&u);
    return j;
}

static bool holds_word(const char *s, const char *const *words)
{
    for (const char *const *w = words; *w; w++)
        if (strcasestr(s, *w)) return true;
    return false;
}

static bool task_keeps(const task *t, const cJSON *m)
{
    if (!t || !t->words) return true;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
    if (cJSON_IsString(id) && holds_word(id->valuestring, t->words)) return true;
    const cJSON *tag;
    cJSON_ArrayForEach(tag, cJSON_GetObjectItemCaseSensitive(m, "tags"))
    {
        if (cJSON_IsString(tag) && holds_word(tag->valuestring, t->words)) return true;
    }
    return false;
}

static double num(const cJSON *m, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *str(const cJSON *m, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* the model as the output has it, or NULL for an entry without an id */
static cJSON *model_out(const cJSON *m)
{
    const char *id = str(m, "id");
    if (!id) return NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    const char *author = str(m, "author");
    const char *slash = strchr(id, '/');
    char *org = author ? xstrdup(author) : slash ? xstrndup(id, (size_t)(slash - id)) : NULL;
    cJSON_AddItemToObject(o, "author", org ? cJSON_CreateString(org) : cJSON_CreateNull());
    free(org);
    cJSON_AddNumberToObject(o, "downloads", num(m, "downloads"));
    cJSON_AddNumberToObject(o, "likes", num(m, "likes"));
    const cJSON *tags = cJSON_GetObjectItemCaseSensitive(m, "tags");
    cJSON_AddItemToObject(o, "tags",
                          cJSON_IsArray(tags) ? cJSON_Duplicate(tags, 1) : cJSON_CreateArray());
    const char *pt = str(m, "pipeline_tag");
    cJSON_AddItemToObject(o, "pipeline_tag", pt ? cJSON_CreateString(pt) : cJSON_CreateNull());
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(m, "gated");
    cJSON_AddItemToObject(o, "gated",
                          cJSON_IsString(g) ? cJSON_CreateString(g->valuestring)
                                            : cJSON_CreateBool(cJSON_IsTrue(g)));
    const char *lm = str(m, "lastModified");
    cJSON_AddItemToObject(o, "last_modified", lm ? cJSON_CreateString(lm) : cJSON_CreateNull());
    return o;
}

static bool listed(const cJSON *models, const char *id)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, models)
    {
        if (!strcmp(str(m, "id"), id)) return true;
    }
    return false;
}

/* insert keeping downloads descending (a second pipeline tag's results) */
static void add_sorted(cJSON *models, cJSON *o)
{
    int i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, models)
    {
        if (num(m, "downloads") < num(o, "downloads")) break;
        i++;
    }
    cJSON_InsertItemInArray(models, i, o);
}

/* the models array of the output, or NULL with err */
static cJSON *search_models(const mhub *h, const sargs *a, char *err, size_t errlen)
{
    cJSON *models = cJSON_CreateArray();
    const task *t = a->task;
    long ask = t && t->words ? 100 : a->limit;
    for (int k = 0; k < 2; k++) {
        const char *ptag = t ? t->ptag[k] : NULL;
        if (k && !ptag) break;
        cJSON *arr = hub_search(h, a, ptag, ask, err, errlen);
        if (!arr) {
            cJSON_Delete(models);
            return NULL;
        }
        const cJSON *m;
        cJSON_ArrayForEach(m, arr)
        {
            if (!task_keeps(t, m)) continue;
            cJSON *o = model_out(m);
            if (!o) continue;
            if (listed(models, str(o, "id")))
                cJSON_Delete(o);
            else
                add_sorted(models, o);
        }
        cJSON_Delete(arr);
    }
    while (cJSON_GetArraySize(models) > a->limit)
        cJSON_DeleteItemFromArray(models, (int)a->limit);
    return models;
}

static void print_text(const cJSON *models, bool fit)
{
    int w = 2;
    const cJSON *m;
    cJSON_ArrayForEach(m, models)
    {
        int n = (int)strlen(str(m, "id"));
        if (n > w) w = n;
    }
    if (!cJSON_GetArraySize(models)) {
        printf("no GGUF repository matches\n");
        return;
    }
    printf("%-*s  %10s  %6s  %-20s  %-10s  %-5s%s\n", w, "ID", "DOWNLOADS", "LIKES", "TASK",
           "UPDATED", "GATED", fit ? "  BEST FIT (ALONE)" : "");
    cJSON_ArrayForEach(m, models)
    {
        /* the Hub's strings reach a terminal: no escape sequence of theirs does */
        char *id = utf8_clean(str(m, "id")), *pt = utf8_clean(str(m, "pipeline_tag")),
             *lm = utf8_clean(str(m, "last_modified"));
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(m, "gated");
        char *gs = utf8_clean(cJSON_IsString(g) ? g->valuestring : cJSON_IsTrue(g) ? "yes" : "no");
        buf f = BUF_INIT;
        if (fit) {
            buf_adds(&f, "  ");
            msearch_fit_text(&f, cJSON_GetObjectItemCaseSensitive(m, "fit"));
        }
        char *fs = utf8_clean(f.p);
        printf("%-*s  %10.0f  %6.0f  %-20s  %-10.10s  %-5s%s\n", w, id, num(m, "downloads"),
               num(m, "likes"), *pt ? pt : "-", *lm ? lm : "-", gs, fs);
        free(id), free(pt), free(lm), free(gs), free(fs);
        buf_release(&f);
    }
}

static void print_json(const sargs *a, const mhub *h, cJSON *models)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "query", a->query ? a->query : "");
    cJSON_AddItemToObject(o, "author",
                          a->author ? cJSON_CreateString(a->author) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "task",
                          a->task ? cJSON_CreateString(a->task->name) : cJSON_CreateNull());
    cJSON_AddNumberToObject(o, "limit", (double)a->limit);
    cJSON_AddStringToObject(o, "endpoint", h->endpoint);
    int n = cJSON_GetArraySize(models);
    cJSON_AddItemToObject(o, "models", models);
    cJSON_AddNumberToObject(o, "count", n);
    char *s = cJSON_Print(o);
    printf("%s\n", s);
    free(s);
    cJSON_Delete(o);
}

int model_search_cmd(mctx *c, int argc, char **argv)
{
    sargs a;
    if (parse(argc, argv, &a) < 0) return EXIT_USAGE;
    mhub h;
    char err[1024];
    if (mhub_init(&h, &c->cfg.set, a.endpoint, err, sizeof err) < 0) {
        fprintf(stderr, "gpumod: model search: %s\n", err);
        return EXIT_USAGE;
    }
    h.interrupted = c->interrupted;
    cJSON *models = search_models(&h, &a, err, sizeof err);
    if (!models) {
        fprintf(stderr, "gpumod: model search: %s\n", err);
        mhub_release(&h);
        return EXIT_REFUSED;
    }
    if (a.fit && msearch_fit(c, &h, &a.ep, a.given, models, err, sizeof err) < 0) {
        fprintf(stderr, "gpumod: model search: --fit: %s\n", err);
        cJSON_Delete(models);
        mhub_release(&h);
        return EXIT_REFUSED;
    }
    if (c->json)
        print_json(&a, &h, models);
    else {
        print_text(models, a.fit);
        cJSON_Delete(models);
    }
    mhub_release(&h);
    return EXIT_OK;
}
