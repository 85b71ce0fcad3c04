/* test_snapshot.c - snapshot_take end to end over /proc fixtures and the
 * fakes: NVML figures, unified memory from MemAvailable, the nvidia-smi
 * fallback, no NVIDIA at all, the driver flag, a hung NVML (bounded, and
 * answered at once while still stuck, then recovered), a hanging or
 * garbage nvidia-smi, and a real fakellm whose GPU memory shows up under
 * its pid and is released release_delay_ms after it is killed; without any
 * sign of an NVIDIA driver the default library is never loaded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testenv.h"
#include "host/host.h"
#include "util/buf.h"

#define MIB (1024ULL * 1024ULL)
#define KIB 1024ULL

/* tests/fixtures/proc/healthy/meminfo */
#define HEALTHY_TOTAL (24684092 * KIB)
#define HEALTHY_AVAILABLE (24346604 * KIB)

static char *tmpdir, *state_path, *lib_path, *smi_path, *healthy;

static char *script(const char *name, const char *body)
{
    char *p = xasprintf("%s/%s", tmpdir, name);
    char *text = xasprintf("#!/bin/sh\n%s\n", body);
    write_file(p, text, 0755);
    free(text);
    return p;
}

#define ONE_GPU                                                                              \
    "{\"devices\": [{\"index\": 0, \"uuid\": \"GPU-aaaa\", \"name\": \"Fake 24GB\","            \
    " \"total_mb\": 24576, \"base_used_mb\": 300, \"memory\": \"%s\"}],"                        \
    " \"processes\": [{\"pid\": %d, \"device\": 0, \"used_mb\": 2000}]%s}"

static void write_state(const char *memory, const char *extra)
{
    char json[1024];
    snprintf(json, sizeof json, ONE_GPU, memory, (int)getpid(), extra);
    write_file(state_path, json, 0644);
}

/* The fakes, the healthy /proc fixture, nothing from the environment. */
static snapshot_opts opts(void)
{
    return (snapshot_opts){.proc_root = healthy,
                           .nvml_lib = lib_path,
                           .smi_path = smi_path,
                           .nvml_timeout_ms = 5000 * scale(),
                           .smi_timeout_ms = 5000 * scale()};
}

static void host_is_healthy(const snapshot *s)
{
    assert_true(s->host.meminfo_ok);
    assert_int_equal(s->host.mem_total, HEALTHY_TOTAL);
    assert_int_equal(s->host.mem_available, HEALTHY_AVAILABLE);
    assert_true(s->host.buddyinfo_ok);
    assert_true(s->host.psi_ok);
}

/* Paths from the environment when opts leave them NULL. */
static void nvml_from_env(void **state)
{
    (void)state;
    write_state("ok", "");
    setenv("GPUMOD_PROC_ROOT", healthy, 1);
    setenv("GPUMOD_NVML_LIB", lib_path, 1);
    snapshot_opts o = {.nvml_timeout_ms = 5000 * scale()};
    snapshot s;
    snapshot_take(&s, &o);
    unsetenv("GPUMOD_PROC_ROOT");
    unsetenv("GPUMOD_NVML_LIB");
    host_is_healthy(&s);
    assert_int_equal(s.nvml, NVML_OK);
    assert_int_equal(s.source, GPU_SRC_NVML);
    assert_string_equal(nvml_state_names[s.nvml], "ok");
    assert_string_equal(gpu_source_names[s.source], "nvml");
    assert_true(s.nvidia_driver);
    assert_string_equal(s.gpu_error, "");
    assert_true(s.nvml_ms >= 0 && s.nvml_ms < 5000 * scale());
    assert_int_equal(s.ngpus, 1);
    assert_false(s.gpus[0].unified);
    assert_int_equal(s.gpus[0].free_bytes, (24576 - 300 - 2000) * MIB);
    assert_int_equal(s.gpus[0].nprocs, 1);
    snapshot_release(&s);
    assert_int_equal(s.ngpus, 0);
}

/* GB10: free = MemAvailable, total = MemTotal, used = the rest; the
 * per-process figure still from NVML. */
