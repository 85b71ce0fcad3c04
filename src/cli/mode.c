/* mode.c - `gpumod mode list | show MODE | current | switch MODE
 * [--dry-run] [--timeout S]` (docs/modes.md, docs/api.md).
 *
 * A switch is asked with wait=0: the daemon answers 202 at once with the
 * switch's id and wait_ms, its own worst-case bound (the switch's timeout
 * plus the longest rollback under its configured timeouts), and the CLI
 * waits on the event stream (the switch's phases: evwait.h), reading GET
 * /switches/ID after each, until the entry carries the result, which it
 * prints exactly as a blocking answer.  So the CLI's deadline is the
 * daemon's bound, whatever configuration the CLI itself reads.  A dry
 * run is one quick request.  `list` and `show` fall back to the
 * configuration when no daemon runs (without the current mode);
 * `current` and `switch` need the daemon. */
#include "cli/ctl.h"
#include "client/evwait.h"
#include "cli/hostview.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/opt.h"

#define MARGIN_MS 10000     /* the client waits this much past the daemon's own bound */
#define SWITCH_TICK_MS 1000 /* the longest wait without reading the switch (evwait.h) */
#define SWITCH_ENDED_OK (-1)

#define CTX_MAX 16777216

/* ---- list, show ---------------------------------------------------------- */

/* {"modes": [...], "current": ...} from the daemon, or built from the
 * configuration (current null) when no daemon answers.  NULL with *rc. */
static cJSON *modes_doc(cli *c, bool *standalone, int *rc)
{
    http_reply r;
    *standalone = false;
    *rc = ctl_call(&c->paths, "GET", "/modes", NULL, CTL_QUICK_MS, true, &r);
    if (*rc == 0) {
        cJSON *j = NULL;
        if (r.status != 200)
            *rc = ctl_fail(&r, "mode");
        else if (!(j = ctl_json(&r, "mode")))
            *rc = EXIT_REFUSED;
        http_reply_release(&r);
        return j;
    }
    if (*rc != EXIT_DAEMON) return NULL;
    config cfg;
    if (config_load(&cfg, &c->paths)) {
        cli_print_diags(&cfg, NULL);
        fprintf(stderr, "gpumod: mode: the configuration in %s has errors\n", cfg.config_dir);
        config_release(&cfg);
        *rc = EXIT_USAGE;
        return NULL;
    }
    cJSON *j = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(j, "modes");
    for (size_t i = 0; i < cfg.n_modes; i++) {
        const mode *m = &cfg.modes[i];
        cJSON *o1 = cJSON_CreateObject();
        cJSON_AddStringToObject(o1, "id", m->id);
        if (m->name)
            cJSON_AddStringToObject(o1, "name", m->name);
        else
            cJSON_AddNullToObject(o1, "name");
        if (m->description)
            cJSON_AddStringToObject(o1, "description", m->description);
        else
            cJSON_AddNullToObject(o1, "description");
        cJSON *s = cJSON_AddArrayToObject(o1, "services");
        for (size_t k = 0; k < m->services.n; k++)
            cJSON_AddItemToArray(s, cJSON_CreateString(m->services.v[k]));
        cJSON_AddNullToObject(o1, "current");
        cJSON_AddItemToArray(arr, o1);
    }
    cJSON_AddNullToObject(j, "current");
    cJSON_AddStringToObject(j, "via", "config");
    config_release(&cfg);
    *standalone = true;
    *rc = 0;
    return j;
}

static void services_list(buf *b, const cJSON *m)
{
    const cJSON *s;
    int k = 0;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(m, "services"))
        buf_printf(b, "%s%s", k++ ? ", " : "", cJSON_IsString(s) ? s->valuestring : "?");
    if (!k) buf_adds(b, "(no services)");
}

