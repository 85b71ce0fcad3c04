/* supervisor.h - the services of one daemon: their lifecycle (the table
 * of src/core/lifecycle.c), the daemon-wide load slot, admission (need +
 * gate + port check), spawning through a runner, readiness, health,
 * restarts, verified stops, footprints and events.
 *
 * Everything runs on the daemon's loop; nothing here blocks (snapshots
 * come from hostmon on the thread pool, health probes are libuv sockets,
 * /proc reads of a service's own process group are the only synchronous
 * I/O and take microseconds).
 *
 * Ownership: the supervisor borrows the config (the daemon swaps it whole
 * on reload through sup_set_config); what a running service was started
 * with (argv, env, hash, port, timeouts) is copied at admission, so a
 * reload never changes a process already running.
 *
 * Results: every request (start, stop, restart) ends exactly once in its
 * callback with a sup_result, whatever happens (refused, failed, shut
 * down): an outcome (outcome.h) and a reason, never an HTTP status; the
 * control API renders it.  A start also gets a ticket (start_seq) whose outcome the
 * service's JSON shows, so a client can ask "how did my start end?"
 * without holding a connection open. */
#ifndef GPUMOD_SUPERVISOR_H
#define GPUMOD_SUPERVISOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "config/config.h"
#include "config/overrides.h"
#include "core/gate.h"
#include "core/lifecycle.h"
#include "core/tier.h"
#include "daemon/canary.h"
#include "daemon/hostmon.h"
#include "daemon/need.h"
#include "daemon/outcome.h"
#include "host/ports.h"
#include "store/db.h"
#include "util/buf.h"
#include "util/strv.h"

typedef struct sup sup;
/* A service's record: every configured preset has one, and so has every
 * service still running after a reload removed its preset.  It lives
 * until sup_free, so a caller that holds it (a switch, an activation)
 * resolves an id once and never again. */
typedef struct sup_svc sup_svc;

typedef struct sup_env {
    uv_loop_t *loop;
    store *st;               /* events and footprints; borrowed; NULL: none kept */
    hostmon *hm;             /* borrowed */
    const char *exec_helper; /* path of gpumod-exec */
    const char *proc_root;   /* host-wide /proc files and the port check; NULL: $GPUMOD_PROC_ROOT or /proc.
                                A service's own process group is always read from /proc. */
    const char *run_dir;     /* <state_dir>/run: one file per spawned service (pgid, start time) for
                                reconcile after a crash */
    /* Called on the loop after each event is stored (id set), e.g. for
     * log/follow streams and the watchdog.  May be NULL. */
    void (*on_event)(const store_event *e, void *ud);
    void *ud;
} sup_env;

/* What the gate judged when it refused a start: the verdict object of
 * docs/interfaces.md is made of these (daemon/verdict.h verdict_json,
 * via "daemon"). */
typedef struct sup_gate_refusal {
    const char *service;
    const verdict *vd;
    const need_detail *nd;
    const snapshot *snap;
} sup_gate_refusal;

/* A result, borrowed (with all it points to) for the callback only.
 * The control API renders it (outcome.h); the detail of an error is
 * whichever of gate, holder and detail is set. */
typedef struct sup_result {
    sup_outcome outcome;
    const char *message;            /* NULL for SUP_OK; one line for people; a failed start ends with
                                       the log tail */
    const sup_gate_refusal *gate;   /* SUP_GATE_REFUSED: what the gate judged */
    const port_owner *holder;       /* SUP_PORT_HELD: who listens on port */
    int port;
    const char *detail;             /* JSON text or NULL: a start guard's own (sup_refusal) */
    bool slept;                     /* sup_sleep: confirmed asleep (false: stopped instead, or down) */
    bool woke;                      /* a start on a sleeper: the wake succeeded */
    bool fell_back;                 /* sleep: a stop ran instead of the tier's sleep; start on a
                                       sleeper: the wake failed, a stop + cold start ran */
    int tier;                       /* sleep / wake: the tier (core/tier.h; TIER_STOP: stopped) */
    int64_t ms;                     /* sleep / wake: request to confirmed (asleep / ready); 0: none */
} sup_result;
typedef void (*sup_cb)(const sup_result *r, void *ud);

/* cfg borrowed (see sup_set_config).  NULL with err on failure. */
sup *sup_new(const sup_env *env, const config *cfg, char *err, size_t errlen);

