/* fakellm.h - the narrow interfaces between fakellm's files.
 *
 * fakellm is a test double for llama-server and `vllm serve`: one process,
 * one libuv loop, one thread.  Its whole state is the single global `fk`
 * (configuration from argv, behaviour from FAKELLM_* variables, counters
 * for /metrics): a fake that stands in for one server process needs no
 * more structure than that, and a global keeps every file's interface to
 * a few functions.
 *
 *   main.c    argv, environment, --help, logging, signals, shutdown
 *   http.c    the connection layer: libuv TCP + llhttp, keep-alive, SSE
 *   api.c     routing and every endpoint that answers at once
 *   gen.c     completions: slots, the deferred queue, timed token streams
 *   tokens.c  the token rule, the generated text, embeddings
 *   answer.c  known answers: the solver, FAKELLM_SCRIPT, the seeded
 *             error rate, thinking
 *   speed.c   the speed model: tokens/s from flags and environment
 *   load.c    the scripted load, held memory, the forked worker, sleep,
 *             router-mode models
 *   wake.c    vLLM's timed /wake_up (tags) and /collective_rpc
 *   nvml.c    registering used memory with the fake NVML state file
 */
#ifndef FAKELLM_H
#define FAKELLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "util/buf.h"
#include "util/strv.h"

typedef struct cJSON cJSON;

#define FK_VERSION "0.2.0-dev (build 10587, fakellm)"
#define FK_BUILD_INFO "b10587-fakellm"
#define FK_VLLM_VERSION "0.11.0"
#define FK_EOS_AFTER 16 /* tokens the model says before its end-of-sequence */
#define FK_N_EMBD 64

enum fk_mode { FK_LLAMA, FK_ROUTER, FK_VLLM, FK_LBENCH };
enum fk_state { FK_LOADING, FK_READY, FK_SLEEPING };

/* From argv (main.c).  Strings are owned by the struct. */
struct fk_config {
    enum fk_mode mode;
    char *host;
    int port;
    char *model;      /* -m / the `serve` positional; NULL in router mode */
    strv names;       /* --alias a,b / --served-model-name a b: API ids */
    int n_ctx;        /* -c; 0 = "from the model" (4096 here) */
    int n_parallel;   /* -np; slots, or vLLM --max-num-seqs */
    bool parallel_set;
    int n_ctx_slot;   /* what each slot gets (llama) */
    int max_model_len;
    bool metrics;     /* --metrics (vLLM: always) */
    bool slots;       /* --slots / --no-slots */
    bool embeddings;  /* --embeddings, or a vLLM pooling runner */
    bool sleep_mode;  /* vLLM --enable-sleep-mode */
    char *api_key;
    char *models_dir; /* router mode */
    int models_max;
    bool autoload;
    int timeout_s;    /* idle connection timeout (-to) */
    char *slot_save_path; /* --slot-save-path (slots.c) */
};

/* From FAKELLM_* (main.c); README.md documents each one. */
struct fk_env {
    long load_ms;
    bool log_times;   /* FAKELLM_LOG_TIMES: each line begins real_ms=... */
    bool no_ready_line; /* FAKELLM_READY_LINE=0: llama's 'model loaded' and 'listening' lines left out */
    long ram_mb;
    double tps;       /* <= 0: every token at once */
    long ttft_ms;
    int exit_during_load;
    long crash_after;
    bool ignore_sigterm;
    bool fork_worker;
    char *gpu_mb;     /* "N" or "N,M,..." per device; NULL = none */
    long cuda_mb;     /* real GPU memory through libcuda (cuda.c); 0: none */
    bool garbage;
    int log_requests; /* 0 none, 1 all but GET /health, 2 all */
    bool dev_mode;    /* VLLM_SERVER_DEV_MODE=1: /sleep, /wake_up */
    /* growth past the load (grow.c) */
    long gpu_grow_mb, ram_grow_mb;         /* MiB added per step; 0: none */
    long gpu_grow_max_mb, ram_grow_max_mb; /* caps on what growth adds */
    long grow_interval_ms;
    bool grow_from_load;                   /* FAKELLM_GROW_FROM=load: from the load's start, else from ready */
    /* residency (wake.c, load.c): README.md "Sleep, wake and router-mode memory" */
    long weights_mb;    /* FAKELLM_WEIGHTS_MB; -1: FAKELLM_GPU_MB's sum, capped */
    long sleep_gpu_mb;  /* FAKELLM_SLEEP_GPU_MB: the NVML entries' residue asleep */
    long wake_ms;       /* FAKELLM_WAKE_MS */
    bool wake_fail;     /* FAKELLM_WAKE_FAIL */
    bool sleep_stuck;   /* FAKELLM_SLEEP_STUCK */
    char *model_gpu_mb; /* FAKELLM_MODEL_GPU_MB: router mode, "N" or "name=N,..." */
    bool slot_fail;     /* FAKELLM_SLOT_FAIL: slot save/restore answer 500 (slots.c) */
};