static int do_list(cli *c)
{
    bool standalone;
    int rc;
    cJSON *j = modes_doc(c, &standalone, &rc);
    if (!j) return rc;
    if (c->json) {
        char *t = cJSON_PrintUnformatted(j);
        puts(t);
        free(t);
        cJSON_Delete(j);
        return 0;
    }
    buf b = BUF_INIT;
    const cJSON *m;
    const cJSON *modes = cJSON_GetObjectItemCaseSensitive(j, "modes");
    if (!cJSON_GetArraySize(modes)) buf_adds(&b, "no modes configured\n");
    cJSON_ArrayForEach(m, modes)
    {
        bool cur = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "current"));
        buf_printf(&b, "%s %-20s ", cur ? "*" : " ", jstr(m, "id") ? jstr(m, "id") : "?");
        services_list(&b, m);
        if (jstr(m, "name")) buf_printf(&b, "  (%s)", jstr(m, "name"));
        buf_addc(&b, '\n');
    }
    if (standalone)
        buf_adds(&b,
                 "(no daemon is running: from the configuration; the current mode is unknown)\n");
    fputs(b.p, stdout);
    buf_release(&b);
    cJSON_Delete(j);
    return 0;
}

static int do_show(cli *c, const char *id)
{
    bool standalone;
    int rc;
    cJSON *j = modes_doc(c, &standalone, &rc);
    if (!j) return rc;
    const cJSON *m, *hit = NULL;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(
                              j, "modes")) if (jstr(m, "id") && !strcmp(jstr(m, "id"), id)) hit = m;
    if (!hit) {
        fprintf(stderr, "gpumod: mode show: no mode '%s' is configured\n", id);
        cJSON_Delete(j);
        return EXIT_USAGE;
    }
    if (c->json) {
        char *t = cJSON_PrintUnformatted(hit);
        puts(t);
        free(t);
        cJSON_Delete(j);
        return 0;
    }
    buf b = BUF_INIT;
    buf_printf(&b, "%s", id);
    if (jstr(hit, "name")) buf_printf(&b, " (%s)", jstr(hit, "name"));
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(hit, "current"))) buf_adds(&b, ": current");
    buf_addc(&b, '\n');
    if (jstr(hit, "description")) buf_printf(&b, "  %s\n", jstr(hit, "description"));
    buf_adds(&b, "  services: ");
    services_list(&b, hit);
    buf_addc(&b, '\n');
    if (standalone) buf_adds(&b, "(no daemon is running: from the configuration)\n");
    fputs(b.p, stdout);
    buf_release(&b);
    cJSON_Delete(j);
    return 0;
}

/* ---- current -------------------------------------------------------------- */

static void ids_line(buf *b, const cJSON *arr)
{
    const cJSON *s;
    int k = 0;
    cJSON_ArrayForEach(s, arr)
        buf_printf(b, "%s%s", k++ ? ", " : "", cJSON_IsString(s) ? s->valuestring : "?");
    if (!k) buf_adds(b, "nothing");
}

static int do_current(cli *c)
{
    http_reply r;
    int rc = ctl_call(&c->paths, "GET", "/modes/current", NULL, CTL_QUICK_MS, false, &r);
    if (rc) return rc;
    if (r.status != 200) {
        rc = ctl_fail(&r, "mode current");
    } else if (c->json) {
        ctl_print_body(&r);
    } else {
        cJSON *j = ctl_json(&r, "mode current");
        if (!j) {
            rc = EXIT_REFUSED;
        } else {
            buf b = BUF_INIT;
            const char *m = jstr(j, "mode"), *base = jstr(j, "base_mode");
            if (m)
                buf_printf(&b, "%s\n", m);
            else {
                buf_adds(&b, "no mode: running ");
                ids_line(&b, cJSON_GetObjectItemCaseSensitive(j, "running"));
                buf_printf(&b, " (last committed mode: %s)\n", base ? base : "none ever");
            }
            const cJSON *sw = cJSON_GetObjectItemCaseSensitive(j, "switching");
            if (sw && cJSON_IsObject(sw))
                buf_printf(&b, "switching to '%s' (switch %.0f, phase %s)\n",
                           jstr(sw, "mode") ? jstr(sw, "mode") : "?", jnum(sw, "switch_id", 0),
                           jstr(sw, "phase") ? jstr(sw, "phase") : "?");
            fputs(b.p, stdout);
            buf_release(&b);
            cJSON_Delete(j);
        }
    }
    http_reply_release(&r);
    return rc;
}

/* ---- switch --------------------------------------------------------------- */

