/* config.c - `gpumod config check | show | schema | rules`.
 *
 * check prints every diagnostic as file:line:col like a compiler, so
 * editors jump to it; show prints the configuration as gpumod resolved it
 * (defaults filled, argv built, secrets redacted), which is what would
 * run; schema prints the reference tables that docs/configuration.md
 * embeds, from the same tables that parse. */
#include "cli/cli.h"
#include "cli/hostview.h"
#include "core/rules.h"
#include "daemon/need.h"
#include "drivers/check.h"
#include "config/mode.h"
#include "config/overrides.h"
#include "config/preset.h"
#include "config/schema.h"
#include "config/settings.h"
#include "drivers/driver.h"
#include "util/buf.h"
#include "util/redact.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void diags_json(buf *out, const diags *ds, diag_level lv)
{
    buf_addc(out, '[');
    bool first = true;
    for (size_t i = 0; i < ds->n; i++) {
        const diag *d = &ds->v[i];
        if (d->level != lv) continue;
        if (!first) buf_addc(out, ',');
        first = false;
        buf_adds(out, "{\"file\":");
        if (d->pos.file)
            buf_json_str(out, d->pos.file);
        else
            buf_adds(out, "null");
        buf_printf(out, ",\"line\":%d,\"col\":%d,\"message\":", d->pos.line, d->pos.col);
        buf_json_str(out, d->msg);
        buf_addc(out, '}');
    }
    buf_addc(out, ']');
}

void cli_print_diags(const config *cfg, const char *only_file)
{
    buf b = BUF_INIT;
    diags_text(&b, &cfg->diags, only_file);
    fputs(b.p, stderr);
    buf_release(&b);
}

int cli_int_arg(const cli *c, const cmd *k, const char *opt, const char *val, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    long long v = val ? strtoll(val, &end, 10) : 0;
    if (!val || !*val || *end || v < lo || v > hi) {
        cli_usage_error(c, k, "%s: expected an integer in %lld..%lld, found '%s'", opt, (long long)lo, (long long)hi,
                        val ? val : "");
        return -1;
    }
    *out = v;
    return 0;
}

int cli_override_opt(const cli *c, const cmd *k, int argc, char **argv, int *i, cJSON *ov)
{
    const char *a = argv[*i];
    bool ctx = !strcmp(a, "--ctx") || !strcmp(a, "--context-size");
    if (!ctx && strcmp(a, "--set") && strcmp(a, "--env")) return 0;
    if (*i + 1 >= argc) {
        cli_usage_error(c, k, "%s: expected a value", a);
        return -1;
    }
    const char *val = argv[++*i];
    char arg[64], err[256];
    if (ctx) {
        const field *f = preset_key_field("context_size"); /* the schema's range, as the daemon checks */
        int64_t n;
        if (cli_int_arg(c, k, a, val, (int64_t)f->min, (int64_t)f->max, &n)) return -1;
        snprintf(arg, sizeof arg, "context_size=%lld", (long long)n);
        val = arg;
    }
    if (overrides_add_arg(ov, val, !strcmp(a, "--env"), err, sizeof err)) {
        cli_usage_error(c, k, "%s", err);
        return -1;
    }
    return 1;
}

/* A llama.cpp preset that declares less memory than its model's estimate
 * (the need takes the estimate then): a warning, with the files. */
static void warn_declared_below(config *cfg)
{
    for (size_t i = 0; i < cfg->n_presets; i++) {
        const preset *p = &cfg->presets[i];
        char warn[768];
        if (!p->has_errors && need_declared_below(p, warn, sizeof warn))
            diags_add(&cfg->diags, DIAG_WARNING, p->pos, "%s", warn);
    }
}

/* The rule table (core/rules.c) over every preset: refuse -> error, warn
 * -> warning.  With snap (the machine is looked at), the GPU rules see
 * the device each preset runs on; without, only the GPU-independent
 * rules can fire. */
static void check_rules(config *cfg, const snapshot *snap)
{
    size_t max = rules_count(); /* every rule can fire at most once */
    rule_hit *hits = xcalloc(max, sizeof *hits);
    for (size_t i = 0; i < cfg->n_presets; i++) {
        const preset *p = &cfg->presets[i];
        if (p->has_errors) continue;
        rule_host h;
        bool known = rules_host_of(p, snap, &h);
        size_t n = rules_check(p, known ? &h : NULL, hits, max);
        for (size_t k = 0; k < n; k++)
            diags_add(&cfg->diags, hits[k].severity == RULE_REFUSE ? DIAG_ERROR : DIAG_WARNING, p->pos,
                      "preset '%s': rule %s: %s", p->id, hits[k].id, hits[k].text);
    }
    free(hits);
}

