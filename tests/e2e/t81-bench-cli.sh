#!/usr/bin/env bash
# t81-bench-cli: `gpumod bench` from argv to the result document.  A URL
# target (fakellm started directly): a concurrency sweep with iterations
# writes JSON, CSV, SVG and Markdown whose token counts follow from the
# options and agree with the server's own /metrics deltas; bad options exit
# 2 naming the option, the value and what was expected; an unreachable URL
# exits 1 with the connect error; a context sweep measures every depth;
# report and compare re-read saved documents.  A router target: a service
# name resolved through the daemon's router (the name a remote's model_id
# shadows is still the service's), measured through the router, with the
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
# a remote listed before svc whose model_id is svc's id: "svc" is still svc
# (a hard name wins), and bench must say so too
printf 'id: aremote\ndriver: remote\nmodel_id: svc\nremote: {base_url: "http://127.0.0.1:%s/v1"}\n' "$(free_port)" \
    >"$C/presets/aremote.yaml"
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
t_run 0 gpumod "${B[@]}" svc --concurrency 1 --iterations 1 --requests 1 --gen-tokens 4 --json "$T/s2.json"
t_jq "$T/s2.json" '.target.service' svc
t_run 2 gpumod "${B[@]}" nosuch --requests 1
t_has err "bench: 'nosuch' is neither a URL nor a name the router routes: model 'nosuch' not found; available: 'aremote', 'svc', 'svc-alias'"
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
    t_has err "gpumod: bench: the gpumod-bench helper is not installed (looked in $T/lone, $T/lone/../libexec/gpumod, /usr/local/libexec/gpumod)"
fi
t_end

t_begin "an install under any prefix finds its helper in PREFIX/libexec/gpumod"
mkdir -p "$T/inst/bin" "$T/inst/libexec/gpumod"
cp "$GPUMOD_BIN" "$T/inst/bin/gpumod"
cp "$BUILD/gpumod-bench" "$T/inst/libexec/gpumod/gpumod-bench"
t_run 0 "$T/inst/bin/gpumod" bench --help
t_has out "usage: gpumod bench TARGET"
t_end

t_begin "targets and options refused before anything is sent"
t_run 2 gpumod "${B[@]}" "127.0.0.1:$P" --requests 2
t_has err "target '127.0.0.1:$P': expected http://HOST:PORT (no scheme given; add http://)"
t_run 2 gpumod "${B[@]}" "$U" --ctx-sweep 1:100000000:1
t_has err "--ctx-sweep '1:100000000:1': MAX 100000000 is above 10000000 tokens"
t_run 2 gpumod "${B[@]}" "$U" --ctx-sweep 1:5000:1
t_has err "--ctx-sweep '1:5000:1': 5000 depths, at most 1000 (use a larger STEP)"
# an output that cannot be written: said at once, not after the run
t_run 2 gpumod "${B[@]}" "http://127.0.0.1:$DEAD" --model m --json "$T/nodir/x.json"
t_has err "gpumod: bench: --json '$T/nodir/x.json': cannot write there: No such file or directory"
t_lacks err "every request failed"
[ -e "$T/csv-probe" ] && t_fail "stale file"
t_run 0 gpumod "${B[@]}" "$U" --requests 2 --iterations 1 --gen-tokens 4 --csv "$T/csv-probe" --json "$T/o.json"
t_eq "$(wc -l <"$T/csv-probe")" 2 "CSV rows (header + 1 iteration)"
# a write that fails at the end: one message, exit 1 (no double fclose)
t_run 1 gpumod "${B[@]}" "$U" --requests 2 --iterations 1 --gen-tokens 4 --csv /dev/full
t_has err "gpumod: bench: cannot write the CSV to '/dev/full': No space left on device"
t_end

t_begin "settings and figures say what ran: open loop without a concurrency list, planned requests"
t_run 0 gpumod "${B[@]}" "$U" --rate 50 --requests 10 --iterations 1 --gen-tokens 4 --json "$T/open.json"
t_jq "$T/open.json" .settings.concurrency null
t_jq "$T/open.json" .settings.max_concurrency null
t_jq "$T/open.json" '.points[0].iterations[0].requests_planned' 10
t_jq "$T/open.json" '.points[0].iterations[0].interrupted' 0
# 10 requests at 50/s take ~0.2 s, but a busy machine can stretch the run
# past 1 s: the note is there exactly when the wall time is under 1 s
t_jq "$T/open.json" '.points[0].iterations[0].self_check | (.wall_s < 1) == (.cpu_note == "not judged: the run took less than 1 s of wall time")' true
t_jq "$T/open.json" '.points[0].iterations[0].self_check | (.wall_s < 1) == (.cpu_pct == null)' true
t_end

t_begin "an HTTP error names the endpoint that answered"
t_run 1 gpumod "${B[@]}" "$U/foo" --model m --requests 2 --iterations 1 --warmup 0
t_has err "every request failed: HTTP 404 from $U/foo/v1/chat/completions"
t_end