/* Predicted room after a step: MemAvailable and each device's free
 * memory, less what planned starts and others have reserved. */
static void mem_cells(buf *b, const cJSON *mem)
{
    double host = jnum(mem, "host_available_bytes", 0) - jnum(mem, "reserved_host_bytes", 0);
    buf_adds(b, "  host ");
    buf_bytes(b, host > 0 ? (uint64_t)host : 0);
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(mem, "gpus"))
    {
        double f = jnum(g, "free_bytes", 0) - jnum(g, "reserved_bytes", 0);
        buf_printf(b, "  gpu%.0f ", jnum(g, "index", 0));
        buf_bytes(b, f > 0 ? (uint64_t)f : 0);
    }
}

/* "1.2 s", "200 ms" */
static void ms_words(double ms, char *out, size_t n)
{
    if (ms >= 1000)
        snprintf(out, n, "%.1f s", ms / 1000);
    else
        snprintf(out, n, "%.0f ms", ms);
}

/* A step's kind with its tier: "sleep l1", "wake l1", "stop", "start". */
static void step_words(const cJSON *s, char *out, size_t n)
{
    const char *kind = jstr(s, "kind") ? jstr(s, "kind") : "?";
    const char *tier = jstr(s, "tier");
    bool tiered = !strcmp(kind, "sleep") || !strcmp(kind, "wake");
    snprintf(out, n, "%s%s%s", kind, tiered && tier ? " " : "", tiered && tier ? tier : "");
}

/* A step's expected time: "1.2 s", "0 ms", "?" (unknown). */
static void expect_words(const cJSON *s, char *out, size_t n)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(s, "expect_ms");
    if (!cJSON_IsNumber(e))
        snprintf(out, n, "%s", e ? "?" : "");
    else
        ms_words(e->valuedouble, out, n);
}

static void print_plan(buf *b, const cJSON *p)
{
    const char *from = jstr(p, "from"), *to = jstr(p, "mode");
    bool ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "ok"));
    buf_printf(b, "plan: %s%s%s -> '%s': %s\n", from ? "'" : "", from ? from : "no mode",
               from ? "'" : "", to ? to : "?", ok ? "fits" : "refused");
    if (!ok)
        buf_printf(b, "  '%s' would be refused (%s): %s\n",
                   jstr(p, "refused") ? jstr(p, "refused") : "?",
                   jstr(p, "binding") ? jstr(p, "binding") : "?",
                   jstr(p, "reason") ? jstr(p, "reason") : "?");
    buf_printf(b, "  %-9s %-20s %-10s %-8s %s\n", "STEP", "SERVICE", "VERDICT", "EXPECT",
               "PREDICTED FREE AFTER (less reservations)");
    buf_printf(b, "  %-9s %-20s %-10s %-8s", "now", "", "", "");
    mem_cells(b, cJSON_GetObjectItemCaseSensitive(p, "before"));
    buf_addc(b, '\n');
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(p, "steps"))
    {
        const char *kind = jstr(s, "kind");
        bool start = kind && (!strcmp(kind, "start") || !strcmp(kind, "wake"));
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, "verdict");
        const char *verd = !start                                                    ? "-"
                           : cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "ok")) ? "ok"
                                                                                     : "REFUSED";
        char step[32], expect[24];
        step_words(s, step, sizeof step);
        expect_words(s, expect, sizeof expect);
        buf_printf(b, "  %-9s %-20s %-10s %-8s", step,
                   jstr(s, "service") ? jstr(s, "service") : "?", verd, expect);
        mem_cells(b, cJSON_GetObjectItemCaseSensitive(s, "after"));
        buf_addc(b, '\n');
        if (jstr(s, "note")) buf_printf(b, "            %s\n", jstr(s, "note"));
        if (start && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "ok")))
            buf_printf(b, "         %s: %s\n", jstr(v, "binding") ? jstr(v, "binding") : "?",
                       jstr(v, "reason") ? jstr(v, "reason") : "?");
    }
    const cJSON *keeps = cJSON_GetObjectItemCaseSensitive(p, "keeps");
    if (cJSON_GetArraySize(keeps)) {
        buf_adds(b, "  kept (untouched): ");
        ids_line(b, keeps);
        buf_addc(b, '\n');
    }
    const cJSON *asleep = cJSON_GetObjectItemCaseSensitive(p, "asleep");
    if (cJSON_GetArraySize(asleep)) {
        buf_adds(b, "  left asleep: ");
        ids_line(b, asleep);
        buf_addc(b, '\n');
    }
    if (cJSON_GetObjectItemCaseSensitive(p, "expect_ms")) {
        char t[24];
        ms_words(jnum(p, "expect_ms", 0), t, sizeof t);
        buf_printf(b, "  expected: %s%s\n", t,
                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "expect_partial"))
                       ? " and the steps of unknown time (?)"
                       : "");
    }
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(p, "warnings")) if (cJSON_IsString(s))
        buf_printf(b, "  warning: %s\n", s->valuestring);
}

