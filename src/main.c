/* main.c - the dispatch table and the global options.
 *
 * gpumod is one lean binary: every command is a row of `commands`, and
 * --help is generated from the rows.  Global options may stand anywhere
 * before "--" (git-style before the command, or after it), so that
 * `gpumod config check --json` and `gpumod --json config check` agree. */
#include "cli/cli.h"
#include "util/buf.h"
#include "util/opt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmd_help(cli *c, int argc, char **argv);
static int cmd_version(cli *c, int argc, char **argv);
int cmd_bench(cli *c, int argc, char **argv); /* src/cli/bench.c */
int cmd_eval(cli *c, int argc, char **argv);  /* src/cli/bench.c */
int cmd_tune(cli *c, int argc, char **argv);  /* src/cli/bench.c */
int cmd_mcp(cli *c, int argc, char **argv);   /* src/cli/bench.c */
int cmd_tui(cli *c, int argc, char **argv);   /* src/cli/bench.c */
int cmd_template(cli *c, int argc, char **argv); /* src/cli/template.c */
int cmd_protect(cli *c, int argc, char **argv);  /* src/cli/protect.c */
int cmd_doctor(cli *c, int argc, char **argv);   /* src/cli/doctor.c */

static const cmd commands[] = {
    {"config", "check [--json] [--no-files] | show [ID] [--json] | schema | rules",
     "validate the configuration, or show it resolved",
     "  config check [--json] [--no-files]\n"
     "      Read gpumod.yaml, presets/ and modes/, and report every error and\n"
     "      warning with file:line:col.  Checks model files, driver binaries (in\n"
     "      PATH) and every flag against the binary's own --help, unless\n"
     "      --no-files (for a configuration written for another machine).\n"
     "      Applies the rule table (config rules): a refuse rule is an error,\n"
     "      a warn rule a warning; GPU rules need the GPU facts (not --no-files).\n"
     "      Exit 0 when valid (warnings allowed), 2 when not.\n"
     "  config show [ID] [--json]\n"
     "      The resolved settings with every default, or for a preset its keys,\n"
     "      driver options and the exact argv and environment that would run\n"
     "      (secret-looking values redacted), or a mode.\n"
     "  config schema\n"
     "      The reference tables of every key, in Markdown (docs/configuration.md).\n"
     "  config rules\n"
     "      The engine and GPU rules config check applies, in Markdown (docs/rules.md).\n",
     cmd_config},
    {"gpu", "[--json]", "show the host snapshot: GPUs, host memory, fragmentation, pressure",
     "  gpu [--json]\n"
     "      What the gate sees: memory per GPU (NVML, else nvidia-smi, else none)\n"
     "      and for the host (MemAvailable), free memory in blocks of 2 MiB and\n"
     "      larger, memory pressure (PSI), per-process GPU usage, NVML state.\n"
     "      Unified-memory GPUs (GB10) show the host's MemAvailable.\n",
     cmd_gpu},
    {"model",
     "inspect FILE [estimator flags] [--gpus N] | fit SOURCE [estimator flags] [--mode MODE] | "
     "pull SOURCE [--dir DIR] [--dry-run] | search QUERY [--author A] [--limit N] [--fit] | "
     "config hf:ORG/REPO [--json]",
     "describe a GGUF model, find the file that fits, fetch it, search the Hub",
     "  model inspect FILE [flags] [--json]\n"
     "      Reads the GGUF header only (milliseconds for any file size): architecture,\n"
     "      parameters, layers, heads, KV heads, trained context, experts, file type;\n"
     "      then the estimate for llama-server with those flags (defaults: --ctx 4096\n"
     "      --parallel 1, f16 KV cache, --ngl all, --gpus 1; --gpus 0 is CPU only),\n"
     "      by part (weights, kv, rs, compute, output, overhead) and device.\n"
     "      Exit 1 when the file cannot be read or estimated.\n"
     "  model fit SOURCE [--ctx N --parallel N --cache-type-k T ...] [--gpus N]\n"
     "            [--mode MODE] [--endpoint URL] [--json]\n"
     "      SOURCE: a .gguf file or a directory, an https:// URL of a .gguf, or\n"
     "      hf:ORG/REPO[@REV][/FILE] (every .gguf of the repository, split files\n"
     "      grouped).  Remote headers are read with Range requests only; the bytes\n"
     "      fetched are printed.  For each file: the need on each GPU and the host,\n"
     "      whether it fits now, alone (as if no other process used the GPUs: their\n"
     "      used memory taken as 0; host memory as it is) and beside MODE's\n"
     "      services (alone plus their reservations), and the largest context that\n"
     "      fits; sorted by fit, then bits per weight.  Estimator flags and their\n"
     "      defaults as model inspect; --gpus N spreads over N GPUs (default 1 when\n"
     "      there is one).  Exit 1 when no file could be estimated.\n"
     "  model pull SOURCE [--dir DIR] [--dry-run] [--endpoint URL] [-v]\n"
     "      One model (a file, or every part of a split model; a repository\n"
     "      holding several needs hf:ORG/REPO/FILE).  Download with resume (a .part file under a lock, If-Range), the free\n"
     "      disk checked first, SHA-256 checked against the Hub's LFS digest, split\n"
     "      files together, renamed into place when whole.  DIR defaults to the\n"
     "      models_dir setting.  HF_TOKEN (or $HF_HOME/token) for gated repositories.\n"
     "  model search QUERY [--author A] [--task T] [--limit N] [--fit [estimator flags]]\n"
     "      GGUF repositories on the Hub (hf_endpoint setting, HF_ENDPOINT).\n"
     "  model config hf:ORG/REPO[@REV] [--endpoint URL] [--json]\n"
     "      The repository's config.json summed up: architectures, parameters,\n"
     "      experts, context length, sizes, dtype.\n",
     cmd_model},
    {"preset", "new --from FILE|SOURCE [--id ID] [--mode MODE] [--ctx N] [--port N] [--out FILE] [--yes]",
     "write a preset for a GGUF model that config check accepts",
     "  preset new --from FILE|SOURCE [--id ID] [--mode MODE] [--ctx N] [--port N]\n"
     "             [--out FILE] [--yes] [--json]\n"
     "      A preset for the model (a local .gguf, or a source as model fit takes):\n"
     "      a free port, the context and -ngl / --n-cpu-moe that fit this host (or\n"
     "      beside MODE's services), with comments saying how each figure was\n"
     "      chosen.  Shows the file and asks before writing it into the presets\n"
     "      directory (--out FILE elsewhere, - for stdout; --yes does not ask).\n",
     cmd_preset},
    {"preflight", "--for SERVICE | --mode MODE [--json] [--standalone] [--timing]",
     "ask the memory gate whether a start would fit",
     "  preflight --for SERVICE [--json]\n"
     "      The gate every start path uses (a systemd unit's ExecStartPre= too):\n"
     "      the service's need (measured, else estimated, else declared) against\n"
     "      this host's snapshot.  Exit 0 ok, 1 refused (the reason names the\n"
     "      binding constraint with figures), 2 configuration error.\n"
     "  preflight --for SERVICE --set KEY=VALUE ... --env NAME=VALUE ... [--ctx N]\n"
     "      A restart of SERVICE with those overrides (as service start takes\n"
     "      them), judged by the daemon as if SERVICE were stopped first.\n"
     "  preflight --mode MODE [--json]\n"
     "      Every service of the mode in start order, each counting the ones\n"
     "      before it as reserved.\n"
     "  When a daemon runs, the daemon answers (via: daemon): its verdict counts\n"
     "      the memory reserved by starts in flight (except this service's own).\n"
     "      --standalone judges here without asking it.\n"
     "  --timing prints the time of each phase on stderr (config, snapshot,\n"
     "      NVML, state database, need and gate).\n",
     cmd_preflight},
    {"simulate", "service ID [estimator flags] | mode MODE [--json]",
     "what a service or mode would take, and alternatives when it does not fit",
     "  simulate service ID [--ctx N] [--parallel N] [--cache-type-k T] [--cache-type-v T]\n"
     "                      [--ngl N|all] [--n-cpu-moe N] [--flash-attn on|off|auto] [--json]\n"
     "      The need by part and device with its source, a bar per device, the\n"
     "      verdict; when it does not fit, alternatives computed by the estimator:\n"
     "      q8_0 / q4_0 KV cache, the largest context that fits, fewer GPU layers,\n"
     "      more MoE experts on the CPU, each with its figures.\n"
     "  simulate mode MODE [--json]\n"
     "      Every service of the mode in start order against this host, without\n"
     "      a daemon.  The daemon's plan of a changed set (services added or\n"
     "      removed, a context size changed): mode switch MODE --dry-run --add ...\n"
     "      Exit 0 fits, 1 does not fit, 2 configuration error.\n",
     cmd_simulate},
    {"serve", "[--foreground] [--listen HOST:PORT] [--no-router] [--insecure] [-v]",
     "run the daemon that owns this GPU host",
     "  serve [--foreground] [--listen HOST:PORT] [--no-router] [--insecure] [-v]\n"
     "      Start the daemon: the control API on the Unix socket (mode 0600; the\n"
     "      daemon's user, root and members of socket_group may use it), the\n"
     "      supervisor of every service, the memory watchdog, and the router (the\n"
     "      OpenAI-compatible endpoint, router.listen or --listen; --no-router: none).\n"
     "      A non-loopback --listen without API keys (router.api_keys_env) is refused\n"
     "      (exit 2) unless --insecure.  One daemon per state\n"
     "      directory.  Without --foreground it detaches (log: <log_dir>/gpumod.log)\n"
     "      and returns once the socket answers.  SIGTERM/SIGINT stop every service\n"
     "      and then the daemon; SIGHUP reloads the configuration.  sd_notify\n"
     "      READY=1/STOPPING=1/WATCHDOG=1 when NOTIFY_SOCKET is set.\n"
     "      Exit 0 after an orderly shutdown, 1 when another daemon owns the state\n"
     "      directory (its pid is named), the socket is in use or the router cannot\n"
     "      listen, 2 configuration error.\n",
     cmd_serve},
    {"status", "[--json]", "the daemon, its services, memory per device and recent events",
     "  status [--json]\n"
     "      One request to the daemon.  Exit 3 when no daemon is running.\n",
     cmd_status},
    {"service",
     "list | show ID | start ID [--no-wait] [--timeout S] [--ctx N] [--set K=V] [--env N=V] | stop ID | sleep ID | "
     "restart ID [--ctx N] [--set K=V] [--env N=V] | logs ID [-f] [-n N] | load ID MODEL | unload ID MODEL",
     "start, stop and inspect services through the daemon",
     "  service list [--json]          every service with its state, pid, port\n"
     "  service show ID [--json]       one service in detail (need, footprint, restarts,\n"
     "                                 health, last exit, last start)\n"
     "  service start ID [--no-wait] [--timeout S] [--ctx N] [--set KEY=VALUE]... [--env NAME=VALUE]...\n"
     "      Queue for the load slot, pass the gate, spawn, wait until ready (a\n"
     "      progress bar on a terminal).  Exit 0 ready, 1 refused or failed (the\n"
     "      reason, and for a failure the log tail, on stderr), 4 not ready within\n"
     "      --timeout (the start goes on).  --no-wait returns once it is queued.\n"
     "      --ctx N (--context-size N): this start runs with a context of N tokens\n"
     "      instead of the preset's (llamacpp, vllm; judged by the gate like any\n"
     "      start); exit 1 when it runs already with another size.\n"
     "      --set KEY=VALUE: this start with a preset key of the start-overrides\n"
     "      table (threads, batch_size, ubatch_size, cache_type_k, max_num_seqs, ...;\n"
     "      docs/configuration.md), checked as the preset file checks it;\n"
     "      --env NAME=VALUE: an environment variable over the preset's env.\n"
     "  service stop ID [--timeout S]  SIGTERM to its process group, SIGKILL after\n"
     "                                 stop_timeout, then wait until its memory is freed\n"
     "  service sleep ID [--timeout S] put it to sleep at its tier (sleep_mode: l1, l2,\n"
     "                                 router; docs/modes.md), or stop it where it cannot\n"
     "                                 sleep (the reason is printed); exit 0 either way.\n"
     "                                 `service start` on a sleeper wakes it\n"
     "  service restart ID [--ctx N] [--set K=V]... [--env N=V]...   stop, then start as above\n"
     "  service logs ID [-f] [-n N]    the last N lines (100) of its output; -f follows\n"
     "  service load ID MODEL [--timeout S]     a llama.cpp router-mode service loads MODEL\n"
     "      (gated: its GGUF's estimate; at models_max the least recently used one is\n"
     "      counted as freed); exit 0 once the engine says loaded, 1 refused or failed\n"
     "  service unload ID MODEL [--timeout S]   the engine unloads MODEL\n",
     cmd_service},
    {"events", "[-f] [--since T] [--service ID] [--kind K[,K]] [-n N] [--json]",
     "what the daemon recorded: transitions, spawns, exits",
     "  events [-f] [--since T] [--service ID] [--kind K[,K]] [-n N] [--json]\n"
     "      The last N events (100), or those after T: an event id, an RFC 3339\n"
     "      time, or a duration back from now (30s, 10m, 2h, 1d).  --kind keeps\n"
     "      those kinds (state, spawn, exit, ...).  -f then prints each event as\n"
     "      it is recorded, until interrupted.\n",
     cmd_events},
    {"reload", "[--json]", "make the daemon read its configuration again",
     "  reload [--json]\n"
     "      The daemon parses the configuration into a new one and swaps it whole,\n"
     "      or keeps the old one and lists every error (exit 2).  Running services\n"
     "      whose configuration changed are listed; they keep running as started\n"
     "      until restarted.  SIGHUP to the daemon does the same.\n",
     cmd_reload},
    {"mode", "list | show MODE | current | switch MODE [--dry-run [--add S] [--remove S] [--ctx S=N]] [--timeout S]",
     "list modes and switch between them through the daemon",
     "  mode list [--json]             every mode with its services; * marks the current\n"
     "                                 one (no daemon: from the configuration)\n"
     "  mode show MODE [--json]        one mode\n"
     "  mode current [--json]          the mode whose services are exactly the running\n"
     "                                 ones, else none (with the last committed mode)\n"
     "  mode switch MODE [--dry-run] [--timeout S] [--json]\n"
     "      Switch as a transaction: plan, drain, stop, wait until the memory is\n"
     "      back, start one at a time, check health, commit.  --dry-run prints the\n"
     "      plan (each step's verdict and the predicted free memory) and changes\n"
     "      nothing; with it, --add SVC and --remove SVC (repeatable; service ids)\n"
     "      change the mode's set and --ctx SVC=N judges SVC at context size N:\n"
     "      a what-if the daemon plans.  MODE none stops everything.  Exit 0\n"
     "      committed (or a dry run answered); 1 refused (the plan does not fit:\n"
     "      nothing stopped), another switch in progress, or a start failed\n"
     "      (rolled back; the service, reason and log tail on stderr); 2 no such\n"
     "      mode or service, or a bad what-if; 3 no daemon; 4 --timeout (or\n"
     "      switch.timeout) passed (rolled back).\n",
     cmd_mode},
    {"route", "show | default [SERVICE | --clear] | resolve NAME", "the router's names and its default model",
     "  route show [--json]            every routable name with its service and kind, each\n"
     "                                 service's state, requests in flight and queued\n"
     "  route default [--json]         the service \"model\": \"default\" goes to\n"
     "  route default SERVICE          send \"model\": \"default\" to SERVICE from now on (kept\n"
     "                                 across daemon restarts; overrides router.default)\n"
     "  route default --clear          back to router.default\n"
     "  route resolve NAME [--json]    the service a request naming NAME goes to and the\n"
     "                                 model its engine is sent (the router's own answer)\n"
     "      Exit 0 done, 2 no such service (or name), 1 an ambiguous name or no model\n"
     "      for the engine, 3 no daemon.\n",
     cmd_route},
    {"bench", "TARGET [options] | compare A.json B.json | report FILE | switch MODE_A MODE_B",
     "measure an OpenAI-compatible server: latency, throughput, memory",
     "  bench TARGET [--concurrency 1,8,64 | --rate R] [--requests N | --duration S]\n"
     "               [--iterations R] [--prompt-tokens N | --prompts FILE] [--gen-tokens N]\n"
     "               [--ctx-sweep START:MAX:STEP] [--json FILE [--raw]] [--csv FILE] [--md]\n"
     "               [--svg FILE] [--no-store] [-q]\n"
     "      TARGET is a service id or model name (through the router) or an\n"
     "      http(s):// URL.  Every option after 'bench' is bench's own; see\n"
     "      'gpumod bench --help' and docs/bench.md.\n"
     "  bench compare A.json B.json [--json] [--conf 0.95]\n"
     "  bench report RESULT.json [--md] [--csv FILE] [--svg FILE]\n"
     "  bench switch MODE_A MODE_B [-n N]\n"
     "      Runs the gpumod-bench helper.  Exit 0 done, 1 failed, 2 usage (or the\n"
     "      helper is not installed), 3 a service name but no daemon.\n",
     cmd_bench},
    {"eval", "TARGET --suite S [options] | compare A.json B.json | list | show ID | report FILE",
     "ask a model a suite of questions and score the answers, with intervals",
     "  eval TARGET --suite PATH [-k N] [--seed S] [--concurrency C] [--timeout S]\n"
     "              [--max-tokens N] [--temperature T] [--judge TARGET] [--golden FILE]\n"
     "              [--json FILE] [--csv FILE] [--md] [--svg FILE] [--no-store] [-q]\n"
     "      TARGET is a service id or model name (through the router) or an\n"
     "      http(s):// URL.  Every option after 'eval' is eval's own; see\n"
     "      'gpumod eval --help' and docs/eval.md.\n"
     "  eval compare A.json B.json [--json]   B against A, item by item (McNemar)\n"
     "  eval list [-n N] [--json] | eval show ID [--json]   results the daemon keeps\n"
     "  eval report RESULT.json [--md] [--csv FILE] [--svg FILE]\n"
     "      Runs the gpumod-bench helper.  Exit 0 done, 1 failed (compare: B is\n"
     "      worse; golden: an output changed), 2 usage or a suite error, 3 a\n"
     "      service name but no daemon.\n",
     cmd_eval},
    {"tune", "SERVICE --param KEY=V1,V2 [--env NAME=V1,V2] [options] | --abort",
     "search faster flags for a service: gated variants, paired measurements, outcomes with intervals",
     "  tune SERVICE [--param KEY=V1,V2,...]... [--env NAME=V1,V2,...]... [--file FILE]\n"
     "              [--strategy grid|coord|propose] [--objective throughput|engine_tps|tpot|ttft|goodput|score|prefill]\n"
     "              [--min-gain 2%|N] [--rounds N] [--quality SUITE] [--max-memory MB] [--budget D]\n"
     "              [--allow-traffic] [--resume] [--apply [--yes]] [--tsv FILE] [--json FILE] [--svg FILE]\n"
     "              [--engine-bench [--n-prompt N] [--n-gen N]]   (llama.cpp: measured by llama-bench)\n"
     "      Each variant passes the gate's dry run, starts through the daemon (its\n"
     "      canary included) and is measured against its reference in pairs\n"
     "      (A B B A ...); IMPROVEMENT only when the interval of the difference\n"
     "      (Bonferroni-corrected) excludes zero and the gain exceeds --min-gain.\n"
     "      The daemon holds a lease for the run and restores the host when it\n"
     "      ends or its process dies.  See 'gpumod tune --help' and docs/tune.md.\n"
     "  tune --abort   release a held lease (the daemon restores the host)\n"
     "      Runs the gpumod-bench helper.  Exit 0 done, 1 refused or stopped early,\n"
     "      2 usage, 3 no daemon, 130 interrupted.\n",
     cmd_tune},
    {"mcp", "[--read-only] [--allow-pull] [--rate N]",
     "the host to an AI assistant: a Model Context Protocol server on stdio",
     "  mcp [--read-only] [--allow-pull] [--rate N] [--no-events]\n"
     "      An MCP server (JSON-RPC 2.0 over stdin/stdout, protocol versions\n"
     "      2025-06-18, 2025-03-26, 2024-11-05) whose tools and resources are the\n"
     "      daemon's control API: status, services, modes, simulate, switch, start,\n"
     "      stop, preflight, events, results, logs.  --read-only offers no tool\n"
     "      that changes anything; --rate N mutating calls a minute (default 10).\n"
     "      The Hub's tools (search_hf_models, list_gguf_files, fetch_model_config,\n"
     "      generate_preset) run gpumod-bench; pull_model only with --allow-pull.\n"
     "      Started by the assistant, not by hand; see docs/mcp.md.\n"
     "      Runs the gpumod-mcp helper.  Exit 0 at the end of stdin, 2 usage.\n",
     cmd_mcp},
    {"tui", "[--no-color]",
     "a terminal dashboard: memory, services, events, switches with their plan shown first",
     "  tui [--no-color]\n"
     "      Memory bars per GPU and for the host (in use, reserved by starts in\n"
     "      flight, free), one line per service, the mode, recent events, the\n"
     "      selected service's log and last results, refreshed from the daemon's\n"
     "      event stream.  Switch, start, stop, restart with confirmation; '?'\n"
     "      lists the keys.  NO_COLOR or --no-color: monochrome.  See docs/tui.md.\n"
     "      Runs the gpumod-tui helper.  Exit 0 on 'q', 2 usage, 3 no daemon.\n",
     cmd_tui},
    {"template", "render ID | install ID|--all | daemon [--install] [--user|--system] [--unit-dir DIR] [--yes] [--force]",
     "systemd units for the services and the daemon, gated by preflight",
     "  template render ID [--user|--system] [--no-files-check]\n"
     "      Print the systemd unit of service ID (gpumod-ID.service): ExecStartPre=\n"
     "      gpumod preflight --for ID (the gate), ExecStart= the driver's exact argv\n"
     "      with the binary resolved through PATH (refused when not found, unless\n"
     "      --no-files-check), its environment, start/stop timeouts, restart limits.\n"
     "  template install ID|--all [--user|--system] [--unit-dir DIR] [--yes] [--force]\n"
     "                   [--no-reload]\n"
     "      Show the diff against the installed unit; with --yes write it atomically\n"
     "      and reload systemd (sd-bus Manager.Reload).  A file gpumod did not\n"
     "      write is never replaced without --force.  Directory: --unit-dir, else\n"
     "      $GPUMOD_UNIT_DIR, else ~/.config/systemd/user (--user, the default unless\n"
     "      root) or /etc/systemd/system (--system).\n"
     "  template daemon [--user|--system] [--install [--yes] ...]\n"
     "      The daemon's own unit (gpumod.service): Type=notify, WatchdogSec=,\n"
     "      KillMode=mixed, TimeoutStopSec= covering every service's stop.\n"
     "      Exit 0 done, 1 refused (a file gpumod did not write, reload failed),\n"
     "      2 usage or configuration error.\n",
     cmd_template},
    {"protect", "UNIT [--memory-min SIZE] [--memory-low SIZE] [--oom-score-adjust N] [--user|--system] [--install --yes]",
     "a drop-in that keeps an operator's service alive under memory pressure",
     "  protect UNIT [--memory-min SIZE] [--memory-low SIZE] [--oom-score-adjust N]\n"
     "               [--user|--system] [--install [--unit-dir DIR] [--yes] [--force] [--no-reload]]\n"
     "      Print (or with --install, write like template install) the drop-in\n"
     "      UNIT.d/50-gpumod-protect.conf: MemoryMin= (128M), MemoryLow= (512M),\n"
     "      OOMScoreAdjust= (-900) and ManagedOOMPreference=avoid (acts only where\n"
     "      systemd-oomd runs).  UNIT without a suffix means UNIT.service.\n"
     "      .service/.socket/.slice/.scope only.  --install without --user or\n"
     "      --system: the scope whose unit directories hold UNIT's file.\n",
     cmd_protect},
    {"doctor", "[--json]", "check the host and its units for what freezes GPU hosts, with fixes",
     "  doctor [--json]\n"
     "      Read-only checks, each with a verdict (ok, warn, fail, info, skip) and\n"
     "      the fix: ZFS ARC size and whether its cap survives a reboot,\n"
     "      vm.min_free_kbytes, swap, free 2 MiB blocks and the unusable index,\n"
     "      memory pressure, units that restart without a cap or with\n"
     "      Restart=always on a preset's port, gpumod units whose TimeoutStartSec\n"
     "      is shorter than the load or whose argv differs from the preset, NVML\n"
     "      and how long it takes, systemd-oomd, and on NVIDIA hosts a reminder\n"
     "      never to force memory compaction.\n"
     "      Roots: GPUMOD_PROC_ROOT, GPUMOD_SYS_ROOT, GPUMOD_ETC_ROOT, GPUMOD_ROOT;\n"
     "      units (with drop-ins) from GPUMOD_UNIT_DIR, else the user and the\n"
     "      system manager's unit directories (docs/doctor.md).\n"
     "      Exit 0 nothing failed, 1 a check failed, 2 configuration error.\n",
     cmd_doctor},
    {"help", "[COMMAND]", "show help for gpumod or one command", NULL, cmd_help},
    {"version", "", "print the version", NULL, cmd_version},
    {NULL},
};

