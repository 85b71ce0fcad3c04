/* unit.c - render systemd units to text (see unit.h).
 *
 * The escaping follows systemd.service(5) "Command lines" and
 * systemd.syntax(7): Exec*= and Environment= words are unquoted and
 * C-unescaped by systemd, specifiers (%x) are expanded in both, and "$X"
 * is expanded in Exec*= only.  So each word is written double-quoted when
 * it holds a blank, a quote, a backslash or a ';' (a lone unquoted ';'
 * separates commands), with '\' and '"' escaped, every '%' doubled, and in
 * Exec*= every '$' doubled.  Control characters could be written as C
 * escapes, but STYLE.md refuses them in anything that reaches an argv or a
 * unit file: they are errors here, like invalid UTF-8 (systemd drops such
 * lines with a warning).  Raw values (Description=, WorkingDirectory=)
 * are not unquoted by systemd: they only get '%' doubled, and one ending
 * in a backslash is refused (it would join the next line). */
#include "core/unit.h"

#include "util/errf.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A byte offset of the first invalid UTF-8 sequence, or -1; *nonchar gets
 * the code point when it is well-formed but a noncharacter (0 else). */
static long utf8_bad(const char *s, unsigned *nonchar)
{
    *nonchar = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        size_t n;
        unsigned min;
        if (c < 0x80) {
            p++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            n = 1, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            n = 2, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            n = 3, min = 0x10000;
        } else {
            return (long)((const char *)p - s);
        }
        unsigned cp = c & (0x3f >> n);
        for (size_t i = 1; i <= n; i++) {
            if ((p[i] & 0xc0) != 0x80) return (long)((const char *)p - s);
            cp = (cp << 6) | (p[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return (long)((const char *)p - s);
        /* noncharacters: systemd's unichar_is_valid refuses them too */
        if ((cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) == 0xfffe) {
            *nonchar = cp;
            return (long)((const char *)p - s);
        }
        p += n + 1;
    }
    return -1;
}

/* What systemd can hold in one line of a unit file. */
static int value_check(const char *v, const char *what, char *err, size_t errlen)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            errf(err, errlen, "%s: control character 0x%02x at byte %ld cannot be written to a systemd unit", what, *p,
                 (long)((const char *)p - v));
            return -1;
        }
    }
    unsigned nonchar;
    long bad = utf8_bad(v, &nonchar);
    if (bad >= 0 && nonchar) {
        errf(err, errlen, "%s: Unicode noncharacter U+%04X at byte %ld cannot be written to a systemd unit", what,
             nonchar, bad);
        return -1;
    }
    if (bad >= 0) {
        errf(err, errlen, "%s: invalid UTF-8 at byte %ld cannot be written to a systemd unit", what, bad);
        return -1;
    }
    return 0;
}

/* A value systemd takes as it stands (no unquoting): '%' doubled. */
static int raw_value(buf *out, const char *v, const char *what, char *err, size_t errlen)
{
    if (value_check(v, what, err, errlen)) return -1;
    size_t n = strlen(v);
    if (n && v[n - 1] == '\\') {
        errf(err, errlen, "%s: a value ending in a backslash would continue the line in a systemd unit", what);
        return -1;
    }
    for (const char *p = v; *p; p++) {
        if (*p == '%') buf_addc(out, '%');
        buf_addc(out, *p);
    }
    return 0;
}

static int quoted_word(buf *out, const char *w, bool exec, const char *what, char *err, size_t errlen)
{
    if (value_check(w, what, err, errlen)) return -1;
    bool quote = !*w || strpbrk(w, " \t\"'\\;") != NULL;
    if (quote) buf_addc(out, '"');
    for (const char *p = w; *p; p++) {
        if (*p == '\\' || *p == '"') buf_addc(out, '\\');
        if (*p == '%' || (exec && *p == '$')) buf_addc(out, *p);
        buf_addc(out, *p);
    }
    if (quote) buf_addc(out, '"');
    return 0;
}

int unit_exec_word(buf *out, const char *w, const char *what, char *err, size_t errlen)
{
    return quoted_word(out, w ? w : "", true, what, err, errlen);
}

