/* test_bagg.c - aggregate metrics of one iteration over hand-built
 * requests whose every figure is worked out by hand below: request and
 * token throughput (a request straddling either edge of W split by event
 * arrival, n_out beyond the events booked at t_last), goodput against SLOs
 * (unset ones ignored, none set: null), concurrency average and peak,
 * Little's law, k-weighted per-token ITL against chunk ITL, the headline
 * values by name, and the refusal of an empty window. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "bench/bagg.h"
#include "testenv.h"

#define EPS 1e-9
/* ms after a base of 1 s: 0 means "not seen" in a breq */
#define MS(x) (((int64_t)(x) + 1000) * 1000000)

#define assert_double_equal(a, b, eps) assert_near_at((a), (b), (eps), #a, __FILE__, __LINE__)
static void assert_near_at(double a, double b, double eps, const char *what, const char *file, int line)
{
    if (fabs(a - b) <= eps || (a == b)) return;
    print_error("%s = %.17g, expected %.17g (within %g)\n", what, a, b, eps);
    _fail(file, line);
}

/* a streamed request: events at ms times with k tokens each */
static void mk(breq *r, int64_t send, const int64_t *t, const int *k, size_t n_ev, int64_t done, long n_in,
               long n_out)
{
    breq_init(r);
    r->status = 200;
    r->t_sched = MS(send);
    r->t_send = MS(send);
    r->t_hdr = MS(send) + 1;
    r->ev = xcalloc(n_ev ? n_ev : 1, sizeof *r->ev);
    r->n_ev = r->ev_cap = n_ev;
    for (size_t i = 0; i < n_ev; i++) r->ev[i] = (bev){MS(t[i]), k[i]};
    if (n_ev) {
        r->t_first = r->t_first_content = MS(t[0]);
        r->t_last = MS(t[n_ev - 1]);
    }
    r->t_done = MS(done);
    r->n_in = n_in;
    r->n_out = n_out;
}

/* R1 sends at 0: tokens 1 @100, 1 @200, 2 @300, done 310, 10 in, 4 out
 * R2 sends at 50: 1 token @250, 350, 450, 550, done 560, 20 in, 4 out
 * R3 sends at 400: 1 @500, 3 @700, done 720, 30 in; the server says 6 out
 *    (2 more than the events carried: booked at t_last = 700)
 * R4 sends at 100 and fails with a 500 at 150.
 * ttft 100 / 200 / 100, e2el 300 / 500 / 300, tpot 200/3, 100, 200/5 = 40 */
static breq reqs[4];

static int setup(void **state)
{
    const int64_t t1[] = {100, 200, 300}, t2[] = {250, 350, 450, 550}, t3[] = {500, 700};
    const int k1[] = {1, 1, 2}, k2[] = {1, 1, 1, 1}, k3[] = {1, 3};
    mk(&reqs[0], 0, t1, k1, 3, 310, 10, 4);
    mk(&reqs[1], 50, t2, k2, 4, 560, 20, 4);
    mk(&reqs[2], 400, t3, k3, 2, 720, 30, 6);
    mk(&reqs[3], 100, NULL, NULL, 0, 150, -1, -1);
    reqs[3].status = 500;
    breq_fail(&reqs[3], "HTTP 500");
    return 0;
}

static int teardown(void **state)
{
    for (int i = 0; i < 4; i++) breq_release(&reqs[i]);
    return 0;
}