/* Once, before any request: find what a previous daemon left and clean
 * it up, then cb.
 * 1. Stale pids: run files whose process group still has members (the
 *    leader's start time matching the file's): each is reported (an
 *    `exit` event) and killed (SIGTERM, then SIGKILL after the settings'
 *    stop_timeout), confirmed gone from /proc.
 * 2. Then ports held by leftovers: each configured service's port
 *    (ports_owner).  A holder running the service's binary (argv[0] or
 *    /proc/PID/exe basename) that is an orphan of a previous gpumod
 *    (parent pid 1, or a gpumod-exec whose daemon is gone) is reported
 *    (`exit` event with pid, port and redacted command line) and killed
 *    the same way; any other holder is only reported (a `gate` event with
 *    its pid and redacted command line, data.action "reported") and left
 *    alone, so a start of that service is refused with port_held.  Only
 *    when the port check reads the real /proc (not a fixture).
 * No GPU-memory check.  A shutdown during the reconcile SIGKILLs what is
 * left, skips the port pass, and waits for it too. */
void sup_reconcile(sup *s, void (*cb)(void *ud), void *ud);

/* Start id: queue on the load slot, then admit (need + gate counting
 * every reservation in flight but this one's + port check), spawn, wait
 * for ready, measure.  cb when ready (SUP_OK), refused (SUP_GATE_REFUSED,
 * SUP_PORT_HELD: nothing spawned), failed (SUP_START_FAILED with the log
 * tail; SUP_NEED_UNKNOWN when the need cannot be found) or the daemon
 * shuts down (SUP_SHUTTING_DOWN).  A service already ready answers
 * SUP_OK at once; one already starting joins that start (same seq); one
 * unhealthy joins the restart under way (answered when it ends, or
 * SUP_CONFLICT when a stop or the watchdog cancels it, SUP_SHUTTING_DOWN
 * at shutdown).  A host the health probe cannot use fails at once
 * (SUP_START_FAILED); an id not configured is SUP_NOT_FOUND.
 *
 * origin ("cli", "api", "restart", "switch", "router") goes into the
 * events and decides who may reset a failed service: only a person
 * ("cli", "api"; NULL counts as "api", see sup_origin_is_person) starts a
 * FAILED service, which also clears its restart history; any other
 * origin gets SUP_NEEDS_PERSON ("service 'X' failed; a person must start
 * it").
 * A start by a person or a switch/router (not "restart") begins a fresh
 * restart-policy window.  Returns the start's seq (0 when answered at
 * once with an error). */
bool sup_origin_is_person(const char *origin);
uint64_t sup_start(sup *s, const char *id, const char *origin, sup_cb cb, void *ud);
/* The same for a record held (sup_lookup): no lookup by id. */
uint64_t sup_start_svc(sup *s, sup_svc *v, const char *origin, sup_cb cb, void *ud);

/* What one start runs differently from its preset (POST
 * /services/ID/start's "overrides") is config/overrides.h's overrides:
 * the supervisor copies what it is given and applies it at each use. */
/* A start with overrides (ov NULL or none set: as sup_start).  The
 * service's record keeps them for that start, and a restart by the
 * restart policy runs them again; a later start without them runs the
 * preset as configured.  They are applied to the preset of the moment
 * at each use (admission: the need, the gate, the config hash the run
 * and its footprint are known by; spawn: the argv), never held as a copy
 * of the preset across loop turns, so a reload cannot leave them
 * pointing into a freed configuration.  Answered at once:
 * SUP_BAD_REQUEST when the preset's driver takes no such override, the
 * preset's checks across keys fail with them (ubatch_size > batch_size) or
 * the runner cannot run one (systemd starts its installed unit as
 * written); SUP_CONFLICT when the service is starting, ready or
 * unhealthy with other settings than asked (the message says what runs).
 * A start without overrides joins or accepts whatever runs. */
uint64_t sup_start_with(sup *s, const char *id, const char *origin, const overrides *ov, sup_cb cb, void *ud);

/* The record of id (configured, or known from a run), or NULL; valid
 * until sup_free.  Its id is borrowed for as long. */
sup_svc *sup_lookup(sup *s, const char *id);
const char *sup_svc_id(const sup_svc *v);

/* Stop id: SIGTERM to the group, SIGKILL after stop_timeout, wait until
 * no pid of the group remains and NVML shows none of them holding memory
 * (bounded by verify_freed_timeout, 0: no NVML wait; a warning event when
 * memory is still held), then down.  A scheduled restart is cancelled
 * (a start waiting on it gets SUP_CONFLICT).  A queued start is
 * cancelled (its cb gets SUP_CONFLICT "stopped before it started").
 * Down already: SUP_OK at once. */
