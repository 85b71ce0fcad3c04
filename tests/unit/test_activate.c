/* test_activate.c - activation on demand (src/router/activate.c) on a
 * real libuv loop against a fake of what the daemon lends the router (a
 * router_host table: states, start, switch_to, rank, switching) whose
 * members record every call and complete them when the test says: one shared load per service,
 * the `switch` rule (start beside, else the best mode containing the
 * service as the rank judged them, else 503 naming each and why), `start` (503 with the gate's
 * reason and Retry-After, never a switch), `reject`, a failed service
 * (never reset: 503 saying a person must start it), the bounded queue
 * (429), the deadline (504, the load goes on), progress callbacks on
 * change only, a failed start reaching every waiter (422), act_cancel,
 * answers never given inside act_request, a switch already in progress,
 * a stopping service, the metrics calls, act_json, act_free answering
 * 503 with a load still in flight (its late callback finds nothing), and
 * the daemon's record of a service looked up once however often it is
 * asked for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "testenv.h" /* before config.h: its parameter named mode */

#include "../../src/router/activate.c"
#include "core/plan.h"

/* ---- stubs ---- */

static config g_cfg;

typedef struct fake_svc {
    const char *id;
    svc_state state;
    int pct;
} fake_svc;

static fake_svc g_svc[8];
static size_t g_nsvc;

static fake_svc *fake(const char *id)
{
    for (size_t i = 0; i < g_nsvc; i++)
        if (!strcmp(g_svc[i].id, id)) return &g_svc[i];
    return NULL;
}

static size_t fake_states(void *ud, const char *id, rh_state *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < g_nsvc && n < max; i++)
        if (!id || !strcmp(id, g_svc[i].id)) out[n++] = (rh_state){g_svc[i].id, g_svc[i].state, g_svc[i].pct};
    return n;
}

/* the daemon's records are the fake's entries */
static int g_lookups;
static rh_svc *fake_lookup(void *ud, const char *id)
{
    g_lookups++;
    return (rh_svc *)fake(id);
}

static bool fake_state(void *ud, rh_svc *svc, rh_state *out)
{
    const fake_svc *f = (const fake_svc *)svc;
    *out = (rh_state){f->id, f->state, f->pct};
    return true;
}

/* start: recorded; answered by sup_finish (or at once when g_now_status is set) */
static int g_starts;
static char g_start_id[64], g_start_origin[32];
static rh_done g_start_cb;
static void *g_start_ud;
static int g_now_status; /* answer inside sup_start, as the supervisor does for errors found at once */
static const char *g_now_code, *g_now_msg;
static bool g_now_person;

static void fake_start(void *h, rh_svc *svc, const char *origin, rh_done cb, void *ud)
{
    const char *id = ((fake_svc *)svc)->id;
    g_starts++;
    snprintf(g_start_id, sizeof g_start_id, "%s", id);
    snprintf(g_start_origin, sizeof g_start_origin, "%s", origin ? origin : "(null)");
    if (g_now_status) {
        rh_result r = {g_now_status, g_now_code, g_now_msg, g_now_person};
        cb(&r, ud);
        return;
    }
    assert_null(g_start_cb); /* one load per service in these tests */
    g_start_cb = cb;
    g_start_ud = ud;
    fake_svc *f = fake(id);
    if (f && f->state == SVC_DOWN) f->state = SVC_STARTING;
}

static void sup_finish(int status, const char *code, const char *msg)
{
    rh_done cb = g_start_cb;
    assert_non_null(cb);
    g_start_cb = NULL;
    fake_svc *f = fake(g_start_id);
    if (f) f->state = status == 200 ? SVC_READY : status == 422 ? SVC_FAILED : SVC_DOWN;
    rh_result r = {status, code, msg};
    cb(&r, g_start_ud);
}

static int g_switches;
static char g_sw_mode[64], g_sw_origin[32];
static bool g_sw_queue;
static rh_done g_sw_cb;
static void *g_sw_ud;

