/* main.c - fakellm's command line, environment, logging and lifetime.
 *
 * The argv is whatever gpumod's drivers build for the real engines, so
 * the parser is driven by one table of the flags a manager passes (it
 * also prints --help, which `gpumod config check` reads to learn the
 * flags): known flags take their declared value, unknown ones are
 * accepted and skipped, taking the next word as their value when it does
 * not start with '-'.  argv[1] == "serve" selects vLLM behaviour; no -m
 * with --models-dir selects llama-server's router mode.
 *
 * Log lines copy the real servers' so that gpumod's log parsers and
 * readiness checks see what they would see in production.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "fakellm.h"

struct fk fk;

enum opt_kind {
    O_IGNORE, O_HELP, O_VERSION, O_MODEL, O_HOST, O_PORT, O_CTX, O_PARALLEL,
    O_ALIAS, O_METRICS, O_SLOTS, O_NO_SLOTS, O_EMBD, O_API_KEY, O_MODELS_DIR,
    O_MODELS_MAX, O_AUTOLOAD, O_NO_AUTOLOAD, O_TIMEOUT, O_SERVED, O_MAX_LEN,
    O_MAX_SEQS, O_RUNNER, O_SLEEP_MODE, O_SLOT_SAVE_PATH,
};

struct opt {
    const char *names; /* ", "-separated spellings */
    const char *arg;   /* value placeholder, NULL for a switch */
    enum opt_kind kind;
    const char *help;
};

/* llama-server's flags (research/llama-server-help.txt), the ones a
 * manager passes or a user puts in a preset. */
