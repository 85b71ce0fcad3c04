/* test_unit.c - systemd units as text (core/unit.c) and the installer's
 * diff and ownership rules (systemd/install.c).
 *
 * The rendered units are pinned against golden files in
 * tests/fixtures/units/, rendered from the presets in
 * tests/fixtures/units/config through the real drivers: a llama.cpp
 * preset, a vLLM preset with sleep mode, a command preset whose argv
 * and environment need every kind of escaping, the daemon's unit (user and
 * system) and a protect drop-in.  tests/e2e/t90-template.sh runs
 * systemd-analyze verify on units rendered the same way.
 * GPUMOD_UPDATE_GOLDEN=1 rewrites the golden files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* before config.h, whose typedef `mode` a testenv.h parameter would shadow */
#include "testenv.h"

#include "core/unit.h"
#include "drivers/driver.h"
#include "systemd/install.h"

static void golden(const char *name, const char *text)
{
    char *rel = xasprintf("tests/fixtures/units/%s", name);
    char *path = src_path(rel);
    const char *upd = getenv("GPUMOD_UPDATE_GOLDEN");
    if (upd && *upd) write_file(path, text, 0644);
    char *want = read_text(path);
    if (!want) fail_msg("golden file %s is missing (GPUMOD_UPDATE_GOLDEN=1 writes it)", path);
    if (strcmp(want, text)) {
        buf d = BUF_INIT;
        install_diff(&d, path, want, "rendered", text);
        fail_msg("%s differs from the rendering:\n%s", name, d.p);
    }
    free(want);
    free(path);
    free(rel);
}

typedef struct fx {
    config cfg;
} fx;

static int setup(void **state)
{
    fx *f = xcalloc(1, sizeof *f);
    char *dir = src_path("tests/fixtures/units/config");
    config_paths paths = {.config_dir = dir};
    int rc = config_load(&f->cfg, &paths);
    for (size_t i = 0; i < f->cfg.diags.n; i++) fprintf(stderr, "# %s\n", f->cfg.diags.v[i].msg);
    free(dir);
    *state = f;
    return rc;
}

static int teardown(void **state)
{
    fx *f = *state;
    config_release(&f->cfg);
    free(f);
    return 0;
}

/* the unit of preset id as template.c renders it, with fixed paths */
static void render(const config *cfg, const char *id, bool user, const char *config_dir, int64_t load_ms, buf *out)
{
    const preset *p = config_preset(cfg, id);
    assert_non_null(p);
    assert_false(p->has_errors);
    launch l = LAUNCH_INIT;
    char err[512];
    if (driver_launch(p, &cfg->set, &l, err, sizeof err)) fail_msg("%s", err);
    unit_service u = {
        .id = p->id,
        .description = p->name,
        .version = "1.2.3",
        .gpumod = "/usr/local/bin/gpumod",
        .config_dir = config_dir,
        .argv = &l.argv,
        .env = &l.env,
        .cwd = l.cwd,
        .startup_timeout_ms = p->startup_timeout_ms >= 0 ? p->startup_timeout_ms : cfg->set.supervisor.startup_timeout_ms,
        .measured_load_ms = load_ms,
        .stop_timeout_ms = cfg->set.supervisor.stop_timeout_ms,
        .restart = unit_restart(&p->restart, &cfg->set.supervisor.restart),
        .user = user,
    };
    if (unit_render_service(out, &u, err, sizeof err)) fail_msg("%s", err);
    launch_release(&l);
}

static void llamacpp_unit(void **state)
{
    fx *f = *state;
    buf b = BUF_INIT;
    render(&f->cfg, "chat", true, NULL, -1, &b);
    golden("chat.service", b.p);
    /* what a reader of the unit relies on, beside the golden */
    assert_non_null(strstr(b.p, "\nEnvironment=\"GGML_CUDA_NO_PINNED=1\"\n"));
    assert_non_null(strstr(b.p, "\nExecStartPre=/usr/local/bin/gpumod preflight --for chat\n"));
    assert_non_null(strstr(b.p, "\nDescription=Qwen3 chat (100%% GPU)\n"));
    assert_non_null(strstr(b.p, "\nStartLimitBurst=4\n")); /* max_restarts 3 + the first start */
    assert_non_null(strstr(b.p, "\nStartLimitIntervalSec=300s\n"));
    assert_non_null(strstr(b.p, "\nRestartSec=2s\n"));
    assert_non_null(strstr(b.p, "\nTimeoutStartSec=330s\n")); /* 5m + 30 s */
    assert_non_null(strstr(b.p, "\nTimeoutStopSec=45s\n"));
    assert_non_null(strstr(b.p, "\nWantedBy=default.target\n"));
    assert_true(unit_is_ours(b.p));
    buf_release(&b);
}

