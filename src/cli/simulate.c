/* simulate.c - `gpumod simulate service ID [estimator flags] [--json]` and
 * `gpumod simulate mode MODE [--json]`: what a service or a whole mode
 * would take (by part, by device, with its source) against what this host
 * has, the gate's verdict, and, when it does not fit, alternatives the
 * estimator computes: a q8_0 or q4_0 KV cache, the largest context that
 * fits, fewer GPU layers, more MoE experts on the CPU. */
#include "cli/cli.h"
#include "cli/hostview.h"
#include "model/estimate.h"
#include "model/ggml_type.h"
#include "model/gguf.h"
#include "daemon/need.h"
#include "store/db.h"

#include <stdio.h>
#include <string.h>

typedef struct sim {
    cli *c;
    config cfg;
    snapshot snap;
    store *st;
    gate_policy policy;
} sim;

typedef struct alt {
    char change[160];
    bool ok;
    bool tried;
    char reason[256];
    need_detail nd;
} alt;

static bool fits(sim *s, const preset *p, const est_params *ep, const int *idx, need_detail *nd, verdict *v,
                 char *err, size_t errlen)
{
    memset(nd, 0, sizeof *nd);
    if (need_from_estimate(p, ep, idx, nd, err, errlen)) return false;
    gate_check(&s->snap, &nd->n, NULL, 0, p->id, &s->policy, v);
    return v->ok;
}

static void try_alt(sim *s, const preset *p, const est_params *ep, const int *idx, alt *a)
{
    verdict v;
    char err[256] = "";
    a->tried = true;
    a->ok = fits(s, p, ep, idx, &a->nd, &v, err, sizeof err);
    snprintf(a->reason, sizeof a->reason, "%s", err[0] ? err : v.reason);
}

/* Alternatives for a llama.cpp single-model preset that does not fit. */
static size_t alternatives(sim *s, const preset *p, const est_params *base, const int *idx, alt *out)
{
    size_t n = 0;
    gguf_file g;
    char err[256];
    model_summary m;
    if (gguf_open(&g, p->model_path, err, sizeof err)) return 0;
    int drc = model_describe(&g, &m, err, sizeof err);
    gguf_release(&g);
    if (drc) return 0;

    static const char *const kv[] = {"q8_0", "q4_0"};
    for (size_t i = 0; i < 2; i++) {
        est_params ep = *base;
        ep.type_k = ep.type_v = (uint32_t)ggml_type_by_name(kv[i]);
        ep.flash_attn = 1; /* a quantized V cache needs flash attention */
        snprintf(out[n].change, sizeof out[n].change, "unit_vars: {cache_type_k: %s, cache_type_v: %s, flash_attn: on}",
                 kv[i], kv[i]);
        try_alt(s, p, &ep, idx, &out[n++]);
    }
    /* the largest context that fits, in llama.cpp's steps of 256 */
    {
        est_params ep = *base;
        int64_t lo = 0, hi = base->ctx / 256; /* in units of 256; lo fits (0 = nothing) */
        need_detail nd;
        verdict v;
        while (lo < hi) {
            int64_t mid = (lo + hi + 1) / 2;
            ep.ctx = mid * 256;
            if (fits(s, p, &ep, idx, &nd, &v, err, sizeof err))
                lo = mid;
            else
                hi = mid - 1;
        }
        if (lo > 0 && lo * 256 < base->ctx) {
            ep.ctx = lo * 256;
            snprintf(out[n].change, sizeof out[n].change, "context_size: %lld", (long long)ep.ctx);
            try_alt(s, p, &ep, idx, &out[n++]);
        } else if (lo == 0) {
            snprintf(out[n].change, sizeof out[n].change, "a smaller context_size");
            out[n].tried = true;
            out[n].ok = false;
            snprintf(out[n].reason, sizeof out[n].reason, "even -c 256 does not fit");
            n++;
        }
    }
    /* fewer layers on the GPU: the most that fit */
    if (base->ndev > 0 && m.n_layer > 0) {
        est_params ep = *base;
        int64_t top = base->ngl < 0 || base->ngl > m.n_layer ? m.n_layer : base->ngl;
        int64_t lo = -1, hi = top - 1;
        need_detail nd;
        verdict v;
        while (lo < hi) {
            int64_t mid = (lo + hi + 1) / 2;
            ep.ngl = mid;
            if (fits(s, p, &ep, idx, &nd, &v, err, sizeof err))
                lo = mid;
            else
                hi = mid - 1;
        }
        if (lo >= 0) {
            ep.ngl = lo;
            snprintf(out[n].change, sizeof out[n].change, "unit_vars: {n_gpu_layers: %lld}", (long long)lo);
            try_alt(s, p, &ep, idx, &out[n++]);
        }
    }
    /* MoE: the fewest layers whose experts stay on the CPU */
    if (base->ndev > 0 && m.n_expert > 0 && m.n_layer > 0) {
        est_params ep = *base;
        int64_t lo = base->n_cpu_moe + 1, hi = m.n_layer + 1;
        need_detail nd;
        verdict v;
        while (lo < hi) {
            int64_t mid = (lo + hi) / 2;
            ep.n_cpu_moe = mid;
            if (fits(s, p, &ep, idx, &nd, &v, err, sizeof err))
                hi = mid;
            else
                lo = mid + 1;
        }
        if (lo <= m.n_layer) {
            ep.n_cpu_moe = lo;
            snprintf(out[n].change, sizeof out[n].change, "unit_vars: {n_cpu_moe: %lld}", (long long)lo);
            try_alt(s, p, &ep, idx, &out[n++]);
        }
    }
    return n;
}

