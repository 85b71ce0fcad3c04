/* test_breq.c - one request's classification and metrics (breq.h): the
 * recorded llama-server and vLLM streams of tests/fixtures/bench/streams
 * fed through the SSE parser, each event 10 ms after the last, and one
 * test per rule: role-only, empty, finish-only and usage-only events do
 * not count; reasoning sets t_first but not t_first_content; k from the
 * rises of continuous usage or timings.predicted_n, else 1 (estimated);
 * N_out / N_in / N_cached precedence; llama's timings with draft counts;
 * error objects in the stream; no-token streams; the metric formulas and
 * where they are NaN. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "oai/breq.h"
#include "oai/sse.h"
#include "testenv.h"

#define MS 1000000LL
#define T0 (1000 * MS) /* t_send */

typedef struct feed {
    breq *r;
    int64_t t;
    int n_data, n_bearing;
} feed;

static void on_event(void *ud, const char *type, const char *data, size_t len)
{
    feed *f = ud;
    if (!strcmp(data, "[DONE]")) return;
    f->t += 10 * MS;
    f->n_data++;
    if (breq_on_data(f->r, f->t, data, len)) f->n_bearing++;
}

/* The fixture through sse and breq; request sent at T0, scheduled 2 ms before. */
static feed run_fixture(breq *r, const char *name)
{
    char *rel = xasprintf("tests/fixtures/bench/streams/%s", name);
    char *path = src_path(rel);
    char *text = read_text(path);
    if (!text) fail_msg("cannot read %s", path);
    breq_init(r);
    r->t_sched = T0 - 2 * MS;
    r->t_send = T0;
    r->t_hdr = T0 + 1 * MS;
    r->status = 200;
    feed f = {r, T0, 0, 0};
    sse_parser p;
    sse_init(&p, 1 << 20, on_event, NULL, &f);
    assert_int_equal(sse_feed(&p, text, strlen(text)), 0);
    assert_false(sse_pending(&p));
    sse_release(&p);
    breq_finish(r, f.t + 1 * MS);
    free(text);
    free(path);
    free(rel);
    return f;
}

static void llama_chat(void **state)
{
    breq r;
    feed f = run_fixture(&r, "llama-chat.sse");
    assert_int_equal(f.n_data, 7);
    assert_int_equal(f.n_bearing, 4);
    assert_true(breq_ok(&r));
    assert_null(r.error);
    /* event 1 is role-only: the first token is event 2 */
    assert_int_equal(r.t_first, T0 + 20 * MS);
    assert_int_equal(r.t_first_content, T0 + 20 * MS);
    assert_int_equal(r.t_last, T0 + 50 * MS); /* finish-only and usage-only events do not count */
    assert_int_equal(r.n_ev, 4);
    for (size_t i = 0; i < r.n_ev; i++) assert_int_equal(r.ev[i].k, 1);
    assert_false(r.k_estimated); /* timings_per_token: k from predicted_n */
    assert_int_equal(r.n_out, 4);
    assert_false(r.out_estimated);
    assert_int_equal(r.n_in, 12);
    assert_int_equal(r.n_cached, 0);
    assert_string_equal(r.finish_reason, "length");
    assert_string_equal(r.id, "chatcmpl-q7Hc2Lw9XnEoT0pVb1kR4sYfAa3ZgM6d");
    assert_true(r.has_timings);
    assert_int_equal(r.srv_prompt_n, 12);
    assert_int_equal(r.srv_predicted_n, 4);
    assert_int_equal(r.srv_draft_n, -1);
    assert_int_equal(r.srv_draft_accepted, -1);
    assert_float_equal(r.srv_prompt_ms, 38.412, 1e-9);
    assert_float_equal(r.srv_predicted_ms, 29.0, 1e-9);

    breq_m m;
    breq_metrics(&r, &m);
    assert_float_equal(m.queue_client_ms, 2.0, 1e-9);
    assert_float_equal(m.ttft_ms, 20.0, 1e-9);
    assert_float_equal(m.ttft_sched_ms, 22.0, 1e-9);
    assert_float_equal(m.ttfc_ms, 20.0, 1e-9);
    assert_float_equal(m.e2el_ms, 50.0, 1e-9);
    assert_float_equal(m.tpot_ms, 10.0, 1e-9); /* (50 - 20) / (4 - 1) */
    assert_float_equal(m.prefill_tps, 600.0, 1e-9); /* 12 tokens / 20 ms */
    assert_float_equal(m.chunk_tokens, 1.0, 1e-9);
    breq_release(&r);
}

