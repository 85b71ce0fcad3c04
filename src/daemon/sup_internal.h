/* sup_internal.h - private to the supervisor's files (supervisor.c,
 * sup_admit.c, sup_spawn.c, sup_kill.c, sup_reconcile.c); nothing else
 * includes it.  supervisor.h is the supervisor's interface.
 *
 * It holds the records (struct sup, struct sup_svc, the waiters) and the
 * functions one of those files lends the others.  Those are named sv_*:
 * never sup_* (the public API) and never a bare word, since every
 * external name of libgpumod.a shares one namespace.  Everything else in
 * each file stays static.  Each function's home is the section below
 * that names its file. */
#ifndef GPUMOD_SUP_INTERNAL_H
#define GPUMOD_SUP_INTERNAL_H

#include "daemon/supervisor.h"

#include "daemon/canary.h"
#include "daemon/health.h"
#include "daemon/logring.h"
#include "daemon/runner.h"
#include "drivers/logscan.h"
#include "host/proctree.h"

/* run_hash of an adopted unit that runs an older configuration than its
 * preset's (config_changed: a switch restarts it; no footprint stored) */
#define RUN_HASH_OLDER "older"
#define KILL_POLL_MS 50 /* the steady poll; the first ones come sooner (kill_next_ms) */
#define MAX_SEEN 256

typedef struct waiter {
    sup_cb cb;
    void *ud;
    struct waiter *next;
} waiter;

typedef struct sup_svc svc; /* a service's record: the handle supervisor.h lends */

struct sup_log_watch {
    char *id;
    sup_log_cb cb;
    void *ud;
    bool dead;
    sup_log_watch *next;
};

struct sup_svc {
    sup *s;
    char *id;
    const preset *p; /* its preset in s->cfg (bind_presets), NULL when no longer configured */
    svc *next_q; /* load-slot queue */
    uint64_t gen;

    bool timers;
    uv_timer_t t_start, t_probe, t_kill, t_restart;

    svc_state state;
    int64_t since_ms; /* wall clock */

    /* what it was started with (copied at admission) */
    int driver;
    char *host;
    int port;
    char *health_path;
    int64_t startup_timeout_ms, stop_timeout_ms, health_interval_ms, health_failures, verify_ms;
    restart_policy_v pol;
    char run_hash[65];
    bool canary_on;                      /* the preset's canary */
    char *canary_prompt, *canary_expect; /* NULL: the built-in prompts / any answer */
    int64_t canary_max_tokens;

    /* the process */
    run_handle *h;
    bool exited;       /* on_exit came for h */
    bool exit_told;    /* systemd: the main process's exit was reported, its restart (or end) not yet */
    pid_t pgid, pid;
    uint64_t starttime;
    int64_t spawn_mono;
    logring *log;
    bool ran;          /* the start in progress (or the last one) spawned */
    uint64_t run_from; /* the ring's end when it did: where its output begins */
    logscan ls;
    int progress;
    health_probe *probe;
    uint64_t probe_gen; /* gen when the probe started; the probe's ud is the svc */
    int64_t probe_delay;
    int64_t ready_said;   /* mono ms when the engine's log said it is ready (this load); 0: not yet */
    int64_t expect_load_ms; /* the last measured load of this service; 0: none yet */
    int64_t fails;
    int64_t last_ok_ms;
    char probe_err[160];
    /* the canary (daemon/canary.h): between the first 200 and ready */
    canary_run *canary;
    bool canary_embed;       /* the engine serves embeddings (its argv says so) */
    int64_t healthy_mono;    /* when the health check first answered 200 (the load's end) */
    bool has_canary;         /* last_canary holds the last run's report */
    canary_report last_canary;
    int64_t canary_at_ms;    /* wall clock of that report */