static const struct opt llama_opts[] = {
    {"-h, --help, --usage", NULL, O_HELP, "print usage and exit"},
    {"--version", NULL, O_VERSION, "show version and build info"},
    {"-m, --model", "FNAME", O_MODEL, "model path to load"},
    {"--host", "HOST", O_HOST, "ip address to listen (default: 127.0.0.1)"},
    {"--port", "PORT", O_PORT, "port to listen (default: 8080)"},
    {"-c, --ctx-size", "N", O_CTX, "size of the prompt context (default: 0, 0 = loaded from model)"},
    {"-np, --parallel", "N", O_PARALLEL, "number of server slots (default: -1, -1 = auto)"},
    {"-a, --alias", "STRING", O_ALIAS, "set model name aliases, comma-separated (to be used by API)"},
    {"--metrics", NULL, O_METRICS, "enable prometheus compatible metrics endpoint (default: disabled)"},
    {"--slots", NULL, O_SLOTS, "expose slots monitoring endpoint (default: enabled)"},
    {"--no-slots", NULL, O_NO_SLOTS, "disable slots monitoring endpoint"},
    {"--slot-save-path", "PATH", O_SLOT_SAVE_PATH, "path to save slot kv cache (default: disabled)"},
    {"--embedding, --embeddings", NULL, O_EMBD, "restrict to only support embedding use case"},
    {"--pooling", "{none,mean,cls,last,rank}", O_IGNORE, "pooling type for embeddings, use model default if unspecified"},
    {"--api-key", "KEY", O_API_KEY, "API key to use for authentication (default: none)"},
    {"--models-dir", "PATH", O_MODELS_DIR, "directory containing models for the router server"},
    {"--models-max", "N", O_MODELS_MAX, "for router server, maximum number of models to load simultaneously (default: 4, 0 = unlimited)"},
    {"--models-autoload", NULL, O_AUTOLOAD, "for router server, automatically load models (default: enabled)"},
    {"--no-models-autoload", NULL, O_NO_AUTOLOAD, "for router server, do not load models on demand"},
    {"--models-preset", "PATH", O_IGNORE, "path to INI file containing model presets for the router server"},
    {"-to, --timeout", "N", O_TIMEOUT, "server read/write timeout in seconds (default: 3600)"},
    {"-t, --threads", "N", O_IGNORE, "number of CPU threads to use during generation (default: -1)"},
    {"-tb, --threads-batch", "N", O_IGNORE, "number of threads to use during batch and prompt processing"},
    {"--threads-http", "N", O_IGNORE, "number of threads used to process HTTP requests (default: -1)"},
    {"-n, --predict, --n-predict", "N", O_IGNORE, "number of tokens to predict (default: -1, -1 = infinity)"},
    {"-b, --batch-size", "N", O_IGNORE, "logical maximum batch size (default: 2048)"},
    {"-ub, --ubatch-size", "N", O_IGNORE, "physical maximum batch size (default: 512)"},
    {"-fa, --flash-attn", "[on|off|auto]", O_IGNORE, "set Flash Attention use (default: 'auto')"},
    {"-ctk, --cache-type-k", "TYPE", O_IGNORE, "KV cache data type for K (default: f16)"},
    {"-ctv, --cache-type-v", "TYPE", O_IGNORE, "KV cache data type for V (default: f16)"},
    {"-ngl, --gpu-layers, --n-gpu-layers", "N", O_IGNORE, "max. number of layers to store in VRAM (default: auto)"},
    {"-sm, --split-mode", "{none,layer,row,tensor}", O_IGNORE, "how to split the model across multiple GPUs"},
    {"-ts, --tensor-split", "N0,N1,N2,...", O_IGNORE, "fraction of the model to offload to each GPU"},
    {"-mg, --main-gpu", "INDEX", O_IGNORE, "the GPU to use for the model"},
    {"-dev, --device", "<dev1,dev2,..>", O_IGNORE, "comma-separated list of devices to use for offloading"},
    {"-fit, --fit", "[on|off]", O_IGNORE, "whether to adjust unset arguments to fit in device memory (default: 'on')"},
    {"-cmoe, --cpu-moe", NULL, O_IGNORE, "keep all Mixture of Experts (MoE) weights in the CPU"},
    {"-ncmoe, --n-cpu-moe", "N", O_IGNORE, "keep the MoE weights of the first N layers in the CPU"},
    {"-ot, --override-tensor", "<tensor name pattern>=<buffer type>,...", O_IGNORE, "override tensor buffer type"},
    {"-lm, --load-mode", "MODE", O_IGNORE, "model loading mode (default: auto)"},
    {"--mlock", NULL, O_IGNORE, "DEPRECATED in favor of `--load-mode`"},
    {"--no-mmap", NULL, O_IGNORE, "DEPRECATED in favor of `--load-mode`"},
    {"-kvu, --kv-unified", NULL, O_IGNORE, "use single unified KV buffer shared across all sequences"},
    {"-cb, --cont-batching", NULL, O_IGNORE, "enable continuous batching (default: enabled)"},
    {"--context-shift", NULL, O_IGNORE, "use context shift on infinite text generation (default: disabled)"},
    {"--no-warmup", NULL, O_IGNORE, "skip warming up the model with an empty run"},
    {"-cram, --cache-ram", "N", O_IGNORE, "set the maximum cache size in MiB (default: 8192)"},
    {"--cache-reuse", "N", O_IGNORE, "min chunk size to attempt reusing from the cache via KV shifting"},
    {"-md, --model-draft", "FNAME", O_IGNORE, "draft model for speculative decoding"},
    {"--spec-type", "TYPE", O_IGNORE, "speculative decoding type (default: none)"},
    {"--spec-draft-n-max", "N", O_IGNORE, "number of tokens to draft for speculative decoding (default: 3)"},
    {"-ngld, --gpu-layers-draft", "N", O_IGNORE, "number of layers to store in VRAM for the draft model"},
    {"-mm, --mmproj", "FILE", O_IGNORE, "path to a multimodal projector file"},
    {"--jinja", NULL, O_IGNORE, "use jinja template engine for chat (default: enabled)"},
    {"--no-jinja", NULL, O_IGNORE, "do not use jinja template engine for chat"},
    {"--chat-template", "JINJA_TEMPLATE", O_IGNORE, "set custom jinja chat template"},
    {"--chat-template-file", "JINJA_TEMPLATE_FILE", O_IGNORE, "set custom jinja chat template file"},
    {"--reasoning-format", "FORMAT", O_IGNORE, "controls whether thought tags are allowed and/or extracted"},
    {"--reasoning-budget", "N", O_IGNORE, "token budget for thinking (default: -1)"},
    {"--props", NULL, O_IGNORE, "enable changing global properties via POST /props"},
    {"--tags", "STRING", O_IGNORE, "set model tags, comma-separated"},
    {"--reuse-port", NULL, O_IGNORE, "allow multiple sockets to bind to the same port"},
    {"--sleep-idle-seconds", "SECONDS", O_IGNORE, "seconds of idleness after which the server will sleep (default: -1)"},
    {"--no-webui", NULL, O_IGNORE, "disable the Web UI"},
    {"-lv, --verbosity, --log-verbosity", "N", O_IGNORE, "set the verbosity threshold"},
    {"--log-file", "FNAME", O_IGNORE, "log to file"},
    {"-s, --seed", "SEED", O_IGNORE, "RNG seed (default: -1, use random seed for -1)"},
    {"--temp, --temperature", "N", O_IGNORE, "temperature (default: 0.80)"},
    {NULL, NULL, 0, NULL},
};

