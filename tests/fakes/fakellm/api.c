/* api.c - fakellm's routes and the endpoints that answer at once.
 *
 * One route table per flavour decides what exists: llama-server (single
 * model or router) and vLLM differ in paths, error shapes, what needs the
 * API key and what a loading server says, and a test of gpumod must see
 * those differences, so each is copied from the real server rather than
 * unified.  Completions live in gen.c; everything here is synchronous.
 */
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fakellm.h"

#define L (1u << FK_LLAMA)
#define R (1u << FK_ROUTER)
#define V (1u << FK_VLLM)

typedef void (*handler)(conn *c, const struct http_req *r, cJSON *body);

struct route {
    const char *method, *path;
    unsigned modes;
    bool json;     /* the body must be a JSON object */
    bool dev;      /* vLLM: only with VLLM_SERVER_DEV_MODE=1 */
    handler fn;
};

static void respond_cjson(conn *c, int status, cJSON *j)
{
    char *s = cJSON_PrintUnformatted(j);
    http_respond_json(c, status, s);
    free(s);
    cJSON_Delete(j);
}

static const char *vllm_type(int status)
{
    switch (status) {
    case 400: return "BadRequestError";
    case 404: return "NotFoundError";
    case 501: return "NotImplementedError";
    case 503: return "ServiceUnavailableError";
    default: return "InternalServerError";
    }
}

/* The server's own error shape: llama-server {"error":{code,message,
 * type}}, vLLM {"error":{message,type,param,code}}. */
void api_error(conn *c, int status, const char *type, const char *fmt, ...)
{
    buf msg = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    cJSON *j = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(j, "error");
    if (fk.cfg.mode == FK_VLLM) {
        cJSON_AddStringToObject(e, "message", msg.p);
        cJSON_AddStringToObject(e, "type", vllm_type(status));
        cJSON_AddNullToObject(e, "param");
        cJSON_AddNumberToObject(e, "code", status);
    } else {
        cJSON_AddNumberToObject(e, "code", status);
        cJSON_AddStringToObject(e, "message", msg.p);
        cJSON_AddStringToObject(e, "type", type);
    }
    buf_release(&msg);
    respond_cjson(c, status, j);
}

static uv_timer_t crash_timer;

static void on_crash(uv_timer_t *t)
{
    struct rlimit rl = {0, 0};
    setrlimit(RLIMIT_CORE, &rl); /* no core files in the test's cwd */
    signal(SIGABRT, SIG_DFL);
    abort();
}

void api_request_done(void)
{
    fk.st.completed++;
    if (fk.env.crash_after > 0 && fk.st.completed == (uint64_t)fk.env.crash_after) {
        /* what a CUDA fault looks like from outside: an assert, then
         * SIGABRT.  A short delay lets the answer that counted leave. */
        fk_log('E', "ggml_abort", "/llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu:88: CUDA error: an illegal memory access was encountered (fakellm: FAKELLM_CRASH_AFTER=%ld)",
               fk.env.crash_after);
        uv_timer_init(fk.loop, &crash_timer);
        uv_timer_start(&crash_timer, on_crash, 20, 0);
    }
}

static void h_health(conn *c, const struct http_req *r, cJSON *body)
{
    /* FAKELLM_HEALTH_FAIL_AFTER=N: after N healthy answers, /health says
     * 500 for good (a wedged engine that still holds its port), for the
     * supervisor's health-failure tests.  Read here, apart from main.c's
     * table, to keep this knob a separate addition. */
    static long fail_after = -2, answered;
    if (fail_after == -2) {
        const char *e = getenv("FAKELLM_HEALTH_FAIL_AFTER");
        fail_after = e && *e ? strtol(e, NULL, 10) : -1;
    }
    if (fail_after >= 0 && answered++ >= fail_after) {
        http_respond_json(c, 500, "{\"error\":{\"code\":500,\"message\":\"fakellm: FAKELLM_HEALTH_FAIL_AFTER\",\"type\":\"server_error\"}}");
        return;
    }
    if (fk.cfg.mode == FK_VLLM)
        http_respond(c, 200, NULL, "", 0);
    else
        http_respond_json(c, 200, "{\"status\":\"ok\"}");
}