/* Only the engines the rules know need the GPU looked at. */
static bool rules_need_gpu(const config *cfg)
{
    for (size_t i = 0; i < cfg->n_presets; i++)
        if (cfg->presets[i].driver == DRV_LLAMACPP || cfg->presets[i].driver == DRV_VLLM) return true;
    return false;
}

static int config_check(cli *c, int argc, char **argv, const cmd *k)
{
    bool files = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-files"))
            files = false;
        else
            return cli_usage_error(c, k, "config check: unexpected argument '%s'", argv[i]);
    }
    config cfg;
    config_load(&cfg, &c->paths);
    drivers_lint(&cfg);
    snapshot snap;
    bool have_snap = false;
    if (files) {
        drivers_check_files(&cfg);
        warn_declared_below(&cfg);
        if (rules_need_gpu(&cfg)) {
            snapshot_for(&cfg.set, &snap);
            have_snap = true;
        }
    }
    check_rules(&cfg, have_snap ? &snap : NULL);
    if (have_snap) snapshot_release(&snap);
    diags_sort(&cfg.diags);
    int rc = cfg.diags.errors ? -1 : 0;
    buf b = BUF_INIT;
    if (c->json) {
        buf_printf(&b, "{\"ok\":%s,\"config_dir\":", rc ? "false" : "true");
        buf_json_str(&b, cfg.config_dir);
        buf_printf(&b, ",\"presets\":%zu,\"modes\":%zu,\"errors\":", cfg.n_presets, cfg.n_modes);
        diags_json(&b, &cfg.diags, DIAG_ERROR);
        buf_adds(&b, ",\"warnings\":");
        diags_json(&b, &cfg.diags, DIAG_WARNING);
        buf_adds(&b, "}\n");
        fputs(b.p, stdout);
    } else {
        cli_print_diags(&cfg, NULL);
        if (c->verbose >= 0)
            printf("%s: %zu preset%s, %zu mode%s: %zu error%s, %zu warning%s\n", cfg.config_dir, cfg.n_presets,
                   cfg.n_presets == 1 ? "" : "s", cfg.n_modes, cfg.n_modes == 1 ? "" : "s", cfg.diags.errors,
                   cfg.diags.errors == 1 ? "" : "s", cfg.diags.warnings, cfg.diags.warnings == 1 ? "" : "s");
    }
    buf_release(&b);
    config_release(&cfg);
    return rc ? EXIT_USAGE : EXIT_OK;
}

static void strv_text_list(buf *b, const strv *v, const char *indent)
{
    if (!v->n) buf_adds(b, " []\n");
    else buf_addc(b, '\n');
    for (size_t i = 0; i < v->n; i++) {
        buf_printf(b, "%s- ", indent);
        buf_json_str(b, v->v[i]);
        buf_addc(b, '\n');
    }
}

/* A shallow copy of a preset whose argv-like and env fields are replaced
 * by redacted copies, for display only. */
typedef struct redacted {
    preset p;
    kvlist env, unit_vars;
    strv args, extra_args, command;
} redacted;

static void redact_words(strv *dst, const strv *src, bool has_argv0)
{
    if (!has_argv0) strv_push(dst, "-");
    strv_extend(dst, src);
    redact_argv(dst);
    if (!has_argv0) { /* drop the placeholder argv[0] */
        free(dst->v[0]);
        memmove(dst->v, dst->v + 1, dst->n * sizeof *dst->v);
        dst->n--;
    }
}

static void redacted_init(redacted *r, const preset *p)
{
    memset(r, 0, sizeof *r);
    r->p = *p;
    for (size_t i = 0; i < p->env.n; i++)
        kvlist_set(&r->env, p->env.v[i].key, redact_is_secret_name(p->env.v[i].key) ? "<redacted>" : p->env.v[i].val,
                   p->env.v[i].pos);
    redact_words(&r->args, &p->args, false);
    redact_words(&r->extra_args, &p->extra_args, false);
    redact_words(&r->command, &p->command, true);
    for (size_t i = 0; i < p->unit_vars.n; i++) {
        const kvpair *kv = &p->unit_vars.v[i];
        if (!strcmp(kv->key, "extra_args")) {
            buf j = BUF_INIT;
            for (size_t w = 0; w < r->extra_args.n; w++) buf_printf(&j, "%s%s", w ? " " : "", r->extra_args.v[w]);
            kvlist_set(&r->unit_vars, kv->key, j.p, kv->pos);
            buf_release(&j);
        } else {
            kvlist_set(&r->unit_vars, kv->key, redact_is_secret_name(kv->key) ? "<redacted>" : kv->val, kv->pos);
        }
    }
    r->p.env = r->env;
    r->p.unit_vars = r->unit_vars;
    r->p.args = r->args;
    r->p.extra_args = r->extra_args;
    r->p.command = r->command;
}

