/* opt.h - command-line values read strictly, for every program of
 * gpumod (the CLI's global options, bench's and eval's): "--opt VALUE"
 * or "--opt=VALUE", and whole numbers within a range with nothing after
 * them.  No message here: each caller says what was expected its way. */
#ifndef GPUMOD_OPT_H
#define GPUMOD_OPT_H

/* argv[*i] is opt, with its value in the next word (*i moves past it) or
 * after '=': 1 with *val, 0 when argv[*i] is another option, -1 when the
 * value is missing. */
int opt_value(int argc, char **argv, int *i, const char *opt, const char **val);
/* v is a decimal integer in [lo, hi]: 0 with *out, else -1. */
int opt_long(const char *v, long lo, long hi, long *out);
/* v is a finite number in [lo, hi]: 0 with *out, else -1. */
int opt_double(const char *v, double lo, double hi, double *out);

/* A helper's subcommands: argv[1] names one of subs (called with argv
 * from argv[1]), else the run (called with argv whole).  No argument: the
 * usage on stderr, 2; -h, --help or help first, or -h/--help anywhere
 * in a run: the usage on stdout, 0. */
typedef struct opt_sub {
    const char *name;
    int (*fn)(int argc, char **argv);
} opt_sub;
int opt_dispatch(int argc, char **argv, const char *usage, const opt_sub *subs, int (*run)(int argc, char **argv));

#endif