static bool env_name_ok(const char *s, size_t n)
{
    if (!n || isdigit((unsigned char)s[0])) return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_') return false;
    return true;
}

int unit_env_assignment(buf *out, const char *kv, char *err, size_t errlen)
{
    const char *eq = strchr(kv, '=');
    if (!eq || !env_name_ok(kv, (size_t)(eq - kv))) {
        errf(err, errlen, "environment '%.*s': not a valid variable name (expected [A-Za-z_][A-Za-z0-9_]*=VALUE)",
             (int)(eq ? eq - kv : (long)strlen(kv)), kv);
        return -1;
    }
    char what[96];
    snprintf(what, sizeof what, "environment variable %.*s", (int)(eq - kv), kv);
    /* always quoted: Environment= splits on blanks */
    if (value_check(kv, what, err, errlen)) return -1;
    buf_addc(out, '"');
    for (const char *p = kv; *p; p++) {
        if (*p == '\\' || *p == '"') buf_addc(out, '\\');
        if (*p == '%') buf_addc(out, '%');
        buf_addc(out, *p);
    }
    buf_addc(out, '"');
    return 0;
}

/* systemd's unit_name_is_valid(): PREFIX.TYPE, PREFIX@INSTANCE.TYPE or
 * the template PREFIX@.TYPE; PREFIX and INSTANCE from [A-Za-z0-9:_.\-]. */
int unit_name_check(const char *name, char *err, size_t errlen)
{
    size_t n = name ? strlen(name) : 0;
    if (!n || n > 255) {
        errf(err, errlen, "unit name '%s': expected 1 to 255 characters", name ? name : "");
        return -1;
    }
    for (const char *p = name; *p; p++) {
        if (!isalnum((unsigned char)*p) && !strchr(":_.\\@-", *p)) {
            errf(err, errlen, "unit name '%s': character '%c' is not allowed (expected [A-Za-z0-9:_.\\@-])", name,
                 isprint((unsigned char)*p) ? *p : '?');
            return -1;
        }
    }
    static const char *const suffixes[] = {".service", ".socket", ".target", ".mount", ".timer",
                                           ".path",    ".slice",  ".scope",  ".swap",  ".automount",
                                           ".device",  NULL};
    const char *dot = strrchr(name, '.');
    bool ok = false;
    for (size_t i = 0; dot && suffixes[i]; i++) ok = ok || !strcmp(dot, suffixes[i]);
    if (!ok || dot == name) {
        errf(err, errlen, "unit name '%s': expected NAME.service (or another unit type suffix)", name);
        return -1;
    }
    const char *at = strchr(name, '@');
    if (at && (at == name || at > dot || strchr(at + 1, '@'))) {
        errf(err, errlen, "unit name '%s': expected one '@' after a non-empty name (NAME@INSTANCE%s or the template "
                          "NAME@%s)", name, dot, dot);
        return -1;
    }
    return 0;
}

/* parse_permyriad(): 0 to 100 with at most two decimals, then '%' */
static bool percent_ok(const char *s)
{
    const char *p = s;
    unsigned long whole = 0;
    size_t digits = 0;
    for (; isdigit((unsigned char)*p); p++, digits++) {
        whole = whole * 10 + (unsigned long)(*p - '0');
        if (whole > 100) return false;
    }
    if (!digits) return false;
    bool frac_nonzero = false;
    if (*p == '.') {
        p++;
        size_t k = 0;
        for (; isdigit((unsigned char)*p); p++, k++) frac_nonzero = frac_nonzero || *p != '0';
        if (!k || k > 2) return false;
    }
    if (whole == 100 && frac_nonzero) return false;
    return p[0] == '%' && p[1] == '\0';
}

/* parse_size() with base 1024 as MemoryMin= takes it: N[.F][K|M|G|T|P|E],
 * below UINT64_MAX (that value is "infinity"). */
