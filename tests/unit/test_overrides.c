/* test_overrides.c - a start's overrides: the body of POST
 * /services/ID/start read strictly (daemon/api_services.c), their JSON,
 * and a preset with another context size (config/preset.c): the argv
 * each driver builds from it and the config hash it is known by. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "config/preset.h"
#include "daemon/api_services.h"
#include "drivers/driver.h"
#include "drivers/hash.h"
#include "util/buf.h"

static int parse(const char *body, sup_overrides *ov, char *err, size_t errlen)
{
    view v = {body, strlen(body)};
    err[0] = 0;
    return api_overrides_parse("start", &v, ov, err, errlen);
}

static void body_none(void **state)
{
    (void)state;
    sup_overrides ov = {.context_size = 7};
    char err[512];
    const char *none[] = {"", "  \n", "{}", "{\"overrides\": null}", "{\"overrides\": {}}",
                          "{\"overrides\": {\"context_size\": null}}"};
    for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
        ov.context_size = 7;
        assert_int_equal(parse(none[i], &ov, err, sizeof err), 0);
        assert_int_equal(ov.context_size, 0);
        assert_false(sup_overrides_any(&ov));
    }
}

static void body_context_size(void **state)
{
    (void)state;
    sup_overrides ov;
    char err[512];
    assert_int_equal(parse("{\"overrides\": {\"context_size\": 8192}}", &ov, err, sizeof err), 0);
    assert_int_equal(ov.context_size, 8192);
    assert_true(sup_overrides_any(&ov));
    /* the schema's bounds, both included */
    assert_int_equal(parse("{\"overrides\": {\"context_size\": 1}}", &ov, err, sizeof err), 0);
    assert_int_equal(ov.context_size, 1);
    assert_int_equal(parse("{\"overrides\": {\"context_size\": 16777216}}", &ov, err, sizeof err), 0);
    assert_int_equal(ov.context_size, 16777216);
    assert_int_equal(parse("{\"overrides\": {\"context_size\": 4096.0}}", &ov, err, sizeof err), 0);
    assert_int_equal(ov.context_size, 4096);
}

