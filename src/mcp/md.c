/* md.c - Markdown renderings for the MCP resources (see md.h). */
#include "mcp/md.h"

#include <string.h>

#include "client/ctl.h"

/* a table cell: pipes and newlines would break the row */
static void cell(buf *b, const char *s)
{
    buf_adds(b, " ");
    for (; s && *s; s++) {
        if (*s == '|')
            buf_adds(b, "\\|");
        else if (*s == '\n' || *s == '\r')
            buf_addc(b, ' ');
        else
            buf_addc(b, *s);
    }
    buf_adds(b, " |");
}

static void gpu_rows(buf *b, const cJSON *gpus)
{
    if (!cJSON_GetArraySize(gpus)) {
        buf_adds(b, "No GPU figures (no NVML).\n\n");
        return;
    }
    buf_adds(b, "| GPU | name | used | reserved | free | total |\n|---|---|---|---|---|---|\n");
    const cJSON *g;
    cJSON_ArrayForEach(g, gpus)
    {
        buf_printf(b, "| %d |", (int)jnum(g, "index", 0));
        cell(b, jstr(g, "name"));
        const char *k[] = {"used_bytes", "reserved_bytes", "free_bytes", "total_bytes"};
        for (int i = 0; i < 4; i++) {
            buf_adds(b, " ");
            buf_bytes(b, jnum(g, k[i], 0));
            buf_adds(b, " |");
        }
        buf_adds(b, "\n");
    }
    buf_adds(b, "\n");
}

void md_status(buf *b, const cJSON *st, const cJSON *current)
{
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(st, "memory");
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(mem, "host");
    const char *mname = jstr(current, "mode");
    buf_printf(b, "# gpumod status\n\nMode: **%s**",
               mname     ? mname
               : current ? "(none matches)"
                         : "unknown");
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(current, "switching");
    if (cJSON_IsObject(sw))
        buf_printf(b, " (switching to %s)", jstr(sw, "mode") ? jstr(sw, "mode") : "?");
    buf_adds(b, "\n\nHost memory: ");
    buf_bytes(b, jnum(host, "mem_available_bytes", 0));
    buf_adds(b, " available of ");
    buf_bytes(b, jnum(host, "mem_total_bytes", 0));
    buf_adds(b, ", ");
    buf_bytes(b, jnum(host, "reserved_bytes", 0));
    buf_printf(b, " reserved by starts in flight; PSI full avg10 %.2f\n\n",
               jnum(host, "psi_full_avg10", 0));
    gpu_rows(b, cJSON_GetObjectItemCaseSensitive(mem, "gpus"));
    md_services(b, cJSON_GetObjectItemCaseSensitive(st, "services"));
}

void md_modes(buf *b, const cJSON *modes)
{
    buf_adds(b, "# Modes\n\n| mode | name | services | current |\n|---|---|---|---|\n");
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(modes, "modes"))
    {
        buf_adds(b, "|");
        cell(b, jstr(m, "id"));
        cell(b, jstr(m, "name"));
        buf_adds(b, " ");
        const cJSON *sv;
        int i = 0;
        cJSON_ArrayForEach(sv, cJSON_GetObjectItemCaseSensitive(m, "services"))
            buf_printf(b, "%s%s", i++ ? ", " : "", cJSON_IsString(sv) ? sv->valuestring : "?");
        buf_printf(b, " | %s |\n",
                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "current")) ? "yes" : "");
    }
}

static const cJSON *find_svc(const cJSON *services, const char *id)
{
    const cJSON *s;
    cJSON_ArrayForEach(s, services) if (jstr(s, "id") && id && !strcmp(jstr(s, "id"), id)) return s;
    return NULL;
}

void md_mode(buf *b, const cJSON *mname, const cJSON *services)
{
    buf_printf(b, "# Mode %s\n\n", jstr(mname, "id") ? jstr(mname, "id") : "?");
    if (jstr(mname, "description")) buf_printf(b, "%s\n\n", jstr(mname, "description"));
    buf_printf(b, "Current: %s\n\n| service | state | port |\n|---|---|---|\n",
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(mname, "current")) ? "yes" : "no");
    const cJSON *sv;
    cJSON_ArrayForEach(sv, cJSON_GetObjectItemCaseSensitive(mname, "services"))
    {
        const char *id = cJSON_IsString(sv) ? sv->valuestring : NULL;
        const cJSON *s = find_svc(services, id);
        buf_adds(b, "|");
        cell(b, id);
        cell(b, s ? jstr(s, "state") : "unknown");
        buf_printf(b, " %d |\n", (int)jnum(s, "port", 0));
    }
}

void md_services(buf *b, const cJSON *services)
{
    buf_adds(
        b,
        "## Services\n\n| service | driver | state | port | footprint |\n|---|---|---|---|---|\n");
    const cJSON *s;
    cJSON_ArrayForEach(s, services)
    {
        buf_adds(b, "|");
        cell(b, jstr(s, "id"));
        cell(b, jstr(s, "driver"));
        cell(b, jstr(s, "state"));
        buf_printf(b, " %d |", (int)jnum(s, "port", 0));
        const cJSON *fp = cJSON_GetObjectItemCaseSensitive(s, "footprint");
        cell(b, cJSON_IsObject(fp) ? jstr(fp, "detail") : "");
        buf_adds(b, "\n");
    }
}

void md_service(buf *b, const cJSON *s)
{
    buf_printf(b, "# Service %s\n\n", jstr(s, "id") ? jstr(s, "id") : "?");
    buf_printf(b, "- driver: %s\n- state: %s (since %s)\n- port: %d\n",
               jstr(s, "driver") ? jstr(s, "driver") : "?",
               jstr(s, "state") ? jstr(s, "state") : "?", jstr(s, "since") ? jstr(s, "since") : "?",
               (int)jnum(s, "port", 0));
    const cJSON *fp = cJSON_GetObjectItemCaseSensitive(s, "footprint");
    if (cJSON_IsObject(fp) && jstr(fp, "detail"))
        buf_printf(b, "- footprint: %s\n", jstr(fp, "detail"));
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(s, "last_start");
    if (cJSON_IsObject(ls))
        buf_printf(b, "- last start: %s%s%s\n", jstr(ls, "outcome") ? jstr(ls, "outcome") : "?",
                   jstr(ls, "message") ? ": " : "", jstr(ls, "message") ? jstr(ls, "message") : "");
    if (jstr(s, "log_file")) buf_printf(b, "- log: %s\n", jstr(s, "log_file"));
}

void md_events(buf *b, const cJSON *events)
{
    buf_adds(b,
             "# Recent events\n\n| id | time | service | kind | what |\n|---|---|---|---|---|\n");
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(events, "events"))
    {
        buf_printf(b, "| %d |", (int)jnum(e, "id", 0));
        cell(b, jstr(e, "ts"));
        cell(b, jstr(e, "service"));
        cell(b, jstr(e, "kind"));
        cell(b, jstr(e, "reason"));
        buf_adds(b, "\n");
    }
}