static void redacted_release(redacted *r)
{
    kvlist_release(&r->env);
    kvlist_release(&r->unit_vars);
    strv_release(&r->args);
    strv_release(&r->extra_args);
    strv_release(&r->command);
}

static int show_preset(cli *c, const config *cfg, const preset *p)
{
    launch l = LAUNCH_INIT;
    char err[512];
    int lrc = driver_launch(p, &cfg->set, &l, err, sizeof err);
    redact_argv(&l.argv);
    redact_env(&l.env);
    buf b = BUF_INIT;
    if (c->json) {
        buf_adds(&b, "{\"kind\":\"preset\",\"file\":");
        buf_json_str(&b, p->pos.file ? p->pos.file : "");
        buf_adds(&b, ",\"preset\":");
        /* the preset's own env is shown redacted too */
        redacted r;
        redacted_init(&r, p);
        preset_show(&b, &r.p, true);
        redacted_release(&r);
        buf_adds(&b, ",\"driver_options\":");
        redacted_init(&r, p);
        preset_show_unit_vars(&b, &r.p, true);
        redacted_release(&r);
        buf_adds(&b, ",\"argv\":");
        schema_show_strv(&b, &l.argv, true);
        buf_adds(&b, ",\"env\":");
        schema_show_strv(&b, &l.env, true);
        buf_adds(&b, ",\"cwd\":");
        if (l.cwd) buf_json_str(&b, l.cwd);
        else buf_adds(&b, "null");
        if (lrc) {
            buf_adds(&b, ",\"error\":");
            buf_json_str(&b, err);
        }
        buf_adds(&b, "}\n");
    } else {
        buf_printf(&b, "# preset '%s' from %s\n", p->id, p->pos.file ? p->pos.file : "?");
        redacted r;
        redacted_init(&r, p);
        preset_show(&b, &r.p, false);
        redacted_release(&r);
        buf_adds(&b, "driver_options:\n");
        redacted_init(&r, p);
        preset_show_unit_vars(&b, &r.p, false);
        redacted_release(&r);
        if (lrc) {
            buf_printf(&b, "# cannot build the command line: %s\n", err);
        } else if (p->driver == DRV_REMOTE) {
            buf_adds(&b, "# driver remote: no process runs here\n");
        } else {
            buf_adds(&b, "argv:");
            strv_text_list(&b, &l.argv, "  ");
            buf_adds(&b, "env:");
            strv_text_list(&b, &l.env, "  ");
            buf_adds(&b, "cwd: ");
            if (l.cwd) buf_json_str(&b, l.cwd);
            else buf_adds(&b, "null");
            buf_addc(&b, '\n');
        }
    }
    fputs(b.p, stdout);
    buf_release(&b);
    launch_release(&l);
    return lrc ? EXIT_USAGE : EXIT_OK;
}

static int show_all(cli *c, const config *cfg)
{
    buf b = BUF_INIT;
    if (c->json) {
        buf_adds(&b, "{\"config_dir\":");
        buf_json_str(&b, cfg->config_dir);
        buf_adds(&b, ",\"presets_dir\":");
        buf_json_str(&b, cfg->presets_dir);
        buf_adds(&b, ",\"modes_dir\":");
        buf_json_str(&b, cfg->modes_dir);
        buf_adds(&b, ",\"settings\":");
        schema_show_json(&b, settings_fields, &cfg->set);
        buf_adds(&b, ",\"presets\":[");
        for (size_t i = 0; i < cfg->n_presets; i++) {
            const preset *p = &cfg->presets[i];
            if (i) buf_addc(&b, ',');
            buf_adds(&b, "{\"id\":");
            buf_json_str(&b, p->id);
            buf_adds(&b, ",\"driver\":");
            buf_json_str(&b, driver_names[p->driver]);
            buf_printf(&b, ",\"port\":%lld,\"file\":", (long long)p->port);
            buf_json_str(&b, p->pos.file ? p->pos.file : "");
            buf_addc(&b, '}');
        }
        buf_adds(&b, "],\"modes\":[");
        for (size_t i = 0; i < cfg->n_modes; i++) {
            if (i) buf_addc(&b, ',');
            buf_adds(&b, "{\"id\":");
            buf_json_str(&b, cfg->modes[i].id);
            buf_adds(&b, ",\"services\":");
            schema_show_strv(&b, &cfg->modes[i].services, true);
            buf_addc(&b, '}');
        }
        buf_adds(&b, "]}\n");
    } else {
        buf_printf(&b, "# configuration: %s\n# presets: %s\n# modes: %s\n# settings (gpumod.yaml, defaults filled in):\n",
                   cfg->config_dir, cfg->presets_dir, cfg->modes_dir);
        schema_show_text(&b, settings_fields, &cfg->set, 0);
        buf_adds(&b, "# presets:\n");
        for (size_t i = 0; i < cfg->n_presets; i++) {
            const preset *p = &cfg->presets[i];
            buf_printf(&b, "#   %-24s %-9s port %-5lld %s\n", p->id, driver_names[p->driver], (long long)p->port,
                       p->pos.file ? p->pos.file : "");
        }
        buf_adds(&b, "# modes:\n");
        for (size_t i = 0; i < cfg->n_modes; i++) {
            const mode *m = &cfg->modes[i];
            buf_printf(&b, "#   %-24s", m->id);
            for (size_t s = 0; s < m->services.n; s++) buf_printf(&b, " %s", m->services.v[s]);
            buf_addc(&b, '\n');
        }
    }
    fputs(b.p, stdout);
    buf_release(&b);
    return EXIT_OK;
}