static void body_errors(void **state)
{
    (void)state;
    sup_overrides ov;
    char err[512];
    static const struct {
        const char *body, *err;
    } bad[] = {
        {"[]", "start: the body must be a JSON object {\"overrides\": {...}}: found another JSON value"},
        {"{\"overrides\": {\"ctx\": 1}}", "start: overrides: unknown key 'ctx' (allowed: context_size)"},
        {"{\"wait\": false}", "start: unknown key 'wait' in the body (allowed: overrides)"},
        {"{\"overrides\": []}", "start: \"overrides\" must be an object (keys: context_size) or null"},
        {"{\"overrides\": \"x\"}", "start: \"overrides\" must be an object (keys: context_size) or null"},
        {"{\"overrides\": {\"context_size\": 0}}",
         "start: overrides.context_size must be an integer from 1 to 16777216, or null for the preset's"},
        {"{\"overrides\": {\"context_size\": 16777217}}",
         "start: overrides.context_size must be an integer from 1 to 16777216, or null for the preset's"},
        {"{\"overrides\": {\"context_size\": 100.5}}",
         "start: overrides.context_size must be an integer from 1 to 16777216, or null for the preset's"},
        {"{\"overrides\": {\"context_size\": \"100\"}}",
         "start: overrides.context_size must be an integer from 1 to 16777216, or null for the preset's"},
        {"{\"overrides\": {\"context_size\": false}}",
         "start: overrides.context_size must be an integer from 1 to 16777216, or null for the preset's"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(parse(bad[i].body, &ov, err, sizeof err), -1);
        assert_string_equal(err, bad[i].err);
    }
    /* jstrict's own: a key twice, data after the value */
    assert_int_equal(parse("{\"overrides\": {\"context_size\": 1, \"context_size\": 2}}", &ov, err, sizeof err), -1);
    assert_non_null(strstr(err, "key 'context_size' appears twice"));
    assert_int_equal(parse("{} {}", &ov, err, sizeof err), -1);
    assert_non_null(strstr(err, "data after the JSON value"));
}

static void overrides_json(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    api_overrides_json(&b, NULL);
    assert_string_equal(b.p, "null");
    buf_clear(&b);
    sup_overrides ov = {0};
    api_overrides_json(&b, &ov);
    assert_string_equal(b.p, "null");
    buf_clear(&b);
    ov.context_size = 8192;
    api_overrides_json(&b, &ov);
    assert_string_equal(b.p, "{\"context_size\":8192}");
    buf_release(&b);
}

static void range_from_schema(void **state)
{
    (void)state;
    int64_t lo = 0, hi = 0;
    assert_true(preset_int_range("context_size", &lo, &hi));
    assert_int_equal(lo, 1);
    assert_int_equal(hi, 16777216);
    assert_false(preset_int_range("model_path", &lo, &hi)); /* a string */
    assert_false(preset_int_range("no_such_key", &lo, &hi));
}

static bool argv_has(const strv *a, const char *flag, const char *val)
{
    for (size_t i = 0; i + 1 < a->n; i++)
        if (!strcmp(a->v[i], flag) && !strcmp(a->v[i + 1], val)) return true;
    return false;
}

static void preset_base(preset *p, driver_kind k)
{
    memset(p, 0, sizeof *p);
    p->id = (char *)"chat";
    p->driver = k;
    p->port = 7070;
    p->host = (char *)"127.0.0.1";
    p->context_size = 4096;
    p->model_path = (char *)"/nonexistent/model.gguf";
    p->llama.n_gpu_layers = -1;
    p->llama.parallel = 1;
    p->llama.threads = p->llama.n_cpu_moe = p->llama.spec_draft_n_max = p->llama.models_max = -1;
    p->vllm.gpu_memory_utilization = 0.9;
    p->vllm.max_model_len = 4096;
    p->vllm.max_num_seqs = p->vllm.tensor_parallel_size = p->vllm.sleep_level = -1;
}

static void with_context_llamacpp_vllm(void **state)
{
    (void)state;
    settings st;
    memset(&st, 0, sizeof st);
    st.driver_binary[DRV_LLAMACPP] = (char *)"llama-server";
    st.driver_binary[DRV_VLLM] = (char *)"vllm";
    char err[512], h0[65], h1[65];
    static const struct {
        driver_kind k;
        const char *flag;
    } cases[] = {{DRV_LLAMACPP, "-c"}, {DRV_VLLM, "--max-model-len"}};
    for (size_t i = 0; i < 2; i++) {
        preset p, q;
        preset_base(&p, cases[i].k);
        assert_int_equal(preset_with_context(&p, 8192, &q, err, sizeof err), 0);
        assert_int_equal(q.context_size, 8192);
        assert_int_equal(p.context_size, 4096); /* the preset itself is untouched */
        assert_ptr_equal(q.model_path, p.model_path); /* a shallow copy */
        launch l = LAUNCH_INIT;
        assert_int_equal(driver_launch(&q, &st, &l, err, sizeof err), 0);
        assert_true(argv_has(&l.argv, cases[i].flag, "8192"));
        assert_false(argv_has(&l.argv, cases[i].flag, "4096"));
        launch_release(&l);
        /* the run is known by another hash than its preset's */
        assert_int_equal(config_hash(&p, &st, h0, NULL, err, sizeof err), 0);
        assert_int_equal(config_hash(&q, &st, h1, NULL, err, sizeof err), 0);
        assert_string_not_equal(h0, h1);
        /* the preset's own size: the preset's hash */
        assert_int_equal(preset_with_context(&p, 4096, &q, err, sizeof err), 0);
        assert_int_equal(config_hash(&q, &st, h1, NULL, err, sizeof err), 0);
        assert_string_equal(h0, h1);
    }
}

static void with_context_other_drivers(void **state)
{
    (void)state;
    char err[512];
    static const driver_kind others[] = {DRV_FASTAPI, DRV_DOCKER, DRV_COMMAND, DRV_REMOTE};
    for (size_t i = 0; i < 4; i++) {
        preset p, q;
        preset_base(&p, others[i]);
        assert_int_equal(preset_with_context(&p, 8192, &q, err, sizeof err), -1);
        char want[256];
        snprintf(want, sizeof want,
                 "preset 'chat': driver %s takes no context size from gpumod (only llamacpp's -c and vllm's "
                 "--max-model-len do)",
                 driver_names[others[i]]);
        assert_string_equal(err, want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(body_none),
        cmocka_unit_test(body_context_size),
        cmocka_unit_test(body_errors),
        cmocka_unit_test(overrides_json),
        cmocka_unit_test(range_from_schema),
        cmocka_unit_test(with_context_llamacpp_vllm),
        cmocka_unit_test(with_context_other_drivers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
