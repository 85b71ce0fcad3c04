/* test_tunelease.c - the tune lease's pure parts: the bodies of POST
 * /tune and PUT /tune/ID read strictly (daemon/api_tune.c), and what the
 * restore does to the tuned service (daemon/tunelease.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "daemon/api_tune.h"
#include "daemon/tunelease.h"

#define V(s) ((view){(s), sizeof(s) - 1})

static int take(const char *body, tl_take *t, char *err, size_t errlen)
{
    view v = {body, strlen(body)};
    err[0] = 0;
    return api_tune_take_parse(&v, t, err, errlen);
}

static void take_defaults_and_values(void **state)
{
    (void)state;
    tl_take t;
    char err[512];
    assert_int_equal(take("{\"service\": \"chat\"}", &t, err, sizeof err), 0);
    assert_string_equal(t.service, "chat");
    assert_false(t.allow_traffic);
    assert_int_equal(t.ttl_ms, TL_TTL_DEFAULT_MS);
    assert_null(t.state);
    tl_take_release(&t);
    assert_int_equal(take("{\"service\": \"chat\", \"allow_traffic\": true, \"ttl_ms\": 1000, "
                          "\"state\": {\"a\": [1, 2], \"b\": {\"c\": null}}}",
                          &t, err, sizeof err),
                     0);
    assert_true(t.allow_traffic);
    assert_int_equal(t.ttl_ms, 1000);
    assert_string_equal(t.state, "{\"a\":[1,2],\"b\":{\"c\":null}}");
    tl_take_release(&t);
    /* null: the default */
    assert_int_equal(take("{\"service\": \"x\", \"allow_traffic\": null, \"ttl_ms\": null, \"state\": null}", &t, err,
                          sizeof err),
                     0);
    assert_int_equal(t.ttl_ms, TL_TTL_DEFAULT_MS);
    assert_null(t.state);
    tl_take_release(&t);
    assert_int_equal(take("{\"service\": \"x\", \"ttl_ms\": 86400000}", &t, err, sizeof err), 0);
    tl_take_release(&t);
}

static void take_refused(void **state)
{
    (void)state;
    static const struct {
        const char *body, *err;
    } bad[] = {
        {"", "tune: the body must be a JSON object"},
        {"[]", "found another JSON value"},
        {"{}", "tune: \"service\" is missing"},
        {"{\"service\": 7}", "tune: \"service\" must be a service id (a non-empty string)"},
        {"{\"service\": \"c\", \"ttl\": 1}", "tune: unknown key 'ttl' in the body (allowed: service, allow_traffic, "
                                          "ttl_ms, state)"},
        {"{\"service\": \"c\", \"ttl_ms\": 999}", "\"ttl_ms\" must be an integer from 1000 to 86400000"},
        {"{\"service\": \"c\", \"ttl_ms\": 1e300}", "\"ttl_ms\" must be an integer"},
        {"{\"service\": \"c\", \"ttl_ms\": 2000.5}", "\"ttl_ms\" must be an integer"},
        {"{\"service\": \"c\", \"allow_traffic\": \"no\"}", "\"allow_traffic\" must be true or false"},
        {"{\"service\": \"c\", \"state\": \"s\"}", "\"state\" must be an object"},
        {"{\"service\": \"c\", \"state\": {}, \"state\": {}}", "appears twice"},
        {"{\"service\": \"c\"} x", "data after the JSON value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tl_take t;
        char err[512];
        assert_int_equal(take(bad[i].body, &t, err, sizeof err), -1);
        if (!strstr(err, bad[i].err)) fail_msg("body %s: got '%s', expected '%s'", bad[i].body, err, bad[i].err);
        assert_null(t.service);
        assert_null(t.state);
    }
}

static void renew_bodies(void **state)
{
    (void)state;
    char err[512], *st = (char *)"x";
    const char *keep[] = {"", " \n", "{}", "{\"state\": null}"};
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++) {
        view v = {keep[i], strlen(keep[i])};
        assert_int_equal(api_tune_renew_parse(&v, &st, err, sizeof err), 0);
        assert_null(st);
    }
    view v = V("{\"state\": {\"r\": 2}}");
    assert_int_equal(api_tune_renew_parse(&v, &st, err, sizeof err), 0);
    assert_string_equal(st, "{\"r\":2}");
    free(st);
    view b1 = V("{\"stat\": {}}");
    assert_int_equal(api_tune_renew_parse(&b1, &st, err, sizeof err), -1);
    assert_string_equal(err, "tune/ID: unknown key 'stat' in the body (allowed: state)");
    assert_null(st);
    view b2 = V("{\"state\": [1]}");
    assert_int_equal(api_tune_renew_parse(&b2, &st, err, sizeof err), -1);
    assert_non_null(strstr(err, "\"state\" must be an object"));
    view b3 = V("1");
    assert_int_equal(api_tune_renew_parse(&b3, &st, err, sizeof err), -1);
    assert_non_null(strstr(err, "tune/ID: the body must be a JSON object"));
}

/* ran before, the state now, the same overrides as then -> the action */
static void restore_actions(void **state)
{
    (void)state;
    assert_int_equal(tl_restore_action(true, SVC_READY, true), TL_KEEP);
    assert_int_equal(tl_restore_action(true, SVC_STARTING, true), TL_KEEP);
    assert_int_equal(tl_restore_action(true, SVC_UNHEALTHY, true), TL_KEEP);
    assert_int_equal(tl_restore_action(true, SVC_READY, false), TL_RESTART); /* a variant's overrides */
    assert_int_equal(tl_restore_action(true, SVC_DOWN, true), TL_RESTART);
    assert_int_equal(tl_restore_action(true, SVC_FAILED, true), TL_RESTART); /* a variant that failed */
    assert_int_equal(tl_restore_action(true, SVC_STOPPING, true), TL_RESTART);
    assert_int_equal(tl_restore_action(false, SVC_DOWN, true), TL_KEEP);
    assert_int_equal(tl_restore_action(false, SVC_DOWN, false), TL_KEEP);
    assert_int_equal(tl_restore_action(false, SVC_READY, true), TL_STOP);
    assert_int_equal(tl_restore_action(false, SVC_READY, false), TL_STOP);
    assert_int_equal(tl_restore_action(false, SVC_FAILED, false), TL_STOP);
    assert_int_equal(tl_restore_action(false, SVC_STARTING, false), TL_STOP);
    assert_true(tl_state_runs(SVC_UNHEALTHY));
    assert_false(tl_state_runs(SVC_STOPPING));
    assert_false(tl_state_runs(SVC_FAILED));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(take_defaults_and_values),
        cmocka_unit_test(take_refused),
        cmocka_unit_test(renew_bodies),
        cmocka_unit_test(restore_actions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