    /* the start in progress (or the last one) */
    uint64_t seq;
    /* its overrides: applied to the preset of the moment at admission and
     * at spawn (sv_run_preset), kept by a restart of the policy */
    overrides ov;
    int64_t run_ctx; /* the context size it was admitted with (sv_copy_running); 0: not yet, or none set */
    char origin[16];
    const char *outcome; /* static: pending ready refused failed cancelled */
    sup_outcome res; /* how it ended (SUP_OK: ready, or not yet) */
    char *res_msg;
    int64_t start_at_ms;
    waiter *starts, *stops;
    bool queued, slot, admitting;
    bool reserved;
    need admitted;
    bool has_admitted;
    /* MemAvailable of the admission snapshot (taken while this start held
     * the load slot): a unified device's footprint is the drop from it */
    uint64_t adm_mem_available;
    bool adm_meminfo_ok;
    /* the result a start gets when its kill completes (failed, stopped) */
    sup_outcome pend; /* SUP_OK: none set */
    char *pend_msg;

    bool has_fp;
    footprint fp;
    int64_t load_ms;

    restart_history hist;
    int64_t next_restart_ms; /* wall; 0: none scheduled */
    int64_t attempt;

    bool has_exit;
    int exit_code, exit_sig;
    int64_t exit_ms;
    bool end_failed; /* the runner says the run ended failed (systemd gave up) */

    /* the kill in progress */
    bool killing;
    uint64_t kill_gen; /* bumped when a kill begins; the kill's snapshots carry it */
    int kill_phase; /* 0 SIGTERM sent, 1 SIGKILL sent, 2 verifying GPU memory */
    int kill_polls; /* polls since the last signal: picks the next delay */
    int64_t kill_t0, kill_deadline;
    pid_t seen[MAX_SEEN];
    size_t nseen;

    /* residency (sup_sleep.c): the sleep in flight, what it holds asleep, the wake */
    waiter *sleeps;           /* answered when the sleep in flight ends */
    struct sleep_op *sop;     /* the sleep or wake in flight; NULL: none */
    int zz_tier;              /* tier it sleeps at (tier); valid while sleeping */
    int64_t zz_since_ms;      /* wall clock: confirmed asleep */
    int64_t zz_ms;            /* the last sleep's request to confirmed */
    need zz_held;             /* what it holds asleep: measured or predicted */
    bool zz_measured;
    bool zz_unsupported;      /* the engine answered 404/405 to a sleep: this run stops instead */
    char zz_models[512];      /* router tier: the models loaded before the sleep, comma-separated */
    bool waking;              /* this start wakes a sleeper (set from SLEEPING + start) */
    need wake_delta;          /* a wake's reservation: its need less what it holds asleep */
    int64_t wake_t0;          /* mono: the wake was asked */
    int64_t zz_load_ms;       /* load_ms before the wake (the cold load's) */
    bool cold_after_stop;     /* a failed wake: start cold once the stop completes */
    char *wake_fail;          /* why the wake failed, for the cold start's message */
    bool st_woke, st_fell_back; /* how the last start ended (sup_svc_view start_woke ...) */

    /* slot save and restore (sup_slots.c) */
    struct slots_op *slots; /* the save or restore in flight; NULL: none */
    bool slots_saving;      /* it is the save a kill waits for */
    bool slots_save;        /* the kill being begun is a stop of a READY service */
    int64_t slots_t0;       /* mono: the pass began */
    int slots_n;            /* its slots */

    int model_ops; /* router-mode model loads/unloads running (sup_model_op_mark) */
};

/* A reservation not of a start (sup_reserve_extra). */
typedef struct sv_extra {
    uint64_t handle;
    char *id;
    need n;
    struct sv_extra *next;
} sv_extra;

