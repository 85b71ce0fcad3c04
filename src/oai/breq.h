/* breq.h (core) - one benchmark request: its timestamps, what its stream
 * said, and the per-request metrics of docs/bench.md (section "Metric
 * definitions").  Pure: the client stamps
 * CLOCK_MONOTONIC nanoseconds and hands over each SSE data payload.
 *
 * Timestamps (ns, 0 = not seen): t_sched (when the load generator meant
 * to send; closed loop: when the slot became free), t_send (just before
 * the first request byte is written), t_hdr (status line and headers in),
 * t_first (first event carrying >= 1 generated token in any channel:
 * non-empty delta.content, delta.reasoning_content or delta.reasoning,
 * delta.tool_calls, choices[].text, llama's native "content", or a rise
 * of a continuous usage counter), t_first_content (first non-empty
 * user-visible content / text), t_last (last token-bearing event), t_done
 * (stream closed).  Role-only, empty, finish-only and usage-only events do
 * not count.
 *
 * Tokens per event k: the rise of usage.completion_tokens (vLLM's
 * continuous_usage_stats) or of timings.predicted_n (llama-server's
 * timings_per_token) when the event carries one, else 1 (k_estimated).
 * N_out: usage.completion_tokens of the last usage seen, else
 * timings.predicted_n, else the sum of k (out_estimated).  N_in:
 * usage.prompt_tokens, else timings.prompt_n + timings.cache_n (llama's
 * prompt_n excludes the cached part; -1 unknown).  N_cached:
 * usage.prompt_tokens_details.cached_tokens, else timings.cache_n. */
#ifndef GPUMOD_CORE_BREQ_H
#define GPUMOD_CORE_BREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bev {
    int64_t t_ns; /* arrival of a token-bearing event */
    int32_t k;    /* tokens it carried (>= 1) */
} bev;

typedef struct breq {
    int64_t t_sched, t_send, t_hdr, t_first, t_first_content, t_last, t_done;
    int status;            /* HTTP status, 0 when none came */
    long n_in, n_out, n_cached; /* -1 unknown */
    bool out_estimated;    /* n_out counted from events, not said by the server */
    bool k_estimated;      /* some event's k was assumed 1 */
    bev *ev;               /* token-bearing events, in order */
    size_t n_ev, ev_cap;
    long usage_out_last;   /* last usage.completion_tokens seen (-1) */
    long timings_out_last; /* last timings.predicted_n seen (-1) */
    /* llama-server's per-response timings, when given (has_timings) */
    bool has_timings;
    double srv_prompt_ms, srv_predicted_ms;
    long srv_prompt_n, srv_predicted_n, srv_cache_n;
    long srv_draft_n, srv_draft_accepted; /* -1 when not given */
    char finish_reason[16];
    char id[64];           /* the response's "id", "" when none */
    char *error;           /* NULL when the request succeeded; malloc'd */
    size_t bytes_in;       /* body bytes received (the client counts) */
} breq;

void breq_init(breq *r);
void breq_release(breq *r);
/* Record a failure (first one wins; printf-style). */
void breq_fail(breq *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One SSE event's data (not "[DONE]"; the caller checks that) arrived at
 * t_ns.  A data payload that is not a JSON object is ignored except for
 * an OpenAI/llama error object ({"error": ...}), which fails the request
 * with its message.  Returns true when the event carried >= 1 token. */
bool breq_on_data(breq *r, int64_t t_ns, const char *json, size_t len);
/* The stream ended at t_done: settle n_out (and out_estimated), and fail
 * the request ("no token-bearing event in the stream") when it succeeded
 * so far (2xx) but carried no token. */
void breq_finish(breq *r, int64_t t_done);

/* Per-request metrics in milliseconds (NaN where undefined: a failed
 * request, TPOT with n_out < 2, ttfc without content, ttft_sched without
 * t_sched). */
typedef struct breq_m {
    double queue_client_ms; /* t_send - t_sched */
    double ttft_ms;         /* t_first - t_send */
    double ttft_sched_ms;   /* t_first - t_sched */
    double ttfc_ms;         /* t_first_content - t_send */
    double e2el_ms;         /* t_last - t_send */
    double tpot_ms;         /* (t_last - t_first) / (n_out - 1) */
    double prefill_tps;     /* (n_in - n_cached) / ttft (includes queue and network) */
    double chunk_tokens;    /* mean k over events */
} breq_m;

void breq_metrics(const breq *r, breq_m *m);
bool breq_ok(const breq *r); /* no error and a 2xx status */

#endif