static void vllm_sleep_unit(void **state)
{
    fx *f = *state;
    buf b = BUF_INIT;
    /* measured 700 s: 1.5x = 1050 s beats startup_timeout 15m */
    render(&f->cfg, "lane", true, "/home/op/gpumod config", 700000, &b);
    golden("lane.service", b.p);
    assert_non_null(strstr(b.p, "\nEnvironment=\"VLLM_SERVER_DEV_MODE=1\"\n"));
    assert_non_null(strstr(b.p, " --enable-sleep-mode"));
    assert_non_null(strstr(b.p, "\nEnvironment=\"HF_HOME=/srv/hf cache\"\n"));
    assert_non_null(strstr(b.p, "\nExecStartPre=/usr/local/bin/gpumod --config-dir \"/home/op/gpumod config\" preflight --for lane\n"));
    assert_non_null(strstr(b.p, "\nTimeoutStartSec=1080s\n"));
    buf_release(&b);
}

static void command_unit_escaping(void **state)
{
    fx *f = *state;
    buf b = BUF_INIT;
    render(&f->cfg, "tool", false, "/etc/gpumod", -1, &b);
    golden("tool.service", b.p);
    /* each word as systemd.service(5) reads it back */
    assert_non_null(strstr(b.p, "\nExecStart=/usr/bin/env python3 -c \"print(\\\"50%% of $$HOME; done\\\")\" "
                                "\"back\\\\slash\" \";\" \"\"\n"));
    assert_non_null(strstr(b.p, "\nEnvironment=\"GREETING=say \\\"hi\\\" 100%%\"\n"));
    assert_non_null(strstr(b.p, "\nWantedBy=multi-user.target\n"));
    assert_non_null(strstr(b.p, "\nWants=network-online.target\n"));
    buf_release(&b);
}

static void daemon_units(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    char err[256];
    /* 3 services, each 30 s stop + 60 s verify */
    unit_daemon u = {.version = "1.2.3", .gpumod = "/usr/local/bin/gpumod", .services_stop_ms = 270000, .user = true};
    assert_int_equal(unit_render_daemon(&b, &u, err, sizeof err), 0);
    golden("gpumod-user.service", b.p);
    assert_non_null(strstr(b.p, "\nTimeoutStopSec=300s\n"));
    assert_non_null(strstr(b.p, "\nWatchdogSec=30s\n"));
    assert_null(strstr(b.p, "StateDirectory"));
    buf_clear(&b);
    u.user = false;
    u.config_dir = "/etc/gpumod";
    u.services_stop_ms = 0; /* no services: the floor of 90 s */
    assert_int_equal(unit_render_daemon(&b, &u, err, sizeof err), 0);
    golden("gpumod-system.service", b.p);
    assert_non_null(strstr(b.p, "\nTimeoutStopSec=90s\n"));
    assert_non_null(strstr(b.p, "\nStateDirectory=gpumod\n"));
    assert_non_null(strstr(b.p, "\nExecReload=/usr/local/bin/gpumod --config-dir /etc/gpumod reload\n"));
    buf_release(&b);
}

