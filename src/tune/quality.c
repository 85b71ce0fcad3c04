/* quality.c (tune) - gpumod eval as a subprocess (quality.h). */
#include "tune/quality.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/run.h"
#include "util/strv.h"

static int self_path(char *out, size_t len, char *err, size_t errlen)
{
    ssize_t n = readlink("/proc/self/exe", out, len - 1);
    if (n <= 0) {
        snprintf(err, errlen, "cannot find this program (/proc/self/exe) to run gpumod-eval");
        return -1;
    }
    out[n] = 0;
    return 0;
}

/* the output's last non-empty line */
static void last_line(buf *out, char *dst, size_t len)
{
    while (out->len && out->p[out->len - 1] == '\n') out->p[--out->len] = 0;
    const char *l = out->len ? strrchr(out->p, '\n') : NULL;
    snprintf(dst, len, "%s", out->len ? (l ? l + 1 : out->p) : "");
}

int tune_eval_run(const tune_load *l, const char *suite, const char *out_json, const volatile int *cancel, char *err,
                  size_t errlen)
{
    char self[PATH_MAX];
    if (self_path(self, sizeof self, err, errlen)) return -1;
    strv a = STRV_INIT;
    strv_push(&a, "gpumod-eval");
    strv_push(&a, l->url);
    strv_pushf(&a, "--suite=%s", suite);
    if (l->model) strv_pushf(&a, "--model=%s", l->model);
    strv_pushf(&a, "--timeout=%g", l->timeout_s);
    strv_pushf(&a, "--json=%s", out_json);
    strv_push(&a, "--no-store");
    strv_push(&a, "-q");
    run_opts o = {.timeout_ms = 3600 * 1000, .file = self, .max_output = 65536, .cancel = cancel};
    buf out = BUF_INIT;
    run_result res;
    char rerr[256], line[512];
    int rc = run_capture(a.v, &o, &out, &res, rerr, sizeof rerr);
    if (rc) {
        last_line(&out, line, sizeof line);
        snprintf(err, errlen, "gpumod eval: %s%s%s", rerr, *line ? ": " : "", line);
    }
    buf_release(&out);
    strv_release(&a);
    return rc ? -1 : 0;
}

int tune_eval_compare(const char *a, const char *b, char *msg, size_t msglen)
{
    char self[PATH_MAX];
    if (self_path(self, sizeof self, msg, msglen)) return -1;
    char *argv[] = {"gpumod-eval", "compare", (char *)a, (char *)b, NULL};
    run_opts o = {.timeout_ms = 60000, .file = self, .max_output = 65536};
    buf out = BUF_INIT;
    run_result res;
    char rerr[256], line[512];
    run_capture(argv, &o, &out, &res, rerr, sizeof rerr);
    last_line(&out, line, sizeof line);
    int rc;
    if (res.exited && res.exit_code == 0) {
        snprintf(msg, msglen, "%s", line);
        rc = 0;
    } else if (res.exited && res.exit_code == 1) {
        snprintf(msg, msglen, "%s", line);
        rc = 1;
    } else {
        snprintf(msg, msglen, "eval compare: %s%s%s", rerr, *line ? ": " : "", line);
        rc = -1;
    }
    buf_release(&out);
    return rc;
}
