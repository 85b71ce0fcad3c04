/* test_bresult.c - the result document from a synthetic bload_result:
 * the schema's keys, figures that follow from the requests, null where a
 * percentile lacks samples, --raw requests with [t_ms, k] events, and the
 * summary's median with its bootstrap interval. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/cli.h"
#include "testenv.h"

#define MS 1000000LL

/* request i: sent at i*100 ms, 4 tokens 10 ms apart after a 50 ms TTFT,
 * usage 10 prompt / 4 completion; request 3 fails with HTTP 500 */
static void make(bload_result *r, size_t n)
{
    memset(r, 0, sizeof *r);
    r->reqs = xcalloc(n, sizeof *r->reqs);
    r->n = n;
    for (size_t i = 0; i < n; i++) {
        breq *q = &r->reqs[i];
        breq_init(q);
        int64_t t0 = 1000 * MS + (int64_t)i * 100 * MS;
        q->t_sched = q->t_send = t0;
        q->t_hdr = t0 + 5 * MS;
        if (i == 3) {
            q->status = 500;
            breq_fail(q, "HTTP 500: boom");
            q->t_done = t0 + 6 * MS;
            continue;
        }
        q->status = 200;
        for (int k = 0; k < 4; k++) {
            char *d = xasprintf("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w%d\"}}]}", k);
            breq_on_data(q, t0 + 50 * MS + k * 10 * MS, d, strlen(d));
            free(d);
        }
        const char *u = "{\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":4,\"total_tokens\":14}}";
        breq_on_data(q, t0 + 81 * MS, u, strlen(u));
        breq_finish(q, t0 + 82 * MS);
    }
    r->w_start = r->reqs[0].t_send;
    r->w_end = r->reqs[n - 1].t_done;
    r->self.cpu_pct = 3;
    r->self.wall_s = 1;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *x = cJSON_GetObjectItem(o, k);
    assert_non_null(x);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

static void iteration_doc(void **st)
{
    bload_result r;
    make(&r, 6);
    bagg a;
    bslo slo = {NAN, NAN, NAN};
    char err[200];
    assert_int_equal(bagg_compute(&a, r.reqs, r.n, r.w_start, r.w_end, &slo, err, sizeof err), 0);
    bserver_delta sd;
    memset(&sd, 0, sizeof sd);
    sd.flavor = "llamacpp";
    sd.predicted_tokens = 20;
    sd.prompt_tokens = 50;
    sd.decode_tps = NAN;
    cJSON *mem = cJSON_CreateObject();
    cJSON_AddNumberToObject(mem, "samples", 3);
    cJSON *it = bresult_iteration(&r, &a, &sd, mem, true);

    const char *keys[] = {"window_s", "sent", "completed", "failed", "errors", "tokens_in", "tokens_out",
                          "tokens_out_estimated", "k_estimated", "req_tput", "out_tput", "total_tput", "goodput",
                          "good_fraction", "concurrency_avg", "concurrency_peak", "littles_law", "chunk_tokens",
                          "metrics", "values", "server", "self_check", "memory", "requests"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) assert_non_null(cJSON_GetObjectItem(it, keys[i]));
    assert_int_equal((int)num(it, "sent"), 6);
    assert_int_equal((int)num(it, "completed"), 5);
    assert_int_equal((int)num(it, "failed"), 1);
    assert_int_equal((int)num(it, "tokens_out"), 20);
    assert_int_equal((int)num(it, "tokens_in"), 50);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(it, "tokens_out_estimated")));
    assert_int_equal((int)num(cJSON_GetObjectItem(it, "errors"), "HTTP 500: boom"), 1);

    const cJSON *ttft = cJSON_GetObjectItem(cJSON_GetObjectItem(it, "metrics"), "ttft_ms");
    const char *mkeys[] = {"n", "mean", "sd", "min", "max", "median", "p50", "p90", "p95", "p99", "p99_9"};
    for (size_t i = 0; i < sizeof mkeys / sizeof mkeys[0]; i++) assert_non_null(cJSON_GetObjectItem(ttft, mkeys[i]));
    assert_int_equal((int)num(ttft, "n"), 5);
    assert_true(fabs(num(ttft, "median") - 50.0) < 1e-9);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(ttft, "p99"))); /* 5 samples */
    const cJSON *tpot = cJSON_GetObjectItem(cJSON_GetObjectItem(it, "metrics"), "tpot_ms");
    assert_true(fabs(num(tpot, "median") - 10.0) < 1e-9);

    const cJSON *v = cJSON_GetObjectItem(it, "values");
    assert_true(fabs(num(v, "ttft_ms") - 50.0) < 1e-9);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(v, "ttft_ms_p99")));
    assert_non_null(cJSON_GetObjectItem(v, "out_tput"));

    const cJSON *srv = cJSON_GetObjectItem(it, "server");
    assert_string_equal(cJSON_GetObjectItem(srv, "flavor")->valuestring, "llamacpp");
    assert_int_equal((int)num(srv, "predicted_tokens"), 20);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(srv, "decode_tps")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(srv, "spec")));
    assert_int_equal((int)num(cJSON_GetObjectItem(it, "memory"), "samples"), 3);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(it, "self_check"), "client_bound")));

    const cJSON *rq = cJSON_GetObjectItem(it, "requests");
    assert_int_equal(cJSON_GetArraySize(rq), 6);
    const cJSON *r1 = cJSON_GetArrayItem(rq, 1);
    assert_true(fabs(num(r1, "t_send_ms") - 100.0) < 1e-9);
    assert_true(fabs(num(r1, "t_first_ms") - 50.0) < 1e-9);
    assert_int_equal((int)num(r1, "n_out"), 4);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(r1, "error")));
    const cJSON *ev = cJSON_GetObjectItem(r1, "events");
    assert_int_equal(cJSON_GetArraySize(ev), 4);
    const cJSON *e2 = cJSON_GetArrayItem(ev, 2);
    assert_true(fabs(cJSON_GetArrayItem(e2, 0)->valuedouble - 70.0) < 1e-9);
    assert_int_equal(cJSON_GetArrayItem(e2, 1)->valueint, 1);
    const cJSON *r3 = cJSON_GetArrayItem(rq, 3);
    assert_string_equal(cJSON_GetObjectItem(r3, "error")->valuestring, "HTTP 500: boom");
    assert_int_equal((int)num(r3, "status"), 500);

    /* without --raw: no requests */
    cJSON *it2 = bresult_iteration(&r, &a, NULL, NULL, false);
    assert_null(cJSON_GetObjectItem(it2, "requests"));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(it2, "server")));
    cJSON_Delete(it2);
    cJSON_Delete(it);
    bload_result_release(&r);
}