struct sup {
    sup_env env;
    char *exec_helper, *proc_root, *run_dir;
    const config *cfg;
    runner *run;
    svc **svcs;
    size_t nsvcs;
    svc *q_head, *q_tail; /* waiting for the slot */
    svc *holder;
    uint64_t seq;
    int takes; /* hostmon takes in flight */
    sup_log_watch *watches;
    int watch_iter;
    bool shutting;
    bool hurry; /* sup_hurry: SIGKILL at once, no NVML wait */
    sup_guard_fn guard;
    void *guard_ud;
    sup_json_ext_fn json_ext;
    void *json_ext_ud;
    int shut_pending;
    bool shut_closing;
    int closing_handles;
    void (*shut_cb)(void *ud);
    void *shut_ud;
    /* reconcile */
    bool recon_timer;
    uv_timer_t t_recon;
    struct recon_item *recon;
    size_t nrecon;
    bool recon_ports_done; /* the port pass ran (after the run files' groups were gone) */
    bool left_behind;      /* reconcile found run files: a previous daemon did not stop its services */
    void (*recon_cb)(void *ud);
    void *recon_ud;
    /* the /proc scan of this loop turn, shared by the kill polls */
    uint64_t scan_now;
    bool scan_valid;
    proctree_group_info *scan;
    size_t nscan;
    /* reservations not of a start (sup_reserve_extra) */
    sv_extra *extras;
    uint64_t extra_seq;
};

/* ---- supervisor.c: small things, events, results, the lifecycle,
 * snapshots, shutdown ---- */

int64_t sv_wall_ms(void);
void sv_set_str(char **dst, const char *src);
const preset *sv_preset_of(const svc *v);
/* What v's start runs: its preset of now with the start's overrides
 * applied, into tmp when there are any (a shallow copy: use it within
 * this loop turn, a reload frees what it points into).  NULL with err
 * when v has no preset any more or its driver takes no such override. */
const preset *sv_run_preset(const svc *v, preset *tmp, char *err, size_t errlen);
/* Release what sv_run_preset put in tmp (its env), whatever it returned. */
void sv_run_preset_done(preset *tmp);
const settings *sv_set_of(const sup *s);
svc *sv_find(sup *s, const char *id);
svc *sv_add_svc(sup *s, const char *id);
void sv_ensure_timers(svc *v);
/* An event into the store and to env.on_event. */
void sv_emit(sup *s, const char *service, const char *kind, const char *from, const char *to, const char *reason,
             const char *data);
/* Answer each waiter of the list with r, and free the list. */
void sv_call_waiters(waiter *w, const sup_result *r);
/* The start ends with r: the ticket's outcome (static: "ready",
 * "refused", "failed", "cancelled"), the waiters, the slot. */
void sv_end_result(svc *v, const char *outcome, const sup_result *r);
/* The same with a result that has no detail. */
void sv_end_start(svc *v, const char *outcome, sup_outcome res, const char *msg);
/* The result a start gets when its kill completes. */
void sv_set_pending(svc *v, sup_outcome res, const char *msg);
/* Every change of state: the lifecycle table's step and its action.
 * False (and a warning) when the table has no such row. */
bool sv_feed(svc *v, svc_event ev, const char *words);
/* A snapshot from hostmon, then fn, unless v's generation (kill: its
 * kill_gen) moved on meanwhile. */
void sv_take_gen(svc *v, bool kill, void (*fn)(svc *v, const snapshot *snap));
void sv_take(svc *v, void (*fn)(svc *v, const snapshot *snap));
/* A new start (ticket) through the lifecycle, with ov (NULL: keep the
 * last start's, as a restart does). */
void sv_do_start(svc *v, const char *origin, const overrides *ov);
/* Shutting down and nothing left to wait for: close the timers, then
 * the shutdown's callback. */
void sv_maybe_shutdown_done(sup *s);

/* ---- sup_admit.c: the load slot, admission, the ledger ---- */

/* Whether ports_owner reads the real /proc (not a fixture). */
bool sv_ports_read_real_proc(const sup *s);
/* Two bind tests say nobody listens on host:port (false: ask ports_owner). */
bool sv_port_surely_free(const sup *s, const char *host, int port);
/* The slot is free: admit the next start in the queue. */
void sv_slot_next(sup *s);
/* Queue a start for the slot (a remote one is admitted at once). */
void sv_enqueue(svc *v);
void sv_release_reservation(svc *v);
/* sup_free: the extra reservations left. */
void sv_extras_free(sup *s);

