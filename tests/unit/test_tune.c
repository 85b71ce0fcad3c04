/* test_tune.c - tune's pure parts: the menu and its variants, the grid,
 * coordinate descent, the paired decision (t quantiles: t_{0.975,2} =
 * 4.302653, t_{0.975,4} = 2.776445, from any t table), and the
 * proposer's replies judged against the menu. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "tune/decide.h"
#include "tune/propose.h"
#include "tune/space.h"
#include "tune/strategy.h"
#include "util/buf.h"

static void add_ok(tune_space *s, const char *arg, bool env)
{
    char err[256];
    assert_int_equal(space_add(s, arg, env, err, sizeof err), 0);
}

static void add_bad(tune_space *s, const char *arg, bool env, const char *want)
{
    char err[256] = "";
    assert_int_equal(space_add(s, arg, env, err, sizeof err), -1);
    if (!strstr(err, want)) fail_msg("error '%s' lacks '%s'", err, want);
}

static void space_parse(void **st)
{
    (void)st;
    tune_space s = {0};
    add_ok(&s, "threads=8,10,16", false);
    add_ok(&s, "VLLM_MARLIN_USE_ATOMIC_ADD=0,1", true);
    add_bad(&s, "threads=4", false, "given twice");
    add_bad(&s, "batch_size", false, "expected KEY=V1,V2");
    add_bad(&s, "=1,2", false, "expected KEY");
    add_bad(&s, "batch_size=1,,2", false, "no empty value");
    add_bad(&s, "batch_size=1,2,", false, "no empty value");
    add_bad(&s, "batch_size=1,1", false, "given twice");
    add_bad(&s, "9lives=1", false, "not a preset key");
    add_bad(&s, "bad-name=1", true, "not a variable name");
    add_bad(&s, "x=a\tb", false, "printable");
    assert_int_equal(s.n, 2);
    assert_int_equal(space_grid_size(&s), 6);
    space_release(&s);
}

static void variants(void **st)
{
    (void)st;
    tune_space s = {0};
    add_ok(&s, "threads=8,16", false);
    add_ok(&s, "flash_attn=true,false", false);
    add_ok(&s, "cache_type_k=q8_0,f16", false);
    add_ok(&s, "X=1", true);
    tune_variant v = variant_base();
    assert_true(variant_is_base(&v));
    buf j = BUF_INIT, var = BUF_INIT, val = BUF_INIT, k = BUF_INIT;
    variant_overrides_json(&s, &v, &j);
    assert_string_equal(j.p, "null");
    variant_label(&s, &v, &var, &val);
    assert_string_equal(var.p, "baseline");
    v.idx[0] = 1;
    v.idx[1] = 0;
    v.idx[2] = 0;
    v.idx[3] = 0;
    buf_clear(&j);
    variant_overrides_json(&s, &v, &j);
    assert_string_equal(j.p, "{\"threads\":16,\"flash_attn\":true,\"cache_type_k\":\"q8_0\",\"env\":{\"X\":\"1\"}}");
    variant_key(&s, &v, &k);
    assert_string_equal(k.p, "threads=16;flash_attn=true;cache_type_k=q8_0;env.X=1");
    tune_variant back;
    assert_int_equal(variant_from_key(&s, k.p, &back), 0);
    assert_true(variant_eq(&back, &v));
    assert_int_equal(variant_from_key(&s, "threads=12", &back), -1);
    assert_int_equal(variant_from_key(&s, "baseline", &back), 0);
    assert_true(variant_is_base(&back));
    buf_clear(&var);
    buf_clear(&val);
    v.idx[1] = v.idx[2] = v.idx[3] = -1;
    variant_label(&s, &v, &var, &val);
    assert_string_equal(var.p, "threads");
    assert_string_equal(val.p, "16");
    assert_int_equal(variant_changes(&s, &v), 1);
    buf_release(&j);
    buf_release(&var);
    buf_release(&val);
    buf_release(&k);
    space_release(&s);
}

static void grid_order(void **st)
{
    (void)st;
    tune_space s = {0};
    add_ok(&s, "a=1,2", false);
    add_ok(&s, "b=x,y,z", false);
    tune_variant g[16];
    assert_int_equal(space_grid(&s, g, 16), 6);
    /* the last dimension turns fastest */
    assert_int_equal(g[0].idx[0], 0);
    assert_int_equal(g[0].idx[1], 0);
    assert_int_equal(g[1].idx[1], 1);
    assert_int_equal(g[3].idx[0], 1);
    assert_int_equal(g[3].idx[1], 0);
    assert_int_equal(g[5].idx[1], 2);
    assert_int_equal(space_grid(&s, g, 4), 4);
    tune_strat sg;
    assert_int_equal(strat_init(&sg, STRAT_GRID, &s, 1, 5), -1); /* 6 > 5 */
    strat_release(&sg);
    assert_int_equal(strat_init(&sg, STRAT_GRID, &s, 1, 100), 0);
    assert_int_equal(strat_planned(&sg, 0), 6);
    tune_variant var, ref, w;
    double gains[6] = {1, 5, 3, 0, 0, 0};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(strat_next(&sg, &var, &ref), 1);
        assert_true(variant_is_base(&ref));
        strat_report(&sg, &var, i < 3 ? TO_IMPROVEMENT : TO_NO_CHANGE, gains[i]);
    }
    assert_int_equal(strat_next(&sg, &var, &ref), 0);
    assert_true(strat_winner(&sg, &w));
    assert_true(variant_eq(&w, &g[1])); /* the largest gain */
    strat_release(&sg);
    space_release(&s);
}

