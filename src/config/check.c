/* check.c - cross-file validation and the machine checks of `config check`.
 *
 * Cross-file problems are reported at the second occurrence, naming the
 * first, so the user edits the file that introduced the conflict. */
#include "config/check.h"
#include "util/slurp.h"
#include "config/schema.h"
#include "drivers/driver.h"
#include "drivers/flags.h"
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

/* Spellings of one flag.  A flag that extra_args or args repeat after
 * gpumod already passed it takes the engine's last value, which the
 * estimate then does not know about: worth a warning, common in presets
 * written for the Python project ("--parallel 5" in extra_args). */
static const char *const flag_groups[][4] = {
    {"-c", "--ctx-size"}, {"-np", "--parallel"}, {"-t", "--threads"},
    {"-ngl", "--gpu-layers", "--n-gpu-layers"}, {"-fa", "--flash-attn"}, {"-m", "--model"},
    {"--host"}, {"--port"}, {"-a", "--alias"}, {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"},
    {"-ncmoe", "--n-cpu-moe"}, {"-fit", "--fit"}, {"-md", "--model-draft", "--spec-draft-model"},
    {"--models-dir"}, {"--models-max"}, {"--max-model-len"}, {"--max-num-seqs"},
    {"--gpu-memory-utilization"}, {"-tp", "--tensor-parallel-size"}, {"--served-model-name"},
    {"--workers"}, {"--kv-cache-dtype"}, {"--dtype"},
};

static int flag_group(const char *word)
{
    char name[64];
    size_t n = strcspn(word, "=");
    if (n >= sizeof name) return -1;
    memcpy(name, word, n);
    name[n] = '\0';
    for (size_t g = 0; g < sizeof flag_groups / sizeof *flag_groups; g++)
        for (size_t k = 0; k < 4 && flag_groups[g][k]; k++)
            if (!strcmp(flag_groups[g][k], name)) return (int)g;
    return -1;
}

static void check_repeated_flags(config *cfg, const preset *p)
{
    if (p->has_errors) return;
    launch l = LAUNCH_INIT;
    char err[512];
    if (driver_launch(p, &cfg->set, &l, err, sizeof err)) { /* what the loader cannot see: err names the preset */
        diags_add(&cfg->diags, DIAG_ERROR, p->pos, "%s", err);
        return;
    }
    if (p->driver == DRV_DOCKER || p->driver == DRV_COMMAND || p->driver == DRV_REMOTE) {
        launch_release(&l);
        return;
    }
    size_t own = l.argv.n - p->extra_args.n - p->args.n; /* the driver's words come first */
    for (size_t i = own; i < l.argv.n; i++) {
        int g = flag_group(l.argv.v[i]);
        if (g < 0) continue;
        for (size_t j = 1; j < own; j++) {
            if (flag_group(l.argv.v[j]) != g) continue;
            const char *val = strchr(l.argv.v[i], '=') ? strchr(l.argv.v[i], '=') + 1
                              : i + 1 < l.argv.n ? l.argv.v[i + 1] : "";
            diags_add(&cfg->diags, DIAG_WARNING, p->pos,
                      "preset '%s': %s repeats '%s', which gpumod already passes as '%s %s'; the engine takes the "
                      "last value ('%s') and gpumod's estimate does not: set it with the preset's own key instead",
                      p->id, i < own + p->extra_args.n ? "unit_vars.extra_args" : "args", l.argv.v[i], l.argv.v[j],
                      j + 1 < own ? l.argv.v[j + 1] : "", val);
            break;
        }
    }
    launch_release(&l);
}

void config_check_cross(config *cfg)
{
    check_names(cfg);
    check_modes(cfg);
}

void config_lint(config *cfg)
{
    for (size_t i = 0; i < cfg->n_presets; i++) check_repeated_flags(cfg, &cfg->presets[i]);
}

char *find_program(const char *name)
{
    if (!name || !*name) return NULL;
    if (strchr(name, '/')) return access(name, X_OK) == 0 ? realpath(name, NULL) : NULL;
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    const char *p = path;
    while (*p) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        char *cand = xasprintf("%.*s/%s", (int)len, len ? p : ".", name);
        struct stat st;
        if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0) return cand;
        free(cand);
        if (!colon) break;
        p = colon + 1;
    }
    return NULL;
}

