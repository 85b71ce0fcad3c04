/* doctor.c - `gpumod doctor [--json]`: read-only checks of the host and
 * its units, each with a verdict and the fix (docs/doctor.md).
 *
 * The judgement is src/doctor/doctor.c over what src/doctor/doctor_probe.c
 * read; this file adds what only the configuration knows (the presets'
 * ports and argv, startup_timeout, the measured load times in the state
 * database) and prints.  Nothing here writes, runs a program or talks to
 * systemd: a doctor that needs the patient healthy to run is no use. */
#include "cli/cli.h"
#include "doctor/doctor.h"
#include "drivers/driver.h"
#include "doctor/doctor_probe.h"
#include "store/db.h"
#include "util/buf.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCHECKS 13

/* The newest measured load time of a service: the load_ms of its last
 * footprint event (the daemon records it when a start becomes ready).
 * -1 when none. */
static int64_t last_load_ms(store *st, const char *service)
{
    if (!st) return -1;
    store_event_query q = {.service = service, .limit = 1000, .tail = true};
    store_event *ev = NULL;
    size_t n = 0;
    char err[256];
    int64_t ms = -1;
    if (store_events_query(st, &q, &ev, &n, err, sizeof err) < 0) return -1;
    for (size_t i = n; i-- > 0 && ms < 0;) {
        if (!ev[i].kind || strcmp(ev[i].kind, "footprint") || !ev[i].data) continue;
        cJSON *d = cJSON_Parse(ev[i].data);
        const cJSON *l = d ? cJSON_GetObjectItemCaseSensitive(d, "load_ms") : NULL;
        if (cJSON_IsNumber(l) && l->valuedouble > 0) ms = (int64_t)l->valuedouble;
        cJSON_Delete(d);
    }
    store_events_free(ev, n);
    return ms;
}

/* The presets as the checks see them: port, start timeout, the last
 * measured load (from the store, when it opens), the argv the driver
 * builds (or why none). */
typedef struct doc_presets {
    doc_preset *pr;
    launch *la;
    char (*perr)[256];
    size_t n;
} doc_presets;

static void presets_read(const config *cfg, doc_presets *d)
{
    store *st = NULL;
    bool missing = false;
    char err[256];
    if (cfg->set.state_dir && store_open(&st, cfg->set.state_dir, false, 200, &missing, err, sizeof err) < 0)
        st = NULL;
    size_t np = d->n = cfg->n_presets;
    d->pr = xcalloc(np ? np : 1, sizeof *d->pr);
    d->la = xcalloc(np ? np : 1, sizeof *d->la);
    d->perr = xcalloc(np ? np : 1, sizeof *d->perr);
    for (size_t i = 0; i < np; i++) {
        const preset *p = &cfg->presets[i];
        doc_preset *pr = &d->pr[i];
        pr->id = p->id;
        pr->port = p->port;
        pr->startup_timeout_ms =
            p->startup_timeout_ms > 0 ? p->startup_timeout_ms : cfg->set.supervisor.startup_timeout_ms;
        pr->load_ms = p->id ? last_load_ms(st, p->id) : -1;
        d->la[i] = (launch)LAUNCH_INIT;
        if (p->id && driver_launch(p, &cfg->set, &d->la[i], d->perr[i], sizeof d->perr[i]) == 0 && d->la[i].argv.n)
            pr->argv = &d->la[i].argv;
        else
            pr->argv_error = d->perr[i][0] ? d->perr[i] : "the driver runs no process";
    }
    store_close(st);
}

static void presets_release(doc_presets *d)
{
    for (size_t i = 0; i < d->n; i++) launch_release(&d->la[i]);
    free(d->la);
    free(d->perr);
    free(d->pr);
}

/* Every check in the order of docs/doctor.md; v has NCHECKS entries. */
static size_t run_checks(const config *cfg, const doc_host *h, const doc_unit *units, size_t nu,
                         const doc_presets *d, doc_verdict *v)
{
    doc_policy pol = {
        .min_contig_bytes = (uint64_t)cfg->set.memory.min_contig_mb << 20,
        .psi_some_avg10_max = cfg->set.memory.psi_some_avg10_max,
        .psi_full_avg10_max = cfg->set.memory.watchdog_psi_full_avg10_max,
    };
    size_t nv = 0;
    doctor_check_zfs_arc(h, &v[nv++]);
    doctor_check_min_free(h, &v[nv++]);
    doctor_check_swap(h, &v[nv++]);
    doctor_check_fragmentation(h, &pol, &v[nv++]);
    doctor_check_psi(h, &pol, &v[nv++]);
    doctor_check_unit_files(units, nu, &v[nv++]);
    doctor_check_restart_loops(units, nu, &v[nv++]);
    doctor_check_restart_ports(units, nu, d->pr, d->n, &v[nv]);
    if (!d->n) {
        snprintf(v[nv].summary, sizeof v[nv].summary, "no presets in '%s' to compare ports with",
                 cfg->presets_dir ? cfg->presets_dir : cfg->config_dir);
        v[nv].status = DOC_SKIP;
    }
    nv++;
    doctor_check_start_timeout(units, nu, d->pr, d->n, &v[nv++]);
    doctor_check_stale_units(units, nu, d->pr, d->n, &v[nv++]);
    doctor_check_nvml(h, &v[nv++]);
    doctor_check_oomd(h, &v[nv++]);
    doctor_check_compact_memory(h, &v[nv++]);
    return nv;
}

