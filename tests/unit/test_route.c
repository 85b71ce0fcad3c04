/* test_route.c - model name resolution on plain structs: ids and aliases
 * (hard names, always win), model_id and router-mode listed names (soft,
 * may collide: running, then current mode, else 409 with the candidates),
 * "default" (unset -> 404 saying how to set it; set by id or alias;
 * the model each is forwarded with), exact case, the 404 and 409 messages a client reads,
 * clashes refused at build time, list updates, and a large table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "router/route.h"

static const char *qwen_aliases[] = {"qwen", "coder"};
static const char *llama_aliases[] = {"ll"};

/* 0 qwen3 (aliases qwen, coder; model_id Qwen/Qwen3-8B)
 * 1 qwen3-q4 (model_id Qwen/Qwen3-8B)
 * 2 qwen3-vllm (model_id Qwen/Qwen3-8B)
 * 3 llama (alias ll; model_id meta/llama)
 * 4 router (llama.cpp router mode; no model_id)
 * 5 embed (model_id qwen3: a soft name equal to service 0's id) */
static route_service svcs[] = {
    {"qwen3", qwen_aliases, 2, "Qwen/Qwen3-8B"},
    {"qwen3-q4", NULL, 0, "Qwen/Qwen3-8B"},
    {"qwen3-vllm", NULL, 0, "Qwen/Qwen3-8B"},
    {"llama", llama_aliases, 1, "meta/llama"},
    {"router", NULL, 0, NULL},
    {"embed", NULL, 0, "qwen3"},
};
#define N_SVC (sizeof svcs / sizeof *svcs)

static void table(route_table *t, const char *def)
{
    char err[256] = "";
    if (route_table_init(t, svcs, N_SVC, def, err, sizeof err) < 0) fail_msg("%s", err);
}

static void expect_ok(const route_table *t, const char *name, const char *id, route_kind k)
{
    route_result r = route_resolve(t, name);
    if (r.status != ROUTE_OK) fail_msg("'%s': status %d", name, (int)r.status);
    assert_string_equal(r.id, id);
    assert_string_equal(t->svc[r.service].id, id);
    assert_int_equal(r.kind, k);
}

static void expect_msg(const route_table *t, const char *name, route_status st, const char *msg)
{
    route_result r = route_resolve(t, name);
    assert_int_equal(r.status, st);
    buf b = BUF_INIT;
    route_message(t, &r, name, &b);
    assert_string_equal(b.p, msg);
    buf_release(&b);
}

static void ids_and_aliases(void **state)
{
    route_table t;
    table(&t, NULL);
    expect_ok(&t, "qwen3", "qwen3", ROUTE_ID);
    expect_ok(&t, "qwen", "qwen3", ROUTE_ALIAS);
    expect_ok(&t, "coder", "qwen3", ROUTE_ALIAS);
    expect_ok(&t, "ll", "llama", ROUTE_ALIAS);
    expect_ok(&t, "router", "router", ROUTE_ID);
    expect_ok(&t, "meta/llama", "llama", ROUTE_MODEL_ID);
    /* exact: no case folding, no trimming, no prefix match */
    assert_int_equal(route_resolve(&t, "Qwen3").status, ROUTE_NOT_FOUND);
    assert_int_equal(route_resolve(&t, "qwen3 ").status, ROUTE_NOT_FOUND);
    assert_int_equal(route_resolve(&t, "qwe").status, ROUTE_NOT_FOUND);
    assert_int_equal(route_resolve(&t, "").status, ROUTE_NOT_FOUND);
    assert_int_equal(route_resolve(&t, "META/LLAMA").status, ROUTE_NOT_FOUND);
    assert_int_equal(route_table_find_id(&t, "llama"), 3);
    assert_int_equal(route_table_find_id(&t, "ll"), SIZE_MAX);
    route_table_release(&t);
}

static void hard_name_shadows_soft(void **state)
{
    route_table t;
    table(&t, NULL);
    /* "qwen3" is service 0's id and service 5's model_id: the id wins even
     * when only embed runs */
    route_table_set_flags(&t, 5, ROUTE_F_RUNNING | ROUTE_F_IN_MODE);
    expect_ok(&t, "qwen3", "qwen3", ROUTE_ID);
    /* a listed name equal to an alias is shadowed too */
    const char *names[] = {"coder", "gemma-3"};
    route_table_set_listed(&t, 4, names, 2);
    route_table_set_flags(&t, 4, ROUTE_F_RUNNING);
    expect_ok(&t, "coder", "qwen3", ROUTE_ALIAS);
    expect_ok(&t, "gemma-3", "router", ROUTE_LISTED);
    route_table_release(&t);
}