static bool bytes_ok(const char *s)
{
    const char *p = s;
    uint64_t whole = 0;
    size_t digits = 0;
    for (; isdigit((unsigned char)*p); p++, digits++) {
        unsigned d = (unsigned)(*p - '0');
        if (whole > (UINT64_MAX - d) / 10) return false;
        whole = whole * 10 + d;
    }
    if (!digits) return false;
    uint64_t frac = 0, scale = 1;
    if (*p == '.') {
        p++;
        size_t k = 0;
        for (; isdigit((unsigned char)*p); p++, k++)
            if (scale < 1000000000000000000ull) frac = frac * 10 + (uint64_t)(*p - '0'), scale *= 10;
        if (!k) return false;
    }
    uint64_t mult = 1;
    if (*p) {
        const char *u = strchr("KMGTPE", *p);
        if (!u || p[1]) return false;
        for (long i = 0; i <= u - "KMGTPE"; i++) mult *= 1024;
    } else if (scale > 1) {
        return false; /* a fraction of a byte */
    }
    if (whole > UINT64_MAX / mult) return false;
    uint64_t v = whole * mult;
    /* frac/scale * mult in exact integers (mult <= 2^60, frac < scale <
     * 10^18: the product fits 128 bits); systemd takes the fraction's floor */
    unsigned __int128 extra = (unsigned __int128)frac * mult / scale;
    return (unsigned __int128)v + extra < UINT64_MAX;
}

bool unit_size_ok(const char *s)
{
    if (!s || !*s) return false;
    if (!strcmp(s, "infinity")) return true;
    return strchr(s, '%') ? percent_ok(s) : bytes_ok(s);
}

bool unit_is_ours(const char *text)
{
    if (!text || strncmp(text, UNIT_MARKER_PREFIX, strlen(UNIT_MARKER_PREFIX))) return false;
    const char *nl = strchr(text, '\n');
    size_t len = nl ? (size_t)(nl - text) : strlen(text);
    size_t tl = strlen(UNIT_MARKER_TAIL);
    return len >= tl && !memcmp(text + len - tl, UNIT_MARKER_TAIL, tl);
}

char *unit_service_name(const char *id)
{
    return xasprintf("gpumod-%s.service", id);
}

static int64_t pick(int64_t v, int64_t dflt)
{
    return v >= 0 ? v : dflt;
}

restart_policy unit_restart(const restart_policy *p, const restart_policy *s)
{
    return (restart_policy){pick(p->max_restarts, s->max_restarts), pick(p->window_ms, s->window_ms),
                            pick(p->backoff_initial_ms, s->backoff_initial_ms),
                            pick(p->backoff_max_ms, s->backoff_max_ms)};
}

int64_t unit_start_timeout_ms(int64_t startup_timeout_ms, int64_t measured_load_ms)
{
    int64_t t = startup_timeout_ms > 0 ? startup_timeout_ms : 0;
    if (measured_load_ms > 0 && measured_load_ms + measured_load_ms / 2 > t) t = measured_load_ms + measured_load_ms / 2;
    return t + UNIT_TIMEOUT_MARGIN_MS;
}

/* A systemd time span: "90s", "1500ms". */
static void dur(buf *out, int64_t ms)
{
    if (ms < 0) ms = 0;
    if (ms % 1000 == 0)
        buf_printf(out, "%" PRId64 "s", ms / 1000);
    else
        buf_printf(out, "%" PRId64 "ms", ms);
}

static void marker(buf *out, const char *version, const char *what)
{
    buf_printf(out, "%s%s for %s%s\n", UNIT_MARKER_PREFIX, version ? version : "?", what, UNIT_MARKER_TAIL);
}

/* "ExecX=" followed by the words of argv. */
static int exec_line(buf *out, const char *key, char *const *argv, size_t argc, const char *what, char *err,
                     size_t errlen)
{
    buf_printf(out, "%s=", key);
    for (size_t i = 0; i < argc; i++) {
        if (i) buf_addc(out, ' ');
        char w[128];
        snprintf(w, sizeof w, "%s argument %zu", what, i);
        if (unit_exec_word(out, argv[i], w, err, errlen)) return -1;
    }
    buf_addc(out, '\n');
    return 0;
}

