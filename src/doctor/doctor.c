/* doctor.c - the checks of `gpumod doctor` over parsed inputs, and the
 * small parsers they need (unit files, ExecStart= quoting, time spans,
 * arcstats, /proc/swaps, modprobe.d).
 *
 * Every check reads values and writes one verdict; none looks at the
 * world, so each is unit-tested healthy and unhealthy with plain structs.
 * The unit-file parser knows only the keys the checks use; it follows
 * systemd's rules for them (sections, continuation lines, the last
 * assignment wins, an empty ExecStart= resets), because a check that
 * misreads a unit would give advice about a unit that does not exist. */
#include "doctor/doctor.h"
#include "core/contig.h"
#include "util/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const doc_status_names[] = {"ok", "info", "skip", "warn", "fail"};

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

static void vset(char *dst, size_t cap, const char *fmt, va_list ap)
{
    vsnprintf(dst, cap, fmt, ap);
}

static void verdict(doc_verdict *v, const char *id, doc_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void verdict(doc_verdict *v, const char *id, doc_status st, const char *fmt, ...)
{
    memset(v, 0, sizeof *v);
    snprintf(v->id, sizeof v->id, "%s", id);
    v->status = st;
    va_list ap;
    va_start(ap, fmt);
    vset(v->summary, sizeof v->summary, fmt, ap);
    va_end(ap);
}

static void fix(doc_verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fix(doc_verdict *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset(v->fix, sizeof v->fix, fmt, ap);
    va_end(ap);
}

/* Append to a fixed text, cut short (with "...") when it is full. */
static void cat(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cat(char *dst, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(dst);
    if (n + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(dst + n, cap - n, fmt, ap);
    va_end(ap);
    if (w >= 0 && (size_t)w >= cap - n && cap > 4) memcpy(dst + cap - 4, "...", 4);
}

static double gib(uint64_t b)
{
    return (double)b / GIB;
}

static double mib(uint64_t b)
{
    return (double)b / MIB;
}

/* ---- ExecStart= ---- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One C escape after the backslash at *s; advances *s.  -1 when bad. */
static int unescape(const char **s, buf *w)
{
    const char *p = *s;
    char c = *p++;
    switch (c) {
    case 'a': buf_addc(w, '\a'); break;
    case 'b': buf_addc(w, '\b'); break;
    case 'f': buf_addc(w, '\f'); break;
    case 'n': buf_addc(w, '\n'); break;
    case 'r': buf_addc(w, '\r'); break;
    case 't': buf_addc(w, '\t'); break;
    case 'v': buf_addc(w, '\v'); break;
    case 's': buf_addc(w, ' '); break;
    case '\\': case '"': case '\'': case ' ': case ';': buf_addc(w, c); break;
    case 'x': {
        int a = hexval(p[0]), b = a < 0 ? -1 : hexval(p[1]);
        if (a < 0 || b < 0 || (a == 0 && b == 0)) return -1;
        buf_addc(w, (char)(a * 16 + b));
        p += 2;
        break;
    }
    case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
        if (p[0] < '0' || p[0] > '7' || p[1] < '0' || p[1] > '7') return -1;
        int v = (c - '0') * 64 + (p[0] - '0') * 8 + (p[1] - '0');
        if (v == 0 || v > 255) return -1;
        buf_addc(w, (char)v);
        p += 2;
        break;
    }
    default: return -1;
    }
    *s = p;
    return 0;
}

int doctor_split_exec(const char *value, strv *out, char *err, size_t errlen)
{
    const char *s = value;
    while (*s == ' ' || *s == '\t') s++;
    while (*s && strchr("@-:+!|", *s)) s++;
    buf w = BUF_INIT;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\n') s++;
        if (!*s) break;
        buf_clear(&w);
        char quote = 0;
        while (*s) {
            char c = *s;
            if (!quote && (c == ' ' || c == '\t' || c == '\n')) break;
            s++;
            if (quote && c == quote) {
                quote = 0;
            } else if (!quote && (c == '"' || c == '\'')) {
                quote = c;
            } else if (c == '\\') {
                if (!*s) {
                    snprintf(err, errlen, "ExecStart '%.60s': a trailing backslash", value);
                    buf_release(&w);
                    return -1;
                }
                if (unescape(&s, &w) < 0) {
                    snprintf(err, errlen, "ExecStart '%.60s': an unknown escape '\\%c'", value, *s);
                    buf_release(&w);
                    return -1;
                }
            } else if ((c == '%' || c == '$') && *s == c) {
                buf_addc(&w, c);
                s++;
            } else {
                buf_addc(&w, c);
            }
        }
        if (quote) {
            snprintf(err, errlen, "ExecStart '%.60s': an unterminated %c quote", value, quote);
            buf_release(&w);
            return -1;
        }
        strv_push(out, w.p);
    }
    buf_release(&w);
    return 0;
}

/* ---- time spans ---- */

int doctor_parse_timespan(const char *s, int64_t *ms)
{
    static const struct {
        const char *u;
        double ms;
    } units[] = {
        {"usec", 0.001}, {"us", 0.001}, {"msec", 1}, {"ms", 1}, {"seconds", 1000}, {"second", 1000},
        {"sec", 1000}, {"s", 1000}, {"minutes", 60000}, {"minute", 60000}, {"min", 60000},
        {"m", 60000}, {"hours", 3600000}, {"hour", 3600000}, {"hr", 3600000}, {"h", 3600000},
        {"days", 86400000}, {"day", 86400000}, {"d", 86400000}, {"weeks", 604800000.0},
        {"week", 604800000.0}, {"w", 604800000.0}, {"months", 2629800000.0}, {"month", 2629800000.0},
        {"M", 2629800000.0}, {"years", 31557600000.0}, {"year", 31557600000.0}, {"y", 31557600000.0},
    };
    while (*s == ' ' || *s == '\t') s++;
    if (!strcmp(s, "infinity")) {
        *ms = DOC_TIME_INFINITY;
        return 0;
    }
    double total = 0;
    bool any = false;
    while (*s) {
        while (*s == ' ' || *s == '\t') s++;
        if (!*s) break;
        char *end;
        if (*s < '0' || *s > '9') return -1;
        double x = strtod(s, &end);
        if (end == s) return -1;
        s = end;
        while (*s == ' ') s++;
        size_t n = 0;
        while ((s[n] >= 'a' && s[n] <= 'z') || s[n] == 'M') n++;
        double scale = 1000; /* a bare number is seconds */
        if (n) {
            size_t i = 0, nu = sizeof units / sizeof units[0];
            for (; i < nu; i++)
                if (strlen(units[i].u) == n && !strncmp(s, units[i].u, n)) break;
            if (i == nu) return -1;
            scale = units[i].ms;
        }
        s += n;
        total += x * scale;
        any = true;
    }
    if (!any || total > 9e15) return -1;
    *ms = (int64_t)(total + 0.5);
    return 0;
}

/* ---- unit files ---- */

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n')) s[--n] = '\0';
    size_t i = 0;
    while (s[i] == ' ' || s[i] == '\t') i++;
    if (i) memmove(s, s + i, n - i + 1);
}

static void unit_err(doc_unit *u, const char *file, int lineno, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void unit_err(doc_unit *u, const char *file, int lineno, const char *fmt, ...)
{
    u->nerrors++;
    if (u->error[0]) return; /* the first one is what to fix first */
    int n = snprintf(u->error, sizeof u->error, "%s:%d: ", file && *file ? file : u->name, lineno);
    if (n < 0 || (size_t)n >= sizeof u->error) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->error + n, sizeof u->error - (size_t)n, fmt, ap);
    va_end(ap);
}

/* systemd logs a value that does not parse and ignores the line: the
 * previous assignment stays.  An empty value resets to the default. */
static void set_span(doc_unit *u, const char *file, int lineno, const char *key, const char *val, int64_t *dst,
                     bool zero_is_infinity)
{
    if (!*val) {
        *dst = -1;
        return;
    }
    int64_t ms;
    if (doctor_parse_timespan(val, &ms) < 0) {
        unit_err(u, file, lineno, "%s='%.40s' is not a time span (systemd ignores the line)", key, val);
        return;
    }
    /* TimeoutStartSec=0: systemd's parse_sec_fix_0, "0 disables the timeout" */
    *dst = ms == 0 && zero_is_infinity ? DOC_TIME_INFINITY : ms;
}

/* "preflight --for ID" anywhere in an ExecStartPre= argv */
static void scan_pre(doc_unit *u, const char *val)
{
    strv a = STRV_INIT;
    char e[64];
    if (doctor_split_exec(val, &a, e, sizeof e) == 0) {
        for (size_t i = 0; i + 1 < a.n; i++) {
            if (strcmp(a.v[i], "preflight")) continue;
            for (size_t j = i + 1; j < a.n; j++) {
                if (!strcmp(a.v[j], "--for") && j + 1 < a.n)
                    snprintf(u->for_id, sizeof u->for_id, "%s", a.v[j + 1]);
                else if (!strncmp(a.v[j], "--for=", 6))
                    snprintf(u->for_id, sizeof u->for_id, "%s", a.v[j] + 6);
            }
        }
    }
    strv_release(&a);
}

/* Environment="A=1 B=2": words as systemd splits them (quotes, escapes) */
static void add_env(doc_unit *u, const char *file, int lineno, const char *val)
{
    if (!*val) {
        strv_release(&u->env); /* an empty assignment resets the list */
        return;
    }
    strv a = STRV_INIT;
    char e[200];
    if (doctor_split_exec(val, &a, e, sizeof e) < 0) {
        unit_err(u, file, lineno, "Environment='%.60s' does not parse", val);
    } else {
        for (size_t i = 0; i < a.n; i++) {
            const char *eq = strchr(a.v[i], '=');
            if (!eq || eq == a.v[i]) unit_err(u, file, lineno, "Environment: '%.60s' is not KEY=VALUE", a.v[i]);
            else strv_push(&u->env, a.v[i]);
        }
    }
    strv_release(&a);
}

static void unit_assign(doc_unit *u, const char *file, const char *section, int lineno, const char *key,
                        const char *val)
{
    bool svc = !strcmp(section, "Service"), unit = !strcmp(section, "Unit");
    if (svc && !strcmp(key, "Restart")) {
        snprintf(u->restart, sizeof u->restart, "%s", val);
    } else if (svc && !strcmp(key, "Type")) {
        snprintf(u->type, sizeof u->type, "%s", val);
    } else if (svc && !strcmp(key, "RestartSec")) {
        set_span(u, file, lineno, key, val, &u->restart_sec_ms, false);
    } else if ((unit || svc) && (!strcmp(key, "StartLimitIntervalSec") || !strcmp(key, "StartLimitInterval"))) {
        /* [Unit] StartLimitIntervalSec=, with the legacy alias
         * StartLimitInterval= in [Unit] and both in [Service] */
        set_span(u, file, lineno, key, val, &u->limit_interval_ms, false);
    } else if ((unit || svc) && !strcmp(key, "StartLimitBurst")) {
        char *end;
        long long b = strtoll(val, &end, 10);
        if (!*val) u->limit_burst = -1;
        else if (*end || b < 0) unit_err(u, file, lineno, "StartLimitBurst='%.40s' is not a count (systemd ignores the line)", val);
        else u->limit_burst = b;
    } else if (svc && (!strcmp(key, "TimeoutStartSec") || !strcmp(key, "TimeoutSec"))) {
        set_span(u, file, lineno, key, val, &u->timeout_start_ms, true);
    } else if (svc && !strcmp(key, "ExecStart")) {
        strv_release(&u->exec);
        u->has_exec = false;
        if (!*val) return; /* an empty ExecStart= resets the list */
        char e[200];
        if (doctor_split_exec(val, &u->exec, e, sizeof e) < 0) {
            strv_release(&u->exec);
            unit_err(u, file, lineno, "%s", e);
            return;
        }
        u->has_exec = true;
    } else if (svc && !strcmp(key, "ExecStartPre")) {
        scan_pre(u, val);
    } else if (svc && !strcmp(key, "ExecStartPost")) {
        u->has_exec_post = *val != '\0'; /* an empty one resets the list */
    } else if (svc && !strcmp(key, "Environment")) {
        add_env(u, file, lineno, val);
    } else if (svc && !strcmp(key, "EnvironmentFile")) {
        if (!*val) strv_release(&u->env_files);
        else strv_push(&u->env_files, val);
    }
}

/* The next physical line of *cur, without its end: "\n", "\r\n" or a
 * lone "\r" ends one, as in systemd's read_line.  Returns its length. */
static size_t next_line(const char **cur, const char **start)
{
    const char *s = *cur;
    size_t n = strcspn(s, "\r\n");
    *start = s;
    s += n;
    if (*s == '\r' && s[1] == '\n') s += 2;
    else if (*s) s++;
    *cur = s;
    return n;
}

/* systemd's config_parse(): a line whose first non-blank is '#' or ';' is
 * a comment and skipped, also inside a continuation; a line ends in a
 * continuation when its last character is an unescaped backslash, which
 * becomes a blank. */
static void parse_text(doc_unit *u, const char *file, const char *text)
{
    char section[64] = "";
    buf line = BUF_INIT;
    const char *cur = text;
    int lineno = 0, first = 0;
    bool cont = false;
    while (*cur) {
        const char *s;
        size_t n = next_line(&cur, &s);
        lineno++;
        size_t b = 0;
        while (b < n && (s[b] == ' ' || s[b] == '\t')) b++;
        if (b < n && (s[b] == '#' || s[b] == ';')) continue;
        if (!cont) {
            buf_clear(&line);
            first = lineno;
        }
        bool esc = false;
        for (size_t i = 0; i < n; i++) esc = esc ? false : s[i] == '\\';
        buf_add(&line, s, esc ? n - 1 : n);
        if (esc) {
            buf_addc(&line, ' ');
            cont = true;
            if (*cur) continue;
        }
        cont = false;
        char *l = line.p;
        trim(l);
        if (!*l) continue;
        if (*l == '[') {
            char *close = strchr(l, ']');
            if (!close || close[1]) {
                unit_err(u, file, first, "expected '[Section]'");
                section[0] = '\0';
                continue;
            }
            *close = '\0';
            snprintf(section, sizeof section, "%s", l + 1);
            continue;
        }
        char *eq = strchr(l, '=');
        if (!eq) {
            unit_err(u, file, first, "expected 'Key=Value' (systemd ignores the line)");
            continue;
        }
        *eq = '\0';
        char *key = l, *val = eq + 1;
        trim(key);
        trim(val);
        unit_assign(u, file, section, first, key, val);
    }
    buf_release(&line);
}

void doctor_unit_parse(doc_unit *u, const char *name, const char *path, const char *text)
{
    memset(u, 0, sizeof *u);
    snprintf(u->name, sizeof u->name, "%s", name);
    snprintf(u->path, sizeof u->path, "%s", path ? path : "");
    u->restart_sec_ms = u->limit_interval_ms = u->limit_burst = u->timeout_start_ms = -1;
    u->gpumod = !strncmp(text, "# Generated by gpumod", 21);
    parse_text(u, u->path, text);
}

void doctor_unit_dropin(doc_unit *u, const char *path, const char *text)
{
    u->ndropins++;
    parse_text(u, path, text);
}

void doctor_unit_envfile(doc_unit *u, const char *path, const char *text)
{
    const char *cur = text;
    int lineno = 0;
    while (*cur) {
        const char *s;
        size_t n = next_line(&cur, &s);
        lineno++;
        char l[2048];
        snprintf(l, sizeof l, "%.*s", (int)(n < sizeof l - 1 ? n : sizeof l - 1), s);
        trim(l);
        if (!*l || *l == '#' || *l == ';') continue;
        char *eq = strchr(l, '=');
        if (!eq || eq == l) {
            unit_err(u, path, lineno, "expected 'KEY=VALUE'");
            continue;
        }
        *eq = '\0';
        char *key = l, *val = eq + 1;
        trim(key);
        trim(val);
        size_t vn = strlen(val);
        if (vn >= 2 && (val[0] == '"' || val[0] == '\'') && val[vn - 1] == val[0]) {
            val[vn - 1] = '\0';
            val++;
        }
        strv_pushf(&u->file_env, "%s=%s", key, val);
    }
}

void doctor_unit_release(doc_unit *u)
{
    strv_release(&u->exec);
    strv_release(&u->env);
    strv_release(&u->env_files);
    strv_release(&u->file_env);
    u->has_exec = false;
}

const char *doctor_unit_label(const doc_unit *u, char *out, size_t cap)
{
    if (u->scope && *u->scope) snprintf(out, cap, "%s:%s", u->scope, u->name);
    else snprintf(out, cap, "%s", u->name);
    return out;
}

bool doctor_unit_start_covers_load(const doc_unit *u)
{
    static const char *const waits[] = {"notify", "notify-reload", "dbus", "forking", "oneshot"};
    if (u->has_exec_post) return true;
    for (size_t i = 0; i < sizeof waits / sizeof waits[0]; i++)
        if (!strcmp(u->type, waits[i])) return true;
    return false;
}

/* ---- ports ---- */

static bool port_text(const char *s, size_t n, int64_t *out)
{
    if (n == 0 || n > 5) return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v < 1 || v > 65535) return false;
    *out = v;
    return true;
}

