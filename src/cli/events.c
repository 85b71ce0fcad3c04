/* events.c - `gpumod events [--since T] [--service ID] [-n N] [--json]`:
 * what the daemon recorded (docs/interfaces.md "Events").  T is an event
 * id (events after it), an RFC 3339 time, or a duration back from now
 * ("10m", "30s", "2h", "1d"). */
#include "cli/ctl.h"
#include "util/clock.h"

#include <errno.h>
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
    if (!strcmp(p, "ms")) mult = 1;
    else if (!strcmp(p, "s")) mult = 1000;
    else if (!strcmp(p, "m")) mult = 60000;
    else if (!strcmp(p, "h")) mult = 3600000;
    else if (!strcmp(p, "d")) mult = 86400000;
    else return -1;
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
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("-_.~:", *p))
            buf_addc(t, (char)*p);
        else
            buf_printf(t, "%%%02X", *p);
    }
}

int cmd_events(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("events");
    const char *since = NULL, *svc = NULL;
    int64_t n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--since") && i + 1 < argc)
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
            return cli_usage_error(c, k, "events: --since '%s' is too large for an event id", since);
        }
        if (digits && id >= 0) {
            add_query(&t, "since", since);
        } else if (clock_parse_rfc3339(since, &ts) == 0) {
            add_query(&t, "since", since);
        } else {
            int64_t ago = parse_ago(since);
            if (ago < 0) {
                buf_release(&t);
                return cli_usage_error(c, k,
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
    if (n) {
        char nb[24];
        snprintf(nb, sizeof nb, "%lld", (long long)n);
        add_query(&t, "limit", nb);
    }
    http_reply r;
    int rc = ctl_call(c, "GET", t.p, NULL, CTL_QUICK_MS, false, &r);
    buf_release(&t);
    if (rc) return rc;
    if (r.status != 200) {
        rc = ctl_fail(&r, "events");
    } else if (c->json) {
        ctl_print_body(&r);
    } else {
        cJSON *j = ctl_json(&r, "events");
        if (!j) {
            rc = EXIT_REFUSED;
        } else {
            buf b = BUF_INIT;
            const cJSON *e, *evs = cJSON_GetObjectItemCaseSensitive(j, "events");
            double last_id = 0;
            cJSON_ArrayForEach(e, evs)
            {
                event_line(&b, e);
                last_id = jnum(e, "id", last_id);
            }
            if (!b.len && c->verbose >= 0) buf_adds(&b, "no events\n");
            fputs(b.p, stdout);
            /* a full page: say there may be more, and how to get them */
            int64_t page = n ? n : 100;
            if (cJSON_GetArraySize(evs) >= page && c->verbose >= 0) {
                if (since)
                    fprintf(stderr, "(showing %lld; there may be more: use --since %.0f)\n", (long long)page,
                            last_id);
                else
                    fprintf(stderr, "(the last %lld; older ones are not shown: use -n N or --since)\n",
                            (long long)page);
            }
            buf_release(&b);
            cJSON_Delete(j);
        }
    }
    http_reply_release(&r);
    return rc;
}
