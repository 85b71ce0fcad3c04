/* reply.c - the control API's answers (reply.h). */
#include "daemon/reply.h"

#include <stdarg.h>

void api_reply(srv_conn *c, int status, buf *b)
{
    buf_addc(b, '\n');
    srv_respond(c, status, "application/json", b->p, b->len);
}

void api_error_body(buf *b, const char *code, const char *message, const char *detail_json)
{
    buf_adds(b, "{\"error\":{\"code\":");
    buf_json_str(b, code);
    buf_adds(b, ",\"message\":");
    buf_json_str(b, message);
    if (detail_json && *detail_json) {
        buf_adds(b, ",\"detail\":");
        buf_adds(b, detail_json);
    }
    buf_adds(b, "}}");
}

void api_error(srv_conn *c, int status, const char *code, const char *detail_json, const char *fmt, ...)
{
    buf msg = BUF_INIT, b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    api_error_body(&b, code, msg.p, detail_json);
    api_reply(c, status, &b);
    buf_release(&msg);
    buf_release(&b);
}
