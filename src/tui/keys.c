/* keys.c - what each key does (tui.h).  Every action that changes the
 * daemon asks first (y/n), and runs on the worker thread (feed.h), so the
 * screen keeps following the events while a stop or a restart waits:
 *
 *   s  POST /services/ID/start?wait=0   (the outcome comes on the events)
 *   x  POST /services/ID/stop           (answered when down)
 *   r  POST /services/ID/restart        (answered when ready)
 *   m  POST /modes/switch dry_run -> the plan, y -> POST /modes/switch?wait=0,
 *      then GET /switches/ID after the events until its result
 *   d  PUT /route/default
 *
 * A refusal shows the daemon's own message (the gate's reason, the
 * switch's rollback), never a generic "failed". */
#include "tui/tui.h"
#include "client/ctl.h"

#include <curses.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define KEY_ESC 27
#define CTRL_L 12

void app_msg(tui_app *a, int kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->msg, sizeof a->msg, fmt, ap);
    va_end(ap);
    a->msg_kind = kind;
}

const tui_svc *app_selected(const tui_app *a)
{
    return a->sel < a->m.nsvcs ? &a->m.svcs[a->sel] : NULL;
}

void app_sync_logs(tui_app *a)
{
    const tui_svc *s = app_selected(a);
    const char *want = a->log_pane && s ? s->id : "";
    if (!strcmp(want, a->logs_for) && (a->logs || !*want)) return;
    logs_stop(a->logs);
    a->logs = NULL;
    snprintf(a->logs_for, sizeof a->logs_for, "%s", want);
    if (*want) a->logs = logs_start(&a->paths, want, a->wake_fd[1]);
}

static void submit(tui_app *a, tui_act act, const char *target, const char *method,
                   const char *path, char *body, int64_t timeout_ms)
{
    if (!jobs_busy(a->jobs)) {
        static const char *const verb[] = {[TA_START] = "starting",
                                           [TA_STOP] = "stopping",
                                           [TA_RESTART] = "restarting",
                                           [TA_DRYRUN] = "planning the switch to",
                                           [TA_SWITCH] = "asking to switch to",
                                           [TA_ROUTE] = "setting the default to"};
        snprintf(a->busy, sizeof a->busy, "%s '%s'", verb[act], target);
    }
    tui_job *j = xcalloc(1, sizeof *j);
    j->kind = act;
    snprintf(j->target, sizeof j->target, "%s", target);
    snprintf(j->method, sizeof j->method, "%s", method);
    snprintf(j->path, sizeof j->path, "%s", path);
    j->body = body;
    j->timeout_ms = timeout_ms;
    if (!jobs_submit(a->jobs, j))
        app_msg(a, MSG_ERR, "one action at a time: %s is still running", a->busy);
}

/* the confirmed action */
static void run_confirmed(tui_app *a)
{
    char path[320];
    const char *t = a->act_target;
    switch (a->confirm_act) {
    case TA_START:
        snprintf(path, sizeof path, "/services/%s/start?wait=0&origin=api", t);
        submit(a, TA_START, t, "POST", path, NULL, 30000);
        break;
    case TA_STOP:
        snprintf(path, sizeof path, "/services/%s/stop?origin=api", t);
        submit(a, TA_STOP, t, "POST", path, NULL, 15 * 60000);
        break;
    case TA_RESTART:
        snprintf(path, sizeof path, "/services/%s/restart?origin=api", t);
        submit(a, TA_RESTART, t, "POST", path, NULL, 30 * 60000);
        break;
    case TA_SWITCH: {
        buf b = BUF_INIT;
        buf_adds(&b, "{\"mode\":");
        buf_json_str(&b, t);
        buf_adds(&b, "}");
        submit(a, TA_SWITCH, t, "POST", "/modes/switch?wait=0&origin=api", buf_detach(&b), 60000);
        break;
    }
    default:
        break;
    }
}

static void ask(tui_app *a, tui_act act, const char *verb)
{
    const tui_svc *s = app_selected(a);
    if (!s) {
        app_msg(a, MSG_ERR, "no service selected");
        return;
    }
    snprintf(a->act_target, sizeof a->act_target, "%s", s->id);
    buf_clear(&a->plan);
    buf_printf(&a->plan, "%s '%s' (now %s)", verb, s->id, s->state);
    snprintf(a->confirm, sizeof a->confirm, "%s '%s'? (y/n)", verb, s->id);
    a->confirm_act = act;
    a->ov = OV_CONFIRM;
}

static void open_mode_picker(tui_app *a)
{
    http_reply r;
    int rc = ctl_call(&a->paths, "GET", "/modes", NULL, CTL_QUICK_MS, true, &r);
    cJSON *j = !rc && r.status == 200 ? cJSON_ParseWithLength(r.body.p, r.body.len) : NULL;
    http_reply_release(&r);
    if (!j) {
        app_msg(a, MSG_ERR, "the modes cannot be read: %s",
                rc ? "the daemon is not reachable" : "a bad answer");
        return;
    }
    a->npick = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(j, "modes"))
    {
        if (a->npick >= TUI_PICK_MAX - 1 || !jstr(m, "id")) continue;
        snprintf(a->pick[a->npick++], sizeof a->pick[0], "%s", jstr(m, "id"));
    }
    snprintf(a->pick[a->npick++], sizeof a->pick[0], "none");
    cJSON_Delete(j);
    a->pick_at = 0;
    for (size_t i = 0; i < a->npick; i++)
        if (!strcmp(a->pick[i], a->mode.mode)) a->pick_at = i;
    a->ov = OV_PICK_MODE;
}

