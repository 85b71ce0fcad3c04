/* settings.c - gpumod.yaml: the whole settings table of docs/interfaces.md.
 *
 * One declarative table (settings_fields) drives parsing, defaults,
 * `config show` and the reference in docs/configuration.md.  Paths whose
 * defaults depend on other values (log_dir, socket) stay NULL in the
 * table and are resolved by the loader, where the precedence rules live. */
#include "config/settings.h"
#include "config/schema.h"

#include <stddef.h>
#include <stdlib.h>

#define S(m) offsetof(settings, m)
#define MB_MAX 16777216.0 /* 16 TiB in MiB */
#define DUR(lo, hi) .min = (lo), .max = (hi)

const char *const activation_names[] = {"switch", "start", "reject", NULL};
static const char *const runner_names[] = {"spawn", "systemd", NULL};

static const field watchdog_fields[] = {
    {"mem_available_floor_mb", F_INT, S(memory.watchdog_floor_mb), 0, MB_MAX, .deflt = "2048",
     .doc = "stop the loading/offending service before MemAvailable falls below this"},
    {"psi_full_avg10_max", F_FLOAT, S(memory.watchdog_psi_full_avg10_max), 0, 100, .deflt = "20",
     .doc = "memory PSI full avg10 (%) above which the watchdog acts"},
    {"interval", F_DURATION, S(memory.watchdog_interval_ms), DUR(10, 60000), .deflt = "500ms",
     .doc = "poll interval while services load and run"},
    {"over_need_factor", F_FLOAT, S(memory.watchdog_over_need_factor), 1, 100, .deflt = "1.25",
     .doc = "stop a service whose usage passes its admitted need x factor + over_need_margin_mb"},
    {"over_need_margin_mb", F_INT, S(memory.watchdog_over_need_margin_mb), 0, MB_MAX, .deflt = "1024",
     .doc = "MiB a service may use past its admitted need x over_need_factor"},
    {NULL},
};

static const field memory_fields[] = {
    {"host_factor", F_FLOAT, S(memory.host_factor), 1, 10, .deflt = "1.1",
     .doc = "host need x factor + host_margin_mb must fit in MemAvailable"},
    {"host_margin_mb", F_INT, S(memory.host_margin_mb), 0, MB_MAX, .deflt = "1024", .doc = "MiB kept free on the host"},
    {"gpu_margin_mb", F_INT, S(memory.gpu_margin_mb), 0, MB_MAX, .deflt = "1024", .doc = "MiB kept free per discrete GPU"},
    {"uma_reserve_mb", F_INT, S(memory.uma_reserve_mb), 0, MB_MAX, .deflt = "8192",
     .doc = "unified memory: MiB left for the OS and the operator"},
    {"unified_sleep", F_BOOL, S(memory.unified_sleep), .deflt = "false",
     .doc = "act on sleep_mode l1/l2 on a unified-memory host (GB10); off: such services stop, since a level-1 "
            "sleep frees nothing there and wakes have crashed the engine and the host"},
    {"min_contig_mb", F_INT, S(memory.min_contig_mb), 0, MB_MAX, .deflt = "2048",
     .doc = "free MiB in blocks of 2 MiB and larger; applied when an NVIDIA driver is present"},
    {"psi_some_avg10_max", F_FLOAT, S(memory.psi_some_avg10_max), 0, 100, .deflt = "10",
     .doc = "memory PSI some avg10 (%) above which starts are refused"},
    {"watchdog", F_SECTION, 0, .sub = watchdog_fields, .doc = "the memory watchdog"},
    {"nvml_timeout", F_DURATION, S(memory.nvml_timeout_ms), DUR(10, 600000), .deflt = "2s",
     .doc = "deadline of one NVML call; an overrun marks NVML hung"},
    {"verify_freed_timeout", F_DURATION, S(memory.verify_freed_timeout_ms), DUR(0, 3600000), .deflt = "60s",
     .doc = "how long a stop waits for the memory to come back"},
    {NULL},
};