static void model_id_collisions(void **state)
{
    route_table t;
    table(&t, NULL);
    /* three services share Qwen/Qwen3-8B; none runs, none in the mode */
    expect_msg(&t, "Qwen/Qwen3-8B", ROUTE_AMBIGUOUS,
               "model 'Qwen/Qwen3-8B' is ambiguous: services 'qwen3', 'qwen3-q4' and 'qwen3-vllm' "
               "serve it and none of them is the one running or in the current mode; name the "
               "service id instead");
    route_result r = route_resolve(&t, "Qwen/Qwen3-8B");
    assert_int_equal(r.count, 3);
    for (size_t i = 0; i < r.count; i++)
        assert_string_equal(t.names[r.first + i].name, "Qwen/Qwen3-8B");
    /* one in the current mode */
    route_table_set_flags(&t, 1, ROUTE_F_IN_MODE);
    expect_ok(&t, "Qwen/Qwen3-8B", "qwen3-q4", ROUTE_MODEL_ID);
    /* the running one beats the one in the mode */
    route_table_set_flags(&t, 2, ROUTE_F_RUNNING);
    expect_ok(&t, "Qwen/Qwen3-8B", "qwen3-vllm", ROUTE_MODEL_ID);
    /* two running: the one of them in the mode */
    route_table_set_flags(&t, 0, ROUTE_F_RUNNING | ROUTE_F_IN_MODE);
    expect_ok(&t, "Qwen/Qwen3-8B", "qwen3", ROUTE_MODEL_ID);
    /* two running, both in the mode: ambiguous */
    route_table_set_flags(&t, 2, ROUTE_F_RUNNING | ROUTE_F_IN_MODE);
    expect_msg(&t, "Qwen/Qwen3-8B", ROUTE_AMBIGUOUS,
               "model 'Qwen/Qwen3-8B' is ambiguous: services 'qwen3', 'qwen3-q4' and 'qwen3-vllm' "
               "serve it and more than one of them is running; name the service id instead");
    /* two running, neither in the mode: ambiguous (q4 in the mode is not running) */
    route_table_set_flags(&t, 0, ROUTE_F_RUNNING);
    route_table_set_flags(&t, 2, ROUTE_F_RUNNING);
    assert_int_equal(route_resolve(&t, "Qwen/Qwen3-8B").status, ROUTE_AMBIGUOUS);
    /* none running, two in the mode: ambiguous */
    route_table_set_flags(&t, 0, ROUTE_F_IN_MODE);
    route_table_set_flags(&t, 1, ROUTE_F_IN_MODE);
    route_table_set_flags(&t, 2, 0);
    assert_int_equal(route_resolve(&t, "Qwen/Qwen3-8B").status, ROUTE_AMBIGUOUS);
    /* a unique model_id needs no state */
    route_table_set_flags(&t, 3, 0);
    expect_ok(&t, "meta/llama", "llama", ROUTE_MODEL_ID);
    route_table_release(&t);
}

