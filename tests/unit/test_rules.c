/* test_rules.c - the rule table (src/core/rules.c): every rule fires on
 * the preset it is about and not on its neighbours (another value, the
 * other engine, another GPU, an unknown GPU), flags in args/extra_args
 * override the typed keys as on the engine's command line, the hit's
 * text names the setting, rules_host_of picks the preset's GPU from a
 * snapshot, and the Markdown table has a row per rule with its source. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/rules.h"

static const rule_host SM120 = {12, 0, false};
static const rule_host GB10 = {12, 1, true};
static const rule_host H100 = {9, 0, false};
static const rule_host UNIFIED_UNKNOWN_CC = {0, 0, true};

/* A preset as config_load leaves one: the driver's defaults filled. */
static void preset_new(preset *p, int driver)
{
    memset(p, 0, sizeof *p);
    p->id = (char *)"p";
    p->driver = driver;
    p->llama.parallel = 1;
    p->llama.n_gpu_layers = -1;
    p->llama.threads = p->llama.n_cpu_moe = -1;
    p->vllm.gpu_memory_utilization = -1;
    p->vllm.tensor_parallel_size = -1;
}

static void preset_free(preset *p)
{
    strv_release(&p->args);
    strv_release(&p->extra_args);
    kvlist_release(&p->env);
}

static void args(strv *v, const char *s) /* space-separated words */
{
    char words[256];
    snprintf(words, sizeof words, "%s", s);
    for (char *save = NULL, *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save))
        strv_push(v, w);
}

static void env(preset *p, const char *k, const char *v)
{
    srcpos pos = {0};
    kvlist_set(&p->env, k, v, pos);
}

/* The hit with this id, or NULL; also checks the count against max. */
static const rule_hit *fired(const preset *p, const rule_host *h, const char *id)
{
    static rule_hit hits[64];
    size_t n = rules_check(p, h, hits, 64);
    assert_true(n <= rules_count());
    for (size_t i = 0; i < n; i++)
        if (strcmp(hits[i].id, id) == 0) return &hits[i];
    return NULL;
}

static void mtp_parallel(void **state)
{
    (void)state;
    preset p;
    preset_new(&p, DRV_LLAMACPP);
    p.llama.spec_type = (char *)"draft-mtp";
    assert_null(fired(&p, NULL, "llama-mtp-parallel")); /* parallel 1: the seed's setting */
    p.llama.parallel = 2;
    const rule_hit *h = fired(&p, NULL, "llama-mtp-parallel");
    assert_non_null(h);
    assert_int_equal(h->severity, RULE_REFUSE);
    assert_string_equal(h->text, "spec_type draft-mtp with parallel 2: MTP speculative decoding supports one slot "
                                 "only: set parallel: 1");
    assert_null(fired(&p, NULL, "llama-draft-parallel")); /* MTP is this rule's, not the draft one's */
    /* args override the typed key, the last value wins */
    p.llama.parallel = 1;
    args(&p.extra_args, "-np 4");
    assert_non_null(fired(&p, NULL, "llama-mtp-parallel"));
    args(&p.args, "--parallel=1");
    assert_null(fired(&p, NULL, "llama-mtp-parallel"));
    preset_free(&p);
    /* --spec-type in args; the vLLM driver never */
    preset_new(&p, DRV_LLAMACPP);
    p.llama.parallel = 3;
    args(&p.args, "--spec-type draft-mtp");
    assert_non_null(fired(&p, &SM120, "llama-mtp-parallel"));
    p.driver = DRV_VLLM;
    assert_null(fired(&p, &SM120, "llama-mtp-parallel"));
    preset_free(&p);
}

static void draft_parallel(void **state)
{
    (void)state;
    preset p;
    preset_new(&p, DRV_LLAMACPP);
    p.llama.spec_type = (char *)"draft-simple";
    p.llama.model_draft = (char *)"/m/draft.gguf";
    assert_null(fired(&p, NULL, "llama-draft-parallel"));
    p.llama.parallel = 4;
    const rule_hit *h = fired(&p, NULL, "llama-draft-parallel");
    assert_non_null(h);
    assert_int_equal(h->severity, RULE_WARN);
    assert_non_null(strstr(h->text, "spec_type draft-simple with parallel 4: "));
    p.llama.spec_type = (char *)"none";
    assert_null(fired(&p, NULL, "llama-draft-parallel"));
    preset_free(&p);
}

