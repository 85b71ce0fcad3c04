/* config.h - the typed configuration: settings (gpumod.yaml), presets
 * (YAML files anywhere under presets/, one service each) and modes
 * (YAML files in modes/).
 *
 * Loading never stops at the first problem: every error and warning is
 * collected as a diag with file:line:col, and a preset that has errors is
 * still kept (flagged) so cross-file checks and `config show` see it.
 * Nothing is dropped silently.  Sizes are MiB (int64), durations are
 * milliseconds (int64); -1 means "not set" wherever a default applies. */
#ifndef GPUMOD_CONFIG_H
#define GPUMOD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/strv.h"

typedef struct srcpos {
    const char *file; /* borrowed from config.files */
    int line, col;    /* 1-based; 0 when not from a file */
} srcpos;

typedef enum { DIAG_ERROR, DIAG_WARNING } diag_level;

typedef struct diag {
    diag_level level;
    srcpos pos;
    char *msg;
} diag;

typedef struct diags {
    diag *v;
    size_t n, cap;
    size_t errors, warnings;
} diags;

void diags_add(diags *d, diag_level lv, srcpos pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void diags_release(diags *d);
/* Sorted by file, line, col (stable for the rest). */
void diags_sort(diags *d);
/* "file:line:col: error: message" ("file:line:" without a column, "file:"
 * without a line), one line each, appended to out (only
 * those of only_file when it is not NULL). */
struct buf;
void diags_text(struct buf *out, const diags *d, const char *only_file);

typedef enum {
    DRV_LLAMACPP,
    DRV_VLLM,
    DRV_FASTAPI,
    DRV_DOCKER,
    DRV_COMMAND,
    DRV_REMOTE,
    DRV__COUNT
} driver_kind;

extern const char *const driver_names[]; /* DRV__COUNT names, NULL */

typedef enum { SLEEP_NONE, SLEEP_L1, SLEEP_L2, SLEEP_ROUTER } sleep_mode;
extern const char *const sleep_mode_names[]; /* NULL-terminated */

typedef enum { ACT_INHERIT = -1, ACT_SWITCH, ACT_START, ACT_REJECT } activation_kind;
extern const char *const activation_names[]; /* switch start reject, NULL */

typedef enum { RUNNER_SPAWN, RUNNER_SYSTEMD } runner_kind;

typedef enum { TRI_UNSET = -1, TRI_OFF = 0, TRI_ON = 1 } tri;

typedef struct restart_policy {
    int64_t max_restarts; /* -1: inherit from supervisor settings */
    int64_t window_ms;
    int64_t backoff_initial_ms;
    int64_t backoff_max_ms;
} restart_policy;

typedef struct kvpair {
    char *key, *val;
    srcpos pos;
} kvpair;

typedef struct kvlist {
    kvpair *v;
    size_t n, cap;
} kvlist;

void kvlist_set(kvlist *l, const char *key, const char *val, srcpos pos);
const kvpair *kvlist_get(const kvlist *l, const char *key);
void kvlist_release(kvlist *l);

/* llama-server options (unit_vars, mapped by the table in docs/configuration) */
/* Router mode: llama-server's router puts its own command line over every
 * model's settings (--models-preset), so only what the preset sets is
 * passed; what it leaves out is unset (parallel -1, fit TRI_UNSET,
 * n_gpu_layers LLAMA_NGL_UNSET, context_size -1), never a default. */
#define LLAMA_NGL_UNSET (-2)
typedef struct llama_opts {
    int64_t n_gpu_layers;  /* -1: all; LLAMA_NGL_UNSET: not passed (router mode) */
    int64_t parallel;      /* default 1: explicit, never llama-server's auto; -1: not passed (router mode) */
    int64_t threads;       /* -1: unset */
    int64_t batch_size;    /* -b N; -1: unset (llama-server's 2048) */
    int64_t ubatch_size;   /* -ub N; -1: unset (llama-server's 512) */
    int64_t n_cpu_moe;     /* -1: unset */
    char *cache_type_k, *cache_type_v;
    tri flash_attn;
    tri jinja;
    bool metrics;          /* default true: the router and bench read /metrics */
    tri fit;               /* default off: placement must be predictable */
    char *spec_type;
    int64_t spec_draft_n_max;
    char *model_draft;
    char *chat_template_kwargs; /* JSON object text */
    char *override_kv;          /* Python's preset_file */
    /* router mode */
    char *models_dir;
    int64_t models_max;
    bool no_models_autoload;
    char *models_preset;
    char *default_model;
} llama_opts;

typedef struct vllm_opts {
    double gpu_memory_utilization; /* <0: unset */
    int64_t max_model_len;
    int64_t max_num_seqs;
    char *dtype, *kv_cache_dtype;
    bool enforce_eager;
    int64_t tensor_parallel_size; /* -1: from devices */
    bool enable_sleep_mode;
    int64_t sleep_level;
    char *runner;       /* "pooling" -> --runner pooling */
    char *hf_overrides; /* JSON object text */
    bool trust_remote_code;
} vllm_opts;

typedef struct fastapi_opts {
    char *working_dir;
    char *app_module;
    int64_t workers;
} fastapi_opts;

typedef struct docker_opts {
    char *image;
    int64_t container_port; /* -1: same as port */
    strv volumes;           /* "host:container[:ro]" */
    char *gpus;             /* --gpus value; default from devices or "all" */
} docker_opts;

typedef struct preset {
    srcpos pos;       /* the file's first node */
    srcpos id_pos, port_pos, aliases_pos;
    bool has_errors;  /* some key of this preset was rejected */
    char *id, *name, *description;
    int driver; /* driver_kind */
    int64_t port;     /* 0: none (remote) */
    char *host;       /* listen address given to the engine */
    int64_t vram_mb;  /* -1: not declared */
    int64_t context_size;
    int64_t kv_cache_per_1k;
    char *model_id, *model_path;
    char *health_endpoint;
    int64_t startup_timeout_ms;
    bool supports_sleep;
    int sleep; /* sleep_mode */
    int64_t idle_timeout_ms; /* -1: the router's idle_timeout; 0: never unloaded for idleness */
    bool slot_save;          /* llama.cpp: --slot-save-path, prompt cache saved across a sleep or switch */
    char *unit_template;
    kvlist unit_vars; /* as written, after $VAR expansion (for config show) */
    strv command;     /* driver command: the argv template */
    strv args;        /* extra argv appended after the driver's own */
    strv extra_args;  /* unit_vars.extra_args, split */
    kvlist env;
    strv aliases;
    strv devices;
    int64_t *mem_gpu_mb; /* per device, n_mem_gpu entries (scalar: one) */
    size_t n_mem_gpu;
    int64_t mem_host_mb;
    int mem_pins_host; /* memory.pins_host: 1 pins host memory, 0 does not, -1 unset (the driver's default) */
    restart_policy restart;
    int activation; /* activation_kind; ACT_INHERIT: the router's */
    bool start_first;
    struct {
        bool enabled;
        char *prompt;       /* NULL: the built-in known-answer prompts (core/canary.h) */
        char *expect;       /* the text prompt's answer must contain; NULL: any non-empty answer */
        int64_t max_tokens; /* default 32 */
    } canary;
    struct {
        char *base_url;
        char *api_key_env;
    } remote;
    llama_opts llama;
    vllm_opts vllm;
    fastapi_opts fastapi;
    docker_opts docker;
} preset;

typedef struct mode {
    srcpos pos;
    char *id, *name, *description;
    strv services;
    srcpos *service_pos; /* per entry of services */
    int64_t total_vram_mb;
} mode;

typedef struct settings {
    char *state_dir, *log_dir, *socket, *socket_group;
    int64_t events_keep, events_max_age_ms; /* event retention; 0: no such limit */
    char *models_dir;  /* model pull's directory (resolved: never NULL after config_load) */
    char *hf_endpoint; /* the Hub's base URL, as written (HF_ENDPOINT is applied by models/) */
    char *driver_binary[DRV__COUNT]; /* NULL for drivers without one */
    struct {
        double host_factor;
        int64_t host_margin_mb, gpu_margin_mb, uma_reserve_mb, min_contig_mb;
        double psi_some_avg10_max;
        int64_t watchdog_floor_mb;
        double watchdog_psi_full_avg10_max;
        int64_t watchdog_interval_ms;
        double watchdog_over_need_factor;
        int64_t watchdog_over_need_margin_mb;
        int64_t nvml_timeout_ms, verify_freed_timeout_ms;
        bool unified_sleep; /* sleep_mode l1/l2 acted on on a unified-memory host (default off) */
    } memory;
    struct {
        int runner; /* runner_kind */
        int64_t health_interval_ms, health_failures, startup_timeout_ms, stop_timeout_ms;
        restart_policy restart;
        int64_t log_max_mb, log_keep;
        int64_t slots_max_mb; /* <state_dir>/slots: saved prompt caches, oldest out past this */
    } supervisor;
    struct {
        int64_t drain_timeout_ms, timeout_ms;
        char *startup_mode;
        int64_t startup_retry_ms;
    } sw;
    struct {
        bool enabled;
        char *listen;
        char *api_keys_env;
        char *default_service;
        int activation; /* activation_kind, never ACT_INHERIT */
        int64_t queue_max, queue_timeout_ms, max_body_mb, max_header_kb;
        int64_t header_timeout_ms, body_timeout_ms, max_connections;
        strv cors_origins;
        int64_t idle_timeout_ms; /* services' default: unloaded after this long without a request; 0: never */
    } router;
} settings;

typedef struct config {
    char *config_dir, *presets_dir, *modes_dir, *settings_file;
    char *config_abs; /* realpath of config_dir: base of relative paths */
    strv files; /* every file read; srcpos.file points into here */
    settings set;
    preset *presets;
    size_t n_presets;
    mode *modes;
    size_t n_modes;
    diags diags;
} config;

typedef struct config_paths {
    const char *config_dir;  /* --config-dir or NULL */
    const char *state_dir;   /* --state-dir or NULL */
    const char *socket;      /* --socket or NULL */
} config_paths;

/* Resolve paths (flag > env > gpumod.yaml > default), read every file,
 * validate each and then across files.  Returns 0 when there is no error
 * (warnings allowed), -1 otherwise; cfg is filled either way and must be
 * released. */
int config_load(config *cfg, const config_paths *paths);
/* What `preflight --for ID` reads: gpumod.yaml and the paths as
 * config_load resolves them, and of the presets only the one with this
 * id, the one config_preset would find after config_load (the first in
 * file order).  The other preset files are read but not parsed (their
 * top-level id is peeked at), modes are not read, and nothing is checked
 * across files: a broken preset elsewhere does not stand in the way.  The
 * diags are those of gpumod.yaml, the directory walk and the preset's own
 * file.  Returns as config_load; n_presets is 0 when there is no such
 * preset. */
int config_load_preset(config *cfg, const config_paths *paths, const char *id);
/* Only gpumod.yaml and the paths resolved exactly as config_load does
 * (state_dir, log_dir, socket): what a client of the daemon needs to find
 * its socket, without reading presets or modes. */
int config_load_settings(config *cfg, const config_paths *paths);
void config_release(config *cfg);

const preset *config_preset(const config *cfg, const char *id);
const mode *config_mode(const config *cfg, const char *id);

/* Settings defaults, for callers that need a config without files. */
void settings_defaults(settings *s);
void settings_release(settings *s);

#endif
