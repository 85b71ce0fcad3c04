/* gen.c - fakellm's completions: slots, the deferred queue and timed
 * token streams for /v1/chat/completions, /v1/completions and llama's
 * native /completion.
 *
 * A request takes one of --parallel slots (vLLM: --max-num-seqs) or
 * waits in a FIFO, as in the real servers, so requests_processing /
 * requests_deferred mean what they mean there.  In its slot it owns one
 * uv_timer: the first token is due FAKELLM_TTFT_MS after the slot is
 * taken, token k at first + k / FAKELLM_TPS seconds.  Each tick emits
 * every token that is due (one write), so a late loop catches up instead
 * of drifting, and a thousand streams cost a thousand timers, no
 * threads.  The generated text and every count come from tokens.c;
 * when answer.c knows the answer (or adds thinking), the text is that
 * answer cut into tokens by the same rule, and the end-of-sequence
 * follows it.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakellm.h"

struct gen {
    struct gen *next, *prev; /* the deferred queue */
    conn *c;                 /* NULL once the client is gone */
    enum gen_api api;
    bool stream, include_usage, queued;
    int prompt_n, n_target, n_done, slot;
    const char *finish;      /* "stop" or "length" */
    char *model;             /* the name answers carry */
    char *router_model;      /* router mode: the model it waits for */
    char *prompt_text;       /* what a slot save writes (slots.c) */
    char id[48];
    unsigned long task;
    double t_arrive, t_start, t_first, t_last;
    double iv;               /* ms between tokens (0: all at once) */
    double rate;             /* FAKELLM_SPEED: this request's modelled tokens/s; 0: none */
    uint64_t rng;
    buf text;                /* non-streaming: the whole answer */
    /* a known answer or thinking (answer.c): the text to say, cut into
     * tokens; NULL pieces: the sentence, as always */
    struct piece {
        size_t off, len;
        bool reasoning;      /* a reasoning_content token */
    } *pieces;
    int n_pieces;
    buf said;                /* the pieces' bytes */
    bool has_reasoning;      /* FAKELLM_THINK=field: the message carries reasoning_content */
    buf reasoning;           /* non-streaming: the whole reasoning_content */
    uv_timer_t timer;
};

static struct gen **slots;
static int *free_slots, n_free;
static struct gen *q_head, *q_tail;
static unsigned long next_task;

static void slots_init(void)
{
    if (slots)
        return;
    int n = fk.cfg.n_parallel;
    slots = xcalloc((size_t)n, sizeof *slots);
    free_slots = xcalloc((size_t)n, sizeof *free_slots);
    for (int i = 0; i < n; i++)
        free_slots[i] = n - 1 - i; /* slot 0 is taken first */
    n_free = n;
}

static void q_remove(struct gen *g)
{
    if (!g->queued)
        return;
    if (g->prev)
        g->prev->next = g->next;
    else
        q_head = g->next;
    if (g->next)
        g->next->prev = g->prev;
    else
        q_tail = g->prev;
    g->next = g->prev = NULL;
    g->queued = false;
    fk.st.deferred--;
}

static void on_gen_closed(uv_handle_t *h)
{
    struct gen *g = h->data;
    free(g->model);
    free(g->router_model);
    free(g->prompt_text);
    buf_release(&g->text);
    free(g->pieces);
    buf_release(&g->said);
    buf_release(&g->reasoning);
    free(g);
}

static void slot_release(struct gen *g)
{
    if (g->slot < 0)
        return;
    slots[g->slot] = NULL;
    free_slots[n_free++] = g->slot;
    g->slot = -1;
    fk.st.processing--;
}

static void gen_free(struct gen *g)
{
    q_remove(g);
    slot_release(g);
    uv_close((uv_handle_t *)&g->timer, on_gen_closed);
}

/* The pace of one request: the speed model's rate (speed.c) when
 * FAKELLM_SPEED is set, else FAKELLM_TPS. */
