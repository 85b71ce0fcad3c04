/* preflight.c - `gpumod preflight --for SERVICE | --mode MODE [--json]`:
 * the gate, standalone.  The same function the daemon uses, so a systemd
 * unit's ExecStartPre=gpumod preflight --for ID closes every path that
 * would bypass the daemon.  It must be cheap: no SQLite unless a state
 * database exists, a GGUF header read, one snapshot.
 *
 * When a daemon answers on the control socket the question goes to it
 * (POST /preflight, `via: daemon`): its verdict counts the reservations of
 * starts in flight and uses its warm NVML.  A missing socket costs one
 * failed connect (microseconds), so the standalone path stays cheap.
 * --standalone skips the daemon.
 *
 * Exit 0 ok, 1 refused, 2 configuration or usage error. */
#include "util/clock.h"
#include "cli/cli.h"
#include "cli/ctl.h"
#include "cli/hostview.h"
#include "config/overrides.h"
#include "daemon/need.h"
#include "store/db.h"
#include "util/journal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

typedef struct pf {
    cli *c;
    config cfg;
    snapshot *snap; /* taken after the configuration: on the heap (16 KB), in what the YAML parsing freed */
    store *st;
    gate_policy policy;
    /* one per service judged (a mode's count), on the heap: 2.7 KB each,
     * where 64 on the stack cost --for 47 page faults (docs/startup.md) */
    reservation *res;
    need_detail *details;
    size_t nres, cap;
} pf;

/* Under systemd (INVOCATION_ID set) the verdict also goes to the journal:
 * a unit's StandardOutput=append: sends stdout to its log file, and the
 * reason a start was refused belongs in `journalctl -u UNIT`. */
static bool journaled;

static void verdict_out(const char *text, bool refused)
{
    fputs(text, stdout);
    const char *inv = getenv("INVOCATION_ID");
    if (!inv || !*inv || !text || !*text) return;
    journal_send("gpumod-preflight", refused ? 3 : 6, text);
    journaled = true;
}

/* a preset whose own file has errors cannot be judged: exit 2 */
static int preset_usable(pf *f, const preset *p)
{
    if (!p->has_errors) return 0;
    cli_print_diags(&f->cfg, p->pos.file);
    fprintf(stderr, "gpumod: preflight: preset '%s' has configuration errors\n", p->id);
    return -1;
}

/* Judge one service; its need stays reserved for the next (a mode). */
static int judge(pf *f, const preset *p, buf *out, bool *ok)
{
    need_detail *nd = &f->details[f->nres < f->cap ? f->nres : f->cap - 1];
    char err[512];
    if (service_need(p, &f->cfg.set, f->snap, f->st, nd, err, sizeof err)) {
        fprintf(stderr, "gpumod: preflight: %s\n", err);
        return -1;
    }
    verdict v;
    if (!strcmp(nd->n.source, "none")) { /* remote: nothing runs here, nothing to gate */
        memset(&v, 0, sizeof v);
        v.ok = true;
    } else {
        gate_check(f->snap, &nd->n, f->res, f->nres, p->id, &f->policy, &v);
    }
    if (f->c->json) {
        verdict_json(out, "standalone", p->id, &v, nd, f->snap);
    } else if (v.ok) {
        buf_printf(out, "ok: '%s' fits: ", p->id);
        need_text(out, nd);
    } else {
        buf_printf(out, "refused: '%s': %s\n  ", p->id, v.reason);
        need_text(out, nd);
    }
    *ok = v.ok;
    if (f->nres < f->cap) {
        f->res[f->nres].service = p->id;
        f->res[f->nres].need = nd->n;
        f->nres++;
    }
    return 0;
}

static void daemon_verdict_text(buf *out, const cJSON *v)
{
    const char *svc = jstr(v, "service");
    const cJSON *nj = cJSON_GetObjectItemCaseSensitive(v, "need");
    bool ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "ok"));
    if (ok)
        buf_printf(out, "ok: '%s' fits: ", svc ? svc : "?");
    else
        buf_printf(out, "refused: '%s': %s\n  ", svc ? svc : "?", jstr(v, "reason") ? jstr(v, "reason") : "");
    buf_printf(out, "need (%s): host ", jstr(nj, "source") ? jstr(nj, "source") : "?");
    buf_bytes(out, (uint64_t)jnum(nj, "host_bytes", 0));
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(nj, "gpu_bytes"))
    {
        buf_printf(out, ", gpu %s ", g->string ? g->string : "?");
        buf_bytes(out, (uint64_t)(cJSON_IsNumber(g) ? g->valuedouble : 0));
    }
    buf_addc(out, '\n');
    if (jstr(nj, "detail") && *jstr(nj, "detail")) buf_printf(out, "  %s\n", jstr(nj, "detail"));
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(v, "restart");
    if (cJSON_IsObject(rs)) {
        buf_adds(out, "  as a restart with ");
        overrides_text_json(out, cJSON_GetObjectItemCaseSensitive(rs, "overrides"));
        buf_adds(out, jnull(rs, "held") ? " (nothing of it runs now)\n" : " (what it holds now given back first)\n");
        if (jstr(rs, "deferred")) buf_printf(out, "  deferred until after the stop: %s\n", jstr(rs, "deferred"));
    }
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "available"), "host");
    buf_adds(out, "  via: daemon");
    if (jnum(host, "reserved_bytes", 0) > 0) {
        buf_adds(out, " (counting ");
        buf_bytes(out, (uint64_t)jnum(host, "reserved_bytes", 0));
        buf_adds(out, " reserved by starts in flight)");
    }
    buf_addc(out, '\n');
}

