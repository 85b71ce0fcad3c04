/* suite.c - eval suites from files (see suite.h): which files, their two
 * formats, the YAML header, and ids across files.
 *
 * Design: a JSONL line is parsed strictly (util/jstrict: no duplicate
 * key, nothing after the value) and turned into the same node tree the
 * YAML reader gives, with the line as its position, so item.c reads both
 * formats with one set of tables and one wording.  Every mistake becomes
 * a diag and reading goes on: a suite with ten typos says all ten. */
#include "eval/suite.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/schema.h"
#include "config/yaml.h"
#include "eval/item.h"
#include "util/jstrict.h"
#include "util/slurp.h"

#define JSONL_MAX ((size_t)64 << 20)

/* every item's id, failed ones too: a repeat is found in one reading */
typedef struct idpos {
    char *id;
    srcpos pos;
} idpos;

typedef struct loader {
    eval_suite *s;
    size_t cap;
    idpos *ids;
    size_t n_ids, cap_ids;
    const char *file; /* borrowed from s->files */
    char base[256];   /* the file's base name: generated ids */
    char stem[256];   /* without its extension: the default category */
} loader;

static const char *add_file(eval_suite *s, const char *path)
{
    strv_push(&s->files, path);
    return s->files.v[s->files.n - 1];
}

static void begin_file(loader *L, const char *path)
{
    L->file = add_file(L->s, path);
    const char *slash = strrchr(path, '/');
    snprintf(L->base, sizeof L->base, "%s", slash && slash[1] ? slash + 1 : path);
    snprintf(L->stem, sizeof L->stem, "%s", L->base);
    char *dot = strrchr(L->stem, '.');
    if (dot && dot != L->stem) *dot = '\0';
}

static void add_item(loader *L, const ynode *m, const item_defaults *def)
{
    char genid[300];
    snprintf(genid, sizeof genid, "%s:%d", L->base, m->line);
    eval_item it;
    int rc = item_parse(&it, m, L->file, genid, def, &L->s->diags);
    if (L->n_ids == L->cap_ids) {
        L->cap_ids = L->cap_ids ? L->cap_ids * 2 : 64;
        L->ids = xrealloc(L->ids, L->cap_ids * sizeof *L->ids);
    }
    L->ids[L->n_ids++] = (idpos){xstrdup(it.id), it.pos};
    if (rc) {
        item_release(&it);
        return;
    }
    if (L->s->n_items == L->cap) {
        L->cap = L->cap ? L->cap * 2 : 64;
        L->s->items = xrealloc(L->s->items, L->cap * sizeof *L->s->items);
    }
    L->s->items[L->s->n_items++] = it;
}

/* ---- YAML ---- */

typedef struct raw_suite {
    char *name, *description;
    int scorer;
    int64_t max_tokens;
    char *category, *system;
    const ynode *items;
} raw_suite;

static void keep_items(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    ((raw_suite *)obj)->items = n;
}

#define S(x) offsetof(raw_suite, x)
static const field defaults_tab[] = {
    {.key = "scorer", .type = F_ENUM, .off = S(scorer), .names = eval_scorer_names},
    {.key = "max_tokens", .type = F_INT, .off = S(max_tokens), .min = 1, .max = 1048576},
    {.key = "category", .type = F_STR, .off = S(category)},
    {.key = "system", .type = F_STR, .off = S(system), .flags = FL_TEXT},
    {NULL},
};

static const field suite_tab[] = {
    {.key = "name", .type = F_STR, .off = S(name)},
    {.key = "description", .type = F_STR, .off = S(description), .flags = FL_TEXT},
    {.key = "defaults", .type = F_SECTION, .sub = defaults_tab},
    {.key = "items", .type = F_CUSTOM, .parse = keep_items},
    {NULL},
};
#undef S

