/* model.c - the dashboard's state from the control API's JSON (model.h).
 *
 * Everything the screen needs is copied out of the cJSON tree into fixed
 * structs here, once per refresh: the drawing code then never touches
 * JSON, and a field the daemon leaves out (an older daemon, a snapshot
 * not taken yet) reads as "unknown", never as zero. */
#include "tui/model.h"
#include "client/ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024ull)

static void copy_str(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
}

void model_dur(buf *b, int64_t ms)
{
    int64_t s = ms < 0 ? 0 : ms / 1000;
    if (s < 60)
        buf_adds(b, "<1m"); /* redrawn each minute, not each second: no finer */
    else if (s < 3600)
        buf_printf(b, "%lldm", (long long)(s / 60));
    else if (s < 86400)
        buf_printf(b, "%lldh%02lldm", (long long)(s / 3600), (long long)(s / 60 % 60));
    else
        buf_printf(b, "%lldd%02lldh", (long long)(s / 86400), (long long)(s / 3600 % 24));
}

/* bytes of {"host_bytes": N, "gpu_bytes": {"0": N, ...}} added up */
static bool need_total(const cJSON *o, uint64_t *out)
{
    if (!cJSON_IsObject(o)) return false;
    double t = jnum(o, "host_bytes", 0);
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(o, "gpu_bytes")) t +=
        cJSON_GetNumberValue(g);
    *out = t > 0 ? (uint64_t)t : 0;
    return true;
}

static void bar_set(tui_bar *bar, double total, double free_b, double reserved)
{
    if (total < 0) total = 0;
    if (free_b < 0) free_b = 0;
    if (free_b > total) free_b = total;
    if (reserved < 0) reserved = 0;
    if (reserved > free_b) reserved = free_b;
    bar->total = (uint64_t)total;
    bar->used = (uint64_t)(total - free_b);
    bar->reserved = (uint64_t)reserved;
}

static void host_from(tui_host *h, const cJSON *host)
{
    h->known = !jnull(host, "mem_total_bytes") && !jnull(host, "mem_available_bytes");
    if (h->known)
        bar_set(&h->bar, jnum(host, "mem_total_bytes", 0), jnum(host, "mem_available_bytes", 0),
                jnum(host, "reserved_bytes", 0));
    h->psi_known = !jnull(host, "psi_full_avg10");
    h->psi_some = jnum(host, "psi_some_avg10", 0);
    h->psi_full = jnum(host, "psi_full_avg10", 0);
    h->contig_known = !jnull(host, "contig_bytes");
    h->contig_bytes = (uint64_t)jnum(host, "contig_bytes", 0);
    const cJSON *o;
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(host, "high_order_pages"))
    {
        if (h->norders >= TUI_MAX_ORDERS || !o->string) break;
        h->order[h->norders] = atoi(o->string);
        h->pages[h->norders++] = (uint64_t)cJSON_GetNumberValue(o);
    }
}

static void svc_from(tui_svc *s, const cJSON *j)
{
    copy_str(s->id, sizeof s->id, jstr(j, "id"));
    copy_str(s->state, sizeof s->state, jstr(j, "state"));
    copy_str(s->since, sizeof s->since, jstr(j, "since"));
    s->port = (int)jnum(j, "port", 0);
    s->progress = jnull(j, "progress_pct") ? -1 : (int)jnum(j, "progress_pct", 0);
    s->queued = (int)jnum(j, "queued", 0);
    s->configured = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "configured"));
    s->need_known = need_total(cJSON_GetObjectItemCaseSensitive(j, "admitted"), &s->need);
    s->foot_known = need_total(cJSON_GetObjectItemCaseSensitive(j, "footprint"), &s->foot);
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(j, "last_start");
    s->start_seq = (int64_t)jnum(ls, "seq", 0);
    copy_str(s->start_outcome, sizeof s->start_outcome, jstr(ls, "outcome"));
    copy_str(s->start_msg, sizeof s->start_msg, jstr(ls, "message"));
}

static void event_from(tui_event *e, const cJSON *j)
{
    e->id = (int64_t)jnum(j, "id", 0);
    copy_str(e->ts, sizeof e->ts, jstr(j, "ts"));
    const char *svc = jstr(j, "service"), *kind = jstr(j, "kind"), *from = jstr(j, "from"),
               *to = jstr(j, "to");
    const char *reason = jstr(j, "reason");
    /* the time of day only: the date is today's nearly always */
    const char *t = strchr(e->ts, 'T');
    buf b = BUF_INIT;
    buf_printf(&b, "%.8s %s %s", t ? t + 1 : e->ts, svc ? svc : "-", kind ? kind : "?");
    if (from || to) buf_printf(&b, " %s->%s", from ? from : "-", to ? to : "-");
    if (reason) buf_printf(&b, ": %s", reason);
    copy_str(e->text, sizeof e->text, b.p);
    buf_release(&b);
}