static bool colon_port(const char *a, int64_t *p);

size_t doctor_argv_ports(const strv *argv, int64_t *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 1; i < argv->n && n < max; i++) {
        const char *a = argv->v[i];
        int64_t p;
        if ((!strcmp(a, "--port") || !strcmp(a, "-p")) && i + 1 < argv->n) {
            if (port_text(argv->v[i + 1], strlen(argv->v[i + 1]), &p)) out[n++] = p;
            i++;
            continue;
        }
        if (!strncmp(a, "--port=", 7)) {
            if (port_text(a + 7, strlen(a + 7), &p)) out[n++] = p;
            continue;
        }
        if (colon_port(a, &p)) out[n++] = p;
    }
    return n;
}

/* HOST:PORT at the end of a value, or before a '/' */
static bool colon_port(const char *a, int64_t *p)
{
    const char *colon = strrchr(a, ':');
    if (!colon) return false;
    const char *d = colon + 1;
    return port_text(d, strcspn(d, "/"), p);
}

static size_t env_value_ports(const char *kv, int64_t *out, size_t n, size_t max)
{
    const char *eq = strchr(kv, '=');
    if (!eq || n >= max) return n;
    size_t klen = (size_t)(eq - kv);
    const char *val = eq + 1;
    int64_t p;
    bool port_key = (klen == 4 && !strncmp(kv, "PORT", 4)) || (klen > 5 && !strncmp(eq - 5, "_PORT", 5));
    if (port_key && port_text(val, strlen(val), &p)) out[n++] = p;
    else if (colon_port(val, &p)) out[n++] = p;
    return n;
}

