/* vcheck.c (tune) - the checks before a variant starts (vcheck.h). */
#include "tune/vcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"
#include "config/overrides.h"
#include "util/buf.h"

void vcheck_init(vcheck *vc, const char *service, const cJSON *status)
{
    memset(vc, 0, sizeof *vc);
    config_paths paths = {0};
    config_load_preset(&vc->cfg, &paths, service);
    vc->p = config_preset(&vc->cfg, service);
    const cJSON *g = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(status, "memory"), "gpus"), 0);
    const char *cc = jstr(g, "compute_capability");
    int ma = 0, mi = 0;
    if (g) {
        vc->host_known = true;
        vc->host.unified = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "unified"));
        if (cc && sscanf(cc, "%d.%d", &ma, &mi) == 2) {
            vc->host.cc_major = ma;
            vc->host.cc_minor = mi;
        }
    }
}

void vcheck_release(vcheck *vc)
{
    config_release(&vc->cfg);
    vc->p = NULL;
}

/* SKIPPED for why; a warn rule's text already there stays after it */
static bool skip(tune_row *row, char *why)
{
    row->outcome = TO_SKIPPED;
    if (row->reason) {
        char *t = xasprintf("%s; %s", why, row->reason);
        free(why);
        why = t;
    }
    free(row->reason);
    row->reason = why;
    return false;
}

/* 1 and 2: false with the row SKIPPED; warn rules into the row */
static bool local_checks(vcheck *vc, const char *ov_json, tune_row *row)
{
    if (!vc->p) return true;
    cJSON *j = cJSON_Parse(ov_json);
    overrides ov = {0};
    char err[512];
    bool ok = true;
    preset applied;
    if (cJSON_IsObject(j) && overrides_parse(j, vc->p->driver, &ov, err, sizeof err) != 0) {
        ok = skip(row, xasprintf("the overrides: %s", err));
    } else if (overrides_apply(vc->p, &ov, &applied, err, sizeof err) != 0) {
        ok = skip(row, xasprintf("the overrides: %s", err));
        overrides_applied_release(&applied);
    } else {
        size_t max = rules_count(); /* every rule can fire at most once */
        rule_hit *hits = xcalloc(max, sizeof *hits);
        size_t n = rules_check(&applied, vc->host_known ? &vc->host : NULL, hits, max);
        for (size_t i = 0; i < n && ok; i++) {
            if (hits[i].severity == RULE_REFUSE) {
                ok = skip(row, xasprintf("rule %s: %s", hits[i].id, hits[i].text));
            } else {
                char *t = xasprintf("%s%srule %s (warn): %s", row->reason ? row->reason : "",
                                    row->reason ? "; " : "", hits[i].id, hits[i].text);
                free(row->reason);
                row->reason = t;
                row->flagged = true;
            }
        }
        free(hits);
        overrides_applied_release(&applied);
    }
    overrides_release(&ov);
    cJSON_Delete(j);
    return ok;
}

bool vcheck_variant(vcheck *vc, tlink *l, const tune_space *s, const tune_variant *v, tune_row *row)
{
    buf ov = BUF_INIT;
    variant_overrides_json(s, v, &ov);
    if (!local_checks(vc, ov.p, row)) {
        buf_release(&ov);
        return false;
    }
    char why[1024];
    int ok = tlink_preflight(l, ov.p, why, sizeof why);
    buf_release(&ov);
    if (ok == 1) return true;
    return skip(row, xasprintf("%s%s", ok == 0 ? "the gate: " : "", why));
}
