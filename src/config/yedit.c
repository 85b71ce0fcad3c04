/* yedit.c - set one scalar in a YAML file's text by splicing bytes, and a
 * line diff to show it.
 *
 * The spot to change is found by walking libyaml's events, not the ynode
 * tree: an event gives the exact marks of a scalar (a node's marks take in
 * its anchor and tag), its style, a mapping's flow or block style, and the
 * anchors and aliases the tree has already resolved away.  The tree is
 * still the judge: the text is loaded before (invalid YAML, a key that
 * only a merge brings in) and after the splice, where the new value must
 * read back at path and every other node must be as it was, so a splice
 * this file got wrong is refused, never written.
 *
 * libyaml's mark.index counts characters (a CRLF is two, a BOM none); the
 * walk turns them into byte offsets over the UTF-8 text. */
#include "config/yedit.h"
#include "config/yaml.h"
#include "util/errf.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define NOPOS ((size_t)-1)

/* --- quoting ----------------------------------------------------------- */

static bool plain_safe(const char *s)
{
    /* YAML 1.1 reads these words as null or booleans (y/n too, for
     * readers other than PyYAML); numbers, dates, .inf and the like all
     * start with a digit, a sign or a dot, which is quoted below */
    static const char *const words[] = {"null",  "Null",  "NULL", "true", "True", "TRUE", "false",
                                        "False", "FALSE", "yes",  "Yes",  "YES",  "no",   "No",
                                        "NO",    "on",    "On",   "ON",   "off",  "Off",  "OFF",
                                        "y",     "Y",     "n",    "N"};
    size_t n = strlen(s);
    if (!n || s[0] == ' ' || s[n - 1] == ' ') return false;
    if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_' ||
          s[0] == '/'))
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == '/' || c == '-' || c == '+' ||
                  (c == ' ' && p[1] != ' ');
        if (!ok) return false;
    }
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (!strcmp(s, words[i])) return false;
    return true;
}

void yedit_quote(const char *s, buf *out)
{
    if (plain_safe(s)) {
        buf_adds(out, s);
        return;
    }
    buf_addc(out, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            buf_addc(out, '\\');
            buf_addc(out, (char)*p);
        } else if (*p == '\n') {
            buf_adds(out, "\\n");
        } else if (*p == '\t') {
            buf_adds(out, "\\t");
        } else if (*p < 0x20 || *p == 0x7f) {
            buf_printf(out, "\\x%02x", *p);
        } else if (p[0] == 0xc2 && p[1] == 0x85) { /* NEL, a line break to YAML 1.1 */
            buf_adds(out, "\\N");
            p++;
        } else if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) { /* LS, PS */
            buf_adds(out, p[2] == 0xa8 ? "\\L" : "\\P");
            p += 2;
        } else {
            buf_addc(out, (char)*p);
        }
    }
    buf_addc(out, '"');
}

/* --- finding the spot: libyaml's events -------------------------------- */

typedef struct walk {
    yaml_parser_t p;
    const char *text;
    size_t len, bom;
    size_t at_ix, at_byte; /* ix_byte()'s cursor */
    int step;              /* a nested block mapping's indentation past its key's; 0: none seen */
    const char *const *path;
    char *err;
    size_t errlen;
} walk;

typedef enum { AT_SCALAR, AT_NULL, AT_MISSING } at_kind;

/* Where path is in the text.  AT_SCALAR: the value is a one-line scalar;
 * AT_NULL: path[depth - 1] holds null, path[depth..] is to be written
 * under it; AT_MISSING: path[depth] is not in its mapping. */
typedef struct spot {
    at_kind kind;
    size_t depth;
    bool flow;       /* the value's context: its mapping (or the one to add to) is a flow one */
    size_t from, to; /* AT_SCALAR, AT_NULL: the value's bytes */
    size_t key;      /* AT_SCALAR, AT_NULL: its key's first byte */
    int col;         /* AT_NULL: the key's column; AT_MISSING: the mapping's keys' column */
    size_t at;       /* AT_MISSING: where the new text goes */
    bool pairs;      /* AT_MISSING: the mapping holds pairs already */
    int line;        /* AT_MISSING: the mapping's first line */
    int merge_line;  /* AT_MISSING: the line of a `<<` key in the mapping, 0: none */
} spot;

static size_t ix_byte(walk *w, size_t ix)
{
    if (ix < w->at_ix) {
        w->at_ix = 0;
        w->at_byte = w->bom;
    }
    while (w->at_ix < ix && w->at_byte < w->len) {
        w->at_byte++;
        while (w->at_byte < w->len && ((unsigned char)w->text[w->at_byte] & 0xc0) == 0x80)
            w->at_byte++;
        w->at_ix++;
    }
    return w->at_byte;
}