const cmd *cli_find(const char *name)
{
    for (const cmd *k = commands; k->name; k++)
        if (!strcmp(k->name, name)) return k;
    return NULL;
}

static const char global_help[] =
    "Global options (anywhere before --):\n"
    "  --config-dir DIR   configuration directory (env GPUMOD_CONFIG_DIR;\n"
    "                     default ~/.config/gpumod)\n"
    "  --state-dir DIR    state directory (env GPUMOD_STATE_DIR, $STATE_DIRECTORY;\n"
    "                     default ~/.local/state/gpumod)\n"
    "  --socket PATH      control socket (env GPUMOD_SOCKET;\n"
    "                     default $XDG_RUNTIME_DIR/gpumod.sock)\n"
    "  --json             machine-readable output\n"
    "  -q, --quiet        print only what was asked for and errors\n"
    "  -v, --verbose      more detail (repeatable)\n"
    "  -h, --help         this help; after a command, that command's help\n"
    "  --version          print the version\n"
    "Precedence: command-line flag > environment > gpumod.yaml > default.\n"
    "\n"
    "Exit codes:\n"
    "  0  success\n"
    "  1  refused or failed (a gate said no, a switch rolled back)\n"
    "  2  usage or configuration error\n"
    "  3  daemon unreachable\n"
    "  4  timed out\n";

