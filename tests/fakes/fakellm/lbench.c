/* lbench.c - fakellm as llama.cpp's llama-bench (README.md "llama-bench").
 *
 * Run under the name llama-bench (a link to fakellm beside it), it takes
 * llama-bench's flags, prints what `-o json` prints (one object per test:
 * pp when -p > 0, tg when -n > 0) and exits, without loading anything.
 * The speed is speed.c's model with these flags matched by their long
 * names (threads, batch_size, cache_type_k...): tg's samples are the
 * model's tokens/s, pp's FAKELLM_BENCH_PP_FACTOR (default 20) times it,
 * each repetition drawn with the model's seeded noise from the argv, the
 * test and the repetition's index, and the run's number when
 * FAKELLM_BENCH_COUNTER names a file (read and incremented by each run),
 * so that repeated runs of one argv differ, reproducibly.
 * FAKELLM_BENCH_FAIL=N exits N after a load error on stderr, as a real
 * llama-bench does when the model does not load. */
#include <math.h>
#include <errno.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakellm.h"

/* llama-bench's flags: the spellings, and the preset key speed.c names them by */
static const struct lb_opt {
    const char *s, *l, *key;
} lb_opts[] = {
    {"-m", "--model", "model"},         {"-p", "--n-prompt", "n_prompt"},
    {"-n", "--n-gen", "n_gen"},         {"-r", "--repetitions", "repetitions"},
    {"-o", "--output", "output"},       {"-t", "--threads", "threads"},
    {"-b", "--batch-size", "batch_size"}, {"-ub", "--ubatch-size", "ubatch_size"},
    {"-ctk", "--cache-type-k", "cache_type_k"}, {"-ctv", "--cache-type-v", "cache_type_v"},
    {"-fa", "--flash-attn", "flash_attn"}, {"-ngl", "--n-gpu-layers", "n_gpu_layers"},
    {"-ncmoe", "--n-cpu-moe", "n_cpu_moe"},
};
#define LB_N (sizeof lb_opts / sizeof lb_opts[0])
static const char *lb_given[LB_N];

int lbench_flag(const char *key, const char **val)
{
    for (size_t i = 0; i < LB_N; i++)
        if (!strcmp(lb_opts[i].key, key)) {
            *val = lb_given[i];
            return 0;
        }
    return -1;
}

static const char *given(const char *key, const char *dflt)
{
    const char *v = NULL;
    lbench_flag(key, &v);
    return v ? v : dflt;
}

static int parse(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        size_t k = 0;
        while (k < LB_N && strcmp(argv[i], lb_opts[k].s) && strcmp(argv[i], lb_opts[k].l))
            k++;
        if (k == LB_N || i + 1 >= argc) {
            fprintf(stderr, "error: invalid parameter for argument: %s\n", argv[i]);
            return -1;
        }
        lb_given[k] = argv[++i];
    }
    if (strcmp(given("output", "md"), "json")) {
        fprintf(stderr, "fakellm as llama-bench: only -o json is played (got '%s')\n", given("output", "md"));
        return -1;
    }
    return 0;
}

/* the run's number from FAKELLM_BENCH_COUNTER's file (0 without one) */
static long run_number(void)
{
    const char *path = getenv("FAKELLM_BENCH_COUNTER");
    if (!path || !*path)
        return 0;
    long n = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%ld", &n) != 1)
            n = 0;
        fclose(f);
    }
    if ((f = fopen(path, "w"))) {
        fprintf(f, "%ld\n", n + 1);
        fclose(f);
    }
    return n;
}

static long run_no;

static void samples(const char *test, int reps, double factor, double *ts, double *avg, double *sd,
                    int argc, char **argv)
{
    buf key = BUF_INIT;
    *avg = 0;
    for (int r = 0; r < reps; r++) {
        buf_clear(&key);
        for (int i = 1; i < argc; i++)
            buf_printf(&key, "%s ", argv[i]);
        buf_printf(&key, "%s rep %d run %ld", test, r, run_no);
        ts[r] = speed_for(key.p) * factor;
        *avg += ts[r] / reps;
    }
    double ss = 0;
    for (int r = 0; r < reps; r++)
        ss += (ts[r] - *avg) * (ts[r] - *avg);
    *sd = reps > 1 ? sqrt(ss / (reps - 1)) : 0;
    buf_release(&key);
}

