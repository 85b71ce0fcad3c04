/* ctl.c - how the CLI shows what the daemon answers (see ctl.h). */
#include "cli/ctl.h"
#include "cli/hostview.h"
#include "util/clock.h"
#include "util/dur.h"

#include <stdio.h>
#include <string.h>

void fmt_age(buf *b, const char *ts)
{
    int64_t t;
    if (!ts || clock_parse_rfc3339(ts, &t)) {
        buf_adds(b, "?");
        return;
    }
    dur_human(b, clock_unix_ms() - t);
}

void service_row_header(buf *b)
{
    buf_printf(b, "%-20s %-10s %-8s %-6s %s\n", "SERVICE", "STATE", "PID", "PORT", "SINCE");
}

void service_row(buf *b, const cJSON *svc)
{
    const char *id = jstr(svc, "id"), *state = jstr(svc, "state");
    char pid[24] = "-", port[24] = "-";
    if (!jnull(svc, "pid")) snprintf(pid, sizeof pid, "%.0f", jnum(svc, "pid", 0));
    if (jnum(svc, "port", 0) > 0) snprintf(port, sizeof port, "%.0f", jnum(svc, "port", 0));
    char st[48];
    const cJSON *zz = cJSON_GetObjectItemCaseSensitive(svc, "asleep");
    if (state && !strcmp(state, "sleeping") && jstr(zz, "tier")) /* "sleeping (l1)" */
        snprintf(st, sizeof st, "sleeping (%s)", jstr(zz, "tier"));
    else
        snprintf(st, sizeof st, "%s", state ? state : "?");
    buf_printf(b, "%-20s %-10s %-8s %-6s ", id ? id : "?", st, pid, port);
    fmt_age(b, jstr(svc, "since"));
    if (!jnull(svc, "progress_pct") && state && !strcmp(state, "starting"))
        buf_printf(b, "  loading %.0f%%", jnum(svc, "progress_pct", 0));
    if (!jnull(svc, "queued")) buf_printf(b, "  queued #%.0f", jnum(svc, "queued", 0));
    /* the canary: asking now, or what the last one cost (or why it failed) */
    const cJSON *can = cJSON_GetObjectItemCaseSensitive(svc, "canary");
    const char *cst = jstr(can, "state");
    if (cst && !strcmp(cst, "running"))
        buf_adds(b, "  canary asking");
    else if (cst)
        buf_printf(b, "  canary %s in %.0f ms", cst, jnum(can, "ms", 0));
    /* the need it was admitted with, and which source bound it */
    const cJSON *adm = cJSON_GetObjectItemCaseSensitive(svc, "admitted"), *g;
    if (cJSON_IsObject(adm)) {
        double total = jnum(adm, "host_bytes", 0);
        cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(adm, "gpu_bytes")) total += cJSON_GetNumberValue(g);
        buf_adds(b, "  need ");
        buf_bytes(b, (uint64_t)total);
        if (jstr(adm, "source")) buf_printf(b, " (%s)", jstr(adm, "source"));
    }
    /* a start's overrides make the run differ from its preset too: say which */
    const cJSON *cc = cJSON_GetObjectItemCaseSensitive(svc, "config_changed");
    const cJSON *ov = cJSON_GetObjectItemCaseSensitive(svc, "overrides");
    if (cJSON_IsObject(ov) && ov->child) {
        buf_adds(b, "  ");
        overrides_text_json(b, ov);
        buf_adds(b, " (override)");
    } else if (cJSON_IsTrue(cc))
        buf_adds(b, "  config changed (restart to apply)");
    const cJSON *conf = cJSON_GetObjectItemCaseSensitive(svc, "configured");
    if (cJSON_IsFalse(conf)) buf_adds(b, "  no longer configured");
    buf_addc(b, '\n');
}

void event_line(buf *b, const cJSON *ev)
{
    const char *ts = jstr(ev, "ts"), *svc = jstr(ev, "service"), *kind = jstr(ev, "kind");
    const char *from = jstr(ev, "from"), *to = jstr(ev, "to"), *reason = jstr(ev, "reason");
    buf_printf(b, "%s #%.0f %s %s", ts ? ts : "?", jnum(ev, "id", 0), svc ? svc : "-", kind ? kind : "?");
    if (from || to) buf_printf(b, " %s -> %s", from ? from : "-", to ? to : "-");
    if (reason) buf_printf(b, ": %s", reason);
    buf_addc(b, '\n');
}

void overrides_text_json(buf *b, const cJSON *ov)
{
    const cJSON *it, *e;
    int n = 0;
    cJSON_ArrayForEach(it, ov)
    {
        if (!strcmp(it->string, "env")) {
            cJSON_ArrayForEach(e, it) if (cJSON_IsString(e)) buf_printf(b, "%senv %s=%s", n++ ? ", " : "", e->string,
                                                                        e->valuestring);
            continue;
        }
        buf_printf(b, "%s%s ", n++ ? ", " : "", it->string);
        if (cJSON_IsString(it))
            buf_adds(b, it->valuestring);
        else if (cJSON_IsNumber(it))
            buf_printf(b, "%.15g", it->valuedouble);
        else
            buf_adds(b, cJSON_IsTrue(it) ? "true" : "false");
    }
}