static void unified_from_meminfo(void **state)
{
    (void)state;
    write_state("not_supported", "");
    snapshot_opts o = opts();
    snapshot s;
    snapshot_take(&s, &o);
    host_is_healthy(&s);
    assert_int_equal(s.nvml, NVML_OK);
    gpu_dev *d = &s.gpus[0];
    assert_true(d->unified);
    assert_int_equal(d->total_bytes, HEALTHY_TOTAL);
    assert_int_equal(d->free_bytes, HEALTHY_AVAILABLE);
    assert_int_equal(d->used_bytes, HEALTHY_TOTAL - HEALTHY_AVAILABLE);
    assert_int_equal(d->reserved_bytes, 0);
    assert_int_equal(d->nprocs, 1);
    assert_int_equal(d->procs[0].used_bytes, 2000 * MIB);
    snapshot_release(&s);

    /* the same through nvidia-smi's [N/A] */
    o.nvml_lib = "/nonexistent/libnvidia-ml.so.1";
    snapshot_take(&s, &o);
    assert_int_equal(s.source, GPU_SRC_SMI);
    assert_true(s.gpus[0].unified);
    assert_int_equal(s.gpus[0].free_bytes, HEALTHY_AVAILABLE);
    assert_int_equal(s.gpus[0].procs[0].used_bytes, 2000 * MIB);
    snapshot_release(&s);
}

/* Unified memory and no meminfo: no figures invented, and said why. */
static void unified_without_meminfo(void **state)
{
    (void)state;
    write_state("not_supported", "");
    snapshot_opts o = opts();
    o.proc_root = tmpdir; /* no meminfo there */
    snapshot s;
    snapshot_take(&s, &o);
    assert_false(s.host.meminfo_ok);
    assert_int_equal(s.nvml, NVML_OK);
    assert_true(s.gpus[0].unified);
    assert_int_equal(s.gpus[0].total_bytes, 0);
    assert_int_equal(s.gpus[0].free_bytes, 0);
    assert_string_equal(s.gpu_error, "device 0 has unified memory but /proc/meminfo could not be read");
    snapshot_release(&s);
}

static void smi_fallback(void **state)
{
    (void)state;
    write_state("ok", "");
    snapshot_opts o = opts();
    o.nvml_lib = "/nonexistent/libnvidia-ml.so.1";
    snapshot s;
    snapshot_take(&s, &o);
    host_is_healthy(&s);
    assert_int_equal(s.nvml, NVML_ABSENT);
    assert_int_equal(s.source, GPU_SRC_SMI);
    assert_string_equal(gpu_source_names[s.source], "nvidia-smi");
    assert_true(s.nvidia_driver);
    assert_int_equal(s.ngpus, 1);
    assert_string_equal(s.gpus[0].uuid, "GPU-aaaa");
    assert_int_equal(s.gpus[0].free_bytes, (24576 - 300 - 2000) * MIB);
    assert_int_equal(s.gpus[0].nprocs, 1);
    assert_int_equal(s.gpus[0].procs[0].pid, (uint32_t)getpid());
    assert_string_equal(s.gpu_error, "nvml: cannot load '/nonexistent/libnvidia-ml.so.1': cannot "
                                     "open shared object file: No such file or directory");
    snapshot_release(&s);

    /* GPUMOD_NVIDIA_SMI when opts leave it NULL */
    setenv("GPUMOD_NVIDIA_SMI", smi_path, 1);
    o.smi_path = NULL;
    snapshot_take(&s, &o);
    unsetenv("GPUMOD_NVIDIA_SMI");
    assert_int_equal(s.source, GPU_SRC_SMI);
    snapshot_release(&s);
}

/* Init fails (no driver loaded): nvidia-smi cannot reach it either; both
 * reasons are kept. */
