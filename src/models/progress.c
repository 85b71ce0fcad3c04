/* progress.c (models) - model pull's figures and progress display.
 *
 * On a terminal: one line redrawn with \r at most 10 times a second
 * (name, percent, bar, bytes, a smoothed rate, ETA).  Elsewhere (a log, a
 * pipe): a line at each 10 % so that a log shows the pull moving without
 * thousands of lines.  The rate is an exponential average of samples a
 * quarter second or more apart: steady enough to read, quick to follow a
 * change of speed. */
#include "models/pull.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "util/errf.h"

#define REDRAW_MS 100
#define SAMPLE_MS 250

void mpull_bytes(uint64_t n, char *out, size_t len)
{
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (n == UINT64_MAX) {
        snprintf(out, len, "unknown size");
        return;
    }
    if (n < 1024) {
        snprintf(out, len, "%" PRIu64 " B", n);
        return;
    }
    double v = (double)n / 1024;
    int u = 0;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    snprintf(out, len, "%.1f %s", v, unit[u]);
}

int mpull_disk_ok(uint64_t need, uint64_t free_bytes, const char *dir, char *err, size_t errlen)
{
    if (need == 0 || (free_bytes >= MPULL_MARGIN && free_bytes - MPULL_MARGIN >= need)) return 0;
    char a[32], b[32];
    mpull_bytes(need, a, sizeof a);
    mpull_bytes(free_bytes, b, sizeof b);
    return errf_ret(-1, err, errlen,
                    "not enough disk: the pull needs %s (%" PRIu64 " bytes) plus 1.0 GiB to spare, "
                    "%s has %s (%" PRIu64 " bytes) free",
                    a, need, dir, b, free_bytes);
}

mpull_act mpull_decide(int status, uint64_t have, uint64_t range_start, uint64_t total)
{
    if (status == 206) return range_start == have ? MPULL_APPEND : MPULL_BAD;
    if (status == 200) return MPULL_RESTART;
    if (status == 416 && total != UINT64_MAX)
        return have == total ? MPULL_WHOLE : have > total ? MPULL_RESTART : MPULL_BAD;
    if (status == 416 && have > 0) return MPULL_RESTART;
    return MPULL_BAD;
}

bool mpull_is_sha256(const char *s)
{
    size_t i = 0;
    for (; s[i]; i++)
        if (!isxdigit((unsigned char)s[i])) return false;
    return i == 64;
}

void mpull_lower(char *s)
{
    for (; *s; s++)
        if (*s >= 'A' && *s <= 'Z') *s = (char)(*s - 'A' + 'a');
}

uint64_t mpull_sat_add(uint64_t a, uint64_t b)
{
    return a >= MPULL_HUGE || b >= MPULL_HUGE - a ? MPULL_HUGE : a + b;
}

void mpull_escape(const char *s, char *out, size_t len)
{
    if (!len) return;
    size_t o = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char e[8];
        if (c == '\\' || c == '"')
            snprintf(e, sizeof e, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            snprintf(e, sizeof e, "\\x%02x", c);
        else
            e[0] = (char)c, e[1] = 0;
        size_t k = strlen(e);
        if (o + k + 4 > len) { /* room for "..." and the 0 */
            snprintf(out + o, len - o, "%s", len - o > 3 ? "..." : "");
            return;
        }
        memcpy(out + o, e, k);
        o += k;
    }
    out[o] = 0;
}

static const char *path_flaw(const char *path)
{
    if (!*path) return "it is empty";
    if (path[0] == '/') return "it is absolute";
    for (const char *c = path; *c; c++) {
        if ((unsigned char)*c < 0x20 || *c == 0x7f) return "it holds a control character";
        if (*c == '\\') return "it holds a backslash";
    }
    for (const char *seg = path;;) {
        size_t n = strcspn(seg, "/");
        if (n == 0) return "it has an empty segment";
        if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return "it has a '.' or '..' segment";
        if (!seg[n]) return NULL;
        seg += n + 1;
    }
}

int mpull_path_ok(const char *path, const char *what, char *err, size_t errlen)
{
    const char *why = path_flaw(path);
    if (!why) return 0;
    char e[512];
    mpull_escape(path, e, sizeof e);
    return errf_ret(-1, err, errlen,
                    "%s \"%s\" is refused: %s (a file must stay below the destination folder)",
                    what, e, why);
}

bool mpull_split_name(const char *name, unsigned *n, unsigned *m)
{
    size_t len = strlen(name);
    static const char tail[] = "-00000-of-00000.gguf";
    size_t tl = sizeof tail - 1;
    if (len <= tl) return false;
    const char *t = name + len - tl;
    unsigned a = 0, b = 0;
    for (size_t i = 0; i < tl; i++) {
        char c = t[i];
        if (tail[i] == '0') {
            if (!isdigit((unsigned char)c)) return false;
            if (i < 6)
                a = a * 10 + (unsigned)(c - '0');
            else
                b = b * 10 + (unsigned)(c - '0');
        } else if (tolower((unsigned char)c) != tail[i])
            return false;
    }
    if (a < 1 || a > b) return false;
    *n = a, *m = b;
    return true;
}

