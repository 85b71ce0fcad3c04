/* pull.c (models) - `gpumod model pull SOURCE`: fetch a GGUF model (every
 * part of a split one) from the Hub or an https:// URL into models_dir.
 *
 * Careful where ollama-style pulls are casual: the free disk is checked
 * before the first byte; each file is written to "<final>.part" under an
 * flock (two pulls of one file: the second is refused), resumed with
 * "Range: bytes=K-" and If-Range (the ETag seen when the .part began, in
 * "<final>.part.etag"), so a changed file is fetched again whole rather
 * than spliced; a cut connection is resumed by itself three times; the
 * bytes are hashed as they arrive and checked against the LFS sha256 the
 * listing (or X-Linked-Etag) gives; only a whole and verified file is
 * renamed to its name (rename(2), then the directory fsynced).  The Hub
 * token goes to the Hub's origin only (http.c), never to the CDN it
 * redirects to, and is never printed. */
#include "models/pull.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "models/http.h"
#include "models/models.h"
#include "models/source.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/errf.h"
#include "util/exitcode.h"
#include "util/opt.h"
#include "util/sha256.h"

#define RETRIES 3
#define STALL_MS 60000
#define EXIT_INTERRUPTED 130

typedef enum { ST_FETCH, ST_RESUME, ST_PRESENT } pstate;

typedef struct part {
    const mfile *f;
    char *final, *tmp, *lockp, *etagp; /* the file, its .part, .part.lock, .part.etag */
    char *rel;                         /* final below the destination root */
    char url[1024];                    /* shown: no query */
    uint64_t size;                     /* UINT64_MAX unknown */
    char sha[65];                      /* expected; "" none */
    const char *token;                 /* the Hub's token when url is the Hub's; else NULL */
    uint64_t have;                     /* the .part's bytes at plan time */
    pstate st;
    bool verified, resumed;
} part;

typedef struct pull {
    mctx *c;
    const char *source, *dir_flag, *endpoint;
    bool dry, verbose;
    mhub hub;
    bool hub_ok;
    msource src;
    const mgroup *g;
    part *parts;
    size_t n;
    char *dir; /* the destination root */
    uint64_t fetched;
} pull;

static const char usage[] =
    "usage: gpumod model pull SOURCE [--dir DIR] [--dry-run] [--endpoint URL] [-v] [--json]\n"
    "  SOURCE: hf:ORG/REPO[@REV][/FILE.gguf] or an https:// URL of a .gguf file\n";

static void say(const pull *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const pull *p, const char *fmt, ...)
{
    (void)p;
    va_list ap;
    va_start(ap, fmt);
    fputs("gpumod: pull: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int parse_args(pull *p, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int r;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 1;
        } else if (!strcmp(a, "--dry-run"))
            p->dry = true;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) /* the helper's own: the lean
                                                                   gpumod keeps its -v */
            p->verbose = true;
        else if ((r = opt_value(argc, argv, &i, "--dir", &v)) != 0) {
            if (r < 0 || !*v) goto missing;
            p->dir_flag = v;
        } else if ((r = opt_value(argc, argv, &i, "--endpoint", &v)) != 0) {
            if (r < 0 || !*v) goto missing;
            p->endpoint = v;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "gpumod: model pull: unknown option '%s'\n%s", a, usage);
            return -1;
        } else if (p->source) {
            fprintf(stderr, "gpumod: model pull: one SOURCE expected, got '%s' and '%s'\n%s",
                    p->source, a, usage);
            return -1;
        } else
            p->source = a;
        continue;
    missing:
        fprintf(stderr, "gpumod: model pull: %s needs a value\n%s", a, usage);
        return -1;
    }
    if (!p->source) {
        fprintf(stderr, "gpumod: model pull: SOURCE missing\n%s", usage);
        return -1;
    }
    return 0;
}

static void url_show(const char *url, char *out, size_t len)
{
    size_t n = strcspn(url, "?#");
    snprintf(out, len, "%.*s", (int)(n < 1000 ? n : 1000), url);
}

static int mkdir_p(const char *dir, char *err, size_t errlen)
{
    char *d = xstrdup(dir);
    for (char *s = d + 1;; s++) {
        if (*s != '/' && *s) continue;
        char keep = *s;
        *s = 0;
        if (mkdir(d, 0755) < 0 && errno != EEXIST) {
            int e = errno;
            errf(err, errlen, "cannot create the directory '%s': %s", d, strerror(e));
            free(d);
            return -1;
        }
        if (!keep) break;
        *s = keep;
    }
    struct stat st;
    int rc = stat(dir, &st) == 0 && S_ISDIR(st.st_mode)
                 ? 0
                 : errf_ret(-1, err, errlen, "'%s' is not a directory", dir);
    free(d);
    return rc;
}

/* the folders of rel (a checked relative path) below root, created where
 * missing; none may be a symbolic link (a link planted in the tree must
 * not carry the download out of it): each is opened with O_NOFOLLOW */