static void llama_native_spec(void **state)
{
    breq r;
    feed f = run_fixture(&r, "llama-native-spec.sse");
    assert_int_equal(f.n_data, 6);
    assert_int_equal(f.n_bearing, 5); /* the stop event has content "" */
    assert_int_equal(r.t_first, T0 + 10 * MS);
    assert_int_equal(r.t_last, T0 + 50 * MS);
    /* no per-token timings: k assumed 1, N_out from timings.predicted_n */
    assert_true(r.k_estimated);
    assert_int_equal(r.n_out, 5);
    assert_false(r.out_estimated);
    /* no usage: N_in = prompt_n + cache_n, N_cached = cache_n */
    assert_int_equal(r.n_in, 12);
    assert_int_equal(r.n_cached, 3);
    assert_int_equal(r.srv_draft_n, 6);
    assert_int_equal(r.srv_draft_accepted, 4);
    assert_int_equal(r.srv_cache_n, 3);
    assert_string_equal(r.finish_reason, "length"); /* stop_type "limit" */
    assert_string_equal(r.id, "");
    breq_m m;
    breq_metrics(&r, &m);
    assert_float_equal(m.prefill_tps, 900.0, 1e-9); /* (12 - 3) / 10 ms */
    assert_float_equal(m.tpot_ms, 10.0, 1e-9);
    breq_release(&r);
}

static void vllm_chat_reasoning(void **state)
{
    breq r;
    feed f = run_fixture(&r, "vllm-chat.sse");
    assert_int_equal(f.n_data, 7);
    assert_int_equal(f.n_bearing, 5);
    /* the role-only first chunk (completion_tokens 0) does not set t_first;
     * reasoning_content sets t_first but not t_first_content */
    assert_int_equal(r.t_first, T0 + 20 * MS);
    assert_int_equal(r.t_first_content, T0 + 40 * MS);
    assert_int_equal(r.t_last, T0 + 60 * MS);
    /* the </think> token had no chunk of its own: "Paris" carries 2 */
    int32_t want_k[] = {1, 1, 2, 1, 1};
    assert_int_equal(r.n_ev, 5);
    for (size_t i = 0; i < 5; i++) assert_int_equal(r.ev[i].k, want_k[i]);
    assert_false(r.k_estimated);
    assert_int_equal(r.n_out, 6);
    assert_int_equal(r.n_in, 20);
    assert_int_equal(r.n_cached, 8);
    assert_false(r.has_timings);
    assert_string_equal(r.finish_reason, "stop");
    assert_string_equal(r.id, "chatcmpl-5c1f0e7a9b2d4c3e8f6a1b0c9d8e7f6a");
    breq_m m;
    breq_metrics(&r, &m);
    assert_float_equal(m.ttft_ms, 20.0, 1e-9);
    assert_float_equal(m.ttfc_ms, 40.0, 1e-9);
    assert_float_equal(m.tpot_ms, 8.0, 1e-9);     /* (60 - 20) / (6 - 1) */
    assert_float_equal(m.prefill_tps, 600.0, 1e-9); /* (20 - 8) / 20 ms */
    assert_float_equal(m.chunk_tokens, 1.2, 1e-9);
    breq_release(&r);
}

