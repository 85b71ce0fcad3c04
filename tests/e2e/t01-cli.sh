#!/usr/bin/env bash
# The CLI surface: help from the dispatch table, version, exit code 2 with
# usage on stderr for anything unknown.
. "$(dirname "$0")/lib.sh"

t_begin "--help lists the commands and the exit codes"
t_run 0 gpumod --help
t_has out "usage: gpumod [global options] COMMAND [ARGS]"
t_has out "  config     validate the configuration, or show it resolved"
t_has out "  2  usage or configuration error"
t_has out "  3  daemon unreachable"
t_end

t_begin "--version and version agree"
t_run 0 gpumod --version
v1=$(cat "$T/out")
t_run 0 gpumod version
t_eq "$(cat "$T/out")" "$v1" "version"
t_match out "^gpumod [0-9]+\.[0-9]+\.[0-9]+$"
t_run 0 gpumod --json version
t_jq out '.version | test("^[0-9]")' true
t_end

t_begin "help COMMAND and COMMAND --help"
t_run 0 gpumod help config
t_has out "usage: gpumod config check"
t_has out "config check [--json] [--no-files]"
t_run 0 gpumod config --help
t_has out "usage: gpumod config check"
t_end

t_begin "no command: help on stderr, exit 2"
t_run 2 gpumod
t_has err "usage: gpumod"
t_end

t_begin "unknown command: usage on stderr, exit 2"
t_run 2 gpumod frobnicate
t_has err "gpumod: unknown command 'frobnicate'"
t_has err "usage: gpumod"
t_eq "$(wc -c <"$T/out")" 0 "stdout bytes"
t_end

t_begin "unknown option: usage on stderr, exit 2"
t_run 2 gpumod --frobnicate config check
t_has err "gpumod: unknown option '--frobnicate'"
t_run 2 gpumod config check --frobnicate
t_has err "config check: unexpected argument '--frobnicate'"
t_has err "usage: gpumod config"
t_end

t_begin "a global option without its value"
t_run 2 gpumod config check --config-dir
t_has err "option '--config-dir' needs a value"
t_end

t_begin "unknown subcommand and help for an unknown command"
t_run 2 gpumod config frob
t_has err "config: unknown subcommand 'frob'"
t_run 2 gpumod help frob
t_has err "unknown command 'frob'"
t_end

t_begin "global options work before and after the command, --opt=value too"
mkdir -p "$T/c1/presets"
t_run 0 gpumod config check --no-files --config-dir="$T/c1"
t_has out "$T/c1: 0 presets"
t_run 0 gpumod --config-dir "$T/c1" -q config check --no-files
t_eq "$(wc -c <"$T/out")" 0 "quiet stdout bytes"
t_end

t_begin "precedence: flag > environment > gpumod.yaml > default"
mkdir -p "$T/c2"
printf 'state_dir: %s/from-yaml\n' "$T" >"$T/c2/gpumod.yaml"
GPUMOD_STATE_DIR= t_run 0 env -u GPUMOD_STATE_DIR -u STATE_DIRECTORY "$GPUMOD_BIN" --config-dir "$T/c2" config show --json
t_jq out '.settings.state_dir' "$T/from-yaml"
t_run 0 env GPUMOD_STATE_DIR="$T/from-env" "$GPUMOD_BIN" --config-dir "$T/c2" config show --json
t_jq out '.settings.state_dir' "$T/from-env"
t_run 0 env GPUMOD_STATE_DIR="$T/from-env" "$GPUMOD_BIN" --config-dir "$T/c2" --state-dir "$T/from-flag" config show --json
t_jq out '.settings.state_dir' "$T/from-flag"
t_run 0 env -u GPUMOD_STATE_DIR STATE_DIRECTORY="$T/sd1:$T/sd2" "$GPUMOD_BIN" --config-dir "$T/c2" config show --json
t_jq out '.settings.state_dir' "$T/sd1"
t_jq out '.settings.log_dir' "$T/sd1/logs"
t_end

t_begin "socket: flag > GPUMOD_SOCKET > yaml > XDG_RUNTIME_DIR > state dir"
t_run 0 env -u GPUMOD_SOCKET XDG_RUNTIME_DIR=/run/u "$GPUMOD_BIN" --config-dir "$T/c2" config show --json
t_jq out '.settings.socket' "/run/u/gpumod.sock"
t_run 0 env -u GPUMOD_SOCKET -u XDG_RUNTIME_DIR -u GPUMOD_STATE_DIR -u STATE_DIRECTORY "$GPUMOD_BIN" --config-dir "$T/c2" config show --json
t_jq out '.settings.socket' "$T/from-yaml/gpumod.sock"
t_run 0 env GPUMOD_SOCKET=/x.sock "$GPUMOD_BIN" --config-dir "$T/c2" --socket /y.sock config show --json
t_jq out '.settings.socket' "/y.sock"
t_end

t_begin "GPUMOD_PRESETS_DIR and GPUMOD_MODES_DIR are honoured"
mkdir -p "$T/p" "$T/m"
printf 'id: x\ndriver: remote\nremote: {base_url: "http://h:1"}\n' >"$T/p/x.yaml"
printf 'id: mm\nname: MM\nservices: [x]\n' >"$T/m/mm.yaml"
GPUMOD_PRESETS_DIR=$T/p GPUMOD_MODES_DIR=$T/m t_run 0 gpumod --config-dir "$T/c1" config check --no-files
t_has out "1 preset, 1 mode"
GPUMOD_PRESETS_DIR=$T/nope t_run 2 gpumod --config-dir "$T/c1" config check --no-files
t_has err "$T/nope: error: presets directory does not exist"
t_end

t_done