/* ---- sup_spawn.c: run files, output, readiness, footprints, exits,
 * spawning, restarts ---- */

void sv_run_file_remove(svc *v);
/* The runner's callbacks (ud: the svc). */
void sv_on_output(const char *data, size_t len, void *ud);
void sv_on_exit_cb(int code, int sig, void *ud);
void sv_on_respawn_cb(pid_t pid, int64_t restarts, int code, int sig, void *ud);
void sv_stop_probe(svc *v);
/* A runner that owns restarts (systemd): the main process changed. */
void sv_loading_again(svc *v);
/* What a start runs with, copied from its preset and the settings. */
void sv_copy_running(svc *v, const preset *p, const settings *st);
void sv_open_log(svc *v, const settings *st);
void sv_spawn_it(svc *v, const preset *p);
/* The restart timer is cancelled: a start waiting on it is answered. */
void sv_cancel_restart(svc *v, sup_outcome res, const char *msg);
void sv_cancel_restart_for(svc *v, const char *by);
/* The restart policy's decision after an exit or a health failure. */
void sv_policy_restart(svc *v);

/* ---- sup_sleep.c: residency tiers (sleep, wake) ---- */

/* The tier v runs at now (its running preset, the last snapshot). */
int sv_tier_of(const svc *v);
/* The residency fields of a holding (sup_holding's tier, asleep, ...). */
void sv_holding_tiers(svc *v, sup_holding *h);
/* The admission of a wake (v->waking): the need minus what it holds asleep. */
void sv_wake_need(const svc *v, need *n);
/* A wake admitted: the tier's wake calls, then the readiness probe. */
void sv_wake_it(svc *v, const preset *p);
/* A start ends (sv_end_result): a wake's result fields and events; true
 * when a failed wake falls back: the caller keeps the waiters and starts
 * cold (sv_do_start). */
bool sv_wake_end(svc *v, const char *outcome, sup_result *r);
/* Shutdown: the tier call in flight cancelled, the sleep's waiters answered. */
void sv_sleep_cancel(svc *v);
/* v left ready (a stop, the watchdog, an exit) while a sleep of it was in
 * flight: its tier call cancelled, its waiters answered "was stopped while
 * it went to sleep" (fell_back) once the stop is done, at once otherwise. */
void sv_sleep_left(svc *v);
/* The service's view: tier, asleep, wake_ms. */
void sv_sleep_view(svc *v, sup_svc_view *o);

/* ---- sup_kill.c: killing and verify-freed ---- */

/* Begin the verified stop of v's group (nothing new if one is on its way). */
void sv_begin_kill(svc *v);
/* The kill's signals (sv_begin_kill's second half, after a slot save). */
void sv_kill_signal(svc *v);
/* The exec helper of a group being killed exited: poll now. */
void sv_kill_helper_exited(svc *v);
/* Drop the /proc scan shared by this loop turn's kill polls. */
void sv_scan_drop(sup *s);

/* ---- sup_slots.c: slot save and restore (preset slot_save) ---- */

/* Before the engine starts: <state_dir>/slots/<id>/ (0700). */
void sv_slots_dir(svc *v, const preset *p);
/* A kill begins: true when the slots' save runs first (it calls
 * sv_kill_signal when done). */
bool sv_slots_before_kill(svc *v);
/* Ready: restore the slots saved by the same config hash (async). */
void sv_slots_after_ready(svc *v);
/* Shutdown: the save or restore in flight cancelled (a kill goes on). */
void sv_slots_cancel(svc *v);

/* ---- sup_reconcile.c: what a previous daemon left, adoption ---- */

/* SIGKILL every group the reconcile still waits for (shutdown, hurry). */
void sv_recon_kill_now(sup *s);
/* Free the reconcile's items. */
void sv_recon_release(sup *s);
/* The systemd runner reconnected (ud: the sup): adopt its units again. */
void sv_bus_back(void *ud);

#endif