static void path_name(buf *b, const char *const *path, size_t n)
{
    for (size_t i = 0; i < n && path[i]; i++) {
        if (i) buf_addc(b, '.');
        buf_adds(b, path[i]);
    }
}

/* "'unit_vars.threads' (line 4) " + the rest; -1. */
__attribute__((format(printf, 4, 5))) static int refuse(walk *w, size_t i, int line,
                                                        const char *fmt, ...)
{
    buf name = BUF_INIT, msg = BUF_INIT;
    path_name(&name, w->path, i + 1);
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    errf(w->err, w->errlen, "'%s' (line %d) %s", name.p, line, msg.p);
    buf_release(&name);
    buf_release(&msg);
    return -1;
}

static int next_ev(walk *w, yaml_event_t *e)
{
    if (yaml_parser_parse(&w->p, e)) return 0;
    return errf_ret(-1, w->err, w->errlen, "invalid YAML at line %d: %s; fix the file first",
                    (int)w->p.problem_mark.line + 1, w->p.problem ? w->p.problem : "parse error");
}

static void learn_step(walk *w, int key_col, int col)
{
    if (key_col >= 0 && !w->step && col > key_col) w->step = col - key_col;
}

/* Read past the node e starts, moving *last to the end of its last
 * content (a block collection's end mark lies past the comments after
 * it, so only flow ones count).  key_col: the column of the block key
 * it is the value of, or -1. */
static int skip_node(walk *w, const yaml_event_t *e, size_t *last, int key_col)
{
    if (e->type == YAML_SCALAR_EVENT || e->type == YAML_ALIAS_EVENT) {
        *last = e->end_mark.index;
        return 0;
    }
    bool map = e->type == YAML_MAPPING_START_EVENT;
    if (!map && e->type != YAML_SEQUENCE_START_EVENT) return 0;
    bool flow = map ? e->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE
                    : e->data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE;
    for (bool first = true;; first = false) {
        yaml_event_t c;
        if (next_ev(w, &c) < 0) return -1;
        if (c.type == YAML_MAPPING_END_EVENT || c.type == YAML_SEQUENCE_END_EVENT) {
            if (flow) *last = c.end_mark.index;
            yaml_event_delete(&c);
            return 0;
        }
        if (first && map && !flow) learn_step(w, key_col, (int)c.start_mark.column);
        int rc = skip_node(w, &c, last, -1);
        yaml_event_delete(&c);
        if (rc < 0) return -1;
    }
}

static size_t line_start(const char *t, size_t at)
{
    while (at > 0 && t[at - 1] != '\n')
        at--;
    return at;
}

/* Where a line after content ending at byte end goes: the next line's
 * start, or len.  A block scalar's end mark lies at the start (or in the
 * indentation) of the line after it: that line's start. */
static size_t line_after(const char *t, size_t len, size_t end)
{
    size_t ls = line_start(t, end), i = ls;
    while (i < end && (t[i] == ' ' || t[i] == '\t'))
        i++;
    if (i == end) return ls;
    const char *nl = memchr(t + end, '\n', len - end);
    return nl ? (size_t)(nl - t) + 1 : len;
}

static bool is_null_scalar(const yaml_event_t *v)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
    if (v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
    for (size_t i = 0; i < sizeof nulls / sizeof *nulls; i++)
        if (!strcmp((const char *)v->data.scalar.value, nulls[i])) return true;
    return false;
}

static int walk_map(walk *w, const yaml_event_t *start, size_t i, int key_col, spot *sp);

/* The value v of path[i]'s key (flow: in a flow mapping; kix, kcol: the
 * key's first character and column). */