/* a run cut by SIGINT: the cut request is not sent/failed, it is listed
 * as interrupted; a run under 1 s has no CPU verdict */
static void interrupted_iteration(void **st)
{
    bload_result r;
    make(&r, 6);
    r.n = 5; /* the 6th was cut */
    r.n_cut = 1;
    r.self.cpu_pct = NAN;
    r.self.wall_s = 0.2;
    bagg a;
    bslo slo = {NAN, NAN, NAN};
    char err[200];
    assert_int_equal(bagg_compute(&a, r.reqs, r.n, r.w_start, r.w_end, &slo, err, sizeof err), 0);
    cJSON *it = bresult_iteration(&r, &a, NULL, NULL, true);
    assert_int_equal((int)num(it, "sent"), 5);
    assert_int_equal((int)num(it, "failed"), 1);
    assert_int_equal((int)num(it, "interrupted"), 1);
    const cJSON *rq = cJSON_GetObjectItem(it, "requests");
    assert_int_equal(cJSON_GetArraySize(rq), 6);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(rq, 5), "interrupted")));
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(rq, 4), "interrupted"));
    const cJSON *sc = cJSON_GetObjectItem(it, "self_check");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(sc, "cpu_pct")));
    assert_string_equal(cJSON_GetObjectItem(sc, "cpu_note")->valuestring,
                        "not judged: the run took less than 1 s of wall time");
    cJSON_Delete(it);
    bload_result_release(&r);
}

