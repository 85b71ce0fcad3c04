/* command.c - any program: p->command is the argv template.
 *
 * Placeholders are substituted inside each word, never by a shell, so a
 * value with spaces stays one word and nothing is ever re-split:
 * {host}, {port}, {model_path}, {id}; `{{` and `}}` are literal braces.
 * Anything else in braces is an error that names the word, because a
 * typo such as {prot} would otherwise reach the program as text and show
 * up only as a service that never becomes healthy. */
#include "drivers/driver.h"

#include <inttypes.h>
#include <string.h>

/* Substitute in one word; -1 with err set. */
static int expand_word(const preset *p, const char *w, buf *b, char *err, size_t errlen)
{
    for (const char *c = w; *c;) {
        if (c[0] == '{' && c[1] == '{') {
            buf_addc(b, '{');
            c += 2;
        } else if (c[0] == '}' && c[1] == '}') {
            buf_addc(b, '}');
            c += 2;
        } else if (c[0] == '}') {
            return driver_fail(err, errlen,
                               "preset '%s': command word '%s' has a lone '}' (write '}}')", p->id,
                               w);
        } else if (c[0] == '{') {
            const char *end = strchr(c + 1, '}');
            if (!end)
                return driver_fail(err, errlen,
                                   "preset '%s': command word '%s' has an unclosed '{' "
                                   "(write '{{' for a brace)",
                                   p->id, w);
            size_t n = (size_t)(end - c - 1);
            const char *name = c + 1;
            if (n == 4 && !strncmp(name, "host", 4)) {
                buf_adds(b, driver_host(p));
            } else if (n == 4 && !strncmp(name, "port", 4)) {
                if (p->port <= 0)
                    return driver_fail(err, errlen,
                                       "preset '%s': command word '%s' uses {port} but the "
                                       "preset has no port",
                                       p->id, w);
                buf_printf(b, "%" PRId64, p->port);
            } else if (n == 10 && !strncmp(name, "model_path", 10)) {
                if (!p->model_path)
                    return driver_fail(err, errlen,
                                       "preset '%s': command word '%s' uses {model_path} but "
                                       "model_path is not set",
                                       p->id, w);
                buf_adds(b, p->model_path);
            } else if (n == 2 && !strncmp(name, "id", 2)) {
                buf_adds(b, p->id);
            } else {
                return driver_fail(err, errlen,
                                   "preset '%s': command word '%s': unknown placeholder {%.*s} "
                                   "(known: {host} {port} {model_path} {id})",
                                   p->id, w, (int)n, name);
            }
            c = end + 1;
        } else {
            buf_addc(b, *c++);
        }
    }
    return 0;
}

int driver_command_build(const preset *p, const settings *s, launch *out, char *err, size_t errlen)
{
    (void)s;
    if (!p->command.n || !*p->command.v[0])
        return driver_fail(err, errlen, "preset '%s': command driver needs a non-empty command",
                           p->id);
    for (size_t i = 0; i < p->command.n; i++) {
        buf b = BUF_INIT;
        if (expand_word(p, p->command.v[i], &b, err, errlen) < 0) {
            buf_release(&b);
            return -1;
        }
        strv_push_own(&out->argv, buf_detach(&b));
    }
    if (!*out->argv.v[0])
        return driver_fail(err, errlen, "preset '%s': command word '%s' expands to nothing", p->id,
                           p->command.v[0]);
    driver_env_devices(p, &out->env);
    return 0;
}
