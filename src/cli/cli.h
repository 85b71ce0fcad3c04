/* cli.h - what every command gets: the global options, parsed once by
 * main(), and the exit codes of STYLE.md (util/exitcode.h). */
#ifndef GPUMOD_CLI_H
#define GPUMOD_CLI_H

#include <stdbool.h>

#include "config/config.h"
#include "util/exitcode.h"

typedef struct cli {
    config_paths paths;
    bool json;
    int verbose; /* -q: -1, default 0, -v: 1, -vv: 2 */
    const char *prog;
} cli;

typedef struct cmd {
    const char *name;
    const char *usage;   /* arguments, for the synopsis */
    const char *summary; /* one line */
    const char *help;    /* the long text of `gpumod help NAME` */
    int (*run)(cli *c, int argc, char **argv); /* argv[0] is the command name */
} cmd;

/* Print "gpumod: <msg>" and the command's usage to stderr; returns EXIT_USAGE. */
int cli_usage_error(const cli *c, const cmd *command, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const cmd *cli_find(const char *name);
void cli_print_command_help(const cmd *command, bool to_stderr);

/* Command groups (src/cli/<group>.c). */
int cmd_config(cli *c, int argc, char **argv);
int cmd_gpu(cli *c, int argc, char **argv);
int cmd_model(cli *c, int argc, char **argv);
int cmd_preset(cli *c, int argc, char **argv);
/* exec the libcurl helper as name ("gpumod-model", "gpumod-preset") */
int cmd_model_helper(cli *c, const char *name, int argc, char **argv);
int cmd_preflight(cli *c, int argc, char **argv);
int cmd_simulate(cli *c, int argc, char **argv);
int cmd_serve(cli *c, int argc, char **argv);
int cmd_status(cli *c, int argc, char **argv);
int cmd_service(cli *c, int argc, char **argv);
int cmd_events(cli *c, int argc, char **argv);
int cmd_reload(cli *c, int argc, char **argv);
int cmd_mode(cli *c, int argc, char **argv);
int cmd_route(cli *c, int argc, char **argv);

/* Print the diagnostics of a configuration to stderr (file:line:col). */
void cli_print_diags(const config *cfg, const char *only_file);
/* Parse an integer option value; 0, or prints a usage error and returns -1. */
int cli_int_arg(const cli *c, const cmd *k, const char *opt, const char *val, int64_t lo, int64_t hi, int64_t *out);
/* A start's override option at argv[*i] (--set KEY=VALUE, --env
 * NAME=VALUE, --ctx N / --context-size N), added to the JSON object ov
 * (config/overrides.h: the daemon checks the values): 1 when taken (*i on
 * its last word), 0 when argv[*i] is none of them, -1 after a usage error. */
struct cJSON;
int cli_override_opt(const cli *c, const cmd *k, int argc, char **argv, int *i, struct cJSON *ov);

#endif
