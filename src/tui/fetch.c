/* fetch.c - what the dashboard reads from the daemon after an event (tui.h).
 *
 * A refresh is GET /status and GET /modes/current, each a quick request
 * (CTL_QUICK_MS); the selected service's last bench and eval results and
 * the route default are read again when the selection changed, after an
 * action, or when they are more than RESULTS_MAX_AGE_MS old (results are
 * not events: nothing on the stream says one was stored).  The outcomes
 * of what this dashboard asked for (a switch with wait=0, a start with
 * wait=0) are read here too: the switch's GET /switches/ID once its
 * events say it has ended, the start's last_start from the status. */
#include "tui/tui.h"
#include "client/ctl.h"
#include "util/clock.h"

#include <stdlib.h>
#include <string.h>

#define RESULTS_MAX_AGE_MS 2000

/* GET target -> parsed JSON (NULL when unreachable, not 200, not JSON) */
/* GET target within what is left of the refresh's deadline: a daemon
 * that hangs holds the keys for one quick request's time, not five */
static cJSON *get_json(tui_app *a, const char *target, bool *reached)
{
    int64_t left = a->fetch_until - clock_mono_ms();
    if (left <= 0) {
        if (reached) *reached = false;
        return NULL;
    }
    http_reply r;
    int rc = ctl_call(&a->paths, "GET", target, NULL, left, true, &r);
    if (reached) *reached = !rc;
    cJSON *j = !rc && r.status == 200 ? cJSON_ParseWithLength(r.body.p, r.body.len) : NULL;
    http_reply_release(&r);
    return j;
}

static void fetch_results(tui_app *a, const char *svc)
{
    char t[160];
    snprintf(t, sizeof t, "/results?service=%s&kind=eval&n=1", svc);
    cJSON *j = get_json(a, t, NULL);
    model_result(&a->eval, j);
    cJSON_Delete(j);
    /* bench: the newest of any bench kind (load, ctx_sweep, switch) */
    snprintf(t, sizeof t, "/results?service=%s&n=20", svc);
    j = get_json(a, t, NULL);
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "results"), *e, *keep = NULL;
    cJSON_ArrayForEach(e, arr)
    {
        const char *k = jstr(e, "kind");
        if (k && strcmp(k, "eval") && strcmp(k, "tune")) {
            keep = e;
            break;
        }
    }
    cJSON *one = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(one, "results");
    if (keep) cJSON_AddItemReferenceToArray(list, keep);
    model_result(&a->bench, one);
    cJSON_Delete(one);
    cJSON_Delete(j);
    snprintf(a->res_for, sizeof a->res_for, "%s", svc);
}

static void fetch_route(tui_app *a)
{
    cJSON *j = get_json(a, "/route/default", NULL);
    a->route_known = j != NULL;
    snprintf(a->route, sizeof a->route, "%s", jstr(j, "service") ? jstr(j, "service") : "");
    snprintf(a->route_src, sizeof a->route_src, "%s", jstr(j, "source") ? jstr(j, "source") : "");
    cJSON_Delete(j);
}

/* keep the selection on the same service id across refreshes */
static void reselect(tui_app *a)
{
    for (size_t i = 0; i < a->m.nsvcs; i++)
        if (!strcmp(a->m.svcs[i].id, a->sel_id)) {
            a->sel = i;
            return;
        }
    if (a->sel >= a->m.nsvcs) a->sel = a->m.nsvcs ? a->m.nsvcs - 1 : 0;
    snprintf(a->sel_id, sizeof a->sel_id, "%s", a->m.nsvcs ? a->m.svcs[a->sel].id : "");
}

void fetch_all(tui_app *a, bool full)
{
    a->fetch_until = clock_mono_ms() + CTL_QUICK_MS;
    bool reached;
    cJSON *j = get_json(a, "/status", &reached);
    a->reachable = reached && j;
    if (!j) return;
    model_from_status(&a->m, j);
    cJSON_Delete(j);
    reselect(a);
    j = get_json(a, "/modes/current", NULL);
    model_mode(&a->mode, j);
    cJSON_Delete(j);
    const tui_svc *s = app_selected(a);
    int64_t now = clock_mono_ms();
    if (full || !s || strcmp(a->res_for, s->id) || now - a->results_at > RESULTS_MAX_AGE_MS) {
        if (s)
            fetch_results(a, s->id);
        else
            memset(&a->bench, 0, sizeof a->bench), memset(&a->eval, 0, sizeof a->eval);
        fetch_route(a);
        a->results_at = now;
    }
}

static void follow_switch(tui_app *a)
{
    char t[64];
    snprintf(t, sizeof t, "/switches/%ld", a->switch_id);
    cJSON *j = get_json(a, t, NULL);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(j, "result");
    if (!cJSON_IsObject(res)) {
        /* still running (or an entry without a result: say how it ended) */
        const char *out = jstr(j, "outcome");
        if (j && out && strcmp(out, "running") && strcmp(out, "planned")) {
            app_msg(a, strcmp(out, "committed") ? MSG_ERR : MSG_OK, "switch to '%s': %s%s%s",
                    a->switch_mode, out, jstr(j, "error") ? ": " : "",
                    jstr(j, "error") ? jstr(j, "error") : "");
            a->switch_id = 0;
        }
        cJSON_Delete(j);
        return;
    }
    int status = (int)jnum(res, "status", 0);
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(res, "body");
    if (status == 200) {
        app_msg(a, MSG_OK, "switched to '%s' in %.0f ms: %s", a->switch_mode,
                jnum(body, "duration_ms", 0),
                jstr(body, "outcome") ? jstr(body, "outcome") : "committed");
    } else {
        char *txt = cJSON_PrintUnformatted(body);
        buf e = BUF_INIT;
        model_error_text(&e, status, txt ? txt : "", txt ? strlen(txt) : 0);
        app_msg(a, MSG_ERR, "switch to '%s' failed: %s", a->switch_mode, e.p);
        buf_release(&e);
        free(txt);
    }
    a->switch_id = 0;
    cJSON_Delete(j);
}