static int config_show(cli *c, int argc, char **argv, const cmd *k)
{
    const char *id = NULL;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' || id) return cli_usage_error(c, k, "config show: unexpected argument '%s'", argv[i]);
        id = argv[i];
    }
    config cfg;
    config_load(&cfg, &c->paths);
    drivers_lint(&cfg);
    diags_sort(&cfg.diags);
    bool cfg_errors = cfg.diags.errors > 0;
    if (cfg_errors) cli_print_diags(&cfg, NULL);
    int rc;
    const preset *p = id ? config_preset(&cfg, id) : NULL;
    const mode *m = id ? config_mode(&cfg, id) : NULL;
    if (!id) {
        rc = show_all(c, &cfg);
    } else if (p) {
        rc = show_preset(c, &cfg, p);
    } else if (m) {
        buf b = BUF_INIT;
        if (c->json) {
            buf_adds(&b, "{\"kind\":\"mode\",\"file\":");
            buf_json_str(&b, m->pos.file ? m->pos.file : "");
            buf_adds(&b, ",\"mode\":");
            mode_show(&b, m, true);
            buf_adds(&b, "}\n");
        } else {
            buf_printf(&b, "# mode '%s' from %s\n", m->id, m->pos.file ? m->pos.file : "?");
            mode_show(&b, m, false);
        }
        fputs(b.p, stdout);
        buf_release(&b);
        rc = EXIT_OK;
    } else {
        fprintf(stderr, "gpumod: config show: no preset or mode '%s' in %s\n", id, cfg.config_dir);
        rc = EXIT_USAGE;
    }
    config_release(&cfg);
    return cfg_errors ? EXIT_USAGE : rc;
}

static int config_schema(cli *c, int argc, char **argv, const cmd *k)
{
    if (argc > 1) return cli_usage_error(c, k, "config schema: unexpected argument '%s'", argv[1]);
    buf b = BUF_INIT;
    buf_adds(&b, "### gpumod.yaml\n\n| key | type | default | meaning |\n|---|---|---|---|\n");
    schema_doc_markdown(&b, settings_fields, "");
    buf_adds(&b, "\n### Preset keys\n\n");
    preset_doc_markdown(&b);
    buf_adds(&b, "\n### unit_vars\n\n");
    unit_vars_doc_markdown(&b);
    buf_adds(&b, "\n### Start overrides\n\n");
    overrides_doc_markdown(&b);
    buf_adds(&b, "\n### Mode keys\n\n| key | type | default | meaning |\n|---|---|---|---|\n");
    schema_doc_markdown(&b, mode_fields, "");
    fputs(b.p, stdout);
    buf_release(&b);
    return EXIT_OK;
}

static int config_rules(cli *c, int argc, char **argv, const cmd *k)
{
    if (argc > 1) return cli_usage_error(c, k, "config rules: unexpected argument '%s'", argv[1]);
    buf b = BUF_INIT;
    rules_doc_markdown(&b);
    fputs(b.p, stdout);
    buf_release(&b);
    return EXIT_OK;
}

int cmd_config(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("config");
    if (argc < 2) return cli_usage_error(c, k, "config: missing subcommand");
    if (!strcmp(argv[1], "check")) return config_check(c, argc - 1, argv + 1, k);
    if (!strcmp(argv[1], "show")) return config_show(c, argc - 1, argv + 1, k);
    if (!strcmp(argv[1], "schema")) return config_schema(c, argc - 1, argv + 1, k);
    if (!strcmp(argv[1], "rules")) return config_rules(c, argc - 1, argv + 1, k);
    return cli_usage_error(c, k, "config: unknown subcommand '%s'", argv[1]);
}