static void draft_without_spec_type(void **state)
{
    (void)state;
    preset p;
    preset_new(&p, DRV_LLAMACPP);
    assert_null(fired(&p, NULL, "llama-draft-without-spec-type"));
    p.llama.model_draft = (char *)"/m/draft.gguf";
    const rule_hit *h = fired(&p, NULL, "llama-draft-without-spec-type");
    assert_non_null(h);
    assert_int_equal(h->severity, RULE_WARN);
    assert_non_null(strstr(h->text, "model_draft '/m/draft.gguf' without spec_type: "));
    p.llama.spec_type = (char *)"none";
    assert_non_null(fired(&p, NULL, "llama-draft-without-spec-type"));
    args(&p.args, "--spec-type draft-simple");
    assert_null(fired(&p, NULL, "llama-draft-without-spec-type"));
    preset_free(&p);
    preset_new(&p, DRV_LLAMACPP);
    args(&p.extra_args, "-md /m/d.gguf");
    assert_non_null(fired(&p, NULL, "llama-draft-without-spec-type"));
    preset_free(&p);
}

static void kv_quant_sm120(void **state)
{
    (void)state;
    preset p;
    preset_new(&p, DRV_LLAMACPP);
    assert_null(fired(&p, &SM120, "llama-kv-quant-sm120")); /* f16 by default */
    p.llama.cache_type_k = (char *)"q8_0";
    p.llama.cache_type_v = (char *)"q8_0";
    const rule_hit *h = fired(&p, &SM120, "llama-kv-quant-sm120");
    assert_non_null(h);
    assert_int_equal(h->severity, RULE_WARN);
    assert_non_null(strstr(h->text, "cache_type_k q8_0, cache_type_v q8_0: "));
    assert_non_null(strstr(h->text, "15-30 %"));
    /* not on GB10 (the seed found q8_0 free there), an H100, or an unknown GPU */
    assert_null(fired(&p, &GB10, "llama-kv-quant-sm120"));
    assert_null(fired(&p, &H100, "llama-kv-quant-sm120"));
    assert_null(fired(&p, NULL, "llama-kv-quant-sm120"));
    assert_null(fired(&p, &UNIFIED_UNKNOWN_CC, "llama-kv-quant-sm120"));
    /* q4_0 keeps the fast path; only V quantized still fires */
    p.llama.cache_type_k = (char *)"q4_0";
    p.llama.cache_type_v = (char *)"iq4_nl";
    h = fired(&p, &SM120, "llama-kv-quant-sm120");
    assert_non_null(h);
    assert_non_null(strstr(h->text, "cache_type_v iq4_nl: "));
    p.llama.cache_type_v = (char *)"f16";
    assert_null(fired(&p, &SM120, "llama-kv-quant-sm120"));
    args(&p.args, "-ctk q5_0");
    h = fired(&p, &SM120, "llama-kv-quant-sm120");
    assert_non_null(h);
    assert_non_null(strstr(h->text, "cache_type_k q5_0: "));
    /* vLLM's fp8 KV cache is not this rule's */
    p.driver = DRV_VLLM;
    p.vllm.kv_cache_dtype = (char *)"fp8";
    assert_null(fired(&p, &SM120, "llama-kv-quant-sm120"));
    preset_free(&p);
}

static void disable_log_requests(void **state)
{
    (void)state;
    preset p;
    preset_new(&p, DRV_VLLM);
    args(&p.args, "--enable-prefix-caching");
    assert_null(fired(&p, NULL, "vllm-disable-log-requests"));
    args(&p.extra_args, "--disable-log-requests");
    const rule_hit *h = fired(&p, NULL, "vllm-disable-log-requests");
    assert_non_null(h);
    assert_int_equal(h->severity, RULE_REFUSE);
    assert_non_null(strstr(h->text, "--disable-log-requests in args/extra_args: newer vLLM removed"));
    p.driver = DRV_LLAMACPP;
    assert_null(fired(&p, NULL, "vllm-disable-log-requests"));
    preset_free(&p);
    preset_new(&p, DRV_VLLM);
    args(&p.args, "--disable-log-requests=true");
    assert_non_null(fired(&p, &H100, "vllm-disable-log-requests"));
    preset_free(&p);
}

static void gb10_attention(void **state)
{
    (void)state;
    preset p;
    preset_new(&p, DRV_VLLM);
    const rule_hit *h = fired(&p, &GB10, "vllm-gb10-attention");
    assert_non_null(h);
    assert_int_equal(h->severity, RULE_WARN);
    assert_non_null(strstr(h->text, "no attention backend chosen"));
    assert_non_null(fired(&p, &UNIFIED_UNKNOWN_CC, "vllm-gb10-attention"));
    assert_null(fired(&p, &SM120, "vllm-gb10-attention"));
    assert_null(fired(&p, NULL, "vllm-gb10-attention"));
    env(&p, "VLLM_ATTENTION_BACKEND", "TRITON_ATTN");
    assert_null(fired(&p, &GB10, "vllm-gb10-attention"));
    env(&p, "VLLM_ATTENTION_BACKEND", "XFORMERS");
    h = fired(&p, &GB10, "vllm-gb10-attention");
    assert_non_null(h);
    assert_non_null(strstr(h->text, "VLLM_ATTENTION_BACKEND XFORMERS: "));
    args(&p.args, "--attention-backend TRITON_ATTN"); /* the flag wins over the env */
    assert_null(fired(&p, &GB10, "vllm-gb10-attention"));
    p.driver = DRV_LLAMACPP;
    kvlist_release(&p.env);
    memset(&p.env, 0, sizeof p.env);
    strv_release(&p.args);
    assert_null(fired(&p, &GB10, "vllm-gb10-attention"));
    preset_free(&p);
}

