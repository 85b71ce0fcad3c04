/* rmetrics.c - the router's metrics: counters, gauges and fixed-bucket
 * histograms kept in plain structs, rendered on GET /metrics through
 * src/router/promtext.c.
 *
 * The relay calls rm_request once per request, so an update is a lookup
 * in a small open-addressed table keyed by (model, service, status) and a
 * few adds: an entry (and its label strings) is allocated the first time
 * its label set is seen, never again.  Cardinality is bounded: a request
 * that was not routed to a service counts under model "unknown" (the
 * model string is then whatever the client sent, which must not become a
 * label), label values are cut at RM_LABEL_MAX bytes with bytes that are
 * not UTF-8 or are control characters replaced by '?', and past
 * RM_MAX_SERIES label sets every new one is folded into one overflow
 * series (model="unknown", service="unknown", status="other").
 *
 * Buckets (seconds) are fixed and chosen for LLM serving: time to first
 * byte from 5 ms (a warm small model) to 5 min (a long prompt on a big
 * one); whole requests from 10 ms up to 30 min (long generations); queue
 * waits from 10 ms and activations and switches from 100 ms, both up to
 * 20 min (a big model loading from a slow disk).  docs/router.md lists
 * them. */
#include "router/rmetrics.h"

#include "router/promtext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RM_LABEL_MAX 128
#define RM_MAX_SERIES 1024

static const double ttfb_bounds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
static const double dur_bounds[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800};
static const double wait_bounds[] = {0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200};
static const double act_bounds[] = {0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1200};
#define NB(a) (sizeof(a) / sizeof((a)[0]))

typedef struct rm_series {
    char *model, *service;
    char status[12];
    uint64_t count;
} rm_series;

typedef struct rm_queue {
    char *service;
    int64_t depth;
} rm_queue;

struct rmetrics {
    rm_series *series; /* in first-seen order */
    size_t nseries, capseries;
    uint32_t *slots; /* index + 1 into series; 0: empty */
    size_t nslots;   /* a power of two, at least twice nseries */
    uint64_t overflow;
    rm_queue *queues;
    size_t nqueues, capqueues;
    int64_t inflight;
    uint64_t bytes_in, bytes_out;
    prom_hist ttfb, duration, queue_wait;
    prom_hist activation[2], sw[2]; /* [0] failed, [1] ok */
};

rmetrics *rm_new(void)
{
    rmetrics *m = xcalloc(1, sizeof *m);
    prom_hist_init(&m->ttfb, ttfb_bounds, NB(ttfb_bounds));
    prom_hist_init(&m->duration, dur_bounds, NB(dur_bounds));
    prom_hist_init(&m->queue_wait, wait_bounds, NB(wait_bounds));
    for (int i = 0; i < 2; i++) {
        prom_hist_init(&m->activation[i], act_bounds, NB(act_bounds));
        prom_hist_init(&m->sw[i], act_bounds, NB(act_bounds));
    }
    return m;
}

void rm_free(rmetrics *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->nseries; i++) {
        free(m->series[i].model);
        free(m->series[i].service);
    }
    free(m->series);
    free(m->slots);
    for (size_t i = 0; i < m->nqueues; i++) free(m->queues[i].service);
    free(m->queues);
    free(m);
}

/* ---- labels ------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (1-4), 0 when it is not one. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n;
    unsigned min;
    if (c < 0x80) return 1;
    if ((c & 0xe0) == 0xc0) n = 2, min = 0x80, c &= 0x1f;
    else if ((c & 0xf0) == 0xe0) n = 3, min = 0x800, c &= 0x0f;
    else if ((c & 0xf8) == 0xf0) n = 4, min = 0x10000, c &= 0x07;
    else return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    return n;
}

/* The label value for s: at most RM_LABEL_MAX bytes, whole characters,
 * control characters and bytes that are not UTF-8 as '?'.  out holds
 * RM_LABEL_MAX + 1 bytes. */
static void label_clean(const char *s, char *out)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    while (*p) {
        size_t n = utf8_len(p);
        if (!n || (n == 1 && (*p < 0x20 || *p == 0x7f))) {
            if (o + 1 > RM_LABEL_MAX) break;
            out[o++] = '?';
            p++;
            continue;
        }
        if (o + n > RM_LABEL_MAX) break;
        memcpy(out + o, p, n);
        o += n;
        p += n;
    }
    out[o] = '\0';
}

static uint32_t fnv(uint32_t h, const char *s)
{
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return (h ^ 0xff) * 16777619u; /* a separator, so ("ab","c") != ("a","bc") */
}

static uint32_t series_hash(const char *model, const char *service, const char *status)
{
    return fnv(fnv(fnv(2166136261u, model), service), status);
}