static void load_yaml_doc(loader *L, const ynode *root)
{
    schema_ctx c = {L->file, &L->s->diags, "", false};
    raw_suite r = {.scorer = -1, .max_tokens = -1};
    const ynode *items = root;
    if (!root) {
        diags_add(&L->s->diags, DIAG_ERROR, (srcpos){L->file, 0, 0}, "empty suite file");
        return;
    }
    if (root->kind == Y_MAP) {
        schema_parse(&c, suite_tab, root, &r);
        items = r.items;
        if (!items) schema_error(&c, root, "required key 'items' is missing (the list of items)");
    } else if (root->kind != Y_SEQ) {
        schema_error(&c, root, "a suite is a mapping (name, description, defaults, items) or a list of items, found %s",
                     ykind_name(root));
    }
    if (items && items->kind != Y_SEQ) {
        schema_error(&c, items, "items: expected a list of items, found %s", ykind_name(items));
        items = NULL;
    }
    if (items && !items->n) schema_error(&c, items, "items: the list is empty");
    if (r.name && !L->s->name) L->s->name = xstrdup(r.name);
    if (r.description && !L->s->description) L->s->description = xstrdup(r.description);
    item_defaults def = {r.scorer, r.max_tokens, r.category ? r.category : r.name ? r.name : L->stem, r.system};
    for (size_t i = 0; items && i < items->n; i++) add_item(L, items->items[i], &def);
    schema_release(suite_tab, &r);
}

static void load_yaml(loader *L, const char *text, size_t len)
{
    ydoc doc = {0};
    if (!yaml_load_string(&doc, text, len, L->file, &L->s->diags)) load_yaml_doc(L, doc.root);
    yaml_release(&doc);
}

/* ---- JSONL ---- */

/* the nodes of one line, freed together */
typedef struct jarena {
    void **v;
    size_t n, cap;
} jarena;

static void *jalloc(jarena *a, size_t sz)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 32;
        a->v = xrealloc(a->v, a->cap * sizeof *a->v);
    }
    return a->v[a->n++] = xcalloc(1, sz);
}

static void jarena_free(jarena *a)
{
    for (size_t i = 0; i < a->n; i++) free(a->v[i]);
    free(a->v);
    memset(a, 0, sizeof *a);
}

static ynode *jscalar(jarena *a, const char *s, bool plain, int line)
{
    ynode *n = jalloc(a, sizeof *n);
    n->kind = Y_SCALAR;
    n->line = line;
    n->len = strlen(s);
    n->s = jalloc(a, n->len + 1);
    memcpy(n->s, s, n->len);
    n->plain = plain;
    return n;
}

/* shortest text that reads back as the same double: 0.1, not 0.1000...01 */
static void number_text(char *out, size_t n, double v)
{
    snprintf(out, n, "%.15g", v);
    if (strtod(out, NULL) != v) snprintf(out, n, "%.17g", v);
}

/* JSON as the YAML reader's nodes: strings are quoted scalars (never
 * resolved as YAML), numbers, booleans and null plain ones. */
static ynode *json_ynode(jarena *a, const cJSON *j, int line)
{
    char num[40];
    if (cJSON_IsString(j)) return jscalar(a, j->valuestring, false, line);
    if (cJSON_IsNumber(j)) {
        number_text(num, sizeof num, j->valuedouble);
        return jscalar(a, num, true, line);
    }
    if (cJSON_IsBool(j)) return jscalar(a, cJSON_IsTrue(j) ? "true" : "false", true, line);
    if (cJSON_IsNull(j)) return jscalar(a, "null", true, line);
    ynode *n = jalloc(a, sizeof *n);
    n->line = line;
    size_t cnt = (size_t)cJSON_GetArraySize(j), i = 0;
    const cJSON *c;
    if (cJSON_IsArray(j)) {
        n->kind = Y_SEQ;
        n->items = jalloc(a, (cnt ? cnt : 1) * sizeof *n->items);
        cJSON_ArrayForEach(c, j) n->items[n->n++] = json_ynode(a, c, line);
        return n;
    }
    n->kind = Y_MAP;
    n->pairs = jalloc(a, (cnt ? cnt : 1) * sizeof *n->pairs);
    cJSON_ArrayForEach(c, j) n->pairs[i++] = (ypair){jscalar(a, c->string, false, line), json_ynode(a, c, line)};
    n->npairs = i;
    return n;
}

