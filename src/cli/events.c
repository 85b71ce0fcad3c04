/* events.c - `gpumod events [-f] [--since T] [--service ID] [--kind K]
 * [-n N] [--json]`: what the daemon recorded (docs/interfaces.md
 * "Events").  T is an event id (events after it), an RFC 3339 time, or a
 * duration back from now ("10m", "30s", "2h", "1d").
 *
 * -f prints the page a plain call prints, then follows the daemon's
 * event stream (GET /events?follow=1) from the last id printed, so
 * nothing falls between the two; a stream the daemon cut because this
 * reader was slow is followed again from the id its last line names.
 * SIGINT and SIGTERM end it with exit 0; the daemon's end of the stream
 * (shutdown) with exit 3. */
#include "cli/ctl.h"
#include "util/clock.h"
#include "util/lines.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "10m", "1.5h" -> ms; -1 when not a duration: plain decimal digits with
 * an optional fraction (no sign, exponent, hex, inf or nan: strtod takes
 * all of those) and a unit, at most 100 years back. */
static int64_t parse_ago(const char *s)
{
    const char *p = s;
    size_t nd = strspn(p, "0123456789");
    if (!nd) return -1;
    p += nd;
    if (*p == '.') {
        size_t nf = strspn(p + 1, "0123456789");
        if (!nf) return -1;
        p += 1 + nf;
    }
    double mult;
    if (!strcmp(p, "ms"))
        mult = 1;
    else if (!strcmp(p, "s"))
        mult = 1000;
    else if (!strcmp(p, "m"))
        mult = 60000;
    else if (!strcmp(p, "h"))
        mult = 3600000;
    else if (!strcmp(p, "d"))
        mult = 86400000;
    else
        return -1;
    char num[64];
    size_t len = (size_t)(p - s);
    if (len >= sizeof num) return -1;
    memcpy(num, s, len);
    num[len] = '\0';
    double ms = strtod(num, NULL) * mult;
    if (!(ms >= 0) || ms > 100.0 * 365 * 86400000) return -1; /* checked before the cast */
    return (int64_t)ms;
}

static void add_query(buf *t, const char *k, const char *v)
{
    buf_printf(t, "%c%s=", strchr(t->p, '?') ? '&' : '?', k);
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-_.~:", *p))
            buf_addc(t, (char)*p);
        else
            buf_printf(t, "%%%02X", *p);
    }
}

/* ---- -f ---------------------------------------------------------------- */

static volatile sig_atomic_t stop_follow;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_follow = 1;
}

typedef struct follow_out {
    const cli *c;
    buf line;     /* a line not yet whole */
    int64_t last; /* the last event printed */
    bool resume;  /* the daemon cut a slow reader: follow again */
    bool ended;   /* the daemon's last line came */
} follow_out;

/* One line of the stream: an event, or the last line {"end", "since"}. */
static void follow_line(void *ud, const char *p, size_t n)
{
    follow_out *o = ud;
    cJSON *j = cJSON_ParseWithLength(p, n);
    if (!j) return;
    const char *end = jstr(j, "end");
    if (end) {
        o->ended = true;
        o->last = (int64_t)jnum(j, "since", (double)o->last);
        o->resume = !strcmp(end, "slow_reader");
        if (!o->resume)
            fprintf(stderr, "gpumod: %s\n", jstr(j, "message") ? jstr(j, "message") : end);
    } else {
        buf b = BUF_INIT;
        if (o->c->json) {
            buf_add(&b, p, n);
            buf_addc(&b, '\n');
        } else {
            event_line(&b, j);
        }
        fputs(b.p, stdout);
        fflush(stdout);
        buf_release(&b);
        o->last = (int64_t)jnum(j, "id", (double)o->last);
    }
    cJSON_Delete(j);
}

static bool follow_body(const char *p, size_t n, void *ud)
{
    follow_out *o = ud;
    lines_feed(&o->line, p, n, 0, follow_line, o);
    return !stop_follow;
}

/* Follow from after id `since` (-1: from the newest event). */
static int follow(cli *c, int64_t since, const char *svc, const char *kind)
{
    struct sigaction sa = {.sa_handler = on_stop_signal}; /* no SA_RESTART: the wait must see it */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    follow_out o = {.c = c, .line = BUF_INIT, .last = since};
    int rc = 0;
    do {
        buf t = BUF_INIT;
        buf_adds(&t, "/events?follow=1");
        if (o.last >= 0) buf_printf(&t, "&since=%lld", (long long)o.last);
        if (svc) add_query(&t, "service", svc);
        if (kind) add_query(&t, "kind", kind);
        o.resume = o.ended = false;
        buf_clear(&o.line);
        http_reply r;
        http_stream_opts so = {.on_body = follow_body, .ud = &o, .stop = &stop_follow};
        rc = ctl_stream(&c->paths, t.p, &so, false, &r);
        buf_release(&t);
        if (!rc && r.status != 200)
            rc = ctl_fail(&r, "events");
        else if (!rc && !o.ended && !stop_follow) {
            fprintf(stderr, "gpumod: events: the daemon ended the stream\n");
            rc = EXIT_DAEMON;
        } else if (!rc && o.ended && !o.resume) {
            rc = EXIT_DAEMON; /* shutting down (or its store failed): said on stderr */
        }
        http_reply_release(&r);
    } while (!rc && o.resume && !stop_follow);
    buf_release(&o.line);
    return rc;
}