static void set_pace(struct gen *g, double rate)
{
    if (rate > 0) {
        g->rate = rate;
        g->iv = 1000.0 / rate;
    } else {
        g->iv = fk.env.tps > 0 ? 1000.0 / fk.env.tps : 0;
    }
}

static void on_tick(uv_timer_t *t);

static bool startable(const struct gen *g)
{
    if (!g->router_model)
        return true;
    struct fk_model *m = load_router_find(g->router_model);
    return m && strcmp(m->status, "loaded") == 0;
}

/* Fill free slots from the queue, oldest startable request first. */
static void schedule(void)
{
    struct gen *g = q_head;
    while (g && n_free > 0) {
        struct gen *next = g->next;
        if (startable(g)) {
            q_remove(g);
            g->slot = free_slots[--n_free];
            slots[g->slot] = g;
            slots_note(g->slot, g->prompt_text);
            fk.st.processing++;
            g->t_start = fk_mono_ms();
            uv_update_time(fk.loop);
            uv_timer_start(&g->timer, on_tick, (uint64_t)fk.env.ttft_ms, 0);
        }
        g = next;
    }
}

/* `data: {"id":..,"object":..,"created":..,"model":..,` */
static void chunk_open(struct gen *g, buf *b, const char *object)
{
    buf_adds(b, "data: {\"id\":");
    buf_json_str(b, g->id);
    buf_printf(b, ",\"object\":\"%s\",\"created\":%ld,\"model\":", object, fk.created);
    buf_json_str(b, g->model);
    if (fk.cfg.mode != FK_VLLM)
        buf_adds(b, ",\"system_fingerprint\":\"" FK_BUILD_INFO "\"");
    buf_addc(b, ',');
}

/* llama-server's `timings`.  Under the speed model they are the model's
 * figures (prompt_ms = FAKELLM_TTFT_MS, predicted_ms = n / rate), not the
 * clock's, and vLLM's fake carries them too (a fake-only extension that
 * lets a tune test use one objective for both flavours). */
static void add_timings(struct gen *g, buf *b)
{
    if (fk.cfg.mode == FK_VLLM && !g->rate)
        return;
    double pms = g->t_first - g->t_start;
    double dms = g->n_done ? g->t_last - g->t_first + g->iv : 0;
    if (g->rate) {
        pms = (double)fk.env.ttft_ms;
        dms = g->n_done * g->iv;
    }
    buf_printf(b, ",\"timings\":{\"cache_n\":0,\"prompt_n\":%d,\"prompt_ms\":%.3f,"
                  "\"prompt_per_token_ms\":%.3f,\"prompt_per_second\":%.3f,\"predicted_n\":%d,"
                  "\"predicted_ms\":%.3f,\"predicted_per_token_ms\":%.3f,\"predicted_per_second\":%.3f}",
               g->prompt_n, pms, g->prompt_n ? pms / g->prompt_n : 0,
               pms > 0 ? g->prompt_n * 1000.0 / pms : 0, g->n_done, dms,
               g->n_done ? dms / g->n_done : 0, dms > 0 ? g->n_done * 1000.0 / dms : 0);
}

static void add_usage(struct gen *g, buf *b)
{
    buf_printf(b, ",\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}",
               g->prompt_n, g->n_done, g->prompt_n + g->n_done);
}

static const char *object_of(struct gen *g, bool chunk)
{
    if (g->api == GEN_CHAT)
        return chunk ? "chat.completion.chunk" : "chat.completion";
    return "text_completion";
}

