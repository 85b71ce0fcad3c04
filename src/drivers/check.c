/* check.c - the checks of `config check` that look at the machine and
 * at what the drivers build: every preset's argv (a flag repeated after
 * gpumod's own), model files and directories, driver binaries in PATH,
 * and every flag against the installed binary's --help (check.h). */
#include "drivers/check.h"
#include "drivers/driver.h"
#include "drivers/flags.h"
#include "util/buf.h"
#include "util/slurp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

void drivers_lint(config *cfg)
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

void drivers_check_files(config *cfg)
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