static void protect_dropin(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    char err[256];
    unit_protect u = {.version = "1.2.3", .unit = "sshd.service", .memory_min = "128M", .memory_low = "512M",
                      .oom_score_adjust = -900};
    assert_int_equal(unit_render_protect(&b, &u, err, sizeof err), 0);
    golden("protect.conf", b.p);
    buf_clear(&b);
    u.memory_min = "lots";
    assert_int_equal(unit_render_protect(&b, &u, err, sizeof err), -1);
    assert_string_equal(err, "MemoryMin 'lots': expected a size such as 256M, 1G (K, M, G, T: powers of 1024, below "
                             "16E), 5% (0 to 100, at most two decimals) or infinity");
    u.memory_min = "5%";
    u.oom_score_adjust = -1001;
    assert_int_equal(unit_render_protect(&b, &u, err, sizeof err), -1);
    assert_string_equal(err, "OOMScoreAdjust -1001: expected -1000 to 1000");
    u.oom_score_adjust = 0;
    u.unit = "ssh d.service";
    assert_int_equal(unit_render_protect(&b, &u, err, sizeof err), -1);
    assert_string_equal(err, "unit name 'ssh d.service': character ' ' is not allowed (expected [A-Za-z0-9:_.\\@-])");
    u.unit = "sshd";
    assert_int_equal(unit_render_protect(&b, &u, err, sizeof err), -1);
    assert_string_equal(err, "unit name 'sshd': expected NAME.service (or another unit type suffix)");
    buf_release(&b);
}

static void refuses_what_systemd_cannot_hold(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    char err[256];
    assert_int_equal(unit_exec_word(&b, "two\nlines", "argument 3", err, sizeof err), -1);
    assert_string_equal(err, "argument 3: control character 0x0a at byte 3 cannot be written to a systemd unit");
    assert_int_equal(unit_exec_word(&b, "bad\xc3(utf8", "argument 1", err, sizeof err), -1);
    assert_string_equal(err, "argument 1: invalid UTF-8 at byte 3 cannot be written to a systemd unit");
    assert_int_equal(unit_env_assignment(&b, "1BAD=x", err, sizeof err), -1);
    assert_string_equal(err, "environment '1BAD': not a valid variable name (expected [A-Za-z_][A-Za-z0-9_]*=VALUE)");
    assert_int_equal(unit_env_assignment(&b, "TAB=a\tb", err, sizeof err), -1);
    assert_string_equal(err,
                        "environment variable TAB: control character 0x09 at byte 5 cannot be written to a systemd unit");
    assert_int_equal(b.len, 0); /* nothing half-written */
    /* UTF-8 is kept as it is */
    assert_int_equal(unit_exec_word(&b, "mod\xc3\xa8le", "argument 1", err, sizeof err), 0);
    assert_string_equal(b.p, "mod\xc3\xa8le");

    strv argv = STRV_INIT;
    strv_push(&argv, "llama-server");
    strv_push(&argv, "--x");
    unit_service u = {.id = "s", .gpumod = "/usr/bin/gpumod", .argv = &argv, .stop_timeout_ms = 1000,
                      .startup_timeout_ms = 1000, .description = "ends in \\"};
    buf_clear(&b);
    assert_int_equal(unit_render_service(&b, &u, err, sizeof err), -1);
    assert_string_equal(err, "service 's': description: a value ending in a backslash would continue the line in a "
                             "systemd unit");
    u.description = NULL;
    free(argv.v[0]);
    argv.v[0] = xstrdup("bin/llama-server");
    assert_int_equal(unit_render_service(&b, &u, err, sizeof err), -1);
    assert_string_equal(err, "service 's': binary 'bin/llama-server': expected an absolute path or a plain name");
    free(argv.v[0]);
    argv.v[0] = xstrdup("/x/llama-server");
    free(argv.v[1]);
    argv.v[1] = xstrdup("a\rb");
    assert_int_equal(unit_render_service(&b, &u, err, sizeof err), -1);
    assert_string_equal(err, "service 's': ExecStart argument 1: control character 0x0d at byte 1 cannot be written "
                             "to a systemd unit");
    assert_int_equal(b.len, 0);
    /* the output file of the systemd runner: absolute, appended to */
    free(argv.v[1]);
    argv.v[1] = xstrdup("--x");
    u.output_file = "logs/s.unit.log";
    assert_int_equal(unit_render_service(&b, &u, err, sizeof err), -1);
    assert_string_equal(err, "service 's': output file 'logs/s.unit.log': expected an absolute path");
    u.output_file = "/var/log/gpumod/s.unit.log";
    assert_int_equal(unit_render_service(&b, &u, err, sizeof err), 0);
    assert_non_null(strstr(b.p, "\nStandardOutput=append:/var/log/gpumod/s.unit.log\nStandardError=inherit\n"));
    buf_clear(&b);
    strv_release(&argv);
    buf_release(&b);
}