static void capacity_text(buf *b, const snapshot *snap, const need *total)
{
    const host_mem *h = &snap->host;
    uint64_t host_used = h->mem_total > h->mem_available ? h->mem_total - h->mem_available : 0;
    buf_adds(b, "host   ");
    fmt_bar(b, host_used + total->host_bytes, h->mem_total, 30);
    buf_adds(b, " in use ");
    buf_bytes(b, host_used);
    buf_adds(b, " + need ");
    buf_bytes(b, total->host_bytes);
    buf_adds(b, " of ");
    buf_bytes(b, h->mem_total);
    buf_addc(b, '\n');
    for (size_t i = 0; i < snap->ngpus; i++) {
        const gpu_dev *g = &snap->gpus[i];
        uint64_t need_b = 0;
        for (size_t k = 0; k < total->ngpu; k++)
            if (total->gpu[k].index == g->index) need_b += total->gpu[k].bytes;
        uint64_t tot = g->unified ? h->mem_total : g->total_bytes;
        uint64_t used = g->unified ? host_used + total->host_bytes : g->used_bytes;
        buf_printf(b, "gpu %-2d ", g->index);
        fmt_bar(b, used + need_b, tot, 30);
        buf_adds(b, " in use ");
        buf_bytes(b, used);
        buf_adds(b, " + need ");
        buf_bytes(b, need_b);
        buf_adds(b, " of ");
        buf_bytes(b, tot);
        if (g->unified) buf_adds(b, " (unified: shared with the host)");
        buf_addc(b, '\n');
    }
}

static void alt_json(buf *b, const alt *a)
{
    buf_adds(b, "{\"change\":");
    buf_json_str(b, a->change);
    buf_printf(b, ",\"ok\":%s,\"reason\":", a->ok ? "true" : "false");
    buf_json_str(b, a->ok ? "" : a->reason);
    buf_printf(b, ",\"need\":{\"host_bytes\":%llu,\"gpu_bytes\":{", (unsigned long long)a->nd.n.host_bytes);
    for (size_t i = 0; i < a->nd.n.ngpu; i++)
        buf_printf(b, "%s\"%d\":%llu", i ? "," : "", a->nd.n.gpu[i].index, (unsigned long long)a->nd.n.gpu[i].bytes);
    buf_adds(b, "}}}");
}