static int abs_path(const char *p, const char *what, char *err, size_t errlen)
{
    if (!p || p[0] != '/') {
        errf(err, errlen, "%s '%s': expected an absolute path", what, p ? p : "");
        return -1;
    }
    return 0;
}

/* A '..' component: systemd calls such a path not normalized and refuses
 * the unit (WorkingDirectory=, the executable of Exec*=). */
static int dotdot_check(const char *p, const char *what, char *err, size_t errlen)
{
    for (const char *s = p; (s = strstr(s, "..")); s += 2) {
        if ((s == p || s[-1] == '/') && (s[2] == '/' || !s[2])) {
            errf(err, errlen, "%s '%s': a '..' component is not allowed in a systemd unit (give the path without it)",
                 what, p);
            return -1;
        }
    }
    return 0;
}

/* The executable of an Exec*= line is taken literally after unquoting:
 * systemd refuses quotes and backslashes in it ("Executable name contains
 * special characters") and never expands '$' there, so no escaping
 * writes these; they are refused. */
static int exec_path_check(const char *p, const char *what, char *err, size_t errlen)
{
    const char *bad = strpbrk(p, "\\\"'$");
    if (bad) {
        errf(err, errlen, "%s '%s': character '%c' cannot be in an executable path in a systemd unit (move or link "
                          "the binary to a path without it)", what, p, *bad);
        return -1;
    }
    return dotdot_check(p, what, err, errlen);
}

/* <gpumod> [--config-dir DIR] words..., as one Exec line. */
static int gpumod_line(buf *out, const char *key, const char *gpumod, const char *config_dir, const char *const *words,
                       char *err, size_t errlen)
{
    char *v[16];
    size_t n = 0;
    v[n++] = (char *)gpumod;
    if (config_dir) {
        v[n++] = "--config-dir";
        v[n++] = (char *)config_dir;
    }
    for (size_t i = 0; words[i] && n < 16; i++) v[n++] = (char *)words[i];
    return exec_line(out, key, v, n, key, err, errlen);
}

