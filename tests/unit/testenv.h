/* testenv.h - what unit tests share: paths under the source and build
 * trees as tests/run exports them (GPUMOD_SRC, BUILD), the deadline scale
 * (GPUMOD_TEST_TIME_SCALE), and small file helpers.  Header-only; include
 * after <cmocka.h>. */
#ifndef GPUMOD_TESTENV_H
#define GPUMOD_TESTENV_H

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "util/buf.h"
#include "util/clock.h"

static inline int64_t scale(void)
{
    const char *s = getenv("GPUMOD_TEST_TIME_SCALE");
    int64_t v = s ? atoll(s) : 1;
    return v > 0 ? v : 1;
}

static inline int64_t mono_ms(void)
{
    return clock_mono_ms();
}

/* $GPUMOD_SRC/$BUILD/rel (caller frees) */
static inline char *build_path(const char *rel)
{
    const char *src = getenv("GPUMOD_SRC"), *b = getenv("BUILD");
    if (!b || !*b) b = "build";
    if (b[0] == '/') return xasprintf("%s/%s", b, rel);
    return xasprintf("%s/%s/%s", src && *src ? src : ".", b, rel);
}

/* $GPUMOD_SRC/rel (caller frees) */
static inline char *src_path(const char *rel)
{
    const char *src = getenv("GPUMOD_SRC");
    return xasprintf("%s/%s", src && *src ? src : ".", rel);
}

/* the whole file, NULL if unreadable (caller frees) */
static inline char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    buf b = BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_add(&b, chunk, n);
    fclose(f);
    return buf_detach(&b);
}

/* The file once it holds `needle`, waiting up to 10 s x the time scale
 * (a writer such as fakellm logs a request after its answer is out, so
 * the client may finish first); NULL on the deadline with the file's last
 * text in *last (caller frees both). */
static inline char *wait_text_has(const char *path, const char *needle, char **last)
{
    int64_t end = mono_ms() + 10000 * scale();
    *last = NULL;
    for (;;) {
        char *t = read_text(path);
        if (t && strstr(t, needle))
            return t;
        if (mono_ms() >= end) {
            *last = t;
            return NULL;
        }
        free(t);
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* replace path by rename, as the fakes' readers expect of writers */
static inline void write_file(const char *path, const char *text, mode_t mode)
{
    char *tmp = xasprintf("%s.new", path);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(tmp, mode), 0);
    assert_int_equal(rename(tmp, path), 0);
    free(tmp);
}

static inline int testenv_rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    return remove(path);
}

/* remove a test's temp tree, depth first, never following symlinks */
static inline void rm_rf(const char *dir)
{
    if (dir) nftw(dir, testenv_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