static int sim_service(sim *s, const preset *p, const est_params *over, unsigned given)
{
    need_detail nd;
    char err[512];
    est_params ep;
    int idx[HOST_MAX_GPUS];
    bool estimated = p->driver == DRV_LLAMACPP && p->model_path;
    if (estimated) {
        need_est_params(p, &s->snap, &ep, idx);
        if (given & EST_GIVEN_CTX) ep.ctx = over->ctx;
        if (given & EST_GIVEN_PARALLEL) ep.parallel = over->parallel;
        if (given & EST_GIVEN_CTK) ep.type_k = over->type_k;
        if (given & EST_GIVEN_CTV) ep.type_v = over->type_v;
        if (given & EST_GIVEN_NGL) ep.ngl = over->ngl;
        if (given & EST_GIVEN_NCMOE) ep.n_cpu_moe = over->n_cpu_moe;
        if (given & EST_GIVEN_FA) ep.flash_attn = over->flash_attn;
    } else if (given) {
        fprintf(stderr, "gpumod: simulate: estimator flags apply to llama.cpp single-model presets; '%s' is %s\n",
                p->id, driver_names[p->driver]);
        return EXIT_USAGE;
    }
    int rc;
    if (given) {
        memset(&nd, 0, sizeof nd);
        rc = need_from_estimate(p, &ep, idx, &nd, err, sizeof err);
        if (!rc) snprintf(nd.detail, sizeof nd.detail, "estimated from '%s' with the flags given", p->model_path);
    } else {
        rc = service_need(p, &s->cfg.set, &s->snap, s->st, &nd, err, sizeof err);
    }
    if (rc) {
        fprintf(stderr, "gpumod: simulate: %s\n", err);
        return EXIT_USAGE;
    }
    verdict v;
    memset(&v, 0, sizeof v);
    v.ok = true;
    if (strcmp(nd.n.source, "none")) gate_check(&s->snap, &nd.n, NULL, 0, p->id, &s->policy, &v);
    alt alts[8];
    size_t nalt = 0;
    if (!v.ok && estimated && !strcmp(nd.n.source, "estimate")) nalt = alternatives(s, p, &ep, idx, alts);

    buf b = BUF_INIT;
    if (s->c->json) {
        buf_adds(&b, "{\"service\":");
        buf_json_str(&b, p->id);
        buf_adds(&b, ",\"verdict\":");
        verdict_json(&b, "standalone", p->id, &v, &nd, &s->snap);
        buf_adds(&b, ",\"alternatives\":[");
        for (size_t i = 0; i < nalt; i++) {
            if (i) buf_addc(&b, ',');
            alt_json(&b, &alts[i]);
        }
        buf_adds(&b, "]}\n");
    } else {
        buf_printf(&b, "service '%s' (%s)\n  ", p->id, driver_names[p->driver]);
        need_text(&b, &nd);
        if (nd.has_estimate) estimate_text(&b, &nd.est, idx);
        capacity_text(&b, &s->snap, &nd.n);
        if (v.ok)
            buf_adds(&b, "verdict: fits\n");
        else
            buf_printf(&b, "verdict: refused: %s\n", v.reason);
        if (nalt) buf_adds(&b, "alternatives:\n");
        for (size_t i = 0; i < nalt; i++) {
            buf_printf(&b, "  %-4s %s: ", alts[i].ok ? "fits" : "no", alts[i].change);
            buf_adds(&b, "gpu");
            for (size_t k = 0; k < alts[i].nd.n.ngpu; k++) {
                buf_printf(&b, " %d:", alts[i].nd.n.gpu[k].index);
                buf_bytes(&b, alts[i].nd.n.gpu[k].bytes);
            }
            buf_adds(&b, ", host ");
            buf_bytes(&b, alts[i].nd.n.host_bytes);
            if (!alts[i].ok) buf_printf(&b, " (%s)", alts[i].reason);
            buf_addc(&b, '\n');
        }
    }
    fputs(b.p, stdout);
    buf_release(&b);
    return v.ok ? EXIT_OK : EXIT_REFUSED;
}