# scripted servers: HANG accepts and never answers; RESET answers 500 at
# once and closes without reading the request (the kernel resets it)
cat >"$T/srv.py" <<'PY'
import socket, sys, threading, time
mode, port = sys.argv[1], int(sys.argv[2])
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port)); ls.listen(64)
held = []
def reset(c):
    try:
        c.recv(1024)
        c.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\nConnection: close\r\n\r\noops!")
        time.sleep(0.05)
    except OSError:
        pass
    c.close()
while True:
    c, _ = ls.accept()
    if mode == "hang":
        held.append(c)
    else:
        threading.Thread(target=reset, args=(c,), daemon=True).start()
PY
HP=$(free_port)
t_spawn hang python3 "$T/srv.py" hang "$HP"
RP=$(free_port)
t_spawn reset python3 "$T/srv.py" reset "$RP"
t_wait 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$HP" || t_fail "the hanging server never listened"
t_wait 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$RP" || t_fail "the resetting server never listened"

t_begin "a reply before a reset is read: HTTP 500 with its body, not a poll error"
t_run 1 gpumod "${B[@]}" "http://127.0.0.1:$RP" --model m --requests 3 --iterations 2 --warmup 0 \
    --prompt-tokens 200000 --json "$T/reset.json"
t_has err "every request failed: HTTP 500 from http://127.0.0.1:$RP/v1/chat/completions: oops!"
t_jq "$T/reset.json" '[.points[0].iterations[].errors | keys[]] | unique | join("|")' \
    "HTTP 500 from http://127.0.0.1:$RP/v1/chat/completions: oops!"
t_end

# bench_bg ARGS...: gpumod-bench in the background ($BG_PID), output in $T/bg.*
bench_bg() {
    "$BUILD/gpumod-bench" "$@" >"$T/bg.out" 2>"$T/bg.err" </dev/null &
    BG_PID=$!
}
# bg_rc SECS: wait up to SECS (scaled) for it to end; its exit code in $BG_RC
bg_rc() {
    local secs=$(( $1 * ${GPUMOD_TEST_TIME_SCALE:-1} ))
    ( sleep "$secs"; kill -KILL "$BG_PID" 2>/dev/null ) &
    local wd=$!
    wait "$BG_PID"; BG_RC=$?
    kill "$wd" 2>/dev/null; wait "$wd" 2>/dev/null
    [ "$BG_RC" -eq 137 ] && t_fail "gpumod-bench still ran after $secs s (killed)"
}

t_begin "--timeout bounds the probes of a server that never answers"
t_run 1 gpumod "${B[@]}" "http://127.0.0.1:$HP" --model m --requests 2 --iterations 1 --timeout 1 --warmup 0
t_has err "the server does not answer: timed out after 1000 ms: GET http://127.0.0.1:$HP/props"
t_end

t_begin "Ctrl-C while asking a silent server: exit 130 at once, nothing measured"
bench_bg "http://127.0.0.1:$HP" --model m --requests 2 --no-store -q
sleep 1 # inside the 10 s /props probe (gpumod-bench is never under valgrind here, so not scaled)
kill -INT "$BG_PID"
bg_rc 5
t_eq "$BG_RC" 130 "exit code"
t_has "$T/bg.err" "gpumod: bench: interrupted before the run (nothing was measured)"
t_end

SP=$(free_port)
fakellm_spawn slow FAKELLM_TPS=20 -- -m "$MODEL" --host 127.0.0.1 --port "$SP" -c 8192 -np 4 --metrics
wait_healthy "$SP" || t_fail "the slow fakellm never healthy"

t_begin "Ctrl-C mid-run: cut streams are not failures, the figures and outputs are kept, exit 130"
bench_bg "http://127.0.0.1:$SP" --concurrency 2 --requests 4 --warmup 0 --iterations 1 --gen-tokens 1000 \
    --no-store -q --json "$T/int.json"
busy2() { curl -s "http://127.0.0.1:$SP/metrics" | grep -q '^llamacpp:requests_processing 2'; }
t_wait 10 busy2 || t_fail "the two streams never reached fakellm"
kill -INT "$BG_PID"
bg_rc 10
t_eq "$BG_RC" 130 "exit code"
t_has "$T/bg.err" "gpumod: bench: interrupted"
t_jq "$T/int.json" '.points[0].iterations[0].interrupted' 2
t_jq "$T/int.json" '.points[0].iterations[0].failed' 0
t_jq "$T/int.json" '.warnings | map(select(startswith("interrupted after 0 of 4 requests"))) | length' 1
t_end

t_begin "Ctrl-C in the warmup: no measured request is sent"
bench_bg "http://127.0.0.1:$SP" --concurrency 2 --requests 4 --warmup 2 --iterations 1 --gen-tokens 1000 \
    --no-store -q --json "$T/w.json"
t_wait 10 busy2 || t_fail "the warmup streams never reached fakellm"
kill -INT "$BG_PID"
bg_rc 10
t_eq "$BG_RC" 130 "exit code"
t_jq "$T/w.json" '.points | length' 0 # no measured iteration ran
t_end

t_done
