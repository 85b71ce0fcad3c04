/* helper.c - the main() of gpumod-bench, the git-style helper that holds
 * every command needing libcurl: `gpumod bench` execs it as gpumod-bench,
 * `gpumod eval` as gpumod-eval, `gpumod model fit|pull|search` as
 * gpumod-model, `gpumod preset new` as gpumod-preset (argv[0];
 * src/cli/bench.c), so that each
 * command keeps its own words after the program name and neither can be
 * mistaken for the other's target.  It sits above bench/ and eval/,
 * which are siblings and never include each other. */
#include <string.h>

#include "bench/bench.h"
#include "eval/erun.h"
#include "models/models.h"

int tune_main(int argc, char **argv); /* src/tune/tmain.c */

int main(int argc, char **argv)
{
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    if (!strcmp(base, "gpumod-eval")) return eval_main(argc, argv);
    if (!strcmp(base, "gpumod-tune")) return tune_main(argc, argv);
    if (!strcmp(base, "gpumod-model")) return models_main(argc, argv);
    if (!strcmp(base, "gpumod-preset")) return preset_new_main(argc, argv);
    return bench_main(argc, argv);
}