static void need_path(config *cfg, const preset *p, const char *what, const char *path, bool dir)
{
    struct stat st;
    if (!path) return;
    if (stat(path, &st) != 0)
        diags_add(&cfg->diags, DIAG_ERROR, p->pos, "preset '%s': %s '%s' does not exist", p->id, what, path);
    else if (dir && !S_ISDIR(st.st_mode))
        diags_add(&cfg->diags, DIAG_ERROR, p->pos, "preset '%s': %s '%s' is not a directory", p->id, what, path);
    else if (!dir && S_ISDIR(st.st_mode))
        diags_add(&cfg->diags, DIAG_ERROR, p->pos, "preset '%s': %s '%s' is a directory, expected a file", p->id,
                  what, path);
    else if (!dir && !S_ISREG(st.st_mode)) /* a FIFO would block whoever opens it */
        diags_add(&cfg->diags, DIAG_ERROR, p->pos, "preset '%s': %s '%s' is %s, expected a regular file", p->id,
                  what, path, slurp_kind(st.st_mode));
}

static void check_flags(config *cfg, const preset *p, const char *binary)
{
    const char *const *help = driver_help_args(p->driver);
    if (!help) return;
    launch l = LAUNCH_INIT;
    char err[512];
    if (driver_launch(p, &cfg->set, &l, err, sizeof err)) return; /* reported by config_check_cross */
    char *cache = xasprintf("%s/cache", cfg->set.state_dir);
    flags_query q = {binary, help, cache, 0};
    strv unknown = STRV_INIT, removed = STRV_INIT;
    if (flags_check(&q, &l.argv, &unknown, &removed, err, sizeof err)) {
        diags_add(&cfg->diags, DIAG_WARNING, p->pos, "preset '%s': %s", p->id, err);
    } else {
        for (size_t i = 0; i < removed.n; i++)
            diags_add(&cfg->diags, DIAG_ERROR, p->pos, "preset '%s': flag '%s' has been removed from %s (its --help says so)",
                      p->id, removed.v[i], binary);
        for (size_t i = 0; i < unknown.n; i++)
            diags_add(&cfg->diags, DIAG_ERROR, p->pos, "preset '%s': flag '%s' is not known to %s (not in its --help)",
                      p->id, unknown.v[i], binary);
    }
    strv_release(&unknown);
    strv_release(&removed);
    free(cache);
    launch_release(&l);
}

void config_check_files(config *cfg)
{
    for (size_t i = 0; i < cfg->n_presets; i++) {
        const preset *p = &cfg->presets[i];
        if (p->driver == DRV_LLAMACPP || p->driver == DRV_VLLM) {
            /* vLLM's MODEL may be a hub id: only a path-looking one is checked */
            if (p->driver == DRV_LLAMACPP || (p->model_path && p->model_path[0] == '/'))
                need_path(cfg, p, "model_path", p->model_path, false);
        }
        if (p->driver == DRV_LLAMACPP) {
            need_path(cfg, p, "models_dir", p->llama.models_dir, true);
            need_path(cfg, p, "model_draft", p->llama.model_draft, false);
            need_path(cfg, p, "models_preset", p->llama.models_preset, false);
        }
        if (p->driver == DRV_FASTAPI) need_path(cfg, p, "working_dir", p->fastapi.working_dir, true);
        const char *bin = NULL;
        if (p->driver == DRV_COMMAND)
            bin = p->command.n ? p->command.v[0] : NULL;
        else if (p->driver != DRV_REMOTE)
            bin = cfg->set.driver_binary[p->driver];
        if (!bin) continue;
        char *abs = find_program(bin);
        if (!abs) {
            diags_add(&cfg->diags, DIAG_ERROR, p->pos, "preset '%s': %s binary '%s' %s", p->id,
                      driver_names[p->driver], bin,
                      strchr(bin, '/') ? "is not an executable file" : "is not found in PATH");
            continue;
        }
        if (!p->has_errors) check_flags(cfg, p, abs);
        free(abs);
    }
}