/* KEY of kv also assigned in list[from..] */
static bool env_overridden(const char *kv, const strv *list, size_t from)
{
    size_t klen = strcspn(kv, "=");
    for (size_t i = from; i < list->n; i++)
        if (!strncmp(list->v[i], kv, klen) && list->v[i][klen] == '=') return true;
    return false;
}

size_t doctor_env_ports(const doc_unit *u, int64_t *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < u->env.n; i++)
        if (!env_overridden(u->env.v[i], &u->env, i + 1) && !env_overridden(u->env.v[i], &u->file_env, 0))
            n = env_value_ports(u->env.v[i], out, n, max);
    for (size_t i = 0; i < u->file_env.n; i++)
        if (!env_overridden(u->file_env.v[i], &u->file_env, i + 1))
            n = env_value_ports(u->file_env.v[i], out, n, max);
    return n;
}

bool doctor_zone_counts(const char *zone)
{
    return !strcmp(zone, "Normal") || !strcmp(zone, "Movable");
}

/* ---- /proc and /etc texts ---- */

static bool u64_word(const char *s, const char **end, uint64_t *out)
{
    if (*s < '0' || *s > '9') return false;
    uint64_t v = 0;
    while (*s >= '0' && *s <= '9') {
        if (v > (UINT64_MAX - 9) / 10) return false;
        v = v * 10 + (uint64_t)(*s++ - '0');
    }
    *end = s;
    *out = v;
    return true;
}

int doctor_parse_arcstats(doc_zfs *z, const char *text, char *err, size_t errlen)
{
    bool c_max = false, size = false;
    const char *cur = text;
    while (*cur) {
        const char *e = strchr(cur, '\n');
        size_t n = e ? (size_t)(e - cur) : strlen(cur);
        char l[256];
        snprintf(l, sizeof l, "%.*s", (int)(n < 255 ? n : 255), cur);
        cur = e ? e + 1 : cur + n;
        char name[64], type[16], data[32];
        if (sscanf(l, "%63s %15s %31s", name, type, data) != 3) continue;
        uint64_t v;
        const char *end;
        if (!u64_word(data, &end, &v) || *end) continue;
        if (!strcmp(name, "c_max")) {
            z->c_max = v;
            c_max = true;
        } else if (!strcmp(name, "size")) {
            z->size = v;
            size = true;
        }
    }
    z->arcstats_ok = c_max && size;
    if (!z->arcstats_ok) {
        snprintf(err, errlen, "arcstats: no '%s' row", c_max ? "size" : "c_max");
        return -1;
    }
    return 0;
}