/* coordinate descent on a scripted surface: the best of each dimension
 * is adopted after its sweep, the next dimension is swept from there */
static void coord_descent(void **st)
{
    (void)st;
    tune_space s = {0};
    add_ok(&s, "threads=4,8,16", false);
    add_ok(&s, "batch=512,1024", false);
    tune_strat c;
    assert_int_equal(strat_init(&c, STRAT_COORD, &s, 2, 0), 0);
    assert_int_equal(strat_planned(&c, 0), 10);
    tune_variant var, ref, w;
    int n = 0;
    while (strat_next(&c, &var, &ref)) {
        n++;
        /* threads=8 is 10 % better than anything; batch=1024 another 5 % once threads is 8 */
        bool good = (var.idx[0] == 1 && ref.idx[0] != 1) || (var.idx[1] == 1 && ref.idx[1] != 1 && var.idx[0] == 1);
        strat_report(&c, &var, good ? TO_IMPROVEMENT : TO_NO_CHANGE, good ? 10 : 0);
        assert_true(n < 50);
    }
    assert_true(strat_winner(&c, &w));
    assert_int_equal(w.idx[0], 1);
    assert_int_equal(w.idx[1], 1);
    /* pass 1: 3 + 2 against the moving incumbent; pass 2: 2 + 1 (the
     * incumbent's own values skipped), nothing adopted: the end */
    assert_int_equal(n, 8);
    strat_release(&c);
    space_release(&s);
}

static void coord_nothing_wins(void **st)
{
    (void)st;
    tune_space s = {0};
    add_ok(&s, "threads=4,8", false);
    tune_strat c;
    strat_init(&c, STRAT_COORD, &s, 3, 0);
    tune_variant var, ref, w;
    int n = 0;
    while (strat_next(&c, &var, &ref)) {
        n++;
        strat_report(&c, &var, n == 1 ? TO_UNSAFE : TO_REGRESSION, 50);
    }
    assert_int_equal(n, 2); /* one pass: nothing changed */
    assert_false(strat_winner(&c, &w));
    strat_release(&c);
    space_release(&s);
}

static void decide_cases(void **st)
{
    (void)st;
    tune_rule_in r = {.higher_better = true, .alpha = 0.05, .m = 1, .min_gain = 2, .min_gain_pct = true};
    tune_decision d;
    const double a[] = {100, 100, 100}, b[] = {108, 110, 112};
    assert_int_equal(tune_decide(a, b, 3, &r, &d), 0);
    assert_true(fabs(d.delta - 10) < 1e-9);
    double half = 4.302653 * 2 / sqrt(3);
    assert_true(fabs(d.lo - (10 - half)) < 1e-4);
    assert_true(fabs(d.hi - (10 + half)) < 1e-4);
    assert_int_equal(d.outcome, TO_IMPROVEMENT);
    assert_true(fabs(d.delta_pct - 10) < 1e-9);
    /* the same gain with min-gain 12 %: NO CHANGE */
    r.min_gain = 12;
    tune_decide(a, b, 3, &r, &d);
    assert_int_equal(d.outcome, TO_NO_CHANGE);
    /* absolute min-gain (the seeds' +5 t/s) */
    r.min_gain = 5;
    r.min_gain_pct = false;
    tune_decide(a, b, 3, &r, &d);
    assert_int_equal(d.outcome, TO_IMPROVEMENT);
    /* many comparisons widen the interval: Bonferroni over 40 */
    r.min_gain = 0;
    const double b2[] = {108, 110, 112};
    r.m = 1;
    tune_decide(a, b2, 3, &r, &d);
    assert_int_equal(d.outcome, TO_IMPROVEMENT); /* [5.03, 14.97] */
    r.m = 40; /* t_{1 - 0.05/80, 2} is about 28: the interval spans zero */
    tune_decide(a, b2, 3, &r, &d);
    assert_int_equal(d.outcome, TO_NO_CHANGE);
    /* a regression: the interval wholly on the bad side (the seeds' -6.15 t/s is not "NO CHANGE") */
    r.m = 1;
    const double b3[] = {93, 94, 94.5};
    tune_decide(a, b3, 3, &r, &d);
    assert_int_equal(d.outcome, TO_REGRESSION);
    /* lower is better: TPOT falling is the gain */
    tune_rule_in lr = {.higher_better = false, .alpha = 0.05, .m = 1, .min_gain = 2, .min_gain_pct = true};
    const double ta[] = {20, 20.2, 19.8, 20, 20}, tb[] = {18, 18.1, 17.9, 18, 18};
    tune_decide(ta, tb, 5, &lr, &d);
    assert_int_equal(d.outcome, TO_IMPROVEMENT);
    assert_true(d.delta < 0 && d.gain > 0);
    tune_decide(tb, ta, 5, &lr, &d);
    assert_int_equal(d.outcome, TO_REGRESSION);
    /* not judgeable */
    assert_int_equal(tune_decide(a, b, 1, &r, &d), -1);
    const double bn[] = {1, NAN, 2};
    assert_int_equal(tune_decide(a, bn, 3, &r, &d), -1);
}

