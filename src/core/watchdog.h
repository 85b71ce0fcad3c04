/* watchdog.h (core) - the memory watchdog's decision: (host figures,
 * each live service's need and usage, policy) -> stop one service, or
 * nothing.  Pure: no files, clocks or processes; src/daemon/watchdog.c
 * gathers the figures and carries the decision out.
 *
 * Rules, in the order they bind (docs/memory.md "Watchdog"):
 *   host.mem_available: MemAvailable < floor (equal is fine); skipped,
 *                       and noted, when meminfo was unreadable
 *   host.psi_full:      PSI memory full avg10 > max (equal is fine);
 *                       skipped when PSI was unreadable
 *     -> the victim is the largest sleeper that uses anything (it serves
 *        nothing: its stop costs a wake turned into a cold start, and
 *        no request and no load is lost); else the service that is
 *        loading (holds the load slot); else the one furthest over its
 *        admitted need (largest used - need > 0); else the largest user.
 *        Loading comes before the running ones because admission could
 *        not see what a load will take, and a load is cheap to lose:
 *        nothing is being served yet.
 *   service.over_need:  used > need x factor + margin, with the host fine
 *     -> the service furthest over its need among those past the limit.
 * Services already stopping are never chosen (their memory is on its
 * way back).  Ties go to the most recently started service (the newest
 * arrival changed the picture last), then to the smaller id, so the
 * answer does not depend on the order of the input. */
#ifndef GPUMOD_CORE_WATCHDOG_H
#define GPUMOD_CORE_WATCHDOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct wd_host {
    bool meminfo_ok;
    uint64_t mem_available_bytes;
    bool psi_ok;
    double psi_full_avg10; /* percent */
} wd_host;

typedef struct wd_service {
    const char *id;      /* borrowed */
    bool loading;        /* starting: holds the load slot */
    bool stopping;       /* a stop is under way: never chosen */
    bool asleep;         /* sleeping: serves nothing; need is what it holds asleep */
    bool need_known;     /* admitted with a need (else no over-need rule) */
    uint64_t need_bytes; /* admitted need: host + every GPU */
    bool used_known;     /* the group could be read */
    uint64_t used_bytes; /* host RSS of the group + NVML memory of its pids */
    int64_t started_ms;  /* spawn time (any monotonic clock): ties */
} wd_service;

typedef struct wd_policy {
    uint64_t floor_bytes;
    double psi_full_avg10_max;
    double over_need_factor; /* >= 1 */
    uint64_t over_need_margin_bytes;
} wd_policy;

typedef struct wd_decision {
    bool stop;
    size_t index;        /* when stop: position in the input */
    const char *service; /* when stop: its id (borrowed from the input) */
    char trigger[32]; /* "host.mem_available" | "host.psi_full" | "service.over_need"; "" when none
                       */
    char reason[320]; /* when stop: one line with the figures in MiB */
    char note[256];   /* no stop, but something to report: a limit crossed with nothing to
                         stop, unreadable meminfo/PSI; "" otherwise */
} wd_decision;

/* The limit past which a service is over its need: need x factor +
 * margin, saturating, rounded up. */
uint64_t watchdog_limit(uint64_t need_bytes, const wd_policy *p);

void watchdog_decide(const wd_host *h, const wd_service *svcs, size_t n, const wd_policy *p,
                     wd_decision *out);

#endif