static void vllm_completions_spec(void **state)
{
    breq r;
    feed f = run_fixture(&r, "vllm-completions-spec.sse");
    assert_int_equal(f.n_bearing, 4);
    int32_t want_k[] = {1, 3, 1, 2};
    assert_int_equal(r.n_ev, 4);
    for (size_t i = 0; i < 4; i++) assert_int_equal(r.ev[i].k, want_k[i]);
    assert_int_equal(r.t_first, T0 + 10 * MS);
    assert_int_equal(r.t_first_content, T0 + 10 * MS);
    assert_int_equal(r.n_out, 7);
    assert_int_equal(r.n_in, 6);
    assert_int_equal(r.n_cached, -1);
    assert_string_equal(r.finish_reason, "length");
    breq_m m;
    breq_metrics(&r, &m);
    assert_float_equal(m.chunk_tokens, 1.75, 1e-9);
    assert_float_equal(m.tpot_ms, 5.0, 1e-9); /* (40 - 10) / 6 */
    assert_float_equal(m.prefill_tps, 600.0, 1e-9); /* n_cached unknown counts as 0 */
    breq_release(&r);
}

/* A request built by hand: events as JSON strings at 10 ms steps. */
static void run_events(breq *r, const char *const *ev, size_t n)
{
    breq_init(r);
    r->t_send = T0;
    r->status = 200;
    for (size_t i = 0; i < n; i++) breq_on_data(r, T0 + (int64_t)(i + 1) * 10 * MS, ev[i], strlen(ev[i]));
    breq_finish(r, T0 + (int64_t)(n + 1) * 10 * MS);
}

static void continuous_usage_three_tokens(void **state)
{
    const char *ev[] = {
        "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":0}}",
        "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a b c\"}}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}",
    };
    breq r;
    run_events(&r, ev, 2);
    assert_int_equal(r.n_ev, 1);
    assert_int_equal(r.ev[0].k, 3);
    assert_int_equal(r.t_first, T0 + 20 * MS);
    assert_false(r.k_estimated);
    assert_int_equal(r.n_out, 3);
    breq_release(&r);
}

static void counter_rise_without_text(void **state)
{
    /* a continuous counter that rises on an otherwise empty delta counts;
     * the same total on a finish chunk, never seen before, does not */
    const char *ev[] = {
        "{\"choices\":[{\"delta\":{\"role\":\"assistant\"}}],\"usage\":{\"completion_tokens\":0}}",
        "{\"choices\":[{\"delta\":{}}],\"usage\":{\"completion_tokens\":2}}",
    };
    breq r;
    run_events(&r, ev, 2);
    assert_int_equal(r.n_ev, 1);
    assert_int_equal(r.ev[0].k, 2);
    assert_int_equal(r.t_first_content, 0);
    breq_release(&r);
    const char *ev2[] = {
        "{\"choices\":[{\"delta\":{\"content\":\"x\"}}]}",
        "{\"choices\":[{\"finish_reason\":\"stop\",\"delta\":{}}],\"timings\":{\"prompt_n\":3,\"predicted_n\":9}}",
    };
    run_events(&r, ev2, 2);
    assert_int_equal(r.n_ev, 1);
    assert_int_equal(r.t_last, T0 + 10 * MS);
    assert_int_equal(r.n_out, 9); /* the server's count wins */
    assert_true(r.k_estimated);
    breq_release(&r);
}

static void usage_only_final(void **state)
{
    /* vLLM without continuous usage: k estimated, N_out from the final usage chunk */
    const char *ev[] = {
        "{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}",
        "{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}",
        "{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there\"},\"finish_reason\":\"length\"}]}",
        "{\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":5,\"total_tokens\":12}}",
    };
    breq r;
    breq_init(&r);
    r.t_send = T0;
    r.status = 200;
    assert_false(breq_on_data(&r, T0 + 10 * MS, ev[0], strlen(ev[0])));
    assert_true(breq_on_data(&r, T0 + 20 * MS, ev[1], strlen(ev[1])));
    assert_true(breq_on_data(&r, T0 + 30 * MS, ev[2], strlen(ev[2])));
    assert_false(breq_on_data(&r, T0 + 40 * MS, ev[3], strlen(ev[3]))); /* usage-only: not an event */
    breq_finish(&r, T0 + 50 * MS);
    assert_int_equal(r.n_ev, 2);
    assert_int_equal(r.t_last, T0 + 30 * MS);
    assert_int_equal(r.n_out, 5);
    assert_false(r.out_estimated);
    assert_true(r.k_estimated);
    assert_int_equal(r.n_in, 7);
    breq_m m;
    breq_metrics(&r, &m);
    assert_float_equal(m.e2el_ms, 30.0, 1e-9);
    assert_float_equal(m.tpot_ms, 2.5, 1e-9); /* (30 - 20) / 4 */
    breq_release(&r);
}