/* Ask the daemon.  -1: no daemon answered, or it reads another
 * configuration directory than this command (go standalone); else the
 * exit code, the verdict printed.  cfg: this command's configuration. */
static int via_daemon(cli *c, const config *cfg, const char *svc, const char *mode_id, const cJSON *ov)
{
    /* no socket file, no daemon: not even the connect (the HTTP client's
     * code and its error text are page faults a refused connect pays) */
    char *sock = ctl_socket_path(&c->paths);
    bool none = strchr(sock, '/') && access(sock, F_OK) != 0 && errno == ENOENT;
    free(sock);
    if (none) return -1;
    buf body = BUF_INIT;
    buf_adds(&body, svc ? "{\"service\":" : "{\"mode\":");
    buf_json_str(&body, svc ? svc : mode_id);
    if (ov && ov->child) { /* a restart's dry run: the daemon judges it as if the service were stopped */
        char *o = cJSON_PrintUnformatted(ov);
        buf_printf(&body, ",\"overrides\":%s", o ? o : "null");
        cJSON_free(o);
    }
    buf_addc(&body, '}');
    http_reply r;
    /* the daemon takes a fresh snapshot: NVML is bounded by nvml_timeout;
     * no daemon: the connect fails at once */
    int rc = ctl_call(&c->paths, "POST", "/preflight", body.p, 15000, true, &r);
    buf_release(&body);
    if (rc) return -1;
    const char *mine = cfg->config_abs ? cfg->config_abs : cfg->config_dir;
    if (r.status == 404) {
        cJSON *ej = cJSON_ParseWithLength(r.body.p, r.body.len);
        const cJSON *det = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ej, "error"), "detail");
        const char *theirs = jstr(det, "config_dir");
        bool other = theirs && mine && strcmp(theirs, mine);
        cJSON_Delete(ej);
        if (other) { /* another directory: judge this one here */
            http_reply_release(&r);
            return -1;
        }
        bool here = svc ? config_preset(cfg, svc) != NULL : config_mode(cfg, mode_id) != NULL;
        if (here) {
            fprintf(stderr, "gpumod: preflight: the daemon's configuration has no %s '%s' (run gpumod reload)\n",
                    svc ? "preset" : "mode", svc ? svc : mode_id);
            http_reply_release(&r);
            return EXIT_USAGE;
        }
    }
    if (r.status != 200) {
        rc = ctl_fail(&r, "preflight");
        if (r.status == 422 || r.status == 400) rc = EXIT_USAGE; /* the need cannot be found, bad overrides */
        http_reply_release(&r);
        return rc;
    }
    cJSON *j = ctl_json(&r, "preflight");
    if (!j) {
        http_reply_release(&r);
        return EXIT_REFUSED;
    }
    const char *theirs = jstr(j, "config_dir");
    if (theirs && mine && strcmp(theirs, mine)) {
        /* another directory (--config-dir): the daemon's verdict is about
         * other presets; judge this one here */
        if (c->verbose > 0)
            fprintf(stderr, "gpumod: preflight: the daemon reads %s, not %s: judging standalone\n", theirs, mine);
        cJSON_Delete(j);
        http_reply_release(&r);
        return -1;
    }
    bool ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "ok"));
    if (c->json) {
        ctl_print_body(&r);
    } else {
        buf out = BUF_INIT;
        if (svc) {
            daemon_verdict_text(&out, j);
        } else {
            const cJSON *v;
            cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, "verdicts")) daemon_verdict_text(&out, v);
            buf_printf(&out, "mode '%s': %s\n", mode_id, ok ? "fits" : "does not fit");
        }
        verdict_out(out.p, !ok);
        buf_release(&out);
    }
    cJSON_Delete(j);
    http_reply_release(&r);
    return ok ? EXIT_OK : EXIT_REFUSED;
}

static int preflight_run(cli *c, int argc, char **argv);
static int preflight_args(cli *c, const cmd *k, int argc, char **argv, cJSON *ov, const char **svcp,
                          const char **modep, bool *timing, bool *alone);