/* the daemon's switch_to always queues behind a switch in progress */
static void fake_switch_to(void *h, const char *mode_id, const char *origin, rh_done cb, void *ud)
{
    g_switches++;
    snprintf(g_sw_mode, sizeof g_sw_mode, "%s", mode_id);
    snprintf(g_sw_origin, sizeof g_sw_origin, "%s", origin ? origin : "(null)");
    g_sw_queue = true;
    g_sw_cb = cb;
    g_sw_ud = ud;
}

static void switch_finish(int status, const char *code, const char *msg, const char *ready_id)
{
    rh_done cb = g_sw_cb;
    assert_non_null(cb);
    g_sw_cb = NULL;
    if (ready_id) fake(ready_id)->state = SVC_READY;
    rh_result r = {status, code, msg};
    cb(&r, g_sw_ud);
}

/* rank: answered at once, with g_rank (g_nrank candidates) when a test
 * sets it, else every mode containing the service as fitting with no
 * stops (ranked by plan_rank: the smallest first) */
static int g_ranks;
static char g_rank_service[64];
static const plan_choice *g_rank;
static size_t g_nrank;

static void fake_rank(void *h, const char *service, rh_ranked cb, void *ud)
{
    g_ranks++;
    snprintf(g_rank_service, sizeof g_rank_service, "%s", service);
    rh_result ok = {200, NULL, NULL};
    if (g_rank) {
        cb(&ok, g_rank, g_nrank, ud);
        return;
    }
    plan_choice c[8];
    size_t n = 0;
    for (size_t i = 0; i < g_cfg.n_modes && n < 8; i++)
        if (strv_find(&g_cfg.modes[i].services, service) >= 0)
            c[n++] = (plan_choice){.mode = g_cfg.modes[i].id, .ok = true, .nservices = g_cfg.modes[i].services.n};
    plan_rank(c, n);
    cb(&ok, c, n, ud);
}

static const char *g_current; /* the mode of a switch in progress, or NULL */

static bool fake_switching(void *h, char *mode_id, size_t len)
{
    if (!g_current) return false;
    snprintf(mode_id, len, "%s", g_current);
    return true;
}

static const router_host g_host = {.states = fake_states, .lookup = fake_lookup, .state = fake_state,
                                   .start = fake_start, .switching = fake_switching,
                                   .switch_to = fake_switch_to, .rank = fake_rank};

static int g_depth_calls, g_waits, g_act_ok, g_act_failed, g_sw_ok, g_sw_failed;
static int64_t g_depth_last;
void rm_queue_depth(rmetrics *m, const char *service, int64_t depth)
{
    g_depth_calls++;
    g_depth_last = depth;
}
void rm_queue_wait(rmetrics *m, double seconds)
{
    assert_true(seconds >= 0);
    g_waits++;
}
void rm_activation(rmetrics *m, double seconds, bool ok)
{
    *(ok ? &g_act_ok : &g_act_failed) += 1;
}
void rm_switch(rmetrics *m, double seconds, bool ok)
{
    *(ok ? &g_sw_ok : &g_sw_failed) += 1;
}

/* ---- the event sink: router.activation events as they come ---- */

static int g_nev;
static char g_ev_reason[512], g_ev_data[1024], g_ev_service[64];
static void on_act_event(const store_event *e, void *ud)
{
    assert_string_equal(e->kind, "router.activation");
    g_nev++;
    snprintf(g_ev_reason, sizeof g_ev_reason, "%s", e->reason);
    snprintf(g_ev_data, sizeof g_ev_data, "%s", e->data);
    snprintf(g_ev_service, sizeof g_ev_service, "%s", e->service);
}

/* ---- the configuration ---- */

static void add_preset(const char *id, int activation, int64_t gpu_mb)
{
    g_cfg.presets = xrealloc(g_cfg.presets, (g_cfg.n_presets + 1) * sizeof *g_cfg.presets);
    preset *p = &g_cfg.presets[g_cfg.n_presets++];
    memset(p, 0, sizeof *p);
    p->id = xstrdup(id);
    p->activation = activation;
    p->mem_host_mb = -1;
    p->mem_gpu_mb = xcalloc(1, sizeof(int64_t));
    p->mem_gpu_mb[0] = gpu_mb;
    p->n_mem_gpu = 1;
    g_svc[g_nsvc++] = (fake_svc){p->id, SVC_DOWN, -1};
}