static void init_fails(void **state)
{
    (void)state;
    write_state("ok", ", \"return\": {\"nvmlInit_v2\": 9}");
    snapshot_opts o = opts();
    char *other = build_path("fakes/./libnvidia-ml.so.1"); /* a session of its own */
    o.nvml_lib = other;
    snapshot s;
    snapshot_take(&s, &o);
    host_is_healthy(&s);
    assert_int_equal(s.nvml, NVML_FAILED);
    assert_int_equal(s.source, GPU_SRC_NONE);
    assert_int_equal(s.ngpus, 0);
    assert_false(s.nvidia_driver);
    char *want = xasprintf("nvml: nvmlInit_v2: driver not loaded (9); nvidia-smi: '%s' exited "
                           "with status 9: NVIDIA-SMI has failed",
                           smi_path);
    if (strncmp(s.gpu_error, want, strlen(want)) != 0) fail_msg("gpu_error: %s", s.gpu_error);
    free(want);
    free(other);
    snapshot_release(&s);
}

/* A CPU-only host: no library, no nvidia-smi, no /proc/driver/nvidia. */
static void no_nvidia(void **state)
{
    (void)state;
    snapshot_opts o = opts();
    o.nvml_lib = "/nonexistent/libnvidia-ml.so.1";
    o.smi_path = "/nonexistent/nvidia-smi";
    snapshot s;
    snapshot_take(&s, &o);
    host_is_healthy(&s);
    assert_int_equal(s.nvml, NVML_ABSENT);
    assert_string_equal(nvml_state_names[s.nvml], "absent");
    assert_int_equal(s.source, GPU_SRC_NONE);
    assert_string_equal(gpu_source_names[s.source], "none");
    assert_int_equal(s.ngpus, 0);
    assert_false(s.nvidia_driver);
    assert_string_equal(s.gpu_error, "nvml: cannot load '/nonexistent/libnvidia-ml.so.1': cannot "
                                     "open shared object file: No such file or directory; "
                                     "nvidia-smi: '/nonexistent/nvidia-smi': no such file or "
                                     "directory");
    snapshot_release(&s);
}

/* No NVIDIA driver can be there (no <proc_root>/driver/nvidia, no
 * nvidiactl or dxg device): the default library is not dlopened (no NVML
 * thread) and nvidia-smi is not looked for; said so. */
static void no_driver_nothing_loaded(void **state)
{
    (void)state;
    char *dev = xasprintf("%s/dev-none", tmpdir);
    assert_int_equal(mkdir(dev, 0755), 0);
    snapshot_opts o = opts();
    o.dev_root = dev;
    o.nvml_lib = o.smi_path = NULL; /* the defaults: nothing named */
    snapshot s;
    snapshot_take(&s, &o);
    host_is_healthy(&s);
    assert_int_equal(s.nvml, NVML_ABSENT);
    assert_int_equal(s.source, GPU_SRC_NONE);
    assert_int_equal(s.nvml_ms, -1); /* NVML not used at all */
    assert_false(s.nvidia_driver);
    char *want = xasprintf("no NVIDIA driver: none of %s/driver/nvidia, %s/nvidiactl, %s/dxg exists", healthy, dev,
                           dev);
    assert_string_equal(s.gpu_error, want);
    free(want);
    snapshot_release(&s);

    /* a library named explicitly is loaded all the same (the fakes in
     * every test); nvidia-smi, not named, is not looked for */
    write_state("ok", "");
    o.nvml_lib = lib_path;
    snapshot_take(&s, &o);
    assert_int_equal(s.source, GPU_SRC_NVML);
    assert_int_equal(s.ngpus, 1);
    snapshot_release(&s);
    o.nvml_lib = "/nonexistent/libnvidia-ml.so.1";
    snapshot_take(&s, &o);
    assert_int_equal(s.source, GPU_SRC_NONE);
    assert_string_equal(s.gpu_error, "nvml: cannot load '/nonexistent/libnvidia-ml.so.1': cannot open shared "
                                     "object file: No such file or directory; nvidia-smi: not tried (no NVIDIA "
                                     "driver)");
    snapshot_release(&s);
    rmdir(dev);
    free(dev);
}

/* One sign of a driver (a device node; on WSL /dev/dxg) and the defaults
 * are tried: nvidia-smi from PATH here (the fake), or the host's own NVML
 * where it has one. */
