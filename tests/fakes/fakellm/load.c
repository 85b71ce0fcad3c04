/* load.c - fakellm's scripted model load and the memory it holds: the
 * FAKELLM_LOAD_MS timeline, FAKELLM_RAM_MB (mapped and touched, so it is
 * real RSS), FAKELLM_GPU_MB (entries in the fake NVML state), the
 * FAKELLM_FORK_WORKER child, vLLM sleep/wake, and router-mode models.
 *
 * The load is a timer, not a sleep: the loop keeps answering /health 503
 * meanwhile, as llama-server does.  Memory is touched in step with the
 * load's progress so a watcher sees RSS grow.  With a worker, the worker
 * holds the memory, like vLLM's EngineCore: it stays in our process group
 * (a group kill reaches it) but never learns of our death, so killing
 * only the parent leaves it holding the memory - the orphan that a
 * manager's "stop" must not leave behind.  The parent talks to it over a
 * socketpair with one-byte commands, waiting under a deadline.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fakellm.h"

#define PAGE 4096
#define WORKER_DEADLINE_MS 60000

static uv_timer_t load_timer;
static uv_signal_t sig_chld;
static double load_t0;
static int pct_logged = -1; /* -1: the load has not begun */
static bool failed_half;

static char *ram;         /* FAKELLM_RAM_MB, held by this process */
static size_t ram_len, ram_touched;
static bool gpu_held, ram_held; /* the GPU side, FAKELLM_RAM_MB: held now */
static char *wcopy;       /* a level-1 sleep's host copy of the weights */
static size_t wcopy_len;
static unsigned sleeping_tags; /* FK_TAG_* still asleep */
static pid_t worker_pid;
static int worker_fd = -1;

static struct fk_model *models;
static size_t n_models;

static int ram_map(char *err, size_t errlen)
{
    ram_len = (size_t)fk.env.ram_mb << 20;
    ram_touched = 0;
    if (!ram_len)
        return 0;
    ram = mmap(NULL, ram_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ram == MAP_FAILED) {
        ram = NULL;
        snprintf(err, errlen, "mmap %ld MiB: %s", fk.env.ram_mb, strerror(errno));
        return -1;
    }
    return 0;
}

/* Writing one byte per page makes the kernel back it: it is RSS now. */
static void ram_touch(double frac)
{
    size_t upto = frac >= 1 ? ram_len : (size_t)((double)ram_len * frac);
    for (; ram && ram_touched < upto; ram_touched += PAGE)
        ram[ram_touched] = 1;
}

static void ram_unmap(void)
{
    if (ram)
        munmap(ram, ram_len);
    ram = NULL;
    ram_len = ram_touched = 0;
}

/* FAKELLM_GPU_MB's entries after a sleep: FAKELLM_SLEEP_GPU_MB per
 * device (what the CUDA context keeps), or none. */
static int gpu_residue(char *err, size_t errlen)
{
    if (fk.env.sleep_gpu_mb <= 0)
        return nvml_unregister(getpid(), err, errlen);
    buf b = BUF_INIT;
    buf_printf(&b, "%ld", fk.env.sleep_gpu_mb);
    for (const char *p = strchr(fk.env.gpu_mb, ','); p; p = strchr(p + 1, ','))
        buf_printf(&b, ",%ld", fk.env.sleep_gpu_mb);
    int rc = nvml_register(getpid(), b.p, err, errlen);
    buf_release(&b);
    return rc;
}

/* One part of what this process holds: 'G'/'g' the GPU (FAKELLM_CUDA_MB
 * and the NVML entries; released down to the residue), 'M'/'m' the host
 * (FAKELLM_RAM_MB, mapped but not touched: the caller touches it). */
