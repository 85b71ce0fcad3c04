/* test_http_diff.c - the differential test: every message of
 * tests/fixtures/http/{valid,invalid}/ through gpumod's parser and
 * through llhttp (strict: every llhttp_set_lenient_* left off), TAP, one
 * line per file.
 *
 * Per file: ours must accept the files under valid/ and refuse those
 * under invalid/.  Where both parsers accept, they must agree on every
 * message: method, target, version, status, fields (names and values),
 * body bytes and keep-alive.
 * Where they disagree on accept/refuse, the file must be in `divergences`
 * below with the right direction (the same list, with the reasons, is in
 * docs/http.md); an entry that is not (or no longer) a disagreement, or
 * names no file, fails too, so the table cannot go stale.
 *
 * The file name says what it holds: req-* requests, res-* responses,
 * res-head-* responses to HEAD (ours: http_parser_skip_body; llhttp:
 * on_headers_complete answers 1).  Trailer fields are not compared: ours
 * validates and drops them (docs/http.md). */
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llhttp.h"
#include "net/http.h"

enum { OURS_REFUSES = 1, OURS_ACCEPTS = 2 };

static const struct divergence {
    const char *file; /* "valid/NAME.http" or "invalid/NAME.http" */
    int dir;
    const char *why;
} divergences[] = {
    /* ours accepts, llhttp 8.1 refuses */
    {"valid/req-unknown-method.http", OURS_ACCEPTS,
     "any token is a method (RFC 9110 9.1); the server answers 501 itself, llhttp knows a fixed list"},
    {"valid/req-chunked-ext.http", OURS_ACCEPTS,
     "RFC 9112 7.1.1 allows any number of chunk extensions; llhttp 8.1 refuses one after a valued one (;a=b;c)"},
    {"valid/req-chunked-ext-qpair.http", OURS_ACCEPTS,
     "RFC 9112 7.1.1 quoted-string values may hold quoted-pairs (\\\"); llhttp 8.1 refuses them"},
    /* ours refuses, llhttp 8.1 accepts */
    {"invalid/req-no-host.http", OURS_REFUSES, "RFC 9112 3.2: an HTTP/1.1 request without Host is a 400"},
    {"invalid/req-two-hosts.http", OURS_REFUSES, "RFC 9112 3.2: more than one Host is a 400"},
    {"invalid/req-te-http10.http", OURS_REFUSES,
     "RFC 9112 6.1: Transfer-Encoding in an HTTP/1.0 message means faulty framing"},
    {"invalid/req-te-gzip-chunked.http", OURS_REFUSES,
     "only chunked is decoded; a coding before it is a 501, not passed through undecoded"},
    {"invalid/req-target-high.http", OURS_REFUSES,
     "request-target bytes are 0x21..0x7e (RFC 3986); non-ASCII must be percent-encoded"},
    {"invalid/req-double-space.http", OURS_REFUSES, "RFC 9112 3: exactly one SP between request-line parts"},
    {"invalid/req-http09.http", OURS_REFUSES, "no HTTP/0.9: a request line without a version is a 400"},
    {"invalid/req-version-20.http", OURS_REFUSES, "only HTTP/1.0 and HTTP/1.1 on this connection; others are a 505"},
    {"invalid/req-leading-crlf.http", OURS_REFUSES,
     "strict: no empty line before the request line (RFC 9112 2.2 makes ignoring it optional)"},
    {"invalid/req-empty-name.http", OURS_REFUSES, "a field name is a token, at least one tchar (RFC 9110 5.1)"},
    {"invalid/req-space-before-colon.http", OURS_REFUSES,
     "RFC 9112 5.1: whitespace between field name and colon MUST be rejected (llhttp keeps it in the name)"},
    {"invalid/req-obs-fold.http", OURS_REFUSES, "RFC 9112 5.2: obs-fold may be rejected with 400; we do"},
    {"invalid/req-trailer-obs-fold.http", OURS_REFUSES, "trailer lines follow the field rules: no obs-fold"},
    {"invalid/req-chunk-no-crlf.http", OURS_REFUSES,
     "the CRLF after chunk data is required; llhttp 8.1 skips any two bytes there (a smuggling vector, strict in llhttp 9)"},
    {"invalid/req-after-close.http", OURS_REFUSES,
     "bytes after a message that closes the connection are an error; llhttp 8.1 drops them silently"},
    {"invalid/res-status-600.http", OURS_REFUSES, "status codes are 100..599 (RFC 9110 15)"},
    {"invalid/res-status-099.http", OURS_REFUSES, "status codes are 100..599 (RFC 9110 15)"},
    {"invalid/res-status-2digit.http", OURS_REFUSES, "the status code is exactly 3 digits (RFC 9112 4)"},
    {"invalid/res-no-space-after-status.http", OURS_REFUSES,
     "RFC 9112 4: the SP after the status code is required even with an empty reason"},
    {"invalid/res-ctl-in-reason.http", OURS_REFUSES,
     "reason-phrase is HTAB, SP, VCHAR and obs-text only (RFC 9112 4)"},
    {"invalid/res-te-gzip.http", OURS_REFUSES,
     "a response coding we cannot decode is refused (502), not read until close"},
};

