/* service.c - `gpumod service list | show ID | start ID | stop ID |
 * sleep ID | restart ID | logs ID | load ID MODEL | unload ID MODEL`, each a request to the daemon
 * (docs/api.md).
 *
 * `service start` does not hold one request open for the whole load: it
 * asks for a start ticket (POST start?wait=0) and waits on the event
 * stream until the ticket's outcome is known (svcwait.c), which lets it
 * draw the load progress on a terminal, answer within a few ms of the
 * outcome, and survive a load longer than any socket deadline.  `logs -f`
 * polls with byte offsets. */
#include "cli/ctl.h"
#include "cli/hostview.h"
#include "cli/svcwait.h"
#include "config/preset.h"
#include "util/clock.h"
#include "util/url.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOG_POLL_MS 200

static void path_for(buf *t, const char *id, const char *suffix)
{
    buf_adds(t, "/services/");
    url_query_escape(t, id); /* unreserved characters kept, the rest %XX: a path segment too */
    if (suffix) buf_adds(t, suffix);
}

/* GET /services/ID parsed; NULL after printing why (rc set).  With
 * with_daemon: {"daemon": {"pid","started"}, "service": ...}. */
static cJSON *get_service_x(cli *c, const char *id, bool with_daemon, int *rc)
{
    buf t = BUF_INIT;
    path_for(&t, id, with_daemon ? "?daemon=1" : NULL);
    http_reply r;
    *rc = ctl_call(&c->paths, "GET", t.p, NULL, CTL_QUICK_MS, false, &r);
    buf_release(&t);
    if (*rc) return NULL;
    cJSON *j = NULL;
    if (r.status != 200)
        *rc = ctl_fail(&r, "service");
    else if (!(j = ctl_json(&r, "service")))
        *rc = EXIT_REFUSED;
    http_reply_release(&r);
    return j;
}

static cJSON *get_service(cli *c, const char *id, int *rc)
{
    return get_service_x(c, id, false, rc);
}

static void need_line(buf *b, const char *label, const cJSON *n)
{
    if (!n || cJSON_IsNull(n)) return;
    buf_printf(b, "  %s: host ", label);
    buf_bytes(b, (uint64_t)jnum(n, "host_bytes", 0));
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(n, "gpu_bytes"))
    {
        buf_printf(b, ", gpu %s ", g->string ? g->string : "?");
        buf_bytes(b, (uint64_t)(cJSON_IsNumber(g) ? g->valuedouble : 0));
    }
    if (jstr(n, "source")) buf_printf(b, " (%s)", jstr(n, "source"));
    if (!jnull(n, "load_ms")) buf_printf(b, ", loaded in %.0f ms", jnum(n, "load_ms", 0));
    if (jstr(n, "measured_at")) buf_printf(b, ", measured %s", jstr(n, "measured_at"));
    buf_addc(b, '\n');
}