static void listed_names(void **state)
{
    route_table t;
    table(&t, NULL);
    assert_int_equal(route_resolve(&t, "gemma-3").status, ROUTE_NOT_FOUND);
    const char *names[] = {"gemma-3", "meta/llama", "", "router"};
    route_table_set_listed(&t, 4, names, 4);
    expect_ok(&t, "gemma-3", "router", ROUTE_LISTED);
    /* its own id listed again stays an id */
    expect_ok(&t, "router", "router", ROUTE_ID);
    /* a listed name shared with a model_id: the running one */
    assert_int_equal(route_resolve(&t, "meta/llama").status, ROUTE_AMBIGUOUS);
    route_table_set_flags(&t, 4, ROUTE_F_RUNNING);
    expect_ok(&t, "meta/llama", "router", ROUTE_LISTED);
    route_table_set_flags(&t, 4, 0);
    route_table_set_flags(&t, 3, ROUTE_F_RUNNING);
    expect_ok(&t, "meta/llama", "llama", ROUTE_MODEL_ID);
    /* a new list replaces the old; an empty one clears it */
    const char *names2[] = {"phi-4"};
    route_table_set_listed(&t, 4, names2, 1);
    assert_int_equal(route_resolve(&t, "gemma-3").status, ROUTE_NOT_FOUND);
    expect_ok(&t, "phi-4", "router", ROUTE_LISTED);
    route_table_set_listed(&t, 4, NULL, 0);
    assert_int_equal(route_resolve(&t, "phi-4").status, ROUTE_NOT_FOUND);
    /* the list is copied */
    char mutable[] = "mistral";
    const char *names3[] = {mutable};
    route_table_set_listed(&t, 4, names3, 1);
    mutable[0] = 'X';
    expect_ok(&t, "mistral", "router", ROUTE_LISTED);
    /* out of range: ignored */
    route_table_set_listed(&t, N_SVC, names3, 1);
    route_table_set_flags(&t, N_SVC, ROUTE_F_RUNNING);
    route_table_release(&t);
}

static void default_target(void **state)
{
    route_table t;
    table(&t, NULL);
    expect_msg(&t, "default", ROUTE_NOT_FOUND,
               "no default model is set: set router.default in gpumod.yaml or run 'gpumod route "
               "default SERVICE'");
    assert_true(route_resolve(&t, "default").no_default);
    char err[200];
    assert_int_equal(route_table_set_default(&t, "llama", err, sizeof err), 0);
    expect_ok(&t, "default", "llama", ROUTE_DEFAULT);
    /* by alias: the default is the service */
    assert_int_equal(route_table_set_default(&t, "coder", err, sizeof err), 0);
    expect_ok(&t, "default", "qwen3", ROUTE_DEFAULT);
    /* a model_id is not a service: refused, the old default stays */
    assert_int_equal(route_table_set_default(&t, "meta/llama", err, sizeof err), -1);
    assert_string_equal(err, "default 'meta/llama' is not a service id or alias");
    assert_int_equal(route_table_set_default(&t, "nope", err, sizeof err), -1);
    expect_ok(&t, "default", "qwen3", ROUTE_DEFAULT);
    /* "Default" is just an unknown name */
    assert_int_equal(route_resolve(&t, "Default").status, ROUTE_NOT_FOUND);
    assert_int_equal(route_table_set_default(&t, NULL, err, sizeof err), 0);
    assert_true(route_resolve(&t, "default").no_default);
    route_table_release(&t);
    /* from settings at build time */
    table(&t, "qwen3-q4");
    expect_ok(&t, "default", "qwen3-q4", ROUTE_DEFAULT);
    route_table_release(&t);
    assert_int_equal(route_table_init(&t, svcs, N_SVC, "gone", err, sizeof err), -1);
    assert_string_equal(err, "default 'gone' is not a service id or alias");
    route_table_release(&t);
}

static void not_found_lists_names(void **state)
{
    route_table t;
    table(&t, NULL);
    expect_msg(
        &t, "gpt-4", ROUTE_NOT_FOUND,
        "model 'gpt-4' not found; available: 'Qwen/Qwen3-8B', 'coder', 'embed', 'll', 'llama', "
        "'meta/llama', 'qwen', 'qwen3', 'qwen3-q4', 'qwen3-vllm', 'router'");
    char err[100];
    assert_int_equal(route_table_set_default(&t, "router", err, sizeof err), 0);
    const char *names[] = {"zz-top", "a-first"};
    route_table_set_listed(&t, 4, names, 2);
    expect_msg(
        &t, "gpt-4", ROUTE_NOT_FOUND,
        "model 'gpt-4' not found; available: 'Qwen/Qwen3-8B', 'a-first', 'coder', 'default', "
        "'embed', 'll', 'llama', 'meta/llama', 'qwen', 'qwen3', 'qwen3-q4', 'qwen3-vllm', "
        "'router', 'zz-top'");
    route_table_release(&t);
    /* nothing configured */
    assert_int_equal(route_table_init(&t, NULL, 0, NULL, err, sizeof err), 0);
    expect_msg(&t, "x", ROUTE_NOT_FOUND, "model 'x' not found; available: none");
    expect_msg(&t, "default", ROUTE_NOT_FOUND,
               "no default model is set: set router.default in gpumod.yaml or run 'gpumod route "
               "default SERVICE'");
    route_table_release(&t);
}

