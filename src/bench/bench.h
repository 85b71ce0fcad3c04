/* bench.h - the parts of gpumod-bench, the git-style helper that `gpumod
 * bench` execs (the only program that links libcurl).  Pure logic lives
 * in src/core/ (bstats, sse, breq, bagg, bserver, svg, bcompare); this
 * directory holds the world: the libcurl-multi client on a libuv loop,
 * the load generator, the target's identity, memory telemetry, the result
 * document and its renderings.  docs/bench.md is the user's contract. */
#ifndef GPUMOD_BENCH_H
#define GPUMOD_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "bench/bagg.h"
#include "oai/breq.h"
#include "oai/fetch.h"
#include "oai/store.h"
#include "oai/target.h"
#include "bench/bstats.h"
#include "util/buf.h"

/* ---- load.c + client.c: the load generator ---------------------------- */

typedef enum bload_shape { BLOAD_CLOSED, BLOAD_OPEN } bload_shape;

typedef struct bload_body {
    char *json;  /* the whole request body (stream: true) */
    size_t len;
} bload_body;

typedef struct bload_spec {
    const char *url;             /* the endpoint, e.g. http://h:p/v1/chat/completions */
    const char *const *headers;  /* extra "Name: value" lines, NULL-terminated (may be NULL) */
    bload_shape shape;
    int concurrency;             /* closed: streams kept in flight; open: cap (0 none) */
    double rate, burstiness;     /* open: requests/s; gamma shape (1 Poisson, INFINITY constant) */
    uint64_t seed;
    long requests;               /* measured requests (> 0), or 0 with duration_s */
    double duration_s;           /* measured send window; 0 with requests */
    long warmup;                 /* requests before the window, not measured */
    const bload_body *bodies;    /* used round-robin, warmup first (when body is NULL) */
    size_t n_bodies;
    /* else each request's body made when it is sent: request k of the run
     * (warmup first), caller-allocated, freed by the load once the request
     * ended; called on the loop thread with body_ud */
    char *(*body)(void *body_ud, uint64_t k, size_t *len);
    void *body_ud;
    int64_t request_timeout_ms;  /* each request's whole deadline */
    const char *id_prefix;       /* X-Request-Id: <prefix>-<i> (i: the index in reqs), warmup
                                  * <prefix>-w<k> (k: the send order; may be NULL) */
    bool warmup_ids;             /* a warmup run of its own: every id is <prefix>-w<k> */
    /* called about every 100 ms on the loop thread (may be NULL) */
    void (*progress)(void *ud, long done, long total, double elapsed_s);
    void *ud;
} bload_spec;

/* The client's check on itself, per run: is the client or the server
 * the bottleneck?  client_bound when cpu_pct > 85 % of one core, or the
 * p99 schedule lag (open loop) or the loop's own busy lag (loop_busy_ms)
 * exceeds max(1 ms, 5 % of the median ITL); warnings say which and by how
 * much.  A loop lag over that bound that was not the client's own work
 * (the thread waited for a CPU: other processes, the server on the same
 * host) is a warning without client_bound. */
typedef struct bself {
    double cpu_pct;          /* the thread's CPU time / wall of the run, % of one core; NaN
                              * when wall_s < BSELF_CPU_MIN_WALL_S (too short to tell) */
    double user_s, sys_s, wall_s;
    bsum sched_lag_ms;       /* the hand-off to curl - when the request was due: t_sched (closed
                              * loop: the free slot), under an open loop's cap the later moment
                              * a slot freed; connecting is not the client's lag */
    bsum loop_lag_ms;        /* a 10 ms loop timer's lateness */
    bsum loop_busy_ms;       /* the part of each lateness the loop thread was on a CPU:
                              * min(lateness, its CPU time since the previous sample) */
    double runq_wait_s;      /* the loop thread runnable but waiting for a CPU (a busy
                              * host), /proc/thread-self/schedstat; NaN when unknown */
    double bytes_per_s;      /* body bytes read / wall */
    long max_in_flight;
    bool client_bound;
    char warnings[4][200];
    int n_warnings;
} bself;

#define BSELF_CPU_MIN_WALL_S 1.0

typedef struct bload_result {
    breq *reqs;              /* the measured requests, in send order; then n_cut more */
    size_t n;
    size_t n_cut;            /* requests a SIGINT cut (in flight 2 s after it): reqs[n..n+n_cut),
                              * not measured, not failures */
    int64_t w_start, w_end;  /* first measured send, last successful completion (none: the
                              * last end of any measured request) (ns) */
    size_t n_warmup;         /* warmup requests done (not in reqs) */
    bself self;
} bload_result;

/* Run one load point on a fresh loop.  0 when it ran (requests may have
 * failed: see reqs[i].error), -1 with err when it could not run at all
 * (bad spec, libcurl init).  A SIGINT during the run stops sending, lets
 * requests in flight end within 2 s (those still streaming then are cut:
 * n_cut), and returns what was measured with *interrupted set.  With
 * *interrupted set on entry nothing is sent (an empty result). */
int bload_run(const bload_spec *spec, bload_result *out, volatile int *interrupted, char *err, size_t errlen);
void bload_result_release(bload_result *r);
/* The self-check verdict once the caller knows the median ITL (ms, NaN
 * when unknown): fills client_bound and warnings. */
void bself_judge(bself *s, double median_itl_ms, bool open_loop);

/* ---- telemetry.c: memory sampled during a run --------------------------- */

typedef struct btele btele;
/* Start sampling every interval_ms on a thread of its own (host snapshot:
 * NVML per device, MemAvailable); stop returns the summary as JSON
 * {"samples", "interval_ms", "devices": [{index, name, peak_used_bytes,
 * mean_used_bytes}], "host": {peak_used_bytes, mean_used_bytes,
 * min_available_bytes}}.  Never blocks the caller longer than one NVML
 * deadline. */
btele *btele_start(int interval_ms);
cJSON *btele_stop(btele *t);
/* {"hostname","kernel","cpu","gpus":[{index,name,uuid,total_bytes}],
 * "driver","nvml"} */
cJSON *btele_host_identity(void);

/* ---- report.c: renderings of a result document (docs/bench.md) --------- */

/* The terminal table of a result document (any kind). */
void breport_table(buf *out, const cJSON *result, bool color);
void breport_csv(buf *out, const cJSON *result);   /* one row per iteration */
void breport_md(buf *out, const cJSON *result);    /* a Markdown table per point set */
/* SVG charts: load runs: output/request throughput and TTFT/TPOT p50/p99
 * against concurrency or rate; ctx sweeps: prefill and decode speed
 * against depth; switch runs: each phase's median with its interval. */
void breport_svg(buf *out, const cJSON *result);

/* ---- main.c: `gpumod bench ...` (argv[1] on: the command's own words) -- */

int bench_main(int argc, char **argv);

/* ---- bswitch.c: gpumod bench switch MODE_A MODE_B [-n N] ------------------ */

/* argv[0] is "switch".  Returns the exit code (docs/bench.md). */
int bswitch_main(int argc, char **argv);

#endif