static int ndiv = (int)(sizeof divergences / sizeof divergences[0]);

/* ---- one parse, as a canonical log ---- */

typedef struct side {
    buf log;
    buf name, value; /* llhttp: the field being read */
    buf body;
    bool in_head;    /* llhttp: fields before on_headers_complete */
    bool head_resp;
    bool accepted;
    char why[256];
} side;

static void log_field(buf *log, const char *n, size_t nl, const char *v, size_t vl)
{
    buf_adds(log, "F ");
    buf_add(log, n, nl);
    buf_adds(log, ": ");
    buf_add(log, v, vl);
    buf_adds(log, "\n");
}

static void log_body_end(side *s, bool ka)
{
    buf_printf(&s->log, "B %zu:", s->body.len);
    buf_add(&s->log, s->body.p, s->body.len);
    buf_printf(&s->log, "\nK %d\n", ka);
    buf_clear(&s->body);
}

static void ours(side *s, http_kind kind, bool head_resp, const char *d, size_t n)
{
    http_limits lim = {65536, 256, 8192, 1 << 24};
    http_parser p;
    http_parser_init(&p, kind, &lim);
    if (head_resp) http_parser_skip_body(&p);
    size_t off = 0, used;
    view body;
    s->accepted = false;
    for (;;) {
        http_event ev = http_parse(&p, d + off, n - off, &used, &body);
        off += used;
        bool eof = ev == HTTP_EV_NEED_MORE;
        if (eof) ev = http_parse_eof(&p);
        if (eof && ev == HTTP_EV_NEED_MORE) {
            s->accepted = true;
            break;
        }
        if (ev == HTTP_EV_ERROR) {
            snprintf(s->why, sizeof s->why, "%s at byte %llu", p.err.msg, (unsigned long long)p.err.offset);
            break;
        }
        const http_msg *m = &p.msg;
        if (ev == HTTP_EV_HEAD) {
            if (kind == HTTP_KIND_REQUEST) {
                buf_adds(&s->log, "M ");
                buf_add(&s->log, m->method.p, m->method.len);
                buf_adds(&s->log, " ");
                buf_add(&s->log, m->target.p, m->target.len);
                buf_printf(&s->log, " 1.%d\n", m->minor);
            } else {
                buf_printf(&s->log, "S %d 1.%d\n", m->status, m->minor);
            }
            for (size_t i = 0; i < m->n_fields; i++)
                log_field(&s->log, m->fields[i].name.p, m->fields[i].name.len, m->fields[i].value.p,
                          m->fields[i].value.len);
        } else if (ev == HTTP_EV_BODY) {
            buf_add(&s->body, body.p, body.len);
        } else if (ev == HTTP_EV_DONE) {
            log_body_end(s, m->keep_alive);
            if (head_resp) http_parser_skip_body(&p);
            if (eof) { /* a read-until-close body ended at EOF */
                s->accepted = true;
                break;
            }
        }
    }
    http_parser_release(&p);
}

static side *ll_side(llhttp_t *p)
{
    return p->data;
}

static int ll_add(buf *b, const char *at, size_t len)
{
    buf_add(b, at, len);
    return 0;
}

static int ll_url(llhttp_t *p, const char *at, size_t len)
{
    return ll_add(&ll_side(p)->name, at, len);
}

