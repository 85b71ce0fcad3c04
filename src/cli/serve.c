/* serve.c - `gpumod serve [--foreground] [--listen HOST:PORT] [--no-router]
 * [--insecure] [-v]`: run the daemon.
 *
 * --foreground (systemd, containers, tests): the daemon in this process,
 * logging to stderr.  Without it the daemon detaches (fork, setsid, stdio
 * to <log_dir>/gpumod.log) and this process waits until the daemon's
 * socket answers GET /status with the child's own pid, or the child exits
 * (its error, read back from the log, is printed), so `gpumod serve &&
 * gpumod service start x` never races the daemon's start-up. */
#include "cli/cli.h"
#include "cli/ctl.h"
#include "daemon/daemon.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/slurp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long the parent waits for the socket: the daemon listens only
 * after reconcile, which may stop a previous daemon's leftovers
 * (stop_timeout, then the NVML verify), so the wait grows with those. */
#define SERVE_WAIT_BASE_MS 30000

/* Every inherited descriptor above stderr (a caller's pipes, sockets,
 * locks must not live on in the daemon). */
static void close_from_3(void)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0) return;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536) max = 65536;
    for (int fd = 3; fd < max; fd++) close(fd);
}

/* What the child wrote to the log after offset, to stderr. */
static void print_log_since(const char *log, off_t off)
{
    int fd = open(log, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    if (lseek(fd, off, SEEK_SET) == off) {
        char b[4096];
        ssize_t n;
        while ((n = read(fd, b, sizeof b)) > 0) fwrite(b, 1, (size_t)n, stderr);
    }
    close(fd);
}

/* The daemon at sock answers and is pid. */
static bool answers(const char *sock, pid_t pid)
{
    http_reply r;
    char err[256];
    if (http_request(sock, "GET", "/status", NULL, NULL, 0, 1000, &r, err, sizeof err) != HTTPC_OK) return false;
    bool ok = false;
    if (r.status == 200) {
        cJSON *j = cJSON_ParseWithLength(r.body.p, r.body.len);
        const cJSON *d = j ? cJSON_GetObjectItemCaseSensitive(j, "daemon") : NULL;
        ok = (pid_t)jnum(d, "pid", -1) == pid;
        cJSON_Delete(j);
    }
    http_reply_release(&r);
    return ok;
}

int cmd_serve(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("serve");
    bool fg = false;
    daemon_opts o = {.paths = c->paths, .verbose = c->verbose > 0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--foreground"))
            fg = true;
        else if (!strcmp(argv[i], "--no-router"))
            o.no_router = true;
        else if (!strcmp(argv[i], "--insecure"))
            o.insecure = true;
        else if (!strcmp(argv[i], "--listen") || !strncmp(argv[i], "--listen=", 9)) {
            const char *v = argv[i][8] == '=' ? argv[i] + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v || !*v) return cli_usage_error(c, k, "serve: --listen needs HOST:PORT");
            o.listen = v;
        } else
            return cli_usage_error(c, k, "serve: unexpected argument '%s'", argv[i]);
    }
    if (fg) return daemon_run(&o);

    config cfg;
    config_load_settings(&cfg, &c->paths);
    char *sock = xstrdup(cfg.set.socket);
    char *logdir = xstrdup(cfg.set.log_dir);
    char *log = xasprintf("%s/gpumod.log", cfg.set.log_dir);
    int64_t wait_ms = SERVE_WAIT_BASE_MS + cfg.set.supervisor.stop_timeout_ms +
                      cfg.set.memory.verify_freed_timeout_ms + cfg.set.memory.nvml_timeout_ms;
    config_release(&cfg);
    char err[512];
    int rc = EXIT_REFUSED;
    if (daemon_mkdirs(logdir, 0700, err, sizeof err)) {
        fprintf(stderr, "gpumod: serve: %s\n", err);
        goto out;
    }
    char why[128];
    int lfd = slurp_open_append(log, O_CREAT, 0600, why, sizeof why); /* never waits on a FIFO */
    if (lfd < 0) {
        fprintf(stderr, "gpumod: serve: cannot open the log '%s': %s\n", log, why);
        goto out;
    }
    struct stat st;
    off_t off = fstat(lfd, &st) == 0 ? st.st_size : 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gpumod: serve: fork: %s\n", strerror(errno));
        close(lfd);
        goto out;
    }
    if (pid == 0) {
        setsid();
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) {
            dup2(nul, STDIN_FILENO);
            if (nul != STDIN_FILENO) close(nul);
        }
        dup2(lfd, STDOUT_FILENO);
        dup2(lfd, STDERR_FILENO);
        close_from_3(); /* lfd too */
        o.chdir_root = true; /* once its paths are absolute: never hold the caller's directory */
        _exit(daemon_run(&o));
    }
    close(lfd);
    int64_t deadline = clock_mono_ms() + wait_ms;
    for (;;) {
        int status;
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            print_log_since(log, off);
            int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
            fprintf(stderr, "gpumod: serve: the daemon exited (%s %d) before it was ready; its log is %s\n",
                    WIFEXITED(status) ? "code" : "signal", WIFEXITED(status) ? code : WTERMSIG(status), log);
            rc = code ? code : EXIT_REFUSED;
            break;
        }
        if (answers(sock, pid)) {
            if (c->json) {
                buf b = BUF_INIT;
                buf_printf(&b, "{\"pid\":%ld,\"socket\":", (long)pid);
                buf_json_str(&b, sock);
                buf_adds(&b, ",\"log\":");
                buf_json_str(&b, log);
                printf("%s}\n", b.p);
                buf_release(&b);
            } else
                printf("gpumod: daemon running (pid %ld, socket %s)\n", (long)pid, sock);
            rc = EXIT_OK;
            break;
        }
        if (clock_mono_ms() >= deadline) {
            fprintf(stderr,
                    "gpumod: serve: the daemon (pid %ld) did not answer on %s within %d s; it keeps running, its "
                    "log is %s\n",
                    (long)pid, sock, (int)(wait_ms / 1000), log);
            rc = EXIT_TIMEOUT;
            break;
        }
        poll(NULL, 0, 20);
    }
out:
    free(sock);
    free(logdir);
    free(log);
    return rc;
}