static void rehash(rmetrics *m, size_t nslots)
{
    free(m->slots);
    m->slots = xcalloc(nslots, sizeof *m->slots);
    m->nslots = nslots;
    for (size_t i = 0; i < m->nseries; i++) {
        rm_series *e = &m->series[i];
        size_t k = series_hash(e->model, e->service, e->status) & (nslots - 1);
        while (m->slots[k]) k = (k + 1) & (nslots - 1);
        m->slots[k] = (uint32_t)(i + 1);
    }
}

/* The series for these labels (already cleaned), added when new; NULL
 * when the table is full. */
static rm_series *series_get(rmetrics *m, const char *model, const char *service, const char *status)
{
    if (m->nslots) {
        size_t k = series_hash(model, service, status) & (m->nslots - 1);
        for (; m->slots[k]; k = (k + 1) & (m->nslots - 1)) {
            rm_series *e = &m->series[m->slots[k] - 1];
            if (!strcmp(e->status, status) && !strcmp(e->model, model) && !strcmp(e->service, service)) return e;
        }
    }
    if (m->nseries >= RM_MAX_SERIES) return NULL;
    if (m->nseries == m->capseries) {
        m->capseries = m->capseries ? m->capseries * 2 : 16;
        m->series = xrealloc(m->series, m->capseries * sizeof *m->series);
    }
    rm_series *e = &m->series[m->nseries++];
    memset(e, 0, sizeof *e);
    e->model = xstrdup(model);
    e->service = xstrdup(service);
    snprintf(e->status, sizeof e->status, "%s", status);
    if (m->nseries * 2 > m->nslots)
        rehash(m, m->nslots ? m->nslots * 2 : 32);
    else {
        size_t k = series_hash(model, service, status) & (m->nslots - 1);
        while (m->slots[k]) k = (k + 1) & (m->nslots - 1);
        m->slots[k] = (uint32_t)m->nseries;
    }
    return e;
}

/* ---- updates ------------------------------------------------------------ */

void rm_request(rmetrics *m, const char *model, const char *service, int status, uint64_t bytes_in,
                uint64_t bytes_out, double ttfb_s, double duration_s)
{
    if (!m) return;
    char ml[RM_LABEL_MAX + 1], sl[RM_LABEL_MAX + 1], st[12];
    /* only a routed request's model is a name from the configuration */
    label_clean(model && service ? model : "unknown", ml);
    label_clean(service ? service : "none", sl);
    if (status <= 0)
        snprintf(st, sizeof st, "aborted");
    else
        snprintf(st, sizeof st, "%d", status);
    rm_series *e = series_get(m, ml, sl, st);
    if (e)
        e->count++;
    else
        m->overflow++;
    m->bytes_in += bytes_in;
    m->bytes_out += bytes_out;
    if (ttfb_s >= 0) prom_hist_observe(&m->ttfb, ttfb_s);
    if (duration_s >= 0) prom_hist_observe(&m->duration, duration_s);
}

void rm_inflight(rmetrics *m, int delta)
{
    if (!m) return;
    m->inflight += delta;
    if (m->inflight < 0) m->inflight = 0;
}

void rm_queue_depth(rmetrics *m, const char *service, int64_t depth)
{
    if (!m || !service) return;
    for (size_t i = 0; i < m->nqueues; i++)
        if (!strcmp(m->queues[i].service, service)) {
            m->queues[i].depth = depth;
            return;
        }
    if (m->nqueues >= RM_MAX_SERIES) return;
    if (m->nqueues == m->capqueues) {
        m->capqueues = m->capqueues ? m->capqueues * 2 : 8;
        m->queues = xrealloc(m->queues, m->capqueues * sizeof *m->queues);
    }
    m->queues[m->nqueues].service = xstrdup(service);
    m->queues[m->nqueues].depth = depth;
    m->nqueues++;
}

void rm_queue_wait(rmetrics *m, double seconds)
{
    if (m) prom_hist_observe(&m->queue_wait, seconds);
}

void rm_activation(rmetrics *m, double seconds, bool ok)
{
    if (m) prom_hist_observe(&m->activation[ok], seconds);
}

void rm_switch(rmetrics *m, double seconds, bool ok)
{
    if (m) prom_hist_observe(&m->sw[ok], seconds);
}

/* ---- the page ------------------------------------------------------------ */

static void outcome_hists(prom_writer *w, const prom_hist h[2])
{
    prom_label l = {"outcome", "ok"};
    prom_histogram(w, &l, 1, &h[1]);
    l.value = "failed";
    prom_histogram(w, &l, 1, &h[0]);
}

#define MAX_STATES 256