static void load_jsonl_line(loader *L, const char *p, size_t len, int line, const item_defaults *def)
{
    char err[200];
    cJSON *j = jstrict_parse(p, len, err, sizeof err);
    if (!j) {
        diags_add(&L->s->diags, DIAG_ERROR, (srcpos){L->file, line, 0}, "not a JSON line: %s", err);
        return;
    }
    if (!cJSON_IsObject(j)) {
        diags_add(&L->s->diags, DIAG_ERROR, (srcpos){L->file, line, 0},
                  "a line is one item, a JSON object; found %s", cJSON_IsArray(j) ? "an array" : "a scalar");
    } else {
        jarena a = {0};
        add_item(L, json_ynode(&a, j, line), def);
        jarena_free(&a);
    }
    cJSON_Delete(j);
}

static void load_jsonl(loader *L, const char *text, size_t len)
{
    item_defaults def = {-1, -1, L->stem, NULL};
    size_t before = L->s->n_items, errors = L->s->diags.errors;
    const char *p = text, *e = text + len;
    if (len >= 3 && !memcmp(p, "\xef\xbb\xbf", 3)) p += 3; /* a BOM */
    for (int line = 1; p < e; line++) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        const char *end = nl ? nl : e;
        size_t n = (size_t)(end - p);
        if (n && p[n - 1] == '\r') n--;
        bool blank = true;
        for (size_t i = 0; i < n && blank; i++) blank = isspace((unsigned char)p[i]);
        if (!blank) load_jsonl_line(L, p, n, line, &def);
        p = end + (nl != NULL);
    }
    if (L->s->n_items == before && L->s->diags.errors == errors)
        diags_add(&L->s->diags, DIAG_ERROR, (srcpos){L->file, 0, 0}, "empty suite file: no item lines");
}

/* ---- files and directories ---- */

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a > b && !strcmp(s + a - b, suffix);
}

static bool is_jsonl(const char *name)
{
    return ends_with(name, ".jsonl");
}

static bool suite_name_ok(const char *name)
{
    return name[0] != '.' && (is_jsonl(name) || ends_with(name, ".yaml") || ends_with(name, ".yml"));
}

static void load_file(loader *L, const char *path)
{
    char err[300];
    buf text = BUF_INIT;
    begin_file(L, path);
    if (slurp_text(path, JSONL_MAX, &text, err, sizeof err)) {
        const char *why = strstr(err, "': ");
        diags_add(&L->s->diags, DIAG_ERROR, (srcpos){L->file, 0, 0}, "cannot read: %s", why ? why + 3 : err);
    } else if (is_jsonl(path)) {
        load_jsonl(L, text.p, text.len);
    } else {
        load_yaml(L, text.p, text.len);
    }
    buf_release(&text);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void load_dir(loader *L, const char *dir)
{
    DIR *d = opendir(dir);
    const char *dfile = add_file(L->s, dir);
    if (!d) {
        diags_add(&L->s->diags, DIAG_ERROR, (srcpos){dfile, 0, 0}, "cannot read directory: %s", strerror(errno));
        return;
    }
    strv names = STRV_INIT;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char *p = xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
            diags_add(&L->s->diags, DIAG_WARNING, (srcpos){add_file(L->s, p), 0, 0},
                      "a directory: a suite is read from the .yaml, .yml and .jsonl files of one directory, not below");
        else if (suite_name_ok(e->d_name))
            strv_push(&names, e->d_name); /* one that cannot be read says so in load_file */
        free(p);
    }
    closedir(d);
    if (names.n) qsort(names.v, names.n, sizeof *names.v, cmp_str);
    for (size_t i = 0; i < names.n; i++) {
        char *p = xasprintf("%s/%s", dir, names.v[i]);
        load_file(L, p);
        free(p);
    }
    if (!names.n) diags_add(&L->s->diags, DIAG_ERROR, (srcpos){dfile, 0, 0}, "no .yaml, .yml or .jsonl file here");
    strv_release(&names);
}

static int cmp_idpos(const void *a, const void *b)
{
    const idpos *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    if (c) return c;
    c = strcmp(x->pos.file, y->pos.file); /* files are read in order: their order is the reading's */
    return c ? c : (x->pos.line > y->pos.line) - (x->pos.line < y->pos.line);
}

/* every repeat of an id, at the repeat, naming the first; the list is
 * freed */