static int mkdir_below(const char *root, const char *rel, char *err, size_t errlen)
{
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errf_ret(-1, err, errlen, "cannot open the directory '%s': %s", root,
                        strerror(errno));
    char *r = xstrdup(rel);
    int rc = 0;
    for (char *seg = r, *slash; (slash = strchr(seg, '/')) != NULL; seg = slash + 1) {
        *slash = 0;
        if (mkdirat(fd, seg, 0755) < 0 && errno != EEXIST) {
            rc = errf_ret(-1, err, errlen, "cannot create the directory '%s/%s': %s", root, r,
                          strerror(errno));
            break;
        }
        int nfd = openat(fd, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (nfd < 0) {
            int e = errno;
            struct stat ls; /* O_DIRECTORY answers ENOTDIR for a link: look at it */
            bool link = fstatat(fd, seg, &ls, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(ls.st_mode);
            rc = errf_ret(-1, err, errlen, "'%s/%s' is %s: refused", root, r,
                          link           ? "a symbolic link (a pull writes below its folder only)"
                          : e == ENOTDIR ? "not a directory"
                                         : strerror(e));
            break;
        }
        close(fd);
        fd = nfd;
        *slash = '/';
    }
    close(fd);
    free(r);
    return rc;
}

static char *parent_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? (s == path ? xstrdup("/") : xstrndup(path, (size_t)(s - path))) : xstrdup(".");
}

/* the free bytes where dir is (or its nearest existing ancestor) */
static int free_bytes(const char *dir, uint64_t *out, char **where)
{
    char *d = xstrdup(dir);
    struct statvfs sv;
    while (statvfs(d, &sv) < 0) {
        if (errno != ENOENT || !strcmp(d, "/") || !strcmp(d, ".")) {
            free(d);
            return -1;
        }
        char *up = parent_of(d);
        free(d);
        d = up;
    }
    *out = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
    *where = d;
    return 0;
}

/* ---- the sidecar and the digest of a file on disk ---- */

static void etag_read(const char *path, char *out, size_t len)
{
    out[0] = 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n = read(fd, out, len - 1);
    close(fd);
    out[n > 0 ? n : 0] = 0;
    out[strcspn(out, "\r\n")] = 0;
}

static int etag_write(const char *path, const char *etag)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    size_t n = strlen(etag);
    int rc = write(fd, etag, n) == (ssize_t)n && write(fd, "\n", 1) == 1 ? 0 : -1;
    close(fd);
    return rc;
}

/* the first `len` bytes of fd into c; 0 or -1 */
static int hash_fd(int fd, uint64_t len, sha256_ctx *c, volatile int *stop)
{
    static char chunk[1 << 20];
    uint64_t off = 0;
    while (off < len) {
        if (stop && *stop) return -1;
        size_t want = len - off < sizeof chunk ? (size_t)(len - off) : sizeof chunk;
        ssize_t r = pread(fd, chunk, want, (off_t)off);
        if (r <= 0) return -1;
        sha256_update(c, chunk, (size_t)r);
        off += (uint64_t)r;
    }
    return 0;
}

