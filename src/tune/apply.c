/* apply.c (tune) - --apply: the confirmed winner written into the
 * preset's file by the YAML nodes' marks (config/yedit.h), so that its
 * comments and order stay; the diff shown first and the write asked for
 * (--yes answers it); each changed line gets a note of where its value
 * came from. */
#include "tune/tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config/yaml.h"
#include "config/yedit.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/slurp.h"

#define NOTE_PREFIX "gpumod tune"

static const tune_row *final_row(const tune_result *res)
{
    for (size_t i = 0; i < res->n; i++)
        if (res->rows[i].outcome == TO_FINAL) return &res->rows[i];
    return NULL;
}

/* Where key lives: the top-level context_size when the file has it there,
 * else unit_vars. */
static void path_of(const ydoc *doc, const tune_dim *d, const char **path)
{
    if (d->env) {
        path[0] = "env";
        path[1] = d->key;
    } else if (doc->root && ymap_get(doc->root, d->key)) {
        path[0] = d->key;
        path[1] = NULL;
    } else {
        path[0] = "unit_vars";
        path[1] = d->key;
    }
    path[2] = NULL;
}

/* the edited text of file into out; 0, or -1 with err */
static int edit(const tune_opts *o, const tune_result *res, const tune_row *fin, const char *text, size_t len,
                const char *file, buf *out, char *err, size_t errlen)
{
    ydoc doc = {0};
    diags d = {0};
    int rc = yaml_load_string(&doc, text, len, file, &d);
    diags_release(&d);
    if (rc) {
        snprintf(err, errlen, "'%s' does not parse as YAML any more", file);
        yaml_release(&doc);
        return -1;
    }
    char day[16];
    time_t now = time(NULL);
    strftime(day, sizeof day, "%Y-%m-%d", localtime(&now));
    buf cur = BUF_INIT;
    buf_add(&cur, text, len);
    for (size_t i = 0; i < o->space.n && !rc; i++) {
        if (res->winner.idx[i] < 0) continue;
        const tune_dim *dm = &o->space.dims[i];
        const char *path[3];
        path_of(&doc, dm, path);
        const char *v = dm->values.v[res->winner.idx[i]];
        buf qv = BUF_INIT;
        if (dm->env)
            yedit_quote(v, &qv);
        else
            buf_adds(&qv, v);
        char *val = buf_detach(&qv);
        char *note = xasprintf(NOTE_PREFIX " %s: %s%s=%s, %+.2f %% %s [%+.2f, %+.2f] over %zu pairs", day,
                               dm->env ? "env." : "", dm->key, v, fin->d.delta_pct, tune_obj_names[o->obj],
                               fin->d.lo_pct, fin->d.hi_pct, fin->d.n);
        buf next = BUF_INIT;
        rc = yedit_set(cur.p, cur.len, path, val, note, NOTE_PREFIX, &next, err, errlen);
        free(val);
        free(note);
        if (!rc) {
            buf_release(&cur);
            cur = next;
        } else {
            buf_release(&next);
        }
    }
    yaml_release(&doc);
    if (!rc) *out = cur;
    else buf_release(&cur);
    return rc;
}

static bool ask(const char *file)
{
    if (!isatty(STDIN_FILENO)) return false;
    printf("write these changes to %s? [y/N] ", file);
    fflush(stdout);
    char line[16];
    return fgets(line, sizeof line, stdin) && (line[0] == 'y' || line[0] == 'Y');
}

static int write_atomic(const char *file, const buf *b, char *err, size_t errlen)
{
    char *tmp = xasprintf("%s.gpumod-tune.tmp", file);
    FILE *f = fopen(tmp, "w");
    int rc = -1;
    if (!f) {
        snprintf(err, errlen, "cannot write '%s': %m", tmp);
    } else if (fwrite(b->p, 1, b->len, f) != b->len || fflush(f) || fsync(fileno(f))) {
        snprintf(err, errlen, "cannot write '%s': %m", tmp);
        fclose(f);
        unlink(tmp);
    } else if (fclose(f) || rename(tmp, file)) {
        snprintf(err, errlen, "cannot replace '%s': %m", file);
        unlink(tmp);
    } else {
        rc = 0;
    }
    free(tmp);
    return rc;
}

int tune_apply(const tune_opts *o, const tune_result *res, const char *file)
{
    const tune_row *fin = final_row(res);
    if (!res->has_winner || !fin || !res->confirmed) {
        fprintf(stderr, "gpumod tune: --apply: nothing to write: %s\n",
                !fin ? "no variant won" : "the winner was not confirmed by its re-verification");
        return EXIT_OK;
    }
    if (!file) {
        fprintf(stderr, "gpumod tune: --apply: the preset's file is not known\n");
        return EXIT_REFUSED;
    }
    buf text = BUF_INIT, out = BUF_INIT, diff = BUF_INIT;
    char err[1024];
    int rc = EXIT_OK;
    if (slurp_text(file, 4 << 20, &text, err, sizeof err)) {
        fprintf(stderr, "gpumod tune: --apply: %s\n", err);
        rc = EXIT_REFUSED;
    } else if (edit(o, res, fin, text.p, text.len, file, &out, err, sizeof err)) {
        fprintf(stderr, "gpumod tune: --apply: %s (nothing written)\n", err);
        rc = EXIT_REFUSED;
    } else {
        yedit_diff(text.p, text.len, out.p, out.len, file, file, &diff);
        fputs(diff.p ? diff.p : "", stdout);
        if (!o->yes && !ask(file)) {
            fprintf(stderr, "gpumod tune: --apply: nothing written (confirm on a terminal, or give --yes)\n");
            rc = EXIT_REFUSED;
        } else if (write_atomic(file, &out, err, sizeof err)) {
            fprintf(stderr, "gpumod tune: --apply: %s\n", err);
            rc = EXIT_REFUSED;
        } else {
            printf("wrote %s; 'gpumod reload' makes the daemon read it\n", file);
        }
    }
    buf_release(&text);
    buf_release(&out);
    buf_release(&diff);
    return rc;
}