static void print_phases(buf *b, const cJSON *sw)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(sw, "phases"))
    {
        char name[160];
        snprintf(name, sizeof name, "%s%s%s", jstr(p, "phase") ? jstr(p, "phase") : "?",
                 jstr(p, "service") ? " " : "", jstr(p, "service") ? jstr(p, "service") : "");
        const cJSON *ok = cJSON_GetObjectItemCaseSensitive(p, "ok");
        buf_printf(b, "  %-32s ", name);
        if (jnull(p, "duration_ms"))
            buf_adds(b, "     -");
        else
            buf_printf(b, "%6.0f ms", jnum(p, "duration_ms", 0));
        buf_adds(b, cJSON_IsFalse(ok) ? "  FAILED" : "");
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(p, "detail");
        if (!jnull(d, "load_ms") && jnum(d, "load_ms", -1) >= 0)
            buf_printf(b, "  (load %.0f ms)", jnum(d, "load_ms", 0));
        if (jstr(d, "tier")) {
            bool fb = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "fell_back"));
            if (fb)
                buf_printf(b, "  (fell back: %s)", jstr(d, "message") ? jstr(d, "message") : "?");
            else
                buf_printf(b, "  (%s %s)",
                           cJSON_GetObjectItemCaseSensitive(d, "woke") ? "woke" : "slept",
                           jstr(d, "tier"));
        }
        if (jnum(d, "polls", 0) > 1)
            buf_printf(b, "  (waited %.0f ms for the memory)", jnum(d, "waited_ms", 0));
        buf_addc(b, '\n');
    }
}

/* A switch being waited for: its id, the client's deadline, and how the
 * wait ended (rc; r holds the result when rc is 0). */
typedef struct switch_wait {
    cli *c;
    long long id;
    int64_t wait_ms, deadline;
    http_reply *r;
    int rc;
} switch_wait;

/* One read of GET /switches/ID: true when the wait is over. */
static bool switch_check(void *ud, const char *ended)
{
    switch_wait *w = ud;
    char target[64];
    snprintf(target, sizeof target, "/switches/%lld", w->id);
    http_reply g;
    int rc = ctl_call(&w->c->paths, "GET", target, NULL, CTL_QUICK_MS, true, &g);
    if (rc) {
        fprintf(stderr,
                "gpumod: mode switch: the daemon %s during switch %lld; once a daemon runs again, "
                "`gpumod mode current` and GET /switches/%lld say how it ended\n",
                ended && !strcmp(ended, "shutting_down") ? "went away (it was shutting down)"
                                                         : "went away",
                w->id, w->id);
        w->rc = rc == EXIT_TIMEOUT ? EXIT_TIMEOUT : EXIT_DAEMON;
        return true;
    }
    if (g.status != 200) {
        w->rc = ctl_fail(&g, "mode switch");
        http_reply_release(&g);
        return true;
    }
    cJSON *j = ctl_json(&g, "mode switch");
    if (!j) {
        http_reply_release(&g);
        w->rc = EXIT_REFUSED;
        return true;
    }
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(j, "result");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(res, "body");
    bool done = true;
    if (cJSON_IsObject(res) && b) {
        char *text = cJSON_PrintUnformatted(b);
        *w->r = g; /* keeps head and fields; the body becomes the result's */
        buf_clear(&w->r->body);
        buf_adds(&w->r->body, text);
        w->r->status = (int)jnum(res, "status", 500);
        free(text);
        w->rc = 0;
        cJSON_Delete(j);
        return true;
    }
    if (!jnull(j, "ended")) {
        /* ended, and this daemon has no answer for it (a daemon restarted since) */
        const char *out = jstr(j, "outcome"), *e = jstr(j, "error");
        fprintf(stderr, "gpumod: mode switch: switch %lld ended %s%s%s\n", w->id, out ? out : "?",
                e ? ": " : "", e ? e : "");
        w->rc = out && !strcmp(out, "committed") ? SWITCH_ENDED_OK : EXIT_REFUSED;
    } else if (clock_mono_ms() > w->deadline) {
        fprintf(stderr,
                "gpumod: mode switch: switch %lld is still running after %lld ms (the daemon's "
                "bound); it goes "
                "on in the daemon: `gpumod mode current` shows it\n",
                w->id, (long long)(w->wait_ms + MARGIN_MS));
        w->rc = EXIT_TIMEOUT;
    } else {
        done = false;
    }
    cJSON_Delete(j);
    http_reply_release(&g);
    return done;
}

