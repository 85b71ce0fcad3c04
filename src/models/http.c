/* http.c (models) - one blocking request: libcurl easy, redirects by hand.
 *
 * libcurl would follow redirects itself, but then the checks that matter
 * here would be its, not ours: every hop must be https or http to a
 * loopback address (a Hub mirror on the same host), and the token goes to
 * the first URL's origin only (a resolve of the Hub redirects to a CDN
 * with a signed URL that needs none and must not see it).  So
 * FOLLOWLOCATION is off and each 3xx is read, checked and fetched again,
 * up to max_redirects, inside one deadline.  URLs in messages lose their
 * query (a signed URL's signature is nobody's business). */
#include "models/http.h"

#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "util/clock.h"
#include "util/errf.h"

#define DEFAULT_MAX_BYTES (16u << 20)
#define KEEP_ERROR_BODY 65536

static pthread_once_t once = PTHREAD_ONCE_INIT;
static CURLcode init_rc;

static void init(void)
{
    init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

typedef struct hop {
    const mhttp_opts *o;
    mhttp_reply *r;
    long status; /* from the status line, for the write callback */
    bool too_big, sink_failed;
    bool has_location;
    char *location; /* a 3xx's absolute URL (CURLINFO_REDIRECT_URL) */
} hop;

/* "https://h/p?sig=..." shown as "https://h/p" */
static void url_show(const char *url, char *out, size_t len)
{
    size_t n = strcspn(url, "?#");
    snprintf(out, len, "%.*s", (int)(n < 400 ? n : 400), url);
}

static uint64_t parse_u64(const char *s)
{
    if (!isdigit((unsigned char)*s)) return MHTTP_UNKNOWN;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    return end == s ? MHTTP_UNKNOWN : (uint64_t)v;
}

/* a header value without surrounding spaces and quotes; keep_weak: a weak
 * validator keeps its W/ (If-Range must not use it) */
static void etag_value(const char *v, size_t n, bool keep_weak, char *out, size_t len)
{
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    bool weak = n >= 2 && !strncmp(v, "W/", 2);
    if (weak) v += 2, n -= 2;
    if (n >= 2 && v[0] == '"' && v[n - 1] == '"') v++, n -= 2;
    snprintf(out, len, "%s%.*s", weak && keep_weak ? "W/" : "", (int)(n < len - 3 ? n : len - 3),
             v);
}

/* decimal digits only: no sign, no space (sscanf's %llu takes both) */
static bool digits_u64(const char **p, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    if (!isdigit((unsigned char)*s)) return false;
    for (; isdigit((unsigned char)*s); s++)
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
            return false;
    *p = s;
    *out = v;
    return true;
}

/* "bytes A-B/T" or "bytes * /T" (without the space) */
static void content_range(mhttp_reply *r, const char *val)
{
    uint64_t a, b, t;
    const char *p = val;
    if (strncmp(p, "bytes ", 6)) return;
    p += 6;
    if (p[0] == '*' && p[1] == '/') {
        p += 2;
        if (digits_u64(&p, &t) && !*p) r->range_total = t;
        return;
    }
    if (!digits_u64(&p, &a) || *p++ != '-' || !digits_u64(&p, &b) || *p++ != '/' || a > b) return;
    if (p[0] == '*' && !p[1]) /* the server does not know the total */
        r->range_start = a, r->range_end = b;
    else if (digits_u64(&p, &t) && !*p && b < t)
        r->range_start = a, r->range_end = b, r->range_total = t;
}

/* Link: <url>; rel="next", <url2>; rel="prev" */
static void link_next(const char *v, size_t n, char *out, size_t len, bool *overlong)
{
    const char *end = v + n;
    while (v < end) {
        const char *lt = memchr(v, '<', (size_t)(end - v));
        if (!lt) return;
        const char *gt = memchr(lt, '>', (size_t)(end - lt));
        if (!gt) return;
        const char *comma = memchr(gt, ',', (size_t)(end - gt));
        const char *pend = comma ? comma : end;
        char params[256];
        snprintf(params, sizeof params, "%.*s", (int)(pend - gt - 1), gt + 1);
        if (strstr(params, "rel=\"next\"") || strstr(params, "rel=next")) {
            if ((size_t)(gt - lt - 1) >= len)
                *overlong = true;
            else
                snprintf(out, len, "%.*s", (int)(gt - lt - 1), lt + 1);
            return;
        }
        v = pend + (comma ? 1 : 0);
    }
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    hop *h = ud;
    size_t len = size * n;
    mhttp_reply *r = h->r;
    if (len >= 5 && !strncmp(p, "HTTP/", 5)) { /* a new status line: a new response */
        const char *sp = memchr(p, ' ', len);
        h->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        r->hop_status = (int)h->status;
        h->has_location = false;
        r->etag[0] = 0;
        r->content_length = r->range_start = r->range_end = r->range_total = MHTTP_UNKNOWN;
        r->link_next[0] = r->error_code[0] = 0;
        r->link_overlong = false;
        return len;
    }
    const char *colon = memchr(p, ':', len);
    if (!colon) return len;
    size_t kn = (size_t)(colon - p);
    const char *v = colon + 1;
    size_t vn = len - kn - 1;
    while (vn && (*v == ' ' || *v == '\t'))
        v++, vn--;
    while (vn && (v[vn - 1] == '\r' || v[vn - 1] == '\n'))
        vn--;
    char val[2048];
    snprintf(val, sizeof val, "%.*s", (int)(vn < sizeof val ? vn : sizeof val - 1), v);
#define IS(name) (kn == sizeof name - 1 && !strncasecmp(p, name, kn))
    if (IS("Location"))
        h->has_location = true;
    else if (IS("Content-Length"))
        r->content_length = parse_u64(val);
    else if (IS("ETag"))
        etag_value(v, vn, true, r->etag, sizeof r->etag);
    else if (IS("X-Linked-Etag"))
        etag_value(v, vn, false, r->linked_etag, sizeof r->linked_etag);
    else if (IS("X-Linked-Size"))
        r->linked_size = parse_u64(val);
    else if (IS("X-Error-Code"))
        snprintf(r->error_code, sizeof r->error_code, "%.63s", val);
    else if (IS("Link"))
        link_next(v, vn, r->link_next, sizeof r->link_next, &r->link_overlong);
    else if (IS("Content-Range"))
        content_range(r, val);
#undef IS
    return len;
}

static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
    hop *h = ud;
    size_t len = size * n;
    h->r->bytes_in += len;
    bool ok = h->status >= 200 && h->status < 300;
    if (h->o->sink && ok && !h->o->head) {
        if (h->o->sink(h->o->sink_ud, p, len) < 0) {
            h->sink_failed = true;
            return 0;
        }
        return len;
    }
    if (h->status >= 300 && h->status < 400) return len; /* a redirect's body: dropped */
    uint64_t cap = h->o->max_bytes ? h->o->max_bytes : DEFAULT_MAX_BYTES;
    if (!ok && cap > KEEP_ERROR_BODY) cap = KEEP_ERROR_BODY;
    if (h->r->body.len + len > cap) {
        if (!ok) return len; /* an error page: what fits is enough */
        h->too_big = true;
        return 0;
    }
    buf_add(&h->r->body, p, len);
    return len;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    const hop *h = ud;
    return h->o->interrupted && *h->o->interrupted ? 1 : 0;
}