int rm_render(rmetrics *m, const router_host *h, buf *out, char *err, size_t errlen)
{
    prom_writer w;
    prom_init(&w, out);

    prom_family(&w, "gpumod_router_requests_total", PROM_COUNTER,
                "Requests answered by the router, by model, service and HTTP status (aborted: the client went away first).");
    for (size_t i = 0; i < m->nseries; i++) {
        const rm_series *e = &m->series[i];
        prom_label l[3] = {{"model", e->model}, {"service", e->service}, {"status", e->status}};
        prom_sample(&w, l, 3, (double)e->count);
    }
    if (m->overflow) {
        prom_label l[3] = {{"model", "unknown"}, {"service", "unknown"}, {"status", "other"}};
        prom_sample(&w, l, 3, (double)m->overflow);
    }

    prom_family(&w, "gpumod_router_inflight", PROM_GAUGE, "Requests the router is handling now.");
    prom_sample(&w, NULL, 0, (double)m->inflight);

    prom_family(&w, "gpumod_router_bytes_relayed_total", PROM_COUNTER,
                "Body bytes relayed: in from clients to services, out from services to clients.");
    prom_label din = {"direction", "in"}, dout = {"direction", "out"};
    prom_sample(&w, &din, 1, (double)m->bytes_in);
    prom_sample(&w, &dout, 1, (double)m->bytes_out);

    prom_family(&w, "gpumod_router_ttfb_seconds", PROM_HISTOGRAM,
                "Time from the request to the first response byte sent to the client.");
    prom_histogram(&w, NULL, 0, &m->ttfb);

    prom_family(&w, "gpumod_router_request_duration_seconds", PROM_HISTOGRAM,
                "Time from the request to the last response byte.");
    prom_histogram(&w, NULL, 0, &m->duration);

    prom_family(&w, "gpumod_router_queue_depth", PROM_GAUGE,
                "Requests waiting for their service to be activated, by service.");
    for (size_t i = 0; i < m->nqueues; i++) {
        char sl[RM_LABEL_MAX + 1];
        label_clean(m->queues[i].service, sl);
        prom_label l = {"service", sl};
        prom_sample(&w, &l, 1, (double)m->queues[i].depth);
    }

    prom_family(&w, "gpumod_router_queue_wait_seconds", PROM_HISTOGRAM,
                "Time a request waited for its service's activation, whatever the outcome.");
    prom_histogram(&w, NULL, 0, &m->queue_wait);

    prom_family(&w, "gpumod_activation_duration_seconds", PROM_HISTOGRAM,
                "Activations on demand (a start or a mode switch for waiting requests), by outcome.");
    outcome_hists(&w, m->activation);

    prom_family(&w, "gpumod_switch_duration_seconds", PROM_HISTOGRAM,
                "Mode switches the router asked for, by outcome.");
    outcome_hists(&w, m->sw);

    if (h && h->states) {
        rh_state *st = xcalloc(MAX_STATES, sizeof *st);
        size_t n = h->states(h->ud, NULL, st, MAX_STATES);
        prom_family(&w, "gpumod_service_state", PROM_GAUGE,
                    "Each service's lifecycle state: 1 for the state it is in, 0 for the others.");
        for (size_t i = 0; i < n; i++) {
            char sl[RM_LABEL_MAX + 1];
            label_clean(st[i].id, sl);
            for (int k = 0; k < SVC__STATES; k++) {
                prom_label l[2] = {{"service", sl}, {"state", svc_state_names[k]}};
                prom_sample(&w, l, 2, (int)st[i].state == k ? 1 : 0);
            }
        }
        free(st);
    }

    const snapshot *snap = h && h->last_snapshot ? h->last_snapshot(h->ud) : NULL;
    if (snap) {
        char idx[16];
        prom_family(&w, "gpumod_gpu_memory_free_bytes", PROM_GAUGE,
                    "Free memory per GPU at the last snapshot (unified memory: MemAvailable).");
        for (size_t i = 0; i < snap->ngpus; i++) {
            snprintf(idx, sizeof idx, "%d", snap->gpus[i].index);
            prom_label l = {"gpu", idx};
            prom_sample(&w, &l, 1, (double)snap->gpus[i].free_bytes);
        }
        prom_family(&w, "gpumod_gpu_memory_total_bytes", PROM_GAUGE, "Total memory per GPU.");
        for (size_t i = 0; i < snap->ngpus; i++) {
            snprintf(idx, sizeof idx, "%d", snap->gpus[i].index);
            prom_label l = {"gpu", idx};
            prom_sample(&w, &l, 1, (double)snap->gpus[i].total_bytes);
        }
        if (snap->host.meminfo_ok) {
            prom_family(&w, "gpumod_host_mem_available_bytes", PROM_GAUGE,
                        "The host's MemAvailable at the last snapshot.");
            prom_sample(&w, NULL, 0, (double)snap->host.mem_available);
        }
    }

    int rc = 0;
    if (prom_error(&w)) {
        snprintf(err, errlen, "metrics: %s", prom_error(&w));
        rc = -1;
    }
    prom_release(&w);
    return rc;
}
