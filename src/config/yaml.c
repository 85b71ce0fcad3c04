/* yaml.c - libyaml document -> ynode tree with positions, merges resolved.
 * See yaml.h for the dialect.  All nodes live in one arena freed at once. */
#include "config/yaml.h"
#include "util/buf.h"
#include "util/slurp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yaml.h>

#define YAML_MAX_NODES 200000 /* after alias expansion */
#define YAML_MAX_DEPTH 64
#define YAML_MAX_FILE (4 << 20)

typedef struct arena {
    void **v;
    size_t n, cap;
} arena;

static void *arena_alloc(arena *a, size_t sz)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->v = xrealloc(a->v, a->cap * sizeof *a->v);
    }
    return a->v[a->n++] = xcalloc(1, sz);
}

typedef struct builder {
    yaml_document_t *doc;
    arena *a;
    const char *file;
    diags *d;
    size_t count;
    bool failed;
} builder;

srcpos ypos(const char *file, const ynode *n)
{
    srcpos p = {file, n ? n->line : 0, n ? n->col : 0};
    return p;
}

static ynode *build(builder *b, yaml_node_t *yn, int depth);

static bool key_eq(const ynode *k, const char *s)
{
    return k->kind == Y_SCALAR && !strcmp(k->s, s);
}

static bool map_has(const ynode *m, const ynode *key)
{
    for (size_t i = 0; i < m->npairs; i++)
        if (!strcmp(m->pairs[i].key->s, key->s)) return true;
    return false;
}

static void map_push(builder *b, ynode *m, ynode *k, ynode *v, size_t *cap)
{
    if (m->npairs == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        ypair *np = arena_alloc(b->a, *cap * sizeof *np);
        if (m->npairs) memcpy(np, m->pairs, m->npairs * sizeof *np);
        m->pairs = np;
    }
    m->pairs[m->npairs].key = k;
    m->pairs[m->npairs].val = v;
    m->npairs++;
}

static void merge_from(builder *b, ynode *m, const ynode *src, size_t *cap, const ynode *at)
{
    if (src->kind != Y_MAP) {
        diags_add(b->d, DIAG_ERROR, ypos(b->file, at),
                  "merge key '<<' needs a mapping or a list of mappings, found %s", ykind_name(src));
        b->failed = true;
        return;
    }
    for (size_t i = 0; i < src->npairs; i++)
        if (!map_has(m, src->pairs[i].key)) map_push(b, m, src->pairs[i].key, src->pairs[i].val, cap);
}

static ynode *build(builder *b, yaml_node_t *yn, int depth)
{
    if (depth > YAML_MAX_DEPTH) {
        diags_add(b->d, DIAG_ERROR, (srcpos){b->file, (int)yn->start_mark.line + 1, (int)yn->start_mark.column + 1},
                  "nesting deeper than %d levels", YAML_MAX_DEPTH);
        b->failed = true;
        return NULL;
    }
    if (++b->count > YAML_MAX_NODES) {
        if (b->count == YAML_MAX_NODES + 1)
            diags_add(b->d, DIAG_ERROR, (srcpos){b->file, (int)yn->start_mark.line + 1, (int)yn->start_mark.column + 1},
                      "more than %d nodes after alias expansion", YAML_MAX_NODES);
        b->failed = true;
        return NULL;
    }
    ynode *n = arena_alloc(b->a, sizeof *n);
    n->line = (int)yn->start_mark.line + 1;
    n->col = (int)yn->start_mark.column + 1;

    switch (yn->type) {
    case YAML_SCALAR_NODE: {
        n->kind = Y_SCALAR;
        n->len = yn->data.scalar.length;
        n->s = arena_alloc(b->a, n->len + 1);
        memcpy(n->s, yn->data.scalar.value, n->len);
        n->plain = yn->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        if (memchr(n->s, '\0', n->len)) {
            diags_add(b->d, DIAG_ERROR, ypos(b->file, n), "NUL byte in a string");
            b->failed = true;
        }
        break;
    }
    case YAML_SEQUENCE_NODE: {
        n->kind = Y_SEQ;
        size_t cnt = (size_t)(yn->data.sequence.items.top - yn->data.sequence.items.start);
        n->items = arena_alloc(b->a, (cnt ? cnt : 1) * sizeof *n->items);
        for (size_t i = 0; i < cnt && !b->failed; i++) {
            yaml_node_t *c = yaml_document_get_node(b->doc, yn->data.sequence.items.start[i]);
            ynode *cn = c ? build(b, c, depth + 1) : NULL;
            if (cn) n->items[n->n++] = cn;
        }
        break;
    }
    case YAML_MAPPING_NODE: {
        n->kind = Y_MAP;
        size_t cap = 0;
        size_t cnt = (size_t)(yn->data.mapping.pairs.top - yn->data.mapping.pairs.start);
        ynode **merges = NULL;
        size_t nmerges = 0;
        /* Explicit keys first, then merge sources, so explicit keys win. */
        for (size_t i = 0; i < cnt && !b->failed; i++) {
            yaml_node_pair_t *pr = &yn->data.mapping.pairs.start[i];
            yaml_node_t *kn = yaml_document_get_node(b->doc, pr->key);
            yaml_node_t *vn = yaml_document_get_node(b->doc, pr->value);
            if (!kn || !vn) continue;
            ynode *k = build(b, kn, depth + 1);
            ynode *v = build(b, vn, depth + 1);
            if (!k || !v) continue;
            if (k->kind != Y_SCALAR) {
                diags_add(b->d, DIAG_ERROR, ypos(b->file, k), "a key must be a plain string, found %s",
                          ykind_name(k));
                b->failed = true;
                continue;
            }
            if (k->plain && key_eq(k, "<<")) {
                merges = xrealloc(merges, (nmerges + 2) * sizeof *merges);
                merges[nmerges++] = v;
                merges[nmerges++] = k;
                continue;
            }
            for (size_t j = 0; j < n->npairs; j++) {
                if (!strcmp(n->pairs[j].key->s, k->s)) {
                    diags_add(b->d, DIAG_ERROR, ypos(b->file, k),
                              "duplicate key '%s' (first at line %d)", k->s, n->pairs[j].key->line);
                    b->failed = true;
                }
            }
            map_push(b, n, k, v, &cap);
        }
        for (size_t i = 0; i < nmerges && !b->failed; i += 2) {
            ynode *v = merges[i];
            if (v->kind == Y_SEQ) {
                for (size_t j = 0; j < v->n; j++) merge_from(b, n, v->items[j], &cap, merges[i + 1]);
            } else {
                merge_from(b, n, v, &cap, merges[i + 1]);
            }
        }
        free(merges);
        break;
    }
    default:
        n->kind = Y_SCALAR;
        n->s = arena_alloc(b->a, 1);
        n->plain = true;
    }
    return n;
}