static void gains(void **st)
{
    (void)st;
    double v;
    bool pct;
    assert_int_equal(tune_parse_gain("2%", &v, &pct), 0);
    assert_true(v == 2 && pct);
    assert_int_equal(tune_parse_gain("5", &v, &pct), 0);
    assert_true(v == 5 && !pct);
    assert_int_equal(tune_parse_gain("2.5%", &v, &pct), 0);
    assert_int_equal(tune_parse_gain("-1", &v, &pct), -1);
    assert_int_equal(tune_parse_gain("%", &v, &pct), -1);
    assert_int_equal(tune_parse_gain("2%%", &v, &pct), -1);
    assert_int_equal(tune_parse_gain("", &v, &pct), -1);
    assert_int_equal(tune_parse_gain("x", &v, &pct), -1);
}

static void proposals(void **st)
{
    (void)st;
    tune_space s = {0};
    add_ok(&s, "threads=4,8", false);
    add_ok(&s, "MARLIN=0,1", true);
    tune_result res = {0};
    tune_variant inc = variant_base();
    inc.idx[0] = 0;
    tune_proposal p;
    propose_parse("```json\n{\"key\": \"threads\", \"value\": \"8\", \"reason\": \"fewer threads contend\"}\n```", &s,
                  &inc, &res, &p);
    assert_int_equal(p.kind, PROP_CHANGE);
    assert_int_equal(p.v.idx[0], 1);
    assert_string_equal(p.reason, "fewer threads contend");
    propose_parse("{\"key\": \"env.MARLIN\", \"value\": 1, \"reason\": \"r\"}", &s, &inc, &res, &p);
    assert_int_equal(p.kind, PROP_CHANGE);
    assert_int_equal(p.v.idx[1], 1);
    propose_parse("{\"key\": \"ubatch_size\", \"value\": \"64\"}", &s, &inc, &res, &p);
    assert_int_equal(p.kind, PROP_INVALID);
    assert_non_null(strstr(p.reason, "not on the menu"));
    propose_parse("{\"key\": \"threads\", \"value\": \"12\"}", &s, &inc, &res, &p);
    assert_int_equal(p.kind, PROP_INVALID);
    assert_non_null(strstr(p.reason, "value '12'"));
    propose_parse("{\"key\": \"threads\", \"value\": \"4\"}", &s, &inc, &res, &p);
    assert_int_equal(p.kind, PROP_INVALID);
    assert_non_null(strstr(p.reason, "incumbent's own"));
    propose_parse("I think threads should be 8", &s, &inc, &res, &p);
    assert_int_equal(p.kind, PROP_INVALID);
    propose_parse("{\"stop\": true, \"reason\": \"done\"}", &s, &inc, &res, &p);
    assert_int_equal(p.kind, PROP_STOP);
    /* measured against this incumbent already */
    tune_row *row = tune_result_add(&res);
    row->key = strdup("threads=8");
    row->ref_key = strdup("threads=4");
    row->var = strdup("threads");
    row->val = strdup("8");
    propose_parse("{\"key\": \"threads\", \"value\": \"8\"}", &s, &inc, &res, &p);
    assert_int_equal(p.kind, PROP_INVALID);
    assert_non_null(strstr(p.reason, "measured against this incumbent"));
    tune_result_release(&res);
    space_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(space_parse),   cmocka_unit_test(variants),           cmocka_unit_test(grid_order),
        cmocka_unit_test(coord_descent), cmocka_unit_test(coord_nothing_wins), cmocka_unit_test(decide_cases),
        cmocka_unit_test(gains),         cmocka_unit_test(proposals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
