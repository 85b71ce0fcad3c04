/* flags.c - flag discovery from a binary's --help.
 *
 * The help text is the ground truth for the binary that will actually run:
 * llama.cpp renames and removes flags between builds, so a table compiled
 * into gpumod would be wrong for someone's build.  Running `--help` costs
 * up to seconds (llama-server initialises its backends first), hence the
 * cache: one file per (absolute path, size, mtime, help args) under the
 * caller's cache dir, written to a temporary name and renamed into place,
 * with the key repeated in the file so a hash collision or a truncated
 * file reads as a miss, never as another binary's flags.
 *
 * The parser reads the option column only.  That column looks the same in
 * llama.cpp's own help, Python's argparse (vLLM) and click (uvicorn):
 * option lines start with '-' after a small indent, descriptions start
 * after a gap of two or more blanks or on deeper-indented lines, and flag
 * names mentioned inside a description ("use --spec-draft-n-max") are not
 * options. */
#include "drivers/flags.h"
#include "util/run.h"
#include "util/slurp.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define HELP_MAX ((size_t)4 << 20)
#define HELP_TIMEOUT_MS 10000
#define OPTION_INDENT_MAX 6
#define SEPARATORS " \t,/=" /* "=": "--foo=BAR" in some helps */
#define CACHE_MAGIC "gpumod-help-cache 1\n"

static const char *const default_help_args[] = {"--help", NULL};

static bool is_number(const char *s)
{
    if (!*s) return false;
    char *end;
    strtod(s, &end);
    return *end == '\0';
}

static bool is_flag_word(const char *w, size_t n)
{
    size_t d = 0;
    while (d < n && d < 2 && w[d] == '-')
        d++;
    if (d == 0 || d == n || !isalnum((unsigned char)w[d])) return false;
    for (size_t i = d; i < n; i++)
        if (!(isalnum((unsigned char)w[i]) || w[i] == '-' || w[i] == '_' || w[i] == '.'))
            return false;
    char tmp[64];
    if (n < sizeof tmp) {
        memcpy(tmp, w, n);
        tmp[n] = '\0';
        if (is_number(tmp)) return false;
    }
    return true;
}

/* End of the option column: the first run of two blanks (or a tab) whose
 * preceding non-blank is not a comma ("-h,    --help" stays one column). */
static size_t option_column_end(const char *l, size_t start, size_t len)
{
    char prev = 0;
    for (size_t i = start; i < len; i++) {
        bool gap = l[i] == '\t' || (l[i] == ' ' && i + 1 < len && l[i + 1] == ' ');
        if (gap && prev != ',') return i;
        if (l[i] != ' ' && l[i] != '\t') prev = l[i];
    }
    return len;
}

static bool has_ci(const char *s, size_t n, const char *needle)
{
    size_t nl = strlen(needle);
    for (size_t i = 0; i + nl <= n; i++)
        if (!strncasecmp(s + i, needle, nl)) return true;
    return false;
}

static void commit(flagset *fs, strv *entry, bool removed)
{
    strv *to = removed ? &fs->removed : &fs->known;
    for (size_t i = 0; i < entry->n; i++)
        if (strv_find(to, entry->v[i]) < 0) strv_push(to, entry->v[i]);
    strv_release(entry);
}

/* "-x..." or "--x..." within the option indent; not "-----" rulers. */
static bool option_line(const char *l, size_t ind, size_t len)
{
    if (ind > OPTION_INDENT_MAX || ind + 1 >= len || l[ind] != '-') return false;
    size_t d = ind + 1;
    if (l[d] == '-') d++;
    return d < len && isalnum((unsigned char)l[d]);
}

void flags_parse(const char *help, flagset *fs)
{
    strv entry = STRV_INIT;
    bool removed = false;
    for (const char *l = help; *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        size_t ind = 0;
        while (ind < len && (l[ind] == ' ' || l[ind] == '\t'))
            ind++;
        if (option_line(l, ind, len)) {
            commit(fs, &entry, removed);
            size_t end = option_column_end(l, ind, len);
            for (size_t i = ind; i < end;) {
                while (i < end && strchr(SEPARATORS, l[i]))
                    i++;
                size_t s = i;
                while (i < end && !strchr(SEPARATORS, l[i]))
                    i++;
                if (i > s && is_flag_word(l + s, i - s))
                    strv_push_own(&entry, xstrndup(l + s, i - s));
            }
            removed = has_ci(l + end, len - end, "has been removed");
        } else if (ind > OPTION_INDENT_MAX && ind < len) {
            if (entry.n && has_ci(l + ind, len - ind, "has been removed")) removed = true;
        } else {
            commit(fs, &entry, removed);
            removed = false;
        }
        l += len;
        if (*l == '\n') l++;
    }
    commit(fs, &entry, removed);
}

void flagset_release(flagset *fs)
{
    strv_release(&fs->known);
    strv_release(&fs->removed);
}

void flags_unknown(const flagset *fs, const strv *argv, strv *unknown, strv *removed)
{
    for (size_t i = 1; i < argv->n; i++) {
        const char *w = argv->v[i];
        if (!strcmp(w, "--")) break;
        if (w[0] != '-' || w[1] == '\0' || is_number(w)) continue;
        const char *eq = strchr(w, '=');
        char *name = eq ? xstrndup(w, (size_t)(eq - w)) : xstrdup(w);
        if (strv_find(&fs->known, name) < 0) {
            strv *to = removed && strv_find(&fs->removed, name) >= 0 ? removed : unknown;
            if (strv_find(to, name) < 0) strv_push(to, name);
        }
        free(name);
    }
}