static int load(ydoc *doc, yaml_parser_t *p, const char *file, diags *d)
{
    yaml_document_t ydoc_;
    arena *a = xcalloc(1, sizeof *a);
    doc->arena = a;
    doc->root = NULL;

    if (!yaml_parser_load(p, &ydoc_)) {
        diags_add(d, DIAG_ERROR, (srcpos){file, (int)p->problem_mark.line + 1, (int)p->problem_mark.column + 1},
                  "invalid YAML: %s%s%s", p->problem ? p->problem : "parse error",
                  p->context ? " " : "", p->context ? p->context : "");
        return -1;
    }
    int rc = 0;
    yaml_node_t *root = yaml_document_get_root_node(&ydoc_);
    if (root) {
        builder b = {&ydoc_, a, file, d, 0, false};
        doc->root = build(&b, root, 0);
        if (b.failed) rc = -1;
        /* A second document is an error, as with PyYAML's safe_load. */
        yaml_document_t next;
        if (yaml_parser_load(p, &next)) {
            yaml_node_t *r2 = yaml_document_get_root_node(&next);
            if (r2) {
                diags_add(d, DIAG_ERROR, (srcpos){file, (int)r2->start_mark.line + 1, (int)r2->start_mark.column + 1},
                          "a second YAML document; a file holds one");
                rc = -1;
            }
            yaml_document_delete(&next);
        } else {
            diags_add(d, DIAG_ERROR, (srcpos){file, (int)p->problem_mark.line + 1, (int)p->problem_mark.column + 1},
                      "invalid YAML: %s", p->problem ? p->problem : "parse error");
            rc = -1;
        }
    }
    yaml_document_delete(&ydoc_);
    return rc;
}

int yaml_load_string(ydoc *doc, const char *text, size_t len, const char *file, diags *d)
{
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int rc = load(doc, &p, file, d);
    yaml_parser_delete(&p);
    return rc;
}

int yaml_read_file(buf *out, const char *path, const char *file, diags *d)
{
    char why[256];
    /* never fopen(): a FIFO (a preset named x.yaml made by mkfifo) would
     * block the daemon's loop in open() until someone writes to it */
    int fd = slurp_open(path, why, sizeof why);
    if (fd < 0) {
        diags_add(d, DIAG_ERROR, (srcpos){file, 0, 0}, "cannot read: %s", why);
        return -1;
    }
    ssize_t got;
    for (;;) { /* straight into out: no 8 KB chunk on the stack */
        buf_grow(out, 8192);
        got = read(fd, out->p + out->len, 8192);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        out->len += (size_t)got;
        if (out->len > YAML_MAX_FILE) break;
    }
    out->p[out->len] = '\0';
    int rerr = got < 0 ? errno : 0;
    close(fd);
    if (rerr) {
        diags_add(d, DIAG_ERROR, (srcpos){file, 0, 0}, "read error: %s", strerror(rerr));
        return -1;
    }
    if (out->len > YAML_MAX_FILE) {
        diags_add(d, DIAG_ERROR, (srcpos){file, 0, 0}, "file larger than %d MiB", YAML_MAX_FILE >> 20);
        return -1;
    }
    return 0;
}

