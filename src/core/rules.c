/* rules.c - the rule table: what the seeds and the engines' own docs
 * learned about flags that break or slow an engine on some GPU, as data.
 *
 * Each rule is one row of `rules` below: an id that never changes (config
 * check and tune print it, a user greps for it), a severity, the engine
 * (driver), the GPU condition (a compute-capability range, or unified
 * memory when the capability is unknown), a predicate on the preset that
 * also says what in the preset matched, the text a person reads, and the
 * source, which the comment above the row quotes more fully.  Adding a
 * rule is adding a row and a predicate; docs/rules.md is rendered from
 * the same rows (rules_doc_markdown, scripts/update-docs).
 *
 * The predicates read the preset as the engine will see its command
 * line: the typed keys, overridden by `extra_args` and then `args`
 * (the drivers append them in that order and the engines take a flag's
 * last value), and `env`.  A rule never guesses a GPU fact it lacks: a
 * GPU rule fires only when the host probe knew the capability. */
#include "core/rules.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const rule_severity_names[] = {"warn", "refuse", NULL};

#define CC(major, minor) ((major) * 100 + (minor))

typedef struct rule {
    const char *id;
    rule_severity severity;
    int driver;          /* driver_kind; -1: any */
    int cc_lo, cc_hi;    /* CC() range the GPU must be in; 0: any GPU (no fact needed) */
    bool or_unified;     /* also fires on unified memory whose capability is unknown */
    const char *gpu;     /* the GPU condition in words (docs) */
    /* true when p breaks the rule; what = the setting that does, in the
     * preset's words ("spec_type draft-mtp with parallel 2") */
    bool (*when)(const preset *p, char *what, size_t n);
    const char *cond;    /* the predicate in words (docs) */
    const char *text;
    const char *source;
} rule;

/* ---- reading the preset as the engine's command line ------------------- */

static const char *const F_PARALLEL[] = {"-np", "--parallel", NULL};
static const char *const F_SPEC_TYPE[] = {"--spec-type", NULL};
static const char *const F_MODEL_DRAFT[] = {"-md", "--model-draft", "--spec-draft-model", NULL};
static const char *const F_CTK[] = {"-ctk", "--cache-type-k", NULL};
static const char *const F_CTV[] = {"-ctv", "--cache-type-v", NULL};
static const char *const F_DISABLE_LOG_REQ[] = {"--disable-log-requests", NULL};
static const char *const F_ATTN_BACKEND[] = {"--attention-backend", NULL};
static const char *const F_QUANT[] = {"--quantization", "-q", NULL};
static const char *const F_GEN_CONFIG[] = {"--generation-config", NULL};
static const char *const F_TOOLS[] = {"--enable-auto-tool-choice", "--tool-call-parser", NULL};

/* argv[i] is one of names (as "--flag" or "--flag=value"): its value
 * ("" for a switch at the end), else NULL */
static const char *flag_at(const strv *argv, size_t i, const char *const *names)
{
    const char *a = argv->v[i];
    for (const char *const *n = names; *n; n++) {
        size_t len = strlen(*n);
        if (strncmp(a, *n, len) != 0) continue;
        if (a[len] == '=') return a + len + 1;
        if (a[len] == '\0') return i + 1 < argv->n ? argv->v[i + 1] : "";
    }
    return NULL;
}

/* The last value extra_args, then args, give the flag; NULL when neither
 * names it.  The value of a switch is the next word: ask only whether
 * it is there (arg_given) for those. */
static const char *arg_value(const preset *p, const char *const *names)
{
    const strv *lists[] = {&p->extra_args, &p->args};
    const char *val = NULL;
    for (size_t l = 0; l < 2; l++)
        for (size_t i = 0; i < lists[l]->n; i++) {
            const char *v = flag_at(lists[l], i, names);
            if (v) val = v;
        }
    return val;
}

static bool arg_given(const preset *p, const char *const *names)
{
    return arg_value(p, names) != NULL;
}

static const char *env_value(const preset *p, const char *name)
{
    const kvpair *kv = kvlist_get(&p->env, name);
    return kv ? kv->val : NULL;
}

static bool contains_ci(const char *s, const char *needle)
{
    return s && strcasestr(s, needle) != NULL;
}

