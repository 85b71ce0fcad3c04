/* events.c - `gpumod events [--since T] [--service ID] [-n N] [--json]`:
 * what the daemon recorded (docs/interfaces.md "Events").  T is an event
 * id (events after it), an RFC 3339 time, or a duration back from now
 * ("10m", "30s", "2h", "1d"). */
#include "cli/ctl.h"
#include "util/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "10m" -> ms; -1 when not a duration */
static int64_t parse_ago(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0) return -1;
    if (!strcmp(end, "ms")) return (int64_t)v;
    if (!strcmp(end, "s")) return (int64_t)(v * 1000);
    if (!strcmp(end, "m")) return (int64_t)(v * 60000);
    if (!strcmp(end, "h")) return (int64_t)(v * 3600000);
    if (!strcmp(end, "d")) return (int64_t)(v * 86400000);
    return -1;
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
        long long id = strtoll(since, &end, 10);
        if (*since && !*end && id >= 0) {
            add_query(&t, "since", since);
        } else if (clock_parse_rfc3339(since, &ts) == 0) {
            add_query(&t, "since", since);
        } else {
            int64_t ago = parse_ago(since);
            if (ago < 0) {
                buf_release(&t);
                return cli_usage_error(c, k,
                                       "events: --since '%s' is neither an event id, an RFC 3339 time nor a "
                                       "duration like 10m",
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
            const cJSON *e;
            cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(j, "events")) event_line(&b, e);
            if (!b.len && c->verbose >= 0) buf_adds(&b, "no events\n");
            fputs(b.p, stdout);
            buf_release(&b);
            cJSON_Delete(j);
        }
    }
    http_reply_release(&r);
    return rc;
}
