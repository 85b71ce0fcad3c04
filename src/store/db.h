/* db.h - the state database (SQLite, WAL): schema versioning and the
 * tables the daemon fills: measured footprints (v1; how each figure was
 * obtained since v5), events (v2) and the mode-switch journal with the
 * committed mode (v3, v4), bench results (v6), the tune lease (v7). */
#ifndef GPUMOD_DB_H
#define GPUMOD_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/types.h"

typedef struct store store;

#define STORE_FILE "gpumod.db"

/* Open <state_dir>/gpumod.db.  create: make the directory and the file
 * and apply migrations; else open read-only and fail with ENOENT-like
 * "no state database" (*missing = true) when there is none.  Every call
 * waits at most busy_ms on a lock held by another process. */
int store_open(store **out, const char *state_dir, bool create, int busy_ms, bool *missing, char *err,
               size_t errlen);
void store_close(store *s);
int store_schema_version(store *s);
extern const int store_schema_latest;

/* How a footprint's GPU figure was obtained (schema v5; rows written
 * before it read FP_GPU_NVML, the only way there was):
 *   nvml       NVML's per-process memory of the group's pids
 *   unified    a unified device (GB10) without per-process figures: the
 *              drop in MemAvailable from the admission snapshot (the
 *              service held the load slot) to ready, minus the group's
 *              host RSS already counted, floored at 0
 *   admitted   no honest figure (per-process figures hidden on a discrete
 *              GPU, or MemAvailable unreadable): the admitted bytes stand
 *              in, and the footprint is partial */
typedef enum { FP_GPU_NVML, FP_GPU_UNIFIED, FP_GPU_ADMITTED } fp_gpu_how;
extern const char *const fp_gpu_how_names[]; /* "nvml" "unified" "admitted" */

typedef struct footprint {
    char hash[65];
    char service[65];
    int64_t measured_at_ms; /* Unix ms */
    uint64_t host_bytes;
    size_t ngpu;
    struct {
        int index;
        uint64_t bytes;
        fp_gpu_how how;
    } gpu[HOST_MAX_GPUS];
    char detail[256]; /* how the figures were obtained, one line ("" for rows before v5) */
} footprint;

/* Some GPU figure stands in for a measurement (FP_GPU_ADMITTED). */
bool footprint_partial(const footprint *f);

int store_footprint_put(store *s, const footprint *f, char *err, size_t errlen);
/* 1 found, 0 none, -1 error. */
int store_footprint_get(store *s, const char *hash, footprint *out, char *err, size_t errlen);

/* Events (docs/interfaces.md): {id, ts, service|null, kind, from, to,
 * reason, data}.  Strings may be NULL; kind must be one of
 * store_event_kinds; data is JSON text. */
typedef struct store_event {
    int64_t id;
    int64_t ts_ms;
    const char *service, *kind, *from, *to, *reason, *data;
} store_event;
extern const char *const store_event_kinds[];
/* The index of kind k in store_event_kinds, or -1. */
int store_event_kind_index(const char *k);

int store_event_add(store *s, const store_event *e, int64_t *id, char *err, size_t errlen);
/* Events after since_id (0: from the first), of one service or all (NULL),
 * oldest first, at most limit (0: 1000).  The caller frees with
 * store_events_free. */
int store_events(store *s, int64_t since_id, const char *service, size_t limit, store_event **out, size_t *n,
                 char *err, size_t errlen);
/* The same with every filter: after since_id (0: any), at or after
 * since_ts_ms (Unix ms; 0: any), of one service (NULL: all); tail: the
 * last `limit` that match rather than the first.  Oldest first either way;
 * limit 0: 1000. */
typedef struct store_event_query {
    int64_t since_id;
    int64_t since_ts_ms;
    const char *service;
    unsigned kinds; /* bit i: store_event_kinds[i]; 0: every kind */
    size_t limit;
    bool tail;
} store_event_query;
int store_events_query(store *s, const store_event_query *q, store_event **out, size_t *n, char *err,
                       size_t errlen);
