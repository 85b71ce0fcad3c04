/* replay_corpus.h - the TAP driver both corpus replays share: every file
 * of a corpus directory (argv[1], else $GPUMOD_SRC/<default_rel>), in name
 * order, read whole and handed to the replay function of the fuzz target
 * at hand.  Include after defining `static int replay(const uint8_t *data,
 * size_t len, const char *name, char *msg, size_t msglen)` (0 ok, -1 failed
 * with msg). */
#ifndef GPUMOD_REPLAY_CORPUS_H
#define GPUMOD_REPLAY_CORPUS_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole file, or NULL after a message naming it. */
static uint8_t *replay_read(const char *dir, const char *name, size_t *len, char *msg, size_t msglen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, msglen, "cannot open '%s'", path);
        return NULL;
    }
    size_t cap = 1 << 16, k;
    uint8_t *data = malloc(cap);
    *len = 0;
    while ((k = fread(data + *len, 1, cap - *len, f)) > 0) {
        *len += k;
        if (*len == cap) data = realloc(data, cap *= 2);
    }
    fclose(f);
    return data;
}

static int replay_by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_corpus(int argc, char **argv, const char *default_rel)
{
    const char *src = getenv("GPUMOD_SRC");
    char dir[4096];
    if (argc > 1)
        snprintf(dir, sizeof dir, "%s", argv[1]);
    else
        snprintf(dir, sizeof dir, "%s/%s", src ? src : ".", default_rel);
    DIR *d = opendir(dir);
    if (!d) {
        printf("1..1\nnot ok 1 - cannot open the corpus '%s' (set GPUMOD_SRC)\n", dir);
        return 1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || !strcmp(de->d_name, "README")) continue;
        names = realloc(names, (n + 1) * sizeof *names);
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, replay_by_name);
    printf("1..%zu\n", n ? n : 1);
    if (!n) printf("not ok 1 - the corpus '%s' is empty\n", dir);
    int failed = !n;
    for (size_t i = 0; i < n; i++) {
        char msg[1200] = "";
        size_t len = 0;
        uint8_t *data = replay_read(dir, names[i], &len, msg, sizeof msg);
        int rc = data ? replay(data, len, names[i], msg, sizeof msg) : -1;
        free(data);
        if (rc < 0) {
            printf("not ok %zu - %s: %s\n", i + 1, names[i], msg);
            failed = 1;
        } else {
            printf("ok %zu - %s%s%s%s\n", i + 1, names[i], msg[0] ? " (refused: " : "", msg, msg[0] ? ")" : "");
        }
        free(names[i]);
    }
    free(names);
    return failed;
}

#endif