void sup_stop(sup *s, const char *id, const char *origin, sup_cb cb, void *ud);
void sup_stop_svc(sup *s, sup_svc *v, const char *origin, sup_cb cb, void *ud);

/* Put v to sleep at its tier (tier_for on its running preset and the last
 * snapshot; docs/modes.md).  cb once: SUP_OK with r->slept true when it is
 * confirmed asleep (state sleeping; r->tier, r->ms); SUP_OK with r->slept
 * false when it was stopped instead (tier stop, or a fallback, r->fell_back,
 * r->message says why, e.g. "sleep refused by the gate: host: ...; stopped
 * instead", "the engine does not support sleep (POST /sleep?level=1: 404);
 * stopped instead", "the engine did not confirm the sleep (GET /is_sleeping:
 * false after 10 s); stopped instead").  The stop is the verified stop of
 * sup_stop.  Already sleeping: SUP_OK slept at once.  Down: SUP_OK, slept
 * false.  Starting, stopping, unhealthy, failed: SUP_CONFLICT ("service 'X'
 * is starting: ...").  A sleep in flight is joined.
 *
 * A start (sup_start, sup_start_svc, the router's) on a sleeping record
 * wakes it: queued on the load slot like a start, admitted with its need
 * minus what it holds asleep, then the tier's wake calls, the readiness
 * probe and the canary; r->woke.  A failed wake stops it (verified) and
 * starts it cold once: r->fell_back, the message "wake failed (...):
 * stopped and started cold". */
void sup_sleep_svc(sup *s, sup_svc *v, const char *origin, sup_cb cb, void *ud);
/* The same by id: SUP_NOT_FOUND when no such service. */
void sup_sleep(sup *s, const char *id, const char *origin, sup_cb cb, void *ud);

/* After sup_reconcile: a previous daemon left services behind (it was
 * killed or crashed: their run files were still there), so GPU memory they
 * held may not be released yet, even when their processes are gone. */
bool sup_left_behind(const sup *s);

/* What owns the services above the supervisor (a mode switch) may refuse
 * a start: the guard is asked before a start that would begin a load (not
 * one that finds the service ready or joins a start in flight) and before
 * a restart.  It returns 0 to let it through, or fills *out (message and
 * detail allocated, freed by the supervisor; detail JSON or NULL) and
 * returns -1: the start is answered with that, nothing changed. */
typedef struct sup_refusal {
    sup_outcome outcome;
    char *message, *detail;
} sup_refusal;
typedef int (*sup_guard_fn)(const char *id, const char *origin, sup_refusal *out, void *ud);
/* fn NULL: no guard */
void sup_set_start_guard(sup *s, sup_guard_fn fn, void *ud);

/* stop then start, each as above; cb once, with the start's result.
 * _with: the start with ov (NULL: the preset as configured). */
void sup_restart(sup *s, const char *id, const char *origin, sup_cb cb, void *ud);
void sup_restart_with(sup *s, const char *id, const char *origin, const overrides *ov, sup_cb cb, void *ud);

/* The memory watchdog chose id (EV_WATCHDOG): stop it as sup_stop does,
 * recording a `watchdog` event with reason and data (JSON text, the
 * figures).  A start in flight for it ends SUP_START_FAILED with that
 * reason. */
void sup_watchdog_stop(sup *s, const char *id, const char *reason, const char *data_json);

/* Swap the configuration.  Services whose config hash changed while
 * running (or starting) are appended to changed (ids); they keep running
 * as they were started until restarted.  Services that are no longer
 * configured but run keep running until stopped.  0, or -1 with err (s
 * keeps the old config). */
int sup_set_config(sup *s, const config *cfg, strv *changed, char *err, size_t errlen);

/* Every reservation in flight (admitted starts not yet measured), for
 * the gate of preflight via the daemon.  Returns how many (at most max);
 * service pointers borrowed until the next loop turn. */
size_t sup_reservations(sup *s, reservation *out, size_t max);

/* Memory that is about to be taken by something other than a start (an
 * admitted router-mode model load until GET /models says loaded; an l1
 * sleep's host copy until the asleep measurement): held under id (copied)
 * and listed by sup_reservations, so every gate counts it, until
 * sup_unreserve.  Returns the handle (never 0). */
uint64_t sup_reserve_extra(sup *s, const char *id, const need *n);
/* Release it (0 or an unknown handle: nothing). */
void sup_unreserve(sup *s, uint64_t handle);

