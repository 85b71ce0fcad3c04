/* hostmon.h - the daemon's view of the host: snapshots (NVML, nvidia-smi,
 * /proc) taken on libuv's thread pool so the loop never waits on NVML,
 * and the last one kept for status, the watchdog and preflight.
 *
 * NVML is already bounded by nvml_timeout (src/host/nvml.c); running the
 * snapshot off the loop means even that bound never stalls the control
 * API.  Takes are serialised: a take asked for while one runs waits for
 * the next one (never reuses a snapshot older than the request), and
 * every waiter of that next take gets the same snapshot. */
#ifndef GPUMOD_HOSTMON_H
#define GPUMOD_HOSTMON_H

#include <stdint.h>

#include <uv.h>

#include "host/host.h"

typedef struct hostmon hostmon;

/* o is copied (its strings too).  The loop is borrowed. */
hostmon *hostmon_new(uv_loop_t *loop, const snapshot_opts *o);

/* Take a fresh snapshot; cb runs on the loop with it.  s is borrowed for
 * the call only (hostmon_last keeps a copy).  Never fails: what could not
 * be read is flagged in the snapshot. */
typedef void (*hostmon_cb)(const snapshot *s, void *ud);
void hostmon_take(hostmon *h, hostmon_cb cb, void *ud);

/* The last snapshot taken, or NULL before the first; valid until the next
 * take completes.  taken_ms: when it completed (clock_mono_ms). */
const snapshot *hostmon_last(const hostmon *h, int64_t *taken_ms);

/* Waits for a take in flight (callbacks of pending takes are not called),
 * then frees and calls cb on the loop. */
void hostmon_close(hostmon *h, void (*cb)(void *ud), void *ud);

#endif