static void add_mode(const char *id, const char *const *services)
{
    g_cfg.modes = xrealloc(g_cfg.modes, (g_cfg.n_modes + 1) * sizeof *g_cfg.modes);
    mode *md = &g_cfg.modes[g_cfg.n_modes++];
    memset(md, 0, sizeof *md);
    md->id = xstrdup(id);
    for (; *services; services++) strv_push(&md->services, *services);
}

static uv_loop_t g_loop;
static activator *g_a;

static int setup(void **state)
{
    memset(&g_cfg, 0, sizeof g_cfg);
    settings_defaults(&g_cfg.set);
    g_cfg.set.router.queue_max = 4;
    g_cfg.set.router.queue_timeout_ms = 60000;
    g_nsvc = 0;
    add_preset("chat", ACT_INHERIT, 8000);  /* the router's: switch */
    add_preset("code", ACT_INHERIT, 20000);
    add_preset("embed", ACT_START, 1000);
    add_preset("vision", ACT_REJECT, 1000);
    add_preset("lonely", ACT_INHERIT, 1000); /* in no mode */
    add_mode("all", (const char *const[]){"chat", "code", "embed", NULL});
    add_mode("heavy", (const char *const[]){"code", "embed", NULL}); /* 21000 MiB */
    add_mode("light", (const char *const[]){"code", "chat", NULL});  /* 28000 MiB */
    add_mode("solo-b", (const char *const[]){"chat", NULL});
    add_mode("solo-a", (const char *const[]){"chat", NULL}); /* same size: the id decides */
    g_starts = g_switches = g_lookups = 0;
    g_start_cb = NULL;
    g_sw_cb = NULL;
    g_now_status = 0;
    g_now_person = false;
    g_current = NULL;
    g_ranks = 0;
    g_rank = NULL;
    g_nrank = 0;
    g_depth_calls = g_waits = g_act_ok = g_act_failed = g_sw_ok = g_sw_failed = 0;
    assert_int_equal(uv_loop_init(&g_loop), 0);
    g_a = act_new(&g_loop, &g_host, &g_cfg, (rmetrics *)1);
    g_nev = 0;
    act_set_events(g_a, NULL, on_act_event, NULL);
    return 0;
}

static int teardown(void **state)
{
    act_free(g_a);
    /* a load still in flight answers the freed activator's op: nothing to do but free it */
    if (g_start_cb) sup_finish(503, "shutting_down", "the daemon is shutting down");
    if (g_sw_cb) switch_finish(503, "shutting_down", "the daemon is shutting down", NULL);
    while (uv_run(&g_loop, UV_RUN_NOWAIT)) {
    }
    assert_int_equal(uv_loop_close(&g_loop), 0);
    for (size_t i = 0; i < g_cfg.n_presets; i++) {
        free(g_cfg.presets[i].id);
        free(g_cfg.presets[i].mem_gpu_mb);
    }
    free(g_cfg.presets);
    for (size_t i = 0; i < g_cfg.n_modes; i++) {
        free(g_cfg.modes[i].id);
        strv_release(&g_cfg.modes[i].services);
    }
    free(g_cfg.modes);
    settings_release(&g_cfg.set);
    return 0;
}

/* ---- a client ----
 * Tests keep their clients static: what still waits when a test returns
 * is answered by act_free in the teardown. */

typedef struct client {
    int answers, status, retry;
    char code[32], msg[512];
    int progress_calls, pct;
    char state[16];
    act_wait *w;
} client;

static void on_done(void *ud, int status, const char *code, const char *message, int retry_after_s)
{
    client *c = ud;
    c->answers++;
    c->status = status;
    c->retry = retry_after_s;
    snprintf(c->code, sizeof c->code, "%s", code ? code : "");
    snprintf(c->msg, sizeof c->msg, "%s", message ? message : "");
    c->w = NULL;
}

static void on_progress(void *ud, int pct, const char *st)
{
    client *c = ud;
    c->progress_calls++;
    c->pct = pct;
    snprintf(c->state, sizeof c->state, "%s", st);
}

static void ask(client *c, const char *service)
{
    memset(c, 0, sizeof *c);
    c->w = act_request(g_a, service, on_done, on_progress, c);
    assert_non_null(c->w);
    assert_int_equal(c->answers, 0); /* never from inside act_request */
}

