/* bench_fake.h - what the bench client tests share: fakellm spawned on a
 * free port with FAKELLM_* settings and its log in a file, and a tiny
 * canned-answer HTTP server on a thread (for answers fakellm never gives:
 * a 500 to a POST, a server that accepts and never answers).
 * Header-only; include after <cmocka.h> and testenv.h. */
#ifndef GPUMOD_TEST_BENCH_FAKE_H
#define GPUMOD_TEST_BENCH_FAKE_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"

extern char **environ;

static int bf_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* fakellms still running: a failed assertion jumps past bf_fake_stop, so
 * whatever is left is killed when the test program exits */
static pid_t bf_live[16];

static void bf_kill_live(void)
{
    for (int i = 0; i < 16; i++)
        if (bf_live[i] > 0) {
            kill(bf_live[i], SIGKILL);
            waitpid(bf_live[i], NULL, 0);
            bf_live[i] = 0;
        }
}

static void bf_track(pid_t pid, pid_t old)
{
    static bool registered;
    if (!registered) {
        atexit(bf_kill_live);
        registered = true;
    }
    for (int i = 0; i < 16; i++)
        if (bf_live[i] == old) {
            bf_live[i] = pid;
            return;
        }
}

typedef struct bf_fake {
    pid_t pid;
    int port;
    char base[64];   /* http://127.0.0.1:PORT */
    char *log;       /* its stderr (caller of bf_fake_stop frees) */
} bf_fake;

/* fakellm with env ("NAME=value", NULL-terminated) and extra args, healthy
 * within 10 s (scaled) or the test fails. */
static void bf_fake_start(bf_fake *f, const char *const *env, const char *const *args)
{
    memset(f, 0, sizeof *f);
    f->port = bf_free_port();
    snprintf(f->base, sizeof f->base, "http://127.0.0.1:%d", f->port);
    char *bin = build_path("fakellm");
    char *model = src_path("tests/fixtures/models/aidreams260K-f32.gguf");
    char port[16];
    snprintf(port, sizeof port, "%d", f->port);
    f->log = xasprintf("/tmp/gpumod-bench-test-%d-%d.log", (int)getpid(), f->port);
    const char *argv[32] = {bin, "-m", model, "--port", port, "--host", "127.0.0.1"};
    size_t na = 7;
    for (const char *const *a = args; a && *a && na < 31; a++)
        argv[na++] = *a;
    argv[na] = NULL;
    size_t n = 0;
    while (environ[n])
        n++;
    size_t ne = 0;
    while (env && env[ne])
        ne++;
    char **envp = calloc(n + ne + 1, sizeof *envp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "FAKELLM_", 8) != 0)
            envp[k++] = environ[i];
    for (size_t i = 0; i < ne; i++)
        envp[k++] = (char *)env[i];
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, f->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    assert_int_equal(posix_spawn(&f->pid, bin, &fa, NULL, (char **)argv, envp), 0);
    posix_spawn_file_actions_destroy(&fa);
    bf_track(f->pid, 0);
    free(envp);
    int64_t deadline = mono_ms() + 10000 * scale();
    int status = 0;
    char *url = xasprintf("%s/v1/models", f->base);
    while (mono_ms() < deadline) {
        bfetch r;
        if (bfetch_do(url, NULL, NULL, 1000, &r) == 0)
            status = r.status;
        bfetch_release(&r);
        if (status == 200)
            break;
        usleep(10 * 1000);
    }
    if (status != 200)
        fail_msg("fakellm (%s) not answering /v1/models on port %d (log %s)", bin, f->port, f->log);
    free(url);
    free(bin);
    free(model);
}

static void bf_fake_stop(bf_fake *f)
{
    if (f->pid > 0) {
        kill(f->pid, SIGTERM);
        int st;
        int64_t deadline = mono_ms() + 5000 * scale();
        while (waitpid(f->pid, &st, WNOHANG) == 0) {
            if (mono_ms() > deadline) {
                kill(f->pid, SIGKILL);
                waitpid(f->pid, &st, 0);
                break;
            }
            usleep(5000);
        }
    }
    bf_track(0, f->pid);
    f->pid = 0;
    if (f->log) {
        unlink(f->log);
        free(f->log);
        f->log = NULL;
    }
}

/* ---- a canned-answer server ------------------------------------------------ */

typedef struct bf_canned {
    int lfd, stop[2], port;
    const char *answer;   /* the whole HTTP response; NULL: accept, read, never answer */
    pthread_t th;
    pthread_mutex_t mu;
    buf heads;            /* every request head received, one after another */
    int n_conns;
} bf_canned;

static void *bf_canned_main(void *arg)
{
    bf_canned *s = arg;
    int held[64], n_held = 0;
    for (;;) {
        struct pollfd p[2] = {{s->lfd, POLLIN, 0}, {s->stop[0], POLLIN, 0}};
        if (poll(p, 2, 10000) <= 0 || p[1].revents)
            break;
        int c = accept(s->lfd, NULL, NULL);
        if (c < 0)
            continue;
        /* the request: head, then Content-Length bytes of body */
        buf req = BUF_INIT;
        char chunk[4096];
        long need = -1;
        for (;;) {
            struct pollfd q[2] = {{c, POLLIN, 0}, {s->stop[0], POLLIN, 0}};
            if (poll(q, 2, 5000) <= 0 || q[1].revents)
                break;
            ssize_t r = read(c, chunk, sizeof chunk);
            if (r <= 0)
                break;
            buf_add(&req, chunk, (size_t)r);
            char *end = strstr(req.p, "\r\n\r\n");
            if (end && need < 0) {
                const char *cl = strcasestr(req.p, "\r\ncontent-length:");
                long body = cl && cl < end ? strtol(cl + 17, NULL, 10) : 0;
                need = (long)(end - req.p) + 4 + body;
                pthread_mutex_lock(&s->mu);
                buf_add(&s->heads, req.p, (size_t)(end - req.p) + 4);
                s->n_conns++;
                pthread_mutex_unlock(&s->mu);
            }
            if (need >= 0 && (long)req.len >= need)
                break;
        }
        buf_release(&req);
        if (s->answer) {
            size_t len = strlen(s->answer), off = 0;
            while (off < len) {
                ssize_t w = write(c, s->answer + off, len - off);
                if (w <= 0)
                    break;
                off += (size_t)w;
            }
            close(c);
        } else if (n_held < 64) {
            held[n_held++] = c; /* never answered; closed at stop */
        } else {
            close(c);
        }
    }
    for (int i = 0; i < n_held; i++)
        close(held[i]);
    return NULL;
}

static void bf_canned_start(bf_canned *s, const char *answer)
{
    memset(s, 0, sizeof *s);
    s->answer = answer;
    buf_init(&s->heads);
    pthread_mutex_init(&s->mu, NULL);
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s->lfd >= 0);
    int one = 1;
    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &len), 0);
    s->port = ntohs(a.sin_port);
    assert_int_equal(listen(s->lfd, 64), 0);
    assert_int_equal(pipe2(s->stop, O_CLOEXEC), 0);
    assert_int_equal(pthread_create(&s->th, NULL, bf_canned_main, s), 0);
}

static void bf_canned_stop(bf_canned *s)
{
    (void)!write(s->stop[1], "x", 1);
    pthread_join(s->th, NULL);
    close(s->lfd);
    close(s->stop[0]);
    close(s->stop[1]);
    buf_release(&s->heads);
    pthread_mutex_destroy(&s->mu);
}

#endif