static void channels(void **state)
{
    const char *ev[] = {
        "{\"choices\":[{\"delta\":{\"reasoning\":\"hmm\"}}]}",                     /* vLLM >= 0.10 name */
        "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\"}}]}}]}",
        "{\"choices\":[{\"delta\":{\"content\":null,\"tool_calls\":[]}}]}",       /* empty */
        "{\"choices\":[{\"delta\":{\"content\":\"\"}}]}",                            /* empty */
        "{\"content\":\"native\",\"stop\":false}",
    };
    breq r;
    run_events(&r, ev, 5);
    assert_int_equal(r.n_ev, 3);
    assert_int_equal(r.t_first, T0 + 10 * MS);
    assert_int_equal(r.ev[1].t_ns, T0 + 20 * MS);
    assert_int_equal(r.t_first_content, T0 + 50 * MS);
    assert_int_equal(r.t_last, T0 + 50 * MS);
    /* nothing said how many: counted, and flagged */
    assert_int_equal(r.n_out, 3);
    assert_true(r.out_estimated);
    assert_true(r.k_estimated);
    assert_int_equal(r.n_in, -1);
    breq_m m;
    breq_metrics(&r, &m);
    assert_true(isnan(m.prefill_tps)); /* N_in unknown */
    assert_true(isnan(m.ttft_sched_ms)); /* no t_sched */
    assert_true(isnan(m.queue_client_ms));
    breq_release(&r);
}

static void not_json_ignored(void **state)
{
    const char *ev[] = {"not json", "[1,2]", "\"str\"", "{\"choices\":[{\"text\":\"ok\"}]}"};
    breq r;
    run_events(&r, ev, 4);
    assert_true(breq_ok(&r));
    assert_int_equal(r.n_ev, 1);
    breq_release(&r);
}

static void error_in_stream(void **state)
{
    /* llama-server's shape */
    const char *ev[] = {
        "{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}",
        "{\"error\":{\"code\":500,\"message\":\"failed to decode the batch, n_batch = 2048\",\"type\":\"server_error\"}}",
        "{\"choices\":[{\"delta\":{\"content\":\"b\"}}]}",
    };
    breq r;
    run_events(&r, ev, 3);
    assert_false(breq_ok(&r));
    assert_string_equal(r.error, "server error: failed to decode the batch, n_batch = 2048");
    breq_m m;
    breq_metrics(&r, &m);
    assert_true(isnan(m.ttft_ms));
    assert_true(isnan(m.e2el_ms));
    breq_release(&r);
    /* older vLLM's top-level error object, and a bare string */
    const char *ev2[] = {"{\"object\":\"error\",\"message\":\"The model `x` does not exist.\",\"type\":\"NotFoundError\",\"param\":null,\"code\":404}"};
    run_events(&r, ev2, 1);
    assert_string_equal(r.error, "server error: The model `x` does not exist.");
    breq_release(&r);
    const char *ev3[] = {"{\"error\":\"overloaded\"}", "{\"error\":{\"code\":1}}"};
    run_events(&r, ev3, 2);
    assert_string_equal(r.error, "server error: overloaded"); /* first failure wins */
    breq_release(&r);
    const char *ev4[] = {"{\"error\":{\"code\":1}}"};
    run_events(&r, ev4, 1);
    assert_string_equal(r.error, "server error: {\"code\":1}");
    breq_release(&r);
}

