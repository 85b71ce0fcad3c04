/* fastapi.c - a FastAPI app under uvicorn: `uvicorn APP --host H --port P
 * [--workers N]`, run from the app's working directory so that APP
 * ("main:app") imports from there.  uvicorn prints its flags with --help,
 * so `config check` can vet user args as for the engines. */
#include "drivers/driver.h"

#include <inttypes.h>

int driver_fastapi_build(const preset *p, const settings *s, launch *out, char *err, size_t errlen)
{
    const fastapi_opts *o = &p->fastapi;
    strv *a = &out->argv;
    if (!o->app_module || !*o->app_module)
        return driver_fail(err, errlen, "preset '%s': fastapi needs unit_vars.app_module", p->id);
    if (driver_push_binary(p, s, a, err, errlen) < 0) return -1;
    strv_push(a, o->app_module);
    strv_push(a, "--host");
    strv_push(a, driver_host(p));
    strv_push(a, "--port");
    strv_pushf(a, "%" PRId64, p->port);
    if (o->workers > 0) {
        strv_push(a, "--workers");
        strv_pushf(a, "%" PRId64, o->workers);
    }
    if (o->working_dir) out->cwd = xstrdup(o->working_dir);
    driver_env_devices(p, &out->env);
    return 0;
}