/* `vllm serve`'s flags (engine args a manager passes). */
static const struct opt vllm_opts[] = {
    {"-h, --help", NULL, O_HELP, "show this help message and exit"},
    {"--version", NULL, O_VERSION, "show program's version number and exit"},
    {"--model", "MODEL", O_MODEL, "name or path of the huggingface model to use"},
    {"--host", "HOST", O_HOST, "host name (default: all interfaces)"},
    {"--port", "PORT", O_PORT, "port number (default: 8000)"},
    {"--served-model-name", "SERVED_MODEL_NAME [SERVED_MODEL_NAME ...]", O_SERVED, "the model name(s) used in the API"},
    {"--max-model-len", "MAX_MODEL_LEN", O_MAX_LEN, "model context length (default: from the model config, 4096 here)"},
    {"--max-num-seqs", "MAX_NUM_SEQS", O_MAX_SEQS, "maximum number of sequences per iteration (default: 256)"},
    {"--gpu-memory-utilization", "GPU_MEMORY_UTILIZATION", O_IGNORE, "fraction of GPU memory to use (default: 0.9)"},
    {"--api-key", "API_KEY", O_API_KEY, "require this key in the Authorization header"},
    {"--runner", "{auto,generate,pooling}", O_RUNNER, "the type of model runner to use"},
    {"--task", "TASK", O_RUNNER, "deprecated: the task to use the model for (embed = pooling)"},
    {"--convert", "{auto,classify,embed,none,reward}", O_RUNNER, "convert the model using adapters"},
    {"--enable-sleep-mode", NULL, O_SLEEP_MODE, "enable sleep mode for the engine (cuda platform only)"},
    {"--tensor-parallel-size, -tp", "TENSOR_PARALLEL_SIZE", O_IGNORE, "number of tensor parallel groups"},
    {"--dtype", "{auto,bfloat16,float,float16,float32,half}", O_IGNORE, "data type for model weights and activations"},
    {"--kv-cache-dtype", "{auto,fp8,fp8_e4m3,fp8_e5m2}", O_IGNORE, "data type for kv cache storage"},
    {"--quantization, -q", "QUANTIZATION", O_IGNORE, "method used to quantize the weights"},
    {"--max-num-batched-tokens", "MAX_NUM_BATCHED_TOKENS", O_IGNORE, "maximum number of batched tokens per iteration"},
    {"--enforce-eager", NULL, O_IGNORE, "always use eager-mode PyTorch"},
    {"--trust-remote-code", NULL, O_IGNORE, "trust remote code from huggingface"},
    {"--enable-prefix-caching", NULL, O_IGNORE, "enables automatic prefix caching"},
    {"--hf-overrides", "HF_OVERRIDES", O_IGNORE, "extra arguments for the HuggingFace config (JSON)"},
    {"--tokenizer", "TOKENIZER", O_IGNORE, "name or path of the huggingface tokenizer to use"},
    {"--download-dir", "DOWNLOAD_DIR", O_IGNORE, "directory to download and load the weights"},
    {"--disable-log-stats", NULL, O_IGNORE, "disable logging statistics"},
    {"--disable-log-requests", NULL, O_IGNORE, "disable logging requests"},
    {"--uvicorn-log-level", "{debug,info,warning,error,critical,trace}", O_IGNORE, "log level for uvicorn"},
    {"--generation-config", "GENERATION_CONFIG", O_IGNORE, "folder path to the generation config"},
    {"--chat-template", "CHAT_TEMPLATE", O_IGNORE, "the file path to the chat template"},
    {"--enable-auto-tool-choice", NULL, O_IGNORE, "enable auto tool choice for supported models"},
    {"--tool-call-parser", "TOOL_CALL_PARSER", O_IGNORE, "the tool call parser to use"},
    {"--attention-backend", "ATTENTION_BACKEND", O_IGNORE, "attention backend to use (e.g. TRITON_ATTN)"},
    {NULL, NULL, 0, NULL},
};