/* ---- the cache ---- */

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static int mkdir_p(const char *dir)
{
    char *d = xstrdup(dir);
    int rc = 0;
    for (char *c = d + 1;; c++) {
        if (*c == '/' || *c == '\0') {
            char save = *c;
            *c = '\0';
            if (mkdir(d, 0700) < 0 && errno != EEXIST) rc = -1;
            *c = save;
            if (!save) break;
        }
    }
    free(d);
    return rc;
}

/* A cache entry that is not a regular file (a FIFO would block open())
 * is a miss, like a missing one. */
static int read_file(const char *path, buf *b)
{
    char why[128];
    int fd = slurp_open(path, why, sizeof why);
    if (fd < 0) return -1;
    char chunk[16384];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof chunk)) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 || b->len + (size_t)n > HELP_MAX + 4096) {
            close(fd);
            return -1;
        }
        buf_add(b, chunk, (size_t)n);
    }
    close(fd);
    return 0;
}

/* Best effort: a cache that cannot be written costs a run next time. */
static void write_cache(const char *dir, const char *file, const buf *header, const buf *text)
{
    if (mkdir_p(dir) < 0) return;
    char *tmp = xasprintf("%s.tmp.%ld", file, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0;
    const buf *parts[2] = {header, text};
    for (int i = 0; ok && i < 2; i++) {
        for (size_t off = 0; ok && off < parts[i]->len;) {
            ssize_t n = write(fd, parts[i]->p + off, parts[i]->len - off);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0)
                ok = false;
            else
                off += (size_t)n;
        }
    }
    if (fd >= 0 && close(fd) < 0) ok = false;
    if (!ok || rename(tmp, file) < 0) unlink(tmp);
    free(tmp);
}

static void join_args(buf *b, const char *const *args)
{
    for (size_t i = 0; args[i]; i++) {
        if (i) buf_addc(b, ' ');
        buf_adds(b, args[i]);
    }
}

int flags_help(const flags_query *q, buf *text, bool *from_cache, char *err, size_t errlen)
{
    if (from_cache) *from_cache = false;
    const char *const *hargs = q->help_args ? q->help_args : default_help_args;
    buf cmd = BUF_INIT;
    buf_adds(&cmd, q->binary ? q->binary : "");
    buf_addc(&cmd, ' ');
    join_args(&cmd, hargs);

    int e = 0, rc = -1;
    char *found = run_which(q->binary, &e), *abs = NULL, *file = NULL;
    buf header = BUF_INIT, out = BUF_INIT, cached = BUF_INIT;
    strv argv = STRV_INIT;
    struct stat st;
    if (!found) {
        snprintf(err, errlen, "cannot list the flags of '%s': %s", q->binary ? q->binary : "",
                 e == EACCES ? "not executable" : "not found");
        goto out;
    }
    if (!(abs = realpath(found, NULL)) || stat(abs, &st) < 0) {
        snprintf(err, errlen, "cannot list the flags of '%s': %s", q->binary,
                 errno == ENOENT ? "not found" : "cannot read it");
        goto out;
    }

    buf_printf(&header, "%s%s\n%lld\n%lld.%09ld\n", CACHE_MAGIC, abs, (long long)st.st_size,
               (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
    join_args(&header, hargs);
    buf_adds(&header, "\n\n");
    if (q->cache_dir) {
        file = xasprintf("%s/help-%016llx.txt", q->cache_dir,
                         (unsigned long long)fnv1a(header.p, header.len));
        if (read_file(file, &cached) == 0 && cached.len >= header.len &&
            !memcmp(cached.p, header.p, header.len)) {
            buf_add(text, cached.p + header.len, cached.len - header.len);
            if (from_cache) *from_cache = true;
            rc = 0;
            goto out;
        }
    }

    strv_push(&argv, found); /* as the supervisor would run it: venvs care */
    for (size_t i = 0; hargs[i]; i++)
        strv_push(&argv, hargs[i]);
    run_opts ro = {.timeout_ms = q->timeout_ms > 0 ? q->timeout_ms : HELP_TIMEOUT_MS,
                   .max_output = HELP_MAX};
    run_result res;
    char rerr[256];
    if (run_capture(argv.v, &ro, &out, &res, rerr, sizeof rerr) < 0) {
        snprintf(err, errlen, "cannot list the flags of '%s' (%s): %s", q->binary, cmd.p, rerr);
        goto out;
    }
    flagset fs = FLAGSET_INIT;
    flags_parse(out.p, &fs);
    size_t nflags = fs.known.n + fs.removed.n;
    flagset_release(&fs);
    if (!nflags) {
        snprintf(err, errlen, "cannot list the flags of '%s': '%s' printed no flags", q->binary,
                 cmd.p);
        goto out;
    }
    if (file) write_cache(q->cache_dir, file, &header, &out);
    buf_add(text, out.p, out.len);
    rc = 0;
out:
    free(found);
    free(abs);
    free(file);
    buf_release(&cmd);
    buf_release(&header);
    buf_release(&out);
    buf_release(&cached);
    strv_release(&argv);
    return rc;
}

int flags_check(const flags_query *q, const strv *argv, strv *unknown, strv *removed, char *err,
                size_t errlen)
{
    buf text = BUF_INIT;
    if (flags_help(q, &text, NULL, err, errlen) < 0) {
        buf_release(&text);
        return -1;
    }
    flagset fs = FLAGSET_INIT;
    flags_parse(text.p, &fs);
    flags_unknown(&fs, argv, unknown, removed);
    flagset_release(&fs);
    buf_release(&text);
    return 0;
}