static void driver_node_defaults_tried(void **state)
{
    (void)state;
    write_state("ok", "");
    const char *nodes[] = {"nvidiactl", "dxg"};
    for (size_t i = 0; i < 2; i++) {
        char *dev = xasprintf("%s/dev-%s", tmpdir, nodes[i]), *node = xasprintf("%s/%s", dev, nodes[i]);
        assert_int_equal(mkdir(dev, 0755), 0);
        write_file(node, "", 0644);
        char *path = getenv("PATH") ? xstrdup(getenv("PATH")) : NULL;
        char *smi_dir = build_path("fakes");
        setenv("PATH", smi_dir, 1);
        snapshot_opts o = opts();
        o.dev_root = dev;
        o.nvml_lib = o.smi_path = NULL;
        snapshot s;
        snapshot_take(&s, &o);
        if (path) setenv("PATH", path, 1);
        assert_true(s.nvml_ms >= 0); /* NVML was asked */
        assert_int_not_equal(s.source, GPU_SRC_NONE);
        assert_int_equal(s.ngpus, 1);
        snapshot_release(&s);
        unlink(node);
        rmdir(dev);
        free(path);
        free(smi_dir);
        free(dev);
        free(node);
    }
}

/* <proc_root>/driver/nvidia says a driver is loaded, GPUs or not. */
static void driver_dir(void **state)
{
    (void)state;
    char *root = xasprintf("%s/proc", tmpdir), *drv = xasprintf("%s/driver", root),
         *nv = xasprintf("%s/nvidia", drv), *mi = xasprintf("%s/meminfo", root),
         *src = xasprintf("%s/meminfo", healthy);
    assert_int_equal(mkdir(root, 0755), 0);
    assert_int_equal(mkdir(drv, 0755), 0);
    assert_int_equal(mkdir(nv, 0755), 0);
    char *text = read_text(src);
    assert_non_null(text);
    write_file(mi, text, 0644);
    snapshot_opts o = opts();
    o.proc_root = root;
    o.skip_gpus = true;
    snapshot s;
    snapshot_take(&s, &o);
    assert_true(s.nvidia_driver);
    assert_true(s.host.meminfo_ok);
    assert_false(s.host.buddyinfo_ok);
    assert_false(s.host.psi_ok); /* no pressure file: no PSI, no error */
    snapshot_release(&s);
    unlink(mi);
    rmdir(nv);
    rmdir(drv);
    rmdir(root);
    free(text);
    free(root);
    free(drv);
    free(nv);
    free(mi);
    free(src);
}

static void skip_gpus(void **state)
{
    (void)state;
    write_state("ok", "");
    snapshot_opts o = opts();
    o.skip_gpus = true;
    snapshot s;
    snapshot_take(&s, &o);
    host_is_healthy(&s);
    assert_int_equal(s.ngpus, 0);
    assert_int_equal(s.nvml, NVML_ABSENT);
    assert_int_equal(s.source, GPU_SRC_NONE);
    assert_int_equal(s.nvml_ms, -1);
    assert_false(s.nvidia_driver);
    snapshot_release(&s);
}

/* nvidia-smi hangs: the snapshot still returns at its deadline. */
static void smi_hangs(void **state)
{
    (void)state;
    char *sleeper = script("smi-sleeps", "sleep 30");
    snapshot_opts o = opts();
    o.nvml_lib = "/nonexistent/libnvidia-ml.so.1";
    o.smi_path = sleeper;
    o.smi_timeout_ms = 300;
    int64_t t0 = mono_ms();
    snapshot s;
    snapshot_take(&s, &o);
    int64_t took = mono_ms() - t0;
    /* returned at the deadline: not before it, and long before the 30 s
     * sleep ends (the upper bound only proves it did not hang) */
    assert_true(took >= 290 && took < 300 + 5000 * scale());
    host_is_healthy(&s);
    assert_int_equal(s.source, GPU_SRC_NONE);
    assert_int_equal(s.ngpus, 0);
    char *want = xasprintf("nvidia-smi: '%s' timed out after 300 ms", sleeper);
    assert_non_null(strstr(s.gpu_error, want));
    free(want);
    free(sleeper);
    snapshot_release(&s);
}