static void no_token_stream(void **state)
{
    const char *ev[] = {
        "{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}",
        "{\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":0}}",
    };
    breq r;
    run_events(&r, ev, 3);
    assert_false(breq_ok(&r));
    assert_string_equal(r.error, "no token-bearing event in the stream");
    assert_int_equal(r.n_out, 0);
    assert_string_equal(r.finish_reason, "stop");
    breq_release(&r);
    /* a non-2xx answer keeps its own failure (none here: breq_ok false, no message added) */
    breq_init(&r);
    r.status = 503;
    breq_finish(&r, T0);
    assert_null(r.error);
    assert_false(breq_ok(&r));
    assert_int_equal(r.n_out, -1);
    breq_release(&r);
}

static void tpot_one_token(void **state)
{
    const char *ev[] = {"{\"choices\":[{\"text\":\"x\"}],\"usage\":{\"completion_tokens\":1,\"prompt_tokens\":4}}"};
    breq r;
    run_events(&r, ev, 1);
    assert_true(breq_ok(&r));
    assert_int_equal(r.n_out, 1);
    breq_m m;
    breq_metrics(&r, &m);
    assert_true(isnan(m.tpot_ms));
    assert_float_equal(m.ttft_ms, 10.0, 1e-9);
    assert_float_equal(m.e2el_ms, 10.0, 1e-9);
    assert_float_equal(m.prefill_tps, 400.0, 1e-9);
    breq_release(&r);
}

static void fail_first_wins(void **state)
{
    breq r;
    breq_init(&r);
    r.status = 200;
    breq_fail(&r, "timed out after %d s", 600);
    breq_fail(&r, "second");
    assert_string_equal(r.error, "timed out after 600 s");
    assert_false(breq_ok(&r));
    breq_release(&r);
    breq_release(&r); /* twice is harmless */
}

/* A usage total first seen on the last content chunk (TGI's OpenAI
 * stream, or any server without continuous usage that sends usage with
 * the last token) is not a rise of 3 tokens at that event: k stays 1
 * (estimated), chunk_tokens 1; the total still gives N_out. */
static void usage_first_seen_late(void **state)
{
    const char *ev[] = {
        "{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"b\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"c\"},\"finish_reason\":\"stop\"}],\"usage\":{\"completion_tokens\":3}}",
    };
    breq r;
    run_events(&r, ev, 3);
    assert_int_equal(r.n_ev, 3);
    assert_int_equal(r.ev[0].k, 1);
    assert_int_equal(r.ev[1].k, 1);
    assert_int_equal(r.ev[2].k, 1);
    assert_true(r.k_estimated);
    assert_int_equal(r.n_out, 3);
    breq_m m;
    breq_metrics(&r, &m);
    assert_float_equal(m.chunk_tokens, 1.0, 1e-9);
    breq_release(&r);
    /* llama-server timings_per_token: the first event's predicted_n = 1
     * is a rise from 0 */
    const char *ev2[] = {
        "{\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"timings\":{\"predicted_n\":1}}",
        "{\"choices\":[{\"delta\":{\"content\":\"bc\"}}],\"timings\":{\"predicted_n\":3}}",
    };
    run_events(&r, ev2, 2);
    assert_int_equal(r.n_ev, 2);
    assert_int_equal(r.ev[0].k, 1);
    assert_int_equal(r.ev[1].k, 2);
    assert_false(r.k_estimated);
    breq_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama_chat),
        cmocka_unit_test(llama_native_spec),
        cmocka_unit_test(vllm_chat_reasoning),
        cmocka_unit_test(vllm_completions_spec),
        cmocka_unit_test(continuous_usage_three_tokens),
        cmocka_unit_test(counter_rise_without_text),
        cmocka_unit_test(usage_only_final),
        cmocka_unit_test(usage_first_seen_late),
        cmocka_unit_test(channels),
        cmocka_unit_test(not_json_ignored),
        cmocka_unit_test(error_in_stream),
        cmocka_unit_test(no_token_stream),
        cmocka_unit_test(tpot_one_token),
        cmocka_unit_test(fail_first_wins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
