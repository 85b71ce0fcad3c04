/* diag.c - collected configuration diagnostics and the small ordered
 * string map used for env and unit_vars.  Diagnostics are gathered, never
 * printed here: diags_text renders them, the caller decides where. */
#include "config/config.h"
#include "util/buf.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void diags_add(diags *d, diag_level lv, srcpos pos, const char *fmt, ...)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 16;
        d->v = xrealloc(d->v, d->cap * sizeof *d->v);
    }
    buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    d->v[d->n].level = lv;
    d->v[d->n].pos = pos;
    d->v[d->n].msg = buf_detach(&b);
    d->n++;
    if (lv == DIAG_ERROR)
        d->errors++;
    else
        d->warnings++;
}

void diags_release(diags *d)
{
    for (size_t i = 0; i < d->n; i++) free(d->v[i].msg);
    free(d->v);
    memset(d, 0, sizeof *d);
}

static int pos_cmp(const void *a, const void *b)
{
    const diag *x = a, *y = b;
    const char *fx = x->pos.file ? x->pos.file : "", *fy = y->pos.file ? y->pos.file : "";
    int c = strcmp(fx, fy);
    if (c) return c;
    if (x->pos.line != y->pos.line) return x->pos.line < y->pos.line ? -1 : 1;
    if (x->pos.col != y->pos.col) return x->pos.col < y->pos.col ? -1 : 1;
    return 0;
}

void diags_sort(diags *d)
{
    /* stable: diagnostics at one position keep the order they were found */
    size_t n = d->n;
    if (n < 2) return;
    typedef struct {
        diag d;
        size_t i;
    } tagged;
    tagged *t = xmalloc(n * sizeof *t);
    for (size_t i = 0; i < n; i++) t[i].d = d->v[i], t[i].i = i;
    for (size_t i = 1; i < n; i++) { /* insertion sort: stable, n is small */
        tagged x = t[i];
        size_t j = i;
        while (j > 0) {
            int c = pos_cmp(&t[j - 1].d, &x.d);
            if (c < 0 || (c == 0 && t[j - 1].i < x.i)) break;
            t[j] = t[j - 1];
            j--;
        }
        t[j] = x;
    }
    for (size_t i = 0; i < n; i++) d->v[i] = t[i].d;
    free(t);
}

void kvlist_set(kvlist *l, const char *key, const char *val, srcpos pos)
{
    for (size_t i = 0; i < l->n; i++) {
        if (!strcmp(l->v[i].key, key)) {
            free(l->v[i].val);
            l->v[i].val = xstrdup(val);
            l->v[i].pos = pos;
            return;
        }
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n].key = xstrdup(key);
    l->v[l->n].val = xstrdup(val);
    l->v[l->n].pos = pos;
    l->n++;
}

const kvpair *kvlist_get(const kvlist *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].key, key)) return &l->v[i];
    return NULL;
}

void kvlist_release(kvlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].key);
        free(l->v[i].val);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}

void diags_text(buf *out, const diags *ds, const char *only_file)
{
    for (size_t i = 0; i < ds->n; i++) {
        const diag *d = &ds->v[i];
        if (only_file && (!d->pos.file || strcmp(d->pos.file, only_file))) continue;
        if (d->pos.file && d->pos.line && d->pos.col)
            buf_printf(out, "%s:%d:%d: ", d->pos.file, d->pos.line, d->pos.col);
        else if (d->pos.file && d->pos.line) /* a line without columns (a JSONL line) */
            buf_printf(out, "%s:%d: ", d->pos.file, d->pos.line);
        else if (d->pos.file)
            buf_printf(out, "%s: ", d->pos.file);
        buf_printf(out, "%s: %s\n", d->level == DIAG_ERROR ? "error" : "warning", d->msg);
    }
}