static long file_size(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 ? (long)st.st_size : 0;
}

static void models_llama(cJSON *j)
{
    const char *id = fk_model_id();
    cJSON *models = cJSON_AddArrayToObject(j, "models"), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", id);
    cJSON_AddStringToObject(m, "model", id);
    cJSON_AddStringToObject(m, "type", "model");
    cJSON *caps = cJSON_AddArrayToObject(m, "capabilities");
    cJSON_AddItemToArray(caps, cJSON_CreateString(fk.cfg.embeddings ? "embedding" : "completion"));
    cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "details"), "format", "gguf");
    cJSON_AddItemToArray(models, m);
    cJSON_AddStringToObject(j, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(j, "data"), *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "id", id);
    cJSON *al = cJSON_AddArrayToObject(d, "aliases");
    for (size_t i = 0; i < fk.cfg.names.n; i++)
        cJSON_AddItemToArray(al, cJSON_CreateString(fk.cfg.names.v[i]));
    cJSON_AddArrayToObject(d, "tags");
    cJSON_AddStringToObject(d, "object", "model");
    cJSON_AddNumberToObject(d, "created", (double)fk.created);
    cJSON_AddStringToObject(d, "owned_by", "llamacpp");
    cJSON *meta = cJSON_AddObjectToObject(d, "meta");
    cJSON_AddNumberToObject(meta, "vocab_type", 1);
    cJSON_AddNumberToObject(meta, "n_vocab", 32000);
    cJSON_AddNumberToObject(meta, "n_ctx", fk.cfg.n_ctx_slot);
    cJSON_AddNumberToObject(meta, "n_ctx_train", fk.cfg.n_ctx);
    cJSON_AddNumberToObject(meta, "n_embd", FK_N_EMBD);
    cJSON_AddNumberToObject(meta, "size", (double)file_size(fk.cfg.model));
    cJSON_AddItemToArray(data, d);
}

static void models_router(cJSON *j)
{
    cJSON *data = cJSON_AddArrayToObject(j, "data");
    for (size_t i = 0; i < load_router_count(); i++) {
        struct fk_model *m = load_router_at(i);
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "id", m->id);
        cJSON_AddStringToObject(d, "object", "model");
        cJSON_AddStringToObject(d, "owned_by", "llamacpp");
        cJSON_AddNumberToObject(d, "created", (double)fk.created);
        cJSON_AddStringToObject(d, "path", m->path);
        cJSON *st = cJSON_AddObjectToObject(d, "status");
        cJSON_AddStringToObject(st, "value", m->status);
        cJSON *args = cJSON_AddArrayToObject(st, "args");
        const char *a[] = {"--alias", m->id, "--model", m->path};
        for (size_t k = 0; k < 4; k++)
            cJSON_AddItemToArray(args, cJSON_CreateString(a[k]));
        cJSON_AddItemToArray(data, d);
    }
    cJSON_AddStringToObject(j, "object", "list");
}

static void models_vllm(cJSON *j)
{
    cJSON_AddStringToObject(j, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(j, "data");
    for (size_t i = 0; i < fk.cfg.names.n; i++) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "id", fk.cfg.names.v[i]);
        cJSON_AddStringToObject(d, "object", "model");
        cJSON_AddNumberToObject(d, "created", (double)fk.created);
        cJSON_AddStringToObject(d, "owned_by", "vllm");
        cJSON_AddStringToObject(d, "root", fk.cfg.model);
        cJSON_AddNullToObject(d, "parent");
        cJSON_AddNumberToObject(d, "max_model_len", fk.cfg.max_model_len);
        cJSON_AddItemToArray(data, d);
    }
}

static void h_models(conn *c, const struct http_req *r, cJSON *body)
{
    cJSON *j = cJSON_CreateObject();
    if (fk.cfg.mode == FK_VLLM)
        models_vllm(j);
    else if (fk.cfg.mode == FK_ROUTER)
        models_router(j);
    else
        models_llama(j);
    respond_cjson(c, 200, j);
}

