#!/usr/bin/env bash
# t81-bench-cli: `gpumod bench` from argv to the result document.  A URL
# target (fakellm started directly): a concurrency sweep with iterations
# writes JSON, CSV, SVG and Markdown whose token counts follow from the
# options and agree with the server's own /metrics deltas; bad options exit
# 2 naming the option, the value and what was expected; an unreachable URL
# exits 1 with the connect error; a context sweep measures every depth;
# report and compare re-read saved documents.  A router target: a service
# name resolved through the daemon, measured through the router, with the
# server's deltas read through /upstream.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"
. "$(dirname "$0")/router-lib.sh"

P=$(free_port)
fakellm_spawn direct FAKELLM_TTFT_MS=5 FAKELLM_TPS=400 -- -m "$MODEL" --host 127.0.0.1 --port "$P" -c 4096 -np 4 --metrics
wait_healthy "$P" || t_fail "fakellm never healthy"
U=http://127.0.0.1:$P
B=(bench --no-store -q)

t_begin "a URL target: --concurrency 1,4 --iterations 2 --requests 8 --gen-tokens 16 writes every output"
t_run 0 gpumod "${B[@]}" "$U" --concurrency 1,4 --iterations 2 --requests 8 --gen-tokens 16 \
    --json "$T/r.json" --csv "$T/r.csv" --svg "$T/r.svg"
t_has out "concurrency"
t_jq "$T/r.json" .schema gpumod.bench/1
t_jq "$T/r.json" .kind load
t_jq "$T/r.json" '.argv[0:2] | join(" ")' "gpumod bench"
t_jq "$T/r.json" ".argv | index(\"$U\") > 1" true
t_jq "$T/r.json" '.target.via + " " + .target.flavor + " " + (.target.service | tostring)' "url llamacpp null"
t_jq "$T/r.json" .target.build b10587-fakellm
t_jq "$T/r.json" '[.points[].x] | map(tostring) | join(",")' "1,4"
t_jq "$T/r.json" '[.points[].iterations | length] | map(tostring) | join(",")' "2,2"
t_jq "$T/r.json" '[.points[].iterations[] | .tokens_out] | unique | map(tostring) | join(",")' "128"
t_jq "$T/r.json" '[.points[].iterations[] | .completed] | unique | map(tostring) | join(",")' "8"
# the server counted what the client counted (warmup excluded from the window)
t_jq "$T/r.json" '[.points[].iterations[] | .server.predicted_tokens == .tokens_out] | all' true
t_jq "$T/r.json" '[.points[].iterations[] | .server.prompt_tokens == .tokens_in] | all' true
t_jq "$T/r.json" '.settings.prompt_tokens_exact' true
t_jq "$T/r.json" '.settings.prompt_tokens_measured' 128
t_jq "$T/r.json" '.points[0].summary.out_tput | (.lo <= .median and .median <= .hi and .n == 2)' true
t_jq "$T/r.json" '.points[0].iterations[0].metrics.ttft_ms | has("p99_9")' true
t_jq "$T/r.json" '.points[0].iterations[0].metrics.ttft_ms.p99' null
t_jq "$T/r.json" '.points[1].iterations[0].memory.samples >= 1' true
t_jq "$T/r.json" '.host.nvml' absent
t_jq "$T/r.json" '.points[0].iterations[0] | has("requests")' false
t_eq "$(wc -l <"$T/r.csv")" 5 "CSV rows (header + 4 iterations)"
t_has "$T/r.svg" "<svg"
t_has "$T/r.svg" "concurrency"
t_end

t_begin "--md on stdout, --json - and --raw with every request's events"
t_run 0 gpumod "${B[@]}" "$U" --requests 4 --iterations 1 --gen-tokens 8 --md
t_has out "|"
t_run 0 gpumod "${B[@]}" "$U" --requests 4 --iterations 1 --gen-tokens 8 --warmup 0 --json - --raw
t_jq out '.points[0].iterations[0].requests | length' 4
t_jq out '.points[0].iterations[0].requests[0].events | length' 8
t_jq out '.points[0].iterations[0].requests[0].events[0] | length' 2
t_jq out '.points[0].iterations[0].warmup' 0
t_end

t_begin "report re-renders a saved document; compare two"
t_run 0 gpumod bench report "$T/r.json"
t_has out "concurrency"
t_run 0 gpumod bench report "$T/r.json" --csv "$T/r2.csv"
t_eq "$(cat "$T/r2.csv")" "$(cat "$T/r.csv")" "the re-rendered CSV"
t_run 0 gpumod bench compare "$T/r.json" "$T/r.json" --json
t_jq out '.rows | length > 0' true
printf '{"schema": "gpumod.bench/1",\n  "kind": }\n' >"$T/bad.json"
t_run 2 gpumod bench compare "$T/r.json" "$T/bad.json"
t_has err "gpumod: bench: '$T/bad.json': not valid JSON at line 2, column 11"
t_run 2 gpumod bench report "$T/nope.json"
t_has err "gpumod: bench: cannot read '$T/nope.json': No such file or directory"
t_end