int unit_render_service(buf *out, const unit_service *u, char *err, size_t errlen)
{
    buf b = BUF_INIT;
    char what[160];
    if (!u->argv || !u->argv->n) {
        errf(err, errlen, "service '%s': its driver runs no process (nothing to put in ExecStart=)", u->id);
        goto fail;
    }
    /* systemd looks a plain name up in its own fixed PATH; a relative path
     * or a leading prefix character (@-:+!|) would mean something else */
    const char *bin = u->argv->v[0];
    if (!*bin || (strchr(bin, '/') && bin[0] != '/') || strchr("@-:+!|", bin[0])) {
        errf(err, errlen, "service '%s': binary '%s': expected an absolute path or a plain name", u->id, bin);
        goto fail;
    }
    snprintf(what, sizeof what, "service '%s': binary", u->id);
    if (exec_path_check(bin, what, err, errlen)) goto fail;
    if (abs_path(u->gpumod, "gpumod binary", err, errlen) || exec_path_check(u->gpumod, "gpumod binary", err, errlen))
        goto fail;
    if (u->state_dir && abs_path(u->state_dir, "state directory", err, errlen)) goto fail;
    if (u->socket && abs_path(u->socket, "control socket", err, errlen)) goto fail;
    if (u->config_dir && abs_path(u->config_dir, "configuration directory", err, errlen)) goto fail;

    char *m = xasprintf("service %s", u->id);
    marker(&b, u->version, m);
    free(m);
    buf_adds(&b, "[Unit]\nDescription=");
    snprintf(what, sizeof what, "service '%s': description", u->id);
    char *desc = u->description && *u->description ? NULL : xasprintf("gpumod service %s", u->id);
    int rc = raw_value(&b, desc ? desc : u->description, what, err, errlen);
    free(desc);
    if (rc) goto fail;
    /* the user manager has no network-online.target to pull in: ordering only */
    buf_adds(&b, u->user ? "\nAfter=network-online.target\n" : "\nAfter=network-online.target\nWants=network-online.target\n");
    /* systemd refuses a start once more than Burst starts fell within
     * Interval: the first start plus max_restarts restarts */
    buf_adds(&b, "StartLimitIntervalSec=");
    dur(&b, u->restart.window_ms);
    buf_printf(&b, "\nStartLimitBurst=%" PRId64 "\n", u->restart.max_restarts + 1);

    buf_adds(&b, "\n[Service]\nType=exec\n");
    /* the gate asks the daemon of the same scope: for --system, the
     * state directory and socket the system daemon resolves (ExecStartPre
     * of a unit without User= gets no HOME, no STATE_DIRECTORY) */
    const char *pre[8];
    size_t np = 0;
    if (u->state_dir) pre[np++] = "--state-dir", pre[np++] = u->state_dir;
    if (u->socket) pre[np++] = "--socket", pre[np++] = u->socket;
    pre[np++] = "preflight", pre[np++] = "--for", pre[np++] = u->id, pre[np] = NULL;
    snprintf(what, sizeof what, "service '%s': ExecStartPre", u->id);
    if (gpumod_line(&b, "ExecStartPre", u->gpumod, u->config_dir, pre, err, errlen)) goto fail;
    snprintf(what, sizeof what, "service '%s': ExecStart", u->id);
    if (exec_line(&b, "ExecStart", u->argv->v, u->argv->n, what, err, errlen)) goto fail;
    for (size_t i = 0; u->env && i < u->env->n; i++) {
        buf_adds(&b, "Environment=");
        if (unit_env_assignment(&b, u->env->v[i], err, errlen)) goto fail;
        buf_addc(&b, '\n');
    }
    if (u->cwd) {
        snprintf(what, sizeof what, "service '%s': working directory", u->id);
        if (abs_path(u->cwd, what, err, errlen) || dotdot_check(u->cwd, what, err, errlen)) goto fail;
        buf_adds(&b, "WorkingDirectory=");
        if (raw_value(&b, u->cwd, what, err, errlen)) goto fail;
        buf_addc(&b, '\n');
    }
    if (u->output_file) {
        snprintf(what, sizeof what, "service '%s': output file", u->id);
        if (abs_path(u->output_file, what, err, errlen)) goto fail;
        buf_adds(&b, "StandardOutput=append:");
        if (raw_value(&b, u->output_file, what, err, errlen)) goto fail;
        buf_adds(&b, "\nStandardError=inherit\n");
    }
    buf_adds(&b, "TimeoutStartSec=");
    dur(&b, unit_start_timeout_ms(u->startup_timeout_ms, u->measured_load_ms));
    buf_adds(&b, "\nTimeoutStopSec=");
    dur(&b, u->stop_timeout_ms);
    buf_adds(&b, "\nRestart=on-failure\nRestartSec=");
    dur(&b, u->restart.backoff_initial_ms);
    /* 2: a usage error of the engine is not retried.  systemd looks at the
     * main process only: a failing ExecStartPre (the gate) is retried until
     * the start limit, which ends the loop (docs/systemd.md). */
    buf_adds(&b, "\nRestartPreventExitStatus=2\nKillMode=control-group\nSendSIGKILL=yes\n");
    buf_printf(&b, "\n[Install]\nWantedBy=%s\n", u->user ? "default.target" : "multi-user.target");
    buf_add(out, b.p, b.len);
    buf_release(&b);
    return 0;
fail:
    buf_release(&b);
    return -1;
}