static void print_test(bool first, int n_prompt, int n_gen, int reps, double factor, int argc, char **argv)
{
    double ts[128], avg, sd;
    samples(n_prompt ? "pp" : "tg", reps, factor, ts, &avg, &sd, argc, argv);
    int n = n_prompt + n_gen;
    const char *fa = given("flash_attn", "0");
    printf("%s  {\n", first ? "" : ",\n");
    printf("    \"build_commit\": \"fakellm\",\n    \"build_number\": 10587,\n");
    printf("    \"cpu_info\": \"fakellm\",\n    \"gpu_info\": \"\",\n    \"backends\": \"CPU\",\n");
    printf("    \"model_filename\": \"%s\",\n    \"model_type\": \"fakellm 260K F32\",\n", given("model", ""));
    printf("    \"model_size\": 1048576,\n    \"model_n_params\": 262144,\n");
    printf("    \"n_batch\": %s,\n    \"n_ubatch\": %s,\n", given("batch_size", "2048"), given("ubatch_size", "512"));
    printf("    \"n_threads\": %s,\n", given("threads", "4"));
    printf("    \"type_k\": \"%s\",\n    \"type_v\": \"%s\",\n", given("cache_type_k", "f16"),
           given("cache_type_v", "f16"));
    printf("    \"n_gpu_layers\": %s,\n    \"n_cpu_moe\": %s,\n", given("n_gpu_layers", "99"), given("n_cpu_moe", "0"));
    printf("    \"flash_attn\": %s,\n", strcmp(fa, "0") && strcmp(fa, "off") ? "true" : "false");
    printf("    \"n_prompt\": %d,\n    \"n_gen\": %d,\n    \"n_depth\": 0,\n", n_prompt, n_gen);
    printf("    \"test_time\": \"2026-01-01T00:00:00Z\",\n");
    printf("    \"avg_ns\": %.0f,\n    \"stddev_ns\": %.0f,\n", n / avg * 1e9, n / avg * 1e9 * sd / avg);
    printf("    \"avg_ts\": %.6f,\n    \"stddev_ts\": %.6f,\n", avg, sd);
    printf("    \"samples_ns\": [ ");
    for (int r = 0; r < reps; r++)
        printf("%s%.0f", r ? ", " : "", n / ts[r] * 1e9);
    printf(" ],\n    \"samples_ts\": [ ");
    for (int r = 0; r < reps; r++)
        printf("%s%.6f", r ? ", " : "", ts[r]);
    printf(" ]\n  }");
}

int lbench_main(int argc, char **argv)
{
    char err[512];
    if (parse(argc, argv) < 0)
        return 1;
    if (speed_init(err, sizeof err) < 0) {
        fprintf(stderr, "fakellm: %s\n", err);
        return 2;
    }
    int np = atoi(given("n_prompt", "512")), ng = atoi(given("n_gen", "128")), reps = atoi(given("repetitions", "5"));
    const char *fail = getenv("FAKELLM_BENCH_FAIL"), *f = getenv("FAKELLM_BENCH_PP_FACTOR");
    double factor = f && *f ? atof(f) : 20;
    run_no = run_number();
    fprintf(stderr, "llama_model_load_from_file_impl: fakellm as llama-bench, model '%s'\n", given("model", ""));
    if (fail && *fail) {
        fprintf(stderr, "main: error: failed to load model '%s'\n", given("model", ""));
        speed_release();
        return atoi(fail) ? atoi(fail) : 1;
    }
    const char *sl = getenv("FAKELLM_BENCH_SLEEP_MS"); /* a slow run, for the daemon's shutdown */
    if (sl && *sl && atol(sl) > 0) {
        struct timespec ts = {atol(sl) / 1000, (atol(sl) % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
    }
    if (reps < 1 || reps > 128 || np < 0 || ng < 0) {
        fprintf(stderr, "error: invalid parameter for argument: -r/-p/-n\n");
        speed_release();
        return 1;
    }
    printf("[\n");
    if (np > 0)
        print_test(true, np, 0, reps, factor, argc, argv);
    if (ng > 0)
        print_test(np <= 0, 0, ng, reps, 1, argc, argv);
    printf("\n]\n");
    speed_release();
    return 0;
}