static int ll_field(llhttp_t *p, const char *at, size_t len)
{
    return ll_side(p)->in_head ? ll_add(&ll_side(p)->name, at, len) : 0;
}

static int ll_value(llhttp_t *p, const char *at, size_t len)
{
    return ll_side(p)->in_head ? ll_add(&ll_side(p)->value, at, len) : 0;
}

static int ll_message_begin(llhttp_t *p)
{
    side *s = ll_side(p);
    s->in_head = true;
    buf_clear(&s->name);
    buf_clear(&s->value);
    return 0;
}

/* the start line is logged when the URL is complete (requests) or at the
 * first field / end of head (responses): llhttp knows the version by then */
static bool ll_start_logged;

static void ll_start(llhttp_t *p)
{
    side *s = ll_side(p);
    if (ll_start_logged) return;
    ll_start_logged = true;
    if (p->type == HTTP_REQUEST) {
        buf_printf(&s->log, "M %s ", llhttp_method_name((llhttp_method_t)p->method));
        buf_add(&s->log, s->name.p, s->name.len);
        buf_printf(&s->log, " %d.%d\n", p->http_major, p->http_minor);
    } else {
        buf_printf(&s->log, "S %d %d.%d\n", p->status_code, p->http_major, p->http_minor);
    }
    buf_clear(&s->name);
}

static int ll_field_start(llhttp_t *p, const char *at, size_t len)
{
    if (ll_side(p)->in_head) ll_start(p);
    return ll_field(p, at, len);
}

static int ll_value_complete(llhttp_t *p)
{
    side *s = ll_side(p);
    if (!s->in_head) return 0;
    /* llhttp keeps trailing OWS in the value; ours trims it (RFC 9110 5.5
     * excludes it from the value): normalised here, not a divergence */
    size_t vl = s->value.len;
    while (vl && (s->value.p[vl - 1] == ' ' || s->value.p[vl - 1] == '\t')) vl--;
    log_field(&s->log, s->name.p, s->name.len, s->value.p, vl);
    buf_clear(&s->name);
    buf_clear(&s->value);
    return 0;
}

static int ll_headers_complete(llhttp_t *p)
{
    side *s = ll_side(p);
    ll_start(p);
    s->in_head = false;
    return s->head_resp ? 1 : 0;
}

static int ll_body(llhttp_t *p, const char *at, size_t len)
{
    return ll_add(&ll_side(p)->body, at, len);
}

static int ll_message_complete(llhttp_t *p)
{
    log_body_end(ll_side(p), llhttp_should_keep_alive(p));
    ll_start_logged = false;
    return 0;
}

static void theirs(side *s, http_kind kind, bool head_resp, const char *d, size_t n)
{
    llhttp_settings_t st;
    llhttp_settings_init(&st);
    st.on_message_begin = ll_message_begin;
    st.on_url = ll_url;
    st.on_header_field = ll_field_start;
    st.on_header_value = ll_value;
    st.on_header_value_complete = ll_value_complete;
    st.on_headers_complete = ll_headers_complete;
    st.on_body = ll_body;
    st.on_message_complete = ll_message_complete;
    llhttp_t p;
    llhttp_init(&p, kind == HTTP_KIND_REQUEST ? HTTP_REQUEST : HTTP_RESPONSE, &st);
    p.data = s;
    s->head_resp = head_resp;
    ll_start_logged = false;
    llhttp_errno_t e = llhttp_execute(&p, d, n);
    if (e == HPE_OK) e = llhttp_finish(&p);
    s->accepted = e == HPE_OK;
    if (!s->accepted)
        snprintf(s->why, sizeof s->why, "%s: %s", llhttp_errno_name(e), llhttp_get_error_reason(&p));
}

/* ---- the corpus ---- */

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    buf b = BUF_INIT;
    char tmp[4096];
    size_t k;
    while ((k = fread(tmp, 1, sizeof tmp, f)) > 0) buf_add(&b, tmp, k);
    fclose(f);
    *n = b.len;
    return buf_detach(&b);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static const struct divergence *divergence_of(const char *rel)
{
    for (int i = 0; i < ndiv; i++)
        if (!strcmp(divergences[i].file, rel)) return &divergences[i];
    return NULL;
}

static int tap_n, tap_failed;