/* next_line's line copied into l (cut at its size); false at the end. */
static bool next_line_copy(const char **cur, char *l, size_t cap)
{
    if (!**cur) return false;
    const char *start;
    size_t n = next_line(cur, &start);
    snprintf(l, cap, "%.*s", (int)(n < cap - 1 ? n : cap - 1), start);
    return true;
}

int doctor_parse_swaps(doc_host *h, const char *text, char *err, size_t errlen)
{
    h->nswaps = 0;
    h->swaps_total_kb = h->swaps_used_kb = 0;
    h->swaps_ok = false;
    const char *cur = text;
    int lineno = 0;
    char l[1024];
    while (next_line_copy(&cur, l, sizeof l)) {
        if (++lineno == 1) {
            if (strncmp(l, "Filename", 8)) {
                snprintf(err, errlen, "swaps line 1: expected the 'Filename Type Size Used Priority' header");
                return -1;
            }
            continue;
        }
        char fname[512], type[32];
        unsigned long long sz, used;
        if (!l[0]) continue;
        if (sscanf(l, "%511s %31s %llu %llu", fname, type, &sz, &used) != 4) {
            snprintf(err, errlen, "swaps line %d: expected 'FILE TYPE SIZE USED PRIORITY'", lineno);
            return -1;
        }
        h->nswaps++;
        h->swaps_total_kb += sz;
        h->swaps_used_kb += used;
    }
    if (lineno == 0) {
        snprintf(err, errlen, "swaps is empty");
        return -1;
    }
    h->swaps_ok = true;
    return 0;
}

void doctor_scan_modprobe(doc_zfs *z, const char *file, const char *text)
{
    const char *cur = text;
    int lineno = 0;
    char l[1024];
    while (next_line_copy(&cur, l, sizeof l)) {
        lineno++;
        char *save, *w = strtok_r(l, " \t\r", &save);
        if (!w || strcmp(w, "options")) continue;
        w = strtok_r(NULL, " \t\r", &save);
        if (!w || strcmp(w, "zfs")) continue;
        while ((w = strtok_r(NULL, " \t\r", &save))) {
            uint64_t v;
            const char *end;
            if (!strncmp(w, "zfs_arc_max=", 12) && u64_word(w + 12, &end, &v) && !*end) {
                z->persisted = true;
                z->persisted_max = v;
                z->persisted_cmdline = false;
                snprintf(z->persisted_where, sizeof z->persisted_where, "%s:%d", file, lineno);
            }
        }
    }
}

void doctor_scan_cmdline(doc_zfs *z, const char *text)
{
    for (const char *r = text; (r = strstr(r, "root=ZFS=")); r += 9)
        if (r == text || r[-1] == ' ') z->root_on_zfs = true;
    const char *p = text;
    while ((p = strstr(p, "zfs.zfs_arc_max="))) {
        uint64_t v;
        const char *end;
        bool start = p == text || p[-1] == ' ';
        if (start && u64_word(p + 16, &end, &v) && (!*end || *end == ' ' || *end == '\n')) {
            z->persisted = true;
            z->persisted_max = v;
            z->persisted_cmdline = true;
            snprintf(z->persisted_where, sizeof z->persisted_where, "the kernel command line");
        }
        p += 16;
    }
}

double doctor_parse_unusable(const char *text, int order)
{
    double worst = -1;
    const char *cur = text;
    char l[1024];
    while (next_line_copy(&cur, l, sizeof l)) {
        char zone[32];
        int node, off = 0;
        if (sscanf(l, "Node %d, zone %31s %n", &node, zone, &off) != 2 || !off) continue;
        if (!doctor_zone_counts(zone)) continue;
        const char *p = l + off;
        for (int i = 0; *p; i++) {
            char *end;
            double x = strtod(p, &end);
            if (end == p) break;
            if (i == order && x > worst) worst = x;
            p = end;
        }
    }
    return worst;
}

/* ---- host checks ---- */

void doctor_check_zfs_arc(const doc_host *h, doc_verdict *v)
{
    const doc_zfs *z = &h->zfs;
    const char *id = "zfs-arc";
    if (!z->loaded) {
        verdict(v, id, DOC_SKIP, "ZFS is not loaded (no spl/kstat/zfs/arcstats)");
        return;
    }
    if (!z->arcstats_ok || !h->mem.meminfo_ok) {
        verdict(v, id, DOC_WARN, "ZFS is loaded but %s", !z->arcstats_ok ? z->error : h->mem_error);
        fix(v, "check that the file is readable; gpumod could not judge the ARC");
        return;
    }
    uint64_t ram = h->mem.mem_total, cap = ram / DOC_ARC_RAM_DIV;
    bool big = z->c_max > cap;
    bool runtime_only = z->param_ok && z->param_max != 0 && !z->persisted;
    bool mismatch = z->persisted && z->param_ok && z->param_max != 0 && z->param_max != z->persisted_max;
    verdict(v, id, big || runtime_only || mismatch ? DOC_WARN : DOC_OK,
            "ARC max %.1f GiB (%.0f%% of RAM %.1f GiB; limit 1/%d = %.1f GiB), now %.1f GiB; zfs_arc_max ",
            gib(z->c_max), ram ? 100.0 * (double)z->c_max / (double)ram : 0, gib(ram), DOC_ARC_RAM_DIV,
            gib(cap), gib(z->size));
    if (!z->param_ok) cat(v->summary, sizeof v->summary, "unreadable");
    else if (z->param_max == 0) cat(v->summary, sizeof v->summary, "0 (the module's default)");
    else cat(v->summary, sizeof v->summary, "%llu", (unsigned long long)z->param_max);
    if (z->persisted)
        cat(v->summary, sizeof v->summary, "; persisted as %llu in %s", (unsigned long long)z->persisted_max,
            z->persisted_where);
    else
        cat(v->summary, sizeof v->summary, "; not persisted in modprobe.d or the kernel command line");
    if (runtime_only)
        cat(v->summary, sizeof v->summary, " (set at runtime only: lost on the next boot, whichever kernel)");
    if (mismatch) cat(v->summary, sizeof v->summary, " (the running value differs from the persisted one)");
    uint64_t want = cap & ~((1ull << 20) - 1);
    /* with root on ZFS the module loads from the initramfs: a modprobe.d
     * line reaches only the initramfs images rebuilt after it was written */
    bool initramfs = z->root_on_zfs && z->persisted && !z->persisted_cmdline;
    if (initramfs)
        cat(v->summary, sizeof v->summary,
            "; root on ZFS (root=ZFS= on the kernel command line): the zfs module loads from the "
            "initramfs, so every kernel's initramfs must carry the modprobe.d line");
    if (big || runtime_only || mismatch)
        fix(v,
            "cap the ARC now: echo %llu > /sys/module/zfs/parameters/zfs_arc_max; and for every boot "
            "and kernel: 'options zfs zfs_arc_max=%llu' in /etc/modprobe.d/zfs.conf (root on ZFS: "
            "then rebuild every initramfs: update-initramfs -u -k all, or dracut -f --regenerate-all; "
            "or put zfs.zfs_arc_max=%llu on the kernel command line)",
            (unsigned long long)(big ? want : z->param_max), (unsigned long long)(big ? want : z->param_max),
            (unsigned long long)(big ? want : z->param_max));
    else if (initramfs)
        fix(v, "after changing %s, rebuild every installed kernel's initramfs (update-initramfs -u -k all, "
               "or dracut -f --regenerate-all); a rebuild of one leaves the other kernels with the old value",
            z->persisted_where);
}

