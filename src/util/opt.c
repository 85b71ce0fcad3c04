/* opt.c - command-line values read strictly (opt.h): strtol/strtod with
 * the whole word consumed, errno checked and the range applied, so "8x",
 * "" and "1e999" are refused rather than read as 8, 0 and inf. */
#include "util/opt.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int opt_value(int argc, char **argv, int *i, const char *opt, const char **val)
{
    size_t n = strlen(opt);
    if (strncmp(argv[*i], opt, n)) return 0;
    if (argv[*i][n] == '=') {
        *val = argv[*i] + n + 1;
        return 1;
    }
    if (argv[*i][n]) return 0;
    if (*i + 1 >= argc) return -1;
    *val = argv[++*i];
    return 1;
}

int opt_long(const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

int opt_double(const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (!*v || *end || errno || !isfinite(x) || x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

static bool is_help(const char *a)
{
    return !strcmp(a, "-h") || !strcmp(a, "--help");
}

int opt_dispatch(int argc, char **argv, const char *usage, const opt_sub *subs, int (*run)(int argc, char **argv))
{
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    if (is_help(argv[1]) || !strcmp(argv[1], "help")) {
        fputs(usage, stdout);
        return 0;
    }
    for (const opt_sub *s = subs; s->name; s++)
        if (!strcmp(argv[1], s->name)) return s->fn(argc - 1, argv + 1);
    for (int i = 1; i < argc; i++)
        if (is_help(argv[i])) {
            fputs(usage, stdout);
            return 0;
        }
    return run(argc, argv);
}
