/* route.c - the router's name table and the collision rule.  One sorted
 * array of (name, service, kind), rebuilt on the rare events that change
 * it (config load, a router-mode service's list, never a request), so a
 * lookup is one binary search and one walk over the equal names.  The
 * rules are in route.h. */
#include "router/route.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const route_kind_names[] = {"id", "alias", "model_id", "listed", "default", NULL};

#define HARD(k) ((k) == ROUTE_ID || (k) == ROUTE_ALIAS)
#define LIST_MAX 64 /* names in one message */

static int name_cmp(const void *a, const void *b)
{
    const route_name *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    if (x->service != y->service) return x->service < y->service ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

static void add(route_name **v, size_t *n, size_t *cap, const char *name, size_t svc, route_kind k)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *v = xrealloc(*v, *cap * sizeof **v);
    }
    (*v)[(*n)++] = (route_name){name, svc, k};
}

/* Collect, sort and dedupe every name; the hard-name clash check is the
 * caller's (only init can find one). */
static void rebuild(route_table *t)
{
    route_name *v = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < t->n_svc; i++) {
        const route_service *s = &t->svc[i];
        add(&v, &n, &cap, s->id, i, ROUTE_ID);
        for (size_t a = 0; a < s->n_aliases; a++)
            add(&v, &n, &cap, s->aliases[a], i, ROUTE_ALIAS);
        if (s->model_id && s->model_id[0]) add(&v, &n, &cap, s->model_id, i, ROUTE_MODEL_ID);
        for (char **l = t->listed[i]; l && *l; l++)
            add(&v, &n, &cap, *l, i, ROUTE_LISTED);
    }
    if (n) qsort(v, n, sizeof *v, name_cmp);
    /* one entry per (name, service), the strongest kind (sorted first) */
    size_t w = 0;
    for (size_t r = 0; r < n; r++)
        if (!w || strcmp(v[w - 1].name, v[r].name) || v[w - 1].service != v[r].service)
            v[w++] = v[r];
    free(t->names);
    t->names = v;
    t->n_names = w;
}