static int at_key(walk *w, const yaml_event_t *v, bool flow, size_t kix, int kcol, size_t i,
                  spot *sp)
{
    bool leaf = !w->path[i + 1];
    int line = (int)v->start_mark.line + 1;
    const yaml_char_t *anchor = NULL, *tag = NULL;
    if (v->type == YAML_ALIAS_EVENT)
        return refuse(w, i, line,
                      "is an alias (*%s) of a value written elsewhere; change that one, by hand",
                      (const char *)v->data.alias.anchor);
    if (v->type == YAML_SCALAR_EVENT) anchor = v->data.scalar.anchor, tag = v->data.scalar.tag;
    if (v->type == YAML_MAPPING_START_EVENT)
        anchor = v->data.mapping_start.anchor, tag = v->data.mapping_start.tag;
    if (v->type == YAML_SEQUENCE_START_EVENT)
        anchor = v->data.sequence_start.anchor, tag = v->data.sequence_start.tag;
    if (anchor)
        return refuse(
            w, i, line,
            "carries the anchor &%s, so its aliases would change too; edit the file by hand",
            (const char *)anchor);
    if (tag)
        return refuse(w, i, line, "has the explicit tag %s; edit the file by hand",
                      (const char *)tag);
    if (v->type == YAML_MAPPING_START_EVENT && !leaf)
        return walk_map(w, v, i + 1, flow ? -1 : kcol, sp);
    if (v->type != YAML_SCALAR_EVENT)
        return refuse(w, i, line, "is %s, not %s; edit the file by hand",
                      v->type == YAML_MAPPING_START_EVENT ? "a mapping" : "a list",
                      leaf ? "a one-line value" : "a mapping");
    if (!leaf && !is_null_scalar(v))
        return refuse(w, i, line, "is a scalar, not a mapping; edit the file by hand");
    yaml_scalar_style_t st = v->data.scalar.style;
    if (st == YAML_LITERAL_SCALAR_STYLE || st == YAML_FOLDED_SCALAR_STYLE)
        return refuse(w, i, line,
                      "is a block scalar (%c): only one-line values are changed; edit it by hand",
                      st == YAML_LITERAL_SCALAR_STYLE ? '|' : '>');
    if (v->end_mark.line != v->start_mark.line)
        return refuse(
            w, i, line,
            "is a scalar spanning lines %d-%d: only one-line values are changed; edit it by hand",
            line, (int)v->end_mark.line + 1);
    sp->kind = leaf ? AT_SCALAR : AT_NULL;
    sp->depth = i + 1;
    sp->flow = flow;
    sp->key = ix_byte(w, kix);
    sp->from = ix_byte(w, v->start_mark.index);
    sp->to = ix_byte(w, v->end_mark.index);
    sp->col = kcol;
    return 0;
}

static void missing(walk *w, bool flow, size_t last, int col, const yaml_event_t *end, spot *sp)
{
    sp->kind = AT_MISSING;
    sp->flow = flow;
    sp->col = col < 0 ? 0 : col;
    sp->pairs = last != NOPOS;
    if (flow)
        sp->at = ix_byte(w, sp->pairs ? last : end->start_mark.index);
    else
        sp->at = line_after(w->text, w->len, ix_byte(w, last));
}

/* The mapping start opens, for path[i] (key_col: its block key's column,
 * or -1). */
static int walk_map(walk *w, const yaml_event_t *start, size_t i, int key_col, spot *sp)
{
    bool flow = start->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE;
    const char *want = w->path[i];
    size_t last = NOPOS, wn = strlen(want);
    int col = -1, merge = 0;
    for (;;) {
        yaml_event_t k, v;
        if (next_ev(w, &k) < 0) return -1;
        if (k.type == YAML_MAPPING_END_EVENT) {
            missing(w, flow, last, col, &k, sp);
            sp->depth = i;
            sp->line = (int)start->start_mark.line + 1;
            sp->merge_line = merge;
            yaml_event_delete(&k);
            return 0;
        }
        if (col < 0) {
            col = (int)k.start_mark.column;
            if (!flow) learn_step(w, key_col, col);
        }
        bool scalar = k.type == YAML_SCALAR_EVENT;
        bool match = scalar && k.data.scalar.length == wn && !memcmp(k.data.scalar.value, want, wn);
        if (scalar && k.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
            !strcmp((char *)k.data.scalar.value, "<<"))
            merge = (int)k.start_mark.line + 1;
        size_t kix = k.start_mark.index;
        int kcol = (int)k.start_mark.column;
        int rc = skip_node(w, &k, &last, -1);
        yaml_event_delete(&k);
        if (rc < 0 || next_ev(w, &v) < 0) return -1;
        if (match)
            rc = at_key(w, &v, flow, kix, kcol, i, sp);
        else
            rc = skip_node(w, &v, &last, flow ? -1 : kcol);
        yaml_event_delete(&v);
        if (rc < 0 || match) return rc;
    }
}

/* An empty document (or one of only `---`) is an empty block mapping. */
static int locate(walk *w, spot *sp)
{
    memset(sp, 0, sizeof *sp);
    yaml_event_t e;
    for (int i = 0; i < 3; i++) { /* stream start, document start, root */
        if (next_ev(w, &e) < 0) return -1;
        if (e.type == YAML_STREAM_END_EVENT) break;
        if (i < 2) yaml_event_delete(&e);
    }
    int rc = 0;
    if (e.type == YAML_MAPPING_START_EVENT) {
        rc = walk_map(w, &e, 0, -1, sp);
    } else {
        sp->kind = AT_MISSING;
        sp->at = w->len;
        sp->line = 1;
    }
    yaml_event_delete(&e);
    return rc;
}

