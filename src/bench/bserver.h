/* bserver.h (core) - what a server's own /metrics says about a run:
 * two scrapes (before and after the window) parsed from the Prometheus
 * text format, and their deltas under llama-server's and vLLM's names.
 * Pure.
 *
 * llama-server (prefix "llamacpp:"): prompt_tokens_total,
 * prompt_seconds_total, tokens_predicted_total,
 * tokens_predicted_seconds_total, n_decode_total; gauges
 * n_busy_slots_per_decode, requests_deferred, requests_processing (read
 * from the "after" scrape).  prefill_tps = dprompt_tokens / dprompt_seconds,
 * decode_tps = dpredicted / dpredicted_seconds, tokens_per_decode =
 * dpredicted / dn_decode.
 * vLLM (prefix "vllm:"): prompt_tokens_total, generation_tokens_total,
 * request_success_total (summed over label sets), num_requests_running /
 * waiting, kv_cache_usage_perc (gauges, after).
 * Speculative decoding (either prefix): spec_decode_num_drafts_total,
 * spec_decode_num_draft_tokens_total, spec_decode_num_accepted_tokens_total,
 * spec_decode_num_accepted_tokens_per_pos_total{position="p"}:
 * acceptance_rate = daccepted / ddraft_tokens, acceptance_length = 1 +
 * daccepted / ddrafts, per_pos[p] = daccepted_at_p / ddrafts.
 * A counter that went down between scrapes (a server restart) makes the
 * delta invalid (reset = true), never negative. */
#ifndef GPUMOD_CORE_BSERVER_H
#define GPUMOD_CORE_BSERVER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct bsample {
    char *name;   /* metric name */
    char *labels; /* canonical "k=\"v\",k2=\"v2\"" as written, "" for none */
    double value;
} bsample;

typedef struct bscrape {
    bsample *s;
    size_t n, cap;
} bscrape;

/* Parse the text format (comments and blank lines skipped; timestamps
 * after the value ignored).  0, or -1 with err naming the line and what
 * was expected; a malformed line loses nothing already parsed. */
int bscrape_parse(bscrape *out, const char *text, size_t len, char *err, size_t errlen);
void bscrape_release(bscrape *s);
/* Sum of every sample of name (any labels); NaN when there is none. */
double bscrape_sum(const bscrape *s, const char *name);
/* The value of name with a label key="value"; NaN when absent. */
double bscrape_label(const bscrape *s, const char *name, const char *key, const char *value);

#define BSERVER_MAX_POS 16

typedef struct bserver_delta {
    const char *flavor;      /* "llamacpp", "vllm" or "unknown" (static) */
    bool reset;              /* a counter went down: deltas are not valid */
    double prompt_tokens, predicted_tokens; /* deltas (NaN when absent) */
    double prompt_s, predicted_s, n_decode;
    double prefill_tps, decode_tps, tokens_per_decode;
    double busy_slots_per_decode, requests_deferred, requests_running, requests_waiting, kv_cache_usage;
    double requests_success;
    bool spec;               /* draft counters present and moved */
    double drafts, draft_tokens, accepted, acceptance_rate, acceptance_length;
    double per_pos[BSERVER_MAX_POS];
    int n_pos;
} bserver_delta;

void bserver_delta_compute(const bscrape *before, const bscrape *after, bserver_delta *out);

#endif