static void summary_ci(void **st)
{
    cJSON *its = cJSON_CreateArray();
    double tp[] = {100, 104, 98, 101, 99};
    for (int i = 0; i < 5; i++) {
        cJSON *it = cJSON_CreateObject();
        cJSON *v = cJSON_AddObjectToObject(it, "values");
        cJSON_AddNumberToObject(v, "out_tput", tp[i]);
        cJSON_AddNullToObject(v, "ttft_ms_p99");
        cJSON_AddItemToArray(its, it);
    }
    cJSON *s = bresult_summary(its, 1);
    const cJSON *o = cJSON_GetObjectItem(s, "out_tput");
    assert_true(fabs(num(o, "median") - 100.0) < 1e-9);
    assert_true(num(o, "lo") <= 100.0 && num(o, "lo") >= 98.0);
    assert_true(num(o, "hi") >= 100.0 && num(o, "hi") <= 104.0);
    assert_int_equal((int)num(o, "n"), 5);
    const cJSON *p = cJSON_GetObjectItem(s, "ttft_ms_p99");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(p, "median")));
    assert_int_equal((int)num(p, "n"), 0);
    /* the same seed gives the same interval */
    cJSON *s2 = bresult_summary(its, 1);
    assert_true(num(cJSON_GetObjectItem(s2, "out_tput"), "lo") == num(o, "lo"));
    cJSON_Delete(s2);
    cJSON_Delete(s);
    cJSON_Delete(its);
}

static void settings_and_skeleton(void **st)
{
    bopts o;
    memset(&o, 0, sizeof o);
    long conc[] = {1, 8};
    o.conc = conc;
    o.n_conc = 2;
    o.burstiness = 1;
    o.requests = 40;
    o.warmup = -1;
    o.iterations = 3;
    o.prompt_tokens = 256;
    o.gen_tokens = 64;
    o.slo = (bslo){200, NAN, NAN};
    o.timeout_s = 600;
    o.seed = 9;
    char *argv[] = {"gpumod-bench", "http://x:1", "--concurrency", "1,8", NULL};
    o.argc = 4;
    o.argv = argv;
    cJSON *d = bresult_new("load", &o, 0);
    assert_string_equal(cJSON_GetObjectItem(d, "schema")->valuestring, "gpumod.bench/1");
    assert_string_equal(cJSON_GetObjectItem(d, "kind")->valuestring, "load");
    assert_string_equal(cJSON_GetObjectItem(d, "started")->valuestring, "1970-01-01T00:00:00.000Z");
    const cJSON *av = cJSON_GetObjectItem(d, "argv");
    assert_int_equal(cJSON_GetArraySize(av), 5);
    assert_string_equal(cJSON_GetArrayItem(av, 0)->valuestring, "gpumod");
    assert_string_equal(cJSON_GetArrayItem(av, 1)->valuestring, "bench");
    assert_string_equal(cJSON_GetArrayItem(av, 4)->valuestring, "1,8");
    bresult_warn(d, "x %d", 1);
    bresult_warn(d, "x %d", 1);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(d, "warnings")), 1);
    cJSON_Delete(d);

    cJSON *s = bresult_settings(&o, true, 260);
    assert_string_equal(cJSON_GetObjectItem(s, "shape")->valuestring, "closed");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(s, "concurrency")), 2);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(s, "rate")));
    assert_int_equal((int)num(s, "requests"), 40);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(s, "prompt_tokens_exact")));
    assert_int_equal((int)num(s, "prompt_tokens_measured"), 260);
    assert_int_equal((int)num(cJSON_GetObjectItem(s, "slo"), "ttft_ms"), 200);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "slo"), "tpot_ms")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(s, "ctx_sweep")));
    assert_string_equal(cJSON_GetObjectItem(s, "endpoint")->valuestring, "chat");
    cJSON_Delete(s);

    /* an open loop has no closed-loop concurrency (its cap is max_concurrency) */
    double rate[] = {20};
    o.rate = rate;
    o.n_rate = 1;
    s = bresult_settings(&o, true, 260);
    assert_string_equal(cJSON_GetObjectItem(s, "shape")->valuestring, "open");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(s, "concurrency")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(s, "max_concurrency")));
    cJSON_Delete(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(iteration_doc),
        cmocka_unit_test(interrupted_iteration),
        cmocka_unit_test(summary_ci),
        cmocka_unit_test(settings_and_skeleton),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