static const field supervisor_fields[] = {
    {"runner", F_ENUM, S(supervisor.runner), .names = runner_names, .deflt = "spawn",
     .doc = "how services run: children of the daemon, or systemd units"},
    {"health_interval", F_DURATION, S(supervisor.health_interval_ms), DUR(10, 3600000), .deflt = "5s",
     .doc = "health probe interval of a ready service"},
    {"health_failures", F_INT, S(supervisor.health_failures), 1, 1000, .deflt = "3",
     .doc = "consecutive failed probes that make a service unhealthy"},
    {"startup_timeout", F_DURATION, S(supervisor.startup_timeout_ms), DUR(100, 86400000), .deflt = "600s",
     .doc = "load deadline; a preset's startup_timeout wins"},
    {"stop_timeout", F_DURATION, S(supervisor.stop_timeout_ms), DUR(10, 3600000), .deflt = "30s",
     .doc = "SIGTERM to SIGKILL delay"},
    {"max_restarts", F_INT, S(supervisor.restart.max_restarts), 0, 1000, .deflt = "5",
     .doc = "restarts allowed within restart_window"},
    {"restart_window", F_DURATION, S(supervisor.restart.window_ms), DUR(1, 86400000), .deflt = "10m",
     .doc = "the window max_restarts counts in"},
    {"backoff_initial", F_DURATION, S(supervisor.restart.backoff_initial_ms), DUR(0, 3600000), .deflt = "1s",
     .doc = "first restart delay; doubles each time"},
    {"backoff_max", F_DURATION, S(supervisor.restart.backoff_max_ms), DUR(0, 3600000), .deflt = "60s",
     .doc = "restart delay cap"},
    {"log_max_mb", F_INT, S(supervisor.log_max_mb), 1, 1048576, .deflt = "64", .doc = "per-service log size before rotation"},
    {"log_keep", F_INT, S(supervisor.log_keep), 0, 100, .deflt = "3", .doc = "rotated logs kept"},
    {"slots_max_mb", F_INT, S(supervisor.slots_max_mb), 0, MB_MAX, .deflt = "8192",
     .doc = "<state_dir>/slots (slot_save's prompt caches): the oldest files go past this size"},
    {NULL},
};

static const field switch_fields[] = {
    {"drain_timeout", F_DURATION, S(sw.drain_timeout_ms), DUR(0, 3600000), .deflt = "30s",
     .doc = "how long in-flight requests of leaving services may finish"},
    {"timeout", F_DURATION, S(sw.timeout_ms), DUR(100, 86400000), .deflt = "15m", .doc = "a whole switch's deadline"},
    {"startup_mode", F_STR, S(sw.startup_mode), .deflt = "last", .doc = "none | last | <mode id>: the mode at daemon start"},
    {"startup_retry", F_DURATION, S(sw.startup_retry_ms), DUR(0, 86400000), .deflt = "5m",
     .doc = "how long the start-up mode's switch is retried, with backoff, when it is refused or fails (0: once)"},
    {NULL},
};

static const field router_fields[] = {
    {"enabled", F_BOOL, S(router.enabled), .deflt = "true", .doc = "serve the OpenAI-compatible endpoint"},
    {"listen", F_STR, S(router.listen), .deflt = "127.0.0.1:8010",
     .doc = "HOST:PORT; a non-loopback address needs api_keys_env or --insecure"},
    {"api_keys_env", F_STR, S(router.api_keys_env), .doc = "name of an env var holding comma-separated API keys"},
    {"default", F_STR, S(router.default_service), .doc = "service id that \"model\": \"default\" goes to"},
    {"activation", F_ENUM, S(router.activation), .names = activation_names, .deflt = "switch",
     .doc = "what a request for a stopped service does: switch | start | reject"},
    {"queue_max", F_INT, S(router.queue_max), 0, 1000000, .deflt = "64", .doc = "requests waiting for an activation"},
    {"queue_timeout", F_DURATION, S(router.queue_timeout_ms), DUR(1, 86400000), .deflt = "5m",
     .doc = "how long a request may wait for an activation"},
    {"idle_timeout", F_DURATION, S(router.idle_timeout_ms), DUR(0, 2592000000LL), .deflt = "0",
     .doc = "services without their own idle_timeout sleep (sleep_mode) or stop after this long without a "
            "request (forwarded, or counted by the engine's /metrics); 0: never"},
    {"max_body_mb", F_INT, S(router.max_body_mb), 1, 4096, .deflt = "64", .doc = "request body limit (413)"},
    {"max_header_kb", F_INT, S(router.max_header_kb), 1, 1024, .deflt = "32", .doc = "request header limit (431)"},
    {"header_timeout", F_DURATION, S(router.header_timeout_ms), DUR(1, 3600000), .deflt = "10s",
     .doc = "slow client deadline for the header (408)"},
    {"body_timeout", F_DURATION, S(router.body_timeout_ms), DUR(1, 3600000), .deflt = "60s",
     .doc = "slow client deadline for the body (408)"},
    {"max_connections", F_INT, S(router.max_connections), 1, 1000000, .deflt = "1024", .doc = "connection cap (503)"},
    {"cors_origins", F_STRV, S(router.cors_origins), .doc = "origins answered in CORS preflight; empty: no CORS"},
    {NULL},
};

