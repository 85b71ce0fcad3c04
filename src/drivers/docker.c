/* docker.c - a container in the foreground: `docker run --rm --init --name
 * gpumod-ID --gpus G -p HOST:PORT:CPORT [-e KEY]... [-v VOL]... IMAGE
 * [args]...`.
 *
 * The docker CLI stays the supervised process, so stdout/stderr, exit
 * status and the process group work as for every other driver, and the
 * container dies with `docker stop` (see driver_stop_argv).  Environment
 * values never sit in argv: `-e KEY` makes the CLI copy KEY from its own
 * environment, which the launch env carries, so a token is not visible in
 * `ps`.  --gpus is CSV-parsed by docker, so a device list is quoted inside
 * the word ("device=0,1"), as docker's own documentation writes it. */
#include "drivers/driver.h"

#include <inttypes.h>
#include <string.h>

static void push_gpus(const preset *p, strv *a)
{
    strv_push(a, "--gpus");
    if (p->docker.gpus && *p->docker.gpus) {
        strv_push(a, p->docker.gpus);
    } else if (p->devices.n) {
        buf b = BUF_INIT;
        buf_adds(&b, "\"device=");
        driver_join(&b, &p->devices, ",");
        buf_addc(&b, '"');
        strv_push_own(a, buf_detach(&b));
    } else {
        strv_push(a, "all");
    }
}

int driver_docker_build(const preset *p, const settings *s, launch *out, char *err, size_t errlen)
{
    const docker_opts *o = &p->docker;
    strv *a = &out->argv;
    if (!o->image || !*o->image)
        return driver_fail(err, errlen, "preset '%s': docker driver needs unit_vars.image", p->id);
    if (p->port <= 0)
        return driver_fail(err, errlen, "preset '%s': docker driver needs a port", p->id);
    if (driver_push_binary(p, s, a, err, errlen) < 0) return -1;

    strv_push(a, "run");
    strv_push(a, "--rm");
    strv_push(a, "--init");
    strv_push(a, "--name");
    strv_pushf(a, "gpumod-%s", p->id);
    push_gpus(p, a);
    const char *host = driver_host(p);
    int64_t cport = o->container_port > 0 ? o->container_port : p->port;
    strv_push(a, "-p");
    strv_pushf(a, strchr(host, ':') ? "[%s]:%" PRId64 ":%" PRId64 : "%s:%" PRId64 ":%" PRId64, host,
               p->port, cport);
    for (size_t i = 0; i < p->env.n; i++) {
        strv_push(a, "-e");
        strv_push(a, p->env.v[i].key);
    }
    for (size_t i = 0; i < o->volumes.n; i++) {
        strv_push(a, "-v");
        strv_push(a, o->volumes.v[i]);
    }
    strv_push(a, o->image);
    return 0;
}
