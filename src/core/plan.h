/* plan.h - a mode switch as a plan: from the running set and the target
 * mode, which services to stop, which to keep (same config hash: left
 * untouched) and which to start, in what order, with the memory predicted
 * after each step and the gate's verdict for each start on those
 * predicted figures.  Pure: the daemon gathers the inputs (a snapshot,
 * what each running service holds, each target's need) and carries the
 * plan out (src/daemon/switch.c); `mode switch --dry-run` prints it.
 *
 * Order: every stop first (in the reverse of the running order), then the
 * starts in the mode's order, except that presets with start_first come
 * before the others (engines such as vLLM that reserve a fixed fraction of
 * the memory they find at start-up).  A vLLM service that is not started
 * first gets a warning.
 *
 * Prediction: a stopped service gives back what it holds (per device and
 * on the host; on a unified device the GPU bytes come back as
 * MemAvailable); a planned start takes its need, counted like a
 * reservation for the starts after it.  Reservations of starts in flight
 * outside the switch are counted too.  A plan with any start the gate
 * refuses is not ok: nothing may be stopped for it.  Every start is judged
 * (a refused one still counted for those after it, as if the whole mode
 * were brought up), so --dry-run shows each verdict.  The snapshot is
 * never written: the prediction works on a private copy.  Fragmentation
 * (contig) and PSI are taken as measured: how freed memory comes back
 * is not predicted, and the executor re-measures before each start.  So
 * when the plan stops something, a start refused only on one of those is
 * not a refusal of the plan: the step is `deferred` (judged on the other
 * rules) and re-checked after the stops.  Without stops they refuse.
 *
 * Keep needs both hashes known and equal and a service that is not
 * marked no_keep: a running service whose hash is NULL (unknown) is
 * stopped and started again like a changed one, and so is one marked
 * no_keep (unhealthy, stopping, waiting for a restart).
 *
 * Tiers (core/tier.h, docs/modes.md).  A running service that leaves (not
 * in the target at all; one in it with another hash is stopped, its
 * record starts again) sleeps instead of stopping when its tier is not
 * stop, it is not no_keep and tier_sleep_cheaper(wake_ms, load_ms); the
 * sleep moves it from `held` to `asleep_need` in the prediction (l1 takes
 * host memory: that increase passes the gate first, on the figures after
 * the stops, and a refusal plans a stop instead, as the supervisor does).
 * A service asleep now that the target does not name stays asleep (no
 * step; plan.asleep).  One asleep with the target's hash (not no_keep) is
 * woken (PLAN_WAKE, in the start's place): the gate judges the target's
 * need minus what it holds asleep (per figure, floored at 0).  An asleep
 * one in the target with another hash is stopped and started.  When the
 * plan does not fit, sleepers (planned sleeps and those staying asleep)
 * are turned into stops one at a time, the least benefit (load_ms -
 * wake_ms; a load unknown counts 0) first, ties the later running one,
 * until it fits or none is left; the plan is ok iff it fits then.
 *
 * Expected times (ms; -1 unknown): a stop 0 (not predicted), a sleep its
 * measured sleep_ms else PLAN_SLEEP_PRIOR_MS, a wake its wake_ms, a start
 * the target's expect_ms (its measured load).  plan.expect_ms sums the
 * known ones; expect_partial says some step's time was unknown. */
#ifndef GPUMOD_PLAN_H
#define GPUMOD_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/gate.h"
#include "core/tier.h"
#include "host/types.h"

#define PLAN_MAX 64 /* services in a plan */

typedef struct plan_running {
    const char *id;   /* borrowed */
    const char *hash; /* the config hash it was started with */
    need held;        /* what it holds now (measured footprint, else its admitted need) */
    bool no_keep;     /* never kept even with the same hash: unhealthy, stopping, a failed one still
                         being killed, down with a restart pending; stopped (its restart cancelled)
                         and, when in the target, started again */
    /* tiers (all zero: a plain service that can only stop) */
    tier tier;        /* tier_for its preset on this host; TIER_STOP never sleeps */
    bool asleep;      /* sleeping now: held is what it holds asleep */
    need asleep_need; /* what it would hold asleep (measured, else tier_asleep_need) */
    int64_t wake_ms;  /* expected wake: measured, else tier_wake_prior_ms; -1 unknown */
    int64_t load_ms;  /* its measured cold load for this hash; -1 unknown */
    int64_t sleep_ms; /* its measured sleep; -1 unknown (PLAN_SLEEP_PRIOR_MS expected) */
} plan_running;

#define PLAN_SLEEP_PRIOR_MS 1000 /* a sleep's expected time when none was measured */

typedef struct plan_target {
    const char *id;   /* borrowed; in the mode's order */
    const char *hash; /* the configured config hash */
    need need;        /* service_need */
    bool start_first;
    bool vllm;         /* driver vllm (for the warning) */
    bool remote;       /* no process, no memory: always "start" without the gate */
    int64_t expect_ms; /* a cold start's expected time (its measured load); -1 unknown */
} plan_target;