static void check_ids(loader *L)
{
    if (L->n_ids) qsort(L->ids, L->n_ids, sizeof *L->ids, cmp_idpos);
    for (size_t i = 1, first = 0; i < L->n_ids; i++) {
        const idpos *a = &L->ids[first], *b = &L->ids[i];
        if (strcmp(a->id, b->id)) {
            first = i;
            continue;
        }
        diags_add(&L->s->diags, DIAG_ERROR, b->pos, "item '%s': the id is also used at %s:%d", b->id, a->pos.file,
                  a->pos.line);
    }
    for (size_t i = 0; i < L->n_ids; i++) free(L->ids[i].id);
    free(L->ids);
    L->ids = NULL;
    L->n_ids = L->cap_ids = 0;
}

static void finish(loader *L, const char *path)
{
    eval_suite *s = L->s;
    check_ids(L);
    if (!s->n_items && !s->diags.errors)
        diags_add(&s->diags, DIAG_ERROR, (srcpos){s->files.n ? s->files.v[0] : path, 0, 0}, "the suite has no items");
    if (!s->name) { /* the base name, without a suite file's extension */
        char *p = xstrdup(path);
        size_t n = strlen(p);
        while (n > 1 && p[n - 1] == '/') p[--n] = '\0';
        const char *slash = strrchr(p, '/');
        s->name = xstrdup(slash && slash[1] ? slash + 1 : p);
        free(p);
        char *dot = strrchr(s->name, '.');
        if (dot && suite_name_ok(s->name)) *dot = '\0';
    }
}

int suite_load(eval_suite *s, const char *path)
{
    memset(s, 0, sizeof *s);
    s->path = xstrdup(path);
    loader L = {.s = s};
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        load_dir(&L, path);
    else if (suite_name_ok(strrchr(path, '/') ? strrchr(path, '/') + 1 : path) || stat(path, &st) != 0)
        load_file(&L, path);
    else
        diags_add(&s->diags, DIAG_ERROR, (srcpos){add_file(s, path), 0, 0},
                  "not a suite: a suite is a .yaml, .yml or .jsonl file or a directory of them");
    finish(&L, path);
    return s->diags.errors ? -1 : 0;
}

int suite_load_text(eval_suite *s, const char *text, size_t len, const char *file, bool jsonl)
{
    memset(s, 0, sizeof *s);
    s->path = xstrdup(file);
    loader L = {.s = s};
    begin_file(&L, file);
    if (jsonl)
        load_jsonl(&L, text, len);
    else
        load_yaml(&L, text, len);
    finish(&L, file);
    return s->diags.errors ? -1 : 0;
}

void suite_release(eval_suite *s)
{
    for (size_t i = 0; i < s->n_items; i++) item_release(&s->items[i]);
    free(s->items);
    free(s->name);
    free(s->description);
    free(s->path);
    strv_release(&s->files);
    diags_release(&s->diags);
    memset(s, 0, sizeof *s);
}

const eval_item *suite_find(const eval_suite *s, const char *id)
{
    for (size_t i = 0; i < s->n_items; i++)
        if (!strcmp(s->items[i].id, id)) return &s->items[i];
    return NULL;
}

static cJSON *turn(const char *role, const char *content)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", role);
    cJSON_AddStringToObject(m, "content", content);
    return m;
}

cJSON *eval_item_messages(const eval_item *it)
{
    cJSON *a = cJSON_CreateArray();
    if (it->system) cJSON_AddItemToArray(a, turn("system", it->system));
    if (it->prompt) cJSON_AddItemToArray(a, turn("user", it->prompt));
    for (size_t i = 0; i < it->n_messages; i++)
        cJSON_AddItemToArray(a, turn(eval_role_names[it->messages[i].role], it->messages[i].content));
    return a;
}

size_t suite_max_prompt_bytes(const eval_suite *s)
{
    size_t max = 0;
    for (size_t i = 0; i < s->n_items; i++) {
        const eval_item *it = &s->items[i];
        size_t n = (it->system ? strlen(it->system) : 0) + (it->prompt ? strlen(it->prompt) : 0) +
                   (it->tools ? strlen(it->tools) : 0);
        for (size_t k = 0; k < it->n_messages; k++) n += strlen(it->messages[k].content);
        if (n > max) max = n;
    }
    return max;
}