/* --- the tree's checks ------------------------------------------------- */

static const ynode *tree_get(const ynode *n, const char *const *path, size_t upto)
{
    for (size_t i = 0; i < upto && path[i] && n; i++)
        n = ymap_get(n, path[i]);
    return n;
}

static bool scalar_eq(const ynode *a, const ynode *b)
{
    return a && b && a->kind == Y_SCALAR && b->kind == Y_SCALAR && a->plain == b->plain &&
           a->len == b->len && !memcmp(a->s, b->s, a->len);
}

static bool same(const ynode *a, const ynode *b)
{
    if (!a || !b || a->kind != b->kind) return a == b;
    if (a->kind == Y_SCALAR) return scalar_eq(a, b);
    if (a->kind == Y_SEQ) {
        if (a->n != b->n) return false;
        for (size_t i = 0; i < a->n; i++)
            if (!same(a->items[i], b->items[i])) return false;
        return true;
    }
    if (a->npairs != b->npairs) return false;
    for (size_t i = 0; i < a->npairs; i++)
        if (!same(a->pairs[i].val, ymap_get(b, a->pairs[i].key->s))) return false;
    return true;
}

/* b is a with path set to want (a may lack the path's tail, or hold null
 * where b has the mapping under it), all else equal. */
static bool same_but(const ynode *a, const ynode *b, const char *const *path, const ynode *want)
{
    if (!*path) return scalar_eq(b, want);
    if (!b || b->kind != Y_MAP) return false;
    bool amap = a && a->kind == Y_MAP;
    if (a && !amap && !yscalar_is_null(a)) return false;
    size_t added = 0;
    for (size_t i = 0; i < b->npairs; i++) {
        const char *k = b->pairs[i].key->s;
        const ynode *av = amap ? ymap_get(a, k) : NULL;
        if (!strcmp(k, path[0])) {
            if (!same_but(av, b->pairs[i].val, path + 1, want)) return false;
            added += !av;
        } else if (!av || !same(av, b->pairs[i].val)) {
            return false;
        }
    }
    return b->npairs == (amap ? a->npairs : 0) + added;
}

static int load_err(const diags *d, const char *what, char *err, size_t errlen)
{
    const diag *g = d->n ? &d->v[0] : NULL;
    return errf_ret(-1, err, errlen, "%s (line %d, column %d: %s)", what, g ? g->pos.line : 0,
                    g ? g->pos.col : 0, g ? g->msg : "parse error");
}

/* value read as YAML in its place (a block or a flow mapping): one scalar,
 * which the edited file must hold at path. */
static int parse_value(ydoc *vd, const char *value, bool flow, const char *name, char *err,
                       size_t errlen)
{
    char *t = xasprintf(flow ? "{x: %s}" : "x: %s\n", value);
    diags d = {0};
    int rc = yaml_load_string(vd, t, strlen(t), "", &d);
    const ynode *x = ymap_get(vd->root, "x");
    if (rc < 0 || !x || vd->root->npairs != 1 || x->kind != Y_SCALAR)
        rc = errf_ret(-1, err, errlen,
                      "value '%s' for '%s' is not one YAML scalar%s; quote it as a string", value,
                      name, flow ? " in a flow mapping" : "");
    diags_release(&d);
    free(t);
    return rc;
}

/* --- the splice -------------------------------------------------------- */

typedef struct splice {
    size_t from, to;
    buf text;
} splice;

typedef struct edit {
    const char *text;
    size_t len;
    const char *eol;
    const char *value, *note, *prefix;
    splice sp[3];
    size_t n;
} edit;

static buf *add_splice(edit *e, size_t from, size_t to)
{
    splice *s = &e->sp[e->n++];
    s->from = from;
    s->to = to;
    buf_init(&s->text);
    return &s->text;
}

static void indent(buf *b, int n)
{
    for (int i = 0; i < n; i++)
        buf_addc(b, ' ');
}

/* A comment line with the note above the line holding byte at, at that
 * line's indentation, in place of an earlier one with the prefix. */
