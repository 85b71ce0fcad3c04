/* tfile.c (tune) - a `tune:` section read into the options (tfile.h). */
#include "tune/tfile.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/yaml.h"
#include "util/buf.h"
#include "util/exitcode.h"

int tune_file_option(tune_opts *o, const char *opt, const char *v);

static int ferr(const char *path, const ynode *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int ferr(const char *path, const ynode *n, const char *fmt, ...)
{
    fprintf(stderr, "gpumod tune: %s:%d:%d: ", path, n ? n->line : 0, n ? n->col : 0);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return EXIT_USAGE;
}

/* params / env: KEY: [v1, v2] (or a scalar "v1,v2") as "KEY=v1,v2" */
static int menu(tune_opts *o, const char *path, const ynode *m, bool env)
{
    if (m->kind != Y_MAP) return ferr(path, m, "%s: expected a mapping of KEY: [V1, V2, ...]", env ? "env" : "params");
    for (size_t i = 0; i < m->npairs; i++) {
        const ynode *k = m->pairs[i].key, *v = m->pairs[i].val;
        buf arg = BUF_INIT;
        buf_printf(&arg, "%s=", k->s);
        if (v->kind == Y_SEQ) {
            for (size_t j = 0; j < v->n; j++) {
                if (v->items[j]->kind != Y_SCALAR) {
                    buf_release(&arg);
                    return ferr(path, v->items[j], "%s: each value must be a scalar", k->s);
                }
                buf_printf(&arg, "%s%s", j ? "," : "", v->items[j]->s);
            }
        } else if (v->kind == Y_SCALAR) {
            buf_adds(&arg, v->s);
        } else {
            buf_release(&arg);
            return ferr(path, v, "%s: expected a list of values", k->s);
        }
        int rc = tune_file_option(o, env ? "--env" : "--param", arg.p);
        buf_release(&arg);
        if (rc) return ferr(path, k, "%s: see the error above", k->s);
    }
    return 0;
}

int tfile_read(tune_opts *o, const char *path)
{
    ydoc doc = {0};
    diags d = {0};
    int rc = 0;
    if (yaml_load_file(&doc, path, path, &d) != 0) {
        for (size_t i = 0; i < d.n; i++)
            fprintf(stderr, "gpumod tune: %s:%d:%d: %s\n", path, d.v[i].pos.line, d.v[i].pos.col, d.v[i].msg);
        rc = EXIT_USAGE;
    }
    const ynode *t = !rc && doc.root && doc.root->kind == Y_MAP ? ymap_get(doc.root, "tune") : NULL;
    if (!rc && (!t || t->kind != Y_MAP)) rc = ferr(path, t ? t : doc.root, "expected a mapping `tune:` at the top");
    for (size_t i = 0; !rc && i < t->npairs; i++) {
        const ynode *k = t->pairs[i].key, *v = t->pairs[i].val;
        if (!strcmp(k->s, "params") || !strcmp(k->s, "env")) {
            rc = menu(o, path, v, k->s[0] == 'e');
            continue;
        }
        if (v->kind != Y_SCALAR) {
            rc = ferr(path, v, "tune.%s: expected a scalar", k->s);
            break;
        }
        buf opt = BUF_INIT;
        buf_adds(&opt, "--");
        for (const char *p = k->s; *p; p++) buf_addc(&opt, *p == '_' ? '-' : *p);
        int r = tune_file_option(o, opt.p, v->s);
        if (r == 1)
            rc = ferr(path, k, "tune.%s: not an option of gpumod tune (see gpumod tune --help)", k->s);
        else if (r)
            rc = ferr(path, v, "tune.%s: see the error above", k->s);
        buf_release(&opt);
    }
    yaml_release(&doc);
    diags_release(&d);
    return rc;
}