static void start_timeout(void **state)
{
    (void)state;
    assert_int_equal(unit_start_timeout_ms(600000, -1), 630000);
    assert_int_equal(unit_start_timeout_ms(600000, 400000), 630000);  /* 1.5x 400 s = 600 s: not larger */
    assert_int_equal(unit_start_timeout_ms(600000, 401000), 631500);
    assert_true(unit_is_ours("# Generated by gpumod 0.1 for service x; do not edit (gpumod template install "
                             "overwrites it)\n[Unit]\n"));
    assert_false(unit_is_ours("[Unit]\n# Generated by gpumod 0.1 for service x; do not edit (gpumod template "
                              "install overwrites it)\n"));
    assert_false(unit_is_ours("# Generated by gpumod 0.1 for service x\n"));
}

static void line_diff(void **state)
{
    (void)state;
    buf d = BUF_INIT;
    install_diff(&d, "a", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "b", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n");
    assert_string_equal(d.p, "--- a\n+++ b\n"
                             "@@ -2,9 +2,10 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n 9\n 10\n+11\n");
    buf_clear(&d);
    install_diff(&d, "a", "same\n", "b", "same\n");
    assert_string_equal(d.p, "");
    install_diff(&d, "/dev/null", "", "b", "x\ny\n");
    assert_string_equal(d.p, "--- /dev/null\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n");
    buf_clear(&d);
    /* two changes far apart: two hunks */
    install_diff(&d, "a", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n", "b", "A\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nL\n");
    assert_string_equal(d.p, "--- a\n+++ b\n@@ -1,4 +1,4 @@\n-a\n+A\n b\n c\n d\n@@ -9,4 +9,4 @@\n i\n j\n k\n-l\n+L\n");
    buf_release(&d);
}

static void install_rules(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/gpumod-test-unit.XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    char *path = xasprintf("%s/sub/gpumod-x.service", dir);
    const char *v1 = UNIT_MARKER_PREFIX "1 for service x" UNIT_MARKER_TAIL "\n[Service]\nExecStart=/bin/true\n";
    const char *v2 = UNIT_MARKER_PREFIX "1 for service x" UNIT_MARKER_TAIL "\n[Service]\nExecStart=/bin/false\n";
    char err[512];
    install_change chg;
    buf d = BUF_INIT;
    /* preview: nothing written */
    assert_int_equal(install_file(path, v1, false, false, &chg, &d, err, sizeof err), 0);
    assert_int_equal(chg, INSTALL_NEW);
    assert_int_equal(access(path, F_OK), -1);
    buf_clear(&d);
    assert_int_equal(install_file(path, v1, true, false, &chg, &d, err, sizeof err), 0);
    char *got = read_text(path);
    assert_string_equal(got, v1);
    free(got);
    buf_clear(&d);
    assert_int_equal(install_file(path, v1, true, false, &chg, &d, err, sizeof err), 0);
    assert_int_equal(chg, INSTALL_SAME);
    assert_string_equal(d.p, "");
    assert_int_equal(install_file(path, v2, true, false, &chg, &d, err, sizeof err), 0);
    assert_int_equal(chg, INSTALL_CHANGED);
    assert_non_null(strstr(d.p, "\n-ExecStart=/bin/true\n+ExecStart=/bin/false\n"));
    /* a file gpumod did not write */
    write_file(path, "[Service]\nExecStart=/bin/mine\n", 0644);
    buf_clear(&d);
    assert_int_equal(install_file(path, v1, true, false, &chg, &d, err, sizeof err), -1);
    char *want = xasprintf("'%s' exists and gpumod did not write it (no '# Generated by gpumod ...' first line): not "
                           "replaced without --force", path);
    assert_string_equal(err, want);
    free(want);
    got = read_text(path);
    assert_string_equal(got, "[Service]\nExecStart=/bin/mine\n");
    free(got);
    assert_int_equal(install_file(path, v1, true, true, &chg, &d, err, sizeof err), 0);
    got = read_text(path);
    assert_string_equal(got, v1);
    free(got);
    /* a FIFO where the unit should be: refused at once, not waited on
     * (alarm turns a block into a failure) */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0644), 0);
    alarm(10);
    assert_int_equal(install_file(path, v1, true, true, &chg, &d, err, sizeof err), -1);
    alarm(0);
    want = xasprintf("cannot read '%s': a FIFO, not a regular file", path);
    assert_string_equal(err, want);
    free(want);
    buf_release(&d);
    free(path);
    rm_rf(dir);
}