/* Counters behind /metrics (gen.c and http.c bump them). */
struct fk_stats {
    uint64_t prompt_tokens, predicted_tokens, n_decode, aborted, completed;
    uint64_t finished_stop, finished_length;
    double prompt_s, predicted_s, ttft_sum_s, e2e_sum_s;
    uint64_t ttft_count, e2e_count;
    uint64_t ttft_buckets[24];
    int n_tokens_max;
    int processing, deferred;
};

struct fk {
    struct fk_config cfg;
    struct fk_env env;
    struct fk_stats st;
    uv_loop_t *loop;
    enum fk_state state;
    int64_t t0_ms;      /* monotonic start, for log timestamps */
    long created;       /* realtime seconds at start, for "created" */
};
extern struct fk fk;

/* main.c */
void fk_log(char level, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* vsnprintf into err; returns -1 (every parser's "say why and fail") */
int fk_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
double fk_mono_ms(void);
double fk_real_ms(void);
/* Leave the loop and exit with `code` after closing everything. */
void fk_exit(int code);
/* The API id of the model (first alias / served name / path). */
const char *fk_model_id(void);
/* The value argv gave the flag that `key` names (a spelling of the
 * mode's flag table without its dashes, '_' for '-': threads, t, ngl,
 * cache_type_k, max_num_seqs): *val = the value, "1" for a switch, NULL
 * when not given.  -1 when the table has no such flag. */
int fk_flag(const char *key, const char **val);

/* http.c: one conn per TCP connection; a handler answers at once with
 * http_respond, or keeps the request with http_hold and answers later. */
typedef struct conn conn;
struct http_req {
    const char *method;
    const char *path;   /* without the query string */
    const char *query;  /* after '?', "" if none */
    const char *body;
    size_t body_len;
    const char *auth;   /* the Authorization header, "" if none */
};
int http_bind(const char *host, int port, char *err, size_t errlen);
int http_listen(char *err, size_t errlen);
void http_respond(conn *c, int status, const char *ctype, const char *body, size_t len);
void http_respond_json(conn *c, int status, const char *json);
void http_stream_begin(conn *c, const char *ctype);
void http_stream_send(conn *c, const char *p, size_t len);
/* The last chunk (p, len; none when len is 0) and the end, in one write. */
void http_stream_finish(conn *c, const char *p, size_t len);
/* The write just made carried a token (FAKELLM_LOG_REQUESTS logs the
 * last one as last_send_mono_ms). */
void http_token_sent(conn *c);
/* The answer comes later; on_abort(arg) runs if the client goes first
 * (the conn is then gone: on_abort must forget it). */
void http_hold(conn *c, void (*on_abort)(void *), void *arg);
void http_shutdown(void);

/* api.c */
void api_handle(conn *c, const struct http_req *r);
void api_error(conn *c, int status, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* An inference request finished: counts toward FAKELLM_CRASH_AFTER. */
void api_request_done(void);
/* One time-to-first-token observation, for vLLM's histogram. */
void api_observe_ttft(double seconds);

/* slots.c: POST /slots/{id}?action=save|restore (--slot-save-path) */
void slots_action(conn *c, const struct http_req *r, cJSON *body);
/* A slot took a request: its prompt text is what a save writes. */
void slots_note(int slot, const char *prompt);

/* gen.c */
enum gen_api { GEN_CHAT, GEN_TEXT, GEN_NATIVE };
void gen_submit(conn *c, enum gen_api api, cJSON *body);
/* Router mode: a model finished loading; start what waits for it. */
void gen_model_ready(const char *model_id);
void gen_shutdown(void);
/* GET /slots: one JSON object per slot */
cJSON *gen_slots_json(void);

/* tokens.c */
size_t tok_count(const char *s);
/* Calls fn(word, len, arg) for each token of s, in order. */
void tok_each(const char *s, void (*fn)(const char *w, size_t n, void *arg), void *arg);
uint32_t tok_id(const char *w, size_t n);
/* Appends the piece of generated token k (0-based) to out. */
void tok_piece(buf *out, unsigned k, bool garbage, uint64_t *rng);
/* The word a token id stands for, if it is one the model generates. */
const char *tok_word(uint32_t id);
void tok_embedding(const char *s, float *v, int dim);

/* answer.c: what a request's answer is, when fakellm knows it */
enum fk_think { FK_THINK_OFF, FK_THINK_CONTENT, FK_THINK_FIELD };
struct fk_answer {
    int error;         /* a scripted HTTP error status; 0: none */
    char *where;       /* the script's "FILE:LINE" that matched, or NULL */
    bool known;        /* text is a solved or scripted answer: it ends the generation */
    char *text;        /* the answer (NULL when not known) */
    char *right;       /* when the error rate replaced it: the right one */
    enum fk_think think; /* FK_THINK_OFF: no thinking for this request */
    char *reasoning;   /* the thinking, without its tags */
};
/* FAKELLM_SCRIPT, FAKELLM_ERROR_RATE, FAKELLM_SEED, FAKELLM_THINK;
 * -1 with a message (the script's "FILE:LINE: ...") on a mistake. */
int answer_init(char *err, size_t errlen);
void answer_release(void);
size_t answer_script_count(void);
/* body is a validated chat or completion request */
void answer_for(enum gen_api api, cJSON *body, struct fk_answer *a);
void answer_release_one(struct fk_answer *a);

/* speed.c: FAKELLM_SPEED, FAKELLM_SPEED_NOISE (README.md "Speed model") */
/* After parse_args: -1 with "FAKELLM_SPEED: term '...': why" on a mistake. */
int speed_init(char *err, size_t errlen);
void speed_release(void);
bool speed_on(void);
void speed_log(void);  /* the resolved speed, when FAKELLM_SPEED is set */
/* tokens/s for a request with this prompt text (noise included) */
double speed_for(const char *prompt);

/* lbench.c: fakellm run as llama-bench (argv[0]'s basename), README.md
 * "llama-bench": its exit code */
int lbench_main(int argc, char **argv);
/* fk_flag for llama-bench's flags */
int lbench_flag(const char *key, const char **val);

/* load.c */
void load_start(void);
int load_sleep(int level, char *err, size_t errlen);
/* vLLM's sleeping parts, for /wake_up?tags= */
#define FK_TAG_WEIGHTS 1u
#define FK_TAG_KV 2u
int load_wake_tags(unsigned tags, char *err, size_t errlen);
int load_wake(char *err, size_t errlen); /* every part */
void load_stop_worker(void);
/* after the loop has ended: free what load.c holds */
void load_release(void);
struct fk_model {
    char *id, *path;
    const char *status; /* "unloaded" "loading" "loaded" */
    double last_used;
    uv_timer_t timer;
};
size_t load_router_count(void);
struct fk_model *load_router_at(size_t i);
struct fk_model *load_router_find(const char *id);
void load_router_load(struct fk_model *m);
void load_router_unload(struct fk_model *m);

/* wake.c: POST /wake_up[?tags=weights|kv_cache] (FAKELLM_WAKE_MS,
 * FAKELLM_WAKE_FAIL) and POST /collective_rpc */
void wake_handle(conn *c, const char *query);
void wake_rpc(conn *c, cJSON *body);
void wake_release(void); /* after the loop: free the wakes left */

/* nvml.c: -1 with err on failure; a no-op without GPUMOD_FAKE_NVML_STATE */
int nvml_register(pid_t pid, const char *mb_spec, char *err, size_t errlen);
int nvml_unregister(pid_t pid, char *err, size_t errlen);

/* grow.c: FAKELLM_GPU_GROW_MB / FAKELLM_RAM_GROW_MB */
void grow_start(void);   /* called at the load's start and at ready; starts once, per FAKELLM_GROW_FROM */
void grow_release(void);

/* cuda.c: FAKELLM_CUDA_MB, real GPU memory (device checks). */
int cuda_hold(long mb, char *err, size_t errlen);
void cuda_release(void);

#endif
