/* status.c - `gpumod status [--json]`: the daemon, its services, memory
 * per device and the last events, from one GET /status.  --json passes
 * the daemon's answer through unchanged (docs/api.md). */
#include "cli/ctl.h"
#include "cli/hostview.h"

#include <stdio.h>
#include <string.h>

static void memory_text(buf *b, const cJSON *mem)
{
    const char *nvml = jstr(mem, "nvml");
    if (!nvml) {
        buf_adds(b, "memory: the first host snapshot is still being taken\n");
        return;
    }
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(mem, "host");
    buf_adds(b, "memory (");
    dur_human(b, (int64_t)jnum(mem, "age_ms", 0));
    buf_printf(b, " old, nvml %s):\n  host: ", nvml);
    if (jnull(host, "mem_available_bytes")) {
        buf_adds(b, "MemAvailable unknown");
    } else {
        buf_bytes(b, (uint64_t)jnum(host, "mem_available_bytes", 0));
        buf_adds(b, " available of ");
        buf_bytes(b, (uint64_t)jnum(host, "mem_total_bytes", 0));
    }
    if (jnum(host, "reserved_bytes", 0) > 0) {
        buf_adds(b, ", reserved by starts ");
        buf_bytes(b, (uint64_t)jnum(host, "reserved_bytes", 0));
    }
    if (!jnull(host, "psi_full_avg10"))
        buf_printf(b, ", psi some %.2f full %.2f", jnum(host, "psi_some_avg10", 0), jnum(host, "psi_full_avg10", 0));
    buf_addc(b, '\n');
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(mem, "gpus"))
    {
        const char *name = jstr(g, "name");
        uint64_t total = (uint64_t)jnum(g, "total_bytes", 0), free_b = (uint64_t)jnum(g, "free_bytes", 0);
        buf_printf(b, "  gpu %.0f %s: ", jnum(g, "index", 0), name ? name : "");
        buf_bytes(b, free_b);
        buf_adds(b, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "unified")) ? " available (unified) "
                                                                                : " free of ");
        if (total) buf_bytes(b, total);
        if (jnum(g, "reserved_bytes", 0) > 0) {
            buf_adds(b, ", reserved by starts ");
            buf_bytes(b, (uint64_t)jnum(g, "reserved_bytes", 0));
        }
        buf_addc(b, ' ');
        if (total) fmt_bar(b, total > free_b ? total - free_b : 0, total, 20);
        buf_addc(b, '\n');
    }
}

/* A router-mode service's models, one indented line each (its "models"). */
static void model_rows(buf *b, const cJSON *s)
{
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(s, "models"), *m;
    cJSON_ArrayForEach(m, ms)
    {
        buf_printf(b, "    model %s: %s\n", jstr(m, "id") ? jstr(m, "id") : "?",
                   jstr(m, "state") ? jstr(m, "state") : "?");
    }
}

int cmd_status(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("status");
    if (argc > 1) return cli_usage_error(c, k, "status: unexpected argument '%s'", argv[1]);
    http_reply r;
    int rc = ctl_call(&c->paths, "GET", "/status", NULL, CTL_QUICK_MS, false, &r);
    if (rc) return rc;
    if (r.status != 200) {
        rc = ctl_fail(&r, "status");
        http_reply_release(&r);
        return rc;
    }
    if (c->json) {
        ctl_print_body(&r);
        http_reply_release(&r);
        return EXIT_OK;
    }
    cJSON *j = ctl_json(&r, "status");
    http_reply_release(&r);
    if (!j) return EXIT_REFUSED;
    buf b = BUF_INIT;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "daemon");
    buf_printf(&b, "daemon: pid %.0f, gpumod %s, up ", jnum(d, "pid", 0), jstr(d, "version") ? jstr(d, "version") : "?");
    dur_human(&b, (int64_t)jnum(d, "uptime_ms", 0));
    buf_printf(&b, ", socket %s\n  config %s, state %s\n", jstr(d, "socket") ? jstr(d, "socket") : "?",
               jstr(d, "config_dir") ? jstr(d, "config_dir") : "?", jstr(d, "state_dir") ? jstr(d, "state_dir") : "?");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "shutting_down"))) buf_adds(&b, "  shutting down\n");
    buf_addc(&b, '\n');
    const cJSON *svcs = cJSON_GetObjectItemCaseSensitive(j, "services"), *s;
    if (!cJSON_GetArraySize(svcs)) {
        buf_adds(&b, "no services configured\n");
    } else {
        service_row_header(&b);
        cJSON_ArrayForEach(s, svcs)
        {
            service_row(&b, s);
            model_rows(&b, s);
        }
    }
    const cJSON *slot = cJSON_GetObjectItemCaseSensitive(j, "slot");
    if (jstr(slot, "holder")) buf_printf(&b, "load slot: held by %s\n", jstr(slot, "holder"));
    buf_addc(&b, '\n');
    memory_text(&b, cJSON_GetObjectItemCaseSensitive(j, "memory"));
    const cJSON *evs = cJSON_GetObjectItemCaseSensitive(j, "events"), *e;
    if (cJSON_GetArraySize(evs)) {
        buf_adds(&b, "\nrecent events:\n");
        cJSON_ArrayForEach(e, evs)
        {
            buf_adds(&b, "  ");
            event_line(&b, e);
        }
    }
    fputs(b.p, stdout);
    buf_release(&b);
    cJSON_Delete(j);
    return EXIT_OK;
}