static void open_route_picker(tui_app *a)
{
    a->npick = 0;
    for (size_t i = 0; i < a->m.nsvcs && a->npick < TUI_PICK_MAX - 1; i++)
        snprintf(a->pick[a->npick++], sizeof a->pick[0], "%s", a->m.svcs[i].id);
    snprintf(a->pick[a->npick++], sizeof a->pick[0], "(clear: router.default)");
    a->pick_at = 0;
    for (size_t i = 0; i < a->npick; i++)
        if (!strcmp(a->pick[i], a->route)) a->pick_at = i;
    a->ov = OV_PICK_ROUTE;
}

static void picked(tui_app *a)
{
    const char *p = a->pick[a->pick_at];
    buf b = BUF_INIT;
    if (a->ov == OV_PICK_MODE) {
        buf_adds(&b, "{\"mode\":");
        buf_json_str(&b, p);
        buf_adds(&b, ",\"dry_run\":true}");
        a->ov = OV_NONE;
        submit(a, TA_DRYRUN, p, "POST", "/modes/switch?origin=api", buf_detach(&b), 60000);
        return;
    }
    bool clear = a->pick_at == a->npick - 1;
    buf_adds(&b, "{\"service\":");
    if (clear)
        buf_adds(&b, "null");
    else
        buf_json_str(&b, p);
    buf_addc(&b, '}');
    a->ov = OV_NONE;
    submit(a, TA_ROUTE, clear ? "(clear)" : p, "PUT", "/route/default", buf_detach(&b),
           CTL_QUICK_MS);
}

static bool key_overlay(tui_app *a, int ch)
{
    switch (a->ov) {
    case OV_HELP:
        a->ov = OV_NONE;
        return true;
    case OV_CONFIRM:
        if (a->confirm_act == TA_NONE) {
            a->ov = OV_NONE;
        } else if (ch == 'y' || ch == 'Y') {
            a->ov = OV_NONE;
            run_confirmed(a);
        } else if (ch == 'n' || ch == 'N' || ch == KEY_ESC || ch == 'q') {
            a->ov = OV_NONE;
            app_msg(a, MSG_INFO, "cancelled: nothing was done");
        }
        return true;
    default:
        break;
    }
    if (ch == KEY_UP || ch == 'k')
        a->pick_at = a->pick_at ? a->pick_at - 1 : 0;
    else if (ch == KEY_DOWN || ch == 'j')
        a->pick_at = a->pick_at + 1 < a->npick ? a->pick_at + 1 : a->pick_at;
    else if (ch == '\n' || ch == '\r' || ch == KEY_ENTER)
        picked(a);
    else if (ch == KEY_ESC || ch == 'q')
        a->ov = OV_NONE;
    return true;
}

static void move_sel(tui_app *a, int d)
{
    if (!a->m.nsvcs) return;
    if (d < 0 && a->sel > 0) a->sel--;
    if (d > 0 && a->sel + 1 < a->m.nsvcs) a->sel++;
    snprintf(a->sel_id, sizeof a->sel_id, "%s", a->m.svcs[a->sel].id);
}

bool keys_handle(tui_app *a, int ch)
{
    if (ch == CTRL_L) {
        clearok(curscr, TRUE);
        return true;
    }
    if (a->ov != OV_NONE) return key_overlay(a, ch);
    bool busy = jobs_busy(a->jobs);
    switch (ch) {
    case 'q':
    case 'Q':
        return false;
    case KEY_UP:
    case 'k':
        move_sel(a, -1);
        break;
    case KEY_DOWN:
    case 'j':
        move_sel(a, 1);
        break;
    case '?':
    case 'h':
        a->ov = OV_HELP;
        break;
    case 'l':
    case 'L':
        a->log_pane = !a->log_pane;
        break;
    case 'e':
        a->log_pane = false;
        break;
    case 's':
    case 'x':
    case 'r':
    case 'm':
    case 'd':
        if (busy) {
            app_msg(a, MSG_ERR, "one action at a time: %s is still running", a->busy);
            break;
        }
        if (!a->reachable) {
            app_msg(a, MSG_ERR, "the daemon is not reachable at %s", a->sock);
            break;
        }
        if (ch == 's')
            ask(a, TA_START, "start");
        else if (ch == 'x')
            ask(a, TA_STOP, "stop");
        else if (ch == 'r')
            ask(a, TA_RESTART, "restart");
        else if (ch == 'm')
            open_mode_picker(a);
        else
            open_route_picker(a);
        break;
    default:
        break;
    }
    return true;
}