/* Run the loop until cond() or a (scaled) deadline. */
static bool run_until(bool (*cond)(void *), void *arg)
{
    int64_t end = mono_ms() + 5000 * scale();
    while (!cond(arg)) {
        if (mono_ms() > end) return false;
        uv_run(&g_loop, UV_RUN_ONCE);
    }
    return true;
}

static bool answered(void *arg)
{
    return ((client *)arg)->answers > 0;
}

typedef struct many {
    client *c;
    size_t n;
} many;

static bool all_answered(void *arg)
{
    many *m = arg;
    for (size_t i = 0; i < m->n; i++)
        if (!m->c[i].answers) return false;
    return true;
}

static void wait_answer(client *c)
{
    if (!run_until(answered, c)) fail_msg("no answer within the deadline");
    assert_int_equal(c->answers, 1);
}

/* a few loop turns: what is due happens */
static void spin(int ms)
{
    int64_t end = mono_ms() + ms;
    while (mono_ms() < end) uv_run(&g_loop, UV_RUN_NOWAIT), usleep(2000);
}

/* ---- tests ---- */

static void ready_answers_next_turn(void **state)
{
    fake("chat")->state = SVC_READY;
    static client c;
    ask(&c, "chat");
    wait_answer(&c);
    assert_int_equal(c.status, 200);
    assert_int_equal(g_starts, 0);
    assert_int_equal(g_waits, 0); /* it never waited */
    static client u;
    ask(&u, "nope");
    wait_answer(&u);
    assert_int_equal(u.status, 404);
    assert_string_equal(u.code, "not_found");
    assert_string_equal(u.msg, "no service 'nope' is configured");
}

static bool progress_at(void *arg)
{
    client *c = arg;
    return c->progress_calls >= 1 && c->pct == 60;
}

/* Four waiters (queue_max) share one start; progress on change only. */
static void one_load_shared(void **state)
{
    static client c[4];
    for (int i = 0; i < 4; i++) ask(&c[i], "chat");
    assert_int_equal(g_starts, 1);
    assert_string_equal(g_start_id, "chat");
    assert_string_equal(g_start_origin, "router");
    assert_int_equal(act_queue_depth(g_a, "chat"), 4);
    assert_int_equal(g_depth_last, 4);
    buf j = BUF_INIT;
    act_json(g_a, &j);
    assert_non_null(strstr(j.p, "{\"service\":\"chat\",\"depth\":4,\"load\":{\"kind\":\"start\",\"mode\":null"));
    assert_non_null(strstr(j.p, "\"waiting\":4}"));
    buf_release(&j);

    fake("chat")->pct = 10;
    /* the first tick tells every waiter the state */
    int64_t end = mono_ms() + 5000 * scale();
    while (c[3].progress_calls < 1 && mono_ms() < end) uv_run(&g_loop, UV_RUN_ONCE);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(c[i].progress_calls, 1);
        assert_int_equal(c[i].pct, 10);
        assert_string_equal(c[i].state, "starting");
    }
    spin(250); /* no change: no call */
    assert_int_equal(c[0].progress_calls, 1);
    fake("chat")->pct = 60;
    assert_true(run_until(progress_at, &c[0]));
    assert_int_equal(c[0].progress_calls, 2);

    sup_finish(200, NULL, NULL);
    many m = {c, 4};
    assert_true(run_until(all_answered, &m));
    for (int i = 0; i < 4; i++) {
        assert_int_equal(c[i].answers, 1);
        assert_int_equal(c[i].status, 200);
    }
    assert_int_equal(g_starts, 1);
    assert_int_equal(g_act_ok, 1);
    assert_int_equal(g_waits, 4);
    /* four requests, the ticks, the start: the daemon's record was looked up once */
    assert_int_equal(g_lookups, 1);
    assert_int_equal(act_queue_depth(g_a, "chat"), 0);
    assert_int_equal(g_depth_last, 0);
}

