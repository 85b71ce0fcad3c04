/* slots.h - llama.cpp slot save and restore (preset slot_save): the
 * engine's KV cache of each slot written to a file before the service
 * stops, and read back once the same configuration is ready again, so a
 * long prompt's cache survives a stop or a switch.
 *
 * The files live in <state_dir>/slots/<id>/ (made 0700 before the engine
 * starts: llama-server does not create --slot-save-path), one per slot,
 * named <config hash>-<slot>.bin, so a restore only ever reads what the
 * same configuration saved.
 *
 *   save     POST /slots/{i}?action=save {"filename": NAME} for each slot
 *            i < parallel, one after the other, each under its own
 *            deadline; skipped (logged) when slots_max_mb is 0 or the disk
 *            has less than 1 GiB + slots_max_mb/4 free; after each save the directory is
 *            bounded by slots_max_mb (the oldest files deleted first)
 *   restore  POST /slots/{i}?action=restore {"filename": NAME} for each
 *            slot whose file exists; a restored file's time is set to now
 *            (the bound deletes the least recently used first)
 *
 * Every failure is a log line (warning), never an error of the stop or
 * the start; no answer at all (refused, deadline) ends the pass (the
 * engine is not answering), an HTTP error moves on to the next slot. */
#ifndef GPUMOD_DAEMON_SLOTS_H
#define GPUMOD_DAEMON_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#define SLOTS_CALL_MS 10000                  /* each save or restore request */
#define SLOTS_DISK_FLOOR ((uint64_t)1 << 30) /* free disk kept besides slots_max_mb/4 */

typedef struct slots_op slots_op;

typedef struct slots_spec {
    const char *service; /* for the log lines */
    const char *host;    /* as health_request takes it */
    int port;
    const char *dir;  /* <state_dir>/slots/<id> */
    const char *hash; /* the run's config hash: the files' prefix */
    int parallel;     /* slots 0 .. parallel-1 */
    int64_t max_mb;   /* supervisor.slots_max_mb: the directory's bound */
    int64_t call_ms;  /* each request's deadline (0: SLOTS_CALL_MS) */
} slots_spec;

/* The pass is over: how many slots were saved or restored, how many
 * failed (each logged).  Never called from within slots_save/restore. */
typedef void (*slots_cb)(int done, int failed, void *ud);

slots_op *slots_save(uv_loop_t *loop, const slots_spec *sp, slots_cb cb, void *ud);
slots_op *slots_restore(uv_loop_t *loop, const slots_spec *sp, slots_cb cb, void *ud);
/* No callback after this; the request in flight is cancelled. */
void slots_cancel(slots_op *o);

/* <state_dir>/slots and <state_dir>/slots/<id>, mode 0700 (existing ones
 * are kept).  -1 with err naming the path and why. */
int slots_make_dir(const char *state_dir, const char *id, char *err, size_t errlen);
/* Delete the oldest regular files of dir (by modification time, then
 * name) until their total is at most max_bytes.  The number deleted, or
 * -1 with err. */
int slots_bound(const char *dir, uint64_t max_bytes, char *err, size_t errlen);
/* Whether dir's file system has at least SLOTS_DISK_FLOOR + max_mb/4 MiB
 * free; false with why ("12 MiB free on /x, 3072 MiB wanted"). */
bool slots_disk_ok(const char *dir, int64_t max_mb, char *why, size_t len);

#endif