static void smi_garbage(void **state)
{
    (void)state;
    char *g = script("smi-garbage", "printf '\\001\\002garbage\\n'");
    snapshot_opts o = opts();
    o.nvml_lib = "/nonexistent/libnvidia-ml.so.1";
    o.smi_path = g;
    snapshot s;
    snapshot_take(&s, &o);
    host_is_healthy(&s);
    assert_int_equal(s.source, GPU_SRC_NONE);
    assert_int_equal(s.ngpus, 0);
    assert_non_null(strstr(s.gpu_error, "; nvidia-smi: nvidia-smi --query-gpu: line 1: 1 field, "
                                        "expected 10: '??garbage'"));
    free(g);
    snapshot_release(&s);
}

/* NVML wedged in a memory query: the snapshot returns at the deadline
 * with nvml hung (no nvidia-smi: it would wedge too), the host figures
 * intact; a snapshot while the call is still stuck answers hung at once,
 * starting nothing; once the call comes back, NVML answers again. */
static void nvml_hung(void **state)
{
    (void)state;
    /* the call stays stuck for 4 s x scale: the two snapshots below run
     * while it is stuck, and each bound proves it did not wait for it */
    int64_t delay = 4000 * scale();
    char extra[128];
    snprintf(extra, sizeof extra, ", \"call_delay_ms\": {\"nvmlDeviceGetMemoryInfo_v2\": %lld}",
             (long long)delay);
    write_state("ok", extra);
    snapshot_opts o = opts();
    o.nvml_timeout_ms = 200;
    snapshot s;
    int64_t t0 = mono_ms();
    snapshot_take(&s, &o);
    int64_t took = mono_ms() - t0;
    /* at the deadline: not before it, and not when the call comes back */
    if (took < 195 || took > 200 + 2000 * scale()) fail_msg("took %lld ms", (long long)took);
    assert_int_equal(s.nvml, NVML_HUNG);
    assert_string_equal(nvml_state_names[s.nvml], "hung");
    assert_int_equal(s.source, GPU_SRC_NONE);
    assert_int_equal(s.ngpus, 0);
    assert_string_equal(s.gpu_error, "nvml: NVML did not answer within 200 ms");
    assert_true(s.nvml_ms >= 195 && s.nvml_ms <= took);
    host_is_healthy(&s);
    snapshot_release(&s);

    o.nvml_timeout_ms = 5000 * scale();
    int64_t t1 = mono_ms();
    snapshot_take(&s, &o);
    took = mono_ms() - t1;
    /* at once: a new call would wait for the stuck one (>= 1.8 s x scale
     * more); 1.5 s x scale only proves it did not */
    if (took > 1500 * scale()) fail_msg("the second snapshot took %lld ms", (long long)took);
    assert_int_equal(s.nvml, NVML_HUNG);
    assert_non_null(strstr(s.gpu_error, "nvml: NVML has not answered for "));
    assert_non_null(strstr(s.gpu_error, " ms (a call is still running)"));
    host_is_healthy(&s);
    snapshot_release(&s);

    write_state("ok", "");
    o.nvml_timeout_ms = 500 * scale();
    bool ok = false;
    while (!ok && mono_ms() - t0 < delay + 5000 * scale()) {
        snapshot_take(&s, &o);
        ok = s.nvml == NVML_OK;
        if (ok) {
            assert_int_equal(s.ngpus, 1);
            assert_true(mono_ms() - t0 >= delay - 50);
        }
        snapshot_release(&s);
        if (!ok) usleep(50000);
    }
    assert_true(ok);
}

/* exit() with the NVML thread stuck returns at once (the CLI just exits);
 * a forked child gets an NVML thread of its own (the parent's is not
 * there), here while the parent's is still stuck. */