static void gb10_flashinfer(void **state)
{
    (void)state;
    preset p;
    preset_new(&p, DRV_VLLM);
    assert_null(fired(&p, &GB10, "vllm-gb10-flashinfer"));
    env(&p, "VLLM_ATTENTION_BACKEND", "FLASHINFER");
    const rule_hit *h = fired(&p, &GB10, "vllm-gb10-flashinfer");
    assert_non_null(h);
    assert_int_equal(h->severity, RULE_REFUSE);
    assert_non_null(strstr(h->text, "VLLM_ATTENTION_BACKEND FLASHINFER: FlashInfer ships no sm_121 kernels"));
    assert_null(fired(&p, &GB10, "vllm-gb10-attention")); /* one rule per mistake */
    assert_null(fired(&p, &H100, "vllm-gb10-flashinfer"));
    preset_free(&p);
}

static void gb10_nvfp4_marlin(void **state)
{
    (void)state;
    preset p;
    preset_new(&p, DRV_VLLM);
    p.model_id = (char *)"RedHatAI/Qwen3-30B-A3B-AWQ";
    assert_null(fired(&p, &GB10, "vllm-gb10-nvfp4-marlin"));
    p.model_id = (char *)"nvidia/Llama-3.3-70B-Instruct-NVFP4";
    const rule_hit *h = fired(&p, &GB10, "vllm-gb10-nvfp4-marlin");
    assert_non_null(h);
    assert_int_equal(h->severity, RULE_WARN);
    assert_non_null(strstr(h->text, "an NVFP4 model without VLLM_NVFP4_GEMM_BACKEND=marlin: "));
    assert_null(fired(&p, &SM120, "vllm-gb10-nvfp4-marlin"));
    env(&p, "VLLM_NVFP4_GEMM_BACKEND", "cutlass");
    assert_non_null(fired(&p, &GB10, "vllm-gb10-nvfp4-marlin"));
    env(&p, "VLLM_NVFP4_GEMM_BACKEND", "marlin");
    assert_null(fired(&p, &GB10, "vllm-gb10-nvfp4-marlin"));
    preset_free(&p);
    preset_new(&p, DRV_VLLM);
    p.model_path = (char *)"/models/m";
    args(&p.args, "--quantization modelopt_fp4");
    assert_non_null(fired(&p, &GB10, "vllm-gb10-nvfp4-marlin"));
    preset_free(&p);
}

static void gb10_crashing_env(void **state)
{
    (void)state;
    preset p;
    preset_new(&p, DRV_VLLM);
    env(&p, "VLLM_NVFP4_GEMM_BACKEND", "marlin");
    assert_null(fired(&p, &GB10, "vllm-gb10-crashing-env"));
    env(&p, "VLLM_TEST_FORCE_FP8_MARLIN", "1");
    const rule_hit *h = fired(&p, &GB10, "vllm-gb10-crashing-env");
    assert_non_null(h);
    assert_non_null(strstr(h->text, "VLLM_TEST_FORCE_FP8_MARLIN=1: "));
    assert_null(fired(&p, &H100, "vllm-gb10-crashing-env"));
    env(&p, "VLLM_TEST_FORCE_FP8_MARLIN", "0");
    assert_null(fired(&p, &GB10, "vllm-gb10-crashing-env"));
    env(&p, "VLLM_USE_FLASHINFER_MOE_FP4", "0");
    h = fired(&p, &GB10, "vllm-gb10-crashing-env");
    assert_non_null(h);
    assert_non_null(strstr(h->text, "VLLM_USE_FLASHINFER_MOE_FP4=0: "));
    preset_free(&p);
}