static void print_help(FILE *f)
{
    fprintf(f, "usage: gpumod [global options] COMMAND [ARGS]\n\n"
               "gpumod manages the LLM inference servers of one GPU host.\n\nCommands:\n");
    for (const cmd *k = commands; k->name; k++) fprintf(f, "  %-10s %s\n", k->name, k->summary);
    fprintf(f, "\n%s\nSee 'gpumod help COMMAND' and gpumod(1).\n", global_help);
}

void cli_print_command_help(const cmd *k, bool to_stderr)
{
    FILE *f = to_stderr ? stderr : stdout;
    fprintf(f, "usage: gpumod %s%s%s\n\n%s.\n", k->name, *k->usage ? " " : "", k->usage, k->summary);
    if (k->help) fprintf(f, "\n%s", k->help);
}

int cli_usage_error(const cli *c, const cmd *k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gpumod: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (k)
        fprintf(stderr, "usage: gpumod %s %s\n", k->name, k->usage);
    else
        fprintf(stderr, "usage: gpumod [global options] COMMAND [ARGS]; see 'gpumod --help'\n");
    return EXIT_USAGE;
}

static int cmd_help(cli *c, int argc, char **argv)
{
    if (argc > 2) return cli_usage_error(c, cli_find("help"), "too many arguments");
    if (argc == 2) {
        const cmd *k = cli_find(argv[1]);
        if (!k) return cli_usage_error(c, NULL, "unknown command '%s'", argv[1]);
        cli_print_command_help(k, false);
        return EXIT_OK;
    }
    print_help(stdout);
    return EXIT_OK;
}