static void note_above(edit *e, size_t at)
{
    const char *t = e->text;
    size_t ls = line_start(t, at), ie = ls;
    while (ie < e->len && (t[ie] == ' ' || t[ie] == '\t'))
        ie++;
    size_t from = ls, to = ls;
    bool replace = false;
    if (e->prefix && *e->prefix && ls > 0) {
        size_t ps = line_start(t, ls - 1), pe = ls - 1, c = ps, pn = strlen(e->prefix);
        if (pe > ps && t[pe - 1] == '\r') pe--;
        while (c < pe && (t[c] == ' ' || t[c] == '\t'))
            c++;
        if (c < pe && t[c] == '#') {
            c += 1 + (c + 1 < pe && t[c + 1] == ' ');
            replace = pe - c >= pn && !memcmp(t + c, e->prefix, pn);
        }
        if (replace) from = ps, to = pe;
    }
    buf *b = add_splice(e, from, to);
    buf_add(b, t + ls, ie - ls);
    buf_printf(b, "# %s%s", e->note, replace ? "" : e->eol);
}

/* path[d..] as block lines under keys at column col, inserted at at. */
static void block_lines(edit *e, const walk *w, size_t d, int col, size_t at)
{
    buf *b = add_splice(e, at, at);
    bool no_eol = at == e->len && e->len && e->text[e->len - 1] != '\n';
    if (no_eol) buf_adds(b, e->eol);
    int step = w->step ? w->step : 2;
    for (size_t j = d; w->path[j]; j++) {
        int ind = col + (int)(j - d) * step;
        bool leaf = !w->path[j + 1];
        if (leaf && e->note) {
            indent(b, ind);
            buf_printf(b, "# %s%s", e->note, e->eol);
        }
        indent(b, ind);
        yedit_quote(w->path[j], b);
        buf_addc(b, ':');
        if (leaf) buf_printf(b, " %s", e->value);
        if (!leaf || !no_eol) buf_adds(b, e->eol);
    }
}

/* path[d..] as flow pairs: `a: {b: value}`. */
static void flow_pairs(buf *b, const walk *w, size_t d, const char *value)
{
    size_t n = 0;
    for (size_t j = d; w->path[j]; j++, n++) {
        if (j > d) buf_addc(b, '{');
        yedit_quote(w->path[j], b);
        buf_adds(b, ": ");
    }
    buf_adds(b, value);
    while (--n)
        buf_addc(b, '}');
}

/* An empty value's mark sits right after its colon: a space goes first. */
static bool gap(const edit *e, const spot *sp)
{
    return sp->from == sp->to && (sp->from == 0 || e->text[sp->from - 1] != ' ');
}

static void plan(edit *e, const walk *w, const spot *sp)
{
    buf *b;
    switch (sp->kind) {
    case AT_SCALAR:
        if (e->note) note_above(e, sp->key);
        b = add_splice(e, sp->from, sp->to);
        buf_printf(b, "%s%s", gap(e, sp) ? " " : "", e->value);
        break;
    case AT_NULL:
        if (sp->flow) {
            if (e->note) note_above(e, sp->key);
            b = add_splice(e, sp->from, sp->to);
            buf_adds(b, gap(e, sp) ? " {" : "{");
            flow_pairs(b, w, sp->depth, e->value);
            buf_addc(b, '}');
        } else {
            if (sp->from != sp->to) add_splice(e, sp->from, sp->to); /* the ~ goes */
            block_lines(e, w, sp->depth, sp->col + (w->step ? w->step : 2),
                        line_after(e->text, e->len, sp->to));
        }
        break;
    case AT_MISSING:
        if (!sp->flow) {
            block_lines(e, w, sp->depth, sp->col, sp->at);
            break;
        }
        if (e->note) note_above(e, sp->at);
        b = add_splice(e, sp->at, sp->at);
        if (sp->pairs) buf_adds(b, ", ");
        flow_pairs(b, w, sp->depth, e->value);
        break;
    }
}

static void splice_out(edit *e, buf *out)
{
    for (size_t i = 1; i < e->n; i++) /* stable: a note before an insert at the same byte */
        for (size_t j = i; j > 0 && e->sp[j - 1].from > e->sp[j].from; j--) {
            splice t = e->sp[j];
            e->sp[j] = e->sp[j - 1];
            e->sp[j - 1] = t;
        }
    size_t pos = 0;
    for (size_t i = 0; i < e->n; i++) {
        buf_add(out, e->text + pos, e->sp[i].from - pos);
        buf_add(out, e->sp[i].text.p, e->sp[i].text.len);
        pos = e->sp[i].to;
        buf_release(&e->sp[i].text);
    }
    buf_add(out, e->text + pos, e->len - pos);
    e->n = 0;
}

/* --- yedit_set --------------------------------------------------------- */

static bool has_ctl(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return true;
    return false;
}