static void qwen3_thinking_tools(void **state)
{
    (void)state;
    preset p;
    preset_new(&p, DRV_VLLM);
    p.model_id = (char *)"Qwen/Qwen3.6-35B-A3B";
    assert_null(fired(&p, NULL, "vllm-qwen3-thinking-tools")); /* no tool calling: thinking is harmless */
    args(&p.args, "--enable-auto-tool-choice --tool-call-parser qwen3_coder");
    const rule_hit *h = fired(&p, NULL, "vllm-qwen3-thinking-tools");
    assert_non_null(h);
    assert_int_equal(h->severity, RULE_WARN);
    assert_non_null(strstr(h->text, "no --generation-config vllm: "));
    assert_non_null(fired(&p, &GB10, "vllm-qwen3-thinking-tools")); /* any GPU */
    args(&p.args, "--generation-config vllm");
    assert_null(fired(&p, NULL, "vllm-qwen3-thinking-tools"));
    preset_free(&p);
    preset_new(&p, DRV_VLLM);
    p.model_id = (char *)"meta-llama/Llama-3.1-8B";
    args(&p.args, "--tool-call-parser llama3_json");
    assert_null(fired(&p, NULL, "vllm-qwen3-thinking-tools"));
    p.driver = DRV_LLAMACPP;
    p.model_id = (char *)"qwen3";
    assert_null(fired(&p, NULL, "vllm-qwen3-thinking-tools"));
    preset_free(&p);
}

/* A clean preset breaks nothing anywhere; max bounds what is written. */
static void clean_and_max(void **state)
{
    (void)state;
    rule_hit hits[4];
    preset p;
    preset_new(&p, DRV_LLAMACPP);
    assert_int_equal(rules_check(&p, &SM120, hits, 4), 0);
    preset_free(&p);
    preset_new(&p, DRV_VLLM);
    env(&p, "VLLM_ATTENTION_BACKEND", "TRITON_ATTN");
    assert_int_equal(rules_check(&p, &GB10, hits, 4), 0);
    assert_int_equal(rules_check(&p, NULL, hits, 4), 0);
    /* three rules at once, room for one */
    p.model_id = (char *)"x-NVFP4";
    env(&p, "VLLM_TEST_FORCE_FP8_MARLIN", "1");
    args(&p.args, "--disable-log-requests");
    assert_int_equal(rules_check(&p, &GB10, hits, 1), 3);
    assert_string_equal(hits[0].id, "vllm-disable-log-requests"); /* table order */
    preset_free(&p);
}

static void host_of(void **state)
{
    (void)state;
    snapshot s;
    memset(&s, 0, sizeof s);
    rule_host h;
    preset p;
    preset_new(&p, DRV_VLLM);
    assert_false(rules_host_of(&p, NULL, &h));
    assert_false(rules_host_of(&p, &s, &h)); /* no GPU */
    s.ngpus = 2;
    s.gpus[0] = (gpu_dev){.index = 0, .uuid = "GPU-a", .cc_major = 12, .cc_minor = 0};
    s.gpus[1] = (gpu_dev){.index = 1, .uuid = "GPU-b", .cc_major = 12, .cc_minor = 1, .unified = true};
    assert_true(rules_host_of(&p, &s, &h));
    assert_int_equal(h.cc_major, 12);
    assert_int_equal(h.cc_minor, 0);
    assert_false(h.unified);
    strv_push(&p.devices, "1");
    assert_true(rules_host_of(&p, &s, &h));
    assert_int_equal(h.cc_minor, 1);
    assert_true(h.unified);
    strv_release(&p.devices);
    strv_push(&p.devices, "GPU-a");
    assert_true(rules_host_of(&p, &s, &h));
    assert_int_equal(h.cc_minor, 0);
    strv_release(&p.devices);
    strv_push(&p.devices, "7");
    assert_false(rules_host_of(&p, &s, &h));
    assert_int_equal(h.cc_major, 0);
    strv_release(&p.devices);
    preset_free(&p);
}

static void doc_table(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    rules_doc_markdown(&b);
    assert_non_null(strstr(b.p, "| id | engine | GPU | severity | when | text | source |\n"));
    size_t rows = 0;
    for (const char *l = b.p; (l = strstr(l, "\n| `")); l++) rows++;
    assert_int_equal(rows, rules_count());
    assert_non_null(strstr(b.p, "| `llama-kv-quant-sm120` | llamacpp | cc 12.0 (consumer Blackwell, SM_120) | warn |"));
    assert_non_null(strstr(b.p, "| `vllm-disable-log-requests` | vllm | any | refuse |"));
    assert_non_null(strstr(b.p, "seed 002 (SM_120 KV dtype selection"));
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mtp_parallel),       cmocka_unit_test(draft_parallel),
        cmocka_unit_test(draft_without_spec_type), cmocka_unit_test(kv_quant_sm120),
        cmocka_unit_test(disable_log_requests), cmocka_unit_test(gb10_attention),
        cmocka_unit_test(gb10_flashinfer),    cmocka_unit_test(gb10_nvfp4_marlin),
        cmocka_unit_test(gb10_crashing_env),  cmocka_unit_test(qwen3_thinking_tools),
        cmocka_unit_test(clean_and_max),      cmocka_unit_test(host_of),
        cmocka_unit_test(doc_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