/* r holds the 202 {switch_id, wait_ms}: wait on the event stream (the
 * switch's phases) until GET /switches/ID carries the result, then r
 * holds that result as if the switch had been answered in one request.
 * 0, or an exit code after a message; SWITCH_ENDED_OK when the switch
 * committed but the daemon has no result to show (said on stderr). */
static int wait_switch(cli *c, http_reply *r)
{
    cJSON *t = ctl_json(r, "mode switch");
    if (!t) {
        http_reply_release(r);
        return EXIT_REFUSED;
    }
    switch_wait w = {.c = c,
                     .id = (long long)jnum(t, "switch_id", 0),
                     .wait_ms = (int64_t)jnum(t, "wait_ms", 0),
                     .r = r,
                     .rc = EXIT_REFUSED};
    cJSON_Delete(t);
    http_reply_release(r);
    if (w.id <= 0) {
        fprintf(stderr,
                "gpumod: mode switch: the daemon accepted the switch without a switch id\n");
        return EXIT_REFUSED;
    }
    if (w.wait_ms <= 0) w.wait_ms = 3600000;
    w.deadline = clock_mono_ms() + w.wait_ms + MARGIN_MS;
    ev_wait(&c->paths, "kind=switch.phase", SWITCH_TICK_MS, switch_check, &w);
    return w.rc;
}

/* What `mode switch` was asked: the mode, and for a dry run the what-if
 * (--add, --remove, --ctx SVC=N: the body's add_services,
 * remove_services and context_overrides, docs/api.md). */
typedef struct switch_args {
    const char *id;
    bool dry;
    int64_t timeout_s;
    strv add, remove, ctx_id;
    int64_t ctx[64];
} switch_args;

static void switch_args_release(switch_args *a)
{
    strv_release(&a->add);
    strv_release(&a->remove);
    strv_release(&a->ctx_id);
}

/* --ctx SVC=N into a.  0, or an exit code after the usage message. */
static int ctx_arg(cli *c, const cmd *k, const char *v, switch_args *a)
{
    const char *eq = strchr(v, '=');
    if (!eq || eq == v)
        return cli_usage_error(
            c, k, "mode switch: --ctx takes SERVICE=TOKENS (e.g. --ctx chat=8192), not '%s'", v);
    char *id = xstrndup(v, (size_t)(eq - v));
    int rc = 0;
    if (strv_find(&a->ctx_id, id) >= 0)
        rc = cli_usage_error(c, k, "mode switch: --ctx '%s' is given twice", id);
    else if (a->ctx_id.n >= 64)
        rc = cli_usage_error(c, k, "mode switch: at most 64 --ctx");
    else if (cli_int_arg(c, k, "--ctx", eq + 1, 1, CTX_MAX, &a->ctx[a->ctx_id.n]))
        rc = EXIT_USAGE;
    else
        strv_push(&a->ctx_id, id);
    free(id);
    return rc;
}

/* argv[*i] as one of mode switch's options that take a value: its index
 * in opts with *v, -1 when it is none of them, -2 when the value is
 * missing */