/* The advice, in kB: 1 % of RAM within [64 MiB, 1 GiB], rounded down to
 * MiB.  The warn bounds are derived from it, so the value advised always
 * passes: below half of it, or above 5 % of RAM (but never below it). */
static uint64_t min_free_rec_kb(uint64_t ram_kb)
{
    uint64_t r = ram_kb * DOC_MIN_FREE_REC_PCT / 100;
    if (r < DOC_MIN_FREE_REC_MIN_KB) r = DOC_MIN_FREE_REC_MIN_KB;
    if (r > DOC_MIN_FREE_REC_MAX_KB) r = DOC_MIN_FREE_REC_MAX_KB;
    return r & ~(uint64_t)1023;
}

void doctor_check_min_free(const doc_host *h, doc_verdict *v)
{
    const char *id = "min-free-kbytes";
    if (!h->min_free_ok) {
        verdict(v, id, DOC_WARN, "vm.min_free_kbytes could not be read");
        fix(v, "check that /proc/sys/vm/min_free_kbytes is readable");
        return;
    }
    uint64_t kb = h->min_free_kb;
    if (!h->mem.meminfo_ok || !h->mem.mem_total) {
        verdict(v, id, DOC_WARN, "vm.min_free_kbytes %llu (%.0f MiB); RAM unknown, so it cannot be judged: %s",
                (unsigned long long)kb, (double)kb / 1024, h->mem_error[0] ? h->mem_error : "MemTotal is 0");
        fix(v, "check that /proc/meminfo is readable");
        return;
    }
    uint64_t ram_kb = h->mem.mem_total / 1024, rec = min_free_rec_kb(ram_kb), low = rec / 2;
    uint64_t high = ram_kb * DOC_MIN_FREE_HIGH_PCT / 100;
    if (high < rec) high = rec;
    double pct = 100.0 * (double)kb / (double)ram_kb;
    char range[160];
    snprintf(range, sizeof range, "advised %llu (%.0f MiB: 1%% of RAM %.1f GiB within 64 MiB..1 GiB), warn below "
             "%.0f MiB or above %.0f MiB (%d%% of RAM)",
             (unsigned long long)rec, (double)rec / 1024, (double)ram_kb / (1024.0 * 1024), (double)low / 1024,
             (double)high / 1024, DOC_MIN_FREE_HIGH_PCT);
    if (kb < low) {
        verdict(v, id, DOC_WARN,
                "vm.min_free_kbytes %llu (%.0f MiB, %.2f%% of RAM) is below half the advised value: kswapd "
                "starts reclaiming late, so 2 MiB blocks for pinned and driver allocations run out first; %s",
                (unsigned long long)kb, (double)kb / 1024, pct, range);
    } else if (kb > high) {
        verdict(v, id, DOC_WARN,
                "vm.min_free_kbytes %llu (%.0f MiB, %.1f%% of RAM) is above the bound: it lowers MemAvailable "
                "by about as much, and vLLM and llama.cpp on unified memory count that as not free; %s",
                (unsigned long long)kb, (double)kb / 1024, pct, range);
    } else {
        verdict(v, id, DOC_OK, "vm.min_free_kbytes %llu (%.0f MiB, %.2f%% of RAM) is within the bounds; %s",
                (unsigned long long)kb, (double)kb / 1024, pct, range);
        return;
    }
    fix(v,
        "sysctl -w vm.min_free_kbytes=%llu, and persist it: 'vm.min_free_kbytes = %llu' in "
        "/etc/sysctl.d/90-gpumod.conf (it lowers MemAvailable by about as much)",
        (unsigned long long)rec, (unsigned long long)rec);
}

void doctor_check_swap(const doc_host *h, doc_verdict *v)
{
    const char *id = "swap";
    if (!h->mem.meminfo_ok) {
        verdict(v, id, DOC_WARN, "swap unknown: %s", h->mem_error);
        return;
    }
    uint64_t total = h->mem.swap_total, ram = h->mem.mem_total;
    uint64_t used = total > h->mem.swap_free ? total - h->mem.swap_free : 0;
    size_t n = h->swaps_ok ? h->nswaps : 0;
    if (total == 0) {
        verdict(v, id, DOC_INFO,
                "no swap: idle anonymous memory can never leave RAM, so under pressure the kernel "
                "reclaims page cache (model weights) until the OOM killer acts; systemd-oomd's swap "
                "policy never applies");
        fix(v, "a small swap (zram, or a file of a few GiB) lets idle processes yield RAM; keep it "
               "small so a runaway fails fast instead of thrashing");
        return;
    }
    double pct_used = 100.0 * (double)used / (double)total;
    if (ram && total > ram / DOC_SWAP_LARGE_DIV) {
        verdict(v, id, DOC_WARN,
                "swap %.1f GiB on %zu device(s) is more than 1/%d of RAM %.1f GiB (%.1f GiB used): a "
                "load that overruns can thrash for minutes before anything is killed, and the host "
                "stops answering",
                gib(total), n, DOC_SWAP_LARGE_DIV, gib(ram), gib(used));
        fix(v, "shrink swap to a few GiB (or zram), or rely on gpumod's gate and watchdog to refuse "
               "and stop loads that do not fit");
    } else if (pct_used > DOC_SWAP_USED_PCT) {
        verdict(v, id, DOC_WARN, "swap %.1f GiB, %.0f%% in use (over %d%%): the host is short of RAM",
                gib(total), pct_used, DOC_SWAP_USED_PCT);
        fix(v, "find what holds the swapped memory (smem, /proc/*/status VmSwap) and stop it");
    } else {
        verdict(v, id, DOC_OK,
                "swap %.1f GiB on %zu device(s), %.0f%% in use: small against RAM %.1f GiB, so idle "
                "pages can leave and a runaway still fails fast",
                gib(total), n, pct_used, gib(ram));
    }
}

/* The free blocks of order >= o over the zones that count (Normal,
 * Movable; every zone when the host has neither), their bytes, and the
 * worst zone's unusable free space index at o (mm/vmstat.c
 * unusable_free_index, per zone as the kernel computes it). */
typedef struct frag_figs {
    uint64_t blocks, bytes;
    double worst_ui;
    char worst_zone[48];
    bool fallback; /* no Normal/Movable zone: every zone counted */
} frag_figs;

static void frag_compute(const host_mem *m, frag_figs *f)
{
    memset(f, 0, sizeof *f);
    f->worst_ui = -1;
    bool any = false;
    for (size_t z = 0; z < m->nzones; z++) any |= doctor_zone_counts(m->zones[z].zone);
    f->fallback = !any;
    int o = m->order_2m;
    for (size_t z = 0; z < m->nzones; z++) {
        const buddy_zone *bz = &m->zones[z];
        uint64_t free_pages = 0, suitable = 0, blocks = 0;
        for (size_t i = 0; i < bz->norders && i < 63; i++) {
            uint64_t pages = bz->count[i] << i;
            free_pages += pages;
            if ((int)i >= o) {
                suitable += pages;
                blocks += bz->count[i];
            }
        }
        if (any && !doctor_zone_counts(bz->zone)) continue;
        f->blocks += blocks;
        f->bytes += suitable * m->page_size;
        double ui = free_pages ? (double)(free_pages - suitable) / (double)free_pages : 1.0;
        if (ui > f->worst_ui) {
            f->worst_ui = ui;
            snprintf(f->worst_zone, sizeof f->worst_zone, "node %d %s", bz->node, bz->zone);
        }
    }
}

