/* ctl.h - the control-API client: what every program that talks to the
 * daemon shares (the CLI, gpumod-bench, the coming TUI and MCP server):
 * the socket path (resolved exactly as the daemon resolves it, reading
 * gpumod.yaml only when neither --socket nor GPUMOD_SOCKET says), one
 * request or stream with a deadline, the exit code of docs/interfaces.md
 * for an HTTP status, and the daemon's error JSON printed for people. */
#ifndef GPUMOD_CLIENT_CTL_H
#define GPUMOD_CLIENT_CTL_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "net/client.h"
#include "util/exitcode.h"
#include "util/buf.h"

/* Caller frees.  Resolved once per process. */
char *ctl_socket_path(const config_paths *paths);
/* A command that has loaded the configuration anyway gives its socket
 * setting here, so ctl_socket_path does not parse it again. */
void ctl_prime_socket(const char *configured);

/* method target [body JSON] to the daemon within timeout_ms.  Returns 0
 * with *out filled (any HTTP status), or the CLI exit code (3 no daemon,
 * 4 timed out, 1 otherwise) after printing one line to stderr (unless
 * quiet: the caller falls back, as preflight does). */
int ctl_call(const config_paths *paths, const char *method, const char *target, const char *body, int64_t timeout_ms,
             bool quiet, http_reply *out);

/* As ctl_call, quiet, for a program that shows errors its own way (the
 * MCP server, the TUI): on failure the exit code with msg filled with the
 * line ctl_call would print (without "gpumod: "): "no daemon is running
 * (socket S); start one with 'gpumod serve'", "... (the daemon stopped or
 * restarted)", a permission or a timeout. */
int ctl_request(const config_paths *paths, const char *method, const char *target, const char *body,
                int64_t timeout_ms, http_reply *out, char *msg, size_t msglen);

/* ctl_stream, quiet, with the failure's line in msg as ctl_request. */
int ctl_stream_msg(const config_paths *paths, const char *target, const http_stream_opts *o, http_reply *out,
                   char *msg, size_t msglen);

/* GET target as a stream (http_request_stream): 0 with *out's status
 * once the stream has ended, a callback has stopped it or *stop was set
 * by a signal; else the exit code after one line on stderr (unless
 * quiet), as ctl_call. */
int ctl_stream(const config_paths *paths, const char *target, const http_stream_opts *o, bool quiet, http_reply *out);

/* The exit code for an answered request (docs/interfaces.md): 2xx 0;
 * 400/404/405 2; 409 1; 422 1 (config_invalid, need_unknown: 2); 503 3;
 * 504 4; anything else 1. */
int ctl_exit_code(const http_reply *r);

/* "gpumod: WHAT: message" (and the detail's errors, one per line) from the
 * daemon's error JSON; returns ctl_exit_code. */
int ctl_fail(const http_reply *r, const char *what);

/* The reply's body parsed, or NULL (after "gpumod: WHAT: bad JSON from
 * the daemon" on stderr).  Caller deletes. */
cJSON *ctl_json(const http_reply *r, const char *what);

/* Print the body as it came (the daemon's JSON, newline-terminated). */
void ctl_print_body(const http_reply *r);

/* Accessors that tolerate missing keys. */
const char *jstr(const cJSON *o, const char *key);          /* NULL when absent or not a string */
double jnum(const cJSON *o, const char *key, double dflt);  /* dflt when absent or not a number */
bool jnull(const cJSON *o, const char *key);                /* absent or null */

/* The default deadline of a quick request, ms. */
#define CTL_QUICK_MS 5000

#endif