int model_from_status(tui_model *m, const cJSON *j)
{
    memset(m, 0, sizeof *m);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "daemon");
    if (!cJSON_IsObject(d)) return -1;
    m->have = true;
    m->pid = (long)jnum(d, "pid", 0);
    copy_str(m->version, sizeof m->version, jstr(d, "version"));
    m->shutting_down = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "shutting_down"));
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(j, "memory"), *g, *s, *e;
    copy_str(m->nvml, sizeof m->nvml, jstr(mem, "nvml"));
    host_from(&m->host, cJSON_GetObjectItemCaseSensitive(mem, "host"));
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(mem, "gpus"))
    {
        if (m->ngpus >= TUI_MAX_GPUS) break;
        tui_gpu *t = &m->gpus[m->ngpus++];
        t->index = (int)jnum(g, "index", 0);
        copy_str(t->name, sizeof t->name, jstr(g, "name"));
        t->unified = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "unified"));
        bar_set(&t->bar, jnum(g, "total_bytes", 0), jnum(g, "free_bytes", 0),
                jnum(g, "reserved_bytes", 0));
    }
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(j, "services"))
    {
        m->nsvcs_all++;
        if (m->nsvcs < TUI_MAX_SVCS) svc_from(&m->svcs[m->nsvcs++], s);
    }
    copy_str(m->slot_holder, sizeof m->slot_holder,
             jstr(cJSON_GetObjectItemCaseSensitive(j, "slot"), "holder"));
    const cJSON *evs = cJSON_GetObjectItemCaseSensitive(j, "events");
    int n = cJSON_GetArraySize(evs), skip = n > TUI_MAX_EVENTS ? n - TUI_MAX_EVENTS : 0, i = 0;
    cJSON_ArrayForEach(e, evs) if (i++ >= skip) event_from(&m->events[m->nevents++], e);
    return 0;
}

void model_mode(tui_mode *mo, const cJSON *j)
{
    memset(mo, 0, sizeof *mo);
    if (!cJSON_IsObject(j)) return;
    mo->have = true;
    copy_str(mo->mode, sizeof mo->mode, jstr(j, "mode"));
    copy_str(mo->base_mode, sizeof mo->base_mode, jstr(j, "base_mode"));
    buf b = BUF_INIT;
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(j, "running")) if (cJSON_IsString(r))
        buf_printf(&b, "%s%s", b.len ? "," : "", r->valuestring);
    copy_str(mo->running, sizeof mo->running, b.p);
    buf_release(&b);
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(j, "switching");
    if (cJSON_IsObject(sw)) {
        mo->switch_id = (long)jnum(sw, "switch_id", 0);
        copy_str(mo->sw_mode, sizeof mo->sw_mode, jstr(sw, "mode"));
        copy_str(mo->sw_phase, sizeof mo->sw_phase, jstr(sw, "phase"));
        copy_str(mo->sw_service, sizeof mo->sw_service, jstr(sw, "service"));
    }
}

/* a bench result's summary: each point's x and its median throughput and TTFT */
static void bench_text(buf *b, const cJSON *sum)
{
    const cJSON *pt;
    int n = 0;
    cJSON_ArrayForEach(pt, sum)
    {
        if (n++ == 3) {
            buf_adds(b, " ...");
            break;
        }
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(pt, "summary");
        buf_printf(b, "%s%s=%.15g", n > 1 ? "; " : " ",
                   jstr(pt, "x_name") ? jstr(pt, "x_name") : "x", jnum(pt, "x", 0));
        const cJSON *ot = cJSON_GetObjectItemCaseSensitive(s, "out_tput");
        const cJSON *tt = cJSON_GetObjectItemCaseSensitive(s, "ttft_ms");
        if (ot) buf_printf(b, " %.1f tok/s", jnum(ot, "median", 0));
        if (tt) buf_printf(b, " ttft %.0f ms", jnum(tt, "median", 0));
    }
}

static void eval_text(buf *b, const cJSON *s)
{
    const cJSON *acc = cJSON_GetObjectItemCaseSensitive(s, "accuracy");
    if (jstr(s, "suite")) buf_printf(b, " %s", jstr(s, "suite"));
    buf_printf(b, " %.0f items, %.0f pass, %.0f fail", jnum(s, "items", 0), jnum(s, "pass", 0),
               jnum(s, "fail", 0));
    if (jnum(s, "error", 0) > 0) buf_printf(b, ", %.0f error", jnum(s, "error", 0));
    if (cJSON_IsObject(acc))
        buf_printf(b, ", accuracy %.1f%% [%.1f, %.1f]", 100 * jnum(acc, "est", 0),
                   100 * jnum(acc, "lo", 0), 100 * jnum(acc, "hi", 0));
}