/* One streamed token, in the endpoint's framing. */
static void stream_token(struct gen *g, buf *b, const char *piece, size_t len, bool reasoning)
{
    char *p = xstrndup(piece, len);
    if (g->api == GEN_NATIVE) {
        const char *w = piece;
        while (w < piece + len && (*w == ' ' || *w == '\t' || *w == '\n' || *w == '\r' || *w == '\v' || *w == '\f'))
            w++;
        buf_adds(b, "data: {\"index\":0,\"content\":");
        buf_json_str(b, p);
        buf_printf(b, ",\"tokens\":[%u],\"stop\":false,\"id_slot\":%d,\"tokens_predicted\":%d,"
                      "\"tokens_evaluated\":%d}\n\n",
                   tok_id(w, (size_t)(piece + len - w)), g->slot, g->n_done + 1, g->prompt_n);
    } else {
        chunk_open(g, b, object_of(g, true));
        if (g->api == GEN_CHAT)
            buf_adds(b, reasoning ? "\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":"
                                  : "\"choices\":[{\"index\":0,\"delta\":{\"content\":");
        else
            buf_adds(b, "\"choices\":[{\"index\":0,\"text\":");
        buf_json_str(b, p);
        buf_adds(b, g->api == GEN_CHAT ? "},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
                                       : ",\"logprobs\":null,\"finish_reason\":null}]}\n\n");
    }
    free(p);
}

static void native_final(struct gen *g, buf *b, const char *content)
{
    buf_adds(b, "{\"index\":0,\"content\":");
    buf_json_str(b, content);
    buf_printf(b, ",\"tokens\":[],\"id_slot\":%d,\"stop\":true,\"model\":", g->slot);
    buf_json_str(b, g->model);
    buf_printf(b, ",\"tokens_predicted\":%d,\"tokens_evaluated\":%d,\"generation_settings\":{\"n_predict\":%d},"
                  "\"prompt\":\"\",\"has_new_line\":false,\"truncated\":false,\"stop_type\":\"%s\","
                  "\"stopping_word\":\"\",\"tokens_cached\":%d",
               g->n_done, g->prompt_n, g->n_target, strcmp(g->finish, "stop") == 0 ? "eos" : "limit",
               g->prompt_n + g->n_done);
    add_timings(g, b);
    buf_addc(b, '}');
}

static void stream_final(struct gen *g, buf *b)
{
    if (g->api == GEN_NATIVE) {
        buf_adds(b, "data: ");
        native_final(g, b, "");
        buf_adds(b, "\n\n");
        return; /* llama's native stream has no [DONE] */
    }
    chunk_open(g, b, object_of(g, true));
    if (g->api == GEN_CHAT)
        buf_printf(b, "\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"%s\"}]", g->finish);
    else
        buf_printf(b, "\"choices\":[{\"index\":0,\"text\":\"\",\"logprobs\":null,\"finish_reason\":\"%s\"}]", g->finish);
    add_timings(g, b);
    buf_adds(b, "}\n\n");
    if (g->include_usage) {
        chunk_open(g, b, object_of(g, true));
        buf_adds(b, "\"choices\":[]");
        add_usage(g, b);
        add_timings(g, b);
        buf_adds(b, "}\n\n");
    }
    buf_adds(b, "data: [DONE]\n\n");
}

static void whole_answer(struct gen *g, buf *b)
{
    if (g->api == GEN_NATIVE) {
        native_final(g, b, g->text.p);
        return;
    }
    buf_adds(b, "{\"id\":");
    buf_json_str(b, g->id);
    buf_printf(b, ",\"object\":\"%s\",\"created\":%ld,\"model\":", object_of(g, false), fk.created);
    buf_json_str(b, g->model);
    if (fk.cfg.mode != FK_VLLM)
        buf_adds(b, ",\"system_fingerprint\":\"" FK_BUILD_INFO "\"");
    if (g->api == GEN_CHAT) {
        buf_adds(b, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":");
        buf_json_str(b, g->text.p);
        if (g->has_reasoning) {
            buf_adds(b, ",\"reasoning_content\":");
            buf_json_str(b, g->reasoning.p);
        }
        buf_printf(b, "},\"logprobs\":null,\"finish_reason\":\"%s\"}]", g->finish);
    } else {
        buf_adds(b, ",\"choices\":[{\"index\":0,\"text\":");
        buf_json_str(b, g->text.p);
        buf_printf(b, ",\"logprobs\":null,\"finish_reason\":\"%s\"}]", g->finish);
    }
    add_usage(g, b);
    add_timings(g, b);
    buf_addc(b, '}');
}