static int sim_mode(sim *s, const mode *m)
{
    reservation res[64];
    need_detail nds[64];
    verdict vs[64];
    const preset *ps[64];
    size_t n = 0;
    need total = {0};
    bool all_ok = true;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < m->services.n && n < 64; i++) {
            const preset *p = config_preset(&s->cfg, m->services.v[i]);
            if (!p || p->start_first != (pass == 0)) continue;
            char err[512];
            if (service_need(p, &s->cfg.set, &s->snap, s->st, &nds[n], err, sizeof err)) {
                fprintf(stderr, "gpumod: simulate: %s\n", err);
                return EXIT_USAGE;
            }
            memset(&vs[n], 0, sizeof vs[n]);
            vs[n].ok = true;
            if (strcmp(nds[n].n.source, "none"))
                gate_check(&s->snap, &nds[n].n, res, n, p->id, &s->policy, &vs[n]);
            all_ok = all_ok && vs[n].ok;
            res[n].service = p->id;
            res[n].need = nds[n].n;
            ps[n] = p;
            total.host_bytes += nds[n].n.host_bytes;
            for (size_t k = 0; k < nds[n].n.ngpu; k++) {
                size_t j = 0;
                while (j < total.ngpu && total.gpu[j].index != nds[n].n.gpu[k].index) j++;
                if (j == total.ngpu && total.ngpu < HOST_MAX_GPUS) total.gpu[total.ngpu++].index = nds[n].n.gpu[k].index;
                if (j < HOST_MAX_GPUS) total.gpu[j].bytes += nds[n].n.gpu[k].bytes;
            }
            n++;
        }
    }
    buf b = BUF_INIT;
    if (s->c->json) {
        buf_adds(&b, "{\"mode\":");
        buf_json_str(&b, m->id);
        buf_printf(&b, ",\"ok\":%s,\"total\":{\"host_bytes\":%llu,\"gpu_bytes\":{", all_ok ? "true" : "false",
                   (unsigned long long)total.host_bytes);
        for (size_t k = 0; k < total.ngpu; k++)
            buf_printf(&b, "%s\"%d\":%llu", k ? "," : "", total.gpu[k].index, (unsigned long long)total.gpu[k].bytes);
        buf_adds(&b, "}},\"services\":[");
        for (size_t i = 0; i < n; i++) {
            if (i) buf_addc(&b, ',');
            verdict_json(&b, "standalone", ps[i]->id, &vs[i], &nds[i], &s->snap);
        }
        buf_adds(&b, "]}\n");
    } else {
        buf_printf(&b, "mode '%s': %zu service%s, in start order\n", m->id, n, n == 1 ? "" : "s");
        for (size_t i = 0; i < n; i++) {
            buf_printf(&b, "  %-4s %s: ", vs[i].ok ? "ok" : "no", ps[i]->id);
            need_text(&b, &nds[i]);
            if (!vs[i].ok) buf_printf(&b, "       refused: %s\n", vs[i].reason);
        }
        capacity_text(&b, &s->snap, &total);
        buf_printf(&b, "verdict: %s\n", all_ok ? "fits" : "does not fit");
    }
    fputs(b.p, stdout);
    buf_release(&b);
    return all_ok ? EXIT_OK : EXIT_REFUSED;
}

int cmd_simulate(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("simulate");
    if (argc < 3) return cli_usage_error(c, k, "simulate: expected 'service ID' or 'mode MODE'");
    bool is_mode = !strcmp(argv[1], "mode");
    if (!is_mode && strcmp(argv[1], "service"))
        return cli_usage_error(c, k, "simulate: unknown subcommand '%s' (service or mode)", argv[1]);
    const char *id = argv[2];
    est_params over;
    est_params_default(&over);
    unsigned given = 0;
    for (int i = 3; i < argc; i++) {
        int r = is_mode ? 0 : est_flag(c, k, argc, argv, &i, &over, &given);
        if (r < 0) return EXIT_USAGE;
        if (!r) return cli_usage_error(c, k, "simulate: unexpected argument '%s'", argv[i]);
    }
    sim s = {.c = c};
    config_load(&s.cfg, &c->paths);
    const preset *p = is_mode ? NULL : config_preset(&s.cfg, id);
    const mode *m = is_mode ? config_mode(&s.cfg, id) : NULL;
    if (!p && !m) {
        fprintf(stderr, "gpumod: simulate: no %s '%s' in %s\n", is_mode ? "mode" : "preset", id, s.cfg.config_dir);
        config_release(&s.cfg);
        return EXIT_USAGE;
    }
    for (size_t i = 0; i < (m ? m->services.n : 1); i++) {
        const preset *q = m ? config_preset(&s.cfg, m->services.v[i]) : p;
        if (!q || q->has_errors) {
            cli_print_diags(&s.cfg, q ? q->pos.file : m->pos.file);
            fprintf(stderr, "gpumod: simulate: '%s' has configuration errors\n", q ? q->id : m->services.v[i]);
            config_release(&s.cfg);
            return EXIT_USAGE;
        }
    }
    policy_from_settings(&s.cfg.set, &s.policy);
    snapshot_for(&s.cfg.set, &s.snap);
    char err[256];
    bool missing;
    if (store_open(&s.st, s.cfg.set.state_dir, false, 200, &missing, err, sizeof err) && !missing)
        fprintf(stderr, "gpumod: simulate: measured footprints unavailable: %s\n", err);
    int rc = m ? sim_mode(&s, m) : sim_service(&s, p, &over, given);
    store_close(s.st);
    snapshot_release(&s.snap);
    config_release(&s.cfg);
    return rc;
}