static void exit_while_stuck(void **state)
{
    (void)state;
    int64_t delay = 30000;
    char extra[128];
    snprintf(extra, sizeof extra, ", \"call_delay_ms\": {\"nvmlDeviceGetMemoryInfo_v2\": %lld}",
             (long long)delay);
    write_state("ok", extra);
    fflush(NULL); /* the child exits through stdio: nothing buffered twice */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        snapshot_opts o = opts();
        o.nvml_timeout_ms = 200;
        snapshot s;
        snapshot_take(&s, &o);
        exit(s.nvml == NVML_HUNG ? 0 : 3);
    }
    int64_t t0 = mono_ms();
    int status = -1;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (mono_ms() - t0 > 200 + 2000 * scale()) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            fail_msg("the process did not exit with the NVML thread stuck");
        }
        usleep(10000);
    }
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);

    /* the parent's thread stuck, a child's query still works */
    write_state("ok", ", \"call_delay_ms\": {\"nvmlDeviceGetMemoryInfo_v2\": 2000}");
    snapshot_opts o = opts();
    o.nvml_timeout_ms = 200;
    snapshot s;
    snapshot_take(&s, &o);
    assert_int_equal(s.nvml, NVML_HUNG);
    write_state("ok", "");
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        o.nvml_timeout_ms = 5000 * scale();
        snapshot_take(&s, &o);
        exit(s.nvml == NVML_OK && s.ngpus == 1 ? 0 : 3);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* and the parent's recovers */
    t0 = mono_ms();
    o.nvml_timeout_ms = 500 * scale();
    do {
        usleep(50000);
        snapshot_take(&s, &o);
        snapshot_release(&s);
    } while (s.nvml != NVML_OK && mono_ms() - t0 < 2000 + 5000 * scale());
    assert_int_equal(s.nvml, NVML_OK);
}

/* A free TCP port on loopback (bound and released). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static const gpu_proc *find_proc(const gpu_dev *d, uint32_t pid)
{
    for (size_t i = 0; i < d->nprocs; i++)
        if (d->procs[i].pid == pid) return &d->procs[i];
    return NULL;
}

/* The real fakellm registers FAKELLM_GPU_MB with the fake NVML; the
 * snapshot shows it under its pid; killed, its memory stays used until
 * release_delay_ms after the first snapshot that saw it gone. */