void mprog_eta(double secs, char *out, size_t len)
{
    if (!(secs >= 0) || secs > 99 * 3600.0) {
        snprintf(out, len, "--:--");
        return;
    }
    long s = lround(secs);
    if (s >= 3600)
        snprintf(out, len, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(out, len, "%ld:%02ld", s / 60, s % 60);
}

double mprog_smooth(double prev, double inst)
{
    return prev <= 0 ? inst : 0.7 * prev + 0.3 * inst;
}

void mprog_line(char *out, size_t len, const char *name, uint64_t done, uint64_t total, double rate,
                int cols)
{
    char d[32], t[32], eta[16], r[32];
    mpull_bytes(done, d, sizeof d);
    mpull_bytes(total, t, sizeof t);
    if (rate > 0)
        snprintf(r, sizeof r, "%.1f MiB/s", rate / (1024.0 * 1024.0));
    else
        snprintf(r, sizeof r, "-- MiB/s");
    bool known = total != UINT64_MAX && total > 0;
    mprog_eta(known && rate > 0 ? (double)(total > done ? total - done : 0) / rate : -1, eta,
              sizeof eta);
    if (!known) {
        snprintf(out, len, "%.40s  %s  %s", name, d, r);
        return;
    }
    int pct = (int)(done >= total ? 100 : done * 100 / total);
    char tail[128];
    snprintf(tail, sizeof tail, "%3d%% %10s / %-10s %13s  ETA %-8s", pct, d, t, r, eta);
    int bar = cols - 2 - (int)strlen(tail) - 4 - (int)(strlen(name) < 32 ? strlen(name) : 32);
    if (bar > 40) bar = 40;
    if (bar < 10) {
        snprintf(out, len, "%.32s  %3d%% %s / %s  %s  ETA %s", name, pct, d, t, r, eta);
        return;
    }
    char b[48];
    int fill = (int)(done >= total ? bar : (int)(done * (uint64_t)bar / total));
    for (int i = 0; i < bar; i++)
        b[i] = i < fill ? '#' : '.';
    b[bar] = 0;
    snprintf(out, len, "%.32s [%s] %s", name, b, tail);
}

void mprog_start(mprog *p, FILE *out, bool on, bool tty, const char *name, uint64_t total,
                 uint64_t done, int64_t now_ms)
{
    memset(p, 0, sizeof *p);
    p->out = out;
    p->on = on;
    p->tty = tty;
    p->cols = 80;
    snprintf(p->name, sizeof p->name, "%s", name);
    p->total = total;
    p->done = done;
    p->t0 = now_ms;
    p->base = done;
    p->sample_ms = now_ms;
    p->sample_bytes = done;
    p->last_draw_ms = now_ms - REDRAW_MS;
    p->tenth = total && total != UINT64_MAX ? (int)(done * 10 / total) : 0;
}

/* the smoothed rate, or the average so far before the first sample */
static double rate_of(const mprog *p, int64_t now_ms)
{
    if (p->rate > 0 || now_ms <= p->t0 || p->done <= p->base) return p->rate;
    return (double)(p->done - p->base) * 1000.0 / (double)(now_ms - p->t0);
}

static void draw(mprog *p, int64_t now_ms)
{
    char line[256];
    mprog_line(line, sizeof line, p->name, p->done, p->total, rate_of(p, now_ms), p->cols);
    fprintf(p->out, "\r%-*s", p->cols - 1, line);
    fflush(p->out);
    p->drawn = true;
}

void mprog_add(mprog *p, uint64_t n, int64_t now_ms)
{
    p->done += n;
    if (now_ms - p->sample_ms >= SAMPLE_MS) {
        double dt = (double)(now_ms - p->sample_ms) / 1000.0;
        p->rate = mprog_smooth(p->rate, (double)(p->done - p->sample_bytes) / dt);
        p->sample_ms = now_ms;
        p->sample_bytes = p->done;
    }
    if (!p->on) return;
    if (p->tty) {
        if (now_ms - p->last_draw_ms < REDRAW_MS) return;
        p->last_draw_ms = now_ms;
        draw(p, now_ms);
        return;
    }
    if (!p->total || p->total == UINT64_MAX) return;
    int t = (int)(p->done >= p->total ? 10 : p->done * 10 / p->total);
    if (t <= p->tenth) return;
    p->tenth = t;
    char line[256];
    mprog_line(line, sizeof line, p->name, p->done, p->total, rate_of(p, now_ms), 0);
    fprintf(p->out, "gpumod: pull: %s\n", line);
    fflush(p->out);
}

void mprog_reset(mprog *p, int64_t now_ms)
{
    p->done = p->base = p->sample_bytes = 0;
    p->t0 = p->sample_ms = now_ms;
    p->rate = 0;
    p->tenth = 0;
}

void mprog_end(mprog *p, int64_t now_ms)
{
    if (!p->on || !p->tty) return;
    draw(p, now_ms);
    fputc('\n', p->out);
    fflush(p->out);
}