/* The request is done; tail holds stream bytes of this tick not yet sent
 * (its last tokens): they go out with the final events and the chunked
 * terminator in one write, so that a wave of streams ending together
 * costs the loop one write each, not four. */
static void finish(struct gen *g, buf *tail)
{
    double now = fk_mono_ms();
    struct fk_stats *s = &fk.st;
    double dms = g->n_done ? g->t_last - g->t_first + g->iv : 0;
    s->predicted_tokens += (uint64_t)g->n_done;
    s->predicted_s += dms / 1000;
    s->e2e_sum_s += (now - g->t_arrive) / 1000;
    s->e2e_count++;
    if (strcmp(g->finish, "stop") == 0)
        s->finished_stop++;
    else
        s->finished_length++;
    if (g->prompt_n + g->n_done > s->n_tokens_max)
        s->n_tokens_max = g->prompt_n + g->n_done;
    buf b = BUF_INIT;
    if (g->stream) {
        stream_final(g, tail);
        http_stream_finish(g->c, tail->p, tail->len);
    } else {
        whole_answer(g, &b);
        http_respond_json(g->c, 200, b.p);
    }
    buf_release(&b);
    g->c = NULL;
    gen_free(g);
    api_request_done();
    schedule();
}

static void on_tick(uv_timer_t *t)
{
    struct gen *g = t->data;
    double now = fk_mono_ms(), iv = g->iv;
    if (!g->t_first && now - g->t_start < (double)fk.env.ttft_ms) {
        /* libuv's clock is cached per loop turn: never answer early */
        uv_timer_start(t, on_tick, (uint64_t)ceil(fk.env.ttft_ms - (now - g->t_start)), 0);
        return;
    }
    buf b = BUF_INIT;
    if (!g->t_first) {
        /* the prompt is "processed": what llama counts at this point */
        g->t_first = now;
        fk.st.prompt_tokens += (uint64_t)g->prompt_n;
        fk.st.prompt_s += (now - g->t_start) / 1000;
        api_observe_ttft((now - g->t_arrive) / 1000);
        if (g->stream) {
            http_stream_begin(g->c, "text/event-stream");
            if (g->api == GEN_CHAT) {
                chunk_open(g, &b, "chat.completion.chunk");
                buf_adds(&b, fk.cfg.mode == FK_VLLM
                                 ? "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
                                 : "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null},\"finish_reason\":null}]}\n\n");
            }
        }
    }
    int due = g->n_target;
    if (iv > 0) {
        double k = floor((now - g->t_first) / iv) + 1;
        if (k < due)
            due = (int)k;
    }
    buf piece = BUF_INIT;
    int before = g->n_done;
    for (; g->n_done < due; g->n_done++) {
        buf_clear(&piece);
        bool reasoning = false;
        if (!g->pieces) {
            tok_piece(&piece, (unsigned)g->n_done, fk.env.garbage, &g->rng);
        } else if (g->n_done < g->n_pieces) {
            struct piece *pc = &g->pieces[g->n_done];
            buf_add(&piece, g->said.p + pc->off, pc->len);
            reasoning = pc->reasoning;
        } else {
            /* ignore_eos past the answer: the sentence goes on */
            unsigned k = (unsigned)(g->n_done - g->n_pieces);
            if (k == 0 && g->n_pieces)
                buf_addc(&piece, ' ');
            tok_piece(&piece, k, false, &g->rng);
        }
        if (g->stream)
            stream_token(g, &b, piece.p, piece.len, reasoning);
        else
            buf_add(reasoning ? &g->reasoning : &g->text, piece.p, piece.len);
        fk.st.n_decode++;
    }
    buf_release(&piece);
    g->t_last = now;
    if (g->stream && g->n_done > before)
        http_token_sent(g->c);
    if (g->n_done >= g->n_target) {
        finish(g, &b);
        buf_release(&b);
        return;
    }
    if (g->stream)
        http_stream_send(g->c, b.p, b.len);
    buf_release(&b);
    double wait = g->t_first + g->n_done * iv - fk_mono_ms();
    uv_timer_start(t, on_tick, wait < 1 ? 1 : (uint64_t)ceil(wait), 0);
}

