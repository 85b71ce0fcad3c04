/* bagg.c - one iteration's aggregate metrics over the window W (bagg.h,
 * docs/bench.md).  Throughputs count what happened inside W by the time it
 * happened: a request completes at t_done, its tokens arrive with the
 * events that carried them, so a request straddling an edge contributes
 * only its part inside.  Latency summaries pool the per-request values of
 * breq_metrics over the ok requests; nothing here re-derives a per-request
 * figure, so the two layers cannot disagree. */
#include "bench/bagg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

static bool in_w(int64_t t, int64_t w0, int64_t w1)
{
    return t > 0 && t >= w0 && t <= w1;
}

static int64_t done_time(const breq *r)
{
    return r->t_done ? r->t_done : r->t_last;
}

static bool slo_set(double v)
{
    return v > 0; /* false for NaN too */
}

/* every SLO that is set holds; a metric the request does not have (TPOT of
 * a one-token answer) cannot break its SLO */
static bool meets_slo(const breq_m *m, const bslo *slo)
{
    if (slo_set(slo->ttft_ms) && !(isnan(m->ttft_ms) || m->ttft_ms <= slo->ttft_ms)) return false;
    if (slo_set(slo->tpot_ms) && !(isnan(m->tpot_ms) || m->tpot_ms <= slo->tpot_ms)) return false;
    if (slo_set(slo->e2el_ms) && !(isnan(m->e2el_ms) || m->e2el_ms <= slo->e2el_ms)) return false;
    return true;
}

/* tokens of r that arrived inside W: each event's k in order, capped at
 * n_out (a server that says fewer tokens than events were counted wins),
 * and what n_out has beyond the events booked at t_last */
static long tokens_in_window(const breq *r, int64_t w0, int64_t w1)
{
    long cap = r->n_out, seen = 0, inside = 0;
    for (size_t i = 0; i < r->n_ev; i++) {
        long k = r->ev[i].k;
        if (cap >= 0 && seen + k > cap) k = cap - seen;
        if (k <= 0) break;
        seen += k;
        if (in_w(r->ev[i].t_ns, w0, w1)) inside += k;
    }
    if (cap > seen && in_w(r->t_last, w0, w1)) inside += cap - seen;
    return inside;
}

typedef struct edge {
    int64_t t;
    int d; /* +1 start, -1 end */
} edge;

static int cmp_edge(const void *a, const void *b)
{
    const edge *x = a, *y = b;
    if (x->t != y->t) return (x->t > y->t) - (x->t < y->t);
    return x->d - y->d; /* [t_send, t_done): an end before a start at one instant */
}

/* time-average and peak of requests in flight [t_send, t_done) over W; a
 * request that never finished is in flight to the end of W */
static void concurrency(bagg *a, const breq *reqs, size_t n)
{
    edge *e = xmalloc((2 * n + 1) * sizeof *e);
    size_t ne = 0;
    double integral = 0;
    for (size_t i = 0; i < n; i++) {
        const breq *r = &reqs[i];
        if (!r->t_send) continue;
        int64_t s = r->t_send, d = done_time(r);
        if (!d || d < s) d = a->w_end;
        if (s < a->w_start) s = a->w_start;
        if (d > a->w_end) d = a->w_end;
        if (d <= s) continue;
        integral += (double)(d - s);
        e[ne++] = (edge){s, +1};
        e[ne++] = (edge){d, -1};
    }
    qsort(e, ne, sizeof *e, cmp_edge);
    int cur = 0, peak = 0;
    for (size_t i = 0; i < ne; i++) {
        cur += e[i].d;
        if (cur > peak) peak = cur;
    }
    free(e);
    a->concurrency_avg = integral / (double)(a->w_end - a->w_start);
    a->concurrency_peak = peak;
}