/* What argv gave each flag of the mode's table (an index into it): the
 * value, "1" for a switch, NULL when not given; the last one wins.  The
 * speed model (speed.c) matches its terms against these. */
#define MAX_OPTS 128
static const struct opt *flag_tab;
static const char *flag_given[MAX_OPTS];

static bool spelled(const char *names, const char *name, size_t len)
{
    const char *p = names;
    while (*p) {
        size_t n = strcspn(p, ",");
        if (n == len && memcmp(p, name, len) == 0)
            return true;
        p += n;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return false;
}

int fk_flag(const char *key, const char **val)
{
    char dashed[128];
    size_t n = strlen(key);
    if (fk.cfg.mode == FK_LBENCH)
        return lbench_flag(key, val);
    if (!flag_tab || n == 0 || n + 2 >= sizeof dashed)
        return -1;
    dashed[0] = dashed[1] = '-';
    for (size_t i = 0; i <= n; i++)
        dashed[i + 2] = key[i] == '_' ? '-' : key[i];
    for (size_t i = 0; flag_tab[i].names && i < MAX_OPTS; i++) {
        /* "--threads" or "-t" / "-ngl": a long or a short spelling */
        if (spelled(flag_tab[i].names, dashed, n + 2) || spelled(flag_tab[i].names, dashed + 1, n + 1)) {
            *val = flag_given[i];
            return 0;
        }
    }
    return -1;
}

static const struct opt *opt_find(const struct opt *tab, const char *name, size_t len)
{
    for (; tab->names; tab++)
        if (spelled(tab->names, name, len))
            return tab;
    return NULL;
}

static void print_help(const struct opt *tab)
{
    if (fk.cfg.mode == FK_VLLM) {
        printf("usage: vllm serve [model_tag] [options]\n\nStart the vLLM OpenAI Compatible API server.\n\noptions:\n");
        for (; tab->names; tab++)
            printf("  %s%s%s\n                        %s\n", tab->names, tab->arg ? " " : "",
                   tab->arg ? tab->arg : "", tab->help);
        return;
    }
    printf("----- common params -----\n\n");
    for (; tab->names; tab++) {
        char left[128];
        const char *comma = strchr(tab->names, ',');
        /* llama.cpp pads a short first spelling to 7 columns */
        if (comma && tab->names[1] != '-')
            snprintf(left, sizeof left, "%-7.*s%s%s%s", (int)(comma - tab->names + 1), tab->names,
                     comma + 2, tab->arg ? " " : "", tab->arg ? tab->arg : "");
        else
            snprintf(left, sizeof left, "%s%s%s", tab->names, tab->arg ? " " : "",
                     tab->arg ? tab->arg : "");
        if (strlen(left) < 40)
            printf("%-40s%s\n", left, tab->help);
        else
            printf("%s\n%40s%s\n", left, "", tab->help);
    }
    printf("\nexample usage:\n\n  fakellm -m model.gguf --host 127.0.0.1 --port 8080\n\n");
}

/* An integer option value; -1 with a message on garbage.  vLLM accepts
 * "4k"/"1M" for --max-model-len, so the suffixes are honoured everywhere. */
static int parse_int(const char *flag, const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end == 'k' || *end == 'K')
        v *= 1000, end++;
    else if (*end == 'm' || *end == 'M')
        v *= 1000000, end++;
    if (errno || end == s || *end || v < INT_MIN || v > INT_MAX) {
        fprintf(stderr, "error: invalid value '%s' for argument %s\n", s, flag);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static void split_names(strv *out, const char *s)
{
    while (*s) {
        size_t n = strcspn(s, ",");
        if (n)
            strv_push_own(out, xstrndup(s, n));
        s += n;
        if (*s == ',')
            s++;
    }
}

/* Returns -1 on a usage error, 1 when the process should exit 0 (help,
 * version), 0 to run. */
static int parse_args(int argc, char **argv)
{
    struct fk_config *c = &fk.cfg;
    const struct opt *tab = llama_opts;
    int i = 1;

    flag_tab = tab;

    if (argc > 1 && strcmp(argv[1], "serve") == 0) {
        c->mode = FK_VLLM;
        tab = vllm_opts;
        flag_tab = tab;
        i = 2;
        if (i < argc && argv[i][0] != '-')
            c->model = xstrdup(argv[i++]);
    }
    for (; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        size_t len = strlen(a);
        const char *eq = a[0] == '-' && a[1] == '-' ? strchr(a, '=') : NULL;
        if (eq) {
            len = (size_t)(eq - a);
            val = eq + 1;
        }
        if (a[0] != '-') {
            if (c->mode == FK_VLLM && !c->model) {
                c->model = xstrdup(a);
                continue;
            }
            fprintf(stderr, "warning: ignoring stray argument '%s'\n", a);
            continue;
        }
        const struct opt *o = opt_find(tab, a, len);
        if (!o) {
            /* unknown: a following word that is not a flag is its value */
            if (!val && i + 1 < argc && argv[i + 1][0] != '-')
                i++;
            continue;
        }
        if (o->arg && !val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "error: expected value for argument %.*s\n", (int)len, a);
                return -1;
            }
            val = argv[++i];
        }
        if (o - tab < MAX_OPTS)
            flag_given[o - tab] = o->arg ? val : "1";
        switch (o->kind) {
        case O_HELP: print_help(tab); return 1;
        case O_VERSION:
            if (c->mode == FK_VLLM)
                printf("%s\n", FK_VLLM_VERSION);
            else
                printf("version: %s\nbuilt with fakellm for Linux x86_64\n", FK_VERSION);
            return 1;
        case O_MODEL: free(c->model); c->model = xstrdup(val); break;
        case O_HOST: free(c->host); c->host = xstrdup(val); break;
        case O_PORT:
            if (parse_int(o->names, val, &c->port) < 0 || c->port < 0 || c->port > 65535)
                return -1;
            break;
        case O_CTX: if (parse_int("--ctx-size", val, &c->n_ctx) < 0) return -1; break;
        case O_PARALLEL:
            if (parse_int("--parallel", val, &c->n_parallel) < 0)
                return -1;
            c->parallel_set = c->n_parallel > 0;
            break;
        case O_MAX_SEQS:
            if (parse_int("--max-num-seqs", val, &c->n_parallel) < 0)
                return -1;
            break;
        case O_ALIAS: split_names(&c->names, val); break;
        case O_SERVED:
            strv_push(&c->names, val);
            while (i + 1 < argc && argv[i + 1][0] != '-')
                strv_push(&c->names, argv[++i]);
            break;
        case O_MAX_LEN: if (parse_int("--max-model-len", val, &c->max_model_len) < 0) return -1; break;
        case O_METRICS: c->metrics = true; break;
        case O_SLOTS: c->slots = true; break;
        case O_NO_SLOTS: c->slots = false; break;
        case O_EMBD: c->embeddings = true; break;
        case O_RUNNER:
            c->embeddings = strcmp(val, "pooling") == 0 || strcmp(val, "embed") == 0 ||
                            strcmp(val, "embedding") == 0;
            break;
        case O_API_KEY: free(c->api_key); c->api_key = xstrdup(val); break;
        case O_MODELS_DIR: free(c->models_dir); c->models_dir = xstrdup(val); break;
        case O_SLOT_SAVE_PATH: free(c->slot_save_path); c->slot_save_path = xstrdup(val); break;
        case O_MODELS_MAX: if (parse_int("--models-max", val, &c->models_max) < 0) return -1; break;
        case O_AUTOLOAD: c->autoload = true; break;
        case O_NO_AUTOLOAD: c->autoload = false; break;
        case O_TIMEOUT: if (parse_int("--timeout", val, &c->timeout_s) < 0) return -1; break;
        case O_SLEEP_MODE: c->sleep_mode = true; break;
        case O_IGNORE: break;
        }
    }
    if (c->mode == FK_VLLM) {
        if (!c->model) {
            fprintf(stderr, "error: the following arguments are required: model_tag\n");
            return -1;
        }
    } else if (!c->model) {
        if (!c->models_dir) {
            /* llama-server would try a default model path and fail there */
            fprintf(stderr, "error: no model given: pass -m FNAME (or --models-dir for router mode)\n");
            return -1;
        }
        c->mode = FK_ROUTER;
    }
    return 0;
}