static void on_abort(void *arg)
{
    struct gen *g = arg;
    g->c = NULL;
    uv_timer_stop(&g->timer);
    gen_free(g);
    schedule();
}

/* The text of a message's content: a string, or the "text" of its
 * parts (OpenAI's multi-part content). */
static void add_content(buf *b, cJSON *content)
{
    if (cJSON_IsString(content)) {
        buf_adds(b, content->valuestring);
        buf_addc(b, '\n');
        return;
    }
    cJSON *part;
    cJSON_ArrayForEach(part, content) {
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(part, "text"));
        if (t) {
            buf_adds(b, t);
            buf_addc(b, '\n');
        }
    }
}

/* The prompt's token count, or -1 after answering 400; its text in
 * *text (the caller's, for the speed model's noise). */
static int prompt_tokens(conn *c, enum gen_api api, cJSON *body, buf *text_out)
{
    buf text = BUF_INIT;
    int ids = 0;
    cJSON *x;
    if (api == GEN_CHAT) {
        cJSON *msgs = cJSON_GetObjectItem(body, "messages");
        if (!cJSON_IsArray(msgs)) {
            api_error(c, 400, "invalid_request_error", "Expected 'messages' to be an array");
            buf_release(&text);
            return -1;
        }
        cJSON_ArrayForEach(x, msgs) add_content(&text, cJSON_GetObjectItem(x, "content"));
    } else {
        cJSON *p = cJSON_GetObjectItem(body, "prompt");
        if (!cJSON_IsString(p) && !cJSON_IsArray(p)) {
            api_error(c, 400, "invalid_request_error", "\"prompt\" must be provided");
            buf_release(&text);
            return -1;
        }
        if (cJSON_IsString(p))
            buf_adds(&text, p->valuestring);
        cJSON *arr = cJSON_IsArray(p) ? p : NULL;
        cJSON_ArrayForEach(x, arr) {
            if (cJSON_IsNumber(x))
                ids++; /* a token id is one token */
            else if (cJSON_IsString(x))
                buf_printf(&text, "%s\n", x->valuestring);
        }
    }
    int n = ids + (int)tok_count(text.p);
    buf_release(text_out);
    *text_out = text;
    return n;
}

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r';
}

/* Cut text into tokens by the token rule: each piece is a word with the
 * whitespace before it, the last one also takes the whitespace after it,
 * so the pieces concatenate back to the text and count as tok_count(). */
static void add_pieces(struct gen *g, const char *s, bool reasoning)
{
    int first = g->n_pieces;
    while (*s) {
        const char *ws = s;
        while (*s && is_space(*s))
            s++;
        if (!*s) {
            if (g->n_pieces > first) { /* trailing whitespace joins the last word */
                buf_add(&g->said, ws, (size_t)(s - ws));
                g->pieces[g->n_pieces - 1].len += (size_t)(s - ws);
            }
            break;
        }
        while (*s && !is_space(*s))
            s++;
        g->pieces = xrealloc(g->pieces, (size_t)(g->n_pieces + 1) * sizeof *g->pieces);
        g->pieces[g->n_pieces++] = (struct piece){g->said.len, (size_t)(s - ws), reasoning};
        buf_add(&g->said, ws, (size_t)(s - ws));
    }
}

/* What answer.c decided, as pieces; nothing when the sentence is said
 * as always (the benchmarks' path). */
static void set_answer(struct gen *g, const struct fk_answer *a)
{
    if (!a->known && a->think == FK_THINK_OFF)
        return;
    buf body = BUF_INIT;
    if (a->known) {
        buf_adds(&body, a->text);
    } else {
        for (unsigned k = 0; k < FK_EOS_AFTER; k++)
            tok_piece(&body, k, false, NULL);
    }
    g->pieces = xmalloc(sizeof *g->pieces); /* non-NULL even for an empty answer */
    if (a->think == FK_THINK_FIELD) {
        g->has_reasoning = true;
        add_pieces(g, a->reasoning, true);
        add_pieces(g, body.p, false);
    } else if (a->think == FK_THINK_CONTENT) {
        char *all = xasprintf("<think>\n%s\n</think>\n%s", a->reasoning, body.p);
        add_pieces(g, all, false);
        free(all);
    } else {
        add_pieces(g, body.p, false);
    }
    buf_release(&body);
}