static void show_text(buf *b, const cJSON *s)
{
    const char *id = jstr(s, "id"), *state = jstr(s, "state");
    buf_printf(b, "%s: %s for ", id ? id : "?", state ? state : "?");
    fmt_age(b, jstr(s, "since"));
    if (!jnull(s, "pid")) buf_printf(b, ", pid %.0f", jnum(s, "pid", 0));
    if (!jnull(s, "pgid")) buf_printf(b, ", group %.0f", jnum(s, "pgid", 0));
    if (jnum(s, "port", 0) > 0) buf_printf(b, ", port %.0f", jnum(s, "port", 0));
    if (!jnull(s, "progress_pct") && state && !strcmp(state, "starting"))
        buf_printf(b, ", loading %.0f%%", jnum(s, "progress_pct", 0));
    if (!jnull(s, "queued")) buf_printf(b, ", queued #%.0f for the load slot", jnum(s, "queued", 0));
    buf_addc(b, '\n');
    buf_printf(b, "  driver %s", jstr(s, "driver") ? jstr(s, "driver") : "?");
    if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(s, "configured"))) buf_adds(b, ", no longer configured");
    const cJSON *ov = cJSON_GetObjectItemCaseSensitive(s, "overrides");
    if (cJSON_IsObject(ov) && ov->child) {
        buf_adds(b, ", started with ");
        overrides_text_json(b, ov);
        buf_adds(b, ov->child->next ? " (overrides)" : " (an override)");
    } else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "config_changed")))
        buf_adds(b, ", configuration changed since it started (restart to apply)");
    buf_addc(b, '\n');
    need_line(b, "admitted", cJSON_GetObjectItemCaseSensitive(s, "admitted"));
    need_line(b, "footprint", cJSON_GetObjectItemCaseSensitive(s, "footprint"));
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(s, "restarts");
    if (rs) {
        buf_printf(b, "  restarts: %.0f in the window (at most %.0f per ", jnum(rs, "in_window", 0),
                   jnum(rs, "max", 0));
        dur_human(b, (int64_t)jnum(rs, "window_ms", 0));
        buf_addc(b, ')');
        if (jstr(rs, "next_at")) buf_printf(b, ", next at %s", jstr(rs, "next_at"));
        buf_addc(b, '\n');
    }
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(s, "health");
    if (h) {
        buf_printf(b, "  health: %.0f failure(s) in a row", jnum(h, "failures", 0));
        if (jstr(h, "last_ok")) buf_printf(b, ", last ok %s", jstr(h, "last_ok"));
        buf_addc(b, '\n');
    }
    const cJSON *le = cJSON_GetObjectItemCaseSensitive(s, "last_exit");
    if (le && !cJSON_IsNull(le)) {
        buf_adds(b, "  last exit: ");
        if (!jnull(le, "code")) buf_printf(b, "code %.0f", jnum(le, "code", 0));
        if (!jnull(le, "signal")) buf_printf(b, "signal %.0f", jnum(le, "signal", 0));
        if (jstr(le, "at")) buf_printf(b, " at %s", jstr(le, "at"));
        buf_addc(b, '\n');
    }
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(s, "last_start");
    if (ls && !cJSON_IsNull(ls)) {
        buf_printf(b, "  last start: #%.0f by %s: %s", jnum(ls, "seq", 0), jstr(ls, "origin") ? jstr(ls, "origin") : "?",
                   jstr(ls, "outcome") ? jstr(ls, "outcome") : "?");
        if (jstr(ls, "message")) buf_printf(b, ": %s", jstr(ls, "message"));
        buf_addc(b, '\n');
    }
    if (jstr(s, "log_file")) buf_printf(b, "  log: %s\n", jstr(s, "log_file"));
}

static int do_list(cli *c)
{
    http_reply r;
    int rc = ctl_call(&c->paths, "GET", "/services", NULL, CTL_QUICK_MS, false, &r);
    if (rc) return rc;
    if (r.status != 200) {
        rc = ctl_fail(&r, "service list");
    } else if (c->json) {
        ctl_print_body(&r);
    } else {
        cJSON *j = ctl_json(&r, "service list");
        if (!j) {
            rc = EXIT_REFUSED;
        } else {
            buf b = BUF_INIT;
            const cJSON *s;
            if (!cJSON_GetArraySize(j)) buf_adds(&b, "no services configured\n");
            else service_row_header(&b);
            cJSON_ArrayForEach(s, j) service_row(&b, s);
            fputs(b.p, stdout);
            buf_release(&b);
            cJSON_Delete(j);
        }
    }
    http_reply_release(&r);
    return rc;
}

static int do_show(cli *c, const char *id)
{
    int rc;
    cJSON *j = get_service(c, id, &rc);
    if (!j) return rc;
    if (c->json) {
        char *s = cJSON_PrintUnformatted(j);
        puts(s);
        free(s);
    } else {
        buf b = BUF_INIT;
        show_text(&b, j);
        fputs(b.p, stdout);
        buf_release(&b);
    }
    cJSON_Delete(j);
    return EXIT_OK;
}

/* The exit code for a start's error code, as ctl_exit_code maps the
 * HTTP answer of a waiting start (docs/interfaces.md). */
static int start_code_exit(const char *code)
{
    if (!code) return EXIT_REFUSED;
    if (!strcmp(code, "shutting_down")) return EXIT_DAEMON;
    if (!strcmp(code, "not_found") || !strcmp(code, "need_unknown") || !strcmp(code, "config_invalid") ||
        !strcmp(code, "bad_request"))
        return EXIT_USAGE;
    if (!strcmp(code, "timeout")) return EXIT_TIMEOUT;
    return EXIT_REFUSED; /* gate_refused, port_held, start_failed, conflict, ... */
}