static int check_args(const char *const *path, const char *value, const char *note, char *err,
                      size_t errlen)
{
    if (!path || !path[0]) return errf_ret(-1, err, errlen, "no key to set (an empty path)");
    for (size_t i = 0; path[i]; i++)
        if (!*path[i] || has_ctl(path[i]))
            return errf_ret(-1, err, errlen,
                            "key %zu of the path is empty or holds a control character", i + 1);
    if (!value || has_ctl(value))
        return errf_ret(-1, err, errlen,
                        "the value for '%s' is missing or holds a line break; quote it as a string",
                        path[0]);
    if (note && has_ctl(note))
        return errf_ret(-1, err, errlen, "the note holds a line break; give one line");
    return 0;
}

/* Where path is, refused where it may not be changed in place. */
static int find_spot(const char *text, size_t len, const ydoc *doc, const char *const *path,
                     spot *sp, int *step, char *err, size_t errlen)
{
    walk w = {.text = text, .len = len, .path = path, .err = err, .errlen = errlen};
    if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) w.bom = w.at_byte = 3;
    yaml_parser_initialize(&w.p);
    yaml_parser_set_input_string(&w.p, (const unsigned char *)text, len);
    int rc = locate(&w, sp);
    yaml_parser_delete(&w.p);
    *step = w.step;
    if (rc < 0 || sp->kind != AT_MISSING || !tree_get(doc->root, path, sp->depth + 1)) return rc;
    buf name = BUF_INIT;
    path_name(&name, path, sp->depth + 1);
    if (sp->merge_line)
        errf(err, errlen,
             "'%s' is not written in its mapping (line %d) but comes from the merge key '<<' at "
             "line %d; "
             "edit the file by hand",
             name.p, sp->line, sp->merge_line);
    else
        errf(err, errlen,
             "'%s' is not written in its mapping (line %d) but comes from an alias; edit the file "
             "by hand",
             name.p, sp->line);
    buf_release(&name);
    return -1;
}

/* The edited text must load, hold want at path, and equal before elsewhere. */
static int verify(const ydoc *before, const buf *out, const char *const *path, const ynode *want,
                  const char *name, const char *value, char *err, size_t errlen)
{
    ydoc after;
    diags d = {0};
    int rc = yaml_load_string(&after, out->p, out->len, "", &d);
    if (rc < 0) {
        char what[512];
        snprintf(what, sizeof what,
                 "setting '%s' to %s would leave invalid YAML; the file is left as it was", name,
                 value);
        load_err(&d, what, err, errlen);
    } else if (!scalar_eq(tree_get(after.root, path, SIZE_MAX), want)) {
        rc = errf_ret(-1, err, errlen,
                      "setting '%s' to %s would not read back as that value (the file is left "
                      "as it was); quote the value as a string, or edit the file by hand",
                      name, value);
    } else if (!same_but(before->root, after.root, path, want)) {
        rc = errf_ret(-1, err, errlen,
                      "setting '%s' would change more than its value (a gpumod bug); the file is "
                      "left as it was",
                      name);
    }
    diags_release(&d);
    yaml_release(&after);
    return rc;
}

static int set_in(const char *text, size_t len, const ydoc *doc, const char *const *path, edit *e,
                  buf *out, const char *name, char *err, size_t errlen)
{
    spot sp;
    walk w = {.path = path};
    if (find_spot(text, len, doc, path, &sp, &w.step, err, errlen) < 0) return -1;
    ydoc vd;
    if (parse_value(&vd, e->value, sp.flow, name, err, errlen) < 0) {
        yaml_release(&vd);
        return -1;
    }
    plan(e, &w, &sp);
    splice_out(e, out);
    int rc = verify(doc, out, path, ymap_get(vd.root, "x"), name, e->value, err, errlen);
    yaml_release(&vd);
    return rc;
}