/* A JSON number as an int; huge values clamp, negative ones mean "none". */
static int json_int(cJSON *o, const char *key, int dflt)
{
    cJSON *v = cJSON_GetObjectItem(o, key);
    if (!cJSON_IsNumber(v))
        return dflt;
    return v->valuedouble >= INT32_MAX ? INT32_MAX : v->valuedouble < 0 ? -1 : (int)v->valuedouble;
}

void gen_submit(conn *c, enum gen_api api, cJSON *body)
{
    struct fk_config *cfg = &fk.cfg;
    if (cfg->embeddings) {
        if (cfg->mode == FK_VLLM)
            api_error(c, 400, "", "The model does not support %s API",
                      api == GEN_CHAT ? "Chat Completions" : "Completions");
        else
            api_error(c, 501, "not_supported_error",
                      "This server does not support completions. Start it without `--embeddings`");
        return;
    }
    if (fk.state == FK_SLEEPING) {
        api_error(c, 503, "", "the engine is sleeping: POST /wake_up first");
        return;
    }
    const char *model = cJSON_GetStringValue(cJSON_GetObjectItem(body, "model"));
    struct fk_model *rm = NULL;
    if (cfg->mode == FK_VLLM && model && strv_find(&cfg->names, model) < 0) {
        api_error(c, 404, "", "The model `%s` does not exist.", model);
        return;
    }
    if (cfg->mode == FK_ROUTER) {
        rm = model ? load_router_find(model) : NULL;
        if (!rm) {
            api_error(c, 400, "invalid_request_error", "model '%s' not found", model ? model : "");
            return;
        }
        if (strcmp(rm->status, "loaded") != 0 && !cfg->autoload) {
            api_error(c, 400, "invalid_request_error", "model '%s' is not loaded", model);
            return;
        }
    }
    buf ptext = BUF_INIT;
    int prompt_n = prompt_tokens(c, api, body, &ptext);
    double rate = prompt_n >= 0 && speed_on() ? speed_for(ptext.p ? ptext.p : "") : 0;
    buf_release(&ptext);
    if (prompt_n < 0)
        return;
    int max = api == GEN_NATIVE ? json_int(body, "n_predict", json_int(body, "max_tokens", -1))
                                : json_int(body, "max_completion_tokens", json_int(body, "max_tokens", -1));
    int limit = cfg->mode == FK_VLLM ? cfg->max_model_len : cfg->n_ctx_slot;
    if (cfg->mode == FK_VLLM && (prompt_n >= limit || (max > 0 && max > limit - prompt_n))) {
        long long want = (long long)prompt_n + (max > 0 ? max : 0);
        api_error(c, 400, "", "This model's maximum context length is %d tokens. However, you requested %lld "
                  "tokens (%d in the messages, %d in the completion). Please reduce the length of the "
                  "messages or completion.", limit, want, prompt_n, max > 0 ? max : 0);
        return;
    }
    if (prompt_n >= limit) {
        api_error(c, 400, "exceed_context_size_error",
                  "the request exceeds the available context size, try increasing it (%d prompt tokens, n_ctx %d)",
                  prompt_n, limit);
        return;
    }
    struct fk_answer ans;
    answer_for(api, body, &ans);
    if (ans.error) {
        api_error(c, ans.error, ans.error == 503 ? "unavailable_error" : ans.error >= 500 ? "server_error"
                                                                     : "invalid_request_error",
                  "fakellm: scripted error (%s)", ans.where);
        answer_release_one(&ans);
        return;
    }
    struct gen *g = xcalloc(1, sizeof *g);
    buf pt = BUF_INIT; /* its text again, for a slot save (slots.c) */
    prompt_tokens(c, api, body, &pt);
    g->prompt_text = xstrdup(pt.p ? pt.p : "");
    buf_release(&pt);
    buf_init(&g->text);
    buf_init(&g->said);
    buf_init(&g->reasoning);
    set_answer(g, &ans);
    answer_release_one(&ans);
    int says = g->pieces ? g->n_pieces : FK_EOS_AFTER; /* tokens before the end-of-sequence */
    int cap = max >= 0 ? max : INT32_MAX, room = limit - prompt_n;
    bool ignore_eos = cJSON_IsTrue(cJSON_GetObjectItem(body, "ignore_eos"));
    bool eos_first = !ignore_eos && says < cap && says < room;

    g->c = c;
    g->api = api;
    g->slot = -1;
    g->prompt_n = prompt_n;
    set_pace(g, rate);
    g->n_target = eos_first ? says : cap < room ? cap : room;
    g->finish = eos_first ? "stop" : "length";
    g->stream = cJSON_IsTrue(cJSON_GetObjectItem(body, "stream"));
    g->include_usage = cJSON_IsTrue(
        cJSON_GetObjectItem(cJSON_GetObjectItem(body, "stream_options"), "include_usage"));
    g->model = xstrdup(model ? model : fk_model_id());
    g->router_model = rm ? xstrdup(rm->id) : NULL;
    g->task = ++next_task;
    g->t_arrive = fk_mono_ms();
    g->rng = (uint64_t)fk_real_ms() * 2654435761u ^ g->task ^ ((uint64_t)getpid() << 32);
    snprintf(g->id, sizeof g->id, "%s%08lx%08x%016lx", api == GEN_CHAT ? "chatcmpl-" : "cmpl-",
             g->task, (unsigned)getpid(), (unsigned long)fk.created);
    uv_timer_init(fk.loop, &g->timer);
    g->timer.data = g;
    http_hold(c, on_abort, g);

    slots_init();
    g->queued = true;
    g->prev = q_tail;
    if (q_tail)
        q_tail->next = g;
    else
        q_head = g;
    q_tail = g;
    fk.st.deferred++;
    if (rm && strcmp(rm->status, "unloaded") == 0)
        load_router_load(rm); /* autoload; gen_model_ready() starts us */
    schedule();
}