int yaml_load_file(ydoc *doc, const char *path, const char *file, diags *d)
{
    doc->root = NULL;
    doc->arena = NULL;
    buf b = BUF_INIT;
    int rc = yaml_read_file(&b, path, file, d);
    if (rc == 0) rc = yaml_load_string(doc, b.p, b.len, file, d);
    buf_release(&b);
    return rc;
}

/* Skip the rest of the node whose start event was just read (depth 1 at
 * a collection's start).  false on a parse error. */
static bool skip_node(yaml_parser_t *p, int depth)
{
    while (depth > 0) {
        yaml_event_t e;
        if (!yaml_parser_parse(p, &e)) return false;
        if (e.type == YAML_MAPPING_START_EVENT || e.type == YAML_SEQUENCE_START_EVENT) depth++;
        if (e.type == YAML_MAPPING_END_EVENT || e.type == YAML_SEQUENCE_END_EVENT) depth--;
        bool end = e.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&e);
        if (end) return false;
    }
    return true;
}

/* One event of the top-level mapping: the key's text, or why not. */
typedef enum { PK_KEY, PK_END, PK_UNSURE } peek_step;

static peek_step next_key(yaml_parser_t *p, char **key)
{
    yaml_event_t e;
    if (!yaml_parser_parse(p, &e)) return PK_UNSURE;
    peek_step r = PK_UNSURE; /* an alias or a collection as a key */
    if (e.type == YAML_MAPPING_END_EVENT) r = PK_END;
    if (e.type == YAML_SCALAR_EVENT) {
        *key = xstrndup((const char *)e.data.scalar.value, e.data.scalar.length);
        r = PK_KEY;
    }
    yaml_event_delete(&e);
    return r;
}

static int peek_map(yaml_parser_t *p, const char *key, char **val)
{
    for (;;) {
        char *k = NULL;
        peek_step st = next_key(p, &k);
        if (st == PK_END) return 0;
        if (st == PK_UNSURE) return -1;
        /* a merge key may bring the key in: only the whole tree can tell */
        bool merge = !strcmp(k, "<<"), want = !strcmp(k, key);
        free(k);
        if (merge) return -1;
        yaml_event_t e;
        if (!yaml_parser_parse(p, &e)) return -1;
        int rc = 2; /* not yet */
        if (want) {
            rc = -1; /* an alias or a collection as the value */
            if (e.type == YAML_SCALAR_EVENT) {
                *val = xstrndup((const char *)e.data.scalar.value, e.data.scalar.length);
                rc = 1;
            }
        } else if (e.type == YAML_MAPPING_START_EVENT || e.type == YAML_SEQUENCE_START_EVENT) {
            if (!skip_node(p, 1)) rc = -1;
        }
        yaml_event_delete(&e);
        if (rc != 2) return rc;
    }
}

int yaml_peek_key(const char *text, size_t len, const char *key, char **val)
{
    *val = NULL;
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int rc = -1;
    /* stream start, document start (or the stream's end: an empty file),
     * then the root node */
    yaml_event_t e;
    for (int i = 0; i < 3; i++) {
        if (!yaml_parser_parse(&p, &e)) goto out;
        yaml_event_type_t t = e.type;
        yaml_event_delete(&e);
        if (t == YAML_STREAM_END_EVENT) {
            rc = 0;
            goto out;
        }
        if (i < 2) continue;
        if (t == YAML_MAPPING_START_EVENT)
            rc = peek_map(&p, key, val);
        else if (t != YAML_ALIAS_EVENT)
            rc = 0; /* a scalar or a list holds no key */
    }
out:
    yaml_parser_delete(&p);
    return rc;
}

void yaml_release(ydoc *doc)
{
    arena *a = doc->arena;
    if (a) {
        for (size_t i = 0; i < a->n; i++) free(a->v[i]);
        free(a->v);
        free(a);
    }
    doc->arena = NULL;
    doc->root = NULL;
}

const ynode *ymap_get(const ynode *map, const char *key)
{
    if (!map || map->kind != Y_MAP) return NULL;
    for (size_t i = 0; i < map->npairs; i++)
        if (!strcmp(map->pairs[i].key->s, key)) return map->pairs[i].val;
    return NULL;
}

const char *ykind_name(const ynode *n)
{
    if (!n) return "nothing";
    switch (n->kind) {
    case Y_SEQ: return "a list";
    case Y_MAP: return "a mapping";
    default: return yscalar_is_null(n) ? "null" : "a scalar";
    }
}

bool yscalar_is_null(const ynode *n)
{
    if (n->kind != Y_SCALAR || !n->plain) return false;
    return n->len == 0 || !strcmp(n->s, "~") || !strcmp(n->s, "null") || !strcmp(n->s, "Null") ||
           !strcmp(n->s, "NULL");
}

int yscalar_bool(const ynode *n)
{
    /* PyYAML's resolver does not treat y/n as booleans; neither do we. */
    static const char *const yes[] = {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"};
    static const char *const no[] = {"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"};
    if (n->kind != Y_SCALAR || !n->plain) return -1;
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        if (!strcmp(n->s, yes[i])) return 1;
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        if (!strcmp(n->s, no[i])) return 0;
    return -1;
}