int yedit_set(const char *text, size_t len, const char *const *path, const char *value,
              const char *note, const char *note_prefix, buf *out, char *err, size_t errlen)
{
    buf_clear(out);
    if (check_args(path, value, note, err, errlen) < 0) return -1;
    if (len >= 2 &&
        ((text[0] == '\xff' && text[1] == '\xfe') || (text[0] == '\xfe' && text[1] == '\xff')))
        return errf_ret(-1, err, errlen, "the file is UTF-16; only UTF-8 files are edited");
    for (const char *cr = memchr(text, '\r', len); cr;
         cr = memchr(cr + 1, '\r', len - (size_t)(cr + 1 - text)))
        if (cr + 1 == text + len || cr[1] != '\n')
            return errf_ret(-1, err, errlen,
                            "the file has a line ending in a bare CR (line ends LF or CRLF are "
                            "edited); convert it first");
    buf name = BUF_INIT;
    path_name(&name, path, SIZE_MAX);
    ydoc doc;
    diags d = {0};
    int rc = yaml_load_string(&doc, text, len, "", &d);
    if (rc < 0) {
        load_err(&d, "the file is not valid YAML; fix it first", err, errlen);
    } else if (doc.root && doc.root->kind != Y_MAP && !yscalar_is_null(doc.root)) {
        rc = errf_ret(-1, err, errlen,
                      "the document is %s (line %d), not a mapping of keys; edit the file by hand",
                      doc.root->kind == Y_SEQ ? "a list" : "a scalar", doc.root->line);
    } else {
        const char *nl = memchr(text, '\n', len);
        edit e = {.text = text, .len = len, .value = value, .note = note, .prefix = note_prefix};
        e.eol = nl && nl > text && nl[-1] == '\r' ? "\r\n" : "\n";
        rc = set_in(text, len, &doc, path, &e, out, name.p, err, errlen);
    }
    if (rc < 0) buf_clear(out);
    diags_release(&d);
    yaml_release(&doc);
    buf_release(&name);
    return rc;
}

int yedit_apply(const char *text, size_t len, const yedit_op *ops, size_t nops, buf *out, char *err,
                size_t errlen)
{
    buf cur = BUF_INIT;
    buf_clear(out);
    buf_add(out, text, len);
    for (size_t i = 0; i < nops; i++) {
        buf_clear(&cur);
        buf_add(&cur, out->p, out->len);
        if (yedit_set(cur.p, cur.len, ops[i].path, ops[i].value, ops[i].note, ops[i].note_prefix,
                      out, err, errlen) < 0) {
            buf_release(&cur);
            return -1;
        }
    }
    buf_release(&cur);
    return 0;
}

/* --- the diff ---------------------------------------------------------- */

#define DIFF_CONTEXT 3
#define DIFF_MAX_D 1000        /* edits Myers looks for before it settles for one block */
#define DIFF_MAX_WORK 20000000 /* and steps: a 4 MiB file of short lines stays quick */

typedef struct lines {
    const char **p;
    size_t *n;
    size_t count;
} lines;

static void split_lines(const char *t, size_t len, lines *l)
{
    size_t cap = 0;
    l->p = NULL;
    l->n = NULL;
    l->count = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(t + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - t) + 1 : len;
        if (l->count == cap) {
            cap = cap ? cap * 2 : 64;
            l->p = xrealloc(l->p, cap * sizeof *l->p);
            l->n = xrealloc(l->n, cap * sizeof *l->n);
        }
        l->p[l->count] = t + at;
        l->n[l->count++] = end - at;
        at = end;
    }
}

static bool line_eq(const lines *a, size_t i, const lines *b, size_t j)
{
    return a->n[i] == b->n[j] && !memcmp(a->p[i], b->p[j], a->n[i]);
}

/* x on diagonal k after d edits, from the frontier of d - 1 (prev, indexed
 * k + d - 1), in a grid of n x m; -1: off the grid.  *down: the edit was
 * an insertion. */
static long step_x(const long *prev, long d, long k, long n, long m, bool *down)
{
    long dn = k < d ? prev[k + 1 + d - 1] : -1;
    if (dn >= 0 && dn - k > m) dn = -1;
    long rt = k > -d ? prev[k - 1 + d - 1] : -1;
    if (rt >= 0 && ++rt > n) rt = -1;
    *down = dn >= 0 && dn >= rt;
    return *down ? dn : rt;
}

/* Myers' greedy O(ND) diff of a[ao, ao+n) and b[bo, bo+m): the lines of a
 * it deletes set in del, those of b it inserts in ins.  false past
 * DIFF_MAX_D edits or DIFF_MAX_WORK steps. */
static bool myers(const lines *a, size_t ao, long n, const lines *b, size_t bo, long m, bool *del,
                  bool *ins)
{
    long maxd = n + m < DIFF_MAX_D ? n + m : DIFF_MAX_D, found = -1, work = 0;
    long **v = xcalloc((size_t)maxd + 1, sizeof *v);
    for (long d = 0; d <= maxd && found < 0 && work < DIFF_MAX_WORK; d++) {
        v[d] = xmalloc((size_t)(2 * d + 1) * sizeof **v);
        for (long k = -d; k <= d; k += 2, work++) {
            bool down;
            long x = d ? step_x(v[d - 1], d, k, n, m, &down) : 0, y = x - k;
            if (x >= 0)
                while (x < n && y < m && line_eq(a, ao + (size_t)x, b, bo + (size_t)y))
                    x++, y++, work++;
            v[d][k + d] = x;
            if (x >= n && y >= m) {
                found = d;
                break;
            }
        }
    }
    for (long d = found, x = n, y = m; d > 0; d--) {
        bool down;
        long k = x - y;
        step_x(v[d - 1], d, k, n, m, &down);
        long pk = down ? k + 1 : k - 1, px = v[d - 1][pk + d - 1], py = px - pk;
        if (down)
            ins[bo + (size_t)py] = true;
        else
            del[ao + (size_t)px] = true;
        x = px;
        y = py;
    }
    for (long d = 0; d <= maxd; d++)
        free(v[d]);
    free(v);
    return found >= 0;
}

