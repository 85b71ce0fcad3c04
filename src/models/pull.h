/* pull.h (models) - the parts of `gpumod model pull` that decide without
 * doing: byte figures for people, the disk check, what a reply to a
 * resumed request means for the .part on disk, and the progress display
 * (a bar redrawn on a terminal, a line every 10 % elsewhere). */
#ifndef GPUMOD_MODELS_PULL_H
#define GPUMOD_MODELS_PULL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MPULL_MARGIN (1ull << 30) /* free disk kept beyond what a pull writes */

/* "512 B", "1.5 KiB", "4.2 GiB" (UINT64_MAX: "unknown size") */
void mpull_bytes(uint64_t n, char *out, size_t len);
/* 0 when free_bytes holds need + MPULL_MARGIN; else -1 with err naming
 * both figures and dir. */
int mpull_disk_ok(uint64_t need, uint64_t free_bytes, const char *dir, char *err, size_t errlen);

typedef enum {
    MPULL_APPEND,  /* a 206 from the .part's end: append */
    MPULL_RESTART, /* the whole file again (200; or a .part longer than the file): from 0 */
    MPULL_WHOLE,   /* 416 and the .part is the whole file already */
    MPULL_BAD      /* anything else: an error */
} mpull_act;
/* What the reply to "Range: bytes=have-" means: status, a 206's first
 * byte, the file's size (listing or Content-Range; UINT64_MAX unknown). */
mpull_act mpull_decide(int status, uint64_t have, uint64_t range_start, uint64_t total);
/* s is 64 hex digits (an LFS sha256 in X-Linked-Etag), either case */
bool mpull_is_sha256(const char *s);
/* ASCII upper case to lower, in place (a digest compared to ours) */
void mpull_lower(char *s);

/* a + b, saturating at MPULL_HUGE: a sum of byte counts never wraps and
 * never becomes UINT64_MAX, which means "unknown" */
#define MPULL_HUGE (UINT64_MAX - 1)
uint64_t mpull_sat_add(uint64_t a, uint64_t b);

/* s with control characters (\xNN), '\\' and '"' escaped, cut
 * to fit out ("..." at the end when cut) */
void mpull_escape(const char *s, char *out, size_t len);
/* 0 when path (a repository path or a file name from a listing or a
 * URL) is relative and stays below the folder it is joined to: not
 * empty, not absolute, no empty, "." or ".." segment, no backslash, no
 * control character; else -1 with err naming it (escaped) and why. */
int mpull_path_ok(const char *path, const char *what, char *err, size_t errlen);
/* "<prefix>-0000N-of-0000M.gguf" (5 digits each, 1 <= N <= M): true
 * with *n and *m set */
bool mpull_split_name(const char *name, unsigned *n, unsigned *m);

/* "1:05", "1:02:03", "--:--" for an unknown or absurd time */
void mprog_eta(double secs, char *out, size_t len);
/* One progress line for cols columns: name, percent, bar, bytes, rate,
 * ETA (total UINT64_MAX: no percent, bar or ETA). */
void mprog_line(char *out, size_t len, const char *name, uint64_t done, uint64_t total, double rate,
                int cols);
/* the smoothed rate after a sample of inst bytes/s */
double mprog_smooth(double prev, double inst);

typedef struct mprog {
    FILE *out; /* stderr */
    bool on;   /* false: GPUMOD_QUIET */
    bool tty;  /* a bar redrawn with \r; else a line each 10 % */
    int cols;
    char name[96];
    uint64_t total, done;
    int64_t t0, last_draw_ms, sample_ms;
    uint64_t base, sample_bytes; /* base: the bytes there at t0 */
    double rate;                 /* bytes/s, smoothed */
    int tenth;                   /* the last 10 % step printed */
    bool drawn;
} mprog;

void mprog_start(mprog *p, FILE *out, bool on, bool tty, const char *name, uint64_t total,
                 uint64_t done, int64_t now_ms);
/* n more bytes at now_ms; draws when due (10 a second at most) */
void mprog_add(mprog *p, uint64_t n, int64_t now_ms);
/* back to 0 (the server sent the whole file again) */
void mprog_reset(mprog *p, int64_t now_ms);
/* the last draw and its newline (a terminal's line is left clean) */
void mprog_end(mprog *p, int64_t now_ms);

#endif