static int valued_opt(int argc, char **argv, int *i, const char *const *opts, int n, const char **v)
{
    for (int o = 0; o < n; o++) {
        int r = opt_value(argc, argv, i, opts[o], v);
        if (r) return r < 0 ? -2 : o;
    }
    return -1;
}

static int switch_parse(cli *c, const cmd *k, int argc, char **argv, switch_args *a)
{
    static const char *const opts[] = {"--timeout", "--add", "--remove", "--ctx"};
    const char *v;
    int rc = 0;
    for (int i = 2; i < argc && !rc; i++) {
        const char *arg = argv[i];
        int o = valued_opt(argc, argv, &i, opts, 4, &v);
        if (o == -2)
            rc = cli_usage_error(c, k, "mode switch: option '%s' needs a value", arg);
        else if (o == 0)
            rc = cli_int_arg(c, k, "--timeout", v, 1, 86400, &a->timeout_s) ? EXIT_USAGE : 0;
        else if (o == 1)
            strv_push(&a->add, v);
        else if (o == 2)
            strv_push(&a->remove, v);
        else if (o == 3)
            rc = ctx_arg(c, k, v, a);
        else if (!strcmp(arg, "--dry-run"))
            a->dry = true;
        else if (arg[0] == '-')
            rc = cli_usage_error(c, k, "mode switch: unknown option '%s'", arg);
        else if (!a->id)
            a->id = arg;
        else
            rc = cli_usage_error(c, k, "mode switch: unexpected argument '%s'", arg);
    }
    if (rc) return rc;
    if (!a->id) return cli_usage_error(c, k, "mode switch: which mode? (a mode id, or none)");
    if (!a->dry && (a->add.n || a->remove.n || a->ctx_id.n))
        return cli_usage_error(
            c, k, "mode switch: --add, --remove and --ctx simulate: they need --dry-run");
    return 0;
}

static void ids_member(buf *b, const char *name, const strv *ids)
{
    if (!ids->n) return;
    buf_printf(b, ",\"%s\":[", name);
    for (size_t i = 0; i < ids->n; i++) {
        if (i) buf_addc(b, ',');
        buf_json_str(b, ids->v[i]);
    }
    buf_addc(b, ']');
}

static void switch_body(buf *b, const switch_args *a)
{
    buf_adds(b, "{\"mode\":");
    buf_json_str(b, a->id);
    buf_printf(b, ",\"dry_run\":%s", a->dry ? "true" : "false");
    if (a->timeout_s) buf_printf(b, ",\"timeout\":%lld", (long long)a->timeout_s);
    ids_member(b, "add_services", &a->add);
    ids_member(b, "remove_services", &a->remove);
    if (a->ctx_id.n) {
        buf_adds(b, ",\"context_overrides\":{");
        for (size_t i = 0; i < a->ctx_id.n; i++) {
            if (i) buf_addc(b, ',');
            buf_json_str(b, a->ctx_id.v[i]);
            buf_printf(b, ":%lld", (long long)a->ctx[i]);
        }
        buf_addc(b, '}');
    }
    buf_addc(b, '}');
}

/* "simulated: add b2; remove a2; context chat=8192" (what the daemon applied) */
static void print_simulated(buf *b, const cJSON *sim)
{
    if (!cJSON_IsObject(sim)) return;
    buf_adds(b, "simulated:");
    const char *sep = " ";
    const cJSON *e;
    static const char *const lists[][2] = {{"add_services", "add"}, {"remove_services", "remove"}};
    for (size_t l = 0; l < 2; l++) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(sim, lists[l][0]);
        if (!cJSON_GetArraySize(arr)) continue;
        buf_printf(b, "%s%s ", sep, lists[l][1]);
        ids_line(b, arr);
        sep = "; ";
    }
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(sim, "context_overrides");
    if (cJSON_GetArraySize(ctx)) {
        buf_printf(b, "%scontext", sep);
        cJSON_ArrayForEach(e, ctx) buf_printf(b, " %s=%.0f", e->string, e->valuedouble);
        sep = "; ";
    }
    buf_adds(b, *sep == ' ' ? " nothing applied (see the warnings)\n" : "\n");
}