/* The outcome of start ticket seq (printed); the exit code. */
static int report_outcome(cli *c, const cJSON *s, const char *id, double t0, bool tty)
{
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(s, "last_start");
    const char *outcome = jstr(ls, "outcome"), *msg = jstr(ls, "message"), *code = jstr(ls, "code");
    if (tty) {
        fputs("\r\033[K", stdout);
        fflush(stdout);
    }
    if (c->json) {
        char *t = cJSON_PrintUnformatted(s);
        puts(t);
        free(t);
    }
    if (outcome && !strcmp(outcome, "ready")) {
        if (!c->json && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ls, "woke"))) {
            printf("'%s' woke (%s) in %.1f s\n", id, jstr(s, "tier") ? jstr(s, "tier") : "?",
                   (clock_mono_ms_f() - t0) / 1000.0);
            return EXIT_OK;
        }
        if (!c->json && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ls, "fell_back")))
            printf("'%s': the wake failed: stopped and started cold\n", id);
        if (!c->json) {
            printf("ready: %s (", id);
            if (!jnull(s, "pid")) printf("pid %.0f, ", jnum(s, "pid", 0));
            if (jnum(s, "port", 0) > 0) printf("port %.0f, ", jnum(s, "port", 0));
            printf("state %s) in %.2f s\n", jstr(s, "state") ? jstr(s, "state") : "?",
                   (clock_mono_ms_f() - t0) / 1000.0);
        }
        return EXIT_OK;
    }
    fprintf(stderr, "gpumod: service start: '%s' %s%s%s%s%s\n", id, outcome ? outcome : "did not start",
            code ? " (" : "", code ? code : "", code ? ")" : "", msg ? ": " : "");
    if (msg) fprintf(stderr, "%s\n", msg);
    return start_code_exit(code);
}

/* The body of a start or restart: its overrides (docs/api.md), or NULL
 * for none (caller frees). */
static char *overrides_body(const cJSON *ov)
{
    if (!ov || !ov->child) return NULL;
    cJSON *b = cJSON_CreateObject();
    cJSON_AddItemReferenceToObject(b, "overrides", (cJSON *)ov);
    char *s = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    char *r = s ? xstrdup(s) : NULL;
    cJSON_free(s);
    return r;
}

static int do_start(cli *c, const char *id, bool nowait, int64_t timeout_s, const cJSON *ov)
{
    double t0 = clock_mono_ms_f();
    buf t = BUF_INIT;
    path_for(&t, id, "/start?wait=0&origin=cli");
    http_reply r;
    char *body = overrides_body(ov);
    int rc = ctl_call(&c->paths, "POST", t.p, body, CTL_QUICK_MS, false, &r);
    free(body);
    buf_release(&t);
    if (rc) return rc;
    if (r.status != 200 && r.status != 202) {
        rc = ctl_fail(&r, "service start");
        http_reply_release(&r);
        return rc;
    }
    cJSON *j = ctl_json(&r, "service start");
    http_reply_release(&r);
    if (!j) return EXIT_REFUSED;
    uint64_t seq = (uint64_t)jnum(j, "start_seq", 0);
    const cJSON *svc = cJSON_GetObjectItemCaseSensitive(j, "service");
    if (nowait) {
        if (c->json) {
            char *s = cJSON_PrintUnformatted(j);
            puts(s);
            free(s);
        } else {
            printf("start of '%s' requested (ticket %llu); 'gpumod service show %s' tells how it ends\n", id,
                   (unsigned long long)seq, id);
        }
        cJSON_Delete(j);
        return EXIT_OK;
    }
    bool tty = isatty(STDOUT_FILENO) && !c->json && c->verbose >= 0;
    /* without --timeout: as long as the daemon says the start can take
     * (its startup_timeout and those ahead of it in the queue), plus a
     * margin; never forever */
    int64_t wait_ms = (int64_t)jnum(j, "wait_ms", 0);
    if (wait_ms <= 0) wait_ms = 600000;
    svc_wait_in in = {.id = id, .seq = seq, .daemon = cJSON_GetObjectItemCaseSensitive(j, "daemon"),
                      .limit_ms = timeout_s > 0 ? timeout_s * 1000 : wait_ms + 30000, .tty = tty};
    cJSON *s = cJSON_Duplicate(svc, true);
    rc = svc_wait_start(c, &in, &s);
    cJSON_Delete(j);
    if (rc) return rc;
    rc = report_outcome(c, s, id, t0, tty);
    cJSON_Delete(s);
    return rc;
}

