/* watchdog.h - the memory watchdog: every memory.watchdog.interval it
 * reads MemAvailable and PSI (full avg10) and each live service's usage
 * (RssAnon + RssShmem of its process group, NVML per-process memory), asks the
 * pure decision (src/core/watchdog.h), and when the host crosses a limit
 * or a service grows well past its admitted need, has the supervisor stop
 * the loading service (else the one furthest over its need) with a
 * `watchdog` event that shows the figures.  Admission alone cannot see
 * what a loading engine will do on unified memory; this can. */
#ifndef GPUMOD_WATCHDOG_H
#define GPUMOD_WATCHDOG_H

#include <uv.h>

#include "config/config.h"
#include "daemon/hostmon.h"
#include "daemon/supervisor.h"
#include "util/buf.h"

typedef struct watchdog watchdog;

/* Starts the timer.  s, hm, set borrowed (set is replaced by
 * watchdog_set_settings on reload).  proc_root NULL: $GPUMOD_PROC_ROOT or
 * /proc (host-wide files only). */
watchdog *watchdog_new(uv_loop_t *loop, sup *s, hostmon *hm, const settings *set, const char *proc_root);
void watchdog_set_settings(watchdog *w, const settings *set);
/* The last tick's figures and decision, a JSON object, for GET /status:
 * {"interval_ms", "last_tick", "mem_available_bytes", "psi_full_avg10",
 *  "floor_bytes", "psi_full_avg10_max", "services": [{"id","used_bytes","need_bytes"}],
 *  "last_action": {...} | null} */
void watchdog_json(watchdog *w, buf *out);
/* Stops the timer, waits for a tick in flight, frees, then cb on the loop. */
void watchdog_close(watchdog *w, void (*cb)(void *ud), void *ud);

#endif