void doctor_check_fragmentation(const doc_host *h, const doc_policy *p, doc_verdict *v)
{
    const char *id = "fragmentation";
    const host_mem *m = &h->mem;
    if (!m->buddyinfo_ok) {
        verdict(v, id, DOC_WARN, "buddyinfo could not be read: %s", h->buddy_error[0] ? h->buddy_error : "unknown");
        fix(v, "check that /proc/buddyinfo is readable");
        return;
    }
    frag_figs f;
    frag_compute(m, &f);
    bool dbg = h->debugfs_unusable >= 0;
    double ui = dbg ? h->debugfs_unusable : f.worst_ui;
    char why[256];
    bool known = contig_known(m, why, sizeof why);
    bool short_contig = known && m->contig_bytes < p->min_contig_bytes;
    bool frag = ui > DOC_UNUSABLE_WARN;
    doc_status st = !known ? DOC_WARN : short_contig ? (h->nvidia_driver ? DOC_FAIL : DOC_WARN) : frag ? DOC_WARN : DOC_OK;
    if (!known) {
        verdict(v, id, st, "contiguity unknown: %s; the gate does not apply its contiguity rule", why);
        fix(v, "nothing to fix on the host: a VM or a large host fills its free lists as memory is first used; "
               "watch `gpumod gpu` once the host has been up and busy a while");
        return;
    }
    verdict(v, id, st,
            "%s: free memory in blocks >= %u KiB (the gate's figure) %.0f MiB (gate minimum %.0f MiB, for services "
            "that pin host memory); %llu free blocks of order >= %d (2 MiB and larger) hold %.0f MiB; unusable index "
            "at order %d: %.3f (%s; warn above %.1f)",
            f.fallback ? "all zones (no Normal or Movable zone)" : "Normal and Movable zones", HOST_CONTIG_BLOCK >> 10,
            mib(m->contig_bytes), mib(p->min_contig_bytes), (unsigned long long)f.blocks, m->order_2m, mib(f.bytes),
            m->order_2m, ui, dbg ? "debugfs, worst Normal/Movable zone" : f.worst_zone[0] ? f.worst_zone : "no free pages",
            DOC_UNUSABLE_WARN);
    if (short_contig && !h->nvidia_driver)
        cat(v->summary, sizeof v->summary, "; no NVIDIA driver, so the gate does not apply it");
    if (st != DOC_OK)
        fix(v,
            "free memory is in pieces that pinned host memory cannot use: stop what holds pinned memory, drop "
            "caches (sync; echo 3 > /proc/sys/vm/drop_caches) and, if it stays low, reboot; do not write "
            "compact_memory on NVIDIA hosts; llama.cpp under gpumod does not pin (GGML_CUDA_NO_PINNED=1)");
}

void doctor_check_psi(const doc_host *h, const doc_policy *p, doc_verdict *v)
{
    const char *id = "psi";
    const host_mem *m = &h->mem;
    if (!m->psi_ok && h->psi_error[0]) {
        verdict(v, id, DOC_WARN, "memory pressure (PSI) could not be read: %s", h->psi_error);
        fix(v, "check the file: the gate and watchdog cannot see memory pressure while it does not parse");
        return;
    }
    if (!m->psi_ok) {
        verdict(v, id, DOC_SKIP, "memory pressure (PSI) is not available: a kernel without "
                                 "CONFIG_PSI, or booted with psi=0");
        fix(v, "boot with psi=1 so gpumod's gate and watchdog can see memory pressure");
        return;
    }
    doc_status st = DOC_OK;
    if (m->psi_full_avg10 > p->psi_full_avg10_max) st = DOC_FAIL;
    else if (m->psi_some_avg10 > p->psi_some_avg10_max || m->psi_some_avg60 > DOC_PSI_SOME_AVG60_WARN)
        st = DOC_WARN;
    verdict(v, id, st,
            "memory pressure some avg10 %.2f%% avg60 %.2f%%, full avg10 %.2f%% avg60 %.2f%% (gate "
            "refuses above some avg10 %.0f%%, watchdog acts above full avg10 %.0f%%)",
            m->psi_some_avg10, m->psi_some_avg60, m->psi_full_avg10, m->psi_full_avg60, p->psi_some_avg10_max,
            p->psi_full_avg10_max);
    if (st == DOC_FAIL)
        fix(v, "the host is thrashing now: stop the largest memory user (gpumod status; ps aux --sort=-rss)");
    else if (st == DOC_WARN)
        fix(v, "tasks are stalling on memory: free some (stop an idle service) before starting another");
}

void doctor_check_nvml(const doc_host *h, doc_verdict *v)
{
    const char *id = "nvml";
    switch (h->nvml) {
    case NVML_ABSENT:
        verdict(v, id, h->nvidia_driver ? DOC_WARN : DOC_SKIP, "NVML library not found: %s", h->nvml_error);
        if (h->nvidia_driver)
            fix(v, "an NVIDIA driver is loaded but libnvidia-ml.so.1 is not: install the driver's "
                   "utilities package (or set GPUMOD_NVML_LIB)");
        break;
    case NVML_HUNG:
        verdict(v, id, DOC_FAIL, "NVML did not answer within %lld ms: the driver is wedged; gpumod refuses "
                                 "every start while it is",
                (long long)h->nvml_timeout_ms);
        fix(v, "look at dmesg for NVRM/Xid errors and at processes stuck in D state; a wedged driver "
               "usually needs a reboot");
        break;
    case NVML_FAILED:
        verdict(v, id, DOC_WARN, "NVML loaded but failed after %lld ms: %s", (long long)h->nvml_ms,
                h->nvml_error);
        fix(v, "run nvidia-smi to see the driver's own error (a driver/library version mismatch needs a "
               "reboot or a reload of the nvidia modules)");
        break;
    case NVML_OK:
        if (h->nvml_ms > DOC_NVML_WARN_MS) {
            verdict(v, id, DOC_WARN, "NVML answered for %zu GPU(s) in %lld ms (over %d ms)", h->ngpus,
                    (long long)h->nvml_ms, DOC_NVML_WARN_MS);
            fix(v, "a slow first query is the driver initialising each time: run nvidia-persistenced "
                   "(systemctl enable --now nvidia-persistenced)");
        } else {
            verdict(v, id, DOC_OK, "NVML answered for %zu GPU(s) in %lld ms (under %d ms)", h->ngpus,
                    (long long)h->nvml_ms, DOC_NVML_WARN_MS);
        }
        break;
    }
}