void gen_model_ready(const char *model_id)
{
    schedule();
}

cJSON *gen_slots_json(void)
{
    slots_init();
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < fk.cfg.n_parallel; i++) {
        struct gen *g = slots[i];
        cJSON *s = cJSON_CreateObject();
        cJSON_AddNumberToObject(s, "id", i);
        cJSON_AddNumberToObject(s, "n_ctx", fk.cfg.n_ctx_slot);
        cJSON_AddBoolToObject(s, "speculative", false);
        cJSON_AddBoolToObject(s, "is_processing", g != NULL);
        if (g) {
            cJSON_AddNumberToObject(s, "id_task", (double)g->task);
            cJSON_AddNumberToObject(s, "n_prompt_tokens", g->prompt_n);
            cJSON *nt = cJSON_AddArrayToObject(s, "next_token"), *o = cJSON_CreateObject();
            cJSON_AddBoolToObject(o, "has_next_token", g->n_done < g->n_target);
            cJSON_AddNumberToObject(o, "n_remain", g->n_target - g->n_done);
            cJSON_AddNumberToObject(o, "n_decoded", g->n_done);
            cJSON_AddItemToArray(nt, o);
        }
        cJSON_AddItemToArray(arr, s);
    }
    return arr;
}

/* At exit: free every request; the conns are closed without aborts. */
void gen_shutdown(void)
{
    while (q_head)
        gen_free(q_head);
    for (int i = 0; slots && i < fk.cfg.n_parallel; i++)
        if (slots[i])
            gen_free(slots[i]);
    free(slots);
    free(free_slots);
    slots = NULL;
    free_slots = NULL;
}
