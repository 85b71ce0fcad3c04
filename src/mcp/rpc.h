/* rpc.h - JSON-RPC 2.0 as MCP's stdio transport frames it: one message a
 * line, UTF-8, no embedded newline.  Strict like the router's parser:
 * a line is read with util/jstrict.h (one value, no duplicate key, no
 * raw control byte), "jsonrpc" must be exactly "2.0", an id a string or
 * an integer (never null, never a fraction), a method a non-empty string,
 * params an object when present (MCP never sends positional params), and
 * a message is a request, a notification or a response, never a mixture.
 * Pure: no I/O; the replies are built into caller buffers. */
#ifndef GPUMOD_MCP_RPC_H
#define GPUMOD_MCP_RPC_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "util/buf.h"

/* JSON-RPC's codes, and MCP's "resource not found". */
enum {
    RPC_PARSE_ERROR = -32700,
    RPC_INVALID_REQUEST = -32600,
    RPC_METHOD_NOT_FOUND = -32601,
    RPC_INVALID_PARAMS = -32602,
    RPC_INTERNAL_ERROR = -32603,
    RPC_RESOURCE_NOT_FOUND = -32002,
};

/* The longest line read: a bigger one is answered -32700 and skipped to
 * its newline (MCP messages are small; a tool's arguments are bounded by
 * their schemas far below this). */
#define RPC_MAX_LINE (4u << 20)

typedef enum rpc_kind {
    RPC_REQUEST,      /* method and id */
    RPC_NOTIFICATION, /* method, no id */
    RPC_RESPONSE,     /* result or error, with id: the client answering us */
    RPC_BAD,          /* answer with code/message (id when it could be read, else null) */
} rpc_kind;

typedef struct rpc_msg {
    rpc_kind kind;
    cJSON *root;         /* owned: the whole message (or NULL) */
    const cJSON *id;     /* in root: a string or a number; NULL when absent or unreadable */
    const char *method;  /* in root */
    const cJSON *params; /* in root: an object, or NULL */
    int code;            /* RPC_BAD */
    bool no_reply;       /* RPC_BAD shaped as a notification (a method, no id) or as a
                          * response (result or error, no method): never answered */
    char message[256];   /* RPC_BAD */
} rpc_msg;

/* Classify one value (an element of a batch, or a line's only value).
 * Takes ownership of v (held in m->root). */
void rpc_classify(cJSON *v, rpc_msg *m);

/* Parse one line (len bytes, without its newline).  Returns 0 with *m
 * filled (any kind), or 1 when the line is a batch (a JSON array): then
 * *batch owns it and m is untouched.  A line that is not JSON is RPC_BAD
 * with -32700. */
int rpc_parse_line(const char *p, size_t len, rpc_msg *m, cJSON **batch);

void rpc_msg_release(rpc_msg *m);

/* {"jsonrpc":"2.0","id":ID,"result":RESULT}; takes result. */
char *rpc_result(const cJSON *id, cJSON *result);
/* {"jsonrpc":"2.0","id":ID|null,"error":{"code","message"[,"data"]}};
 * takes data (may be NULL). */
char *rpc_error(const cJSON *id, int code, const char *message, cJSON *data);
/* {"jsonrpc":"2.0","method":M,"params":P}; takes params. */
char *rpc_notification(const char *method, cJSON *params);

#endif