static void report_json(buf *b, const config *cfg, bool cfg_bad, const char *dirs, size_t nu, const doc_verdict *v,
                        size_t nv, const size_t *count)
{
    buf_printf(b, "{\"ok\":%s,\"counts\":{", count[DOC_FAIL] || cfg_bad ? "false" : "true");
    for (int s = 0; s < 5; s++) buf_printf(b, "%s\"%s\":%zu", s ? "," : "", doc_status_names[s], count[s]);
    buf_adds(b, "},\"config\":{\"dir\":");
    buf_json_str(b, cfg->config_dir ? cfg->config_dir : "");
    buf_printf(b, ",\"presets\":%zu,\"errors\":%zu},\"unit_dirs\":", cfg->n_presets, cfg->diags.errors);
    buf_json_str(b, dirs);
    buf_printf(b, ",\"units\":%zu,\"checks\":[", nu);
    for (size_t i = 0; i < nv; i++) {
        buf_adds(b, i ? ",{\"id\":" : "{\"id\":");
        buf_json_str(b, v[i].id);
        buf_printf(b, ",\"status\":\"%s\",\"summary\":", doc_status_names[v[i].status]);
        buf_json_str(b, v[i].summary);
        buf_adds(b, ",\"fix\":");
        buf_json_str_or_null(b, v[i].fix[0] ? v[i].fix : NULL);
        buf_adds(b, "}");
    }
    buf_adds(b, "]}\n");
}

static void report_text(buf *b, const config *cfg, const char *dirs, size_t nu, const doc_verdict *v, size_t nv,
                        const size_t *count)
{
    buf_printf(b, "gpumod doctor: %zu checks: %zu ok, %zu warn, %zu fail, %zu info, %zu skipped\n", nv,
               count[DOC_OK], count[DOC_WARN], count[DOC_FAIL], count[DOC_INFO], count[DOC_SKIP]);
    buf_printf(b, "units read from %s: %zu in all; configuration %s (%zu presets)\n", dirs, nu, cfg->config_dir,
               cfg->n_presets);
    for (size_t i = 0; i < nv; i++) {
        buf_printf(b, "\n[%-4s] %s\n", doc_status_names[v[i].status], v[i].id);
        /* one line each: greppable, and a terminal wraps it */
        buf_printf(b, "       %s\n", v[i].summary);
        if (v[i].fix[0]) buf_printf(b, "       fix: %s\n", v[i].fix);
    }
}

int cmd_doctor(cli *c, int argc, char **argv);
int cmd_doctor(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("doctor");
    if (argc > 1) return cli_usage_error(c, k, "doctor: unexpected argument '%s'", argv[1]);

    config cfg;
    bool cfg_bad = config_load(&cfg, &c->paths) < 0;

    doc_host *h = xcalloc(1, sizeof *h);
    doctor_probe_opts po = {.nvml_timeout_ms = cfg.set.memory.nvml_timeout_ms};
    doctor_probe_host(h, &po);
    doc_unit *units = NULL;
    size_t nu = 0;
    char dirs[8192];
    doctor_probe_units(&units, &nu, dirs, sizeof dirs);
    doc_presets d;
    presets_read(&cfg, &d);

    doc_verdict *v = xcalloc(NCHECKS, sizeof *v);
    size_t nv = run_checks(&cfg, h, units, nu, &d, v);
    size_t count[5] = {0};
    for (size_t i = 0; i < nv; i++) count[v[i].status]++;
    buf b = BUF_INIT;
    if (c->json)
        report_json(&b, &cfg, cfg_bad, dirs, nu, v, nv, count);
    else
        report_text(&b, &cfg, dirs, nu, v, nv, count);
    fputs(b.p, stdout);
    buf_release(&b);
    if (cfg_bad) {
        fprintf(stderr, "gpumod: doctor: the configuration in '%s' has errors; the preset checks used what "
                        "loaded:\n", cfg.config_dir);
        cli_print_diags(&cfg, NULL);
    }
    int rc = cfg_bad ? EXIT_USAGE : count[DOC_FAIL] ? EXIT_REFUSED : EXIT_OK;

    presets_release(&d);
    for (size_t i = 0; i < nu; i++) doctor_unit_release(&units[i]);
    free(units);
    free(v);
    free(h);
    config_release(&cfg);
    return rc;
}