/* the section by unit type; names, sizes as systemd parses them */
static void protect_types_and_sizes(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    char err[512];
    unit_protect u = {.version = "1", .unit = "user.slice", .memory_min = "128M", .memory_low = "5.5%",
                      .oom_score_adjust = -900};
    assert_int_equal(unit_render_protect(&b, &u, err, sizeof err), 0);
    assert_non_null(strstr(b.p, "\n[Slice]\nMemoryMin=128M\nMemoryLow=5.5%\n"));
    assert_null(strstr(b.p, "OOMScoreAdjust")); /* not a slice setting */
    assert_null(strstr(b.p, "[Service]"));
    assert_non_null(strstr(b.p, "\nManagedOOMPreference=avoid\n"));
    buf_clear(&b);
    u.unit = "sshd.socket";
    assert_int_equal(unit_render_protect(&b, &u, err, sizeof err), 0);
    assert_non_null(strstr(b.p, "\n[Socket]\n"));
    assert_non_null(strstr(b.p, "\nOOMScoreAdjust=-900\n"));
    buf_clear(&b);
    u.unit = "session-2.scope";
    assert_int_equal(unit_render_protect(&b, &u, err, sizeof err), 0);
    assert_non_null(strstr(b.p, "\n[Scope]\n"));
    assert_null(strstr(b.p, "OOMScoreAdjust"));
    buf_clear(&b);
    u.unit = "getty@.service"; /* a template: every instance */
    assert_int_equal(unit_render_protect(&b, &u, err, sizeof err), 0);
    assert_non_null(strstr(b.p, "\n[Service]\n"));
    buf_clear(&b);
    u.unit = "backup.timer";
    assert_int_equal(unit_render_protect(&b, &u, err, sizeof err), -1);
    assert_string_equal(err, "unit 'backup.timer': a timer unit has no memory protection settings (expected a "
                             ".service, .socket, .slice or .scope unit)");
    u.unit = "@.service";
    assert_int_equal(unit_render_protect(&b, &u, err, sizeof err), -1);
    assert_string_equal(err, "unit name '@.service': expected one '@' after a non-empty name (NAME@INSTANCE.service "
                             "or the template NAME@.service)");
    u.unit = "a@b@c.service";
    assert_int_equal(unit_render_protect(&b, &u, err, sizeof err), -1);
    u.unit = "a.b@c.service"; /* a dot in the prefix is allowed */
    assert_int_equal(unit_render_protect(&b, &u, err, sizeof err), 0);
    assert_int_equal(unit_name_check("a@b.c@.service", err, sizeof err), -1);
    buf_clear(&b);

    static const char *const good[] = {"0", "64M", "1.5G", "15E", "100%", "0%", "5.5%", "10.25%", "100.00%",
                                       "infinity", "18446744073709551614", NULL};
    static const char *const bad[] = {"150%", "100.01%", "10.255%", "-1M", "99999999999999999999",
                                      "18446744073709551615", "16E", "17179869184G", "1.5", "5 %", "1X", ".5G",
                                      "5.%", "", "1e3", NULL};
    for (size_t i = 0; good[i]; i++)
        if (!unit_size_ok(good[i])) fail_msg("size '%s' refused, systemd takes it", good[i]);
    for (size_t i = 0; bad[i]; i++)
        if (unit_size_ok(bad[i])) fail_msg("size '%s' accepted, systemd refuses it", bad[i]);
    u.unit = "sshd.service";
    u.memory_min = "150%";
    assert_int_equal(unit_render_protect(&b, &u, err, sizeof err), -1);
    assert_non_null(strstr(err, "MemoryMin '150%': expected a size"));
    u.memory_min = "128M";
    u.memory_low = "99999999999999999999";
    assert_int_equal(unit_render_protect(&b, &u, err, sizeof err), -1);
    assert_non_null(strstr(err, "MemoryLow '99999999999999999999': expected a size"));
    assert_int_equal(b.len, 0);
    buf_release(&b);
}

/* the gate of a system unit names the system daemon's state and socket;
 * paths and values systemd would refuse are refused with the field named */