static void whole_window(void **state)
{
    bagg a;
    char err[128];
    bslo slo = {.ttft_ms = 150, .tpot_ms = 80, .e2el_ms = 0};
    assert_int_equal(bagg_compute(&a, reqs, 4, MS(0), MS(720), &slo, err, sizeof err), 0);
    assert_double_equal(a.window_s, 0.72, EPS);
    assert_int_equal(a.sent, 4);
    assert_int_equal(a.completed, 3);
    assert_int_equal(a.failed, 1);
    assert_int_equal(a.tokens_out, 14);
    assert_int_equal(a.tokens_in, 60);
    assert_false(a.in_unknown);
    assert_double_equal(a.req_tput, 3 / 0.72, EPS);
    assert_double_equal(a.out_tput, 14 / 0.72, EPS);
    assert_double_equal(a.total_tput, 74 / 0.72, EPS);
    /* R1 (100, 66.7) and R3 (100, 40) meet ttft <= 150 and tpot <= 80; R2's
     * ttft is 200; e2el 0 is not set */
    assert_double_equal(a.goodput, 2 / 0.72, EPS);
    assert_double_equal(a.good_fraction, 2.0 / 3, EPS);
    /* in flight [0,310) [50,560) [400,720) [100,150): 1190 ms of 720;
     * 100..150 has R1, R2 and R4 */
    assert_double_equal(a.concurrency_avg, 1190.0 / 720, EPS);
    assert_double_equal(a.concurrency_peak, 3, 0);
    /* req_tput x mean e2el = 3/0.72 x 0.36667 s */
    assert_double_equal(a.littles_law, 1.1 / 0.72, EPS);
    assert_double_equal(a.chunk_tokens, 12.0 / 9, EPS);

    assert_int_equal(a.ttft.n, 3);
    assert_double_equal(a.ttft.median, 100, EPS);
    assert_double_equal(a.e2el.median, 300, EPS);
    assert_double_equal(a.e2el.mean, 1100.0 / 3, EPS);
    assert_double_equal(a.tpot.median, 200.0 / 3, EPS);
    assert_double_equal(a.tpot.min, 40, EPS);
    assert_double_equal(a.queue_client.median, 0, EPS);
    /* chunk gaps 100 100 | 100 100 100 | 200 */
    assert_int_equal(a.itl_chunk.n, 6);
    assert_double_equal(a.itl_chunk.median, 100, EPS);
    assert_double_equal(a.itl_chunk.mean, 700.0 / 6, EPS);
    /* per token: 100 (1), 50 (2), 100 (1) x3, 66.7 (3): 700 ms / 9 tokens;
     * cumulative weight 2, 5, 9: the median is the 66.7 */
    assert_int_equal(a.itl_token.n, 6);
    assert_double_equal(a.itl_token.mean, 700.0 / 9, EPS);
    assert_double_equal(a.itl_token.median, 200.0 / 3, EPS);
    assert_double_equal(a.itl_token.min, 50, EPS);

    /* one SLO only: tpot <= 50 holds for R3 alone */
    bslo tight = {.tpot_ms = 50, .ttft_ms = NAN, .e2el_ms = -1};
    bagg_compute(&a, reqs, 4, MS(0), MS(720), &tight, err, sizeof err);
    assert_double_equal(a.goodput, 1 / 0.72, EPS);
    assert_double_equal(a.good_fraction, 1.0 / 3, EPS);
    /* e2el <= 400: R1 and R3 */
    bslo e2 = {.e2el_ms = 400};
    bagg_compute(&a, reqs, 4, MS(0), MS(720), &e2, err, sizeof err);
    assert_double_equal(a.goodput, 2 / 0.72, EPS);
    /* no SLO: goodput is not a figure */
    bagg_compute(&a, reqs, 4, MS(0), MS(720), NULL, err, sizeof err);
    assert_true(isnan(a.goodput) && isnan(a.good_fraction));
    bslo none = {0, 0, 0};
    bagg_compute(&a, reqs, 4, MS(0), MS(720), &none, err, sizeof err);
    assert_true(isnan(a.goodput));
}

static void straddling_end(void **state)
{
    /* W = [0, 600]: R3 is still running.  Its token @500 counts; the 3 @700
     * and the 2 booked at t_last do not, nor does its completion. */
    bagg a;
    char err[128];
    assert_int_equal(bagg_compute(&a, reqs, 4, MS(0), MS(600), NULL, err, sizeof err), 0);
    assert_int_equal(a.completed, 2);
    assert_int_equal(a.tokens_out, 9);
    assert_double_equal(a.req_tput, 2 / 0.6, EPS);
    assert_double_equal(a.out_tput, 15, EPS);
    assert_double_equal(a.total_tput, (30 + 9) / 0.6, EPS);
    /* 310 + 510 + 200 (R3 clipped to 600) + 50 */
    assert_double_equal(a.concurrency_avg, 1070.0 / 600, EPS);
    assert_double_equal(a.littles_law, 2 / 0.6 * 0.4, EPS);
    assert_double_equal(a.concurrency_peak, 3, 0);
}