static void clashes_refused(void **state)
{
    route_table t;
    char err[200];
    const char *al[] = {"llama"};
    route_service two_ids[] = {{"a", NULL, 0, NULL}, {"a", NULL, 0, NULL}};
    assert_int_equal(route_table_init(&t, two_ids, 2, NULL, err, sizeof err), -1);
    assert_string_equal(err, "name 'a' is the id of 'a' and the id of 'a'");
    route_table_release(&t);
    route_service alias_id[] = {{"llama", NULL, 0, NULL}, {"b", al, 1, NULL}};
    assert_int_equal(route_table_init(&t, alias_id, 2, NULL, err, sizeof err), -1);
    assert_string_equal(err, "name 'llama' is the id of 'llama' and the alias of 'b'");
    route_table_release(&t);
    route_service two_alias[] = {{"a", al, 1, NULL}, {"b", al, 1, NULL}};
    assert_int_equal(route_table_init(&t, two_alias, 2, NULL, err, sizeof err), -1);
    assert_string_equal(err, "name 'llama' is the alias of 'a' and the alias of 'b'");
    route_table_release(&t);
    /* an alias equal to its own id is no clash */
    route_service self[] = {{"llama", al, 1, "llama"}};
    assert_int_equal(route_table_init(&t, self, 1, NULL, err, sizeof err), 0);
    expect_ok(&t, "llama", "llama", ROUTE_ID);
    assert_int_equal(t.n_names, 1);
    route_table_release(&t);
    const char *dflt[] = {"default"}, *empty[] = {""};
    route_service reserved[] = {{"a", dflt, 1, NULL}};
    assert_int_equal(route_table_init(&t, reserved, 1, NULL, err, sizeof err), -1);
    assert_string_equal(err, "service 'a': 'default' is reserved for the router default");
    route_table_release(&t);
    route_service emp[] = {{"a", empty, 1, NULL}};
    assert_int_equal(route_table_init(&t, emp, 1, NULL, err, sizeof err), -1);
    assert_string_equal(err, "service 'a': an empty alias");
    route_table_release(&t);
    route_service noid[] = {{"", NULL, 0, NULL}};
    assert_int_equal(route_table_init(&t, noid, 1, NULL, err, sizeof err), -1);
    assert_string_equal(err, "service 0 has no id");
    route_table_release(&t);
}

static void large_table(void **state)
{
    enum { N = 300 };
    static char ids[N][16], mids[N][16];
    static route_service v[N];
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "svc-%03d", i);
        snprintf(mids[i], sizeof mids[i], "model-%d", i % 7); /* 7 shared model_ids */
        v[i] = (route_service){ids[i], NULL, 0, mids[i]};
    }
    route_table t;
    char err[100];
    assert_int_equal(route_table_init(&t, v, N, NULL, err, sizeof err), 0);
    assert_int_equal(t.n_names, 2 * N); /* one entry per (name, service) */
    for (size_t i = 1; i < t.n_names; i++)
        assert_true(strcmp(t.names[i - 1].name, t.names[i].name) <= 0);
    for (int i = 0; i < N; i++)
        expect_ok(&t, ids[i], ids[i], ROUTE_ID);
    route_result r = route_resolve(&t, "model-3");
    assert_int_equal(r.status, ROUTE_AMBIGUOUS);
    assert_int_equal(r.count, (N - 3 + 6) / 7);
    route_table_set_flags(&t, 290, ROUTE_F_RUNNING); /* 290 % 7 == 3 */
    expect_ok(&t, "model-3", "svc-290", ROUTE_MODEL_ID);
    /* the 404 lists 64 names and counts the rest */
    buf b = BUF_INIT;
    r = route_resolve(&t, "nope");
    route_message(&t, &r, "nope", &b);
    assert_non_null(strstr(b.p, " and 243 more"));
    assert_non_null(strstr(b.p, "'model-0', 'model-1'"));
    buf_clear(&b);
    /* the 409 too */
    route_table_set_flags(&t, 290, 0);
    r = route_resolve(&t, "model-3");
    route_message(&t, &r, "model-3", &b);
    assert_non_null(strstr(b.p, "'svc-003', 'svc-010'"));
    buf_release(&b);
    route_table_release(&t);
}

