/* sup_slots.c - the supervisor's use of daemon/slots.h (preset
 * slot_save, llama.cpp single-model engines):
 *
 *   spawn    <state_dir>/slots/<id>/ made (0700) before the engine starts
 *   stop     a stop asked of a READY service (EV_STOP) saves every slot
 *            first, on the loop, each request under SLOTS_CALL_MS; then
 *            the kill's signals go (stop_timeout counts from then).  Not
 *            at shutdown, not hurried, not for a watchdog's or a failed
 *            start's kill.
 *   ready    once READY (a start's, or a restart's), the slots saved by
 *            the same config hash are restored, on the loop, without
 *            delaying the ready: llama-server queues a restore behind a
 *            slot's running request.
 *
 * Router mode (models_dir, no model) is left out: its slot calls name a
 * model, and each model runs in its own child; a log line says so. */
#include "daemon/sup_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/slots.h"
#include "util/clock.h"
#include "util/log.h"

/* v's spec when its running preset saves slots (dir: the caller frees). */
static bool spec_of(svc *v, slots_spec *sp, char **dir)
{
    const settings *st = sv_set_of(v->s);
    preset tmp;
    char err[256];
    const preset *p = sv_run_preset(v, &tmp, err, sizeof err);
    bool on = p && p->slot_save && p->driver == DRV_LLAMACPP && st && st->state_dir &&
              v->run_hash[0] && strcmp(v->run_hash, RUN_HASH_OLDER) != 0;
    bool router = on && p->llama.models_dir && !p->model_path;
    int parallel = on && p->llama.parallel > 0 ? (int)p->llama.parallel : 1;
    sv_run_preset_done(&tmp);
    if (router) {
        log_info("slots: '%s': slot_save is not acted on in router mode (each model's slots "
                 "would need its own calls)",
                 v->id);
        return false;
    }
    if (!on) return false;
    *dir = xasprintf("%s/slots/%s", st->state_dir, v->id);
    *sp = (slots_spec){.service = v->id,
                       .host = v->host,
                       .port = v->port,
                       .dir = *dir,
                       .hash = v->run_hash,
                       .parallel = parallel,
                       .max_mb = st->supervisor.slots_max_mb};
    return true;
}

void sv_slots_dir(svc *v, const preset *p)
{
    const settings *st = sv_set_of(v->s);
    if (!p->slot_save || p->driver != DRV_LLAMACPP || !st || !st->state_dir) return;
    char err[512];
    if (slots_make_dir(st->state_dir, v->id, err, sizeof err) != 0)
        log_warn("slots: '%s': %s", v->id, err);
}

/* A `slots` event for a pass that called the engine (none for a pass with
 * nothing to do: the log says why). */
static void slots_event(svc *v, bool save, int done, int failed)
{
    if (done + failed == 0) return;
    int64_t ms = clock_mono_ms() - v->slots_t0;
    char words[160], data[200];
    snprintf(words, sizeof words, "%s %d of %d slot(s) in %lld ms%s", save ? "saved" : "restored",
             done, v->slots_n, (long long)ms, failed ? " (failures in the daemon's log)" : "");
    snprintf(data, sizeof data,
             "{\"action\":\"%s\",\"slots\":%d,\"done\":%d,\"failed\":%d,\"ms\":%lld}",
             save ? "save" : "restore", v->slots_n, done, failed, (long long)ms);
    sv_emit(v->s, v->id, "slots", NULL, NULL, words, data);
}

static void saved(int done, int failed, void *ud)
{
    svc *v = ud;
    v->slots = NULL;
    slots_event(v, true, done, failed);
    v->slots_saving = false;
    /* still the kill that waited (a hurry signals on its own, a kill_done ends it) */
    if (v->killing && v->kill_phase == 0 && v->timers && !uv_is_active((uv_handle_t *)&v->t_kill))
        sv_kill_signal(v);
}

bool sv_slots_before_kill(svc *v)
{
    bool want = v->slots_save;
    v->slots_save = false;
    if (v->slots) { /* a restore still in flight: the engine goes */
        slots_cancel(v->slots);
        v->slots = NULL;
    }
    if (!want || v->s->shutting || v->s->hurry || v->pgid <= 0) return false;
    slots_spec sp;
    char *dir = NULL;
    if (!spec_of(v, &sp, &dir)) return false;
    v->slots_saving = true;
    v->slots_t0 = clock_mono_ms();
    v->slots_n = sp.parallel;
    v->slots = slots_save(v->s->env.loop, &sp, saved, v);
    free(dir);
    return true;
}

static void restored(int done, int failed, void *ud)
{
    svc *v = ud;
    v->slots = NULL;
    slots_event(v, false, done, failed);
}

void sv_slots_after_ready(svc *v)
{
    if (v->slots) return;
    slots_spec sp;
    char *dir = NULL;
    if (!spec_of(v, &sp, &dir)) return;
    v->slots_saving = false;
    v->slots_t0 = clock_mono_ms();
    v->slots_n = sp.parallel;
    v->slots = slots_restore(v->s->env.loop, &sp, restored, v);
    free(dir);
}

void sv_slots_cancel(svc *v)
{
    if (!v->slots) return;
    slots_cancel(v->slots);
    v->slots = NULL;
    if (v->slots_saving) saved(0, 0, v); /* the kill goes on now */
}