static void straddling_start(void **state)
{
    /* W = [200, 720]: R1's token @100 and R4 are before it; in flight
     * [200,310) [200,560) [400,720) = 110 + 360 + 320; peak 2 */
    bagg a;
    char err[128];
    assert_int_equal(bagg_compute(&a, reqs, 4, MS(200), MS(720), NULL, err, sizeof err), 0);
    assert_int_equal(a.tokens_out, 3 + 4 + 6);
    assert_int_equal(a.completed, 3);
    assert_double_equal(a.out_tput, 13 / 0.52, EPS);
    assert_double_equal(a.concurrency_avg, 790.0 / 520, EPS);
    assert_double_equal(a.concurrency_peak, 2, 0);
}

static void peak_half_open(void **state)
{
    /* back to back: [0,100) then [100,200): never two at once */
    breq r[2];
    const int64_t ta[] = {50}, tb[] = {150};
    const int k[] = {1};
    mk(&r[0], 0, ta, k, 1, 100, -1, 1);
    mk(&r[1], 100, tb, k, 1, 200, 5, 1);
    bagg a;
    char err[128];
    assert_int_equal(bagg_compute(&a, r, 2, MS(0), MS(200), NULL, err, sizeof err), 0);
    assert_double_equal(a.concurrency_peak, 1, 0);
    assert_double_equal(a.concurrency_avg, 1, EPS);
    assert_true(a.in_unknown); /* r[0] has no n_in: counts 0 */
    assert_int_equal(a.tokens_in, 5);
    assert_true(isnan(a.tpot.median)); /* one token each */
    assert_int_equal(a.itl_chunk.n, 0);
    /* a server that says fewer tokens than the events carried wins */
    r[1].n_out = 0;
    r[0].n_out = 1;
    r[0].ev[0].k = 3;
    bagg_compute(&a, r, 2, MS(0), MS(200), NULL, err, sizeof err);
    assert_int_equal(a.tokens_out, 1);
    breq_release(&r[0]);
    breq_release(&r[1]);
}

static void bad_window(void **state)
{
    bagg a;
    char err[128] = "";
    assert_int_equal(bagg_compute(&a, reqs, 4, MS(5), MS(5), NULL, err, sizeof err), -1);
    assert_string_equal(err, "measurement window: end 1005000000 ns is not after start 1005000000 ns");
}

static void values(void **state)
{
    bagg a;
    char err[128];
    bslo slo = {.ttft_ms = 150};
    bagg_compute(&a, reqs, 4, MS(0), MS(720), &slo, err, sizeof err);
    const char *names[32];
    double v[32];
    size_t n = bagg_values(&a, names, v, 32);
    const char *want[] = {"req_tput", "out_tput",         "total_tput", "goodput",     "ttft_ms",
                          "ttft_ms_p99", "tpot_ms",       "tpot_ms_p99", "itl_token_ms", "itl_chunk_ms_p99",
                          "e2el_ms",  "e2el_ms_p99",      "ttfc_ms"};
    assert_int_equal(n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < n; i++) assert_string_equal(names[i], want[i]);
    assert_double_equal(v[0], 3 / 0.72, EPS);
    assert_double_equal(v[1], 14 / 0.72, EPS);
    assert_double_equal(v[3], 2 / 0.72, EPS);
    assert_double_equal(v[4], 100, EPS);
    assert_true(isnan(v[5])); /* p99 of 3 samples */
    assert_double_equal(v[6], 200.0 / 3, EPS);
    assert_double_equal(v[8], 200.0 / 3, EPS);
    assert_true(isnan(v[9]));
    assert_double_equal(v[10], 300, EPS);
    assert_double_equal(v[12], 100, EPS);
    /* a short array gets what fits; the count is the whole */
    const char *few[2];
    assert_int_equal(bagg_values(&a, few, NULL, 2), n);
    assert_string_equal(few[1], "out_tput");

    assert_true(bagg_higher_is_better("req_tput"));
    assert_true(bagg_higher_is_better("out_tput"));
    assert_true(bagg_higher_is_better("goodput"));
    assert_true(bagg_higher_is_better("prefill_tps"));
    assert_false(bagg_higher_is_better("ttft_ms"));
    assert_false(bagg_higher_is_better("itl_chunk_ms_p99"));
    assert_false(bagg_higher_is_better("e2el_ms"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(whole_window, setup, teardown),
        cmocka_unit_test_setup_teardown(straddling_end, setup, teardown),
        cmocka_unit_test_setup_teardown(straddling_start, setup, teardown),
        cmocka_unit_test(peak_half_open),
        cmocka_unit_test_setup_teardown(bad_window, setup, teardown),
        cmocka_unit_test_setup_teardown(values, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
