/* model.c - `gpumod model inspect FILE [estimator flags] [--gpus N]
 * [--json]`: what a GGUF file is (architecture, parameters, layers, heads,
 * context, experts, file type) and what llama-server would take with
 * those flags, by part and device.  Reads the header region only. */
#include "cli/cli.h"
#include "model/mjson.h"
#include "cli/hostview.h"
#include "model/estimate.h"
#include "model/ggml_type.h"
#include "model/eflags.h"
#include "model/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int est_flag(const cli *c, const cmd *k, int argc, char **argv, int *i, est_params *ep,
             unsigned *given)
{
    char err[256];
    int r = est_flag_parse(argc, argv, i, ep, given, err, sizeof err);
    if (r < 0) cli_usage_error(c, k, "%s", err);
    return r;
}

void estimate_text(buf *b, const estimate *e, const int *dev_index)
{
    buf_printf(b, "%-10s", "");
    for (size_t d = 0; d < e->ndev; d++)
        buf_printf(b, " %12s%-2d", "gpu ", dev_index ? dev_index[d] : (int)d);
    buf_printf(b, " %14s\n", "host");
    for (int p = 0; p < EST__PARTS; p++) {
        buf_printf(b, "%-10s", est_part_names[p]);
        for (size_t d = 0; d < e->ndev; d++) {
            buf t = BUF_INIT;
            buf_bytes(&t, e->dev[d][p]);
            buf_printf(b, " %14s", t.p);
            buf_release(&t);
        }
        buf t = BUF_INIT;
        buf_bytes(&t, e->host[p]);
        buf_printf(b, " %14s\n", t.p);
        buf_release(&t);
    }
    buf_printf(b, "%-10s", "total");
    for (size_t d = 0; d < e->ndev; d++) {
        buf t = BUF_INIT;
        buf_bytes(&t, e->dev_total[d]);
        buf_printf(b, " %14s", t.p);
        buf_release(&t);
    }
    buf t = BUF_INIT;
    buf_bytes(&t, e->host_total);
    buf_printf(b, " %14s\n", t.p);
    buf_release(&t);
}

static int inspect(cli *c, int argc, char **argv, const cmd *k)
{
    const char *file = NULL;
    est_params ep;
    est_params_default(&ep);
    ep.ndev = 1;
    unsigned given = 0;
    for (int i = 1; i < argc; i++) {
        int r = est_flag(c, k, argc, argv, &i, &ep, &given);
        if (r < 0) return EXIT_USAGE;
        if (r) continue;
        int64_t x;
        if (!strcmp(argv[i], "--gpus") || !strncmp(argv[i], "--gpus=", 7)) {
            const char *v = argv[i][6] == '=' ? argv[i] + 7 : i + 1 < argc ? argv[++i] : NULL;
            if (cli_int_arg(c, k, "--gpus", v, 0, HOST_MAX_GPUS, &x)) return EXIT_USAGE;
            ep.ndev = (size_t)x;
        } else if (argv[i][0] == '-' || file) {
            return cli_usage_error(c, k, "model inspect: unexpected argument '%s'", argv[i]);
        } else {
            file = argv[i];
        }
    }
    if (!file) return cli_usage_error(c, k, "model inspect: missing FILE");
    gguf_file g;
    char err[512];
    if (gguf_open(&g, file, err, sizeof err)) {
        fprintf(stderr, "gpumod: model inspect: %s\n", err);
        return EXIT_REFUSED;
    }
    model_summary m;
    if (model_describe(&g, &m, err, sizeof err)) {
        fprintf(stderr, "gpumod: model inspect: '%s': %s\n", file, err);
        gguf_release(&g);
        return EXIT_REFUSED;
    }
    estimate e;
    char eerr[512] = "";
    int erc = estimate_llamacpp(&g, &ep, &e, eerr, sizeof eerr);
    buf b = BUF_INIT;
    if (c->json) {
        model_inspect_json(&b, file, &g, &m, &ep, erc ? NULL : &e, eerr);
    } else {
        buf_printf(&b, "%s\n  architecture %s", file, m.arch);
        if (m.name[0]) buf_printf(&b, " (%s)", m.name);
        buf_printf(&b, ", GGUF v%u, %zu tensors", g.version, g.ntensors);
        if (g.split_count > 1) buf_printf(&b, " in %u files", g.split_count);
        if (m.n_params >= 1000000000ull)
            buf_printf(&b, "\n  parameters %.2f B, weights ", (double)m.n_params / 1e9);
        else
            buf_printf(&b, "\n  parameters %.2f M, weights ", (double)m.n_params / 1e6);
        buf_bytes(&b, m.weight_bytes);
        buf_printf(&b, ", file type %s\n", m.file_type_name ? m.file_type_name : "unknown");
        buf_printf(&b,
                   "  layers %lld, embedding %lld, heads %lld, KV heads %lld, trained context "
                   "%lld, vocab %lld\n",
                   (long long)m.n_layer, (long long)m.n_embd, (long long)m.n_head,
                   (long long)m.n_head_kv, (long long)m.n_ctx_train, (long long)m.n_vocab);
        if (m.n_expert)
            buf_printf(&b, "  experts %lld (%lld used)\n", (long long)m.n_expert,
                       (long long)m.n_expert_used);
        if (m.n_swa) buf_printf(&b, "  sliding window %lld\n", (long long)m.n_swa);
        if (m.kv_lora_rank) buf_printf(&b, "  MLA latent rank %lld\n", (long long)m.kv_lora_rank);
        if (m.recurrent) buf_adds(&b, "  recurrent / SSM layers\n");
        if (m.embedding) buf_adds(&b, "  embedding model\n");
        buf_printf(&b, "estimate for llama-server -c %lld --parallel %lld -ctk %s -ctv %s -ngl ",
                   (long long)ep.ctx, (long long)ep.parallel, ggml_type_get(ep.type_k)->name,
                   ggml_type_get(ep.type_v)->name);
        if (ep.ngl < 0)
            buf_adds(&b, "all");
        else
            buf_printf(&b, "%lld", (long long)ep.ngl);
        if (ep.n_cpu_moe) buf_printf(&b, " --n-cpu-moe %lld", (long long)ep.n_cpu_moe);
        buf_printf(&b, " on %zu GPU%s:\n", ep.ndev, ep.ndev == 1 ? "" : "s");
        if (erc)
            buf_printf(&b, "  %s\n", eerr);
        else
            estimate_text(&b, &e, NULL);
    }
    fputs(b.p, stdout);
    buf_release(&b);
    gguf_release(&g);
    return erc ? EXIT_REFUSED : EXIT_OK;
}

int cmd_model(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("model");
    if (argc < 2) return cli_usage_error(c, k, "model: missing subcommand");
    if (!strcmp(argv[1], "inspect")) return inspect(c, argc - 1, argv + 1, k);
    if (!strcmp(argv[1], "fit") || !strcmp(argv[1], "pull") || !strcmp(argv[1], "search") ||
        !strcmp(argv[1], "config"))
        return cmd_model_helper(c, "gpumod-model", argc, argv);
    return cli_usage_error(c, k, "model: unknown subcommand '%s'", argv[1]);
}

int cmd_preset(cli *c, int argc, char **argv)
{
    return cmd_model_helper(c, "gpumod-preset", argc, argv);
}
