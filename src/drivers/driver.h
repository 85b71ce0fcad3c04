/* driver.h - what it takes to run a preset: the argv, the environment
 * additions and the working directory, per driver (llamacpp, vllm,
 * fastapi, docker, command, remote).
 *
 * Drivers build values and start nothing: the supervisor spawns, `config
 * show` prints (after redact_argv/redact_env), the config hash digests,
 * `config check` feeds the argv to flags_check().  A preset reaches a
 * driver with every default already filled in by the config loader, so a
 * driver takes its fields as final and only rejects what cannot be built
 * (no image, no model, an unknown placeholder). */
#ifndef GPUMOD_DRIVER_H
#define GPUMOD_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "util/buf.h"
#include "util/strv.h"

typedef struct launch {
    strv argv; /* argv[0]: the binary as configured (resolving it is the
                  caller's job); empty for a driver without a process */
    strv env;  /* KEY=VALUE, set on top of the daemon's environment */
    char *cwd; /* NULL: the daemon's */
} launch;

#define LAUNCH_INIT                                                                                \
    {                                                                                              \
        STRV_INIT, STRV_INIT, NULL                                                                 \
    }

/* Fill out (initialised by the caller with LAUNCH_INIT, or released) for
 * preset p.  Returns 0, or -1 with err set and out left empty.  The
 * remote driver returns 0 with an empty argv.  Every driver appends
 * p->extra_args and then p->args to its own argv, and p->env to its
 * environment (overriding the driver's defaults). */
int driver_launch(const preset *p, const settings *s, launch *out, char *err, size_t errlen);
void launch_release(launch *l);

/* Whether the engine of argv (a driver_launch's) serves embeddings
 * rather than generations: llama-server's --embedding(s), vLLM's
 * --runner pooling or --task embed/embedding/reward/classify/score, or
 * --convert embed.  The canary checks such a service with embeddings. */
bool driver_argv_embeds(const strv *argv);

/* p->health_endpoint, else "/health".  Borrowed from p. */
const char *driver_health_path(const preset *p);

/* How the service stops.  Returns 0 for drivers that stop by signals to
 * the process group (stop and rm left empty), 1 when the stop is commands
 * to run in order: for docker `docker stop -t N gpumod-ID` (N: timeout_ms
 * rounded up to whole seconds) then `docker rm -f gpumod-ID`, whose
 * "no such container" is not an error.  The rm command is also what to
 * run before a start, to clear a container a crash left behind.  -1 with
 * err when p cannot be stopped (unknown driver, no binary). */
int driver_stop_argv(const preset *p, const settings *s, int64_t timeout_ms, strv *stop, strv *rm,
                     char *err, size_t errlen);

/* The arguments that make the driver's binary list its flags, for
 * flags_check(): {"--help"} for llama-server and uvicorn, {"serve",
 * "--help=all"} for vLLM.  NULL for drivers whose argv is not the
 * binary's own flags (docker, command, remote). */
const char *const *driver_help_args(driver_kind k);

/* ---- Shared by the driver files; not for callers outside src/drivers. */

int driver_llamacpp_build(const preset *p, const settings *s, launch *out, char *err,
                          size_t errlen);
int driver_vllm_build(const preset *p, const settings *s, launch *out, char *err, size_t errlen);
int driver_fastapi_build(const preset *p, const settings *s, launch *out, char *err, size_t errlen);
int driver_docker_build(const preset *p, const settings *s, launch *out, char *err, size_t errlen);
int driver_command_build(const preset *p, const settings *s, launch *out, char *err, size_t errlen);

/* Format into err and return -1. */
int driver_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Push the configured binary of p's driver as argv[0]; -1 when none. */
int driver_push_binary(const preset *p, const settings *s, strv *argv, char *err, size_t errlen);
/* CUDA_DEVICE_ORDER=PCI_BUS_ID, and CUDA_VISIBLE_DEVICES=a,b when p->devices
 * is not empty. */
void driver_env_devices(const preset *p, strv *env);
/* p->host, else "127.0.0.1". */
const char *driver_host(const preset *p);
/* Join v with sep into b. */
void driver_join(buf *b, const strv *v, const char *sep);
/* The shortest decimal text that reads back as v: 0.085, 0.9, 1. */
void driver_push_double(strv *argv, double v);

#endif