static void hex_of(sha256_ctx *c, char out[65])
{
    uint8_t d[32];
    sha256_final(c, d);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* a file already at the final path: 1 present (verified when a digest is
 * known), 0 absent, -1 an error (another size or digest) */
static int check_present(pull *p, part *t, char *err, size_t errlen)
{
    struct stat st;
    if (stat(t->final, &st) < 0) return 0;
    char a[32], b[32];
    if (t->size != UINT64_MAX && (uint64_t)st.st_size != t->size) {
        mpull_bytes((uint64_t)st.st_size, a, sizeof a);
        mpull_bytes(t->size, b, sizeof b);
        return errf_ret(-1, err, errlen,
                        "'%s' exists with %s, the source has %s: move it away (or delete it) "
                        "to pull it again",
                        t->final, a, b);
    }
    if (!t->sha[0]) return 1;
    int fd = open(t->final, O_RDONLY | O_CLOEXEC);
    sha256_ctx c;
    sha256_init(&c);
    if (fd < 0 || hash_fd(fd, (uint64_t)st.st_size, &c, p->c->interrupted) < 0) {
        if (fd >= 0) close(fd);
        return errf_ret(-1, err, errlen, "'%s': cannot read it to check its sha256", t->final);
    }
    close(fd);
    char got[65];
    hex_of(&c, got);
    if (strcmp(got, t->sha))
        return errf_ret(-1, err, errlen,
                        "'%s' exists but its sha256 is %s, the source's is %s: move it away (or "
                        "delete it) to pull it again",
                        t->final, got, t->sha);
    t->verified = true;
    return 1;
}

/* ---- planning: paths, sizes, what is there ---- */

/* a URL source's size (and digest) from a HEAD, else a Range 0-0 */
static void probe_url(pull *p, part *t)
{
    mhttp_opts o = {
        .token = t->token, .timeout_ms = 30000, .head = true, .interrupted = p->c->interrupted};
    mhttp_reply r;
    if (mhttp_get(t->f->url, &o, &r) == 0 && r.status >= 200 && r.status < 300) {
        t->size = r.linked_size != MHTTP_UNKNOWN ? r.linked_size : r.content_length;
        if (mpull_is_sha256(r.linked_etag)) {
            snprintf(t->sha, sizeof t->sha, "%s", r.linked_etag);
            mpull_lower(t->sha); /* the Hub's digests are lower-case hex; ours too */
        }
    }
    mhttp_release(&r);
    if (t->size != UINT64_MAX) return;
    o.head = false;
    o.range_len = 1;
    o.max_bytes = 4096;
    if (mhttp_get(t->f->url, &o, &r) == 0 && r.status == 206) t->size = r.range_total;
    mhttp_release(&r);
}

/* where f goes: DIR/ORG/REPO/PATH (hub) or DIR/NAME (URL), each part of
 * which checked to stay below DIR whatever the listing says */
static int part_paths(pull *p, part *t, const mfile *f, char *err, size_t errlen)
{
    t->f = f;
    bool hf = p->src.kind == MSRC_HF;
    if ((hf && mpull_path_ok(p->src.repo, "the repository id", err, errlen) < 0) ||
        mpull_path_ok(f->path, hf ? "the repository path" : "the URL's file name", err, errlen) < 0)
        return -1;
    t->rel = hf ? xasprintf("%s/%s", p->src.repo, f->path) : xstrdup(f->path);
    t->final = xasprintf("%s/%s", p->dir, t->rel);
    t->tmp = xasprintf("%s.part", t->final);
    t->lockp = xasprintf("%s.part.lock", t->final);
    t->etagp = xasprintf("%s.part.etag", t->final);
    url_show(f->url, t->url, sizeof t->url);
    t->size = f->size;
    snprintf(t->sha, sizeof t->sha, "%s", f->sha256);
    mpull_lower(t->sha);
    char o1[512], o2[512];
    if (p->hub_ok && p->hub.token && mhttp_origin(f->url, o1, sizeof o1) == 0 &&
        mhttp_origin(p->hub.endpoint, o2, sizeof o2) == 0 && !strcmp(o1, o2))
        t->token = p->hub.token;
    return 0;
}

static int plan_part(pull *p, part *t, char *err, size_t errlen)
{
    if (t->size == UINT64_MAX && p->src.kind == MSRC_URL) probe_url(p, t);
    int pr = check_present(p, t, err, errlen);
    if (pr < 0) return -1;
    if (pr > 0) {
        t->st = ST_PRESENT;
        return 0;
    }
    struct stat st;
    char etag[160];
    etag_read(t->etagp, etag, sizeof etag);
    if (lstat(t->tmp, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && etag[0] &&
        strncmp(etag, "W/", 2) && (t->size == UINT64_MAX || (uint64_t)st.st_size <= t->size)) {
        t->have = (uint64_t)st.st_size;
        t->st = ST_RESUME;
    } else
        t->st = ST_FETCH;
    return 0;
}

/* SOURCE to one model: its group */
static int pick_group(pull *p, char *err, size_t errlen)
{
    if (p->src.ngroups == 1) {
        p->g = &p->src.groups[0];
        return 0;
    }
    buf b = BUF_INIT;
    for (size_t i = 0; i < p->src.ngroups; i++) {
        char e[512];
        mpull_escape(p->src.groups[i].parts[0].path, e, sizeof e);
        buf_printf(&b, "\n  hf:%s/%s", p->src.repo, e);
    }
    errf(err, errlen,
         "'%s' holds %zu models; pull one by naming its file (the first part of a split "
         "model):%s",
         p->source, p->src.ngroups, b.p ? b.p : "");
    buf_release(&b);
    return -1;
}

static int resolve(pull *p, char *err, size_t errlen)
{
    const char *s = p->source;
    bool remote =
        !strncmp(s, "hf:", 3) || !strncasecmp(s, "https://", 8) || !strncasecmp(s, "http://", 7);
    if (!remote) {
        struct stat st;
        if (stat(s, &st) == 0)
            return errf_ret(-1, err, errlen,
                            "'%s' is already local: pull fetches hf:ORG/REPO[/FILE.gguf] or an "
                            "https:// URL (give the path to fit, inspect or a preset instead)",
                            s);
        return errf_ret(-1, err, errlen,
                        "'%s' is neither hf:ORG/REPO[@REV][/FILE.gguf] nor an https:// URL", s);
    }
    char why[512];
    p->hub_ok = mhub_init(&p->hub, &p->c->cfg.set, p->endpoint, why, sizeof why) == 0;
    if (!p->hub_ok && !strncmp(s, "hf:", 3)) return errf_ret(-1, err, errlen, "%s", why);
    p->hub.interrupted = p->c->interrupted;
    if (msource_resolve(p->hub_ok ? &p->hub : NULL, s, &p->src, err, errlen) < 0) return -1;
    if (!p->src.ngroups) return errf_ret(-1, err, errlen, "'%s': no GGUF model there", s);
    unsigned k, m;
    if (p->src.kind == MSRC_URL && mpull_split_name(p->src.groups[0].parts[0].path, &k, &m) &&
        m > 1) {
        char u[1024];
        url_show(s, u, sizeof u);
        return errf_ret(-1, err, errlen,
                        "'%s' is part %u of %u of a split model: pull it as hf:ORG/REPO/FILE, or "
                        "pull each part's URL",
                        u, k, m);
    }
    return pick_group(p, err, errlen);
}

static int plan(pull *p, char *err, size_t errlen)
{
    const char *d = p->dir_flag ? p->dir_flag : p->c->cfg.set.models_dir;
    if (!d || !*d) return errf_ret(-1, err, errlen, "no models_dir setting and no --dir");
    p->dir = xstrdup(d);
    size_t n = strlen(p->dir);
    while (n > 1 && p->dir[n - 1] == '/')
        p->dir[--n] = 0;
    p->n = p->g->nparts;
    p->parts = xcalloc(p->n, sizeof *p->parts);
    for (size_t i = 0; i < p->n; i++) {
        if (part_paths(p, &p->parts[i], &p->g->parts[i], err, errlen) < 0 ||
            plan_part(p, &p->parts[i], err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* what remains to fetch; UINT64_MAX when a size is unknown; a sum too
 * large for 64 bits stays MPULL_HUGE (which no disk holds) */
static uint64_t remaining(const pull *p)
{
    uint64_t need = 0;
    for (size_t i = 0; i < p->n; i++) {
        const part *t = &p->parts[i];
        if (t->st == ST_PRESENT) continue;
        if (t->size == UINT64_MAX) return UINT64_MAX;
        need = mpull_sat_add(need, t->size > t->have ? t->size - t->have : 0);
    }
    return need;
}

/* ---- one download ---- */

typedef struct dl {
    pull *p;
    part *t;
    int fd;
    uint64_t pos; /* bytes in the .part */
    sha256_ctx h;
    mhttp_reply *r;  /* the reply being read: its headers are in before the first body byte */
    bool started;    /* the first body byte of this request came */
    bool restarted;  /* this pull began the file again */
    int werr;        /* errno of a failed write */
    char bad[256];   /* the reply's start did not fit */
    uint64_t limit;  /* the bytes the file may have: listing, else the reply's; UINT64_MAX none */
    bool over;       /* the server sent more than limit: the .part was deleted */
    bool disk_bound; /* limit is the free disk (no size was said) */
    mprog prog;
} dl;

/* a weak validator ("W/...") may not be sent as If-Range (RFC 9110
 * 13.1.5): a .part it began cannot be resumed safely */
static bool etag_weak(const char *etag)
{
    return !strncmp(etag, "W/", 2);
}

static void dl_restart(dl *d)
{
    if (ftruncate(d->fd, 0) < 0) d->werr = errno;
    d->pos = 0;
    sha256_init(&d->h);
    mprog_reset(&d->prog, clock_mono_ms());
}

/* the first byte of a 2xx body: append (206 from our end) or start again */
static int dl_begin(dl *d)
{
    mhttp_reply *r = d->r;
    d->started = true;
    d->limit = d->t->size;
    if (d->limit == UINT64_MAX && r->range_total != MHTTP_UNKNOWN) d->limit = r->range_total;
    if (d->limit == UINT64_MAX && r->range_start == MHTTP_UNKNOWN)
        d->limit = r->content_length; /* a 200's length is the file's */
    if (d->limit == UINT64_MAX) {     /* no size anywhere: what the disk holds, less the margin */
        uint64_t avail;
        char *where = NULL;
        d->disk_bound = true;
        d->limit = free_bytes(d->t->tmp, &avail, &where) == 0 && avail > MPULL_MARGIN
                       ? d->pos + (avail - MPULL_MARGIN)
                       : d->pos;
        free(where);
    }
    if (r->hop_status == 206 && r->range_start == MHTTP_UNKNOWN) {
        snprintf(d->bad, sizeof d->bad, "a 206 reply without a Content-Range this client can read");
        return -1;
    }
    if (r->range_start != MHTTP_UNKNOWN) {
        if (r->range_start == d->pos) return 0;
        snprintf(d->bad, sizeof d->bad, "the server answered from byte %" PRIu64 ", not %" PRIu64,
                 r->range_start, d->pos);
        return -1;
    }
    if (d->pos > 0) {
        say(d->p,
            "%s: the server sent the whole file (it changed since the .part began, or the "
            "server ignores Range): starting again from 0",
            d->t->f->path);
        d->restarted = true;
        d->t->resumed = false;
        dl_restart(d);
    }
    const char *tag = r->etag[0] ? r->etag : r->linked_etag;
    if (etag_write(d->t->etagp, tag) < 0) d->werr = errno;
    return d->werr ? -1 : 0;
}

static void drop_part(const part *t);

static int dl_sink(void *ud, const void *buf_, size_t n)
{
    dl *d = ud;
    if (!d->started && dl_begin(d) < 0) return -1;
    if (d->limit != UINT64_MAX && (d->pos > d->limit || n > d->limit - d->pos)) {
        d->over = true; /* not one byte past the size: the whole download is suspect */
        drop_part(d->t);
        if (ftruncate(d->fd, 0) < 0) d->werr = errno;
        d->pos = 0;
        return -1;
    }
    const char *s = buf_;
    size_t left = n;
    while (left) {
        ssize_t w = pwrite(d->fd, s, left, (off_t)d->pos);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            d->werr = w < 0 ? errno : EIO;
            return -1;
        }
        s += w, left -= (size_t)w;
        d->pos += (uint64_t)w;
    }
    sha256_update(&d->h, buf_, n);
    d->p->fetched += n;
    mprog_add(&d->prog, n, clock_mono_ms());
    return 0;
}

typedef enum { R_DONE, R_RETRY, R_AGAIN, R_FAIL, R_INTR } rstep;

/* after a 2xx: is the file whole? */
static rstep dl_after_ok(dl *d, char *err, size_t errlen)
{
    mhttp_reply *r = d->r;
    if (!d->started && r->status == 200 && d->pos > 0) dl_restart(d);
    uint64_t want = d->t->size;
    if (want == UINT64_MAX && r->range_total != MHTTP_UNKNOWN) want = r->range_total;
    if (want == UINT64_MAX && r->range_start == MHTTP_UNKNOWN) want = d->pos;
    if (d->t->size == UINT64_MAX) d->t->size = want;
    if (d->pos == want) return R_DONE;
    if (d->pos < want) {
        errf(err, errlen, "the reply ended at %" PRIu64 " of %" PRIu64 " bytes", d->pos, want);
        return R_RETRY;
    }
    errf(err, errlen, "the server sent %" PRIu64 " bytes, more than the %" PRIu64 " expected",
         d->pos, want);
    return R_FAIL;
}

static rstep dl_status(dl *d, char *err, size_t errlen)
{
    mhttp_reply *r = d->r;
    if (r->status >= 200 && r->status < 300) return dl_after_ok(d, err, errlen);
    if (r->status == 416) {
        uint64_t total = d->t->size != UINT64_MAX ? d->t->size : r->range_total;
        mpull_act a = mpull_decide(416, d->pos, 0, total);
        if (a == MPULL_WHOLE) {
            if (d->t->size == UINT64_MAX) d->t->size = total;
            return R_DONE;
        }
        if ((a == MPULL_RESTART || (a != MPULL_WHOLE && d->pos > 0)) && !d->restarted) {
            say(d->p, "%s: the .part does not fit the file on the server: starting again from 0",
                d->t->f->path);
            d->restarted = true;
            dl_restart(d);
            return R_AGAIN;
        }
    }
    /* the Hub's words (tokens, gated repositories) for the Hub's URLs only */
    const char *why = d->p->src.kind == MSRC_HF || d->t->token
                          ? mhttp_status_text(r->status, r->error_code)
                      : r->status == 401 || r->status == 403 ? "access denied"
                      : r->status == 404                     ? "not found"
                                                             : "unexpected status";
    errf(err, errlen, "GET %s: HTTP %d: %s", d->t->url, r->status, why);
    return r->status == 429 || r->status >= 500 ? R_RETRY : R_FAIL;
}

/* one request from d->pos */
static rstep dl_once(dl *d, char *err, size_t errlen)
{
    pull *p = d->p;
    part *t = d->t;
    char etag[160];
    etag_read(t->etagp, etag, sizeof etag);
    if (d->pos > 0 && (etag_weak(etag) || !etag[0])) {
        say(p, "%s: the server's ETag is %s: cannot resume safely, starting again", t->f->path,
            etag[0] ? "weak" : "missing");
        d->restarted = true;
        t->resumed = false;
        dl_restart(d);
    }
    mhttp_opts o = {.token = t->token,
                    .stall_ms = STALL_MS,
                    .connect_ms = 10000,
                    .sink = dl_sink,
                    .sink_ud = d,
                    .interrupted = p->c->interrupted};
    if (d->pos > 0) {
        o.range_from = d->pos;
        o.range_len = MHTTP_UNKNOWN;
        o.if_range = etag[0] ? etag : NULL;
    }
    if (p->verbose && d->pos)
        say(p, "GET %s (Range: bytes=%" PRIu64 "-%s)", t->url, d->pos, etag[0] ? ", If-Range" : "");
    else if (p->verbose)
        say(p, "GET %s", t->url);
    mhttp_reply r;
    d->r = &r;
    d->started = false;
    int rc = mhttp_get(t->f->url, &o, &r);
    rstep s;
    if (p->c->interrupted && *p->c->interrupted)
        s = R_INTR;
    else if (d->over) {
        char b[32];
        mpull_bytes(d->limit, b, sizeof b);
        if (d->disk_bound)
            errf(err, errlen,
                 "%s: the server said no size and sent more than the disk holds beyond 1 GiB to "
                 "spare (%s); the download was discarded",
                 t->f->path, b);
        else
            errf(err, errlen,
                 "%s: the server sent more than the %" PRIu64 " bytes (%s) %s; the download was "
                 "discarded",
                 t->f->path, d->limit, b,
                 t->f->size != UINT64_MAX ? "the listing says" : "it announced");
        s = R_FAIL;
    } else if (d->werr)
        s = (errf(err, errlen, "writing '%s': %s", t->tmp, strerror(d->werr)), R_FAIL);
    else if (d->bad[0])
        s = (errf(err, errlen, "GET %s: %s", t->url, d->bad), R_FAIL);
    else if (rc < 0)
        s = (errf(err, errlen, "%s", r.err), strstr(r.err, "redirect") ? R_FAIL : R_RETRY);
    else
        s = dl_status(d, err, errlen);
    if (p->verbose && rc == 0) say(p, "HTTP %d, %" PRIu64 " bytes", r.status, r.bytes_in);
    d->r = NULL;
    mhttp_release(&r);
    return s;
}

static bool nap(pull *p, int secs)
{
    for (int i = 0; i < secs * 10; i++) {
        if (*p->c->interrupted) return false;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return !*p->c->interrupted;
}

/* requests until the file is whole: cut connections resumed RETRIES times */
static rstep dl_loop(dl *d, char *err, size_t errlen)
{
    int tries = 0, agains = 0;
    for (;;) {
        rstep s = dl_once(d, err, errlen);
        if (s == R_AGAIN && ++agains < 3) continue;
        if (s == R_AGAIN) s = R_FAIL;
        if (s != R_RETRY) return s;
        if (++tries > RETRIES) return R_FAIL;
        int wait = 1 << (tries - 1);
        say(d->p, "%s: %s; %" PRIu64 " bytes on disk: %s in %d s (retry %d of %d)", d->t->f->path,
            err, d->pos, d->pos ? "resuming" : "retrying", wait, tries, RETRIES);
        if (!nap(d->p, wait)) return R_INTR;
    }
}

static void fsync_dir(const char *path)
{
    char *d = parent_of(path);
    int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(d);
}

/* fd is still the file at path (not unlinked or replaced since it was
 * opened) */
static bool same_file(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* The .part's lock, taken without waiting: -1 when another pull holds it.
 * The lock file is removed by its holder when the pull ends (fetch_part),
 * so a lock taken here is kept only when it is still the file at the
 * path: a lock on a file its holder unlinked meanwhile locks nothing, and
 * the path is opened again. */
static int lock_part(pull *p, const part *t, int *lockfd, char *err, size_t errlen)
{
    if (mkdir_p(p->dir, err, errlen) < 0 || mkdir_below(p->dir, t->rel, err, errlen) < 0) return -1;
    for (int tries = 0; tries < 10; tries++) {
        int fd = open(t->lockp, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
            return errf_ret(-1, err, errlen, "cannot create the lock '%s': %s", t->lockp,
                            strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
            int e = errno;
            close(fd);
            if (e == EWOULDBLOCK)
                return errf_ret(-1, err, errlen,
                                "another gpumod model pull is writing %s (its lock: %s); wait "
                                "for it to end",
                                t->final, t->lockp);
            return errf_ret(-1, err, errlen, "cannot lock '%s': %s", t->lockp, strerror(e));
        }
        if (same_file(fd, t->lockp)) {
            *lockfd = fd;
            return 0;
        }
        close(fd); /* its holder removed it: the path's next file is the lock */
    }
    return errf_ret(-1, err, errlen, "the lock '%s' kept changing under this pull: another pull?",
                    t->lockp);
}

/* the .part opened; kept (and hashed so far) when its sidecar says where
 * it came from, else begun again */
static int open_part(dl *d, char *err, size_t errlen)
{
    part *t = d->t;
    d->fd = open(t->tmp, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (d->fd < 0)
        return errf_ret(-1, err, errlen, "cannot open '%s': %s", t->tmp, strerror(errno));
    struct stat st;
    if (fstat(d->fd, &st) < 0)
        return errf_ret(-1, err, errlen, "cannot stat '%s': %s", t->tmp, strerror(errno));
    char etag[160];
    etag_read(t->etagp, etag, sizeof etag);
    sha256_init(&d->h);
    d->pos = (uint64_t)st.st_size;
    if (!S_ISREG(st.st_mode))
        return errf_ret(-1, err, errlen, "'%s' is not a regular file: refused", t->tmp);
    if (d->pos > 0 && etag_weak(etag)) {
        say(d->p, "%s: the server's ETag is weak: cannot resume safely, starting again",
            t->f->path);
        d->restarted = true;
        d->pos = 0;
        if (ftruncate(d->fd, 0) < 0)
            return errf_ret(-1, err, errlen, "cannot truncate '%s': %s", t->tmp, strerror(errno));
    }
    if (d->pos > 0 && (!etag[0] || (t->size != UINT64_MAX && d->pos > t->size))) {
        say(d->p, "%s: a .part of %" PRIu64 " bytes %s: starting again from 0", t->f->path, d->pos,
            etag[0] ? "longer than the file" : "without a record of the version it came from");
        d->restarted = true;
        d->pos = 0;
        if (ftruncate(d->fd, 0) < 0)
            return errf_ret(-1, err, errlen, "cannot truncate '%s': %s", t->tmp, strerror(errno));
    }
    if (d->pos > 0) {
        char b[32];
        mpull_bytes(d->pos, b, sizeof b);
        say(d->p, "%s: resuming from %s (%" PRIu64 " bytes in %s)", t->f->path, b, d->pos, t->tmp);
        t->resumed = true;
        if (t->sha[0] && hash_fd(d->fd, d->pos, &d->h, d->p->c->interrupted) < 0)
            return errf_ret(-1, err, errlen, "cannot read '%s' to hash it", t->tmp);
    }
    return 0;
}

static void drop_part(const part *t)
{
    unlink(t->tmp);
    unlink(t->etagp);
}

/* verified (when a digest is known), synced and renamed into place */
static int finish_part(dl *d, char *err, size_t errlen)
{
    part *t = d->t;
    if (t->sha[0]) {
        char got[65];
        hex_of(&d->h, got);
        if (strcmp(got, t->sha)) {
            drop_part(t);
            return errf_ret(-1, err, errlen,
                            "%s: sha256 mismatch: expected %s, got %s; the download was discarded",
                            t->f->path, t->sha, got);
        }
        t->verified = true;
    }
    if (fsync(d->fd) < 0)
        return errf_ret(-1, err, errlen, "fsync '%s': %s", t->tmp, strerror(errno));
    if (rename(t->tmp, t->final) < 0)
        return errf_ret(-1, err, errlen, "rename '%s' to '%s': %s", t->tmp, t->final,
                        strerror(errno));
    fsync_dir(t->final);
    unlink(t->etagp);
    return 0;
}

/* 0 done, -1 failed (err), EXIT_INTERRUPTED */
static int fetch_part(pull *p, part *t, char *err, size_t errlen)
{
    int lockfd = -1;
    if (lock_part(p, t, &lockfd, err, errlen) < 0) return -1;
    int rc = check_present(p, t, err, errlen); /* another pull may have finished it */
    if (rc != 0) {
        if (rc > 0) t->st = ST_PRESENT;
        close(lockfd);
        return rc < 0 ? -1 : 0;
    }
    dl d = {.p = p, .t = t, .fd = -1};
    rc = open_part(&d, err, errlen);
    if (rc == 0) {
        mprog_start(&d.prog, stderr, !p->c->quiet, isatty(2), t->f->path, t->size, d.pos,
                    clock_mono_ms());
        rstep s = dl_loop(&d, err, errlen);
        mprog_end(&d.prog, clock_mono_ms());
        if (s == R_DONE)
            rc = finish_part(&d, err, errlen);
        else if (s == R_INTR)
            rc = EXIT_INTERRUPTED;
        else if (d.pos > 0) {
            char b[32];
            mpull_bytes(d.pos, b, sizeof b);
            size_t k = strlen(err);
            snprintf(err + k, errlen - k,
                     "; %s (%" PRIu64 " bytes) of it are on disk in %s: run the same command "
                     "again to resume",
                     b, d.pos, t->tmp);
            rc = -1;
        } else {
            drop_part(t); /* nothing came: no .part left behind */
            rc = -1;
        }
    }
    if (d.fd >= 0) close(d.fd);
    /* removed while still held, and only when it is ours: a pull that
     * opened it meanwhile finds it gone from the path once it has the
     * lock (lock_part), and opens the path again */
    if (same_file(lockfd, t->lockp)) unlink(t->lockp);
    close(lockfd);
    return rc;
}

/* ---- what is said ---- */

static const char *status_word(const part *t)
{
    return t->st == ST_PRESENT ? "present" : t->resumed ? "resumed" : "pulled";
}

static void print_text(const pull *p)
{
    for (size_t i = 0; i < p->n; i++) {
        const part *t = &p->parts[i];
        char b[32];
        mpull_bytes(t->size, b, sizeof b);
        printf("%s %s (%s%s, %s)\n", t->st == ST_PRESENT ? "present" : "pulled", t->final, b,
               t->resumed ? ", resumed" : "",
               t->verified ? "sha256 verified" : "not verified: the server publishes no digest");
    }
}

static cJSON *part_json(const part *t, bool dry)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", t->final);
    cJSON_AddStringToObject(o, "url", t->url);
    if (t->size == UINT64_MAX)
        cJSON_AddNullToObject(o, "size");
    else
        cJSON_AddNumberToObject(o, "size", (double)t->size);
    if (t->sha[0])
        cJSON_AddStringToObject(o, "sha256", t->sha);
    else
        cJSON_AddNullToObject(o, "sha256");
    if (dry) {
        cJSON_AddStringToObject(o, "status",
                                t->st == ST_PRESENT  ? "present"
                                : t->st == ST_RESUME ? "resume"
                                                     : "fetch");
        cJSON_AddNumberToObject(o, "part_bytes", (double)t->have);
    } else {
        cJSON_AddBoolToObject(o, "verified", t->verified);
        cJSON_AddStringToObject(o, "status", status_word(t));
    }
    return o;
}

static void print_json(const pull *p, cJSON *extra)
{
    cJSON *o = extra ? extra : cJSON_CreateObject();
    char src[1024]; /* a signed URL's query stays out of the output */
    url_show(p->source, src, sizeof src);
    cJSON_AddStringToObject(o, "source", src);
    cJSON *a = cJSON_AddArrayToObject(o, "files");
    for (size_t i = 0; i < p->n; i++)
        cJSON_AddItemToArray(a, part_json(&p->parts[i], extra != NULL));
    if (!extra) cJSON_AddNumberToObject(o, "bytes_fetched", (double)p->fetched);
    char *s = cJSON_Print(o);
    printf("%s\n", s);
    free(s);
    cJSON_Delete(o);
}

/* --dry-run: what would be fetched, from where, to where */
static int dry_run(pull *p, uint64_t need, uint64_t avail, const char *where, int disk_rc,
                   const char *disk_err)
{
    if (p->c->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddBoolToObject(o, "dry_run", true);
        cJSON_AddStringToObject(o, "dir", p->dir);
        if (need == UINT64_MAX)
            cJSON_AddNullToObject(o, "bytes_to_fetch");
        else
            cJSON_AddNumberToObject(o, "bytes_to_fetch", (double)need);
        cJSON_AddNumberToObject(o, "free_bytes", (double)avail);
        cJSON_AddBoolToObject(o, "enough_disk", disk_rc == 0);
        print_json(p, o);
    } else {
        for (size_t i = 0; i < p->n; i++) {
            const part *t = &p->parts[i];
            char b[32], h[32];
            mpull_bytes(t->size, b, sizeof b);
            mpull_bytes(t->have, h, sizeof h);
            if (t->st == ST_PRESENT)
                printf("present %s (%s%s)\n", t->final, b, t->verified ? ", sha256 verified" : "");
            else
                printf("%s %s\n  to %s (%s%s%s%s, %s)\n", t->st == ST_RESUME ? "resume" : "fetch",
                       t->url, t->final, b, t->st == ST_RESUME ? ", resuming from " : "",
                       t->st == ST_RESUME ? h : "", t->st == ST_RESUME ? " in the .part" : "",
                       t->sha[0] ? "sha256 to verify" : "no digest published: not verifiable");
        }
        char n[32], f[32];
        mpull_bytes(need, n, sizeof n);
        mpull_bytes(avail, f, sizeof f);
        printf("to fetch: %s; free on %s: %s%s\n", need ? n : "nothing", where, f,
               disk_rc == 0 ? "" : " (not enough)");
    }
    if (disk_rc < 0) fprintf(stderr, "gpumod: model pull: %s\n", disk_err);
    return disk_rc < 0 ? EXIT_REFUSED : EXIT_OK;
}

/* ---- the command ---- */

static int fetch_all(pull *p, char *err, size_t errlen)
{
    for (size_t i = 0; i < p->n; i++) {
        part *t = &p->parts[i];
        if (t->st == ST_PRESENT) continue;
        int rc = fetch_part(p, t, err, errlen);
        if (rc == EXIT_INTERRUPTED) return rc;
        if (rc < 0 && p->n > 1) {
            char *e = xstrdup(err);
            errf(err, errlen, "part %zu of %zu (%s) failed: %s", i + 1, p->n, t->f->path, e);
            free(e);
        }
        if (rc < 0) return -1;
        if (!t->verified && t->st != ST_PRESENT)
            say(p, "%s: not verified (the server publishes no digest)", t->f->path);
    }
    return 0;
}

static int run(pull *p, char *err, size_t errlen)
{
    if (resolve(p, err, errlen) < 0 || plan(p, err, errlen) < 0) return -1;
    uint64_t need = remaining(p), avail = 0;
    char *where = NULL;
    const char *first = p->parts[0].final;
    char *dir = parent_of(first);
    if (free_bytes(dir, &avail, &where) < 0) {
        errf(err, errlen, "cannot learn the free disk of '%s': %s", dir, strerror(errno));
        free(dir);
        return -1;
    }
    free(dir);
    char derr[512] = "";
    int drc = need == UINT64_MAX ? 0 : mpull_disk_ok(need, avail, where, derr, sizeof derr);
    if (p->dry) {
        int rc = dry_run(p, need, avail, where, drc, derr);
        free(where);
        return rc;
    }
    free(where);
    if (drc < 0) return errf_ret(-1, err, errlen, "%s", derr);
    int rc = fetch_all(p, err, errlen);
    if (rc) return rc;
    if (p->c->json)
        print_json(p, NULL);
    else
        print_text(p);
    return 0;
}

int model_pull_cmd(mctx *c, int argc, char **argv)
{
    pull p = {.c = c};
    const char *v = getenv("GPUMOD_VERBOSE");
    p.verbose = v && *v && strcmp(v, "0");
    int rc = parse_args(&p, argc, argv);
    if (rc) return rc > 0 ? EXIT_OK : EXIT_USAGE;
    char err[2048] = "";
    rc = run(&p, err, sizeof err);
    if (rc < 0 && *c->interrupted) rc = EXIT_INTERRUPTED; /* in a listing, a hash, a wait */
    if (rc == EXIT_INTERRUPTED)
        fprintf(stderr, "gpumod: model pull: interrupted; run the same command again to resume\n");
    else if (rc < 0)
        fprintf(stderr, "gpumod: model pull: %s\n", err);
    for (size_t i = 0; i < p.n; i++) {
        free(p.parts[i].final);
        free(p.parts[i].tmp);
        free(p.parts[i].lockp);
        free(p.parts[i].etagp);
        free(p.parts[i].rel);
    }
    free(p.parts);
    free(p.dir);
    msource_release(&p.src);
    if (p.hub_ok) mhub_release(&p.hub);
    return rc == EXIT_INTERRUPTED ? EXIT_INTERRUPTED : rc < 0 ? EXIT_REFUSED : rc;
}
