/* bagg.h (core) - the aggregate metrics of one measured iteration of one
 * load point, over a window W of the requests (definitions: docs/bench.md,
 * "Metric definitions").  Pure.
 *
 * W = [w_start, w_end] (ns): the caller passes the first send after warmup
 * and the last completion.  req_tput = requests completed (ok) within W /
 * |W|; out_tput counts each request's tokens by the arrival time of the
 * events that carried them (so a request straddling an edge is split:
 * its k's inside W count; a request whose n_out exceeds its sum of k
 * books the rest at t_last); total_tput adds each completed request's n_in
 * (unknown n_in counts 0 and sets in_unknown); goodput = completed requests
 * meeting every SLO that is set / |W| and good_fraction = that / completed
 * (both NaN when no SLO is set; a request without a TPOT, one output
 * token, is not held to the TPOT SLO); only ok requests count tokens;
 * concurrency_avg = time-average of requests in flight [t_send, t_done)
 * over W, concurrency_peak its sweep-line maximum, littles_law = req_tput
 * x mean e2el (a check of concurrency_avg).  Latency summaries pool the
 * ok requests' per-request values; itl_token is the k-weighted per-token
 * ITL (gap/k weighted k) and itl_chunk the plain inter-event gaps. */
#ifndef GPUMOD_CORE_BAGG_H
#define GPUMOD_CORE_BAGG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "oai/breq.h"
#include "bench/bstats.h"

typedef struct bslo {
    double ttft_ms, tpot_ms, e2el_ms; /* <= 0 or NaN: not set */
} bslo;

typedef struct bagg {
    int64_t w_start, w_end;
    double window_s;
    size_t sent, completed, failed;
    long tokens_in, tokens_out;
    bool out_estimated, in_unknown, k_estimated;
    double req_tput, out_tput, total_tput, goodput, good_fraction;
    double concurrency_avg, concurrency_peak, littles_law;
    double chunk_tokens;     /* mean tokens per token-bearing event */
    bsum ttft, ttfc, tpot, e2el, itl_token, itl_chunk, queue_client, ttft_sched, prefill_tps;
} bagg;

/* 0, or -1 when w_end <= w_start (err says so). */
int bagg_compute(bagg *a, const breq *reqs, size_t n, int64_t w_start, int64_t w_end, const bslo *slo,
                 char *err, size_t errlen);

/* The headline values of an iteration, by name, as docs/bench.md lists
 * them ("req_tput", "out_tput", "total_tput", "goodput", "ttft_ms",
 * "ttft_ms_p99", "tpot_ms", "tpot_ms_p99", "itl_token_ms", "itl_chunk_ms_p99",
 * "e2el_ms", "e2el_ms_p99", "ttfc_ms"); medians are the per-iteration medians,
 * _p99 the per-iteration p99 (NaN when n < 100).  Returns the number of
 * names; names[i]/values[i] filled up to max. */
size_t bagg_values(const bagg *a, const char **names, double *values, size_t max);
/* true when a larger value of this headline is better (throughputs). */
bool bagg_higher_is_better(const char *name);

#endif