void store_events_free(store_event *v, size_t n);
/* Called after every event store_event_add has recorded, with its id, on
 * the caller's thread (the event streams of GET /events?follow=1 read it
 * back from here, so a stream sees every event exactly once and in order).
 * One callback; NULL removes it. */
typedef void (*store_event_cb)(int64_t id, void *ud);
void store_on_event(store *s, store_event_cb cb, void *ud);

/* The switch journal (docs/modes.md "Journal"): one row per switch and
 * one per phase, written as each begins and ends, so a switch a daemon
 * crash cut short is still open (planned or running) on the next start.
 * States: planned running committed rolled_back failed interrupted
 * refused (schema v4: the plan did not fit, nothing was touched). */
typedef struct store_phase {
    int seq;
    char *phase, *service;         /* service NULL for a phase of the whole switch */
    int64_t started_ms, ended_ms;  /* Unix ms; ended 0 while it runs */
    int ok;                        /* 1, 0, -1 while it runs */
    char *detail;                  /* JSON text or NULL */
} store_phase;
typedef struct store_switch {
    int64_t id;
    char *mode, *from_mode, *origin, *state; /* from_mode NULL: the running set was no mode */
    int64_t started_ms, ended_ms;            /* ended 0 while open */
    char *error, *plan;                      /* error text, plan JSON; NULL when none */
    store_phase *phases;                     /* in seq order */
    size_t nphases;
} store_switch;

/* A new switch in state `planned`; *id set. */
int store_switch_begin(store *s, const char *mode, const char *from_mode, const char *origin, int64_t started_ms,
                       int64_t *id, char *err, size_t errlen);
/* Set the state (and, when given: ended_ms > 0, error, plan JSON). */
int store_switch_update(store *s, int64_t id, const char *state, int64_t ended_ms, const char *error,
                        const char *plan_json, char *err, size_t errlen);
int store_phase_begin(store *s, int64_t id, int seq, const char *phase, const char *service, int64_t started_ms,
                      char *err, size_t errlen);
int store_phase_end(store *s, int64_t id, int seq, int64_t ended_ms, bool ok, const char *detail_json, char *err,
                    size_t errlen);
/* Newest first, at most limit (0: 100), with their phases.  open_only:
 * those still planned or running.  One (by id): store_switch_get, 1
 * found, 0 none.  Free with store_switches_free. */
int store_switches(store *s, size_t limit, bool open_only, store_switch **out, size_t *n, char *err, size_t errlen);
int store_switch_get(store *s, int64_t id, store_switch **out, char *err, size_t errlen);
void store_switches_free(store_switch *v, size_t n);
/* The committed mode ("none" is the empty mode): 1 found (out filled),
 * 0 never committed, -1 error. */
int store_committed_set(store *s, const char *mode, int64_t switch_id, int64_t at_ms, char *err, size_t errlen);
int store_committed_get(store *s, char *out, size_t outlen, char *err, size_t errlen);
/* The end of an open switch (planned or running) in one transaction,
 * written with a full sync: its state, ended_ms and error (NULL: kept),
 * and, when commit_mode is not NULL, the committed mode (with this
 * switch's id).  Either both are written or neither: -1 with err (also
 * when no such switch is open). */
int store_switch_finish(store *s, int64_t id, const char *state, int64_t ended_ms, const char *error,
                        const char *commit_mode, char *err, size_t errlen);

/* Retention (docs/interfaces.md "Events"): delete the oldest events
 * beyond events_keep rows or older than max_age_ms (each 0: no such
 * limit), and the oldest closed switches (their phases with them) beyond
 * switches_keep (0: no limit; a switch still planned or running is never
 * deleted).  "Older" goes by id: the rows before the first one at or
 * after now_ms - max_age_ms.  One DELETE per table, each deleting at most
 * batch rows (0: STORE_PRUNE_BATCH), so a call holds the daemon's loop
 * for a bounded time.  *events_deleted and *switches_deleted (each may be
 * NULL) get the counts.  Returns 1 when a batch was full (call again:
 * more may be left), 0 when nothing is left beyond the limits, -1 with
 * err. */