static void queue_full_429(void **state)
{
    static client c[5];
    for (int i = 0; i < 4; i++) ask(&c[i], "chat");
    ask(&c[4], "chat");
    wait_answer(&c[4]);
    assert_int_equal(c[4].status, 429);
    assert_string_equal(c[4].code, "queue_full");
    assert_string_equal(c[4].msg, "the queue for 'chat' is full: 4 requests wait for it to be ready (router.queue_max 4)");
    assert_int_equal(c[0].answers, 0);
    assert_int_equal(g_starts, 1);
}

/* The switch rule: the gate refuses a start beside the others, so the
 * best mode containing the service (all fit here: the smallest) is
 * switched to, queued. */
static void switch_to_best_mode(void **state)
{
    static client c[2];
    ask(&c[0], "chat");
    ask(&c[1], "chat");
    sup_finish(409, "gate_refused", "refused: 'chat': gpu 0: free 4000 MiB < required 9024 MiB");
    assert_int_equal(g_switches, 1);
    assert_string_equal(g_sw_mode, "solo-a"); /* one service; solo-b has the same size, a later id */
    assert_string_equal(g_sw_origin, "router");
    assert_true(g_sw_queue);
    spin(20);
    assert_int_equal(c[0].answers, 0);
    switch_finish(200, NULL, NULL, "chat");
    many m = {c, 2};
    assert_true(run_until(all_answered, &m));
    assert_int_equal(c[0].status, 200);
    assert_int_equal(c[1].status, 200);
    assert_int_equal(g_starts, 1);
    assert_int_equal(g_sw_ok, 0); /* a switch's duration is the daemon's switch-end hook's, not the activator's */
    assert_int_equal(g_act_ok, 1);
    /* one router.activation event for the shared load */
    assert_int_equal(g_nev, 1);
    assert_string_equal(g_ev_service, "chat");
    assert_non_null(strstr(g_ev_reason, "'chat': start refused by the gate, then switch to 'solo-a' (activation switch): "
                                        "ready after "));
    assert_non_null(strstr(g_ev_reason, " ms, 2 waiter(s) served"));
    assert_non_null(strstr(g_ev_data, "\"policy\":\"switch\",\"action\":\"switch\",\"mode\":\"solo-a\","
                                      "\"tried_start\":true,\"waiters\":2,\"timed_out\":0,"));
    assert_non_null(strstr(g_ev_data, "\"outcome\":\"ready\",\"status\":200,\"message\":null}"));
}

/* The gate refuses the start beside the others and the plans say which
 * mode fits: the best fitting one is switched to, never a smaller mode the
 * plan refuses. */
static void switch_to_fitting_mode(void **state)
{
    static client c;
    static const plan_choice cands[] = {{.mode = "light", .ok = true, .nstops = 1},
                                        {.mode = "solo-a", .why = "the start of 'chat' is refused: no room"}};
    g_rank = cands;
    g_nrank = 2;
    ask(&c, "chat");
    sup_finish(409, "gate_refused", "refused: 'chat': gpu 0: free 4000 MiB < required 9024 MiB");
    assert_int_equal(g_ranks, 1);
    assert_string_equal(g_rank_service, "chat");
    assert_int_equal(g_switches, 1);
    assert_string_equal(g_sw_mode, "light");
    switch_finish(200, NULL, NULL, "chat");
    wait_answer(&c);
    assert_int_equal(c.status, 200);
}

/* No candidate fits: 503 naming each mode and why, and no switch. */
static void no_fitting_mode_503(void **state)
{
    static client c;
    static const plan_choice cands[] = {
        {.mode = "solo-a", .why = "the start of 'chat' is refused: gpu 0: free 4000 MiB < required 9024 MiB"},
        {.mode = "light", .why = "the start of 'code' is refused: gpu 0: free 100 MiB < required 20024 MiB"}};
    g_rank = cands;
    g_nrank = 2;
    ask(&c, "chat");
    sup_finish(409, "gate_refused", "refused: 'chat': gpu 0: free 4000 MiB < required 9024 MiB");
    wait_answer(&c);
    assert_int_equal(c.status, 503);
    assert_string_equal(c.code, "unavailable");
    assert_string_equal(c.msg, "refused: 'chat': gpu 0: free 4000 MiB < required 9024 MiB; no mode containing 'chat' "
                               "fits: mode 'solo-a': the start of 'chat' is refused: gpu 0: free 4000 MiB < required "
                               "9024 MiB; mode 'light': the start of 'code' is refused: gpu 0: free 100 MiB < "
                               "required 20024 MiB");
    assert_int_equal(c.retry, ACT_RETRY_AFTER_S);
    assert_int_equal(g_switches, 0);
    assert_int_equal(g_act_failed, 1);
}