static void service_scope_and_refusals(void **state)
{
    (void)state;
    strv argv = STRV_INIT, env = STRV_INIT;
    strv_push(&argv, "/opt/llama/llama-server");
    strv_push(&argv, "--x");
    unit_service u = {.id = "s", .version = "1", .gpumod = "/usr/local/bin/gpumod", .config_dir = "/etc/gpumod",
                      .state_dir = "/var/lib/gpumod", .socket = "/var/lib/gpumod/gpumod.sock", .argv = &argv,
                      .env = &env, .stop_timeout_ms = 1000, .startup_timeout_ms = 1000};
    buf b = BUF_INIT;
    char err[512];
    assert_int_equal(unit_render_service(&b, &u, err, sizeof err), 0);
    assert_non_null(strstr(b.p, "\nExecStartPre=/usr/local/bin/gpumod --config-dir /etc/gpumod --state-dir "
                                "/var/lib/gpumod --socket /var/lib/gpumod/gpumod.sock preflight --for s\n"));
    buf_clear(&b);
    u.state_dir = u.socket = NULL; /* --user: the user's own defaults */
    assert_int_equal(unit_render_service(&b, &u, err, sizeof err), 0);
    assert_non_null(strstr(b.p, "\nExecStartPre=/usr/local/bin/gpumod --config-dir /etc/gpumod preflight --for s\n"));
    buf_clear(&b);

    static const struct {
        const char *bin, *want;
    } bins[] = {
        {"/opt/a$b/llama-server", "service 's': binary '/opt/a$b/llama-server': character '$' cannot be in an "
                                  "executable path in a systemd unit (move or link the binary to a path without it)"},
        {"/opt/it's/llama-server", "service 's': binary '/opt/it's/llama-server': character ''' cannot be"},
        {"/opt/\"q\"/llama-server", "character '\"' cannot be"},
        {"/opt/back\\slash/x", "character '\\' cannot be"},
        {"/opt/llama/../bin/llama-server", "service 's': binary '/opt/llama/../bin/llama-server': a '..' component "
                                           "is not allowed in a systemd unit (give the path without it)"},
    };
    for (size_t i = 0; i < sizeof bins / sizeof bins[0]; i++) {
        free(argv.v[0]);
        argv.v[0] = xstrdup(bins[i].bin);
        assert_int_equal(unit_render_service(&b, &u, err, sizeof err), -1);
        if (!strstr(err, bins[i].want)) fail_msg("binary '%s': got '%s', want '%s'", bins[i].bin, err, bins[i].want);
    }
    free(argv.v[0]);
    argv.v[0] = xstrdup("/opt/llama/llama-server");
    u.gpumod = "/opt/gpu$mod/gpumod";
    assert_int_equal(unit_render_service(&b, &u, err, sizeof err), -1);
    assert_string_equal(err, "gpumod binary '/opt/gpu$mod/gpumod': character '$' cannot be in an executable path in "
                             "a systemd unit (move or link the binary to a path without it)");
    u.gpumod = "/usr/local/bin/gpumod";
    /* '$' in an argument is fine: doubled, systemd gives back one */
    free(argv.v[1]);
    argv.v[1] = xstrdup("a$b");
    assert_int_equal(unit_render_service(&b, &u, err, sizeof err), 0);
    assert_non_null(strstr(b.p, "\nExecStart=/opt/llama/llama-server a$$b\n"));
    buf_clear(&b);
    u.cwd = "/srv/x/../app dir";
    assert_int_equal(unit_render_service(&b, &u, err, sizeof err), -1);
    assert_string_equal(err, "service 's': working directory '/srv/x/../app dir': a '..' component is not allowed in "
                             "a systemd unit (give the path without it)");
    u.cwd = "/srv/x..y/.../app"; /* '..' inside a name is a name */
    assert_int_equal(unit_render_service(&b, &u, err, sizeof err), 0);
    buf_clear(&b);
    u.cwd = NULL;
    /* noncharacters: systemd drops the whole line */
    free(argv.v[1]);
    argv.v[1] = xstrdup("a\xef\xb7\x90" "b"); /* U+FDD0 */
    assert_int_equal(unit_render_service(&b, &u, err, sizeof err), -1);
    assert_string_equal(err, "service 's': ExecStart argument 1: Unicode noncharacter U+FDD0 at byte 1 cannot be "
                             "written to a systemd unit");
    assert_int_equal(unit_exec_word(&b, "x\xef\xbf\xbe", "argument 2", err, sizeof err), -1); /* U+FFFE */
    assert_string_equal(err, "argument 2: Unicode noncharacter U+FFFE at byte 1 cannot be written to a systemd unit");
    assert_int_equal(unit_exec_word(&b, "\xf0\x9f\xbf\xbf", "argument 2", err, sizeof err), -1); /* U+1FFFF */
    assert_int_equal(unit_exec_word(&b, "\xef\xb7\xb0", "argument 2", err, sizeof err), 0); /* U+FDF0: valid */
    assert_int_equal(b.len, 3);
    strv_release(&argv);
    strv_release(&env);
    buf_release(&b);
}