int unit_render_daemon(buf *out, const unit_daemon *u, char *err, size_t errlen)
{
    buf b = BUF_INIT;
    if (abs_path(u->gpumod, "gpumod binary", err, errlen)) goto fail;
    if (u->config_dir && abs_path(u->config_dir, "configuration directory", err, errlen)) goto fail;
    marker(&b, u->version, "the daemon");
    buf_adds(&b, "[Unit]\nDescription=gpumod daemon: GPU services, memory gate, router\n"
                 "After=network-online.target\n");
    if (!u->user) buf_adds(&b, "Wants=network-online.target\n");
    buf_adds(&b, "\n[Service]\nType=notify\nNotifyAccess=main\n");
    const char *serve[] = {"serve", "--foreground", NULL};
    const char *reload[] = {"reload", NULL};
    if (gpumod_line(&b, "ExecStart", u->gpumod, u->config_dir, serve, err, errlen)) goto fail;
    if (gpumod_line(&b, "ExecReload", u->gpumod, u->config_dir, reload, err, errlen)) goto fail;
    buf_adds(&b, "WatchdogSec=");
    dur(&b, UNIT_DAEMON_WATCHDOG_MS);
    /* SIGTERM to the daemon alone: it stops each service and verifies the
     * memory came back; the group is killed only after TimeoutStopSec */
    buf_adds(&b, "\nKillMode=mixed\nTimeoutStopSec=");
    int64_t stop = (u->services_stop_ms > 0 ? u->services_stop_ms : 0) + UNIT_TIMEOUT_MARGIN_MS;
    if (stop < 90000) stop = 90000;
    dur(&b, stop);
    buf_adds(&b, "\nRestart=on-failure\nRestartSec=5s\n");
    if (!u->user) buf_adds(&b, "StateDirectory=gpumod\n");
    buf_printf(&b, "\n[Install]\nWantedBy=%s\n", u->user ? "default.target" : "multi-user.target");
    buf_add(out, b.p, b.len);
    buf_release(&b);
    return 0;
fail:
    buf_release(&b);
    return -1;
}

/* The section a drop-in's settings go in, by unit type, and whether the
 * type runs processes of its own (OOMScoreAdjust= is a systemd.exec(5)
 * setting; MemoryMin=, MemoryLow= and ManagedOOMPreference= are
 * systemd.resource-control(5) settings, which these four all take). */
static const struct {
    const char *suffix, *section;
    bool exec;
} protect_types[] = {
    {".service", "Service", true},
    {".socket", "Socket", true},
    {".slice", "Slice", false},
    {".scope", "Scope", false},
};

int unit_render_protect(buf *out, const unit_protect *u, char *err, size_t errlen)
{
    if (unit_name_check(u->unit, err, errlen)) return -1;
    const char *dot = strrchr(u->unit, '.');
    size_t t = 0, nt = sizeof protect_types / sizeof protect_types[0];
    while (t < nt && strcmp(dot, protect_types[t].suffix)) t++;
    if (t == nt) {
        errf(err, errlen, "unit '%s': a %s unit has no memory protection settings (expected a .service, .socket, "
                          ".slice or .scope unit)", u->unit, dot + 1);
        return -1;
    }
    const char *sizes[2][2] = {{"MemoryMin", u->memory_min}, {"MemoryLow", u->memory_low}};
    for (int i = 0; i < 2; i++) {
        if (sizes[i][1] && !unit_size_ok(sizes[i][1])) {
            errf(err, errlen, "%s '%s': expected a size such as 256M, 1G (K, M, G, T: powers of 1024, below 16E), "
                              "5%% (0 to 100, at most two decimals) or infinity", sizes[i][0], sizes[i][1]);
            return -1;
        }
    }
    if (u->oom_score_adjust < -1000 || u->oom_score_adjust > 1000) {
        errf(err, errlen, "OOMScoreAdjust %d: expected -1000 to 1000", u->oom_score_adjust);
        return -1;
    }
    char *m = xasprintf("unit %s", u->unit);
    marker(out, u->version, m);
    free(m);
    buf_adds(out, "# Keeps this unit alive under memory pressure (gpumod protect).\n"
                  "# MemoryMin/MemoryLow protect only as far as the enclosing slice is\n"
                  "# protected too (systemd.resource-control(5)).\n");
    buf_printf(out, "[%s]\n", protect_types[t].section);
    for (int i = 0; i < 2; i++)
        if (sizes[i][1]) buf_printf(out, "%s=%s\n", sizes[i][0], sizes[i][1]);
    if (protect_types[t].exec) buf_printf(out, "OOMScoreAdjust=%d\n", u->oom_score_adjust);
    buf_adds(out, "# Acts only where systemd-oomd runs (gpumod doctor says whether it does).\n"
                  "ManagedOOMPreference=avoid\n");
    return 0;
}