#define DRV_BIN(name, idx, def)                                                                                \
    static const field name[] = {                                                                              \
        {"binary", F_STR, S(driver_binary[idx]), .flags = FL_PATH, .deflt = def,                               \
         .doc = "program name (looked up in PATH) or absolute path"},                                          \
        {NULL},                                                                                                \
    }
DRV_BIN(drv_llamacpp, DRV_LLAMACPP, "llama-server");
DRV_BIN(drv_vllm, DRV_VLLM, "vllm");
DRV_BIN(drv_fastapi, DRV_FASTAPI, "uvicorn");
DRV_BIN(drv_docker, DRV_DOCKER, "docker");

static const field drivers_fields[] = {
    {"llamacpp", F_SECTION, 0, .sub = drv_llamacpp, .doc = "llama.cpp's llama-server"},
    {"vllm", F_SECTION, 0, .sub = drv_vllm, .doc = "vLLM"},
    {"fastapi", F_SECTION, 0, .sub = drv_fastapi, .doc = "uvicorn"},
    {"docker", F_SECTION, 0, .sub = drv_docker, .doc = "the docker client"},
    {NULL},
};

const field settings_fields[] = {
    {"state_dir", F_STR, S(state_dir), .flags = FL_PATH,
     .doc = "default ~/.local/state/gpumod; GPUMOD_STATE_DIR and $STATE_DIRECTORY win"},
    {"log_dir", F_STR, S(log_dir), .flags = FL_PATH, .doc = "default <state_dir>/logs"},
    {"socket", F_STR, S(socket), .flags = FL_PATH,
     .doc = "control socket; default $XDG_RUNTIME_DIR/gpumod.sock, else <state_dir>/gpumod.sock"},
    {"socket_group", F_STR, S(socket_group), .doc = "group whose members may use the control socket"},
    {"events_keep", F_INT, S(events_keep), 0, 1000000000, .deflt = "100000",
     .doc = "events kept in the state database; the oldest beyond are pruned (0: no row limit)"},
    {"events_max_age", F_DURATION, S(events_max_age_ms), DUR(0, 315360000000), .deflt = "30d",
     .doc = "events older than this are pruned (0: no age limit)"},
    {"models_dir", F_STR, S(models_dir), .flags = FL_PATH | FL_ENVEXP,
     .doc = "where `model pull` writes; default $XDG_DATA_HOME/gpumod/models (~/.local/share/gpumod/models)"},
    {"hf_endpoint", F_STR, S(hf_endpoint), .deflt = "https://huggingface.co",
     .doc = "the Hugging Face Hub (or a mirror) that model fit/pull/search ask; HF_ENDPOINT wins; "
            "http:// only on loopback"},
    {"drivers", F_SECTION, 0, .sub = drivers_fields, .doc = "engine binaries"},
    {"memory", F_SECTION, 0, .sub = memory_fields, .doc = "the memory gate and watchdog"},
    {"supervisor", F_SECTION, 0, .sub = supervisor_fields, .doc = "service lifecycle"},
    {"switch", F_SECTION, 0, .sub = switch_fields, .doc = "mode switches"},
    {"router", F_SECTION, 0, .sub = router_fields, .doc = "the OpenAI-compatible endpoint"},
    {NULL},
};

void settings_defaults(settings *s)
{
    *s = (settings){0};
    schema_defaults(settings_fields, s);
}

void settings_release(settings *s)
{
    schema_release(settings_fields, s);
}