#define STORE_PRUNE_BATCH 20000
#define STORE_SWITCHES_KEEP 1000
typedef struct store_retention {
    int64_t events_keep;
    int64_t events_max_age_ms;
    int64_t switches_keep;
    int64_t now_ms; /* Unix ms */
    size_t batch;
} store_retention;
int store_prune(store *s, const store_retention *r, int64_t *events_deleted, int64_t *switches_deleted, char *err,
                size_t errlen);

/* Bench and eval results (schema v6, docs/api.md "Results"): one row per
 * result document that `gpumod bench` or `gpumod eval` sent (POST
 * /results).  doc is the whole
 * document less its raw requests; summary a small JSON of its figures;
 * bytes the length of doc.  Strings may be NULL where the column allows
 * (service, config_hash). */
typedef struct store_result {
    int64_t id;
    int64_t ts_ms; /* Unix ms, when stored */
    char *kind, *target, *service, *config_hash;
    char *summary; /* JSON text */
    char *doc;     /* JSON text; NULL in a list */
    int64_t bytes;
} store_result;

/* Kept: the newest STORE_RESULTS_KEEP results, and the newest whose
 * documents add up to at most STORE_RESULTS_MAX_BYTES (the newest one is
 * always kept).  Older ones are deleted by each store_result_add. */
#define STORE_RESULTS_KEEP 1000
#define STORE_RESULTS_MAX_BYTES (64ll << 20)

/* Store r (its id ignored) and prune in one transaction: beyond keep rows
 * or max_bytes of documents (each <= 0: the defaults above).  *id gets
 * the new id, *pruned (may be NULL) how many older rows went. */
int store_result_add(store *s, const store_result *r, int64_t keep, int64_t max_bytes, int64_t *id,
                     int64_t *pruned, char *err, size_t errlen);
/* Newest first, without doc, of one service and one kind (each NULL:
 * all), at most limit (0: 100).  Free with store_results_free. */
int store_results(store *s, const char *service, const char *kind, size_t limit, store_result **out, size_t *n,
                  char *err, size_t errlen);
/* One with its doc: 1 found (*out: one element), 0 none, -1 error. */
int store_result_get(store *s, int64_t id, store_result **out, char *err, size_t errlen);
void store_results_free(store_result *v, size_t n);

/* The tune lease (schema v7, docs/api.md "Tune lease"): one row, the
 * lease's JSON (held: a tune run holds it now; else the last one that
 * ended).  put replaces the row; get: 1 found (*doc allocated, caller
 * frees), 0 none, -1 with err. */
int store_tune_put(store *s, const char *doc, bool held, char *err, size_t errlen);
int store_tune_get(store *s, char **doc, bool *held, char *err, size_t errlen);

/* What a service holds asleep, per config hash and tier (schema v8,
 * docs/interfaces.md "Sleep footprints"): measured right after a confirmed
 * sleep (fp: host RSS of the group, GPU per device; fp.how is not kept),
 * with the sleep's time (request to confirmed) and the last wake's
 * (request to ready; -1: none yet).  put upserts (wake_ms -1 keeps the
 * stored one); get: 1 found, 0 none, -1 with err. */
typedef struct sleep_fp {
    char hash[65];
    int tier; /* core/tier.h tier */
    footprint fp;
    int64_t sleep_ms, wake_ms;
} sleep_fp;
int store_sleep_put(store *s, const sleep_fp *f, char *err, size_t errlen);
int store_sleep_get(store *s, const char *hash, int tier, sleep_fp *out, char *err, size_t errlen);

#endif