/* The page a plain call prints (--json: the body as it came, or with -f
 * one event a line, as the stream has them); *last gets the last event's
 * id, -1 with none. */
static int print_page(cli *c, const http_reply *r, bool since, int64_t n, bool following,
                      int64_t *last)
{
    if (c->json && !following) {
        ctl_print_body(r);
        return 0;
    }
    cJSON *j = ctl_json(r, "events");
    if (!j) return EXIT_REFUSED;
    buf b = BUF_INIT;
    const cJSON *e, *evs = cJSON_GetObjectItemCaseSensitive(j, "events");
    cJSON_ArrayForEach(e, evs)
    {
        if (c->json) {
            char *one = cJSON_PrintUnformatted(e);
            buf_adds(&b, one);
            buf_addc(&b, '\n');
            free(one);
        } else {
            event_line(&b, e);
        }
        *last = (int64_t)jnum(e, "id", (double)*last);
    }
    if (!b.len && c->verbose >= 0 && !following) buf_adds(&b, "no events\n");
    fputs(b.p, stdout);
    fflush(stdout);
    /* a full page: say there may be more, and how to get them (a follow
     * goes on after it and gets them anyway) */
    int64_t page = n ? n : 100;
    if (cJSON_GetArraySize(evs) >= page && c->verbose >= 0 && !following) {
        if (since)
            fprintf(stderr, "(showing %lld; there may be more: use --since %lld)\n",
                    (long long)page, (long long)*last);
        else
            fprintf(stderr, "(the last %lld; older ones are not shown: use -n N or --since)\n",
                    (long long)page);
    }
    buf_release(&b);
    cJSON_Delete(j);
    return 0;
}

int cmd_events(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("events");
    const char *since = NULL, *svc = NULL, *kind = NULL;
    int64_t n = 0;
    bool follow_on = false;
    int64_t since_id = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--follow"))
            follow_on = true;
        else if (!strcmp(argv[i], "--kind") && i + 1 < argc)
            kind = argv[++i];
        else if (!strncmp(argv[i], "--kind=", 7))
            kind = argv[i] + 7;
        else if (!strcmp(argv[i], "--since") && i + 1 < argc)
            since = argv[++i];
        else if (!strncmp(argv[i], "--since=", 8))
            since = argv[i] + 8;
        else if (!strcmp(argv[i], "--service") && i + 1 < argc)
            svc = argv[++i];
        else if (!strncmp(argv[i], "--service=", 10))
            svc = argv[i] + 10;
        else if ((!strcmp(argv[i], "-n") || !strcmp(argv[i], "--limit")) && i + 1 < argc) {
            if (cli_int_arg(c, k, argv[i], argv[i + 1], 1, 10000, &n)) return EXIT_USAGE;
            i++;
        } else
            return cli_usage_error(c, k, "events: unexpected argument '%s'", argv[i]);
    }
    buf t = BUF_INIT;
    buf_adds(&t, "/events");
    if (since) {
        char *end;
        int64_t ts;
        errno = 0;
        long long id = strtoll(since, &end, 10);
        bool digits = *since && strspn(since, "0123456789") == strlen(since);
        if (digits && errno) {
            buf_release(&t);
            return cli_usage_error(c, k, "events: --since '%s' is too large for an event id",
                                   since);
        }
        if (digits && id >= 0) {
            add_query(&t, "since", since);
            since_id = id;
        } else if (clock_parse_rfc3339(since, &ts) == 0) {
            add_query(&t, "since", since);
        } else {
            int64_t ago = parse_ago(since);
            if (ago < 0) {
                buf_release(&t);
                return cli_usage_error(
                    c, k,
                    "events: --since '%s' is neither an event id, an RFC 3339 time nor a "
                    "duration like 10m (at most 100 years)",
                    since);
            }
            char tsb[40];
            clock_rfc3339(clock_unix_ms() - ago, tsb, sizeof tsb);
            add_query(&t, "since", tsb);
        }
    }
    if (svc) add_query(&t, "service", svc);
    if (kind) add_query(&t, "kind", kind);
    if (n) {
        char nb[24];
        snprintf(nb, sizeof nb, "%lld", (long long)n);
        add_query(&t, "limit", nb);
    }
    http_reply r;
    int rc = ctl_call(&c->paths, "GET", t.p, NULL, CTL_QUICK_MS, false, &r);
    buf_release(&t);
    if (rc) return rc;
    int64_t last = -1;
    if (r.status != 200)
        rc = ctl_fail(&r, "events");
    else
        rc = print_page(c, &r, since != NULL, n, follow_on, &last);
    http_reply_release(&r);
    if (rc || !follow_on) return rc;
    /* on from the last one printed; with none, an id given is exact, and
     * an empty tail means none matched yet (from the first) */
    if (last < 0) last = since_id >= 0 ? since_id : since ? -1 : 0;
    return follow(c, last, svc, kind);
}