static long env_long(const char *name, long dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end) {
        fprintf(stderr, "warning: ignoring %s='%s': not an integer\n", name, s);
        return dflt;
    }
    return v;
}

static bool env_flag(const char *name)
{
    const char *s = getenv(name);
    return s && *s && strcmp(s, "0") != 0 && strcasecmp(s, "false") != 0 && strcasecmp(s, "no") != 0;
}

static void read_env(void)
{
    struct fk_env *e = &fk.env;
    e->load_ms = env_long("FAKELLM_LOAD_MS", 0);
    e->log_times = env_flag("FAKELLM_LOG_TIMES");
    const char *rl = getenv("FAKELLM_READY_LINE");
    e->no_ready_line = rl && (strcmp(rl, "0") == 0 || strcasecmp(rl, "false") == 0 || strcasecmp(rl, "no") == 0);
    e->ram_mb = env_long("FAKELLM_RAM_MB", 0);
    const char *tps = getenv("FAKELLM_TPS");
    e->tps = tps && *tps ? strtod(tps, NULL) : 1000;
    if (!isfinite(e->tps))
        e->tps = 1000;
    e->ttft_ms = env_long("FAKELLM_TTFT_MS", 0);
    e->exit_during_load = (int)env_long("FAKELLM_EXIT_DURING_LOAD", 0);
    e->crash_after = env_long("FAKELLM_CRASH_AFTER", 0);
    e->ignore_sigterm = env_flag("FAKELLM_IGNORE_SIGTERM");
    e->fork_worker = env_flag("FAKELLM_FORK_WORKER");
    const char *g = getenv("FAKELLM_GPU_MB");
    e->gpu_mb = g && *g ? xstrdup(g) : NULL;
    e->cuda_mb = env_long("FAKELLM_CUDA_MB", 0);
    e->garbage = env_flag("FAKELLM_GARBAGE");
    const char *lr = getenv("FAKELLM_LOG_REQUESTS");
    if (!lr || !*lr)
        e->log_requests = 1;
    else if (strcmp(lr, "all") == 0 || strcmp(lr, "2") == 0)
        e->log_requests = 2;
    else
        e->log_requests = env_flag("FAKELLM_LOG_REQUESTS");
    e->dev_mode = env_flag("VLLM_SERVER_DEV_MODE");
    e->gpu_grow_mb = env_long("FAKELLM_GPU_GROW_MB", 0);
    e->ram_grow_mb = env_long("FAKELLM_RAM_GROW_MB", 0);
    e->gpu_grow_max_mb = env_long("FAKELLM_GPU_GROW_MAX_MB", 1048576);
    e->ram_grow_max_mb = env_long("FAKELLM_RAM_GROW_MAX_MB", 1024);
    e->grow_interval_ms = env_long("FAKELLM_GROW_INTERVAL_MS", 100);
    const char *gf = getenv("FAKELLM_GROW_FROM");
    e->grow_from_load = gf && strcmp(gf, "load") == 0;
    if (gf && *gf && strcmp(gf, "load") != 0 && strcmp(gf, "ready") != 0)
        fprintf(stderr, "warning: ignoring FAKELLM_GROW_FROM='%s': not load or ready\n", gf);
    if (e->gpu_grow_mb < 0 || e->ram_grow_mb < 0 || e->gpu_grow_max_mb < 0 || e->ram_grow_max_mb < 0 ||
        e->grow_interval_ms < 1) {
        fprintf(stderr, "warning: negative FAKELLM_*_GROW_* sizes count as 0, an interval below 1 ms as 100\n");
        e->gpu_grow_mb = e->gpu_grow_mb < 0 ? 0 : e->gpu_grow_mb;
        e->ram_grow_mb = e->ram_grow_mb < 0 ? 0 : e->ram_grow_mb;
        e->gpu_grow_max_mb = e->gpu_grow_max_mb < 0 ? 0 : e->gpu_grow_max_mb;
        e->ram_grow_max_mb = e->ram_grow_max_mb < 0 ? 0 : e->ram_grow_max_mb;
        e->grow_interval_ms = e->grow_interval_ms < 1 ? 100 : e->grow_interval_ms;
    }
    e->weights_mb = env_long("FAKELLM_WEIGHTS_MB", -1);
    e->sleep_gpu_mb = env_long("FAKELLM_SLEEP_GPU_MB", 0);
    e->wake_ms = env_long("FAKELLM_WAKE_MS", 0);
    e->wake_fail = env_flag("FAKELLM_WAKE_FAIL");
    e->sleep_stuck = env_flag("FAKELLM_SLEEP_STUCK");
    e->slot_fail = env_flag("FAKELLM_SLOT_FAIL");
    const char *mg = getenv("FAKELLM_MODEL_GPU_MB");
    e->model_gpu_mb = mg && *mg ? xstrdup(mg) : NULL;
    if (e->wake_ms < 0 || e->sleep_gpu_mb < 0) {
        fprintf(stderr, "warning: a negative FAKELLM_WAKE_MS or FAKELLM_SLEEP_GPU_MB counts as 0\n");
        e->wake_ms = e->wake_ms < 0 ? 0 : e->wake_ms;
        e->sleep_gpu_mb = e->sleep_gpu_mb < 0 ? 0 : e->sleep_gpu_mb;
    }
    if (e->load_ms < 0 || e->ram_mb < 0 || e->ttft_ms < 0) {
        fprintf(stderr, "warning: negative FAKELLM_* durations and sizes count as 0\n");
        e->load_ms = e->load_ms < 0 ? 0 : e->load_ms;
        e->ram_mb = e->ram_mb < 0 ? 0 : e->ram_mb;
        e->ttft_ms = e->ttft_ms < 0 ? 0 : e->ttft_ms;
    }
}