/* A router-mode model load or unload runs in v's engine (daemon/rmodels.c
 * marks it from the op's start to its end): while one does, a sleep of v
 * is refused (SUP_CONFLICT, "... a model load or unload runs ...").  And
 * whether a sleep of v is in flight (a model op is refused meanwhile). */
void sup_model_op_mark(sup_svc *v, bool begin);
bool sup_sleep_in_flight(const sup_svc *v);

/* What the watchdog needs per live service (starting, ready, unhealthy,
 * stopping, sleeping: admitted is then what it holds asleep). */
typedef struct sup_usage {
    const char *id;       /* borrowed until the next loop turn */
    svc_state state;
    pid_t pgid;           /* 0 when no process */
    bool loading;         /* starting: holds the load slot */
    need admitted;        /* the need it was admitted with */
    int64_t started_ms;   /* clock_mono_ms at spawn */
} sup_usage;
size_t sup_usages(sup *s, sup_usage *out, size_t max);

/* What the control API shows of a service (docs/api.md, "service"; it
 * renders the JSON, daemon/api_services.c).  Strings and pointers are
 * borrowed until the next loop turn, or point into the view itself. */
typedef struct sup_svc_view {
    const char *id;
    const char *driver;         /* the driver's name; NULL when unknown */
    int port;                   /* <= 0: none */
    bool configured;            /* it has a preset */
    svc_state state;
    int64_t since_ms;           /* wall clock: when it entered state */
    pid_t pid, pgid;            /* pgid 0: no process */
    int progress_pct;           /* starting, as the log shows it; else -1 */
    const char *config_hash;    /* its preset's now; NULL: no preset, or no hash */
    const char *running_hash;   /* what runs; NULL: nothing runs, or not known */
    const overrides *overrides; /* what runs (or starts, or restarts) with; NULL: none */
    const need *admitted;       /* the admission it holds; NULL: none */
    const footprint *footprint; /* the last measured; NULL: none */
    int64_t load_ms;            /* spawn to ready, of that footprint */
    int64_t restarts_in_window, max_restarts, restart_window_ms;
    int64_t next_restart_ms;    /* wall clock; 0: none scheduled */
    int64_t health_failures;    /* health probes failed in a row */
    int64_t last_ok_ms;         /* wall clock; 0: never */
    bool has_exit;              /* the last exit: */
    int exit_code, exit_sig;    /* exit_sig 0: exited with exit_code */
    int64_t exit_ms;
    uint64_t start_seq;         /* the last start's ticket; 0: never started */
    const char *start_origin;
    const char *start_outcome;  /* "pending", "ready", "refused", "failed", "cancelled" */
    sup_outcome start_result;   /* SUP_OK while pending or ready */
    const char *start_message;  /* NULL while pending or ready */
    int64_t start_at_ms;
    int queued;                 /* its place in the load slot's queue, 1 next; 0: not queued */
    bool canary_running;        /* the canary is asking its prompts now */
    const canary_report *canary; /* the last canary's report; NULL: none ran */
    int64_t canary_at_ms;       /* wall clock of that report */
    int tier;                   /* core/tier.h: its tier now (asleep: the one it sleeps at) */
    bool asleep;                /* sleeping: */
    int64_t asleep_since_ms;    /* wall clock: confirmed asleep */
    need asleep_held;           /* what it holds asleep */
    bool asleep_measured;       /* asleep_held measured (else predicted) */
    int64_t wake_ms;            /* the last wake measured for its hash and tier; -1: none */
    bool start_woke;            /* the last start woke a sleeper */
    bool start_fell_back;       /* the last start was a wake that failed: stopped and started cold */
    char log_file[4096];
    char hash_buf[65];          /* config_hash's storage */
} sup_svc_view;
/* v's view into out (and the engine's pid refreshed from the runner);
 * false when v is not listed (no preset, not running). */
bool sup_svc_view_of(sup_svc *v, sup_svc_view *out);
/* What another part of the daemon adds to a service's JSON (daemon/rmodels.c:
 * a router-mode service's "models"): fn appends ,"key":value members for id.
 * fn NULL: none. */
typedef void (*sup_json_ext_fn)(const char *id, buf *out, void *ud);
void sup_set_json_ext(sup *s, sup_json_ext_fn fn, void *ud);
void sup_json_ext(sup *s, const char *id, buf *out);
/* How many records there are: room for every listed service
 * (sup_states with id NULL) and every start waiting for the slot. */
size_t sup_nsvcs(const sup *s);
/* The load slot: *holder the id of the start that holds it (NULL: none),
 * and the ids of the starts waiting for it in order, at most max into
 * waiting.  Returns how many wait.  Ids borrowed until the next loop
 * turn. */