int mhttp_origin(const char *url, char *out, size_t outlen)
{
    CURLU *u = curl_url();
    if (!u) return -1;
    char *scheme = NULL, *host = NULL, *port = NULL;
    int rc = -1;
    if (!curl_url_set(u, CURLUPART_URL, url, 0) && !curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) &&
        !curl_url_get(u, CURLUPART_HOST, &host, 0) &&
        !curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT)) {
        for (char *c = scheme; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        for (char *c = host; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        snprintf(out, outlen, "%s://%s:%s", scheme, host, port);
        rc = 0;
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return rc;
}

static bool loopback_host(const char *host)
{
    if (!strcasecmp(host, "localhost") || !strcmp(host, "[::1]") || !strcmp(host, "::1"))
        return true;
    unsigned a, b, c, d;
    char extra;
    return sscanf(host, "%u.%u.%u.%u%c", &a, &b, &c, &d, &extra) == 4 && a == 127 && b < 256 &&
           c < 256 && d < 256;
}

int mhttp_url_ok(const char *url, char *err, size_t errlen)
{
    char show[512];
    url_show(url, show, sizeof show);
    CURLU *u = curl_url();
    if (!u) return errf_ret(-1, err, errlen, "out of memory");
    char *scheme = NULL, *host = NULL;
    int rc = 0;
    if (curl_url_set(u, CURLUPART_URL, url, 0) || curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
        curl_url_get(u, CURLUPART_HOST, &host, 0))
        rc = errf_ret(-1, err, errlen, "'%s' is not a URL (expected https://host/...)", show);
    else if (strcasecmp(scheme, "https") && strcasecmp(scheme, "http"))
        rc = errf_ret(-1, err, errlen, "'%s': the scheme must be https (http only on loopback)",
                      show);
    else if (!strcasecmp(scheme, "http") && !loopback_host(host))
        rc = errf_ret(-1, err, errlen,
                      "'%s': http:// is accepted only for loopback addresses; use https://", show);
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return rc;
}

const char *mhttp_status_text(int status, const char *error_code)
{
    if (status >= 200 && status < 300) return NULL;
    bool gated = error_code && !strcmp(error_code, "GatedRepo");
    switch (status) {
    case 401:
        return gated ? "unauthorized: a gated repository; accept its terms on the Hub and set "
                       "HF_TOKEN "
                       "(or log in: $HF_HOME/token)"
                     : "unauthorized: the Hub wants a token (set HF_TOKEN, or $HF_HOME/token), or "
                       "the "
                       "repository does not exist";
    case 403:
        return "forbidden: the token has no access to this repository (gated: accept its terms "
               "on the Hub with the token's account)";
    case 404:
        return "not found";
    case 416:
        return "range not satisfiable";
    case 429:
        return "rate limited by the server (429): try again later";
    default:
        return status >= 500 ? "the server failed" : "unexpected status";
    }
}

static void set_common(CURL *e, hop *h, char *errbuf)
{
    const mhttp_opts *o = h->o;
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(o->connect_ms > 0 ? o->connect_ms : 10000));
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                     (long)((o->stall_ms > 0 ? o->stall_ms : 30000) + 999) / 1000);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, h);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, h);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, h);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "gpumod/" GPUMOD_VERSION);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, NULL); /* byte ranges mean the file's bytes */
    if (o->head) curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    if (o->range_len) {
        char range[64];
        if (o->range_len == MHTTP_UNKNOWN)
            snprintf(range, sizeof range, "%" PRIu64 "-", o->range_from);
        else
            snprintf(range, sizeof range, "%" PRIu64 "-%" PRIu64, o->range_from,
                     o->range_from + o->range_len - 1);
        curl_easy_setopt(e, CURLOPT_RANGE, range);
    }
}

