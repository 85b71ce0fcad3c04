/* tact.c - the tools that change the host: switch_mode, start_service,
 * stop_service.  A switch or a start is asked with wait=0 and then
 * followed on the daemon's event stream (client/evwait.h), so that the
 * call can report progress (notifications/progress, when the caller gave
 * a progressToken), stop waiting when the caller cancels, and end at the
 * daemon's own bound (its wait_ms) rather than at a guess. */
#include "mcp/tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"
#include "client/evwait.h"
#include "mcp/dcall.h"
#include "mcp/rpc.h"
#include "util/buf.h"
#include "util/clock.h"

/* What a follow reads after each event. */
typedef struct follow {
    tool_ctx *c;
    const char *target;                       /* GET this after each event */
    int64_t deadline_ms;                      /* monotonic */
    bool (*done)(struct follow *f, cJSON *j); /* reads j (the GET's answer); true when ended */
    cJSON *last;                              /* the answer that ended it (owned) */
    char last_note[256];                      /* progress message last sent */
    double progress;                          /* the last progress sent: each is larger (MCP) */
    int64_t seq;                              /* a start's ticket */
    int told;                                 /* a switch's phases told */
    bool timed_out, cancelled;
    tool_out gone; /* the daemon stopped answering */
} follow;

/* A progress notification, unless note is the one sent last: progress
 * increases with each (MCP), so it is the percentage when that is larger
 * than the last value sent (total 100), else the last value plus one. */
static void progress(follow *f, const char *note, double pct)
{
    if (!f->c->progress || !strcmp(note, f->last_note)) return;
    snprintf(f->last_note, sizeof f->last_note, "%s", note);
    bool is_pct = pct > f->progress;
    f->progress = is_pct ? pct : f->progress + 1;
    cJSON *p = cJSON_CreateObject();
    cJSON_AddItemToObject(p, "progressToken", cJSON_Duplicate(f->c->progress, 1));
    cJSON_AddNumberToObject(p, "progress", f->progress);
    if (is_pct) cJSON_AddNumberToObject(p, "total", 100);
    /* message: 2025-03-26 on; older clients ignore a member they do not know */
    cJSON_AddStringToObject(p, "message", note);
    mcp_send(f->c->srv, rpc_notification("notifications/progress", p));
}

static bool follow_check(void *ud, const char *ended)
{
    follow *f = ud;
    if (f->c->call->cancelled) return f->cancelled = true;
    if (clock_mono_ms() > f->deadline_ms) return f->timed_out = true;
    cJSON *j;
    tool_out o = {0};
    dcall(f->c->srv, "GET", f->target, NULL, CTL_QUICK_MS, &j, &o);
    if (!j) {
        free(f->gone.error);
        cJSON_Delete(f->gone.value);
        f->gone = o;
        return true;
    }
    if (f->done(f, j)) {
        f->last = j;
        return true;
    }
    cJSON_Delete(j);
    return false;
}

/* Follow until done, the deadline, a cancel or the daemon gone; o gets
 * the error of the three last. */
static cJSON *follow_run(follow *f, const char *query, tool_out *o)
{
    ev_wait(&f->c->srv->paths, query, 1000, follow_check, f);
    if (f->last) return f->last;
    if (f->cancelled)
        tout_error(o, "cancelled by the caller (the daemon goes on with what it was asked)");
    else if (f->timed_out)
        tout_error(o, "no outcome within the daemon's own bound; ask again (switch_status)");
    else if (f->gone.error) {
        o->error = f->gone.error;
        o->value = f->gone.value;
        return NULL;
    }
    return NULL;
}

/* One progress notification for each phase of the journal not yet told
 * (a read may find several: verify-healthy and commit take milliseconds),
 * all before the result. */
static bool switch_done(follow *f, cJSON *j)
{
    const cJSON *phases = cJSON_GetObjectItemCaseSensitive(j, "phases");
    int n = cJSON_GetArraySize(phases);
    for (; f->told < n; f->told++) {
        const cJSON *ph = cJSON_GetArrayItem(phases, f->told);
        const char *phase = jstr(ph, "phase"), *svc = jstr(ph, "service");
        char note[200];
        snprintf(note, sizeof note, "switch %d to %s: %s%s%s", (int)jnum(j, "id", 0),
                 jstr(j, "to") ? jstr(j, "to") : "?", phase ? phase : "?", svc ? " " : "",
                 svc ? svc : "");
        progress(f, note, -1);
    }
    return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "result"));
}