static int64_t llama_parallel(const preset *p)
{
    const char *v = arg_value(p, F_PARALLEL);
    if (v) {
        char *end;
        long long n = strtoll(v, &end, 10);
        if (end != v && !*end) return n;
    }
    return p->llama.parallel;
}

static const char *llama_spec_type(const preset *p)
{
    const char *v = arg_value(p, F_SPEC_TYPE);
    return v ? v : p->llama.spec_type;
}

static bool spec_on(const char *type)
{
    return type && *type && strcmp(type, "none") != 0;
}

static const char *kv_type(const preset *p, const char *const *flag, const char *typed)
{
    const char *v = arg_value(p, flag);
    return v ? v : typed ? typed : "f16"; /* llama-server's default */
}

static int say(char *what, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say(char *what, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(what, n, fmt, ap);
    va_end(ap);
    return r;
}

/* ---- the predicates ------------------------------------------------------ */

static bool mtp_parallel(const preset *p, char *what, size_t n)
{
    const char *t = llama_spec_type(p);
    int64_t np = llama_parallel(p);
    if (!t || strcmp(t, "draft-mtp") != 0 || np <= 1) return false;
    say(what, n, "spec_type %s with parallel %lld", t, (long long)np);
    return true;
}

static bool draft_parallel(const preset *p, char *what, size_t n)
{
    const char *t = llama_spec_type(p);
    int64_t np = llama_parallel(p);
    if (!spec_on(t) || strcmp(t, "draft-mtp") == 0 || np <= 1) return false;
    say(what, n, "spec_type %s with parallel %lld", t, (long long)np);
    return true;
}

static bool draft_without_type(const preset *p, char *what, size_t n)
{
    const char *md = arg_value(p, F_MODEL_DRAFT);
    if (!md) md = p->llama.model_draft;
    if (!md || !*md || spec_on(llama_spec_type(p))) return false;
    say(what, n, "model_draft '%s' without spec_type", md);
    return true;
}

/* f16, bf16, f32 are not quantized; q4_0 is the one quantized type the
 * SM_120 report found on the fast path */
static bool kv_slow_on_sm120(const char *t)
{
    static const char *const fast[] = {"f16", "bf16", "f32", "q4_0", NULL};
    for (const char *const *f = fast; *f; f++)
        if (strcasecmp(t, *f) == 0) return false;
    return true;
}

static bool kv_quant_sm120(const preset *p, char *what, size_t n)
{
    const char *k = kv_type(p, F_CTK, p->llama.cache_type_k);
    const char *v = kv_type(p, F_CTV, p->llama.cache_type_v);
    bool sk = kv_slow_on_sm120(k), sv = kv_slow_on_sm120(v);
    if (sk && sv) say(what, n, "cache_type_k %s, cache_type_v %s", k, v);
    else if (sk) say(what, n, "cache_type_k %s", k);
    else if (sv) say(what, n, "cache_type_v %s", v);
    return sk || sv;
}

static bool disable_log_requests(const preset *p, char *what, size_t n)
{
    if (!arg_given(p, F_DISABLE_LOG_REQ)) return false;
    say(what, n, "--disable-log-requests in args/extra_args");
    return true;
}

/* The attention backend vLLM will use, when the preset chooses one. */
static const char *vllm_attention(const preset *p, const char **where)
{
    const char *v = arg_value(p, F_ATTN_BACKEND);
    *where = "--attention-backend";
    if (!v) {
        v = env_value(p, "VLLM_ATTENTION_BACKEND");
        *where = "VLLM_ATTENTION_BACKEND";
    }
    return v && *v ? v : NULL;
}

static bool gb10_no_triton(const preset *p, char *what, size_t n)
{
    const char *where, *v = vllm_attention(p, &where);
    if (v && strcasecmp(v, "TRITON_ATTN") == 0) return false;
    if (v && contains_ci(v, "FLASHINFER")) return false; /* gb10_flashinfer's */
    if (v) say(what, n, "%s %s", where, v);
    else say(what, n, "no attention backend chosen (neither VLLM_ATTENTION_BACKEND nor --attention-backend)");
    return true;
}

static bool gb10_flashinfer(const preset *p, char *what, size_t n)
{
    const char *where, *v = vllm_attention(p, &where);
    if (!v || !contains_ci(v, "FLASHINFER")) return false;
    say(what, n, "%s %s", where, v);
    return true;
}

/* The checkpoint is NVFP4: by its name (the seeds' checkpoints all say
 * so) or by the quantization flag. */
static bool is_nvfp4(const preset *p)
{
    const char *q = arg_value(p, F_QUANT);
    return contains_ci(p->model_id, "nvfp4") || contains_ci(p->model_path, "nvfp4") || contains_ci(q, "fp4");
}

static bool gb10_nvfp4_marlin(const preset *p, char *what, size_t n)
{
    const char *b = env_value(p, "VLLM_NVFP4_GEMM_BACKEND");
    if (!is_nvfp4(p) || (b && strcasecmp(b, "marlin") == 0)) return false;
    if (b) say(what, n, "an NVFP4 model with VLLM_NVFP4_GEMM_BACKEND=%s", b);
    else say(what, n, "an NVFP4 model without VLLM_NVFP4_GEMM_BACKEND=marlin");
    return true;
}

static bool gb10_crashing_env(const preset *p, char *what, size_t n)
{
    const char *fp8 = env_value(p, "VLLM_TEST_FORCE_FP8_MARLIN");
    const char *moe = env_value(p, "VLLM_USE_FLASHINFER_MOE_FP4");
    if (fp8 && strcmp(fp8, "1") == 0) {
        say(what, n, "VLLM_TEST_FORCE_FP8_MARLIN=1");
        return true;
    }
    if (moe && strcmp(moe, "0") == 0) {
        say(what, n, "VLLM_USE_FLASHINFER_MOE_FP4=0");
        return true;
    }
    return false;
}

static bool qwen3_thinking_tools(const preset *p, char *what, size_t n)
{
    const char *model = p->model_path ? p->model_path : p->model_id;
    const char *g = arg_value(p, F_GEN_CONFIG);
    if (!contains_ci(model, "qwen3") || !arg_given(p, F_TOOLS)) return false;
    if (g && strcmp(g, "vllm") == 0) return false;
    if (g) say(what, n, "a Qwen3 model with tool calling and --generation-config %s", g);
    else say(what, n, "a Qwen3 model with tool calling and no --generation-config vllm");
    return true;
}

/* ---- the table ------------------------------------------------------------ */

#define ANY_GPU 0, 0, false, "any"
#define SM120 CC(12, 0), CC(12, 0), false, "cc 12.0 (consumer Blackwell, SM_120)"
#define GB10 CC(12, 1), CC(12, 1), true, "cc 12.1 (GB10, DGX Spark), or unified memory of unknown cc"

static const rule rules[] = {
    /* Seed 000 (the gpumod blog, Qwen3.6 MTP on llama.cpp b9297): "--parallel 1
     * is required — MTP doesn't support -np>1 yet", next to --spec-type
     * draft-mtp --spec-draft-n-max 2 in the unit's flags. */
    {"llama-mtp-parallel", RULE_REFUSE, DRV_LLAMACPP, ANY_GPU, mtp_parallel,
     "spec_type draft-mtp and parallel (or -np/--parallel in args) above 1",
     "MTP speculative decoding supports one slot only: set parallel: 1",
     "seed 000 (Qwen3.6 MTP on llama.cpp b9297: \"--parallel 1 is required\")"},
    /* Issue 18 names draft models with --parallel > 1 beside MTP; the seeds
     * measured speculative decoding only at --parallel 1, and each slot
     * drafts for itself, so several slots multiply the draft's work.  A
     * warning: measured, not refused. */
    {"llama-draft-parallel", RULE_WARN, DRV_LLAMACPP, ANY_GPU, draft_parallel,
     "a speculative spec_type other than draft-mtp and parallel above 1",
     "speculative decoding was measured at parallel 1 only; each slot drafts on its own, so the speed-up "
     "may shrink or invert with several slots: measure it (gpumod bench) before relying on it",
     "issue 18; seed 000 (speculative runs at --parallel 1)"},
    /* research/llama-server.md, speculative decoding: "--model-draft alone
     * does nothing: /slots shows speculative:false. --spec-type defaults to
     * none and must be given." */
    {"llama-draft-without-spec-type", RULE_WARN, DRV_LLAMACPP, ANY_GPU, draft_without_type,
     "model_draft (or -md/--model-draft in args) set, spec_type unset or none",
     "llama-server loads the draft model but does not use it until spec_type names a speculative type "
     "(e.g. draft-simple): the memory is spent for nothing",
     "research/llama-server.md (speculative decoding, measured on llama-server)"},
    /* Seed 002 (consumer Blackwell SM_120 research): "q4_0 and f16 KV cache
     * only. q8_0, q5_0, and iq4_nl all degrade significantly — they fall
     * back to unoptimized paths with 15–30% throughput loss."  Not on GB10
     * (cc 12.1): seed 001's grid found q8_0 free there (58.02 vs 58.91 t/s).
     * Not vLLM's fp8 KV cache: seed 002 runs it on SM_120 as an upgrade
     * (stable at 88 t/s), so there is no evidence to warn on. */
    {"llama-kv-quant-sm120", RULE_WARN, DRV_LLAMACPP, SM120, kv_quant_sm120,
     "cache_type_k or cache_type_v (or -ctk/-ctv in args) other than f16, bf16, f32, q4_0",
     "on SM_120 quantized KV cache types other than q4_0 fall back to unoptimized kernels, 15-30 % fewer "
     "tokens/s: use f16, or q4_0 when memory is short",
     "seed 002 (SM_120 KV dtype selection: 15-30 % throughput loss)"},
    /* Seed 002: the vLLM FP8 TP=2 attempt "failed — wrong flag
     * (--disable-log-requests removed in newer vLLM)".  vLLM logs no
     * requests by default now; --enable-log-requests turns them on. */
    {"vllm-disable-log-requests", RULE_REFUSE, DRV_VLLM, ANY_GPU, disable_log_requests,
     "--disable-log-requests in args or extra_args",
     "newer vLLM removed --disable-log-requests and exits on it as an unrecognized argument; request "
     "logging is off by default (--enable-log-requests turns it on): drop the flag",
     "seed 002 (vLLM FP8 TP=2 failure: \"--disable-log-requests removed in newer vLLM\")"},
    /* Seed 001 (DGX Spark / GB10, vLLM): "Two mandatory settings ... FlashInfer
     * has no sm_121 cubins: --attention-backend TRITON_ATTN". */
    {"vllm-gb10-attention", RULE_WARN, DRV_VLLM, GB10, gb10_no_triton,
     "attention backend (VLLM_ATTENTION_BACKEND or --attention-backend) not TRITON_ATTN",
     "on GB10 (sm_121) vLLM needs the Triton attention backend: set VLLM_ATTENTION_BACKEND=TRITON_ATTN "
     "(or --attention-backend TRITON_ATTN)",
     "seed 001 (GB10 recipe: \"--attention-backend TRITON_ATTN\", mandatory)"},
    {"vllm-gb10-flashinfer", RULE_REFUSE, DRV_VLLM, GB10, gb10_flashinfer,
     "attention backend FLASHINFER chosen explicitly",
     "FlashInfer ships no sm_121 kernels, so this backend cannot run on GB10: use TRITON_ATTN",
     "seed 001 (GB10 recipe: \"FlashInfer has no sm_121 cubins\")"},
    /* Seed 001: "CUTLASS NVFP4 uses TMEM/SMEM that sm_121 doesn't have:
     * VLLM_NVFP4_GEMM_BACKEND=marlin"; without it a test "produced garbage
     * output, then worked after setting the Marlin backend", and Marlin is
     * also the faster kernel on the bandwidth-bound GB10. */
    {"vllm-gb10-nvfp4-marlin", RULE_WARN, DRV_VLLM, GB10, gb10_nvfp4_marlin,
     "an NVFP4 model (its id or path says nvfp4, or --quantization *fp4) without "
     "VLLM_NVFP4_GEMM_BACKEND=marlin in env",
     "on GB10 the CUTLASS NVFP4 kernels need tensor memory sm_121 lacks and gave garbage output; "
     "set VLLM_NVFP4_GEMM_BACKEND=marlin (also the faster kernel there)",
     "seed 001 (GB10 recipe: VLLM_NVFP4_GEMM_BACKEND=marlin; garbage output without it)"},
    /* Seed 001: of NVIDIA's three suggested variables, VLLM_USE_FLASHINFER_MOE_FP4=0
     * "triggers a ValueError on Qwen models" and VLLM_TEST_FORCE_FP8_MARLIN=1
     * "crashes on merged linear layers"; "the safe minimal config is just
     * VLLM_NVFP4_GEMM_BACKEND=marlin". */
    {"vllm-gb10-crashing-env", RULE_WARN, DRV_VLLM, GB10, gb10_crashing_env,
     "VLLM_TEST_FORCE_FP8_MARLIN=1 or VLLM_USE_FLASHINFER_MOE_FP4=0 in env",
     "on GB10 these crashed vLLM (a ValueError on Qwen models, a crash on merged linear layers): "
     "VLLM_NVFP4_GEMM_BACKEND=marlin alone is the safe setting",
     "seed 001 (GB10: \"the safe minimal config is just VLLM_NVFP4_GEMM_BACKEND=marlin\")"},
    /* Seed 001: Qwen 35B and 27B "appeared to completely fail tool calling";
     * "without --generation-config vllm, Qwen3 models default to thinking
     * mode ... the XML tool call parser can't find the tool calls inside
     * the thinking wrapper". */
    {"vllm-qwen3-thinking-tools", RULE_WARN, DRV_VLLM, ANY_GPU, qwen3_thinking_tools,
     "a model whose path or id contains qwen3, tool calling on (--enable-auto-tool-choice or "
     "--tool-call-parser), no --generation-config vllm",
     "Qwen3 thinks by default and its tool calls then hide inside the thinking block, where the tool-call parser "
     "does not find them: add --generation-config vllm to args",
     "seed 001 (the --generation-config vllm discovery: tool calls lost to thinking)"},
};

#define N_RULES (sizeof rules / sizeof rules[0])

size_t rules_count(void)
{
    return N_RULES;
}

static bool gpu_matches(const rule *r, const rule_host *h)
{
    if (!r->cc_lo) return true;
    if (!h) return false;
    if (h->cc_major > 0) {
        int cc = CC(h->cc_major, h->cc_minor);
        return cc >= r->cc_lo && cc <= r->cc_hi;
    }
    return r->or_unified && h->unified;
}

bool rules_host_of(const preset *p, const snapshot *s, rule_host *h)
{
    memset(h, 0, sizeof *h);
    if (!s || !s->ngpus) return false;
    const gpu_dev *g = &s->gpus[0];
    if (p->devices.n) {
        const char *d = p->devices.v[0];
        char *end;
        long idx = strtol(d, &end, 10);
        bool is_index = end != d && !*end;
        g = NULL;
        for (size_t i = 0; i < s->ngpus && !g; i++)
            if (is_index ? s->gpus[i].index == idx : strcmp(s->gpus[i].uuid, d) == 0) g = &s->gpus[i];
        if (!g) return false;
    }
    h->cc_major = g->cc_major;
    h->cc_minor = g->cc_minor;
    h->unified = g->unified;
    return true;
}

size_t rules_check(const preset *p, const rule_host *h, rule_hit *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < N_RULES; i++) {
        const rule *r = &rules[i];
        char what[256];
        what[0] = '\0';
        if (r->driver >= 0 && r->driver != p->driver) continue;
        if (!gpu_matches(r, h) || !r->when(p, what, sizeof what)) continue;
        if (n < max) {
            out[n].id = r->id;
            out[n].severity = (int)r->severity;
            snprintf(out[n].text, sizeof out[n].text, "%s: %s", what, r->text);
        }
        n++;
    }
    return n;
}

/* A table cell: '|' escaped, newlines never occur in the table's text. */
static void cell(buf *out, const char *s)
{
    buf_adds(out, " ");
    for (; *s; s++) {
        if (*s == '|') buf_adds(out, "\\|");
        else buf_addc(out, *s);
    }
    buf_adds(out, " |");
}

void rules_doc_markdown(buf *out)
{
    buf_adds(out, "| id | engine | GPU | severity | when | text | source |\n|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < N_RULES; i++) {
        const rule *r = &rules[i];
        buf_printf(out, "| `%s` |", r->id);
        cell(out, r->driver >= 0 ? driver_names[r->driver] : "any");
        cell(out, r->gpu);
        cell(out, rule_severity_names[r->severity]);
        cell(out, r->cond);
        cell(out, r->text);
        cell(out, r->source);
        buf_addc(out, '\n');
    }
}