static void no_mode_503_with_reason(void **state)
{
    static client c;
    ask(&c, "lonely");
    sup_finish(409, "gate_refused", "refused: 'lonely': MemAvailable 100 MiB < required 2100 MiB");
    wait_answer(&c);
    assert_int_equal(c.status, 503);
    assert_string_equal(c.code, "unavailable");
    assert_string_equal(c.msg, "refused: 'lonely': MemAvailable 100 MiB < required 2100 MiB; no mode contains "
                               "'lonely', so no switch can make room");
    assert_int_equal(c.retry, ACT_RETRY_AFTER_S);
    assert_int_equal(g_switches, 0);
    assert_int_equal(g_act_failed, 1);
}

static void start_policy_never_switches(void **state)
{
    static client c;
    ask(&c, "embed");
    assert_int_equal(g_starts, 1);
    sup_finish(409, "gate_refused", "refused: 'embed': gpu 0: free 10 MiB < required 2024 MiB");
    wait_answer(&c);
    assert_int_equal(c.status, 503);
    assert_string_equal(c.code, "unavailable");
    assert_string_equal(c.msg, "refused: 'embed': gpu 0: free 10 MiB < required 2024 MiB");
    assert_true(c.retry > 0);
    assert_int_equal(g_switches, 0);
}

static void reject_policy(void **state)
{
    static client c;
    ask(&c, "vision");
    wait_answer(&c);
    assert_int_equal(c.status, 503);
    assert_string_equal(c.code, "unavailable");
    assert_string_equal(c.msg, "'vision' is down and its activation is reject: start it with gpumod service start vision");
    assert_int_equal(c.retry, ACT_RETRY_AFTER_S);
    assert_int_equal(g_starts, 0);
    assert_int_equal(g_nev, 1);
    assert_string_equal(g_ev_service, "vision");
    assert_non_null(strstr(g_ev_data, "\"policy\":\"reject\",\"action\":\"refused\",\"mode\":null,"
                                      "\"tried_start\":false,\"waiters\":1,"));
    assert_non_null(strstr(g_ev_data, "\"outcome\":\"unavailable\",\"status\":503,"));
    /* the router's setting applies when the preset says nothing */
    g_cfg.set.router.activation = ACT_REJECT;
    static client d;
    ask(&d, "chat");
    wait_answer(&d);
    assert_int_equal(d.status, 503);
    assert_int_equal(g_starts, 0);
    /* ready: served whatever the policy */
    fake("vision")->state = SVC_READY;
    static client e;
    ask(&e, "vision");
    wait_answer(&e);
    assert_int_equal(e.status, 200);
}

static void failed_service_not_reset(void **state)
{
    fake("chat")->state = SVC_FAILED;
    static client c;
    ask(&c, "chat");
    wait_answer(&c);
    assert_int_equal(c.status, 503);
    assert_string_equal(c.msg, "service 'chat' failed; a person must start it (gpumod service start chat)");
    assert_int_equal(g_starts, 0);
    /* the supervisor says so too (a race): the same answer */
    fake("chat")->state = SVC_DOWN;
    g_now_status = 409;
    g_now_code = "conflict";
    g_now_msg = "service 'chat' failed; a person must start it";
    g_now_person = true;
    static client d;
    ask(&d, "chat"); /* answered inside sup_start, still not inside act_request */
    wait_answer(&d);
    assert_int_equal(d.status, 503);
    assert_string_equal(d.msg, "service 'chat' failed; a person must start it (gpumod service start chat)");
}

