/* hash.c - config hash.
 *
 * Canonical form, one field a line, every value JSON-escaped so no value
 * can forge a line: binary (absolute when found in PATH), each argv word,
 * the environment additions sorted, the devices, the model file's size and
 * mtime.  Aliases (the words of --alias and --served-model-name), restart
 * policy, health settings and activation are left out: they do not change
 * what the process takes.  "v1" leads, so a later
 * change of the form changes every hash instead of colliding. */
#include "drivers/hash.h"
#include "drivers/check.h"
#include "drivers/driver.h"
#include "util/sha256.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void line(buf *b, const char *key, const char *val)
{
    buf_adds(b, key);
    buf_addc(b, '=');
    buf_json_str(b, val);
    buf_addc(b, '\n');
}

int config_hash(const preset *p, const settings *s, char out[65], buf *canonical, char *err, size_t errlen)
{
    launch l = LAUNCH_INIT;
    if (driver_launch(p, s, &l, err, errlen)) return -1;
    buf b = BUF_INIT;
    buf_adds(&b, "gpumod-config-hash v1\n");
    line(&b, "driver", driver_names[p->driver]);
    if (l.argv.n) {
        char *abs = find_program(l.argv.v[0]);
        line(&b, "binary", abs ? abs : l.argv.v[0]);
        free(abs);
    }
    for (size_t i = 1; i < l.argv.n; i++) {
        /* model names route requests; they do not change what loads */
        if (!strcmp(l.argv.v[i], "--alias") || !strcmp(l.argv.v[i], "-a")) {
            i++;
            continue;
        }
        if (!strcmp(l.argv.v[i], "--served-model-name")) {
            while (i + 1 < l.argv.n && l.argv.v[i + 1][0] != '-') i++;
            continue;
        }
        line(&b, "arg", l.argv.v[i]);
    }
    if (l.env.n) {
        char **env = xmalloc(l.env.n * sizeof *env);
        memcpy(env, l.env.v, l.env.n * sizeof *env);
        qsort(env, l.env.n, sizeof *env, cmp_str);
        for (size_t i = 0; i < l.env.n; i++) line(&b, "env", env[i]);
        free(env);
    }
    for (size_t i = 0; i < p->devices.n; i++) line(&b, "device", p->devices.v[i]);
    if (p->driver == DRV_REMOTE && p->remote.base_url) line(&b, "remote", p->remote.base_url);
    const char *model = p->model_path ? p->model_path : p->llama.models_dir;
    if (model) {
        struct stat st;
        if (stat(model, &st) == 0)
            buf_printf(&b, "model_size=%lld\nmodel_mtime=%lld.%09ld\n", (long long)st.st_size,
                       (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        else
            buf_adds(&b, "model_size=-1\n");
    }
    sha256_hex(b.p, b.len, out);
    if (canonical) {
        buf_clear(canonical);
        buf_add(canonical, b.p, b.len);
    }
    buf_release(&b);
    launch_release(&l);
    return 0;
}