void doctor_check_oomd(const doc_host *h, doc_verdict *v)
{
    const char *id = "systemd-oomd";
    if (h->oomd < 0) {
        verdict(v, id, DOC_WARN, "could not list processes to look for systemd-oomd");
        return;
    }
    if (h->oomd > 0) {
        verdict(v, id, DOC_OK,
                "systemd-oomd runs (pid %lld): ManagedOOMPreference=avoid in `gpumod protect` drop-ins "
                "takes effect; it kills whole cgroups at PSI full > 60%% for 30 s where units ask for it",
                (long long)h->oomd_pid);
    } else {
        verdict(v, id, DOC_INFO,
                "systemd-oomd does not run: ManagedOOMPreference= in `gpumod protect` drop-ins does "
                "nothing here (MemoryMin, MemoryLow and OOMScoreAdjust still do)");
        fix(v, "if you want it: systemctl enable --now systemd-oomd");
    }
}

void doctor_check_compact_memory(const doc_host *h, doc_verdict *v)
{
    const char *id = "compact-memory";
    if (!h->nvidia_driver) {
        verdict(v, id, DOC_SKIP, "no NVIDIA driver loaded");
        return;
    }
    verdict(v, id, DOC_INFO,
            "NVIDIA host: never write /proc/sys/vm/compact_memory; compaction migrating pages while the "
            "driver holds its locks has hung hosts and can trigger a kernel BUG "
            "(NVIDIA/open-gpu-kernel-modules PR #1383; docs/doctor.md)");
    fix(v, "when 2 MiB blocks run short: stop services, drop caches, or reboot; gpumod never "
           "compacts");
}

/* ---- unit checks ---- */

const doc_preset *doctor_unit_preset(const doc_unit *u, const doc_preset *p, size_t np)
{
    char id[256];
    if (u->for_id[0]) {
        snprintf(id, sizeof id, "%s", u->for_id);
    } else {
        const char *n = u->name;
        if (!strncmp(n, "gpumod-", 7)) n += 7;
        snprintf(id, sizeof id, "%s", n);
        char *dot = strstr(id, ".service");
        if (dot && !dot[8]) *dot = '\0';
    }
    for (size_t i = 0; i < np; i++)
        if (p[i].id && !strcmp(p[i].id, id)) return &p[i];
    return NULL;
}

static bool restarts(const doc_unit *u)
{
    return u->restart[0] && strcmp(u->restart, "no");
}

void doctor_check_unit_files(const doc_unit *u, size_t nu, doc_verdict *v)
{
    verdict(v, "unit-files", DOC_OK, "%s", "");
    size_t bad = 0, lines = 0, user = 0, sys = 0, dropins = 0;
    for (size_t i = 0; i < nu; i++) {
        if (u[i].scope && !strcmp(u[i].scope, "user")) user++;
        if (u[i].scope && !strcmp(u[i].scope, "system")) sys++;
        dropins += u[i].ndropins;
        if (!u[i].nerrors) continue;
        bad++;
        lines += u[i].nerrors;
        char lab[300];
        cat(v->summary, sizeof v->summary, "%s%s: %s%s", bad > 1 ? "; " : "", doctor_unit_label(&u[i], lab, sizeof lab),
            u[i].error, u[i].nerrors > 1 ? " (and more)" : "");
    }
    if (bad) {
        char list[1024];
        snprintf(list, sizeof list, "%s", v->summary);
        snprintf(v->summary, sizeof v->summary,
                 "%zu unit(s) have %zu line(s) doctor could not read (systemd ignores such lines, so the unit "
                 "does not do what the line says): %s",
                 bad, lines, list);
        v->status = DOC_WARN;
        fix(v, "correct the lines named (systemd-analyze verify UNIT shows systemd's own reading)");
    } else {
        if (user + sys == nu && nu)
            snprintf(v->summary, sizeof v->summary,
                     "%zu unit(s) read (%zu user, %zu system) with %zu drop-in(s); every line parsed", nu, user,
                     sys, dropins);
        else
            snprintf(v->summary, sizeof v->summary, "%zu unit(s) read with %zu drop-in(s); every line parsed",
                     nu, dropins);
    }
}

void doctor_check_restart_loops(const doc_unit *u, size_t nu, doc_verdict *v)
{
    verdict(v, "restart-loops", DOC_OK, "%s", "");
    char lab[300];
    size_t bad = 0, with = 0;
    for (size_t i = 0; i < nu; i++) {
        if (!restarts(&u[i])) continue;
        with++;
        int64_t rs = u[i].restart_sec_ms >= 0 ? u[i].restart_sec_ms : DOC_DEFAULT_RESTART_SEC_MS;
        int64_t iv = u[i].limit_interval_ms >= 0 ? u[i].limit_interval_ms : DOC_DEFAULT_LIMIT_INTERVAL_MS;
        int64_t burst = u[i].limit_burst >= 0 ? u[i].limit_burst : DOC_DEFAULT_LIMIT_BURST;
        /* systemd stops a unit that starts more than burst times within
         * the interval; restarts RestartSec apart only reach that when
         * (burst) gaps fit in it.  A start's own run time only widens the
         * gaps, so this is the best case for the limit. */
        bool unlimited = iv == 0 || burst == 0;
        bool never = !unlimited && rs != DOC_TIME_INFINITY && rs * burst >= iv;
        if (!unlimited && !never) continue;
        bad++;
        cat(v->summary, sizeof v->summary, "%s%s: Restart=%s ", bad > 1 ? "; " : "",
            doctor_unit_label(&u[i], lab, sizeof lab), u[i].restart);
        if (unlimited)
            cat(v->summary, sizeof v->summary, "with StartLimit%s=0: restarts forever",
                iv == 0 ? "IntervalSec" : "Burst");
        else
            cat(v->summary, sizeof v->summary,
                "with RestartSec %.1fs x StartLimitBurst %lld = %.0fs >= StartLimitIntervalSec %.0fs%s: "
                "the limit never trips, it restarts forever",
                (double)rs / 1000, (long long)burst, (double)rs * (double)burst / 1000, (double)iv / 1000,
                u[i].limit_interval_ms < 0 || u[i].limit_burst < 0 ? " (systemd defaults)" : "");
    }
    if (bad) {
        char list[1024];
        snprintf(list, sizeof list, "%s", v->summary);
        snprintf(v->summary, sizeof v->summary, "%zu unit(s) restart without a cap (from the unit files; "
                 "NRestarts needs the bus): %s", bad, list);
        v->status = DOC_WARN;
        fix(v, "a restart loop fragments memory until a pinned allocation hangs the host: set "
               "StartLimitIntervalSec= and StartLimitBurst= in [Unit] so that burst x RestartSec fits "
               "in the interval (e.g. RestartSec=10, StartLimitBurst=3, StartLimitIntervalSec=300), or "
               "render the unit with `gpumod template`");
    } else {
        snprintf(v->summary, sizeof v->summary,
                 "%zu unit(s) read, %zu with Restart=, each stops at its start limit", nu, with);
    }
}