static void start_failed_422_to_all(void **state)
{
    static client c[3];
    for (int i = 0; i < 3; i++) ask(&c[i], "code");
    sup_finish(422, "start_failed", "'code' exited during load (status 1): out of memory");
    many m = {c, 3};
    assert_true(run_until(all_answered, &m));
    for (int i = 0; i < 3; i++) {
        assert_int_equal(c[i].status, 422);
        assert_string_equal(c[i].code, "start_failed");
        assert_string_equal(c[i].msg, "'code' exited during load (status 1): out of memory");
    }
    assert_int_equal(g_act_failed, 1);
    /* now failed: the next request does not reset it */
    static client d;
    ask(&d, "code");
    wait_answer(&d);
    assert_int_equal(d.status, 503);
    assert_int_equal(g_starts, 1);
}

static void switch_failure_reaches_waiters(void **state)
{
    static client c;
    ask(&c, "chat");
    sup_finish(409, "gate_refused", "refused: 'chat': no room");
    switch_finish(422, "start_failed", "'chat' exited during load; rolled back to 'heavy'", NULL);
    wait_answer(&c);
    assert_int_equal(c.status, 422);
    assert_string_equal(c.code, "start_failed");
    assert_string_equal(c.msg, "switch to mode 'solo-a' for 'chat': 'chat' exited during load; rolled back to 'heavy'");
    assert_int_equal(g_sw_failed, 0); /* counted by the daemon's switch-end hook */
    assert_int_equal(g_act_failed, 1);
    assert_int_equal(g_nev, 1);
    assert_non_null(strstr(g_ev_data, "\"action\":\"switch\",\"mode\":\"solo-a\",\"tried_start\":true,\"waiters\":1,"));
    assert_non_null(strstr(g_ev_data, "\"outcome\":\"start_failed\",\"status\":422,\"message\":\"switch to mode "));
}

/* The deadline answers 504; the load goes on and ends with nobody waiting. */
static void deadline_504(void **state)
{
    g_cfg.set.router.queue_timeout_ms = 150;
    static client c;
    ask(&c, "chat");
    wait_answer(&c);
    assert_int_equal(c.status, 504);
    assert_string_equal(c.code, "timeout");
    assert_string_equal(c.msg, "'chat' was not ready within router.queue_timeout (150 ms); its activation goes on");
    assert_non_null(g_start_cb); /* not cancelled */
    assert_int_equal(g_waits, 1);
    sup_finish(200, NULL, NULL);
    spin(20);
    assert_int_equal(c.answers, 1);
    assert_int_equal(g_act_ok, 1);
}

static void cancel_no_callback(void **state)
{
    static client c[2];
    ask(&c[0], "chat");
    ask(&c[1], "chat");
    act_cancel(c[0].w);
    assert_int_equal(act_queue_depth(g_a, "chat"), 1);
    act_cancel(c[1].w); /* the last one: the start goes on */
    assert_int_equal(act_queue_depth(g_a, "chat"), 0);
    assert_non_null(g_start_cb);
    /* a cancelled answer already decided is not delivered either */
    fake("code")->state = SVC_READY;
    static client d;
    ask(&d, "code");
    act_cancel(d.w);
    sup_finish(200, NULL, NULL);
    spin(150);
    assert_int_equal(c[0].answers + c[1].answers + d.answers, 0);
    assert_int_equal(c[0].progress_calls + c[1].progress_calls, 0);
}

/* A progress callback that cancels its own waiter (the client went away
 * while the SSE comment was written) and the waiter after it. */
static void cancel_from_progress_cb(void *ud, int pct, const char *st)
{
    client *c = ud;
    c->progress_calls++;
    act_cancel(c->w);
    c->w = NULL;
    client *next = c + 1;
    if (next->w) {
        act_cancel(next->w);
        next->w = NULL;
    }
}

static void cancel_inside_progress(void **state)
{
    static client c[3];
    for (int i = 0; i < 3; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].w = act_request(g_a, "chat", on_done, i == 0 ? cancel_from_progress_cb : on_progress, &c[i]);
    }
    int64_t end = mono_ms() + 5000 * scale();
    while (c[2].progress_calls == 0 && mono_ms() < end) uv_run(&g_loop, UV_RUN_ONCE);
    assert_int_equal(c[0].progress_calls, 1);
    assert_int_equal(c[1].progress_calls, 0); /* cancelled before its turn */
    assert_int_equal(c[2].progress_calls, 1);
    assert_int_equal(act_queue_depth(g_a, "chat"), 1);
    sup_finish(200, NULL, NULL);
    wait_answer(&c[2]);
    assert_int_equal(c[2].status, 200);
    assert_int_equal(c[0].answers + c[1].answers, 0);
}