/* stop and restart: one request that waits for the outcome */
static int do_blocking(cli *c, const char *id, const char *verb, int64_t timeout_s, const cJSON *ov)
{
    double t0 = clock_mono_ms_f();
    buf t = BUF_INIT;
    path_for(&t, id, NULL);
    buf_printf(&t, "/%s?origin=cli", verb);
    http_reply r;
    int64_t ms = timeout_s > 0 ? timeout_s * 1000 : 24LL * 3600 * 1000;
    char *body = overrides_body(ov);
    int rc = ctl_call(&c->paths, "POST", t.p, body, ms, false, &r);
    free(body);
    buf_release(&t);
    if (rc) return rc;
    char what[64];
    snprintf(what, sizeof what, "service %s", verb);
    if (r.status != 200) {
        rc = ctl_fail(&r, what);
    } else if (c->json) {
        ctl_print_body(&r);
    } else {
        cJSON *j = ctl_json(&r, what);
        if (!j) {
            rc = EXIT_REFUSED;
        } else if (!strcmp(verb, "sleep")) {
            const char *m = jstr(j, "message");
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "slept")))
                printf("'%s' is asleep (%s, %.1f s)\n", id, jstr(j, "tier") ? jstr(j, "tier") : "?",
                       jnum(j, "ms", 0) / 1000.0);
            else
                printf("'%s' stopped: %s\n", id, m ? m : "it was not running");
        } else if (!strcmp(verb, "stop")) {
            printf("stopped: %s (%s) in %.2f s\n", id, jstr(j, "state") ? jstr(j, "state") : "?",
                   (clock_mono_ms_f() - t0) / 1000.0);
        } else {
            printf("ready: %s (", id);
            if (!jnull(j, "pid")) printf("pid %.0f, ", jnum(j, "pid", 0));
            if (jnum(j, "port", 0) > 0) printf("port %.0f, ", jnum(j, "port", 0));
            printf("state %s) in %.2f s\n", jstr(j, "state") ? jstr(j, "state") : "?",
                   (clock_mono_ms_f() - t0) / 1000.0);
        }
        cJSON_Delete(j);
    }
    http_reply_release(&r);
    return rc;
}

/* One GET of the log after `after` (UINT64_MAX: the last n lines);
 * prints the data, sets *next.  The exit code. */
static int log_once(cli *c, const char *id, uint64_t after, int64_t n, uint64_t *next)
{
    buf t = BUF_INIT;
    path_for(&t, id, "/logs");
    if (after == UINT64_MAX)
        buf_printf(&t, "?n=%lld", (long long)n);
    else
        buf_printf(&t, "?after=%llu", (unsigned long long)after);
    http_reply r;
    int rc = ctl_call(&c->paths, "GET", t.p, NULL, CTL_QUICK_MS, false, &r);
    buf_release(&t);
    if (rc) return rc;
    if (r.status != 200) {
        rc = ctl_fail(&r, "service logs");
    } else {
        cJSON *j = ctl_json(&r, "service logs");
        if (!j) {
            rc = EXIT_REFUSED;
        } else {
            const char *data = jstr(j, "data");
            if (data) fputs(data, stdout);
            fflush(stdout);
            *next = (uint64_t)jnum(j, "next", (double)*next);
            cJSON_Delete(j);
        }
    }
    http_reply_release(&r);
    return rc;
}

static int do_logs(cli *c, const char *id, bool follow, int64_t n)
{
    if (c->json && !follow) {
        buf t = BUF_INIT;
        path_for(&t, id, "/logs");
        buf_printf(&t, "?n=%lld", (long long)n);
        http_reply r;
        int rc = ctl_call(&c->paths, "GET", t.p, NULL, CTL_QUICK_MS, false, &r);
        buf_release(&t);
        if (rc) return rc;
        if (r.status != 200) rc = ctl_fail(&r, "service logs");
        else ctl_print_body(&r);
        http_reply_release(&r);
        return rc;
    }
    uint64_t next = 0;
    int rc = log_once(c, id, UINT64_MAX, n, &next);
    while (!rc && follow) {
        poll(NULL, 0, LOG_POLL_MS);
        rc = log_once(c, id, next, 0, &next);
    }
    return rc;
}

/* load and unload: a model of a router-mode service, one request that
 * waits until the engine says so (POST /services/ID/models/MODEL/load) */
