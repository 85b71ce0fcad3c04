/* keepalive.h (core) - what idle unload reads from requests and engines
 * (docs/router.md "Idle unload"): Ollama's `keep_alive` request field and
 * the engines' /metrics activity counters.  Pure: no I/O, no clock, no
 * allocation.
 *
 * keep_alive is a top-level member of a JSON request body: a number of
 * seconds, or a Go duration string ("5m", "1h30m", "10s", "300ms", "0"),
 * as Ollama reads it.  0 unloads the service once the request ended; a
 * negative value keeps it loaded (no idle unload); a positive one is the
 * service's idle timeout from then on; null is the same as absent.  The
 * router takes the member out of the body before forwarding it. */
#ifndef GPUMOD_CORE_KEEPALIVE_H
#define GPUMOD_CORE_KEEPALIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KA_KEEP (-1)              /* a negative keep_alive: never unloaded for idleness */
#define KA_MAX_MS 3153600000000LL /* 100 years: a larger positive value is refused */

/* A keep_alive value's text (a JSON number, or a string's unescaped
 * contents when is_string) as milliseconds: 0, KA_KEEP, or > 0 (a
 * positive value below 1 ms counts as 1 ms).  0, or -1 with err naming the
 * value and what is accepted. */
int ka_parse(const char *v, size_t n, bool is_string, int64_t *ms, char *err, size_t errlen);

typedef struct ka_member {
    bool found;                /* a top-level "keep_alive" with a value other than null */
    bool present;              /* the key is there (null included): it is cut */
    int64_t ms;                /* found: as ka_parse */
    size_t cut_start, cut_end; /* the bytes to remove: the member and one comma beside it */
} ka_member;

/* Find the top-level "keep_alive" member of a complete body that is one
 * valid JSON object (the router's modelscan accepted it; keys are
 * compared after the simple escapes are undone).  0 (out filled, found
 * false when absent), or -1 with err: a value that is not a number, a
 * string or null, a bad duration, the key twice. */
int ka_find(const char *body, size_t n, ka_member *out, char *err, size_t errlen);

/* What an engine's /metrics says about requests (Prometheus text):
 * total, the sum of the counters that grow with every completion request
 * (vLLM vllm:request_success_total, vllm:prompt_tokens_total,
 * vllm:generation_tokens_total; llama.cpp llamacpp:prompt_tokens_total,
 * llamacpp:tokens_predicted_total, llamacpp:n_decode_total: llama.cpp has
 * no request counter), and busy, the sum of the gauges of requests in the
 * engine now (vllm:num_requests_running, vllm:num_requests_waiting,
 * llamacpp:requests_processing, llamacpp:requests_deferred).  Every label
 * set is summed.  n: how many samples of those names were read. */
typedef struct engine_activity {
    double total, busy;
    size_t n;
} engine_activity;
void engine_activity_parse(const char *text, size_t len, engine_activity *out);

#endif