static int cmd_version(cli *c, int argc, char **argv)
{
    if (argc > 1) return cli_usage_error(c, cli_find("version"), "unexpected argument '%s'", argv[1]);
    if (c->json)
        printf("{\"version\":\"%s\"}\n", GPUMOD_VERSION);
    else
        printf("gpumod %s\n", GPUMOD_VERSION);
    return EXIT_OK;
}

static bool is_helper_cmd(const char *name)
{
    static const char *const helpers[] = {"bench", "eval", "tune", "mcp", "tui", "preset"};
    for (size_t i = 0; i < sizeof helpers / sizeof *helpers; i++)
        if (!strcmp(name, helpers[i])) return true;
    return false;
}

int main(int argc, char **argv)
{
    cli c = {0};
    c.prog = argv[0];
    char **rest = xcalloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0;
    bool want_help = false, want_version = false, dashdash = false;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val;
        int r;
        /* after a helper's command every argument is the helper's (its --json FILE, -q) */
        if (dashdash || a[0] != '-' || !a[1] || (nrest && is_helper_cmd(rest[0]))) {
            rest[nrest++] = argv[i];
            continue;
        }
        if (!strcmp(a, "--")) {
            dashdash = true;
            rest[nrest++] = argv[i];
            continue;
        }
        if ((r = opt_value(argc, argv, &i, "--config-dir", &val))) {
            if (r < 0) goto missing;
            c.paths.config_dir = val;
        } else if ((r = opt_value(argc, argv, &i, "--state-dir", &val))) {
            if (r < 0) goto missing;
            c.paths.state_dir = val;
        } else if ((r = opt_value(argc, argv, &i, "--socket", &val))) {
            if (r < 0) goto missing;
            c.paths.socket = val;
        } else if (!strcmp(a, "--json")) {
            c.json = true;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            c.verbose = -1;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            c.verbose = c.verbose < 0 ? 1 : c.verbose + 1;
        } else if (!strcmp(a, "-vv")) {
            c.verbose = 2;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            want_help = true;
        } else if (!strcmp(a, "--version")) {
            want_version = true;
        } else {
            rest[nrest++] = argv[i]; /* the command's own option */
        }
        continue;
    missing:
        free(rest);
        return cli_usage_error(&c, NULL, "option '%s' needs a value", a);
    }

    int rc;
    if (want_version && !nrest) {
        char *vargv[] = {"version", NULL};
        rc = cmd_version(&c, 1, vargv);
    } else if (!nrest) {
        if (want_help) {
            print_help(stdout);
            rc = EXIT_OK;
        } else {
            print_help(stderr);
            rc = EXIT_USAGE;
        }
    } else if (rest[0][0] == '-') {
        rc = cli_usage_error(&c, NULL, "unknown option '%s'", rest[0]);
    } else {
        const cmd *k = cli_find(rest[0]);
        if (!k) {
            rc = cli_usage_error(&c, NULL, "unknown command '%s'", rest[0]);
        } else if (want_help) {
            cli_print_command_help(k, false);
            rc = EXIT_OK;
        } else {
            rc = k->run(&c, nrest, rest);
        }
    }
    free(rest);
    return rc;
}