static int hop_error(mhttp_reply *r, const char *url, CURLcode rc, const char *errbuf, const hop *h,
                     int64_t timeout_ms, long os_errno)
{
    char show[512];
    url_show(url, show, sizeof show);
    const char *detail = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    const char *m = h->o->head ? "HEAD" : "GET";
    if (rc == CURLE_COULDNT_CONNECT)
        return errf_ret(-1, r->err, sizeof r->err, "connect to %s: %s", show,
                        os_errno ? strerror((int)os_errno) : detail);
    if (rc == CURLE_OPERATION_TIMEDOUT && timeout_ms > 0 && strstr(detail, "Operation timed out"))
        return errf_ret(-1, r->err, sizeof r->err,
                        "%s %s: no answer within the deadline (%" PRId64 " ms)", m, show,
                        timeout_ms);
    if (rc == CURLE_OPERATION_TIMEDOUT)
        return errf_ret(-1, r->err, sizeof r->err, "%s %s: %s", m, show, detail);
    if (rc == CURLE_ABORTED_BY_CALLBACK)
        return errf_ret(-1, r->err, sizeof r->err, "%s %s: interrupted", m, show);
    if (rc == CURLE_WRITE_ERROR && h->too_big) r->over_bound = true;
    if (rc == CURLE_WRITE_ERROR && h->too_big)
        return errf_ret(-1, r->err, sizeof r->err, "%s %s: the reply is over %" PRIu64 " bytes", m,
                        show, h->o->max_bytes ? h->o->max_bytes : (uint64_t)DEFAULT_MAX_BYTES);
    if (rc == CURLE_WRITE_ERROR && h->sink_failed)
        return errf_ret(-1, r->err, sizeof r->err, "%s %s: stopped by the writer", m, show);
    if (rc == CURLE_PARTIAL_FILE)
        return errf_ret(-1, r->err, sizeof r->err,
                        "%s %s: the connection closed before the whole body (truncated)", m, show);
    return errf_ret(-1, r->err, sizeof r->err, "%s %s: %s", m, show, detail);
}