static int preflight_do(cli *c, const char *svc, const char *mode_id, const cJSON *ov, double t[4], bool timing,
                        bool alone);

int cmd_preflight(cli *c, int argc, char **argv)
{
    int rc = preflight_run(c, argc, argv);
    const char *inv = getenv("INVOCATION_ID");
    if (rc != EXIT_OK && !journaled && inv && *inv) {
        /* the detail went to stderr, which may be a file: say where */
        buf m = BUF_INIT;
        buf_adds(&m, "gpumod preflight");
        for (int i = 1; i < argc; i++) buf_printf(&m, " %s", argv[i]);
        buf_printf(&m, ": %s (exit %d); the detail is on its stderr (the unit's log file)",
                   rc == EXIT_USAGE ? "configuration or usage error" : "refused or failed", rc);
        journal_send("gpumod-preflight", 3, m.p);
        buf_release(&m);
    }
    return rc;
}

/* The services to judge: the preset of --for, or a mode's (none for the
 * mode "none").  EXIT_USAGE, said, when one is missing or has errors. */
static int pf_find(pf *f, const char *svc, const char *mode_id, const preset **p, const mode **m)
{
    *p = NULL;
    *m = NULL;
    if (svc && !(*p = config_preset(&f->cfg, svc))) {
        fprintf(stderr, "gpumod: preflight: no preset '%s' in %s\n", svc, f->cfg.config_dir);
        return EXIT_USAGE;
    }
    if (mode_id && strcmp(mode_id, "none") && !(*m = config_mode(&f->cfg, mode_id))) {
        fprintf(stderr, "gpumod: preflight: no mode '%s' in %s\n", mode_id, f->cfg.config_dir);
        return EXIT_USAGE;
    }
    if (*p && preset_usable(f, *p)) return EXIT_USAGE;
    for (size_t i = 0; *m && i < (*m)->services.n; i++) {
        const preset *q = config_preset(&f->cfg, (*m)->services.v[i]);
        if (!q) {
            cli_print_diags(&f->cfg, (*m)->pos.file);
            return EXIT_USAGE;
        }
        if (preset_usable(f, q)) return EXIT_USAGE;
    }
    f->cap = *m && (*m)->services.n ? (*m)->services.n : 1;
    f->res = xcalloc(f->cap, sizeof *f->res);
    f->details = xcalloc(f->cap, sizeof *f->details);
    return EXIT_OK;
}

/* p with the overrides of --set, --env and --ctx (none: p), judged as a
 * start: standalone, nothing is known of what p's service holds now. */
static int judge_variant(pf *f, const preset *p, const cJSON *ovj, buf *out, bool *ok)
{
    overrides ov;
    preset q;
    char err[1024];
    memset(&q, 0, sizeof q);
    int rc = EXIT_OK;
    if (overrides_parse(ovj && ovj->child ? ovj : NULL, p->driver, &ov, err, sizeof err) != 0 ||
        overrides_apply(p, &ov, &q, err, sizeof err) != 0) {
        fprintf(stderr, "gpumod: preflight: '%s': %s\n", p->id, err);
        rc = EXIT_USAGE;
    } else if (judge(f, &q, out, ok)) {
        rc = EXIT_USAGE;
    }
    overrides_applied_release(&q);
    overrides_release(&ov);
    return rc;
}

/* A mode from nothing: each service in start order, earlier ones
 * reserved; start_first services go first, as a switch would start them. */
static int judge_mode(pf *f, const mode *m, const char *mode_id, buf *out, bool *all_ok)
{
    bool json = f->c->json, ok;
    if (json) {
        buf_adds(out, "{\"mode\":");
        buf_json_str(out, mode_id);
        buf_adds(out, ",\"verdicts\":[");
    }
    size_t n = m ? m->services.n : 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            const preset *q = config_preset(&f->cfg, m->services.v[i]);
            if (q->start_first != (pass == 0)) continue;
            if (json && f->nres) buf_addc(out, ',');
            if (judge(f, q, out, &ok)) return EXIT_USAGE;
            *all_ok = *all_ok && ok;
        }
    }
    if (json)
        buf_printf(out, "],\"ok\":%s}\n", *all_ok ? "true" : "false");
    else
        buf_printf(out, "mode '%s': %s\n", mode_id, *all_ok ? "fits" : "does not fit");
    return EXIT_OK;
}

/* --timing: the phases (ms since t[0]: configuration, snapshot, store, end) */
static void timing_out(const pf *f, const double t[4])
{
    fprintf(stderr, "timing config %.3f snapshot %.3f nvml %lld store %.3f need+gate %.3f total %.3f ms\n",
            t[1] - t[0], t[2] - t[1], (long long)f->snap->nvml_ms, t[3] - t[2], clock_mono_ms_f() - t[3],
            clock_mono_ms_f() - t[0]);
}

