/* reply.h - the control API's answers, one way for every route file
 * (api.c, api_modes.c, api_tune.c, api_ebench.c): a JSON body with a
 * closing newline, and the error shape of docs/api.md
 * {"error": {"code", "message", "detail"?}}. */
#ifndef GPUMOD_DAEMON_REPLY_H
#define GPUMOD_DAEMON_REPLY_H

#include "net/server.h"
#include "util/buf.h"

/* b (JSON text) with a newline, as the answer with status. */
void api_reply(srv_conn *c, int status, buf *b);
/* The error object into b; detail_json (JSON text) may be NULL or "". */
void api_error_body(buf *b, const char *code, const char *message, const char *detail_json);
/* An error answer: the message from fmt. */
void api_error(srv_conn *c, int status, const char *code, const char *detail_json, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