void fetch_follow(tui_app *a)
{
    a->fetch_until = clock_mono_ms() + CTL_QUICK_MS;
    if (a->switch_id && a->reachable) follow_switch(a);
    if (!a->start_svc[0]) return;
    for (size_t i = 0; i < a->m.nsvcs; i++) {
        const tui_svc *s = &a->m.svcs[i];
        if (strcmp(s->id, a->start_svc)) continue;
        if (s->start_seq < a->start_seq || !strcmp(s->start_outcome, "pending") ||
            !s->start_outcome[0])
            return;
        if (!strcmp(s->start_outcome, "ready"))
            app_msg(a, MSG_OK, "'%s' is ready (port %d)", s->id, s->port);
        else if (!strncmp(s->start_msg, s->start_outcome, strlen(s->start_outcome)))
            app_msg(a, MSG_ERR, "start of '%s': %s", s->id,
                    s->start_msg); /* "refused: 'x': GPU 0 free ..." */
        else
            app_msg(a, MSG_ERR, "start of '%s': %s: %s", s->id, s->start_outcome,
                    s->start_msg[0] ? s->start_msg : "no reason given");
        a->start_svc[0] = '\0';
        return;
    }
}

/* a 202 of POST /modes/switch?wait=0: follow that switch */
static void switch_accepted(tui_app *a, const tui_job *j)
{
    cJSON *b = cJSON_ParseWithLength(j->reply.p, j->reply.len);
    a->switch_id = (long)jnum(b, "switch_id", 0);
    snprintf(a->switch_mode, sizeof a->switch_mode, "%s", j->target);
    app_msg(a, MSG_INFO, "switching to '%s' (switch %ld)...", j->target, a->switch_id);
    cJSON_Delete(b);
}

static void start_accepted(tui_app *a, const tui_job *j)
{
    cJSON *b = cJSON_ParseWithLength(j->reply.p, j->reply.len);
    const cJSON *svc = cJSON_GetObjectItemCaseSensitive(b, "service");
    if (j->status == 200 && !cJSON_GetObjectItemCaseSensitive(b, "start_seq")) {
        app_msg(a, MSG_OK, "'%s' is %s", j->target,
                jstr(svc, "state") ? jstr(svc, "state") : "ready");
    } else {
        snprintf(a->start_svc, sizeof a->start_svc, "%s", j->target);
        a->start_seq = (int64_t)jnum(b, "start_seq", 0);
        app_msg(a, MSG_INFO, "starting '%s'...", j->target);
    }
    cJSON_Delete(b);
}

void fetch_job_done(tui_app *a, tui_job *j)
{
    static const char *const what[] = {[TA_START] = "start",     [TA_STOP] = "stop",
                                       [TA_RESTART] = "restart", [TA_DRYRUN] = "plan of the switch",
                                       [TA_SWITCH] = "switch",   [TA_ROUTE] = "route default"};
    const char *w = j->kind > 0 && j->kind <= TA_ROUTE ? what[j->kind] : "request";
    a->busy[0] = '\0';
    if (j->rc) {
        app_msg(a, MSG_ERR, "%s of '%s': %s", w, j->target,
                j->rc == 4   ? "timed out"
                : j->rc == 3 ? "the daemon is not reachable"
                             : "the request failed");
        return;
    }
    if (j->status / 100 != 2) {
        buf e = BUF_INIT;
        model_error_text(&e, j->status, j->reply.p, j->reply.len);
        app_msg(a, MSG_ERR, "%s of '%s' refused: %s", w, j->target, e.p);
        buf_release(&e);
        return;
    }
    switch (j->kind) {
    case TA_DRYRUN: {
        cJSON *plan = cJSON_ParseWithLength(j->reply.p, j->reply.len);
        buf_clear(&a->plan);
        model_plan_text(&a->plan, plan);
        bool ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(plan, "ok"));
        cJSON_Delete(plan);
        snprintf(a->act_target, sizeof a->act_target, "%s", j->target);
        snprintf(a->confirm, sizeof a->confirm, "%s",
                 ok ? "switch now? (y/n)" : "the plan is refused (any key)");
        a->confirm_act = ok ? TA_SWITCH : TA_NONE;
        a->ov = OV_CONFIRM;
        return;
    }
    case TA_SWITCH:
        switch_accepted(a, j);
        return;
    case TA_START:
        start_accepted(a, j);
        return;
    case TA_STOP:
        app_msg(a, MSG_OK, "'%s' stopped", j->target);
        break;
    case TA_RESTART:
        app_msg(a, MSG_OK, "'%s' restarted: ready", j->target);
        break;
    case TA_ROUTE: {
        cJSON *b = cJSON_ParseWithLength(j->reply.p, j->reply.len);
        app_msg(a, MSG_OK, "route default: %s", jstr(b, "service") ? jstr(b, "service") : "(none)");
        cJSON_Delete(b);
        break;
    }
    default:
        break;
    }
    a->results_at = 0; /* read the route and results again */
}