static void emit_range(buf *out, size_t start, size_t count)
{
    if (count == 1)
        buf_printf(out, "%zu", start + 1);
    else
        buf_printf(out, "%zu,%zu", count ? start + 1 : start, count);
}

static void emit_line(buf *out, char tag, const lines *l, size_t i)
{
    buf_addc(out, tag);
    buf_add(out, l->p[i], l->n[i]);
    if (l->p[i][l->n[i] - 1] != '\n') buf_adds(out, "\n\\ No newline at end of file\n");
}

typedef struct dscript {
    lines a, b;
    bool *del, *ins;
} dscript;

/* One hunk from the change at (i, j); returns its end in *i, *j. */
static void emit_hunk(buf *out, const dscript *s, size_t *i, size_t *j)
{
    size_t na = s->a.count, nb = s->b.count, ea = *i, eb = *j, run, tail;
    size_t lead = *i < DIFF_CONTEXT ? *i : DIFF_CONTEXT, ha = *i - lead, hb = *j - lead;
    for (;;) {
        while (ea < na && s->del[ea])
            ea++;
        while (eb < nb && s->ins[eb])
            eb++;
        for (run = 0; ea + run < na && eb + run < nb && !s->del[ea + run] && !s->ins[eb + run];)
            run++;
        bool more = ea + run < na || eb + run < nb;
        if (!more || run > 2 * DIFF_CONTEXT) break;
        ea += run;
        eb += run;
    }
    tail = run < DIFF_CONTEXT ? run : DIFF_CONTEXT;
    buf_adds(out, "@@ -");
    emit_range(out, ha, ea + tail - ha);
    buf_adds(out, " +");
    emit_range(out, hb, eb + tail - hb);
    buf_adds(out, " @@\n");
    for (size_t x = ha, y = hb; x < ea + tail || y < eb + tail;) {
        if (x < ea + tail && s->del[x])
            emit_line(out, '-', &s->a, x++);
        else if (y < eb + tail && s->ins[y])
            emit_line(out, '+', &s->b, y++);
        else
            emit_line(out, ' ', &s->a, x++), y++;
    }
    *i = ea + run;
    *j = eb + run;
}

void yedit_diff(const char *a, size_t alen, const char *b, size_t blen, const char *name_a,
                const char *name_b, buf *out)
{
    dscript s;
    split_lines(a, alen, &s.a);
    split_lines(b, blen, &s.b);
    size_t na = s.a.count, nb = s.b.count, pre = 0, suf = 0;
    while (pre < na && pre < nb && line_eq(&s.a, pre, &s.b, pre))
        pre++;
    while (suf < na - pre && suf < nb - pre && line_eq(&s.a, na - 1 - suf, &s.b, nb - 1 - suf))
        suf++;
    s.del = xcalloc(na + 1, sizeof *s.del);
    s.ins = xcalloc(nb + 1, sizeof *s.ins);
    long n = (long)(na - pre - suf), m = (long)(nb - pre - suf);
    if (!myers(&s.a, pre, n, &s.b, pre, m, s.del, s.ins)) {
        memset(s.del, 0, na * sizeof *s.del);
        memset(s.ins, 0, nb * sizeof *s.ins);
        for (size_t x = pre; x < na - suf; x++)
            s.del[x] = true;
        for (size_t y = pre; y < nb - suf; y++)
            s.ins[y] = true;
    }
    for (size_t i = 0, j = 0, first = 1;;) {
        while (i < na && j < nb && !s.del[i] && !s.ins[j])
            i++, j++;
        if (i >= na && j >= nb) break;
        if (first) buf_printf(out, "--- %s\n+++ %s\n", name_a, name_b);
        first = 0;
        emit_hunk(out, &s, &i, &j);
    }
    free(s.del);
    free(s.ins);
    free(s.a.p);
    free(s.a.n);
    free(s.b.p);
    free(s.b.n);
}