/* a link is never written through; a masked unit stays masked */
static void install_links_and_newline(void **state)
{
    (void)state;
    buf d = BUF_INIT;
    install_diff(&d, "a", "a\nb", "b", "a\nb\n");
    assert_string_equal(d.p, "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n");
    buf_clear(&d);
    install_diff(&d, "a", "a\nb\n", "b", "a\nc");
    assert_string_equal(d.p, "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n");
    buf_clear(&d);

    char tmpl[] = "/tmp/gpumod-test-unit.XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    char *real = xasprintf("%s/real.service", dir), *link = xasprintf("%s/gpumod-x.service", dir);
    char *masked = xasprintf("%s/gpumod-m.service", dir);
    const char *v1 = UNIT_MARKER_PREFIX "1 for service x" UNIT_MARKER_TAIL "\n[Service]\nExecStart=/bin/true\n";
    const char *v2 = UNIT_MARKER_PREFIX "1 for service x" UNIT_MARKER_TAIL "\n[Service]\nExecStart=/bin/false\n";
    write_file(real, v1, 0644);
    assert_int_equal(symlink(real, link), 0);
    assert_int_equal(symlink("/dev/null", masked), 0);
    char err[768];
    install_change chg;
    for (int force = 0; force < 2; force++) {
        assert_int_equal(install_file(link, v2, true, force, &chg, &d, err, sizeof err), -1);
        char *want = xasprintf("'%s' is a symlink to '%s': not replaced, also not with --force (remove the link, or "
                               "install into the directory of its target with --unit-dir)", link, real);
        assert_string_equal(err, want);
        free(want);
        assert_int_equal(install_file(masked, v2, true, force, &chg, &d, err, sizeof err), -1);
        want = xasprintf("'%s' is masked (a link to /dev/null): not replaced, also not with --force (systemctl "
                         "unmask gpumod-m.service first)", masked);
        assert_string_equal(err, want);
        free(want);
    }
    char *got = read_text(real);
    assert_string_equal(got, v1);
    free(got);
    char lt[256];
    ssize_t n = readlink(masked, lt, sizeof lt - 1);
    assert_true(n > 0);
    lt[n] = '\0';
    assert_string_equal(lt, "/dev/null");
    /* a marker file whose last newline went: "updated", and the diff says why */
    char *path = xasprintf("%s/gpumod-n.service", dir);
    write_file(path, UNIT_MARKER_PREFIX "1 for service x" UNIT_MARKER_TAIL "\n[Service]", 0644);
    buf_clear(&d);
    assert_int_equal(install_file(path, UNIT_MARKER_PREFIX "1 for service x" UNIT_MARKER_TAIL "\n[Service]\n", false,
                                  false, &chg, &d, err, sizeof err), 0);
    assert_int_equal(chg, INSTALL_CHANGED);
    assert_non_null(strstr(d.p, "\n-[Service]\n\\ No newline at end of file\n+[Service]\n"));
    free(path);
    free(real);
    free(link);
    free(masked);
    buf_release(&d);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llamacpp_unit),  cmocka_unit_test(vllm_sleep_unit), cmocka_unit_test(command_unit_escaping),
        cmocka_unit_test(daemon_units),   cmocka_unit_test(protect_dropin),
        cmocka_unit_test(refuses_what_systemd_cannot_hold),
        cmocka_unit_test(start_timeout),  cmocka_unit_test(line_diff),       cmocka_unit_test(install_rules),
        cmocka_unit_test(protect_types_and_sizes), cmocka_unit_test(service_scope_and_refusals),
        cmocka_unit_test(install_links_and_newline),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
