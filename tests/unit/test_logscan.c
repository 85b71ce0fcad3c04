/* test_logscan.c - progress, readiness and failure from engine logs, fed
 * whole and in every split, as the supervisor's pipe reads deliver them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <sys/wait.h>

#include "config/config.h"
#include "drivers/logscan.h"
#include "util/buf.h"
#include "util/run.h"
#include "util/strv.h"

/* real llama-server b10587 lines (research/llama-server.md) around the
 * loader's dots */
static const char llama_log[] =
    "I main: build: 10587 (3f545bec) with cc for Linux x86_64\n"
    "I srv         start: binding port with default address family\n"
    "I srv    load_model: loading model '/m/aidreams260K-f32.gguf'\n"
    "I load_tensors: loading model tensors, this can take a while... (mmap = true)\n"
    "....................................................................................................\n"
    "I srv    load_model: initializing, n_slots = 2, n_ctx_slot = 128, kv_unified = 'false'\n"
    "I srv  llama_server: model loaded\n"
    "I srv  llama_server: listening on http://127.0.0.1:18080\n";

static void llama_progress_and_ready(void **state)
{
    logscan ls;
    logscan_init(&ls, DRV_LLAMACPP);
    const char *dots = strstr(llama_log, "....");
    size_t head = (size_t)(dots - llama_log);
    unsigned ch = logscan_feed(&ls, llama_log, head);
    assert_int_equal(ls.progress_pct, 0);
    assert_false(ls.ready);
    ch = logscan_feed(&ls, dots, 37); /* a partial line of dots */
    assert_true(ch & LOGSCAN_PROGRESS);
    assert_int_equal(ls.progress_pct, 37);
    ch = logscan_feed(&ls, dots + 37, 63); /* all 100 dots, no newline yet: 99 */
    assert_int_equal(ls.progress_pct, 99);
    ch = logscan_feed(&ls, dots + 100, 1); /* the newline */
    assert_int_equal(ls.progress_pct, 100);
    ch = logscan_feed(&ls, dots + 101, strlen(dots + 101));
    assert_true(ch & LOGSCAN_READY);
    assert_true(ls.ready);
    assert_string_equal(ls.fatal, "");
}

static void every_split_gives_the_same_answer(void **state)
{
    size_t n = strlen(llama_log);
    for (size_t cut = 0; cut <= n; cut++) {
        logscan ls;
        logscan_init(&ls, DRV_LLAMACPP);
        logscan_feed(&ls, llama_log, cut);
        logscan_feed(&ls, llama_log + cut, n - cut);
        assert_true(ls.ready);
        assert_int_equal(ls.progress_pct, 100);
    }
    /* and byte by byte: progress only grows */
    logscan ls;
    logscan_init(&ls, DRV_LLAMACPP);
    int last = -1;
    for (size_t i = 0; i < n; i++) {
        logscan_feed(&ls, llama_log + i, 1);
        assert_true(ls.progress_pct >= last);
        last = ls.progress_pct;
    }
}

static void listening_alone_is_not_ready(void **state)
{
    /* llama-server binds before it loads: "listening" is not readiness */
    logscan ls;
    logscan_init(&ls, DRV_LLAMACPP);
    const char *t = "I srv  llama_server: listening on http://127.0.0.1:1\n";
    assert_int_equal(logscan_feed(&ls, t, strlen(t)) & LOGSCAN_READY, 0);
    assert_false(ls.ready);
}

static void llama_failures(void **state)
{
    static const char *const lines[] = {
        "E gguf_init_from_file: failed to open GGUF file '/nope.gguf'\n",
        "E srv start: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 18086\n",
        "E ggml_backend_cuda_buffer_type_alloc_buffer: allocating 20480.00 MiB on device 0: cudaMalloc failed: out "
        "of memory\n",
        "E llama_model_load: error loading model: unable to allocate CUDA0 buffer\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        logscan ls;
        logscan_init(&ls, DRV_LLAMACPP);
        unsigned ch = logscan_feed(&ls, lines[i], strlen(lines[i]));
        assert_true(ch & LOGSCAN_FATAL);
        assert_int_equal(strncmp(ls.fatal, lines[i], strlen(ls.fatal)), 0);
    }
    /* the first failure line is kept; later ones do not replace it */
    logscan ls;
    logscan_init(&ls, DRV_LLAMACPP);
    logscan_feed(&ls, lines[2], strlen(lines[2]));
    logscan_feed(&ls, lines[3], strlen(lines[3]));
    assert_non_null(strstr(ls.fatal, "cudaMalloc failed"));
    /* recoverable: not a failure */
    logscan_init(&ls, DRV_LLAMACPP);
    const char *r = "W llama_context: failed to allocate compute buffers, retrying without pipeline parallelism\n";
    assert_int_equal(logscan_feed(&ls, r, strlen(r)) & LOGSCAN_FATAL, 0);
}

