/* remote.c (models) - gguf_io over HTTP Range requests.
 *
 * open() asks for the first window (bytes 0..256 KiB-1) and learns the
 * file's size from the 206's Content-Range; that window is kept, so the
 * reader's first pread costs nothing.  Each later pread is one Range
 * request for exactly the bytes asked, to the URL the first one was
 * redirected to (a Hub resolve costs its redirect once, not per window).
 * A server that ignores Range answers 200 with the whole file: accepted
 * when that whole file fits the first window (a tiny model), refused
 * otherwise, since reading the header would mean downloading the weights.
 * A reply that claims another total, starts elsewhere or is longer than
 * asked is refused: the reader's bounds checks rely on the size. */
#include "models/remote.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/errf.h"

#define WIN_MIN (256u << 10)
#define WIN_MAX (8u << 20)
/* a header bigger than this is a hostile one (real ones: a few MiB, the
 * biggest tokenizers ~20 MiB); so is one read in more requests */
#define FILE_MAX_BYTES (512ull << 20)
#define FILE_MAX_REQUESTS 1000
/* and for a model with all its split parts (split.count may claim 65535) */
#define MODEL_MAX_BYTES (2048ull << 20)
#define MODEL_MAX_REQUESTS 5000

typedef struct rfile {
    mremote *m;
    char *url;  /* the one asked for */
    char *show; /* url without its query (a signature): what errors name */
    uint64_t fetched;
    int requests;
    char *target; /* where its first request ended up after redirects */
    uint64_t size;
    buf cache; /* the last window fetched */
    uint64_t cache_off;
} rfile;

static char *shown(const char *url)
{
    return xstrndup(url, strcspn(url, "?#"));
}

static int status_error(const mhttp_reply *r, const char *url, char *err, size_t errlen)
{
    const char *what = mhttp_status_text(r->status, r->error_code);
    return errf_ret(-1, err, errlen, "HTTP %d from %s: %s", r->status, url, what ? what : "?");
}

static int fetch(rfile *f, const char *url, uint64_t off, uint64_t len, mhttp_reply *r, char *err,
                 size_t errlen)
{
    mhttp_opts o = f->m->base;
    o.range_from = off;
    o.range_len = len;
    o.max_bytes = len;
    /* the token belongs to the URL asked for, never to where it redirected */
    if (!o.token_origin) o.token_origin = f->url;
    if (f->m->requests >= MODEL_MAX_REQUESTS || f->m->bytes_fetched + len > MODEL_MAX_BYTES) {
        memset(r, 0, sizeof *r);
        return errf_ret(-1, err, errlen,
                        "%s: the model's headers go on past %llu MiB or %d requests: refused as "
                        "hostile",
                        f->show, MODEL_MAX_BYTES >> 20, MODEL_MAX_REQUESTS);
    }
    if (f->requests >= FILE_MAX_REQUESTS || f->fetched + len > FILE_MAX_BYTES) {
        memset(r, 0, sizeof *r);
        return errf_ret(-1, err, errlen,
                        "%s: the header goes on past %llu MiB or %d requests: refused as hostile",
                        f->show, FILE_MAX_BYTES >> 20, FILE_MAX_REQUESTS);
    }
    f->m->requests++;
    f->requests++;
    int rc = mhttp_get(url, &o, r);
    f->m->bytes_fetched += r->bytes_in;
    f->fetched += r->bytes_in;
    if (rc < 0) {
        if (r->over_bound)
            return errf_ret(-1, err, errlen,
                            "%s ignores Range requests (it sent more than the %" PRIu64
                            " bytes asked): reading the header would mean downloading the file",
                            f->show, len);
        return errf_ret(-1, err, errlen, "%s", r->err);
    }
    return 0;
}

static int remote_open(void *ctx, const char *name, void **h, uint64_t *size, char *err,
                       size_t errlen)
{
    rfile *f = xcalloc(1, sizeof *f);
    f->m = ctx;
    f->url = xstrdup(name);
    f->show = shown(name);
    buf_init(&f->cache);
    mhttp_reply r;
    int rc = fetch(f, name, 0, WIN_MIN, &r, err, errlen);
    if (rc == 0 && r.status == 416 && r.range_total == 0) {
        f->size = 0; /* an empty file: the reader says "truncated" */
    } else if (rc == 0 && r.status == 206) {
        if (r.range_start != 0 || r.range_total == MHTTP_UNKNOWN || r.body.len > WIN_MIN ||
            r.body.len != r.range_end + 1)
            rc = errf_ret(-1, err, errlen,
                          "%s: a 206 reply whose Content-Range does not match the %zu bytes sent",
                          f->show, r.body.len);
        f->size = r.range_total;
    } else if (rc == 0 && r.status == 200) {
        f->size = r.body.len; /* the whole file, small enough to fit the window */
    } else if (rc == 0) {
        rc = status_error(&r, f->show, err, errlen);
    }
    if (rc == 0) {
        buf_add(&f->cache, r.body.p ? r.body.p : "", r.body.len);
        f->cache_off = 0;
        f->target = xstrdup(r.final_url ? r.final_url : name);
    }
    mhttp_release(&r);
    if (rc < 0) {
        buf_release(&f->cache);
        free(f->url);
        free(f->show);
        free(f);
        return -1;
    }
    *size = f->size;
    *h = f;
    return 0;
}

static long remote_pread(void *h, void *dst, size_t n, uint64_t off, char *err, size_t errlen)
{
    rfile *f = h;
    if (off >= f->size) return 0;
    if (n > f->size - off) n = (size_t)(f->size - off);
    if (off >= f->cache_off && off < f->cache_off + f->cache.len) {
        size_t k = (size_t)(f->cache_off + f->cache.len - off);
        if (k > n) k = n;
        memcpy(dst, f->cache.p + (off - f->cache_off), k);
        return (long)k;
    }
    mhttp_reply r;
    int rc = fetch(f, f->target, off, n, &r, err, errlen);
    if (rc == 0 && r.status != 206) {
        if (r.status == 200)
            rc = errf_ret(-1, err, errlen, "%s ignores Range requests (200 for bytes %" PRIu64 "-)",
                          f->show, off);
        else
            rc = status_error(&r, f->show, err, errlen);
    } else if (rc == 0 && (r.range_start != off || r.range_total != f->size || r.body.len > n ||
                           r.body.len != r.range_end - r.range_start + 1)) {
        rc = errf_ret(-1, err, errlen,
                      "%s: asked for %zu bytes at %" PRIu64 " of %" PRIu64
                      ", the reply's Content-Range does not match (the file changed?)",
                      f->show, n, off, f->size);
    }
    long got = -1;
    if (rc == 0) {
        buf_clear(&f->cache);
        buf_add(&f->cache, r.body.p ? r.body.p : "", r.body.len);
        f->cache_off = off;
        memcpy(dst, r.body.p, r.body.len);
        got = (long)r.body.len;
    }
    mhttp_release(&r);
    return got;
}

static void remote_close(void *h)
{
    rfile *f = h;
    buf_release(&f->cache);
    free(f->url);
    free(f->show);
    free(f->target);
    free(f);
}

void mremote_io(mremote *m, gguf_io *io)
{
    *io = (gguf_io){remote_open, remote_pread, remote_close, m, WIN_MIN, WIN_MAX};
}
