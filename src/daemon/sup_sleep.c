/* sup_sleep.c - residency tiers (supervisor.h sup_sleep_svc, and the wake
 * of a start on a sleeping record): the tier a service runs at, the sleep
 * (the gate for l1, the engine's calls through daemon/tiercall.c, the
 * confirmation, the measured asleep footprint), the wake and its fallback
 * (a verified stop, then a cold start), and the residency fields of
 * sup_holdings. */
#include "daemon/sup_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/preset.h"
#include "drivers/driver.h"
#include "util/log.h"

static bool snap_unified(const snapshot *snap)
{
    for (size_t g = 0; snap && g < snap->ngpus; g++)
        if (snap->gpus[g].unified) return true;
    return false;
}

int sv_tier_of(const svc *v)
{
    const preset *p = sv_preset_of(v);
    if (!p) return TIER_STOP;
    const snapshot *snap = hostmon_last(v->s->env.hm, NULL);
    return tier_for(p->sleep, p->driver, snap_unified(snap), sv_set_of(v->s)->memory.unified_sleep);
}

/* What v holds (or will hold) awake: its footprint of the hash it runs, else its admission. */
static void awake_need(const svc *v, need *out)
{
    memset(out, 0, sizeof *out);
    if (v->has_fp && v->run_hash[0] && !strcmp(v->fp.hash, v->run_hash)) {
        snprintf(out->source, sizeof out->source, "measured");
        out->host_bytes = v->fp.host_bytes;
        out->ngpu = v->fp.ngpu < HOST_MAX_GPUS ? v->fp.ngpu : HOST_MAX_GPUS;
        for (size_t g = 0; g < out->ngpu; g++) {
            out->gpu[g].index = v->fp.gpu[g].index;
            out->gpu[g].bytes = v->fp.gpu[g].bytes;
        }
    } else if (v->has_admitted) {
        *out = v->admitted;
    }
}

void sv_holding_tiers(svc *v, sup_holding *h)
{
    const snapshot *snap = hostmon_last(v->s->env.hm, NULL);
    bool uni = snap_unified(snap);
    h->tier = v->state == SVC_SLEEPING ? (tier)v->zz_tier : (tier)sv_tier_of(v);
    awake_need(v, &h->awake_need);
    h->asleep = v->state == SVC_SLEEPING;
    if (h->asleep) {
        h->asleep_need = v->zz_held;
        h->asleep_measured = v->zz_measured;
    } else {
        tier_asleep_need(h->tier, &h->awake_need, 0, uni, &h->asleep_need);
    }
    h->wake_ms = tier_wake_prior_ms(h->tier, &h->awake_need, 0, v->load_ms > 0 ? v->load_ms : -1);
    h->wake_measured = false;
}

void sv_wake_need(const svc *v, need *n)
{
    (void)v;
    (void)n;
}

void sv_wake_it(svc *v, const preset *p)
{
    (void)v;
    (void)p;
}

bool sv_wake_cold_start(svc *v)
{
    (void)v;
    return false;
}

void sup_sleep_svc(sup *s, sup_svc *v, const char *origin, sup_cb cb, void *ud)
{
    /* first version: every tier stops */
    (void)origin;
    sup_stop_svc(s, v, "sleep", cb, ud);
}

void sup_sleep(sup *s, const char *id, const char *origin, sup_cb cb, void *ud)
{
    sup_svc *v = sup_lookup(s, id);
    if (!v) {
        char m[300];
        snprintf(m, sizeof m, "no service '%s' is configured", id);
        sup_result r = {.outcome = SUP_NOT_FOUND, .message = m};
        if (cb) cb(&r, ud);
        return;
    }
    sup_sleep_svc(s, v, origin, cb, ud);
}