void doctor_check_restart_ports(const doc_unit *u, size_t nu, const doc_preset *p, size_t np, doc_verdict *v)
{
    verdict(v, "restart-always-ports", DOC_OK, "%s", "");
    size_t bad = 0;
    char lab[300];
    for (size_t i = 0; i < nu; i++) {
        if (strcmp(u[i].restart, "always") || !u[i].has_exec) continue;
        int64_t ports[32];
        size_t na = doctor_argv_ports(&u[i].exec, ports, 16);
        size_t n = na + doctor_env_ports(&u[i], ports + na, 16);
        for (size_t k = 0; k < n; k++) {
            bool dup = false;
            for (size_t d = 0; d < k; d++) dup |= ports[d] == ports[k];
            if (dup) continue;
            for (size_t j = 0; j < np; j++) {
                if (p[j].port != ports[k]) continue;
                bad++;
                cat(v->summary, sizeof v->summary, "%s%s listens on port %lld (from its %s), preset '%s''s port",
                    bad > 1 ? "; " : "", doctor_unit_label(&u[i], lab, sizeof lab), (long long)ports[k],
                    k < na ? "ExecStart" : "environment", p[j].id);
            }
        }
    }
    if (bad) {
        char list[1024];
        snprintf(list, sizeof list, "%s", v->summary);
        snprintf(v->summary, sizeof v->summary, "%zu Restart=always unit(s) on a preset's port: %s", bad, list);
        v->status = DOC_FAIL;
        fix(v, "systemd restarts it whenever it stops and it seizes the port before gpumod's service can "
               "bind: set Restart=on-failure (or disable the unit: systemctl disable --now UNIT), or "
               "give the preset another port");
    } else {
        snprintf(v->summary, sizeof v->summary,
                 "no Restart=always unit listens on any of the %zu presets' ports", np);
    }
}

void doctor_check_start_timeout(const doc_unit *u, size_t nu, const doc_preset *p, size_t np, doc_verdict *v)
{
    verdict(v, "start-timeout", DOC_OK, "%s", "");
    size_t n = 0, bad = 0, measured_bad = 0, at_exec = 0;
    char lab[300], execs[1024] = "";
    for (size_t i = 0; i < nu; i++) {
        if (!u[i].gpumod) continue;
        const doc_preset *q = doctor_unit_preset(&u[i], p, np);
        if (!q) continue;
        n++;
        doctor_unit_label(&u[i], lab, sizeof lab);
        /* Type=exec/simple: systemd counts the start done at the exec,
         * so TimeoutStartSec never reaches the model load */
        if (!doctor_unit_start_covers_load(&u[i])) {
            at_exec++;
            cat(execs, sizeof execs, "%s%s: the start ends at exec (Type=%s): the load is not bounded by "
                "TimeoutStartSec", at_exec > 1 ? "; " : "", lab, u[i].type[0] ? u[i].type : "simple");
            continue;
        }
        /* Type=oneshot has no start timeout unless one is set */
        int64_t def = !strcmp(u[i].type, "oneshot") ? DOC_TIME_INFINITY : DOC_DEFAULT_TIMEOUT_START_MS;
        int64_t t = u[i].timeout_start_ms >= 0 ? u[i].timeout_start_ms : def;
        bool measured = q->load_ms >= 0;
        int64_t need = measured ? q->load_ms : q->startup_timeout_ms;
        if (need < 0 || t == DOC_TIME_INFINITY || t >= need) continue;
        bad++;
        if (measured) measured_bad++;
        cat(v->summary, sizeof v->summary, "%s%s (Type=%s%s): TimeoutStartSec %.0fs%s < %s %.0fs",
            bad > 1 ? "; " : "", lab, u[i].type[0] ? u[i].type : "simple",
            u[i].has_exec_post ? ", with ExecStartPost" : "", (double)t / 1000,
            u[i].timeout_start_ms < 0 ? " (systemd's default)" : "",
            measured ? "measured load" : "startup_timeout (no load measured yet)", (double)need / 1000);
    }
    if (bad) {
        char list[1024];
        snprintf(list, sizeof list, "%s", v->summary);
        snprintf(v->summary, sizeof v->summary, "%zu gpumod unit(s) would be killed mid-load: %s", bad, list);
        if (at_exec) cat(v->summary, sizeof v->summary, "; %s", execs);
        v->status = measured_bad ? DOC_FAIL : DOC_WARN;
        fix(v, "render the unit again (gpumod template install ID): TimeoutStartSec comes from the "
               "measured load time or startup_timeout, plus a margin");
    } else if (at_exec) {
        snprintf(v->summary, sizeof v->summary, "%zu gpumod unit(s) with a preset, %zu whose start ends at the "
                 "exec: %s", n, at_exec, execs);
        v->status = DOC_INFO;
    } else {
        snprintf(v->summary, sizeof v->summary,
                 "%zu gpumod unit(s) with a preset; each TimeoutStartSec covers its measured load time, "
                 "else its startup_timeout",
                 n);
    }
}

/* argv[0] of a unit is an absolute path; the preset's is as configured */
static bool argv0_same(const char *unit, const char *want)
{
    if (strchr(want, '/')) return !strcmp(unit, want);
    const char *b = strrchr(unit, '/');
    return !strcmp(b ? b + 1 : unit, want);
}

void doctor_check_stale_units(const doc_unit *u, size_t nu, const doc_preset *p, size_t np, doc_verdict *v)
{
    verdict(v, "stale-units", DOC_OK, "%s", "");
    size_t n = 0, bad = 0;
    char lab[300];
    for (size_t i = 0; i < nu; i++) {
        if (!u[i].gpumod) continue;
        const char *name = doctor_unit_label(&u[i], lab, sizeof lab);
        const doc_preset *q = doctor_unit_preset(&u[i], p, np);
        const char *sep = bad ? "; " : "";
        if (!q) {
            bad++;
            cat(v->summary, sizeof v->summary, "%s%s: no preset '%s' any more", sep, name,
                u[i].for_id[0] ? u[i].for_id : name);
            continue;
        }
        n++;
        if (!q->argv) {
            bad++;
            cat(v->summary, sizeof v->summary, "%s%s: preset '%s' cannot be built: %s", sep, name, q->id,
                q->argv_error ? q->argv_error : "no argv");
            continue;
        }
        if (!u[i].has_exec) {
            bad++;
            cat(v->summary, sizeof v->summary, "%s%s: no ExecStart=%s%s", sep, name,
                u[i].error[0] ? " that parses: " : "", u[i].error);
            continue;
        }
        const strv *a = &u[i].exec, *b = q->argv;
        size_t k = 0, min = a->n < b->n ? a->n : b->n;
        if (min && !argv0_same(a->v[0], b->v[0])) goto differ;
        for (k = 1; k < min; k++)
            if (strcmp(a->v[k], b->v[k])) goto differ;
        if (a->n == b->n && a->n) continue;
    differ:
        bad++;
        if (k < min)
            cat(v->summary, sizeof v->summary, "%s%s: argv[%zu] is '%.60s', preset '%s' has '%.60s'", sep,
                name, k, a->v[k], q->id, b->v[k]);
        else
            cat(v->summary, sizeof v->summary, "%s%s: ExecStart has %zu words, preset '%s' %zu", sep,
                name, a->n, q->id, b->n);
    }
    if (bad) {
        char list[1024];
        snprintf(list, sizeof list, "%s", v->summary);
        snprintf(v->summary, sizeof v->summary, "%zu gpumod unit(s) differ from their preset: %s", bad, list);
        v->status = DOC_WARN;
        fix(v, "the unit runs an old command line (and the gate judges the new one): gpumod template "
               "install ID, or remove the unit of a preset that is gone");
    } else {
        snprintf(v->summary, sizeof v->summary, "%zu gpumod unit(s) run exactly their preset's argv", n);
    }
}
