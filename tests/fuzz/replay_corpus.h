/* replay_corpus.h - the TAP driver both corpus replays share: every file
 * of a corpus directory (argv[1], else $GPUMOD_SRC/<default_rel>), in name
 * order, through the replay function of the fuzz target at hand.  Include
 * after defining `static int replay(const char *dir, const char *name,
 * char *msg, size_t msglen)` (0 ok, -1 failed with msg). */
#ifndef GPUMOD_REPLAY_CORPUS_H
#define GPUMOD_REPLAY_CORPUS_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        if (replay(dir, names[i], msg, sizeof msg) < 0) {
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
