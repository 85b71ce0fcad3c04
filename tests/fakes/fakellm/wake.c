/* wake.c - vLLM's wake as a manager sees it: POST /wake_up answers when
 * the wake is done, FAKELLM_WAKE_MS after the request (a timer: the loop
 * keeps answering meanwhile, and /is_sleeping says true until then), or
 * 500 with FAKELLM_WAKE_FAIL (the engine stays asleep).  `?tags=weights`
 * and `?tags=kv_cache` (vLLM >= 0.10) wake one part each; the engine is
 * awake when no part sleeps.  POST /collective_rpc {"method":
 * "reload_weights"} is what a level-2 wake calls between the two parts.
 * What each part takes back is load.c's business (load_wake_tags).
 * Every wake in flight has its own timer, so concurrent ones each get
 * their answer. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "fakellm.h"

struct wake {
    struct wake *next;
    conn *c; /* NULL once the client went */
    unsigned tags;
    uv_timer_t timer;
};
static struct wake *wakes;

static void on_abort(void *arg)
{
    ((struct wake *)arg)->c = NULL;
}

static void on_closed(uv_handle_t *h)
{
    struct wake *w = h->data;
    for (struct wake **p = &wakes; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    free(w);
}

static void on_wake_timer(uv_timer_t *t)
{
    struct wake *w = t->data;
    char err[256];
    int rc;
    if (fk.env.wake_fail && fk.state == FK_SLEEPING) {
        fk_log('E', "executor_base.py:240",
               "wake_up failed: CUDA error: out of memory (fakellm: FAKELLM_WAKE_FAIL)");
        rc = fk_fail(err, sizeof err,
                     "fakellm: FAKELLM_WAKE_FAIL: the wake failed, the engine stays asleep");
    } else {
        rc = load_wake_tags(w->tags, err, sizeof err);
    }
    if (w->c && rc < 0)
        api_error(w->c, 500, "", "%s", err);
    else if (w->c)
        http_respond(w->c, 200, NULL, "", 0);
    uv_close((uv_handle_t *)&w->timer, on_closed);
}

/* The query's tags (repeated `tags=` or comma-separated): FK_TAG_* bits;
 * no tags: every part.  An unknown tag is skipped with a warning, as
 * vLLM's executor does. */
static unsigned parse_tags(const char *q)
{
    unsigned tags = 0;
    bool any = false;
    while (*q) {
        size_t n = strcspn(q, "&");
        if (n > 5 && strncmp(q, "tags=", 5) == 0) {
            any = true;
            for (const char *v = q + 5; v < q + n;) {
                size_t m = strcspn(v, ",&");
                if (m == 7 && strncmp(v, "weights", 7) == 0)
                    tags |= FK_TAG_WEIGHTS;
                else if (m == 8 && strncmp(v, "kv_cache", 8) == 0)
                    tags |= FK_TAG_KV;
                else
                    fk_log('W', "executor_base.py:236", "Tag %.*s is not in sleeping tags", (int)m,
                           v);
                v += m + (v[m] == ',');
            }
        }
        q += n + (q[n] == '&');
    }
    return any ? tags : FK_TAG_WEIGHTS | FK_TAG_KV;
}

void wake_handle(conn *c, const char *query)
{
    struct wake *w = xcalloc(1, sizeof *w);
    w->c = c;
    w->tags = parse_tags(query);
    w->next = wakes;
    wakes = w;
    uv_timer_init(fk.loop, &w->timer);
    w->timer.data = w;
    http_hold(c, on_abort, w);
    uv_timer_start(&w->timer, on_wake_timer, (uint64_t)fk.env.wake_ms, 0);
}

void wake_rpc(conn *c, cJSON *body)
{
    const char *method = cJSON_GetStringValue(cJSON_GetObjectItem(body, "method"));
    if (!method) {
        api_error(c, 400, "", "\"method\" must be a string");
        return;
    }
    if (strcmp(method, "reload_weights") != 0) {
        api_error(
            c, 500, "",
            "AttributeError: 'Worker' object has no attribute '%s' (fakellm knows reload_weights)",
            method);
        return;
    }
    fk_log('I', "gpu_model_runner.py:2700", "Reloading weights inplace... (%s)",
           fk.state == FK_SLEEPING ? "asleep" : "awake");
    http_respond_json(c, 200, "{\"results\":[null]}");
}

void wake_release(void)
{
    while (wakes) {
        struct wake *w = wakes;
        wakes = w->next;
        free(w);
    }
}