/* The ended switch's result: its body, or the error with what the
 * rollback did. */
static void switch_result(cJSON *sw, tool_out *o)
{
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(sw, "result");
    int status = (int)jnum(res, "status", 0);
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(res, "body");
    if (status >= 200 && status < 300) {
        o->value = cJSON_Duplicate(body, 1);
        return;
    }
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(body, "error");
    /* the daemon's message says what failed and what the rollback left */
    tout_error(o, "%s (%s, HTTP %d)", jstr(e, "message") ? jstr(e, "message") : "the switch failed",
               jstr(e, "code") ? jstr(e, "code") : "error", status);
    o->value = cJSON_CreateObject();
    cJSON_AddNumberToObject(o->value, "status", status);
    cJSON_AddItemToObject(o->value, "error", e ? cJSON_Duplicate(e, 1) : cJSON_CreateNull());
}

void tool_switch_mode(tool_ctx *c, tool_out *o)
{
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "mode", jstr(c->args, "mode_id"));
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(c->args, "timeout_s");
    if (to) cJSON_AddNumberToObject(body, "timeout", to->valuedouble);
    char *b = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    cJSON *j;
    dcall(c->srv, "POST", "/modes/switch?wait=0&origin=api", b, 30000, &j, o);
    free(b);
    if (!j) return;
    if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(c->args, "wait"))) {
        o->value = j;
        return;
    }
    char *target = xasprintf("/switches/%d", (int)jnum(j, "switch_id", 0));
    follow f = {.c = c,
                .target = target,
                .done = switch_done,
                .deadline_ms = clock_mono_ms() + (int64_t)jnum(j, "wait_ms", 3600000) + 5000};
    cJSON_Delete(j);
    cJSON *sw = follow_run(&f, "kind=switch.phase", o);
    if (sw) switch_result(sw, o);
    cJSON_Delete(sw);
    free(target);
}

static bool start_done(follow *f, cJSON *j)
{
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(j, "last_start");
    const char *out = jstr(ls, "outcome");
    if (jnum(ls, "seq", -1) >= (double)f->seq && out && strcmp(out, "pending")) return true;
    char note[200];
    double pct = jnum(j, "progress_pct", -1);
    int n = snprintf(note, sizeof note, "%s: %s", jstr(j, "id") ? jstr(j, "id") : "?",
                     jstr(j, "state") ? jstr(j, "state") : "?");
    if (pct >= 0 && n > 0 && (size_t)n < sizeof note)
        snprintf(note + n, sizeof note - (size_t)n, " (loaded %.0f %%)", pct);
    progress(f, note, pct);
    return false;
}

void tool_start_service(tool_ctx *c, tool_out *o)
{
    char *id = dc_escape(jstr(c->args, "service_id"));
    char *t = xasprintf("/services/%s/start?wait=0&origin=api", id);
    cJSON *j;
    int st = dcall(c->srv, "POST", t, NULL, 30000, &j, o);
    free(t);
    if (!j || st == 200 || cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(c->args, "wait"))) {
        if (j) o->value = j;
        free(id);
        return;
    }
    char *target = xasprintf("/services/%s", id);
    char *query = xasprintf("service=%s", id);
    follow f = {.c = c,
                .target = target,
                .done = start_done,
                .seq = (int64_t)jnum(j, "start_seq", 0),
                .deadline_ms = clock_mono_ms() + (int64_t)jnum(j, "wait_ms", 3600000) + 5000};
    cJSON_Delete(j);
    cJSON *svc = follow_run(&f, query, o);
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(svc, "last_start");
    if (svc && strcmp(jstr(ls, "outcome"), "ready")) {
        tout_error(o, "start %s: %s%s%s", jstr(ls, "outcome"),
                   jstr(ls, "code") ? jstr(ls, "code") : "", jstr(ls, "message") ? ": " : "",
                   jstr(ls, "message") ? jstr(ls, "message") : "");
        o->value = svc;
    } else if (svc) {
        o->value = svc;
    }
    free(query);
    free(target);
    free(id);
}

void tool_stop_service(tool_ctx *c, tool_out *o)
{
    char *id = dc_escape(jstr(c->args, "service_id"));
    char *t = xasprintf("/services/%s/stop?origin=api", id);
    cJSON *j;
    /* a stop waits for the memory to be free: stop_timeout + verify_freed_timeout at most */
    dcall(c->srv, "POST", t, NULL, 600000, &j, o);
    if (j) o->value = j;
    free(t);
    free(id);
}