static void h_props(conn *c, const struct http_req *r, cJSON *body)
{
    cJSON *j = cJSON_CreateObject(), *d = cJSON_AddObjectToObject(j, "default_generation_settings");
    cJSON_AddNumberToObject(d, "id", 0);
    cJSON_AddNumberToObject(d, "n_ctx", fk.cfg.n_ctx_slot);
    cJSON_AddBoolToObject(d, "speculative", false);
    cJSON_AddBoolToObject(d, "is_processing", false);
    cJSON *p = cJSON_AddObjectToObject(d, "params");
    cJSON_AddNumberToObject(p, "n_predict", -1);
    cJSON_AddNumberToObject(p, "temperature", 0.8);
    cJSON_AddNumberToObject(j, "total_slots", fk.cfg.n_parallel);
    cJSON_AddStringToObject(j, "model_alias", fk_model_id());
    cJSON_AddStringToObject(j, "model_path", fk.cfg.model ? fk.cfg.model : "");
    cJSON *mod = cJSON_AddObjectToObject(j, "modalities");
    cJSON_AddBoolToObject(mod, "vision", false);
    cJSON_AddBoolToObject(mod, "audio", false);
    cJSON_AddBoolToObject(j, "endpoint_slots", fk.cfg.slots);
    cJSON_AddBoolToObject(j, "endpoint_props", false);
    cJSON_AddBoolToObject(j, "endpoint_metrics", fk.cfg.metrics);
    cJSON_AddStringToObject(j, "bos_token", "<s>");
    cJSON_AddStringToObject(j, "eos_token", "</s>");
    cJSON_AddStringToObject(j, "build_info", FK_BUILD_INFO);
    cJSON_AddBoolToObject(j, "is_sleeping", false);
    respond_cjson(c, 200, j);
}

static void h_slots(conn *c, const struct http_req *r, cJSON *body)
{
    if (!fk.cfg.slots) {
        api_error(c, 501, "not_supported_error",
                  "This server does not support slots endpoint. Start it with `--slots`");
        return;
    }
    respond_cjson(c, 200, gen_slots_json());
}

/* TTFT histogram buckets, vLLM's upper bounds (seconds). */
static const double ttft_le[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
                                 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0,
                                 640.0, 2560.0};
#define N_LE (sizeof ttft_le / sizeof ttft_le[0])

static void metric(buf *b, const char *name, const char *type, const char *help, const char *labels,
                   double v)
{
    buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s%s %.17g\n", name, help, name, type, name, labels, v);
}

static void metrics_llama(buf *b)
{
    struct fk_stats *s = &fk.st;
    metric(b, "llamacpp:prompt_tokens_total", "counter", "Number of prompt tokens processed.", "", (double)s->prompt_tokens);
    metric(b, "llamacpp:prompt_tokens_cached_total", "counter", "Number of prompt tokens taken from the cache.", "", 0);
    metric(b, "llamacpp:prompt_seconds_total", "counter", "Prompt process time", "", s->prompt_s);
    metric(b, "llamacpp:tokens_predicted_total", "counter", "Number of generation tokens processed.", "", (double)s->predicted_tokens);
    metric(b, "llamacpp:tokens_predicted_seconds_total", "counter", "Predict process time", "", s->predicted_s);
    metric(b, "llamacpp:n_decode_total", "counter", "Total number of llama_decode() calls", "", (double)s->n_decode);
    metric(b, "llamacpp:n_tokens_max", "counter", "Largest observed n_tokens.", "", s->n_tokens_max);
    metric(b, "llamacpp:spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens generated.", "", 0);
    metric(b, "llamacpp:spec_decode_num_accepted_tokens_total", "counter", "Number of draft tokens accepted.", "", 0);
    metric(b, "llamacpp:spec_decode_num_drafts_total", "counter", "Number of drafts.", "", 0);
    metric(b, "llamacpp:prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.", "",
           s->prompt_s > 0 ? (double)s->prompt_tokens / s->prompt_s : 0);
    metric(b, "llamacpp:predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s.", "",
           s->predicted_s > 0 ? (double)s->predicted_tokens / s->predicted_s : 0);
    metric(b, "llamacpp:requests_processing", "gauge", "Number of requests processing.", "", s->processing);
    metric(b, "llamacpp:requests_deferred", "gauge", "Number of requests deferred.", "", s->deferred);
    metric(b, "llamacpp:n_busy_slots_per_decode", "gauge", "Average number of busy slots per llama_decode() call", "",
           s->n_decode ? (double)s->predicted_tokens / (double)s->n_decode : 0);
}