static int do_model(cli *c, const char *id, const char *model, bool load, int64_t timeout_s)
{
    double t0 = clock_mono_ms_f();
    buf t = BUF_INIT;
    path_for(&t, id, "/models/");
    url_query_escape(&t, model);
    buf_printf(&t, "/%s?origin=cli", load ? "load" : "unload");
    http_reply r;
    int64_t ms = timeout_s > 0 ? timeout_s * 1000 : 24LL * 3600 * 1000;
    int rc = ctl_call(&c->paths, "POST", t.p, NULL, ms, false, &r);
    buf_release(&t);
    if (rc) return rc;
    const char *what = load ? "service load" : "service unload";
    if (r.status != 200)
        rc = ctl_fail(&r, what);
    else if (c->json)
        ctl_print_body(&r);
    else
        printf("%s: %s %s '%s' in %.2f s\n", load ? "loaded" : "unloaded", id, load ? "loaded" : "unloaded", model,
               (clock_mono_ms_f() - t0) / 1000.0);
    http_reply_release(&r);
    return rc;
}

typedef struct svc_args {
    const char *act, *id, *model;
    bool nowait, follow;
    int64_t timeout_s, n;
    cJSON *ov; /* a start's or restart's overrides (--set, --env, --ctx) */
} svc_args;

static int service_args(cli *c, const cmd *k, int argc, char **argv, svc_args *s)
{
    const char *act = s->act;
    bool starts = !strcmp(act, "start") || !strcmp(act, "restart");
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int taken = starts ? cli_override_opt(c, k, argc, argv, &i, s->ov) : 0;
        if (taken < 0) return EXIT_USAGE;
        if (taken) continue;
        if (!strcmp(a, "--no-wait") && !strcmp(act, "start")) {
            s->nowait = true;
        } else if (!strcmp(a, "--timeout") && i + 1 < argc && strcmp(act, "logs") && strcmp(act, "list") &&
                   strcmp(act, "show")) {
            if (cli_int_arg(c, k, a, argv[++i], 1, 86400 * 7, &s->timeout_s)) return EXIT_USAGE;
        } else if ((!strcmp(a, "-f") || !strcmp(a, "--follow")) && !strcmp(act, "logs")) {
            s->follow = true;
        } else if (!strcmp(a, "-n") && i + 1 < argc && !strcmp(act, "logs")) {
            if (cli_int_arg(c, k, a, argv[++i], 0, 1000000, &s->n)) return EXIT_USAGE;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error(c, k, "service %s: unknown option '%s'", act, a);
        } else if (!s->id) {
            s->id = a;
        } else if (!s->model && (!strcmp(act, "load") || !strcmp(act, "unload"))) {
            s->model = a;
        } else {
            return cli_usage_error(c, k, "service %s: unexpected argument '%s'", act, a);
        }
    }
    return EXIT_OK;
}

static int service_act(cli *c, const cmd *k, const svc_args *s)
{
    const char *act = s->act, *id = s->id;
    if (!strcmp(act, "list")) {
        if (id) return cli_usage_error(c, k, "service list: unexpected argument '%s'", id);
        return do_list(c);
    }
    static const char *const with_id[] = {"show", "start", "stop", "restart", "logs", "sleep", "load", "unload", NULL};
    bool known = false;
    for (int i = 0; with_id[i]; i++) known = known || !strcmp(act, with_id[i]);
    if (!known) return cli_usage_error(c, k, "service: unknown action '%s'", act);
    if (!id) return cli_usage_error(c, k, "service %s: which service? give its id", act);
    if (!strcmp(act, "show")) return do_show(c, id);
    if (!strcmp(act, "start")) return do_start(c, id, s->nowait, s->timeout_s, s->ov);
    if (!strcmp(act, "logs")) return do_logs(c, id, s->follow, s->n);
    if (!strcmp(act, "load") || !strcmp(act, "unload")) {
        if (!s->model) return cli_usage_error(c, k, "service %s: which model? give its name (gpumod service show %s)", act, id);
        return do_model(c, id, s->model, !strcmp(act, "load"), s->timeout_s);
    }
    return do_blocking(c, id, act, s->timeout_s, s->ov);
}

int cmd_service(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("service");
    if (argc < 2)
        return cli_usage_error(c, k, "service: which action? list, show, start, stop, sleep, restart, logs, load or unload");
    svc_args s = {.act = argv[1], .n = 100, .ov = cJSON_CreateObject()};
    int rc = service_args(c, k, argc, argv, &s);
    if (rc == EXIT_OK) rc = service_act(c, k, &s);
    cJSON_Delete(s.ov);
    return rc;
}