size_t sup_slot(sup *s, const char **holder, const char **waiting, size_t max);

/* The service's output kept in memory (the last 256 KiB; the whole log
 * is <log_dir>/<id>.log, rotated per settings).  Offsets count bytes
 * since the daemon started the service the first time.  Reads the bytes
 * after `after` (clamped to what the ring still holds; after = UINT64_MAX:
 * only the last n_lines lines), at most n_lines lines (LOGRING_ALL: no limit), into
 * out; *next is the offset to ask for next time.  -1 when id is unknown. */
int sup_log_read(sup *s, const char *id, uint64_t after, size_t n_lines, buf *out, uint64_t *next);
/* The last n_lines lines of the output of the service's current (or
 * last) start, appended to out: nothing when that start spawned nothing
 * (refused on its port or by the gate), though the ring holds an earlier
 * run's lines.  -1 when id is unknown. */
int sup_run_tail(sup *s, const char *id, size_t n_lines, buf *out);
void sup_svc_run_tail(const sup_svc *v, size_t n_lines, buf *out);
/* Called on the loop for each chunk of a service's output (follow). */
typedef void (*sup_log_cb)(const char *id, const char *data, size_t len, void *ud);
typedef struct sup_log_watch sup_log_watch;
sup_log_watch *sup_log_watch_add(sup *s, const char *id, sup_log_cb cb, void *ud);
void sup_log_watch_remove(sup *s, sup_log_watch *w);

/* Refuse new starts (SUP_SHUTTING_DOWN), cancel queued ones, stop every
 * service (verified, all at once), then cb on the loop. */
void sup_shutdown(sup *s, void (*cb)(void *ud), void *ud);
/* Hurry every stop in progress and every later one (a second SIGTERM):
 * each group being stopped gets SIGKILL now (no stop_timeout wait) and
 * the NVML verify wait is skipped; groups are still confirmed gone from
 * /proc before a stop completes.  Sticky for the supervisor's lifetime. */
void sup_hurry(sup *s);
/* After sup_shutdown's cb (or when nothing was ever started). */
void sup_free(sup *s);

/* For a mode switch's plan (src/daemon/switch.c): every service that
 * holds memory or is about to: starting, ready, unhealthy, stopping, a
 * failed one whose group is still being killed (killing), and a down one
 * with a restart pending (restart_pending; it holds nothing: held is
 * zero).  Each with the config hash it runs with and what it holds now:
 * its measured footprint (taken with the hash it runs with; on a device
 * the footprint shows nothing on but the admission counted, the admitted
 * bytes), else the need it was admitted with.  load_ms: spawn to ready as measured (-1
 * before ready).  Returns how many (at most max); ids and records borrowed until
 * sup_free.  sup_stop ends each of them (and cancels a pending
 * restart). */
typedef struct sup_holding {
    const char *id;
    sup_svc *svc;
    svc_state state;
    char hash[65]; /* "" when unknown (a remote service, a hash that could not be made) */
    need held;
    bool measured; /* held is the footprint */
    int64_t load_ms;
    bool restart_pending; /* down, a restart scheduled (next_restart_ms) */
    bool killing;         /* failed, its group still being killed */
    /* residency (core/tier.h) */
    tier tier;            /* tier_for its running preset on the last snapshot */
    bool asleep;          /* state sleeping: held is what it holds asleep */
    need asleep_need;     /* measured asleep (store_sleep_get) else tier_asleep_need (predicted) */
    bool asleep_measured;
    int64_t wake_ms;      /* measured for its hash and tier; else tier_wake_prior_ms; -1 stop */
    bool wake_measured;
    need awake_need;      /* what it holds (or will hold) awake: footprint else admitted */
} sup_holding;
size_t sup_holdings(sup *s, sup_holding *out, size_t max);

/* For the router (activation on demand, /metrics): each service's state
 * and load progress, without building JSON.  id NULL: every listed
 * service (configured ones in the configuration's order, then those
 * running without a preset); else that one only (0 when it is neither
 * configured nor known).  Returns how many (at most max); ids and
 * records borrowed until sup_free. */
typedef struct sup_state_info {
    const char *id;
    sup_svc *svc;
    svc_state state;
    int progress_pct; /* starting: the load percentage the log shows, else -1 */
} sup_state_info;
size_t sup_states(sup *s, const char *id, sup_state_info *out, size_t max);
/* One record's state (false when it is not listed: no preset, not running). */
bool sup_svc_state(const sup_svc *v, sup_state_info *out);

#endif
