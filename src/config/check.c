/* check.c - cross-file validation (the checks that need more than one
 * file; drivers/check.c has those that look at the machine).
 *
 * Cross-file problems are reported at the second occurrence, naming the
 * first, so the user edits the file that introduced the conflict. */
#include "config/check.h"
#include "config/schema.h"
#include "util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *where(srcpos p, char *tmp, size_t n)
{
    if (p.line)
        snprintf(tmp, n, "%s:%d", p.file ? p.file : "?", p.line);
    else
        snprintf(tmp, n, "%s", p.file ? p.file : "?");
    return tmp;
}

static srcpos or_pos(srcpos a, srcpos b)
{
    return a.line ? a : b;
}

static void check_names(config *cfg)
{
    char w[512];
    for (size_t i = 0; i < cfg->n_presets; i++) {
        preset *p = &cfg->presets[i];
        for (size_t j = 0; j < i; j++) {
            preset *q = &cfg->presets[j];
            if (!strcmp(p->id, q->id))
                diags_add(&cfg->diags, DIAG_ERROR, or_pos(p->id_pos, p->pos),
                          "preset id '%s' is also defined at %s", p->id, where(or_pos(q->id_pos, q->pos), w, sizeof w));
        }
        for (size_t a = 0; a < p->aliases.n; a++) {
            const char *al = p->aliases.v[a];
            for (size_t j = 0; j < cfg->n_presets; j++) {
                preset *q = &cfg->presets[j];
                if (j != i && !strcmp(al, q->id))
                    diags_add(&cfg->diags, DIAG_ERROR, or_pos(p->aliases_pos, p->pos),
                              "preset '%s': alias '%s' is the id of preset '%s' (%s)", p->id, al, q->id,
                              where(or_pos(q->id_pos, q->pos), w, sizeof w));
                if (j >= i) continue;
                for (size_t b = 0; b < q->aliases.n; b++)
                    if (!strcmp(al, q->aliases.v[b]))
                        diags_add(&cfg->diags, DIAG_ERROR, or_pos(p->aliases_pos, p->pos),
                                  "preset '%s': alias '%s' is also an alias of preset '%s' (%s)", p->id, al, q->id,
                                  where(or_pos(q->aliases_pos, q->pos), w, sizeof w));
            }
            if (!strcmp(al, p->id))
                diags_add(&cfg->diags, DIAG_WARNING, or_pos(p->aliases_pos, p->pos),
                          "preset '%s': alias '%s' repeats the id", p->id, al);
            for (size_t b = 0; b < a; b++)
                if (!strcmp(al, p->aliases.v[b]))
                    diags_add(&cfg->diags, DIAG_ERROR, or_pos(p->aliases_pos, p->pos),
                              "preset '%s': alias '%s' is listed twice", p->id, al);
        }
    }
}

static void check_modes(config *cfg)
{
    char w[512];
    const char **ids = xcalloc(cfg->n_presets + 1, sizeof *ids);
    for (size_t i = 0; i < cfg->n_presets; i++) ids[i] = cfg->presets[i].id;

    for (size_t i = 0; i < cfg->n_modes; i++) {
        mode *m = &cfg->modes[i];
        for (size_t j = 0; j < i; j++)
            if (!strcmp(m->id, cfg->modes[j].id))
                diags_add(&cfg->diags, DIAG_ERROR, m->pos, "mode id '%s' is also defined at %s", m->id,
                          where(cfg->modes[j].pos, w, sizeof w));
        for (size_t s = 0; s < m->services.n; s++) {
            const char *sid = m->services.v[s];
            srcpos at = m->service_pos ? or_pos(m->service_pos[s], m->pos) : m->pos;
            const preset *p = config_preset(cfg, sid);
            if (!p) {
                const char *dym = schema_did_you_mean(sid, ids, cfg->n_presets);
                diags_add(&cfg->diags, DIAG_ERROR, at, "mode '%s': unknown preset '%s'%s%s%s", m->id, sid,
                          dym ? " (did you mean '" : "", dym ? dym : "", dym ? "'?)" : "");
                continue;
            }
            for (size_t t = 0; t < s; t++) {
                if (!strcmp(sid, m->services.v[t])) {
                    diags_add(&cfg->diags, DIAG_ERROR, at, "mode '%s': preset '%s' is listed twice", m->id, sid);
                    continue;
                }
                const preset *q = config_preset(cfg, m->services.v[t]);
                if (q && p->port && p->port == q->port) {
                    char w2[512];
                    diags_add(&cfg->diags, DIAG_ERROR, at,
                              "mode '%s': '%s' and '%s' both use port %lld (%s, %s)", m->id, q->id, p->id,
                              (long long)p->port, where(or_pos(q->port_pos, q->pos), w, sizeof w),
                              where(or_pos(p->port_pos, p->pos), w2, sizeof w2));
                }
            }
        }
    }
    free(ids);

    const char *sm = cfg->set.sw.startup_mode;
    if (sm && strcmp(sm, "none") && strcmp(sm, "last") && !config_mode(cfg, sm))
        diags_add(&cfg->diags, DIAG_ERROR, (srcpos){cfg->settings_file, 0, 0},
                  "switch.startup_mode: unknown mode '%s' (expected none, last or a mode id)", sm);
    const char *def = cfg->set.router.default_service;
    if (def && !config_preset(cfg, def))
        diags_add(&cfg->diags, DIAG_ERROR, (srcpos){cfg->settings_file, 0, 0},
                  "router.default: unknown service '%s'", def);
}

void config_check_cross(config *cfg)
{
    check_names(cfg);
    check_modes(cfg);
}