/* The gate here, on this process's own snapshot. */
static int standalone(pf *f, const char *svc, const char *mode_id, const cJSON *ov, double t[4], bool timing)
{
    const preset *p;
    const mode *m;
    int rc = pf_find(f, svc, mode_id, &p, &m);
    if (rc != EXIT_OK) return rc;
    policy_from_settings(&f->cfg.set, &f->policy);
    f->snap = xcalloc(1, sizeof *f->snap);
    snapshot_for(&f->cfg.set, f->snap);
    t[2] = clock_mono_ms_f();
    char err[512];
    bool missing;
    if (store_open(&f->st, f->cfg.set.state_dir, false, 200, &missing, err, sizeof err) && !missing)
        fprintf(stderr, "gpumod: preflight: measured footprints unavailable: %s\n", err);
    t[3] = clock_mono_ms_f();

    buf out = BUF_INIT;
    bool all_ok = true;
    if (p) {
        rc = judge_variant(f, p, ov, &out, &all_ok);
        if (f->c->json) buf_addc(&out, '\n');
    } else {
        rc = judge_mode(f, m, mode_id, &out, &all_ok);
    }
    if (rc == EXIT_OK) {
        if (f->c->json)
            fputs(out.p, stdout);
        else
            verdict_out(out.p, !all_ok);
        if (!all_ok) rc = EXIT_REFUSED;
    }
    if (timing) timing_out(f, t);
    buf_release(&out);
    return rc;
}

static int preflight_run(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("preflight");
    const char *svc = NULL, *mode_id = NULL;
    bool timing = false; /* --timing: phase durations on stderr, for make bench-preflight */
    bool alone = false;
    double t[4] = {clock_mono_ms_f(), 0, 0, 0};
    cJSON *ov = cJSON_CreateObject(); /* --set, --env, --ctx */
    int rc = preflight_args(c, k, argc, argv, ov, &svc, &mode_id, &timing, &alone);
    if (rc == EXIT_OK) rc = preflight_do(c, svc, mode_id, ov, t, timing, alone);
    cJSON_Delete(ov);
    return rc;
}

static int preflight_args(cli *c, const cmd *k, int argc, char **argv, cJSON *ov, const char **svcp,
                          const char **modep, bool *timing, bool *alone)
{
    const char *svc = NULL, *mode_id = NULL;
    for (int i = 1; i < argc; i++) {
        int taken = cli_override_opt(c, k, argc, argv, &i, ov);
        if (taken < 0) return EXIT_USAGE;
        if (taken) continue;
        if (!strcmp(argv[i], "--timing"))
            *timing = true;
        else if (!strcmp(argv[i], "--standalone"))
            *alone = true;
        else if (!strcmp(argv[i], "--for") && i + 1 < argc)
            svc = argv[++i];
        else if (!strncmp(argv[i], "--for=", 6))
            svc = argv[i] + 6;
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
            mode_id = argv[++i];
        else if (!strncmp(argv[i], "--mode=", 7))
            mode_id = argv[i] + 7;
        else
            return cli_usage_error(c, k, "preflight: unexpected argument '%s'", argv[i]);
    }
    if (!svc == !mode_id) return cli_usage_error(c, k, "preflight: give exactly one of --for SERVICE or --mode MODE");
    if (ov->child && !svc) return cli_usage_error(c, k, "preflight: --set, --env and --ctx go with --for SERVICE");
    *svcp = svc;
    *modep = mode_id;
    return EXIT_OK;
}

static int preflight_do(cli *c, const char *svc, const char *mode_id, const cJSON *ov, double t[4], bool timing,
                        bool alone)
{
    /* parsed once: for the daemon's socket, to tell whether the daemon
     * reads this configuration, and for the standalone gate.  --for reads
     * the one preset it gates (what ExecStartPre= runs before every
     * start); a mode needs its services and itself, so everything. */
    pf f = {.c = c};
    if (svc)
        config_load_preset(&f.cfg, &c->paths, svc);
    else
        config_load(&f.cfg, &c->paths);
    t[1] = clock_mono_ms_f();
    int rc = -1;
    if (!alone) {
        ctl_prime_socket(f.cfg.set.socket);
        rc = via_daemon(c, &f.cfg, svc, mode_id, ov);
        if (rc >= 0 && timing) fprintf(stderr, "timing via daemon total %.3f ms\n", clock_mono_ms_f() - t[0]);
    }
    if (rc < 0) rc = standalone(&f, svc, mode_id, ov, t, timing);
    free(f.res);
    free(f.details);
    store_close(f.st);
    if (f.snap) snapshot_release(f.snap);
    free(f.snap);
    config_release(&f.cfg);
    return rc;
}