int fk_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

double fk_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double fk_real_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* llama.cpp: "I srv    load_model: msg" (component and function taken
 * from func "srv:load_model") or "E gguf_init_from_file: msg".  vLLM:
 * "INFO 08-22 14:42:00 [file.py:12] msg", or uvicorn's "INFO:     msg"
 * when func is NULL.  One write per line so concurrent writers (the
 * forked worker) never interleave inside a line. */
void fk_log(char level, const char *func, const char *fmt, ...)
{
    buf b = BUF_INIT;
    if (fk.env.log_times)
        buf_printf(&b, "real_ms=%.3f ", fk_real_ms());
    if (fk.cfg.mode == FK_VLLM) {
        const char *lv = level == 'E' ? "ERROR" : level == 'W' ? "WARNING" : "INFO";
        if (func && strncmp(func, "srv:", 4) == 0)
            func += 4; /* fakellm's own lines in vLLM's format */
        if (func) {
            time_t now = time(NULL);
            struct tm tm;
            char ts[32];
            localtime_r(&now, &tm);
            strftime(ts, sizeof ts, "%m-%d %H:%M:%S", &tm);
            buf_printf(&b, "%s %s [%s] ", lv, ts, func);
        } else {
            buf_printf(&b, "%s:%*s", lv, (int)(9 - strlen(lv)), "");
        }
    } else {
        const char *colon = func ? strchr(func, ':') : NULL;
        if (colon)
            buf_printf(&b, "%c %.*s  %12s: ", level, (int)(colon - func), func, colon + 1);
        else
            buf_printf(&b, "%c %s: ", level, func ? func : "main");
    }
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    buf_addc(&b, '\n');
    ssize_t off = 0;
    while (off < (ssize_t)b.len) {
        ssize_t n = write(2, b.p + off, b.len - (size_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += n;
    }
    buf_release(&b);
}

const char *fk_model_id(void)
{
    if (fk.cfg.names.n)
        return fk.cfg.names.v[0];
    return fk.cfg.model ? fk.cfg.model : "";
}

static uv_signal_t sig_term, sig_int;
static int exit_code;

static void close_walk_cb(uv_handle_t *h, void *arg)
{
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

/* Close everything so the loop ends; main() then frees and returns the
 * code, which keeps ASan's leak check meaningful for the clean path. */
void fk_exit(int code)
{
    exit_code = code;
    gen_shutdown();
    http_shutdown();
    load_stop_worker();
    uv_walk(fk.loop, close_walk_cb, NULL);
    uv_stop(fk.loop);
}

static void on_signal(uv_signal_t *h, int signum)
{
    if (fk.cfg.mode == FK_VLLM) {
        fk_log('I', NULL, "Shutting down");
        fk_log('I', NULL, "Finished server process [%d]", (int)getpid());
    } else {
        fk_log('I', "srv:operator()", "cleaning up before exit...");
    }
    fk_exit(0);
}

static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void config_release(void)
{
    struct fk_config *c = &fk.cfg;
    free(c->host);
    free(c->model);
    free(c->api_key);
    free(c->models_dir);
    strv_release(&c->names);
    free(fk.env.gpu_mb);
    free(fk.env.model_gpu_mb);
}

int main(int argc, char **argv)
{
    struct fk_config *c = &fk.cfg;
    c->slots = true;
    c->autoload = true;
    c->models_max = 4;
    c->timeout_s = 3600;
    c->n_parallel = -1;
    const char *base = strrchr(argv[0], '/');
    if (strcmp(base ? base + 1 : argv[0], "llama-bench") == 0) {
        c->mode = FK_LBENCH;
        return lbench_main(argc, argv);
    }

    int rc = parse_args(argc, argv);
    if (rc != 0) {
        config_release();
        return rc > 0 ? 0 : 1;
    }
    read_env();
    char aerr[512];
    if (answer_init(aerr, sizeof aerr) < 0) {
        /* a test double set up wrongly must not pass for a working one */
        fprintf(stderr, "fakellm: %s\n", aerr);
        answer_release();
        config_release();
        return 2;
    }
    if (speed_init(aerr, sizeof aerr) < 0) {
        fprintf(stderr, "fakellm: %s\n", aerr);
        speed_release();
        answer_release();
        config_release();
        return 2;
    }
    if (fk.env.log_times)
        fk_log('I', "main", "process started");
    if (c->mode == FK_VLLM) {
        if (!c->host)
            c->host = xstrdup("0.0.0.0");
        if (!c->port)
            c->port = 8000;
        if (!c->names.n)
            strv_push(&c->names, c->model);
        if (c->max_model_len <= 0)
            c->max_model_len = 4096;
        if (c->n_parallel <= 0)
            c->n_parallel = 256;
        c->metrics = true;
    } else {
        if (!c->host)
            c->host = xstrdup("127.0.0.1");
        if (!c->port)
            c->port = 8080;
        if (c->n_ctx <= 0)
            c->n_ctx = 4096;
        if (c->n_parallel <= 0)
            c->n_parallel = 4;
        /* an explicit -np turns the unified KV cache off: slots split -c */
        c->n_ctx_slot = c->parallel_set ? c->n_ctx / c->n_parallel : c->n_ctx;
        if (c->n_ctx_slot < 1)
            c->n_ctx_slot = 1;
        c->max_model_len = c->n_ctx_slot;
    }

    raise_nofile();
    signal(SIGPIPE, SIG_IGN);
    fk.loop = uv_default_loop();
    fk.t0_ms = (int64_t)fk_mono_ms();
    fk.created = (long)(fk_real_ms() / 1000);
    fk.state = FK_LOADING;

    if (c->mode == FK_VLLM) {
        fk_log('I', "api_server.py:1839", "vLLM API server version %s", FK_VLLM_VERSION);
        fk_log('I', "utils.py:233", "non-default args: {'model': '%s', 'host': '%s', 'port': %d}",
               c->model, c->host, c->port);
    } else {
        fk_log('I', "main", "build: 10587 (fakellm) with fakellm for Linux x86_64");
        fk_log('I', "srv:start", "binding port with default address family");
    }
    char err[256];
    if (http_bind(c->host, c->port, err, sizeof err) < 0) {
        if (c->mode == FK_VLLM) {
            fk_log('E', "api_server.py:1900", "[Errno 98] error while attempting to bind on address ('%s', %d): %s",
                   c->host, c->port, err);
        } else {
            fk_log('E', "srv:start", "couldn't bind HTTP server socket, hostname: %s, port: %d", c->host, c->port);
            fk_log('E', "srv:llama_server", "exiting due to HTTP server error");
        }
        config_release();
        return 1;
    }
    /* llama-server accepts connections (and answers 503) while loading;
     * vLLM only listens once the engine is up */
    if (c->mode != FK_VLLM && http_listen(err, sizeof err) < 0) {
        fk_log('E', "srv:start", "couldn't bind HTTP server socket, hostname: %s, port: %d", c->host, c->port);
        config_release();
        return 1;
    }

    uv_signal_init(fk.loop, &sig_term);
    uv_signal_init(fk.loop, &sig_int);
    if (fk.env.ignore_sigterm)
        signal(SIGTERM, SIG_IGN); /* a hung engine: only SIGKILL works */
    else
        uv_signal_start(&sig_term, on_signal, SIGTERM);
    uv_signal_start(&sig_int, on_signal, SIGINT);

    speed_log();
    if (answer_script_count())
        fk_log('I', "srv:answers", "%zu scripted answers from FAKELLM_SCRIPT", answer_script_count());
    load_start();
    uv_run(fk.loop, UV_RUN_DEFAULT);
    /* after fk_exit: let the close callbacks run, then free */
    uv_run(fk.loop, UV_RUN_DEFAULT);
    uv_loop_close(fk.loop);
    load_release();
    answer_release();
    speed_release();
    config_release();
    return exit_code;
}