t_begin "bad options exit 2 naming the option, the value and what was expected"
t_run 2 gpumod bench "$U" --concurrency 1,x
t_has err "gpumod: bench: --concurrency '1,x': expected integers from 1 to 100000, separated by commas"
t_run 2 gpumod bench "$U" --requests 0
t_has err "gpumod: bench: --requests '0': expected an integer from 1 to 100000000"
t_run 2 gpumod bench "$U" --slo ttft=fast
t_has err "gpumod: bench: --slo 'ttft=fast': expected ttft=MS,tpot=MS,e2el=MS"
t_run 2 gpumod bench "$U" --ctx-sweep 64:32:8
t_has err "gpumod: bench: --ctx-sweep '64:32:8': expected START:MAX:STEP"
t_run 2 gpumod bench "$U" --endpoint embeddings
t_has err "gpumod: bench: --endpoint 'embeddings': expected chat or completions"
t_run 2 gpumod bench "$U" --rate 2 --concurrency 4
t_has err "--rate and --concurrency: give one"
t_run 2 gpumod bench "$U" --frobnicate
t_has err "gpumod: bench: unknown option '--frobnicate'"
t_run 2 gpumod bench "$U" --raw
t_has err "--raw needs --json FILE"
t_run 2 gpumod bench
t_has err "usage: gpumod bench TARGET"
t_run 2 gpumod bench "$U" --timeout
t_has err "option '--timeout' needs a value"
printf '{"prompt": "ok"}\n{"prompt": 3}\nnot json\n' >"$T/p.jsonl"
t_run 2 gpumod "${B[@]}" "$U" --prompts "$T/p.jsonl"
t_has err "$T/p.jsonl:2: \"prompt\" must be a string"
t_has err "$T/p.jsonl:3: not JSON"
t_end

t_begin "an unreachable URL exits 1 with the connect error"
DEAD=$(free_port)
t_run 1 gpumod "${B[@]}" "http://127.0.0.1:$DEAD" --requests 2 --iterations 1
t_has err "127.0.0.1:$DEAD"
t_match err "[Cc]onnect"
t_run 1 gpumod "${B[@]}" "http://127.0.0.1:$DEAD" --model m --requests 2 --iterations 1 --warmup 0
t_has err "gpumod: bench: every request failed"
t_match err "[Cc]onnect"
t_end

t_begin "--ctx-sweep 64:256:64 measures 4 depths"
t_run 0 gpumod "${B[@]}" "$U" --ctx-sweep 64:256:64 --iterations 1 --gen-tokens 8 --json "$T/c.json"
t_jq "$T/c.json" .kind ctx_sweep
t_jq "$T/c.json" '[.points[].x] | map(tostring) | join(",")' "64,128,192,256"
t_jq "$T/c.json" '[.points[].iterations[0].status] | unique | join(",")' ok
t_jq "$T/c.json" '[.points[].iterations[0].n_in] | map(tostring) | join(",")' "64,128,192,256"
t_jq "$T/c.json" '[.points[].iterations[0].values.gen_tps > 0] | all' true
t_jq "$T/c.json" '.points[0].iterations[0].prefill_tps_source' server
t_jq "$T/c.json" .ctx_sweep.stopped max
t_end

t_begin "a context sweep past the server's context: the depth that failed, with the server's message"
# 4096 tokens over 4 slots: 1024 a slot
t_run 0 gpumod "${B[@]}" "$U" --ctx-sweep 512:1536:512 --iterations 1 --gen-tokens 4 --json "$T/c2.json"
t_jq "$T/c2.json" '[.points[].iterations[0].status] | join(",")' "ok,failed"
t_jq "$T/c2.json" .ctx_sweep.stopped failed
t_jq "$T/c2.json" .ctx_sweep.deepest_ok 512
t_has "$T/c2.json" "exceeds the available context size"
t_end

t_begin "a service name with no daemon: exit 3 and what to do"
rsettings ""
rpreset svc "$(free_port)" 4096 'aliases: [svc-alias]'
t_run 3 gpumod bench svc --requests 2
t_has err "gpumod: bench: svc is a service name but no daemon runs; start it with gpumod serve, or give a URL"
t_end

t_begin "a router target by name: measured through the router, deltas through /upstream"
daemon_start
t_wait 10 curl -sf -o /dev/null "$RURL/health" || t_fail "the router never answered on $RURL"
t_run 0 gpumod "${B[@]}" svc-alias --concurrency 2 --iterations 1 --requests 6 --gen-tokens 8 --json "$T/s.json"
t_jq "$T/s.json" '.target.via + " " + .target.service + " " + .target.base_url' "router svc $RURL"
t_jq "$T/s.json" .target.flavor llamacpp
t_jq "$T/s.json" '.target.config_hash | length > 10' true
t_jq "$T/s.json" '.points[0].iterations[0].tokens_out' 48
t_jq "$T/s.json" '.points[0].iterations[0].server.predicted_tokens' 48
t_end

t_begin "gpumod bench without the helper: exit 2 and where it looked"
mkdir -p "$T/lone"
cp "$GPUMOD_BIN" "$T/lone/gpumod"
"$T/lone/gpumod" bench "$U" >"$T/out" 2>"$T/err" </dev/null
rc=$?
if [ -x /usr/local/libexec/gpumod/gpumod-bench ]; then
    t_skip "helper missing" "an installed gpumod-bench exists"
else
    t_eq "$rc" 2 "exit code"
    t_has err "gpumod: bench: the gpumod-bench helper is not installed (looked in $T/lone, /usr/local/libexec/gpumod)"
fi
t_end

t_done
