/* server.c - the session's state, the writer and the calls in flight
 * (see server.h). */
#include "mcp/server.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/clock.h"

/* How long a line may wait for a client that does not read. */
#define SEND_DEADLINE_MS 30000

void mcp_server_init(mcp_server *s, const config_paths *paths, bool read_only, int rate_per_min)
{
    memset(s, 0, sizeof *s);
    s->paths = *paths;
    s->read_only = read_only;
    s->events = true;
    s->out_fd = 1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->idle, NULL);
    rate_init(&s->rate, rate_per_min, 60000);
    s->subs = (strv)STRV_INIT;
}

void mcp_server_release(mcp_server *s)
{
    for (int i = 0; i < MCP_MAX_INFLIGHT; i++)
        free(s->calls[i].key);
    strv_release(&s->subs);
    pthread_cond_destroy(&s->idle);
    pthread_mutex_destroy(&s->mu);
}

/* all of p, or false after the deadline or an error */
static bool write_all(int fd, const char *p, size_t n)
{
    int64_t deadline = clock_mono_ms() + SEND_DEADLINE_MS;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno != EAGAIN) return false;
        int64_t left = deadline - clock_mono_ms();
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        if (left <= 0 || poll(&pf, 1, (int)left) <= 0) return false;
    }
    return true;
}

void mcp_send(mcp_server *s, char *line)
{
    size_t n = strlen(line);
    pthread_mutex_lock(&s->mu);
    if (!s->out_broken) {
        /* line and newline in one write when the pipe takes it */
        char *l = realloc(line, n + 2);
        if (!l) abort();
        line = l;
        line[n] = '\n';
        line[n + 1] = '\0';
        if (!write_all(s->out_fd, line, n + 1)) {
            s->out_broken = true;
            fprintf(stderr, "gpumod-mcp: cannot write to the client (stdout): %s; stopping\n",
                    errno ? strerror(errno) : "it did not read for 30 s");
            s->stop = 1;
        }
    }
    pthread_mutex_unlock(&s->mu);
    free(line);
}

bool mcp_v2025_06(const mcp_server *s)
{
    return strcmp(s->version, "2025-06-18") >= 0;
}

static char *id_key(const cJSON *id)
{
    char *k = cJSON_PrintUnformatted(id);
    if (!k) abort();
    return k;
}

mcp_call *mcp_call_begin(mcp_server *s, const cJSON *id)
{
    mcp_call *c = NULL;
    char *key = id_key(id);
    bool dup = false;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < MCP_MAX_INFLIGHT; i++) {
        if (s->calls[i].used && !strcmp(s->calls[i].key, key)) dup = true;
        if (!s->calls[i].used && !c) c = &s->calls[i];
    }
    if (dup) c = NULL;
    if (c) {
        c->used = true;
        c->cancelled = 0;
        c->key = key;
        key = NULL;
        s->running++;
    }
    pthread_mutex_unlock(&s->mu);
    free(key);
    return c;
}

void mcp_call_cancel(mcp_server *s, const cJSON *id)
{
    char *k = id_key(id);
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < MCP_MAX_INFLIGHT; i++)
        if (s->calls[i].used && !strcmp(s->calls[i].key, k)) s->calls[i].cancelled = 1;
    pthread_mutex_unlock(&s->mu);
    free(k);
}

void mcp_call_end(mcp_server *s, mcp_call *c)
{
    pthread_mutex_lock(&s->mu);
    free(c->key);
    c->key = NULL;
    c->used = false;
    s->running--;
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->mu);
}

bool mcp_subscribed(mcp_server *s, const char *uri)
{
    pthread_mutex_lock(&s->mu);
    bool on = strv_find(&s->subs, uri) >= 0;
    pthread_mutex_unlock(&s->mu);
    return on;
}