/* A switch in progress to a mode that has the service: ours queues
 * behind it for that mode; nothing is started beside it. */
static void switch_in_progress_joins(void **state)
{
    g_current = "light";
    static client c;
    ask(&c, "chat");
    assert_int_equal(g_starts, 0);
    assert_int_equal(g_switches, 1);
    assert_string_equal(g_sw_mode, "light");
    assert_true(g_sw_queue);
    /* its first start makes chat ready: the waiter need not wait for the rest */
    fake("chat")->state = SVC_READY;
    wait_answer(&c);
    assert_int_equal(c.status, 200);
    switch_finish(200, NULL, NULL, NULL);
    spin(20);
    assert_int_equal(c.answers, 1);
    g_current = NULL;
}

/* A switch in progress to a mode without the service: nothing is judged
 * on memory in motion; once it ended, the start beside comes first. */
static void switch_in_progress_elsewhere_waits(void **state)
{
    g_current = "heavy";
    static client c;
    ask(&c, "chat");
    spin(250);
    assert_int_equal(g_starts, 0);
    assert_int_equal(g_switches, 0);
    assert_int_equal(g_ranks, 0);
    g_current = NULL;
    int64_t end = mono_ms() + 5000 * scale();
    while (!g_starts && mono_ms() < end) uv_run(&g_loop, UV_RUN_ONCE);
    assert_int_equal(g_starts, 1);
    sup_finish(200, NULL, NULL);
    wait_answer(&c);
    assert_int_equal(c.status, 200);
}

/* A stopping service is waited for, then started. */
static void stopping_then_start(void **state)
{
    fake("chat")->state = SVC_STOPPING;
    static client c;
    ask(&c, "chat");
    spin(250);
    assert_int_equal(g_starts, 0);
    fake("chat")->state = SVC_DOWN;
    int64_t end = mono_ms() + 5000 * scale();
    while (!g_starts && mono_ms() < end) uv_run(&g_loop, UV_RUN_ONCE);
    assert_int_equal(g_starts, 1);
    sup_finish(200, NULL, NULL);
    wait_answer(&c);
    assert_int_equal(c.status, 200);
}

/* act_free: every waiter 503 shutting_down at once; the start's late
 * callback (teardown) finds an orphaned op and only frees it. */
static void free_answers_waiters(void **state)
{
    static client c[2];
    ask(&c[0], "chat");
    ask(&c[1], "chat");
    act_free(g_a);
    g_a = NULL;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(c[i].answers, 1);
        assert_int_equal(c[i].status, 503);
        assert_string_equal(c[i].code, "shutting_down");
    }
    assert_non_null(g_start_cb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(ready_answers_next_turn, setup, teardown),
        cmocka_unit_test_setup_teardown(one_load_shared, setup, teardown),
        cmocka_unit_test_setup_teardown(queue_full_429, setup, teardown),
        cmocka_unit_test_setup_teardown(switch_to_best_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(switch_to_fitting_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(no_fitting_mode_503, setup, teardown),
        cmocka_unit_test_setup_teardown(no_mode_503_with_reason, setup, teardown),
        cmocka_unit_test_setup_teardown(start_policy_never_switches, setup, teardown),
        cmocka_unit_test_setup_teardown(reject_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_service_not_reset, setup, teardown),
        cmocka_unit_test_setup_teardown(start_failed_422_to_all, setup, teardown),
        cmocka_unit_test_setup_teardown(switch_failure_reaches_waiters, setup, teardown),
        cmocka_unit_test_setup_teardown(deadline_504, setup, teardown),
        cmocka_unit_test_setup_teardown(cancel_no_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(cancel_inside_progress, setup, teardown),
        cmocka_unit_test_setup_teardown(switch_in_progress_joins, setup, teardown),
        cmocka_unit_test_setup_teardown(switch_in_progress_elsewhere_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(stopping_then_start, setup, teardown),
        cmocka_unit_test_setup_teardown(free_answers_waiters, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
