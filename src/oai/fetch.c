/* fetch.c - one blocking HTTP request with a deadline (libcurl easy), for
 * what bench asks a server outside the load: /v1/models, /props,
 * /tokenize, /metrics.  The body is kept whole (up to 64 MiB: a /metrics
 * page of a big vLLM is a few hundred KiB; more is a wrong URL).  Every
 * request is bounded by min(its own deadline, the run's --timeout) and
 * ends early when the SIGINT flag given to bfetch_limit is set. */
#include "oai/fetch.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#define FETCH_MAX (64u << 20)

typedef struct fctx {
    bfetch *f;
    bool too_big;
} fctx;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static CURLcode init_rc;
static volatile int *abort_flag;
static int64_t cap_ms;

void bfetch_limit(volatile int *interrupted, int64_t max_ms)
{
    abort_flag = interrupted;
    cap_ms = max_ms;
}

/* libcurl asks about once a second and on every transfer step: a SIGINT
 * ends the request within that */
static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    return abort_flag && *abort_flag ? 1 : 0;
}

static void init(void)
{
    init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
    fctx *x = ud;
    size_t len = size * n;
    if (x->f->body.len + len > FETCH_MAX) {
        x->too_big = true;
        return 0;
    }
    buf_add(&x->f->body, p, len);
    return len;
}

int bfetch_do(const char *url, const char *const *headers, const char *body, int64_t timeout_ms, bfetch *f)
{
    memset(f, 0, sizeof *f);
    buf_init(&f->body);
    pthread_once(&once, init);
    if (init_rc != CURLE_OK) {
        snprintf(f->err, sizeof f->err, "libcurl: curl_global_init: %s", curl_easy_strerror(init_rc));
        return -1;
    }
    if (cap_ms > 0 && (timeout_ms <= 0 || timeout_ms > cap_ms))
        timeout_ms = cap_ms;
    if (abort_flag && *abort_flag) {
        snprintf(f->err, sizeof f->err, "%s %s: interrupted", body ? "POST" : "GET", url);
        return -1;
    }
    CURL *e = curl_easy_init();
    if (!e) {
        snprintf(f->err, sizeof f->err, "%s: libcurl could not make a handle", url);
        return -1;
    }
    struct curl_slist *hl = NULL;
    if (body)
        hl = curl_slist_append(hl, "Content-Type: application/json");
    hl = curl_slist_append(hl, "Expect:");
    for (const char *const *h = headers; h && *h; h++)
        hl = curl_slist_append(hl, *h);
    char errbuf[CURL_ERROR_SIZE] = "";
    fctx x = {f, false};
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
    if (body) {
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    }
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 1));
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    CURLcode rc = curl_easy_perform(e);
    long status = 0, os_errno = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &os_errno);
    const char *detail = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    int ret = 0;
    switch (rc) {
    case CURLE_OK:
        f->status = (int)status;
        break;
    case CURLE_COULDNT_CONNECT:
        snprintf(f->err, sizeof f->err, "connect to %s: %s", url, os_errno ? strerror((int)os_errno) : detail);
        ret = -1;
        break;
    case CURLE_OPERATION_TIMEDOUT:
        snprintf(f->err, sizeof f->err, "timed out after %lld ms: %s %s", (long long)timeout_ms,
                 body ? "POST" : "GET", url);
        ret = -1;
        break;
    case CURLE_ABORTED_BY_CALLBACK:
        snprintf(f->err, sizeof f->err, "%s %s: interrupted", body ? "POST" : "GET", url);
        ret = -1;
        break;
    case CURLE_WRITE_ERROR:
        if (x.too_big) {
            snprintf(f->err, sizeof f->err, "%s: the response is larger than %u MiB", url, FETCH_MAX >> 20);
            ret = -1;
            break;
        }
        /* fall through */
    default:
        snprintf(f->err, sizeof f->err, "%s %s: %s", body ? "POST" : "GET", url, detail);
        ret = -1;
        break;
    }
    if (ret < 0) {
        f->status = 0;
        buf_clear(&f->body);
    }
    curl_slist_free_all(hl);
    curl_easy_cleanup(e);
    return ret;
}

void bfetch_release(bfetch *f)
{
    buf_release(&f->body);
}