/* First entry whose name is >= name. */
static size_t lower(const route_table *t, const char *name)
{
    size_t lo = 0, hi = t->n_names;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(t->names[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t range_end(const route_table *t, size_t first, const char *name)
{
    size_t e = first;
    while (e < t->n_names && !strcmp(t->names[e].name, name))
        e++;
    return e;
}

static size_t hard_lookup(const route_table *t, const char *name)
{
    size_t f = lower(t, name), e = range_end(t, f, name);
    for (size_t i = f; i < e; i++)
        if (HARD(t->names[i].kind)) return t->names[i].service;
    return SIZE_MAX;
}

int route_table_init(route_table *t, const route_service *svc, size_t n, const char *def, char *err,
                     size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->def = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        const route_service *s = &svc[i];
        if (!s->id || !s->id[0]) {
            snprintf(err, errlen, "service %zu has no id", i);
            return -1;
        }
        for (size_t a = 0; a <= s->n_aliases; a++) {
            const char *nm = a < s->n_aliases ? s->aliases[a] : s->id;
            if (!nm || !nm[0]) {
                snprintf(err, errlen, "service '%s': an empty alias", s->id);
                return -1;
            }
            if (!strcmp(nm, "default")) {
                snprintf(err, errlen, "service '%s': 'default' is reserved for the router default",
                         s->id);
                return -1;
            }
        }
    }
    t->svc = xmalloc((n ? n : 1) * sizeof *t->svc);
    if (n) memcpy(t->svc, svc, n * sizeof *svc);
    t->n_svc = n;
    t->flags = xcalloc(n ? n : 1, 1);
    t->listed = xcalloc(n ? n : 1, sizeof *t->listed);
    rebuild(t);
    for (size_t i = 0; i + 1 < t->n_names; i++) {
        const route_name *a = &t->names[i], *b = &t->names[i + 1];
        if (strcmp(a->name, b->name) || !HARD(a->kind) || !HARD(b->kind)) continue;
        snprintf(err, errlen, "name '%s' is the %s of '%s' and the %s of '%s'", a->name,
                 a->kind == ROUTE_ID ? "id" : "alias", t->svc[a->service].id,
                 b->kind == ROUTE_ID ? "id" : "alias", t->svc[b->service].id);
        route_table_release(t);
        return -1;
    }
    if (def && route_table_set_default(t, def, err, errlen) < 0) {
        route_table_release(t);
        return -1;
    }
    return 0;
}

void route_table_release(route_table *t)
{
    for (size_t i = 0; t->listed && i < t->n_svc; i++) {
        for (char **l = t->listed[i]; l && *l; l++)
            free(*l);
        free(t->listed[i]);
    }
    free(t->listed);
    free(t->svc);
    free(t->flags);
    free(t->names);
    memset(t, 0, sizeof *t);
    t->def = SIZE_MAX;
}

void route_table_set_listed(route_table *t, size_t service, const char *const *names, size_t n)
{
    if (service >= t->n_svc) return;
    char **old = t->listed[service];
    char **nw = NULL;
    if (n) {
        size_t k = 0;
        nw = xcalloc(n + 1, sizeof *nw);
        for (size_t i = 0; i < n; i++)
            if (names[i] && names[i][0]) nw[k++] = xstrdup(names[i]);
    }
    t->listed[service] = nw;
    rebuild(t); /* drops the pointers into old before they are freed */
    for (char **l = old; l && *l; l++)
        free(*l);
    free(old);
}

int route_table_set_default(route_table *t, const char *name, char *err, size_t errlen)
{
    if (!name) {
        t->def = SIZE_MAX;
        return 0;
    }
    size_t s = hard_lookup(t, name);
    if (s == SIZE_MAX) {
        snprintf(err, errlen, "default '%s' is not a service id or alias", name);
        return -1;
    }
    t->def = s;
    return 0;
}

void route_table_set_flags(route_table *t, size_t service, unsigned flags)
{
    if (service < t->n_svc) t->flags[service] = (unsigned char)flags;
}

size_t route_table_find_id(const route_table *t, const char *id)
{
    size_t f = lower(t, id), e = range_end(t, f, id);
    for (size_t i = f; i < e; i++)
        if (t->names[i].kind == ROUTE_ID) return t->names[i].service;
    return SIZE_MAX;
}

static route_result ok(const route_table *t, size_t svc, route_kind k)
{
    return (route_result){.status = ROUTE_OK,
                          .service = svc,
                          .id = t->svc[svc].id,
                          .kind = k};
}

/* Among names[f..e) (one per service), the one entry whose service has
 * all the flags in want, or SIZE_MAX when none or several do. */
static size_t single(const route_table *t, size_t f, size_t e, unsigned want, size_t *count)
{
    size_t hit = SIZE_MAX;
    *count = 0;
    for (size_t i = f; i < e; i++)
        if ((t->flags[t->names[i].service] & want) == want) {
            hit = i;
            ++*count;
        }
    return *count == 1 ? hit : SIZE_MAX;
}

route_result route_resolve(const route_table *t, const char *name)
{
    if (!strcmp(name, "default")) {
        if (t->def == SIZE_MAX)
            return (route_result){.status = ROUTE_NOT_FOUND, .no_default = true};
        return ok(t, t->def, ROUTE_DEFAULT);
    }
    size_t f = lower(t, name), e = range_end(t, f, name);
    if (f == e) return (route_result){.status = ROUTE_NOT_FOUND};
    for (size_t i = f; i < e; i++)
        if (HARD(t->names[i].kind)) return ok(t, t->names[i].service, t->names[i].kind);
    if (e - f == 1) return ok(t, t->names[f].service, t->names[f].kind);
    size_t n_run, n, hit = single(t, f, e, ROUTE_F_RUNNING, &n_run);
    if (hit == SIZE_MAX)
        hit = single(t, f, e, n_run ? ROUTE_F_RUNNING | ROUTE_F_IN_MODE : ROUTE_F_IN_MODE, &n);
    if (hit != SIZE_MAX) return ok(t, t->names[hit].service, t->names[hit].kind);
    return (route_result){.status = ROUTE_AMBIGUOUS, .first = f, .count = e - f};
}

/* Whether service s lists name. */
static bool listed(const route_table *t, size_t s, const char *name)
{
    for (char **l = t->listed[s]; l && *l; l++)
        if (!strcmp(*l, name)) return true;
    return false;
}

int route_upstream(const route_table *t, size_t service, route_kind kind, const char **model, buf *err)
{
    *model = NULL;
    if (service >= t->n_svc || kind == ROUTE_LISTED) return 0;
    const route_service *s = &t->svc[service];
    if (kind == ROUTE_MODEL_ID && (!s->router_mode || listed(t, service, s->model_id))) return 0;
    if (s->upstream) {
        *model = s->upstream;
        return 0;
    }
    if (s->remote) {
        buf_printf(err,
                   "service '%s' is a remote without model_id: gpumod does not know the remote's name for its model; "
                   "set model_id in its preset to that name",
                   s->id);
        return -1;
    }
    if (!s->router_mode) {
        if (kind == ROUTE_DEFAULT) *model = s->id;
        return 0;
    }
    size_t n = 0;
    for (char **l = t->listed[service]; l && *l; l++)
        n++;
    if (n == 1) {
        *model = t->listed[service][0];
        return 0;
    }
    if (!n) {
        buf_printf(err, "service '%s' lists no model yet and sets no unit_vars.default_model: name one of its models",
                   s->id);
        return -1;
    }
    buf_printf(err, "service '%s' serves several models (", s->id);
    size_t i = 0;
    for (char **l = t->listed[service]; *l && i < LIST_MAX; l++, i++)
        buf_printf(err, "%s'%s'", i ? ", " : "", *l);
    if (n > i) buf_printf(err, " and %zu more", n - i);
    buf_adds(err, ") and sets no unit_vars.default_model: name one of them");
    return -1;
}

void route_message(const route_table *t, const route_result *r, const char *name, buf *out)
{
    if (r->status == ROUTE_NOT_FOUND && r->no_default) {
        buf_adds(out, "no default model is set: set router.default in gpumod.yaml or run "
                      "'gpumod route default SERVICE'");
        return;
    }
    if (r->status == ROUTE_AMBIGUOUS) {
        buf_printf(out, "model '%s' is ambiguous: services ", name);
        size_t n_run = 0;
        for (size_t i = 0; i < r->count; i++) {
            size_t s = t->names[r->first + i].service;
            n_run += (t->flags[s] & ROUTE_F_RUNNING) != 0;
            if (i == LIST_MAX) {
                buf_printf(out, " and %zu more", r->count - i);
                break;
            }
            buf_printf(out, "%s'%s'", i ? (i + 1 == r->count ? " and " : ", ") : "", t->svc[s].id);
        }
        buf_adds(out, n_run > 1
                          ? " serve it and more than one of them is running"
                          : " serve it and none of them is the one running or in the current mode");
        buf_adds(out, "; name the service id instead");
        return;
    }
    if (r->status != ROUTE_NOT_FOUND) return;
    buf_printf(out, "model '%s' not found; available: ", name);
    size_t shown = 0, total = 0;
    bool def_done = t->def == SIZE_MAX;
    for (size_t i = 0; i <= t->n_names; i++) {
        const char *nm = i < t->n_names ? t->names[i].name : NULL;
        if (nm && i && !strcmp(nm, t->names[i - 1].name)) continue;
        if (!def_done && (!nm || strcmp("default", nm) < 0)) {
            def_done = true;
            if (shown < LIST_MAX) buf_printf(out, "%s'default'", shown++ ? ", " : "");
            total++;
        }
        if (!nm) break;
        if (shown < LIST_MAX) buf_printf(out, "%s'%s'", shown++ ? ", " : "", nm);
        total++;
    }
    if (!total) buf_adds(out, "none");
    if (total > shown) buf_printf(out, " and %zu more", total - shown);
}