static int do_switch(cli *c, const cmd *k, int argc, char **argv)
{
    switch_args a = {0};
    int prc = switch_parse(c, k, argc, argv, &a);
    if (prc) {
        switch_args_release(&a);
        return prc;
    }
    const char *id = a.id;
    bool dry = a.dry;
    buf body = BUF_INIT;
    switch_body(&body, &a);
    switch_args_release(&a);
    http_reply r;
    int rc = ctl_call(&c->paths, "POST",
                      dry ? "/modes/switch?origin=cli" : "/modes/switch?origin=cli&wait=0", body.p,
                      CTL_QUICK_MS * 4, false, &r);
    buf_release(&body);
    if (rc) return rc;
    if (r.status == 202) {
        rc = wait_switch(c, &r);
        if (rc == SWITCH_ENDED_OK) return EXIT_OK;
        if (rc) return rc;
    }
    if (c->json) {
        ctl_print_body(&r);
        rc = ctl_exit_code(&r);
        http_reply_release(&r);
        return rc;
    }
    cJSON *j = ctl_json(&r, "mode switch");
    if (!j) {
        http_reply_release(&r);
        return EXIT_REFUSED;
    }
    buf b = BUF_INIT;
    if (r.status == 200 && dry) {
        print_plan(&b, j);
        print_simulated(&b, cJSON_GetObjectItemCaseSensitive(j, "simulated"));
        buf_adds(&b, "(dry run: nothing was changed)\n");
        fputs(b.p, stdout);
    } else if (r.status == 200) {
        const char *from = jstr(j, "from");
        buf_printf(&b, "switched %s%s%s -> '%s' in %.0f ms (switch %.0f)\n", from ? "'" : "",
                   from ? from : "no mode", from ? "'" : "", jstr(j, "to") ? jstr(j, "to") : id,
                   jnum(j, "duration_ms", 0), jnum(j, "id", 0));
        print_phases(&b, j);
        fputs(b.p, stdout);
    } else {
        rc = ctl_fail(&r, "mode switch");
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "detail");
        const cJSON *sw = cJSON_GetObjectItemCaseSensitive(d, "switch");
        const cJSON *plan = cJSON_GetObjectItemCaseSensitive(d, "plan");
        if (sw && cJSON_IsObject(sw)) {
            buf_printf(&b, "switch %.0f: %s\n", jnum(sw, "id", 0),
                       jstr(sw, "outcome") ? jstr(sw, "outcome") : "?");
            print_phases(&b, sw);
            buf_adds(&b, "now: ");
            if (jstr(d, "now"))
                buf_printf(&b, "mode '%s'\n", jstr(d, "now"));
            else {
                buf_adds(&b, "no mode, running ");
                ids_line(&b, cJSON_GetObjectItemCaseSensitive(d, "running"));
                buf_addc(&b, '\n');
            }
        } else if (plan && cJSON_IsObject(plan)) {
            print_plan(&b, plan);
            buf_adds(&b, "nothing was stopped\n");
        }
        fputs(b.p, stderr);
    }
    buf_release(&b);
    cJSON_Delete(j);
    http_reply_release(&r);
    return rc;
}

int cmd_mode(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("mode");
    if (argc < 2)
        return cli_usage_error(c, k, "mode: which subcommand? (list, show, current, switch)");
    const char *sub = argv[1];
    if (!strcmp(sub, "list")) {
        if (argc > 2) return cli_usage_error(c, k, "mode list: unexpected argument '%s'", argv[2]);
        return do_list(c);
    }
    if (!strcmp(sub, "show")) {
        if (argc != 3) return cli_usage_error(c, k, "mode show: give one mode id");
        return do_show(c, argv[2]);
    }
    if (!strcmp(sub, "current")) {
        if (argc > 2)
            return cli_usage_error(c, k, "mode current: unexpected argument '%s'", argv[2]);
        return do_current(c);
    }
    if (!strcmp(sub, "switch")) return do_switch(c, k, argc, argv);
    return cli_usage_error(c, k, "mode: unknown subcommand '%s' (list, show, current, switch)",
                           sub);
}
