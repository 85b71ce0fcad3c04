/* main.c - gpumod-mcp's main(): `gpumod mcp [--read-only] [--allow-pull]
 * [--rate N] [--no-events]`, an MCP server on stdin/stdout (docs/mcp.md).
 *
 * The main thread reads stdin a line at a time (a line over RPC_MAX_LINE
 * is answered -32700 and skipped to its newline; a CR before the newline
 * and blank lines are tolerated) and answers each; stdout carries only
 * protocol messages, stderr the audit lines of changing calls and the
 * server's own trouble.  At the end of stdin it stops: the event thread
 * ends within 0.2 s, calls in flight get a second to finish. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/ctl.h"
#include "mcp/events.h"
#include "mcp/rpc.h"
#include "mcp/server.h"
#include "util/buf.h"
#include "util/exitcode.h"

static const char usage[] =
    "usage: gpumod mcp [--read-only] [--allow-pull] [--rate N] [--no-events]\n"
    "  An MCP server on stdin/stdout for an AI assistant (docs/mcp.md).\n"
    "  --read-only   offer no tool that changes anything (switch_mode, start_service, "
    "stop_service, pull_model)\n"
    "  --allow-pull  offer pull_model (downloads from the Hub); not with --read-only\n"
    "  --rate N      at most N changing calls a minute in this session (default 10; 0: no limit)\n"
    "  --no-events   do not follow the daemon's events (no notifications/resources/updated)\n";

static int options(int argc, char **argv, bool *ro, bool *pull, int *rate, bool *events)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--read-only")) {
            *ro = true;
        } else if (!strcmp(a, "--allow-pull")) {
            *pull = true;
        } else if (!strcmp(a, "--no-events")) {
            *events = false;
        } else if (!strcmp(a, "--rate") || !strncmp(a, "--rate=", 7)) {
            const char *v = a[6] == '=' ? a + 7 : i + 1 < argc ? argv[++i] : NULL;
            char *end;
            long n = v ? strtol(v, &end, 10) : -1;
            if (!v || !*v || *end || n < 0 || n > RATE_MAX) {
                fprintf(stderr,
                        "gpumod mcp: --rate: expected an integer from 0 to %d, found '%s'\n",
                        RATE_MAX, v ? v : "nothing");
                return EXIT_USAGE;
            }
            *rate = (int)n;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return -1;
        } else {
            fprintf(stderr, "gpumod mcp: unknown option '%s'\n%s", a, usage);
            return EXIT_USAGE;
        }
    }
    if (*ro && *pull) {
        fprintf(stderr, "gpumod mcp: --allow-pull and --read-only contradict each other (a "
                        "download changes the host): give one\n");
        return EXIT_USAGE;
    }
    return 0;
}

/* One line of in (without its newline): a CR before it dropped, blank
 * lines skipped. */
static void line(mcp_server *s, char *p, size_t n)
{
    if (n && p[n - 1] == '\r') n--;
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (i == n) return;
    mcp_handle_line(s, p, n);
}

static void read_loop(mcp_server *s)
{
    buf in = BUF_INIT;
    bool skipping = false; /* in a line that was too long */
    char chunk[65536];
    while (!s->stop) {
        ssize_t r = read(0, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        buf_add(&in, chunk, (size_t)r);
        char *nl;
        size_t from = 0;
        while ((nl = memchr(in.p + from, '\n', in.len - from))) {
            size_t n = (size_t)(nl - (in.p + from));
            if (!skipping) line(s, in.p + from, n);
            skipping = false;
            from += n + 1;
        }
        memmove(in.p, in.p + from, in.len - from);
        in.len -= from;
        if (in.len > RPC_MAX_LINE) {
            if (!skipping)
                mcp_send(s, rpc_error(NULL, RPC_PARSE_ERROR,
                                      "parse error: a message longer than 4 MiB (skipped)", NULL));
            skipping = true;
            in.len = 0;
        }
    }
    if (in.len && !skipping) line(s, in.p, in.len); /* a last line without its newline */
    buf_release(&in);
}

/* Calls in flight get a second to finish; then the process leaves them. */
static bool wait_calls(mcp_server *s)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += 1;
    pthread_mutex_lock(&s->mu);
    while (s->running && pthread_cond_timedwait(&s->idle, &s->mu, &t) == 0) {
    }
    bool idle = !s->running;
    pthread_mutex_unlock(&s->mu);
    return idle;
}

int main(int argc, char **argv)
{
    bool ro = false, events = true, pull = false;
    int rate = 10;
    int rc = options(argc, argv, &ro, &pull, &rate, &events);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    signal(SIGPIPE, SIG_IGN);
    config_paths paths = {getenv("GPUMOD_CONFIG_DIR"), getenv("GPUMOD_STATE_DIR"),
                          getenv("GPUMOD_SOCKET")};
    char *sock = ctl_socket_path(&paths); /* once, before any thread */
    paths.socket = sock;
    mcp_server s;
    mcp_server_init(&s, &paths, ro, rate);
    s.events = events;
    s.allow_pull = pull;
    pthread_t ev;
    bool ev_on = events && !mcp_events_start(&s, &ev);
    read_loop(&s);
    s.stop = 1;
    /* the client is gone: what it asked for is cancelled (a pull_model
     * child is killed, not left downloading as an orphan) */
    pthread_mutex_lock(&s.mu);
    for (int i = 0; i < MCP_MAX_INFLIGHT; i++)
        if (s.calls[i].used) s.calls[i].cancelled = 1;
    pthread_mutex_unlock(&s.mu);
    if (ev_on) pthread_join(ev, NULL);
    if (!wait_calls(&s)) {
        fflush(NULL);
        _exit(EXIT_OK); /* a call still waits on the daemon: leave it */
    }
    mcp_server_release(&s);
    free(sock);
    return EXIT_OK;
}