void model_result(tui_result *r, const cJSON *j)
{
    memset(r, 0, sizeof *r);
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "results"), 0);
    if (!cJSON_IsObject(first)) return;
    r->have = true;
    r->id = (long)jnum(first, "id", 0);
    copy_str(r->ts, sizeof r->ts, jstr(first, "ts"));
    const char *kind = jstr(first, "kind");
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(first, "summary");
    buf b = BUF_INIT;
    buf_printf(&b, "#%ld %.10s %s", r->id, r->ts, kind ? kind : "?");
    if (kind && !strcmp(kind, "eval"))
        eval_text(&b, sum);
    else if (cJSON_IsArray(sum))
        bench_text(&b, sum);
    copy_str(r->text, sizeof r->text, b.p);
    buf_release(&b);
}

static void mem_text(buf *b, const cJSON *mem)
{
    buf_adds(b, "host ");
    buf_bytes(b, (uint64_t)jnum(mem, "host_available_bytes", 0));
    double rh = jnum(mem, "reserved_host_bytes", 0);
    if (rh > 0) {
        buf_adds(b, " (reserved ");
        buf_bytes(b, (uint64_t)rh);
        buf_addc(b, ')');
    }
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(mem, "gpus"))
    {
        buf_printf(b, ", gpu %.0f ", jnum(g, "index", 0));
        buf_bytes(b, (uint64_t)jnum(g, "free_bytes", 0));
        if (jnum(g, "reserved_bytes", 0) > 0) {
            buf_adds(b, " (reserved ");
            buf_bytes(b, (uint64_t)jnum(g, "reserved_bytes", 0));
            buf_addc(b, ')');
        }
    }
    buf_adds(b, " free");
}

static void list_text(buf *b, const char *what, const cJSON *arr)
{
    const cJSON *s;
    buf_printf(b, "%s: ", what);
    int n = 0;
    cJSON_ArrayForEach(s, arr) if (cJSON_IsString(s))
        buf_printf(b, "%s%s", n++ ? ", " : "", s->valuestring);
    buf_adds(b, n ? "\n" : "-\n");
}

void model_plan_text(buf *b, const cJSON *plan)
{
    const char *to = jstr(plan, "mode"), *from = jstr(plan, "from");
    buf_printf(b, "switch %s -> %s\n", from ? from : "(the running set is no mode)", to ? to : "?");
    list_text(b, "stops", cJSON_GetObjectItemCaseSensitive(plan, "stops"));
    list_text(b, "keeps", cJSON_GetObjectItemCaseSensitive(plan, "keeps"));
    list_text(b, "starts", cJSON_GetObjectItemCaseSensitive(plan, "starts"));
    buf_adds(b, "before: ");
    mem_text(b, cJSON_GetObjectItemCaseSensitive(plan, "before"));
    buf_addc(b, '\n');
    const cJSON *st, *w;
    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(plan, "steps"))
    {
        const char *kind = jstr(st, "kind"), *svc = jstr(st, "service");
        buf_printf(b, "%s %s", kind ? kind : "?", svc ? svc : "?");
        uint64_t need;
        if (need_total(cJSON_GetObjectItemCaseSensitive(st, "need"), &need)) {
            buf_adds(b, " (need ");
            buf_bytes(b, need);
            buf_addc(b, ')');
        }
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(st, "verdict");
        if (cJSON_IsObject(v) && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "deferred")))
            buf_adds(b, " deferred");
        else if (cJSON_IsObject(v) && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "ok")))
            buf_printf(b, " REFUSED: %s", jstr(v, "reason") ? jstr(v, "reason") : "?");
        buf_adds(b, " -> ");
        mem_text(b, cJSON_GetObjectItemCaseSensitive(st, "after"));
        buf_addc(b, '\n');
    }
    cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(plan, "warnings")) if (cJSON_IsString(w))
        buf_printf(b, "warning: %s\n", w->valuestring);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(plan, "ok")))
        buf_adds(b, "verdict: fits\n");
    else
        buf_printf(b, "verdict: refused (%s): %s\n",
                   jstr(plan, "refused") ? jstr(plan, "refused") : "?",
                   jstr(plan, "reason") ? jstr(plan, "reason") : "?");
}

void model_error_text(buf *b, int status, const char *body, size_t len)
{
    cJSON *j = cJSON_ParseWithLength(body, len);
    const cJSON *e = j ? cJSON_GetObjectItemCaseSensitive(j, "error") : NULL;
    const char *msg = jstr(e, "message");
    if (msg) {
        /* a start_failed message ends with the log tail: its first line is the reason */
        const char *nl = strchr(msg, '\n');
        buf_add(b, msg, nl ? (size_t)(nl - msg) : strlen(msg));
    } else {
        buf_printf(b, "the daemon answered HTTP %d: %.*s", status, (int)(len > 200 ? 200 : len),
                   body ? body : "");
    }
    cJSON_Delete(j);
}