/* One request to url; *next gets the Location of a 3xx (else ""). */
static int one_hop(const char *url, bool with_token, hop *h, int64_t deadline_ms)
{
    const mhttp_opts *o = h->o;
    mhttp_reply *r = h->r;
    CURL *e = curl_easy_init();
    if (!e) return errf_ret(-1, r->err, sizeof r->err, "libcurl could not make a handle");
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *hl = curl_slist_append(NULL, "Accept: */*");
    char *auth = NULL;
    if (with_token && o->token) {
        auth = xasprintf("Authorization: Bearer %s", o->token);
        hl = curl_slist_append(hl, auth);
    }
    char *ifr = NULL;
    if (o->if_range && o->range_len && strncmp(o->if_range, "W/", 2)) {
        ifr = xasprintf("If-Range: \"%s\"", o->if_range);
        hl = curl_slist_append(hl, ifr);
    }
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
    set_common(e, h, errbuf);
    int64_t left_ms = 0;
    if (o->timeout_ms > 0) {
        left_ms = (deadline_ms - clock_mono_ms());
        if (left_ms < 1) left_ms = 1;
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)left_ms);
    }
    h->status = 0;
    h->has_location = false;
    free(h->location);
    h->location = NULL;
    CURLcode rc = curl_easy_perform(e);
    long status = 0, os_errno = 0;
    char *redir = NULL;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &os_errno);
    if (rc == CURLE_OK && h->has_location &&
        curl_easy_getinfo(e, CURLINFO_REDIRECT_URL, &redir) == CURLE_OK && redir)
        h->location = xstrdup(redir);
    int ret = 0;
    if (rc != CURLE_OK)
        ret = hop_error(r, url, rc, errbuf, h, o->timeout_ms, os_errno);
    else
        r->status = (int)status;
    if (auth) memset(auth, 0, strlen(auth));
    free(auth);
    free(ifr);
    curl_slist_free_all(hl);
    curl_easy_cleanup(e);
    return ret;
}

int mhttp_get(const char *url, const mhttp_opts *o, mhttp_reply *r)
{
    memset(r, 0, sizeof *r);
    buf_init(&r->body);
    r->linked_size = MHTTP_UNKNOWN;
    r->content_length = r->range_start = r->range_end = r->range_total = MHTTP_UNKNOWN;
    pthread_once(&once, init);
    if (init_rc != CURLE_OK)
        return errf_ret(-1, r->err, sizeof r->err, "libcurl: %s", curl_easy_strerror(init_rc));
    if (mhttp_url_ok(url, r->err, sizeof r->err) < 0) return -1;
    char origin[512], here[512];
    if (mhttp_origin(o->token_origin ? o->token_origin : url, origin, sizeof origin) < 0)
        return errf_ret(-1, r->err, sizeof r->err, "'%s' is not a URL", url);
    bool first_https = !strncasecmp(url, "https:", 6);
    int64_t deadline = clock_mono_ms() + (o->timeout_ms > 0 ? o->timeout_ms : 0);
    int maxr = o->max_redirects > 0 ? o->max_redirects : 5;
    char *cur = xstrdup(url);
    hop h = {.o = o, .r = r};
    for (;;) {
        bool same = mhttp_origin(cur, here, sizeof here) == 0 && !strcmp(here, origin);
        if (one_hop(cur, same, &h, deadline) < 0) break;
        if (r->status < 300 || r->status >= 400 || !h.has_location) {
            free(h.location);
            r->final_url = cur;
            return 0;
        }
        char show[512];
        url_show(cur, show, sizeof show);
        if (++r->redirects > maxr) {
            errf_ret(-1, r->err, sizeof r->err, "GET %s: more than %d redirects", show, maxr);
            break;
        }
        char *next = h.location;
        h.location = NULL;
        if (!next) {
            errf_ret(-1, r->err, sizeof r->err, "GET %s: a redirect to a bad location", show);
            break;
        }
        char why[512];
        if (mhttp_url_ok(next, why, sizeof why) < 0) {
            errf_ret(-1, r->err, sizeof r->err, "GET %s: redirected to %s", show, why);
            free(next);
            break;
        }
        if (first_https && strncasecmp(next, "https:", 6)) {
            url_show(next, why, sizeof why);
            errf_ret(-1, r->err, sizeof r->err,
                     "GET %s: redirected from https to '%s': refused (a redirect stays on https)",
                     show, why);
            free(next);
            break;
        }
        free(cur);
        cur = next;
        buf_clear(&r->body);
    }
    free(cur);
    free(h.location);
    r->status = 0;
    return -1;
}

void mhttp_release(mhttp_reply *r)
{
    buf_release(&r->body);
    free(r->final_url);
    r->final_url = NULL;
}
