/* install.c - gpumod's files in a unit directory (see install.h).
 *
 * The diff is a plain LCS over lines: unit files are tens of lines, so the
 * quadratic table is a few kilobytes; past 2000 lines a side the whole
 * file shows as replaced rather than spending memory on a table. */
#include "systemd/install.h"

#include "core/unit.h"
#include "util/errf.h"
#include "util/slurp.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *install_unit_dir(bool user, const char *dir, char *err, size_t errlen)
{
    if (dir && *dir) return xstrdup(dir);
    const char *env = getenv("GPUMOD_UNIT_DIR");
    if (env && *env) return xstrdup(env);
    if (!user) return xstrdup("/etc/systemd/system");
    const char *xdg = getenv("XDG_CONFIG_HOME");
    if (xdg && xdg[0] == '/') return xasprintf("%s/systemd/user", xdg);
    const char *home = getenv("HOME");
    if (home && home[0] == '/') return xasprintf("%s/.config/systemd/user", home);
    errf(err, errlen, "no user unit directory: neither XDG_CONFIG_HOME nor HOME is an absolute path (give --unit-dir)");
    return NULL;
}

/* ---- line diff */

typedef struct lines {
    const char **p;
    size_t *len;
    size_t n;
    bool nonl; /* the last line has no final newline */
} lines;

static void split(lines *l, const char *s)
{
    size_t cap = 16;
    l->p = xmalloc(cap * sizeof *l->p);
    l->len = xmalloc(cap * sizeof *l->len);
    l->n = 0;
    l->nonl = false;
    while (s && *s) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        if (l->n == cap) {
            cap *= 2;
            l->p = xrealloc(l->p, cap * sizeof *l->p);
            l->len = xrealloc(l->len, cap * sizeof *l->len);
        }
        l->p[l->n] = s;
        l->len[l->n++] = n;
        if (!nl) l->nonl = true;
        s += n + (nl ? 1 : 0);
    }
}

/* the unterminated last line of a side */
static bool unterminated(const lines *l, size_t i)
{
    return l->nonl && i + 1 == l->n;
}

/* A line and its newline: "b" at the end without one differs from "b\n",
 * as in diff -u (which marks it "\ No newline at end of file"). */
static bool same(const lines *a, size_t i, const lines *b, size_t j)
{
    return a->len[i] == b->len[j] && unterminated(a, i) == unterminated(b, j) && !memcmp(a->p[i], b->p[j], a->len[i]);
}

typedef struct op {
    char k; /* ' ' '-' '+' */
    size_t line; /* into a for ' ' and '-', b for '+' */
    size_t apos, bpos; /* lines of a and b before this op */
} op;

#define CTX 3

void install_diff(buf *out, const char *a_label, const char *a, const char *b_label, const char *b)
{
    lines A, B;
    split(&A, a);
    split(&B, b);
    op *ops = xmalloc((A.n + B.n + 1) * sizeof *ops);
    size_t nops = 0;
    if (A.n <= 2000 && B.n <= 2000) {
        /* L[i][j]: LCS length of A[i..] and B[j..] */
        size_t w = B.n + 1;
        uint32_t *L = xcalloc((A.n + 1) * w, sizeof *L);
        for (size_t i = A.n; i-- > 0;)
            for (size_t j = B.n; j-- > 0;)
                L[i * w + j] = same(&A, i, &B, j) ? L[(i + 1) * w + j + 1] + 1
                               : L[(i + 1) * w + j] >= L[i * w + j + 1] ? L[(i + 1) * w + j]
                                                                         : L[i * w + j + 1];
        size_t i = 0, j = 0;
        while (i < A.n || j < B.n) {
            if (i < A.n && j < B.n && same(&A, i, &B, j)) {
                ops[nops++] = (op){' ', i, i, j};
                i++, j++;
            } else if (i < A.n && (j == B.n || L[(i + 1) * w + j] >= L[i * w + j + 1])) {
                ops[nops++] = (op){'-', i, i, j}; /* deletions first, as diff -u */
                i++;
            } else {
                ops[nops++] = (op){'+', j, i, j};
                j++;
            }
        }
        free(L);
    } else {
        for (size_t i = 0; i < A.n; i++) ops[nops++] = (op){'-', i, i, 0};
        for (size_t j = 0; j < B.n; j++) ops[nops++] = (op){'+', j, A.n, j};
    }
    bool header = false;
    for (size_t k = 0; k < nops;) {
        if (ops[k].k == ' ') {
            k++;
            continue;
        }
        /* a hunk: from CTX before this change to CTX after the last change
         * that is no more than 2*CTX unchanged lines from the one before */
        size_t start = k > CTX ? k - CTX : 0, last = k;
        for (size_t m = k + 1; m < nops && m <= last + 2 * CTX + 1; m++)
            if (ops[m].k != ' ') last = m;
        size_t end = last + 1 + CTX < nops ? last + 1 + CTX : nops;
        size_t ac = 0, bc = 0;
        for (size_t m = start; m < end; m++) {
            if (ops[m].k != '+') ac++;
            if (ops[m].k != '-') bc++;
        }
        if (!header) {
            buf_printf(out, "--- %s\n+++ %s\n", a_label, b_label);
            header = true;
        }
        buf_printf(out, "@@ -%zu,%zu +%zu,%zu @@\n", ac ? ops[start].apos + 1 : ops[start].apos, ac,
                   bc ? ops[start].bpos + 1 : ops[start].bpos, bc);
        for (size_t m = start; m < end; m++) {
            const lines *src = ops[m].k == '+' ? &B : &A;
            buf_addc(out, ops[m].k);
            buf_add(out, src->p[ops[m].line], src->len[ops[m].line]);
            buf_addc(out, '\n');
            if (unterminated(src, ops[m].line)) buf_adds(out, "\\ No newline at end of file\n");
        }
        k = end;
    }
    free(ops);
    free(A.p);
    free(A.len);
    free(B.p);
    free(B.len);
}