static void vllm_progress_ready_and_failures(void **state)
{
    logscan ls;
    logscan_init(&ls, DRV_VLLM);
    const char *a = "INFO:     Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:01<00:01]\n";
    assert_true(logscan_feed(&ls, a, strlen(a)) & LOGSCAN_PROGRESS);
    assert_int_equal(ls.progress_pct, 50);
    const char *b = "INFO:     Application startup complete.\n";
    assert_true(logscan_feed(&ls, b, strlen(b)) & LOGSCAN_READY);
    assert_int_equal(ls.progress_pct, 100);

    logscan_init(&ls, DRV_VLLM);
    const char *c = "ValueError: Free memory on device (3.1/23.5 GiB) on startup is less than desired GPU memory "
                    "utilization (0.9, 21.17 GiB).\n";
    assert_true(logscan_feed(&ls, c, strlen(c)) & LOGSCAN_FATAL);
}

static void long_lines_and_control_bytes(void **state)
{
    logscan ls;
    logscan_init(&ls, DRV_LLAMACPP);
    char big[5000];
    memset(big, 'x', sizeof big);
    logscan_feed(&ls, big, sizeof big);
    const char *tail = " cudaMalloc failed: out of memory\x01\x1b[0m\n";
    logscan_feed(&ls, tail, strlen(tail)); /* past the kept 1023 bytes: not seen, no overflow */
    assert_string_equal(ls.fatal, "");
    const char *oom = "E x: out of memory\x1b[0m\n";
    logscan_feed(&ls, oom, strlen(oom));
    assert_string_equal(ls.fatal, "E x: out of memory?[0m");
}

/* a port nobody listens on: bind port 0, read what the kernel chose */
static int unused_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* Run argv (FAKELLM_LOAD_MS=400 in its environment) and feed its output,
 * as the pipe delivers it, to ls until ls says ready or the deadline
 * (ms) passes; then kill it.  The output read is kept in out. */
static void feed_until_ready(char *const argv[], logscan *ls, buf *out, int64_t ms)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        dup2(p[1], 1);
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        int dn = open("/dev/null", O_RDONLY);
        if (dn >= 0) dup2(dn, 0);
        setenv("FAKELLM_LOAD_MS", "400", 1);
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t end = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + ms;
    while (!ls->ready) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t left = end - ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
        if (left <= 0) break;
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        int n = poll(&pf, 1, (int)left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) continue;
        char chunk[4096];
        ssize_t got = read(p[0], chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break; /* it exited */
        buf_add(out, chunk, (size_t)got);
        logscan_feed(ls, chunk, (size_t)got);
    }
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    close(p[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
}

/* fakellm's own output, as the supervisor will read it: the stand-in must
 * say what the real engines say.  It serves until killed: each run reads
 * until the scan says ready (10 s x the time scale only proves it did
 * not hang), fed in the splits the pipe delivers */
static void fakellm_logs_scan_like_the_real_ones(void **state)
{
    (void)state;
    const char *src = getenv("GPUMOD_SRC") ? getenv("GPUMOD_SRC") : ".";
    const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
    char fk[1024], model[1024];
    snprintf(fk, sizeof fk, "%s%s%s/fakellm", build[0] == '/' ? "" : src, build[0] == '/' ? "" : "/", build);
    snprintf(model, sizeof model, "%s/tests/fixtures/models/aidreams260K-f32.gguf", src);
    const char *scale = getenv("GPUMOD_TEST_TIME_SCALE");
    int64_t ms = 10000 * (scale && atoi(scale) > 0 ? atoi(scale) : 1);
    for (int vllm = 0; vllm < 2; vllm++) {
        char port[16];
        snprintf(port, sizeof port, "%d", unused_port());
        char *llama_argv[] = {fk, "-m", model, "--port", port, NULL};
        char *vllm_argv[] = {fk, "serve", model, "--port", port, NULL};
        buf out = BUF_INIT;
        logscan ls;
        logscan_init(&ls, vllm ? DRV_VLLM : DRV_LLAMACPP);
        feed_until_ready(vllm ? vllm_argv : llama_argv, &ls, &out, ms);
        if (!ls.ready) fail_msg("%s: not ready from its log:\n%s", vllm ? "vllm" : "llama", out.p);
        assert_int_equal(ls.progress_pct, 100);
        assert_string_equal(ls.fatal, "");
        buf_release(&out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama_progress_and_ready),
        cmocka_unit_test(every_split_gives_the_same_answer),
        cmocka_unit_test(listening_alone_is_not_ready),
        cmocka_unit_test(llama_failures),
        cmocka_unit_test(vllm_progress_ready_and_failures),
        cmocka_unit_test(long_lines_and_control_bytes),
        cmocka_unit_test(fakellm_logs_scan_like_the_real_ones),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