typedef struct plan_input {
    const snapshot *snap;
    const plan_running *running;
    size_t nrunning;
    const plan_target *target;
    size_t ntarget;
    const reservation *res; /* starts in flight outside this switch (at most PLAN_MAX) */
    size_t nres;
    const gate_policy *policy;
} plan_input;

typedef enum { PLAN_STOP, PLAN_START, PLAN_SLEEP, PLAN_WAKE } plan_step_kind;
extern const char *const plan_step_names[]; /* "stop" "start" "sleep" "wake" */

/* What the gate sees: the predicted figures and, apart, what is reserved
 * on them (on a unified device the GPU bytes, reserved or freed, are
 * MemAvailable's, and its gpu_free_bytes is MemAvailable as in a snapshot). */
typedef struct plan_mem {
    uint64_t host_available_bytes;          /* predicted MemAvailable */
    uint64_t reserved_host_bytes;           /* host bytes reserved by planned starts and others */
    uint64_t gpu_free_bytes[HOST_MAX_GPUS]; /* predicted free, by position in snap->gpus */
    uint64_t
        reserved_bytes[HOST_MAX_GPUS]; /* reserved by planned starts and others, same positions */
} plan_mem;

typedef struct plan_step {
    plan_step_kind kind;
    const char *id;    /* borrowed from the input */
    tier tier;         /* PLAN_SLEEP / PLAN_WAKE: the running record's tier; else TIER_STOP */
    int64_t expect_ms; /* expected time (see above); -1 unknown */
    char note[200];    /* why a leaving service stops rather than sleeps, "" when nothing to say */
    verdict v;         /* PLAN_START / PLAN_WAKE: the gate on the predicted figures before it
                          (a wake on the need minus what it holds asleep; a remote start: ok, no
                          gate); PLAN_SLEEP: the gate on its host increase (ok: not refused);
                          PLAN_STOP: ok, nothing else */
    bool deferred;     /* PLAN_START: the gate refused on host.contig or host.psi as measured
                          while the plan stops something; those figures are the leaving services'
                          doing and are not predicted, so the start passes here (v.ok, judged on
                          the other rules) and is re-checked after the stops (verify-freed and the
                          supervisor's gate); deferred_why is the measured refusal */
    char deferred_why[256];
    char deferred_binding[48];
    plan_mem after; /* predicted after this step (a start counted as its need) */
} plan_step;

typedef struct plan {
    bool ok;                    /* every start passes */
    const char *refused;        /* the first start refused (borrowed), NULL when ok */
    char reason[256];           /* its verdict's reason, "" when ok */
    const char *keep[PLAN_MAX]; /* running, in the target with the same hash (mode's order) */
    size_t nkeep;
    plan_step steps[2 * PLAN_MAX]; /* stops, sleeps, then starts and wakes */
    const char *asleep[PLAN_MAX];  /* asleep now, not in the target: left asleep (no step) */
    size_t nasleep;
    int64_t expect_ms;   /* the steps' expected times summed (the known ones) */
    bool expect_partial; /* some step's expected time is unknown */
    size_t nsteps;
    plan_mem before;       /* the snapshot's figures with the inputs' reservations */
    char warnings[4][160]; /* "vLLM service 'lane' is not started first: ..." */
    size_t nwarnings;
} plan;

/* 0, or -1 with err when the input is unusable (a NULL pointer where one
 * is needed, a NULL id, more than PLAN_MAX running services, targets or
 * reservations, an id twice in the target or twice in the running set).
 * A refused plan is 0 with out->ok false.  out is always filled (zeroed
 * and not ok on -1); everything it points to is borrowed from in. */
int plan_make(const plan_input *in, plan *out, char *err, size_t errlen);

/* a - b per figure, floored at 0, on a's devices (a wake's need: the
 * target's need minus what it holds asleep). */
void plan_need_minus(const need *a, const need *b, need *out);

/* One mode that could make room for a service, as its plan judged it
 * (on-demand activation picks among them: docs/router.md). */
typedef struct plan_choice {
    const char *mode;    /* borrowed */
    bool ok;             /* the plan fits */
    size_t nstops;       /* running services it takes off (stops and sleeps) */
    size_t nsleeps;      /* of those, put to sleep */
    size_t nwakes;       /* sleepers it wakes (a start that costs a wake, not a load) */
    int64_t expect_ms;   /* the plan's expected time (-1 unknown) */
    size_t nservices;    /* services in the mode */
    int64_t declared_mb; /* the mode's declared memory (GPU and host), 0 when none is declared */
    char why[320];       /* not ok: what refused it ("start of 'big' refused: ...") */
} plan_choice;

/* Sort best first: a plan that fits, then the fewest stops (the least
 * disruption to what runs), then the most wakes (a sleeper brought back
 * costs less than a cold start), then the smallest mode (fewest services, then
 * declared memory), then the mode id, so the order never depends on the
 * order of the files. */
void plan_rank(plan_choice *c, size_t n);

#endif