/* ---- files */

static int read_small(const char *path, buf *out, bool *missing, char *err, size_t errlen)
{
    *missing = false;
    char why[128];
    int fd = slurp_open(path, why, sizeof why); /* a FIFO must not block the install */
    if (fd < 0) {
        if (errno == ENOENT) {
            *missing = true;
            return 0;
        }
        errf(err, errlen, "cannot read '%s': %s", path, why);
        return -1;
    }
    char tmp[8192];
    for (;;) {
        ssize_t r = read(fd, tmp, sizeof tmp);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            errf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        if (r == 0) break;
        buf_add(out, tmp, (size_t)r);
        if (out->len > (1u << 20)) {
            errf(err, errlen, "'%s' is larger than 1 MiB: not a unit file gpumod wrote", path);
            close(fd);
            return -1;
        }
    }
    close(fd);
    return 0;
}

static int mkdirs(const char *dir, char *err, size_t errlen)
{
    char *d = xstrdup(dir);
    for (char *p = d + 1;; p++) {
        bool last = !*p;
        if (*p == '/' || last) {
            *p = '\0';
            if (mkdir(d, 0755) && errno != EEXIST) {
                errf(err, errlen, "cannot create directory '%s': %s", d, strerror(errno));
                free(d);
                return -1;
            }
            if (last) break;
            *p = '/';
        }
    }
    free(d);
    return 0;
}

int install_write_atomic(const char *path, const char *text, char *err, size_t errlen)
{
    char *dcopy = xstrdup(path), *bcopy = xstrdup(path);
    char *dir = dirname(dcopy), *base = basename(bcopy);
    char *tmp = xasprintf("%s/.%s.gpumod-XXXXXX", dir, base);
    int rc = -1, fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        errf(err, errlen, "cannot create a temporary file in '%s': %s", dir, strerror(errno));
        goto out;
    }
    size_t n = strlen(text), off = 0;
    while (off < n) {
        ssize_t w = write(fd, text + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
            errf(err, errlen, "cannot write '%s': %s", tmp, strerror(errno));
            goto fail;
        }
        off += (size_t)w;
    }
    if (fchmod(fd, 0644) || fsync(fd)) {
        errf(err, errlen, "cannot sync '%s': %s", tmp, strerror(errno));
        goto fail;
    }
    if (close(fd)) {
        fd = -1;
        errf(err, errlen, "cannot write '%s': %s", tmp, strerror(errno));
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path)) {
        errf(err, errlen, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
        goto fail;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) { /* the rename itself survives a crash */
        fsync(dfd);
        close(dfd);
    }
    rc = 0;
    goto out;
fail:
    if (fd >= 0) close(fd);
    unlink(tmp);
out:
    free(tmp);
    free(dcopy);
    free(bcopy);
    return rc;
}

/* A link in a unit directory: a rename would replace the link and leave
 * its target as it was; a link to /dev/null is a masked unit. */
static int refuse_link(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) || !S_ISLNK(st.st_mode)) return 0;
    char target[4096];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n < 0) {
        errf(err, errlen, "cannot read the link '%s': %s", path, strerror(errno));
        return -1;
    }
    target[n] = '\0';
    if (!strcmp(target, "/dev/null")) {
        char *b = xstrdup(path), *unit = basename(b);
        errf(err, errlen, "'%s' is masked (a link to /dev/null): not replaced, also not with --force (systemctl "
                          "unmask %s first)", path, unit);
        free(b);
        return -1;
    }
    errf(err, errlen, "'%s' is a symlink to '%s': not replaced, also not with --force (remove the link, or install "
                      "into the directory of its target with --unit-dir)", path, target);
    return -1;
}

int install_file(const char *path, const char *text, bool apply, bool force, install_change *chg, buf *diff,
                 char *err, size_t errlen)
{
    buf old = BUF_INIT;
    bool missing;
    if (refuse_link(path, err, errlen)) return -1;
    if (read_small(path, &old, &missing, err, errlen)) {
        buf_release(&old);
        return -1;
    }
    if (missing) {
        *chg = INSTALL_NEW;
        install_diff(diff, "/dev/null", "", path, text);
    } else if (old.len == strlen(text) && !memcmp(old.p, text, old.len)) {
        *chg = INSTALL_SAME;
    } else {
        if (!force && !unit_is_ours(old.p)) {
            errf(err, errlen, "'%s' exists and gpumod did not write it (no '%s...' first line): not replaced without "
                              "--force", path, UNIT_MARKER_PREFIX);
            buf_release(&old);
            return -1;
        }
        *chg = INSTALL_CHANGED;
        install_diff(diff, path, old.p, path, text);
    }
    buf_release(&old);
    if (!apply || *chg == INSTALL_SAME) return 0;
    char *dcopy = xstrdup(path);
    int rc = mkdirs(dirname(dcopy), err, errlen);
    free(dcopy);
    if (rc) return -1;
    return install_write_atomic(path, text, err, errlen);
}