static void fakellm_memory(void **state)
{
    (void)state;
    char *fakellm = build_path("fakellm");
    char *model = src_path("tests/fixtures/models/aidreams260K-f32.gguf");
    if (access(fakellm, X_OK) != 0 || access(model, R_OK) != 0) {
        free(fakellm);
        free(model);
        skip(); /* the fakellm tests say why */
    }
    int64_t delay = 500 * scale();
    char json[512];
    snprintf(json, sizeof json,
             "{\"devices\": [{\"index\": 0, \"uuid\": \"GPU-aaaa\", \"name\": \"Fake 24GB\","
             " \"total_mb\": 24576, \"base_used_mb\": 300, \"memory\": \"ok\"}],"
             " \"processes\": [], \"release_delay_ms\": %lld}",
             (long long)delay);
    write_file(state_path, json, 0644);

    char port[16], *log = xasprintf("%s/fakellm.log", tmpdir);
    snprintf(port, sizeof port, "%d", free_port());
    /* the child's environment is built before fork: the NVML thread
     * exists, so the child may only exec */
    extern char **environ;
    size_t n = 0;
    while (environ[n]) n++;
    char **envp = xcalloc(n + 3, sizeof *envp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "CUDA_VISIBLE_DEVICES=", 21) && strncmp(environ[i], "FAKELLM_", 8))
            envp[k++] = environ[i];
    envp[k++] = "FAKELLM_GPU_MB=1000";
    envp[k++] = "CUDA_VISIBLE_DEVICES=0";
    char *argv[] = {fakellm, "-m", model, "--port", port, NULL};
    int logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(logfd >= 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setsid();
        int nul = open("/dev/null", O_RDONLY);
        dup2(nul, 0);
        dup2(logfd, 1);
        dup2(logfd, 2);
        execve(fakellm, argv, envp);
        _exit(127);
    }
    close(logfd);
    free(envp);

    snapshot_opts o = opts();
    snapshot s;
    bool seen = false;
    int64_t t0 = mono_ms();
    while (!seen && mono_ms() - t0 < 10000 * scale()) {
        snapshot_take(&s, &o);
        assert_int_equal(s.nvml, NVML_OK);
        const gpu_proc *p = find_proc(&s.gpus[0], (uint32_t)pid);
        /* the memory query and the process list are two NVML calls: a
         * registration between them shows the process before its bytes
         * (seen under valgrind); the next snapshot has both */
        if (p && s.gpus[0].used_bytes == 1300 * MIB) {
            seen = true;
            assert_int_equal(p->used_bytes, 1000 * MIB);
            assert_int_equal(s.gpus[0].used_bytes, 1300 * MIB);
            assert_int_equal(s.gpus[0].free_bytes, (24576 - 1300) * MIB);
        }
        snapshot_release(&s);
        if (!seen) {
            if (waitpid(pid, NULL, WNOHANG) == pid) {
                char *text = read_text(log);
                fail_msg("fakellm exited: %s", text ? text : "");
            }
            usleep(50000);
        }
    }
    if (!seen) {
        kill(-pid, SIGKILL);
        waitpid(pid, NULL, 0);
        fail_msg("fakellm's pid never appeared in the snapshot with its 1000 MiB counted in the device's used memory");
    }

    kill(-pid, SIGKILL);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    int64_t killed = mono_ms();
    snapshot_take(&s, &o);
    assert_non_null(find_proc(&s.gpus[0], (uint32_t)pid)); /* noticed now: still releasing */
    assert_int_equal(s.gpus[0].free_bytes, (24576 - 1300) * MIB);
    snapshot_release(&s);

    int64_t freed_at = -1;
    while (freed_at < 0 && mono_ms() - killed < delay + 5000 * scale()) {
        snapshot_take(&s, &o);
        if (s.gpus[0].free_bytes == (24576 - 300) * MIB) {
            assert_null(find_proc(&s.gpus[0], (uint32_t)pid));
            freed_at = mono_ms();
        }
        snapshot_release(&s);
        if (freed_at < 0) usleep(20000);
    }
    assert_true(freed_at >= 0);
    assert_true(freed_at - killed >= delay);
    free(fakellm);
    free(model);
    free(log);
}

static int setup(void **state)
{
    (void)state;
    lib_path = build_path("fakes/libnvidia-ml.so.1");
    smi_path = build_path("fakes/nvidia-smi");
    healthy = src_path("tests/fixtures/proc/healthy");
    if (access(lib_path, R_OK) != 0 || access(smi_path, X_OK) != 0) {
        fprintf(stderr, "# %s or %s is missing: run make\n", lib_path, smi_path);
        return -1;
    }
    const char *t = getenv("TMPDIR");
    tmpdir = xasprintf("%s/gpumod-test-snapshot.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmpdir)) return -1;
    state_path = xasprintf("%s/nvml.json", tmpdir);
    setenv("GPUMOD_FAKE_NVML_STATE", state_path, 1);
    unsetenv("GPUMOD_PROC_ROOT");
    unsetenv("GPUMOD_NVML_LIB");
    unsetenv("GPUMOD_NVIDIA_SMI");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (tmpdir) rm_rf(tmpdir);
    free(tmpdir);
    free(state_path);
    free(lib_path);
    free(smi_path);
    free(healthy);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nvml_from_env),   cmocka_unit_test(unified_from_meminfo),
        cmocka_unit_test(unified_without_meminfo), cmocka_unit_test(smi_fallback),
        cmocka_unit_test(init_fails),      cmocka_unit_test(no_nvidia),
        cmocka_unit_test(driver_dir),      cmocka_unit_test(skip_gpus),
        cmocka_unit_test(smi_hangs),       cmocka_unit_test(smi_garbage),
        cmocka_unit_test(nvml_hung),       cmocka_unit_test(exit_while_stuck),
        cmocka_unit_test(fakellm_memory),  cmocka_unit_test(no_driver_nothing_loaded),
        cmocka_unit_test(driver_node_defaults_tried),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