static int part_local(char cmd, char *err, size_t errlen)
{
    switch (cmd) {
    case 'G':
        if (cuda_hold(fk.env.cuda_mb, err, errlen) < 0)
            return -1;
        return fk.env.gpu_mb ? nvml_register(getpid(), fk.env.gpu_mb, err, errlen) : 0;
    case 'g':
        cuda_release();
        return fk.env.gpu_mb ? gpu_residue(err, errlen) : 0;
    case 'M':
        return ram_map(err, errlen);
    default:
        ram_unmap();
        return 0;
    }
}

/* Acquire or release what this process itself holds. */
static int hold_local(bool on, char *err, size_t errlen)
{
    if (!on)
        return part_local('m', err, errlen) < 0 ? -1 : part_local('g', err, errlen);
    return part_local('M', err, errlen) < 0 ? -1 : part_local('G', err, errlen);
}

static void worker_main(int fd)
{
    prctl(PR_SET_NAME, fk.cfg.mode == FK_VLLM ? "VLLM::EngineCor" : "fakellm-worker");
    /* libuv's handlers came with the fork: the worker dies by default */
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* keep no copy of the listening socket: the port must free up when
     * the parent dies, even if this orphan lives on */
    if (fd != 3) {
        dup2(fd, 3);
        close(fd);
    }
    close_range(4, ~0u, 0);
    for (;;) {
        char cmd, ack = 'k', err[256];
        ssize_t n = read(3, &cmd, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            for (;;)
                pause(); /* the parent is gone; an orphan holds on */
        if (cmd == 'a') {
            if (hold_local(true, err, sizeof err) < 0) {
                fk_log('E', "core.py:700", "(EngineCore_DP0 pid=%d) %s", (int)getpid(), err);
                ack = 'e';
            }
            ram_touch(1);
            fk_log('I', "gpu_worker.py:267", "(EngineCore_DP0 pid=%d) worker holds %ld MiB of RAM",
                   (int)getpid(), fk.env.ram_mb);
        } else if (cmd == 'r') {
            if (hold_local(false, err, sizeof err) < 0)
                ack = 'e';
        } else if (part_local(cmd, err, sizeof err) < 0) {
            ack = 'e';
        } else if (cmd == 'M') {
            ram_touch(1);
        }
        if (write(3, &ack, 1) != 1)
            for (;;)
                pause();
    }
}

static int worker_send(char cmd, char *err, size_t errlen)
{
    if (write(worker_fd, &cmd, 1) != 1) {
        snprintf(err, errlen, "worker: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static int worker_wait(char *err, size_t errlen)
{
    double deadline = fk_mono_ms() + WORKER_DEADLINE_MS;
    for (;;) {
        struct pollfd p = {worker_fd, POLLIN, 0};
        int left = (int)(deadline - fk_mono_ms());
        if (left <= 0) {
            snprintf(err, errlen, "worker did not answer within %d ms", WORKER_DEADLINE_MS);
            return -1;
        }
        int r = poll(&p, 1, left);
        if (r < 0 && errno == EINTR)
            continue;
        char ack;
        if (r > 0 && read(worker_fd, &ack, 1) == 1) {
            if (ack == 'k')
                return 0;
            snprintf(err, errlen, "worker failed to acquire or release its memory");
            return -1;
        }
        if (r > 0) {
            snprintf(err, errlen, "worker is gone");
            return -1;
        }
    }
}

static int worker_cmd(char cmd, char *err, size_t errlen)
{
    return worker_send(cmd, err, errlen) < 0 ? -1 : worker_wait(err, errlen);
}

static void on_sigchld(uv_signal_t *h, int signum)
{
    int status;
    if (!worker_pid || waitpid(worker_pid, &status, WNOHANG) != worker_pid)
        return;
    worker_pid = 0;
    /* vLLM's API server gives up when its engine dies */
    fk_log('E', "core_client.py:564", "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.");
    fk_exit(1);
}

static int fork_worker(char *err, size_t errlen)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(err, errlen, "socketpair: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (pid == 0) {
        close(sv[0]);
        worker_main(sv[1]);
    }
    close(sv[1]);
    worker_fd = sv[0];
    worker_pid = pid;
    fk_log('I', "core.py:93", "(EngineCore_DP0 pid=%d) Initializing a V1 LLM engine (v%s) with config: model='%s'",
           (int)pid, FK_VLLM_VERSION, fk.cfg.model ? fk.cfg.model : "");
    uv_signal_init(fk.loop, &sig_chld);
    uv_signal_start(&sig_chld, on_sigchld, SIGCHLD);
    return worker_send('a', err, errlen); /* acquired while we "load" */
}

/* part_local's cmd, in the worker when there is one. */
static int part(char cmd, char *err, size_t errlen)
{
    int rc = worker_pid ? worker_cmd(cmd, err, errlen) : part_local(cmd, err, errlen);
    if (rc < 0)
        return -1;
    if (cmd == 'G' || cmd == 'g')
        gpu_held = cmd == 'G';
    else
        ram_held = cmd == 'M';
    if (cmd == 'M' && !worker_pid)
        ram_touch(1);
    return 0;
}

/* SIGTERM, wait, SIGKILL: a clean exit takes its worker along. */
void load_stop_worker(void)
{
    if (!worker_pid)
        return;
    kill(worker_pid, SIGTERM);
    double deadline = fk_mono_ms() + 2000;
    while (waitpid(worker_pid, NULL, WNOHANG) == 0) {
        if (fk_mono_ms() > deadline) {
            kill(worker_pid, SIGKILL);
            waitpid(worker_pid, NULL, 0);
            break;
        }
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    worker_pid = 0;
}

static void load_failed(const char *why)
{
    if (fk.cfg.mode == FK_VLLM) {
        fk_log('E', "core.py:708", "EngineCore failed to start.");
        fk_log('E', "core.py:708", "ValueError: %s", why);
        fk_log('E', "api_server.py:1900", "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}");
    } else {
        fk_log('E', "llama_model_load", "error loading model: %s", why);
        fk_log('E', "llama_model_load_from_file_impl", "failed to load model");
        fk_log('E', "srv:load_model", "failed to load model, '%s'", fk.cfg.model);
        fk_log('E', "srv:llama_server", "exiting due to model loading error");
    }
}

static void load_done(void)
{
    char err[256];
    uv_timer_stop(&load_timer);
    ram_touch(1);
    if (worker_pid && worker_wait(err, sizeof err) < 0) {
        load_failed(err);
        fk_exit(1);
        return;
    }
    gpu_held = ram_held = true;
    struct fk_config *c = &fk.cfg;
    if (c->mode == FK_VLLM) {
        fk_log('I', "gpu_model_runner.py:2602", "Model loading took %.4f GiB and %.6f seconds",
               (double)fk.env.ram_mb / 1024, (fk_mono_ms() - load_t0) / 1000);
        if (http_listen(err, sizeof err) < 0) {
            fk_log('E', "api_server.py:1900", "[Errno 98] error while attempting to bind on address ('%s', %d): %s",
                   c->host, c->port, err);
            fk_exit(1);
            return;
        }
        fk.state = FK_READY;
        fk_log('I', "api_server.py:1847", "Starting vLLM API server 0 on http://%s:%d", c->host, c->port);
        fk_log('I', "launcher.py:29", "Available routes are:");
        fk_log('I', NULL, "Started server process [%d]", (int)getpid());
        fk_log('I', NULL, "Waiting for application startup.");
        fk_log('I', NULL, "Application startup complete.");
        grow_start();
        return;
    }
    fk.state = FK_READY;
    fk_log('I', "srv:load_model", "initializing, n_slots = %d, n_ctx_slot = %d, kv_unified = '%s'",
           c->n_parallel, c->n_ctx_slot, c->parallel_set ? "false" : "true");
    if (fk.env.no_ready_line) {
        fk_log('I', "srv:llama_server", "load done (FAKELLM_READY_LINE=0: the lines a supervisor knows left out)");
    } else {
        fk_log('I', "srv:llama_server", "model loaded");
        fk_log('I', "srv:llama_server", "listening on http://%s:%d", c->host, c->port);
    }
    grow_start();
}

static void on_load_tick(uv_timer_t *t)
{
    double frac = fk.env.load_ms ? (fk_mono_ms() - load_t0) / (double)fk.env.load_ms : 1;
    if (frac > 1)
        frac = 1;
    if (fk.env.exit_during_load && frac >= 0.5 && !failed_half) {
        failed_half = true;
        char why[256];
        if (fk.cfg.mode == FK_VLLM)
            snprintf(why, sizeof why, "Free memory on device (0.82/23.52 GiB) on startup is less than desired "
                     "GPU memory utilization (0.9, 21.17 GiB). Decrease GPU memory utilization or reduce GPU "
                     "memory used by other processes.");
        else {
            fk_log('E', "ggml_backend_cuda_buffer_type_alloc_buffer",
                   "allocating %ld.00 MiB on device 0: cudaMalloc failed: out of memory",
                   fk.env.ram_mb ? fk.env.ram_mb : 1024);
            snprintf(why, sizeof why, "unable to allocate CUDA0 buffer");
        }
        load_failed(why);
        fk_exit(fk.env.exit_during_load);
        return;
    }
    ram_touch(frac);
    if (fk.cfg.mode == FK_VLLM) {
        int pct = (int)(frac * 100) / 25 * 25;
        if (pct > 0 && pct > pct_logged && pct < 100) {
            pct_logged = pct;
            /* vLLM's tqdm bar over the checkpoint shards */
            fk_log('I', NULL, "Loading safetensors checkpoint shards: %3d%% Completed | %d/4 [00:%02d<00:00]", pct,
                   pct / 25, (int)((fk_mono_ms() - load_t0) / 1000) % 60);
        }
    } else {
        /* llama.cpp's default progress callback (src/llama.cpp): one '.' each
         * time the whole percentage grows, a newline at 100, no prefix */
        int pct = frac >= 1 ? 100 : (int)(frac * 100);
        if (pct_logged < 0) {
            fk_log('I', "load_tensors", "loading model tensors, this can take a while... (mmap = true)");
            pct_logged = 0;
        }
        if (pct > pct_logged) {
            pct_logged = pct;
            fputs(pct >= 100 ? ".\n" : ".", stderr);
            fflush(stderr);
        }
    }
    if (frac >= 1)
        load_done();
}

static int cmp_model(const void *a, const void *b)
{
    return strcmp(((const struct fk_model *)a)->id, ((const struct fk_model *)b)->id);
}

static void router_nvml(void);

static void router_start(void)
{
    DIR *d = opendir(fk.cfg.models_dir);
    size_t cap = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n <= 5 || strcmp(e->d_name + n - 5, ".gguf") != 0)
            continue;
        if (n_models == cap)
            models = xrealloc(models, (cap = cap ? 2 * cap : 8) * sizeof *models);
        struct fk_model *m = &models[n_models++];
        memset(m, 0, sizeof *m);
        m->id = xstrndup(e->d_name, n - 5);
        m->path = xasprintf("%s/%s", fk.cfg.models_dir, e->d_name);
        m->status = "unloaded";
    }
    if (d)
        closedir(d);
    else
        fk_log('W', "srv:load_models", "cannot open models dir '%s': %s", fk.cfg.models_dir, strerror(errno));
    /* FAKELLM_CACHE_MODELS=a/b:Q4,...: models listed from llama-server's
     * cache or presets (no file in models_dir; a load of one fails) */
    const char *cache = getenv("FAKELLM_CACHE_MODELS");
    for (const char *p = cache ? cache : ""; *p;) {
        size_t n = strcspn(p, ",");
        if (n) {
            if (n_models == cap)
                models = xrealloc(models, (cap = cap ? 2 * cap : 8) * sizeof *models);
            struct fk_model *m = &models[n_models++];
            memset(m, 0, sizeof *m);
            m->id = xstrndup(p, n);
            m->path = xasprintf("%s/.cache-%zu.gguf", fk.cfg.models_dir, n_models);
            m->status = "unloaded";
        }
        p += n + (p[n] == ',');
    }
    qsort(models, n_models, sizeof *models, cmp_model);
    for (size_t i = 0; i < n_models; i++) {
        uv_timer_init(fk.loop, &models[i].timer);
        models[i].timer.data = &models[i];
    }
    fk.state = FK_READY;
    router_nvml();
    fk_log('I', "srv:llama_server", "router mode: %zu models in '%s'", n_models, fk.cfg.models_dir);
    fk_log('I', "srv:llama_server", "listening on http://%s:%d", fk.cfg.host, fk.cfg.port);
}

/* Part of the load, as in llama.cpp: the file must open and say GGUF. */
static int check_gguf(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fk_log('E', "gguf_init_from_file", "failed to open GGUF file '%s' (%s)", path, strerror(errno));
        return -1;
    }
    char magic[4] = {0};
    ssize_t n = read(fd, magic, 4);
    close(fd);
    if (n != 4 || memcmp(magic, "GGUF", 4) != 0) {
        fk_log('E', "gguf_init_from_file_impl", "invalid magic characters: '%.4s', expected 'GGUF'", magic);
        return -1;
    }
    return 0;
}

void load_start(void)
{
    char err[256];
    struct fk_config *c = &fk.cfg;
    if (c->mode == FK_ROUTER) {
        router_start();
        return;
    }
    if (c->mode == FK_LLAMA) {
        fk_log('I', "srv:load_model", "loading model '%s'", c->model);
        if (check_gguf(c->model) < 0) {
            load_failed("llama_model_loader: failed to load model");
            fk_exit(1);
            return;
        }
    } else {
        fk_log('I', "core.py:93", "Initializing a V1 LLM engine (v%s) with config: model='%s', max_seq_len=%d",
               FK_VLLM_VERSION, c->model, c->max_model_len);
    }
    load_t0 = fk_mono_ms();
    int rc = fk.env.fork_worker ? fork_worker(err, sizeof err) : hold_local(true, err, sizeof err);
    if (rc < 0) {
        load_failed(err);
        fk_exit(1);
        return;
    }
    uv_timer_init(fk.loop, &load_timer);
    long tick = fk.env.load_ms / 20;
    tick = tick < 10 ? 10 : tick > 250 ? 250 : tick;
    uv_timer_start(&load_timer, on_load_tick, fk.env.load_ms ? (uint64_t)tick : 0, (uint64_t)tick);
    grow_start(); /* only with FAKELLM_GROW_FROM=load */
}

/* FAKELLM_WEIGHTS_MB, else FAKELLM_GPU_MB's sum capped at
 * WEIGHTS_DEFAULT_MAX_MB (the copy is real host memory). */
#define WEIGHTS_DEFAULT_MAX_MB 1024
static long weights_mb(void)
{
    if (fk.env.weights_mb >= 0)
        return fk.env.weights_mb;
    long sum = 0;
    for (const char *p = fk.env.gpu_mb; p && *p;) {
        char *end;
        sum += strtol(p, &end, 10);
        if (end == p || *end != ',')
            break;
        p = end + 1;
    }
    return sum > WEIGHTS_DEFAULT_MAX_MB ? WEIGHTS_DEFAULT_MAX_MB : sum;
}

/* Level 1 offloads the weights to (pinned) host memory: this process
 * maps and touches that much, so the group's RSS grows by it. */
static int weights_copy(char *err, size_t errlen)
{
    size_t len = (size_t)weights_mb() << 20;
    if (!len || wcopy)
        return 0;
    wcopy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (wcopy == MAP_FAILED) {
        wcopy = NULL;
        return fk_fail(err, errlen, "mmap %ld MiB for the weights' host copy: %s", weights_mb(), strerror(errno));
    }
    wcopy_len = len;
    for (size_t off = 0; off < len; off += PAGE)
        wcopy[off] = 1;
    return 0;
}

static void weights_drop(void)
{
    if (wcopy)
        munmap(wcopy, wcopy_len);
    wcopy = NULL;
    wcopy_len = 0;
}

/* What a sleep frees: level 1 the GPU side (the weights go to the host
 * copy), level 2 the GPU side and FAKELLM_RAM_MB, nothing added. */
static int sleep_free(int level, char *err, size_t errlen)
{
    if (gpu_held && part('g', err, errlen) < 0)
        return -1;
    if (level == 1)
        return weights_copy(err, errlen);
    return ram_held ? part('m', err, errlen) : 0;
}

/* vLLM's sleep gives the memory back only for an engine started with
 * --enable-sleep-mode; without it the call succeeds and frees nothing,
 * which is what the real one does and what a manager must notice. */
int load_sleep(int level, char *err, size_t errlen)
{
    if (fk.state == FK_SLEEPING)
        return 0;
    if (level != 1 && level != 2) {
        snprintf(err, errlen, "sleep level must be 1 or 2, not %d", level);
        return -1;
    }
    if (fk.env.sleep_stuck) {
        fk_log('W', "gpu_worker.py:104", "FAKELLM_SLEEP_STUCK: sleep level %d acknowledged, nothing done", level);
        return 0;
    }
    if (!fk.cfg.sleep_mode)
        fk_log('W', "gpu_worker.py:104", "sleep mode was not enabled (--enable-sleep-mode): nothing is freed");
    else if (sleep_free(level, err, errlen) < 0)
        return -1;
    fk.state = FK_SLEEPING;
    sleeping_tags = FK_TAG_WEIGHTS | FK_TAG_KV;
    fk_log('I', "gpu_worker.py:104", "Sleep mode freed %.2f GiB memory, level %d (the weights' host copy: %zu MiB)",
           fk.cfg.sleep_mode ? (double)(fk.env.ram_mb * (level == 2)) / 1024 : 0.0, level, wcopy_len >> 20);
    return 0;
}

/* Wake the parts in tags (FK_TAG_*): the weights take back the host
 * memory and drop the host copy; either part takes back the GPU side.
 * Awake when no part sleeps any more. */
int load_wake_tags(unsigned tags, char *err, size_t errlen)
{
    if (fk.state != FK_SLEEPING) {
        fk_log('W', "executor_base.py:229", "Executor is not sleeping.");
        return 0;
    }
    unsigned now = tags & sleeping_tags;
    if (now != tags)
        fk_log('W', "executor_base.py:236", "a wake_up tag is not asleep (asked %u, asleep %u): skipped", tags,
               sleeping_tags);
    if (now & FK_TAG_WEIGHTS) {
        weights_drop();
        if (!ram_held && part('M', err, errlen) < 0)
            return -1;
    }
    if (now && !gpu_held && part('G', err, errlen) < 0)
        return -1;
    sleeping_tags &= ~now;
    if (!sleeping_tags) {
        fk.state = FK_READY;
        fk_log('I', "api_server.py:1012", "wake up the engine");
    }
    return 0;
}

int load_wake(char *err, size_t errlen)
{
    return load_wake_tags(FK_TAG_WEIGHTS | FK_TAG_KV, err, errlen);
}

size_t load_router_count(void)
{
    return n_models;
}

struct fk_model *load_router_at(size_t i)
{
    return i < n_models ? &models[i] : NULL;
}

struct fk_model *load_router_find(const char *id)
{
    for (size_t i = 0; i < n_models; i++)
        if (strcmp(models[i].id, id) == 0)
            return &models[i];
    return NULL;
}

/* FAKELLM_MODEL_GPU_MB for model id: "N" for every model, or
 * "name=N,..." where a bare N counts for the models not named; 0 for a
 * model it does not give. */
static long model_gpu_mb(const char *id)
{
    long dflt = 0;
    size_t idlen = strlen(id);
    for (const char *p = fk.env.model_gpu_mb; p && *p;) {
        size_t n = strcspn(p, ",");
        const char *eq = memchr(p, '=', n);
        if (!eq)
            dflt = strtol(p, NULL, 10);
        else if ((size_t)(eq - p) == idlen && strncmp(p, id, idlen) == 0)
            return strtol(eq + 1, NULL, 10);
        p += n + (p[n] == ',');
    }
    return dflt;
}

/* Router mode's one NVML entry per device, under our pid: FAKELLM_GPU_MB
 * (the router itself) plus every loading or loaded model's share. */
static void router_nvml(void)
{
    if (!fk.env.gpu_mb && !fk.env.model_gpu_mb)
        return;
    long sum = 0;
    for (size_t i = 0; i < n_models; i++)
        if (strcmp(models[i].status, "unloaded") != 0)
            sum += model_gpu_mb(models[i].id);
    buf b = BUF_INIT;
    for (const char *p = fk.env.gpu_mb ? fk.env.gpu_mb : "0"; *p;) {
        char *end;
        buf_printf(&b, "%s%ld", b.len ? "," : "", strtol(p, &end, 10) + sum);
        if (end == p || *end != ',')
            break;
        p = end + 1;
    }
    char err[256];
    int rc = fk.env.gpu_mb || sum ? nvml_register(getpid(), b.p, err, sizeof err)
                                  : nvml_unregister(getpid(), err, sizeof err);
    if (rc < 0)
        fk_log('W', "srv:models", "cannot update the fake NVML state: %s", err);
    buf_release(&b);
}

static void on_model_loaded(uv_timer_t *t)
{
    struct fk_model *m = t->data;
    m->status = "loaded";
    m->last_used = fk_mono_ms();
    fk_log('I', "srv:load", "model '%s' loaded", m->id);
    gen_model_ready(m->id);
}

void load_router_load(struct fk_model *m)
{
    m->last_used = fk_mono_ms();
    if (strcmp(m->status, "unloaded") != 0)
        return;
    size_t busy = 0;
    struct fk_model *lru = NULL;
    for (size_t i = 0; i < n_models; i++) {
        struct fk_model *o = &models[i];
        if (strcmp(o->status, "unloaded") == 0)
            continue;
        busy++;
        if (strcmp(o->status, "loaded") == 0 && (!lru || o->last_used < lru->last_used))
            lru = o;
    }
    if (fk.cfg.models_max > 0 && busy >= (size_t)fk.cfg.models_max && lru) {
        fk_log('I', "srv:unload_lru", "models_max limit reached, removing LRU name=%s", lru->id);
        load_router_unload(lru);
    }
    m->status = "loading";
    router_nvml();
    fk_log('I', "srv:load", "spawning server instance for model '%s'", m->id);
    uv_timer_start(&m->timer, on_model_loaded, (uint64_t)fk.env.load_ms, 0);
}

void load_router_unload(struct fk_model *m)
{
    uv_timer_stop(&m->timer);
    bool was = strcmp(m->status, "unloaded") != 0;
    m->status = "unloaded";
    if (was) {
        router_nvml();
        fk_log('I', "srv:unload", "model '%s' unloaded", m->id);
    }
}

void load_release(void)
{
    ram_unmap();
    weights_drop();
    wake_release();
    grow_release();
    if (worker_fd >= 0)
        close(worker_fd);
    worker_fd = -1;
    for (size_t i = 0; i < n_models; i++) {
        free(models[i].id);
        free(models[i].path);
    }
    free(models);
    models = NULL;
    n_models = 0;
}
