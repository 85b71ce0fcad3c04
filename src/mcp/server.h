/* server.h - one MCP session over stdin/stdout: the state the methods
 * share, the writer, the calls in flight.
 *
 * Threads: the main thread reads stdin and answers every method but
 * tools/call itself (initialize, ping, the lists, resources/read); each
 * tools/call runs on a thread of its own (a switch can take minutes, and
 * ping, cancellation and other calls must still be answered), at most
 * MCP_MAX_INFLIGHT at once; the event thread follows the daemon's event
 * stream for subscriptions.  Everything below `mu` is guarded by it, and
 * every line written to stdout is written whole under it. */
#ifndef GPUMOD_MCP_SERVER_H
#define GPUMOD_MCP_SERVER_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "mcp/rate.h"
#include "util/strv.h"

#define MCP_MAX_INFLIGHT 16
/* The protocol versions spoken, newest first: the answer to a version
 * not in the list is the newest (the client then decides). */
#define MCP_VERSION_LATEST "2025-06-18"

/* A tools/call in flight (its JSON-RPC id as printed: "7" or "\"a\""). */
typedef struct mcp_call {
    char *key;
    volatile sig_atomic_t cancelled;
    bool used;
} mcp_call;

typedef struct mcp_server {
    config_paths paths; /* socket resolved once, before any thread */
    bool read_only;
    bool allow_pull; /* --allow-pull: pull_model is offered */
    bool events;     /* follow the daemon's events (subscriptions) */
    int out_fd;
    char version[16]; /* negotiated; "" before initialize */
    bool initialized; /* initialize answered */
    pthread_mutex_t mu;
    rate_limit rate; /* mutating tool calls */
    mcp_call calls[MCP_MAX_INFLIGHT];
    strv subs;           /* subscribed resource URIs */
    int running;         /* tool threads alive */
    pthread_cond_t idle; /* signalled when running drops */
    volatile sig_atomic_t stop;
    bool out_broken; /* stdout could not be written: the client is gone */
} mcp_server;

void mcp_server_init(mcp_server *s, const config_paths *paths, bool read_only, int rate_per_min);
void mcp_server_release(mcp_server *s);

/* Write one message (a line; the newline is added) whole, or give up
 * after 30 s of a client that does not read (then out_broken).  Takes
 * line (freed). */
void mcp_send(mcp_server *s, char *line);

/* Whether the negotiated version has structuredContent and tool titles
 * (2025-06-18). */
bool mcp_v2025_06(const mcp_server *s);

/* One line read from stdin (len bytes, no newline): answer it. */
void mcp_handle_line(mcp_server *s, const char *line, size_t len);

/* The calls in flight: register one (NULL when MCP_MAX_INFLIGHT are, or
 * one with the same id is),
 * mark one cancelled by its id, and drop one. */
mcp_call *mcp_call_begin(mcp_server *s, const cJSON *id);
void mcp_call_cancel(mcp_server *s, const cJSON *id);
void mcp_call_end(mcp_server *s, mcp_call *c);

/* Whether uri is subscribed (under mu). */
bool mcp_subscribed(mcp_server *s, const char *uri);

#endif