int bagg_compute(bagg *a, const breq *reqs, size_t n, int64_t w_start, int64_t w_end, const bslo *slo,
                 char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    if (w_end <= w_start) {
        snprintf(err, errlen, "measurement window: end %lld ns is not after start %lld ns", (long long)w_end,
                 (long long)w_start);
        return -1;
    }
    a->w_start = w_start;
    a->w_end = w_end;
    a->window_s = (double)(w_end - w_start) / 1e9;
    a->sent = n;
    bool any_slo = slo && (slo_set(slo->ttft_ms) || slo_set(slo->tpot_ms) || slo_set(slo->e2el_ms));

    size_t m = n ? n : 1;
    double *ttft = xmalloc(m * sizeof(double)), *ttfc = xmalloc(m * sizeof(double));
    double *tpot = xmalloc(m * sizeof(double)), *e2el = xmalloc(m * sizeof(double));
    double *qc = xmalloc(m * sizeof(double)), *tsched = xmalloc(m * sizeof(double));
    double *ptps = xmalloc(m * sizeof(double));
    size_t n_ev = 0;
    for (size_t i = 0; i < n; i++) n_ev += reqs[i].n_ev;
    double *gap = xmalloc((n_ev ? n_ev : 1) * sizeof(double)), *tok = xmalloc((n_ev ? n_ev : 1) * sizeof(double));
    double *kw = xmalloc((n_ev ? n_ev : 1) * sizeof(double));
    size_t nm = 0, ng = 0, good = 0, e2el_n = 0;
    long k_sum = 0, k_events = 0;
    double e2el_sum = 0;

    for (size_t i = 0; i < n; i++) {
        const breq *r = &reqs[i];
        if (!breq_ok(r)) {
            a->failed++;
            continue;
        }
        a->tokens_out += tokens_in_window(r, w_start, w_end);
        if (r->out_estimated) a->out_estimated = true;
        if (r->k_estimated) a->k_estimated = true;
        breq_m bm;
        breq_metrics(r, &bm);
        ttft[nm] = bm.ttft_ms;
        ttfc[nm] = bm.ttfc_ms;
        tpot[nm] = bm.tpot_ms;
        e2el[nm] = bm.e2el_ms;
        qc[nm] = bm.queue_client_ms;
        tsched[nm] = bm.ttft_sched_ms;
        ptps[nm] = bm.prefill_tps;
        nm++;
        for (size_t j = 0; j < r->n_ev; j++) {
            k_sum += r->ev[j].k;
            k_events++;
            if (j == 0) continue;
            double g = (double)(r->ev[j].t_ns - r->ev[j - 1].t_ns) / 1e6;
            int32_t k = r->ev[j].k > 0 ? r->ev[j].k : 1;
            gap[ng] = g;
            tok[ng] = g / k;
            kw[ng] = k;
            ng++;
        }
        if (!in_w(done_time(r), w_start, w_end)) continue;
        a->completed++;
        if (r->n_in >= 0)
            a->tokens_in += r->n_in;
        else
            a->in_unknown = true;
        if (!isnan(bm.e2el_ms)) {
            e2el_sum += bm.e2el_ms;
            e2el_n++;
        }
        if (any_slo && meets_slo(&bm, slo)) good++;
    }

    a->req_tput = (double)a->completed / a->window_s;
    a->out_tput = (double)a->tokens_out / a->window_s;
    a->total_tput = (double)(a->tokens_in + a->tokens_out) / a->window_s;
    if (any_slo) {
        a->goodput = (double)good / a->window_s;
        a->good_fraction = a->completed ? (double)good / (double)a->completed : NAN;
    } else {
        a->goodput = a->good_fraction = NAN;
    }
    concurrency(a, reqs, n);
    a->littles_law = e2el_n ? a->req_tput * (e2el_sum / (double)e2el_n) / 1e3 : NAN;
    a->chunk_tokens = k_events ? (double)k_sum / (double)k_events : NAN;

    bsum_compute(&a->ttft, ttft, nm);
    bsum_compute(&a->ttfc, ttfc, nm);
    bsum_compute(&a->tpot, tpot, nm);
    bsum_compute(&a->e2el, e2el, nm);
    bsum_compute(&a->queue_client, qc, nm);
    bsum_compute(&a->ttft_sched, tsched, nm);
    bsum_compute(&a->prefill_tps, ptps, nm);
    bsum_compute(&a->itl_chunk, gap, ng);
    bsum_compute_weighted(&a->itl_token, tok, kw, ng);
    free(ttft);
    free(ttfc);
    free(tpot);
    free(e2el);
    free(qc);
    free(tsched);
    free(ptps);
    free(gap);
    free(tok);
    free(kw);
    return 0;
}

size_t bagg_values(const bagg *a, const char **names, double *values, size_t max)
{
    const struct {
        const char *name;
        double v;
    } t[] = {
        {"req_tput", a->req_tput},
        {"out_tput", a->out_tput},
        {"total_tput", a->total_tput},
        {"goodput", a->goodput},
        {"ttft_ms", a->ttft.median},
        {"ttft_ms_p99", a->ttft.p[3]},
        {"tpot_ms", a->tpot.median},
        {"tpot_ms_p99", a->tpot.p[3]},
        {"itl_token_ms", a->itl_token.median},
        {"itl_chunk_ms_p99", a->itl_chunk.p[3]},
        {"e2el_ms", a->e2el.median},
        {"e2el_ms_p99", a->e2el.p[3]},
        {"ttfc_ms", a->ttfc.median},
    };
    size_t n = sizeof t / sizeof t[0];
    for (size_t i = 0; i < n && i < max; i++) {
        if (names) names[i] = t[i].name;
        if (values) values[i] = t[i].v;
    }
    return n;
}

bool bagg_higher_is_better(const char *name)
{
    size_t l = strlen(name);
    if (strstr(name, "tput") || strcmp(name, "goodput") == 0 || strcmp(name, "good_fraction") == 0) return true;
    /* rates of ctx sweeps and server deltas: prefill_tps, decode_tps */
    if (l >= 3 && strcmp(name + l - 3, "tps") == 0) return true;
    if (strncmp(name, "acceptance", 10) == 0) return true;
    return false;
}