static void metrics_vllm(buf *b)
{
    struct fk_stats *s = &fk.st;
    buf l = BUF_INIT, lb = BUF_INIT;
    buf_adds(&l, "{engine=\"0\",model_name=");
    buf_json_str(&l, fk_model_id());
    buf_adds(&l, "}");
    metric(b, "vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", l.p, s->processing);
    metric(b, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", l.p, s->deferred);
    metric(b, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", l.p,
           (double)s->processing / fk.cfg.n_parallel);
    metric(b, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", l.p, (double)s->prompt_tokens);
    metric(b, "vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", l.p, (double)s->predicted_tokens);
    buf_adds(b, "# HELP vllm:request_success_total Count of successfully processed requests.\n"
                "# TYPE vllm:request_success_total counter\n");
    const char *reasons[] = {"stop", "length"};
    uint64_t counts[] = {s->finished_stop, s->finished_length};
    for (int i = 0; i < 2; i++) {
        buf_printf(b, "vllm:request_success_total{engine=\"0\",finished_reason=\"%s\",model_name=", reasons[i]);
        buf_json_str(b, fk_model_id());
        buf_printf(b, "} %llu\n", (unsigned long long)counts[i]);
    }
    buf_adds(b, "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n"
                "# TYPE vllm:time_to_first_token_seconds histogram\n");
    uint64_t cum = 0;
    for (size_t i = 0; i <= N_LE; i++) {
        cum += s->ttft_buckets[i];
        buf_clear(&lb);
        if (i < N_LE)
            buf_printf(&lb, "%g", ttft_le[i]);
        else
            buf_adds(&lb, "+Inf");
        buf_printf(b, "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"%s\",model_name=", lb.p);
        buf_json_str(b, fk_model_id());
        buf_printf(b, "} %llu\n", (unsigned long long)cum);
    }
    buf_printf(b, "vllm:time_to_first_token_seconds_count%s %llu\n", l.p, (unsigned long long)s->ttft_count);
    buf_printf(b, "vllm:time_to_first_token_seconds_sum%s %.17g\n", l.p, s->ttft_sum_s);
    buf_adds(b, "# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.\n"
                "# TYPE vllm:e2e_request_latency_seconds histogram\n");
    buf_printf(b, "vllm:e2e_request_latency_seconds_count%s %llu\n", l.p, (unsigned long long)s->e2e_count);
    buf_printf(b, "vllm:e2e_request_latency_seconds_sum%s %.17g\n", l.p, s->e2e_sum_s);
    buf_release(&l);
    buf_release(&lb);
}

/* TTFT observations, for the vLLM histogram */
void api_observe_ttft(double seconds)
{
    size_t i = 0;
    while (i < N_LE && seconds > ttft_le[i])
        i++;
    fk.st.ttft_buckets[i]++;
    fk.st.ttft_count++;
    fk.st.ttft_sum_s += seconds;
}

static void h_metrics(conn *c, const struct http_req *r, cJSON *body)
{
    if (!fk.cfg.metrics) {
        api_error(c, 501, "not_supported_error",
                  "This server does not support metrics endpoint. Start it with `--metrics`");
        return;
    }
    if (fk.cfg.mode == FK_ROUTER && !strstr(r->query, "model=")) {
        api_error(c, 400, "invalid_request_error", "model name is missing from the request");
        return;
    }
    buf b = BUF_INIT;
    if (fk.cfg.mode == FK_VLLM)
        metrics_vllm(&b);
    else
        metrics_llama(&b);
    metric(&b, "fakellm:aborted_requests_total", "counter",
           "Requests whose client disconnected before the answer was complete.", "", (double)fk.st.aborted);
    http_respond(c, 200, "text/plain; version=0.0.4", b.p, b.len);
    buf_release(&b);
}

static void add_id(const char *w, size_t n, void *arg)
{
    cJSON_AddItemToArray(arg, cJSON_CreateNumber(tok_id(w, n)));
}

struct pieces {
    cJSON *arr;
};

static void add_piece(const char *w, size_t n, void *arg)
{
    cJSON *o = cJSON_CreateObject();
    char *s = xstrndup(w, n);
    cJSON_AddNumberToObject(o, "id", tok_id(w, n));
    cJSON_AddStringToObject(o, "piece", s);
    free(s);
    cJSON_AddItemToArray(((struct pieces *)arg)->arr, o);
}

static void h_tokenize(conn *c, const struct http_req *r, cJSON *body)
{
    const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(body, "content"));
    if (!text)
        text = cJSON_GetStringValue(cJSON_GetObjectItem(body, "prompt"));
    if (!text) {
        api_error(c, 400, "invalid_request_error", "\"content\" must be provided");
        return;
    }
    cJSON *j = cJSON_CreateObject(), *toks = cJSON_AddArrayToObject(j, "tokens");
    if (cJSON_IsTrue(cJSON_GetObjectItem(body, "with_pieces"))) {
        struct pieces p = {toks};
        tok_each(text, add_piece, &p);
    } else {
        tok_each(text, add_id, toks);
    }
    if (fk.cfg.mode == FK_VLLM) {
        cJSON_AddNumberToObject(j, "count", cJSON_GetArraySize(toks));
        cJSON_AddNumberToObject(j, "max_model_len", fk.cfg.max_model_len);
    }
    respond_cjson(c, 200, j);
}

/* Only ids of words the fake generates map back; others are "<unk>". */
static void h_detokenize(conn *c, const struct http_req *r, cJSON *body)
{
    cJSON *toks = cJSON_GetObjectItem(body, "tokens"), *t;
    if (!cJSON_IsArray(toks)) {
        api_error(c, 400, "invalid_request_error", "\"tokens\" must be an array of token ids");
        return;
    }
    buf b = BUF_INIT;
    cJSON_ArrayForEach(t, toks) {
        const char *w = cJSON_IsNumber(t) ? tok_word((uint32_t)t->valuedouble) : NULL;
        if (b.len)
            buf_addc(&b, ' ');
        buf_adds(&b, w ? w : "<unk>");
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, fk.cfg.mode == FK_VLLM ? "prompt" : "content", b.p);
    buf_release(&b);
    respond_cjson(c, 200, j);
}

/* One input's text: a string, or token ids rendered as words so that
 * the same ids always give the same vector. */
static bool embed_text(cJSON *in, buf *out)
{
    if (cJSON_IsString(in)) {
        buf_adds(out, in->valuestring);
        return true;
    }
    if (!cJSON_IsArray(in) || !cJSON_GetArraySize(in))
        return false;
    cJSON *t;
    cJSON_ArrayForEach(t, in) {
        if (!cJSON_IsNumber(t))
            return false;
        buf_printf(out, "%d ", (int)t->valuedouble);
    }
    return true;
}

static void h_embeddings(conn *c, const struct http_req *r, cJSON *body)
{
    if (!fk.cfg.embeddings) {
        if (fk.cfg.mode == FK_VLLM)
            api_error(c, 400, "", "The model does not support Embeddings API");
        else
            api_error(c, 501, "not_supported_error",
                      "This server does not support embeddings. Start it with `--embeddings`");
        return;
    }
    cJSON *in = cJSON_GetObjectItem(body, "input"), *list = cJSON_CreateArray();
    /* a list of strings or of token lists is a batch; else one input */
    if (cJSON_IsArray(in) && cJSON_GetArraySize(in) &&
        (cJSON_IsString(in->child) || cJSON_IsArray(in->child))) {
        cJSON *x;
        cJSON_ArrayForEach(x, in) cJSON_AddItemReferenceToArray(list, x);
    } else if (in) {
        cJSON_AddItemReferenceToArray(list, in);
    }
    cJSON *j = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(j, "data"), *x;
    size_t ntok = 0;
    int idx = 0;
    buf text = BUF_INIT;
    cJSON_ArrayForEach(x, list) {
        buf_clear(&text);
        if (!embed_text(x, &text) || !tok_count(text.p)) {
            buf_release(&text);
            cJSON_Delete(list);
            cJSON_Delete(j);
            api_error(c, 400, "invalid_request_error", "\"input\" must be a non-empty string or array");
            return;
        }
        ntok += tok_count(text.p);
        float v[FK_N_EMBD];
        tok_embedding(text.p, v, FK_N_EMBD);
        cJSON *o = cJSON_CreateObject(), *e = cJSON_AddArrayToObject(o, "embedding");
        cJSON_AddStringToObject(o, "object", "embedding");
        cJSON_AddNumberToObject(o, "index", idx++);
        for (int i = 0; i < FK_N_EMBD; i++)
            cJSON_AddItemToArray(e, cJSON_CreateNumber(v[i]));
        cJSON_AddItemToArray(data, o);
    }
    buf_release(&text);
    cJSON_Delete(list);
    if (!idx) {
        cJSON_Delete(j);
        api_error(c, 400, "invalid_request_error", "\"input\" must be provided");
        return;
    }
    const char *model = cJSON_GetStringValue(cJSON_GetObjectItem(body, "model"));
    cJSON_AddStringToObject(j, "model", model ? model : fk_model_id());
    cJSON_AddStringToObject(j, "object", "list");
    cJSON *u = cJSON_AddObjectToObject(j, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", (double)ntok);
    cJSON_AddNumberToObject(u, "total_tokens", (double)ntok);
    fk.st.prompt_tokens += ntok;
    respond_cjson(c, 200, j);
    api_request_done();
}

static void h_chat(conn *c, const struct http_req *r, cJSON *body) { gen_submit(c, GEN_CHAT, body); }
static void h_text(conn *c, const struct http_req *r, cJSON *body) { gen_submit(c, GEN_TEXT, body); }
static void h_native(conn *c, const struct http_req *r, cJSON *body) { gen_submit(c, GEN_NATIVE, body); }

static void h_sleep(conn *c, const struct http_req *r, cJSON *body)
{
    const char *lv = strstr(r->query, "level=");
    int level = lv ? atoi(lv + 6) : 1;
    char err[256];
    if (load_sleep(level, err, sizeof err) < 0) {
        api_error(c, 500, "", "%s", err);
        return;
    }
    http_respond(c, 200, NULL, "", 0);
}

static void h_wake(conn *c, const struct http_req *r, cJSON *body)
{
    wake_handle(c, r->query);
}

static void h_collective_rpc(conn *c, const struct http_req *r, cJSON *body)
{
    wake_rpc(c, body);
}

static void h_is_sleeping(conn *c, const struct http_req *r, cJSON *body)
{
    http_respond_json(c, 200, fk.state == FK_SLEEPING ? "{\"is_sleeping\":true}" : "{\"is_sleeping\":false}");
}

static void h_version(conn *c, const struct http_req *r, cJSON *body)
{
    http_respond_json(c, 200, "{\"version\":\"" FK_VLLM_VERSION "\"}");
}

static void h_models_load(conn *c, const struct http_req *r, cJSON *body)
{
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(body, "model"));
    struct fk_model *m = id ? load_router_find(id) : NULL;
    if (!m) {
        api_error(c, 400, "invalid_request_error", "model '%s' not found", id ? id : "");
        return;
    }
    if (strcmp(r->path, "/models/load") == 0) {
        load_router_load(m);
    } else if (getenv("FAKELLM_UNLOAD_RACE") && *getenv("FAKELLM_UNLOAD_RACE") == '1') {
        /* the model went away between the client's GET and this POST: what
         * llama-server answers an unload of a model that is not running */
        load_router_unload(m);
        api_error(c, 400, "invalid_request_error", "model is not running");
        return;
    } else {
        load_router_unload(m);
    }
    http_respond_json(c, 200, "{\"success\":true}");
}

static const struct route routes[] = {
    {"GET", "/health", L | R | V, false, false, h_health},
    {"GET", "/v1/health", L | R, false, false, h_health},
    {"GET", "/v1/models", L | R | V, false, false, h_models},
    {"GET", "/models", L | R, false, false, h_models},
    {"POST", "/v1/chat/completions", L | R | V, true, false, h_chat},
    {"POST", "/chat/completions", L | R, true, false, h_chat},
    {"POST", "/v1/completions", L | R | V, true, false, h_text},
    {"POST", "/completion", L | R, true, false, h_native},
    {"POST", "/completions", L | R, true, false, h_native},
    {"POST", "/v1/embeddings", L | R | V, true, false, h_embeddings},
    {"POST", "/embeddings", L | R, true, false, h_embeddings},
    {"POST", "/tokenize", L | R | V, true, false, h_tokenize},
    {"POST", "/detokenize", L | R | V, true, false, h_detokenize},
    {"GET", "/props", L | R, false, false, h_props},
    {"GET", "/slots", L, false, false, h_slots},
    {"POST", "/slots/", L | R, true, false, slots_action}, /* a prefix: /slots/{id} */
    {"GET", "/metrics", L | R | V, false, false, h_metrics},
    {"POST", "/models/load", R, true, false, h_models_load},
    {"POST", "/models/unload", R, true, false, h_models_load},
    {"POST", "/sleep", V, false, true, h_sleep},
    {"POST", "/wake_up", V, false, true, h_wake},
    {"GET", "/is_sleeping", V, false, true, h_is_sleeping},
    {"POST", "/collective_rpc", V, true, true, h_collective_rpc},
    {"GET", "/version", V, false, false, h_version},
    {NULL, NULL, 0, false, false, NULL},
};

static bool key_ok(const struct http_req *r)
{
    const char *k = fk.cfg.api_key;
    if (!k)
        return true;
    if (strncmp(r->auth, "Bearer ", 7) != 0)
        return false;
    /* llama-server takes a comma-separated list of keys */
    const char *given = r->auth + 7;
    size_t glen = strlen(given);
    while (*k) {
        size_t n = strcspn(k, ",");
        if (n == glen && memcmp(k, given, n) == 0)
            return true;
        k += n;
        if (*k == ',')
            k++;
    }
    return false;
}

void api_handle(conn *c, const struct http_req *r)
{
    unsigned mode = 1u << fk.cfg.mode;
    const struct route *rt = NULL;
    bool path_known = false;
    for (const struct route *x = routes; x->path; x++) {
        size_t pl = strlen(x->path);
        bool prefix = x->path[pl - 1] == '/' && strncmp(x->path, r->path, pl) == 0;
        if (!(x->modes & mode) || (strcmp(x->path, r->path) != 0 && !prefix))
            continue;
        if (x->dev && !fk.env.dev_mode)
            continue; /* vLLM registers these only in dev mode */
        path_known = true;
        if (strcmp(x->method, r->method) == 0)
            rt = x;
    }
    if (!rt) {
        if (fk.cfg.mode != FK_VLLM)
            api_error(c, 404, "not_found_error", "File Not Found");
        else if (path_known)
            http_respond_json(c, 405, "{\"detail\":\"Method Not Allowed\"}");
        else
            http_respond_json(c, 404, "{\"detail\":\"Not Found\"}");
        return;
    }
    if (fk.state == FK_LOADING && fk.cfg.mode == FK_LLAMA) {
        api_error(c, 503, "unavailable_error", "Loading model");
        return;
    }
    bool public = strcmp(r->path, "/health") == 0 || strcmp(r->path, "/v1/health") == 0;
    if (fk.cfg.mode == FK_VLLM)
        public = strncmp(r->path, "/v1/", 4) != 0;
    if (!public && !key_ok(r)) {
        if (fk.cfg.mode == FK_VLLM)
            http_respond_json(c, 401, "{\"error\":\"Unauthorized\"}");
        else
            api_error(c, 401, "authentication_error", "Invalid API Key");
        return;
    }
    cJSON *body = NULL;
    if (rt->json) {
        body = cJSON_ParseWithLength(r->body, r->body_len);
        if (!cJSON_IsObject(body)) {
            cJSON_Delete(body);
            api_error(c, 400, "invalid_request_error", "request body is not a JSON object (%zu bytes)",
                      r->body_len);
            return;
        }
    }
    rt->fn(c, r, body);
    cJSON_Delete(body);
}