static void tap(bool ok, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void tap(bool ok, const char *name, const char *fmt, ...)
{
    char msg[4096] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("%sok %d - %s%s%s\n", ok ? "" : "not ", ++tap_n, name, msg[0] ? ": " : "", msg);
    if (!ok) tap_failed++;
}

/* one file; *seen marks the table entries that matched a disagreement */
static void check_file(const char *root, const char *sub, const char *fname, bool *seen)
{
    char path[4096], rel[512];
    snprintf(path, sizeof path, "%s/%s/%s", root, sub, fname);
    snprintf(rel, sizeof rel, "%s/%s", sub, fname);
    size_t n;
    char *d = slurp(path, &n);
    if (!d) {
        tap(false, rel, "cannot read");
        return;
    }
    http_kind kind = !strncmp(fname, "res-", 4) ? HTTP_KIND_RESPONSE : HTTP_KIND_REQUEST;
    bool head = !strncmp(fname, "res-head-", 9);
    side a = {.log = BUF_INIT, .name = BUF_INIT, .value = BUF_INIT, .body = BUF_INIT};
    side b = a;
    ours(&a, kind, head, d, n);
    theirs(&b, kind, head, d, n);
    const struct divergence *dv = divergence_of(rel);
    if (dv) seen[dv - divergences] = true;
    bool want_accept = !strcmp(sub, "valid");
    if (a.accepted != want_accept)
        tap(false, rel, "ours %s (%s), expected the opposite", a.accepted ? "accepts" : "refuses", a.why);
    else if (a.accepted != b.accepted && !dv)
        tap(false, rel, "ours %s, llhttp %s (%s): not a listed divergence", a.accepted ? "accepts" : "refuses",
            b.accepted ? "accepts" : "refuses", b.accepted ? a.why : b.why);
    else if (a.accepted != b.accepted && dv->dir != (a.accepted ? OURS_ACCEPTS : OURS_REFUSES))
        tap(false, rel, "listed divergence in the other direction");
    else if (a.accepted == b.accepted && dv)
        tap(false, rel, "listed as a divergence but both %s", a.accepted ? "accept" : "refuse");
    else if (a.accepted && b.accepted && strcmp(a.log.p, b.log.p))
        tap(false, rel, "both accept, results differ\n--- ours\n%s--- llhttp\n%s", a.log.p, b.log.p);
    else if (dv)
        tap(true, rel, "intended divergence: ours %s (%s)", a.accepted ? "accepts" : "refuses",
            a.accepted ? b.why : a.why);
    else
        tap(true, rel, "%s", a.accepted ? "both accept, same messages" : "both refuse");
    buf_release(&a.log);
    buf_release(&a.body);
    buf_release(&b.log);
    buf_release(&b.name);
    buf_release(&b.value);
    buf_release(&b.body);
    free(d);
}

int main(int argc, char **argv)
{
    const char *src = getenv("GPUMOD_SRC");
    char root[4096];
    snprintf(root, sizeof root, "%s/tests/fixtures/http", argc > 1 ? argv[1] : src ? src : ".");
    bool seen[sizeof divergences / sizeof divergences[0]] = {0};
    char **names[2] = {NULL, NULL};
    size_t count[2] = {0, 0};
    static const char *subs[2] = {"valid", "invalid"};
    for (int s = 0; s < 2; s++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", root, subs[s]);
        DIR *dp = opendir(dir);
        if (!dp) {
            printf("1..1\nnot ok 1 - cannot open '%s' (set GPUMOD_SRC)\n", dir);
            return 1;
        }
        struct dirent *de;
        while ((de = readdir(dp))) {
            if (de->d_name[0] == '.') continue;
            names[s] = realloc(names[s], (count[s] + 1) * sizeof *names[s]);
            names[s][count[s]++] = strdup(de->d_name);
        }
        closedir(dp);
        qsort(names[s], count[s], sizeof *names[s], by_name);
    }
    printf("1..%zu\n", count[0] + count[1] + (size_t)ndiv);
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < count[s]; i++) {
            check_file(root, subs[s], names[s][i], seen);
            free(names[s][i]);
        }
    for (int i = 0; i < ndiv; i++)
        tap(seen[i], divergences[i].file, seen[i] ? "listed divergence: %s" : "listed divergence names no file",
            divergences[i].why);
    free(names[0]);
    free(names[1]);
    return tap_failed ? 1 : 0;
}