/* up(t, name): the model a request naming name is forwarded with ("" for
 * unchanged, "!" + the error when there is none) */
static const char *up(const route_table *t, const char *name)
{
    static char out[512];
    route_result r = route_resolve(t, name);
    if (r.status != ROUTE_OK) fail_msg("'%s': status %d", name, (int)r.status);
    const char *m = NULL;
    buf e = BUF_INIT;
    if (route_upstream(t, r.service, r.kind, &m, &e) < 0)
        snprintf(out, sizeof out, "!%s", e.p);
    else
        snprintf(out, sizeof out, "%s", m ? m : "");
    buf_release(&e);
    return out;
}

/* What the engine is sent: a local engine serves its id, aliases and
 * model_id (only "default" becomes the id); a remote gets its model_id
 * for any of gpumod's names; a router-mode service gets its
 * default_model, else its only listed model, else an error naming them. */
static void upstream_models(void **state)
{
    (void)state;
    static const char *chat_al[] = {"c"}, *far_al[] = {"cloud"};
    route_service sv[] = {
        {"chat", chat_al, 1, "org/chat", NULL, false},
        {"far", far_al, 1, "openai/gpt-4o", "openai/gpt-4o", false},
        {"lr", NULL, 0, "unsloth/X-GGUF", NULL, true},
        {"lr2", NULL, 0, NULL, "Nemo-Q4", true},
        {"far2", NULL, 0, NULL, NULL, false, true},
    };
    sv[1].remote = true;
    route_table t;
    char err[256] = "";
    if (route_table_init(&t, sv, 5, "far", err, sizeof err) < 0) fail_msg("%s", err);
    assert_string_equal(up(&t, "far2"), "!service 'far2' is a remote without model_id: gpumod does not know the "
                                        "remote's name for its model; set model_id in its preset to that name");
    assert_string_equal(up(&t, "chat"), "");
    assert_string_equal(up(&t, "c"), "");
    assert_string_equal(up(&t, "org/chat"), "");
    assert_string_equal(up(&t, "far"), "openai/gpt-4o");
    assert_string_equal(up(&t, "cloud"), "openai/gpt-4o");
    assert_string_equal(up(&t, "openai/gpt-4o"), "");
    assert_string_equal(up(&t, "default"), "openai/gpt-4o");
    assert_int_equal(route_table_set_default(&t, "c", err, sizeof err), 0);
    assert_string_equal(up(&t, "default"), "chat");
    /* router mode: nothing listed yet, one model, several, its default_model */
    assert_string_equal(up(&t, "lr"),
                        "!service 'lr' lists no model yet and sets no unit_vars.default_model: name one of its models");
    const char *one[] = {"gemma-3"};
    route_table_set_listed(&t, 2, one, 1);
    assert_string_equal(up(&t, "lr"), "gemma-3");
    assert_string_equal(up(&t, "unsloth/X-GGUF"), "gemma-3");
    assert_string_equal(up(&t, "gemma-3"), "");
    const char *two[] = {"gemma-3", "phi-4"};
    route_table_set_listed(&t, 2, two, 2);
    assert_string_equal(up(&t, "lr"), "!service 'lr' serves several models ('gemma-3', 'phi-4') and sets no "
                                      "unit_vars.default_model: name one of them");
    assert_int_equal(route_table_set_default(&t, "lr2", err, sizeof err), 0);
    assert_string_equal(up(&t, "default"), "Nemo-Q4");
    assert_string_equal(up(&t, "lr2"), "Nemo-Q4");
    const char *lst[] = {"Nemo-Q4", "other"};
    route_table_set_listed(&t, 3, lst, 2);
    assert_string_equal(up(&t, "Nemo-Q4"), "");
    assert_string_equal(up(&t, "lr2"), "Nemo-Q4");
    route_table_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ids_and_aliases),     cmocka_unit_test(hard_name_shadows_soft),
        cmocka_unit_test(model_id_collisions), cmocka_unit_test(listed_names),
        cmocka_unit_test(default_target),      cmocka_unit_test(not_found_lists_names),
        cmocka_unit_test(clashes_refused),     cmocka_unit_test(large_table),
        cmocka_unit_test(upstream_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
