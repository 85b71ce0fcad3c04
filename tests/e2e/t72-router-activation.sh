#!/usr/bin/env bash
# t72-router-activation: activation on demand through the router, against
# fakellm and the fake NVML (one 24 GiB GPU, 300 MiB used).  Mode A runs
# big_a (16000 MiB); big_b (16000 MiB, mode B) cannot start beside it, so
# requests for big_b switch to B: twenty of them wait and are all served
# after ONE load (one spawn event), a 21st finds the queue full (429).
# Then: a queue deadline (504, the load goes on), `reject` (503 with
# Retry-After), `start` refused by the gate (503 with the gate's reason,
# nothing stopped), a waiting streaming request (SSE headers, `: loading
# N%` comments while fakellm prints its load dots, then the stream), a
# failed start reaching a streaming waiter as an SSE error event, a failed
# service that the router does not reset, and /metrics through promtool.
. "$(dirname "$0")/lib.sh"

fake_gpu_24g
. "$(dirname "$0")/sup-lib.sh"

RP=$(free_port)
R=http://127.0.0.1:$RP
QT=$((10 * S)) # router.queue_timeout, seconds: longer than the switch to B; the 504 case waits this long
cat >"$C/gpumod.yaml" <<Y
drivers:
  llamacpp: {binary: fakellm}
supervisor: {stop_timeout: 2s, health_interval: 1s}
router:
  enabled: true
  listen: 127.0.0.1:$RP
  queue_max: 20
  queue_timeout: ${QT}s
Y

# gpu_preset ID MIB [FAKELLM_X=V | YAML LINE...]: fakellm (driver command,
# so the declared memory is the need) holding MIB on the fake GPU
gpu_preset() {
    local id=$1 mb=$2 l; shift 2
    {
        printf 'id: %s\ndriver: command\nport: %s\ncommand: [%s, -m, %s, --port, "{port}"]\n' \
            "$id" "$(free_port)" "$FAKELLM_BIN" "$MODEL"
        printf 'devices: [0]\nmemory: {gpu_mb: %s, host_mb: 16}\nenv:\n' "$mb"
        printf '  GPUMOD_FAKE_NVML_STATE: %s\n  FAKELLM_GPU_MB: "%s"\n' "$T/nvml.json" "$mb"
        for l in "$@"; do case "$l" in FAKELLM_*) printf '  %s: "%s"\n' "${l%%=*}" "${l#*=}" ;; esac; done
        for l in "$@"; do case "$l" in FAKELLM_*) ;; *) printf '%s\n' "$l" ;; esac; done
    } >"$C/presets/$id.yaml"
}
gpu_preset big_a 16000
gpu_preset big_b 16000 FAKELLM_LOAD_MS=$((4000 * S)) # time for 20 clients to queue
gpu_preset slow 500 FAKELLM_LOAD_MS=$((120000 * S)) "startup_timeout: $((300 * S))s"
gpu_preset rej 500 "activation: reject"
gpu_preset startonly 20000 "activation: start"
gpu_preset streamer 500 FAKELLM_LOAD_MS=$((2500 * S))
gpu_preset crashy 500 FAKELLM_LOAD_MS=$((1500 * S)) FAKELLM_EXIT_DURING_LOAD=1
mkdir -p "$C/modes"
printf 'id: A\nservices: [big_a]\n' >"$C/modes/A.yaml"
printf 'id: B\nservices: [big_b]\n' >"$C/modes/B.yaml"

# chat OUTFILE MODEL [STREAM]: POST /v1/chat/completions through the
# router; body in OUTFILE, headers in OUTFILE.h, status in OUTFILE.st
chat() {
    local stream=${3:-false}
    curl -s -N -o "$1" -D "$1.h" -w '%{http_code}' --max-time $((60 * S)) "$R/v1/chat/completions" \
        -H 'Content-Type: application/json' \
        -d "{\"model\":\"$2\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":3,\"stream\":$stream}" \
        >"$1.st" 2>/dev/null
}
metric() { curl -s --max-time 5 "$R/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }
metric_is() { [ "$(metric "$1")" == "$2" ]; }
# act_ev SERVICE: that service's last router.activation event as JSON in $T/act.json
act_ev() {
    gpumod events --json --service "$1" | jq '[.events[] | select(.kind == "router.activation")] | last' >"$T/act.json"
}
has_act() { act_ev "$1" && jq -e '. != null' "$T/act.json"; }
router_up() { curl -s -o /dev/null --max-time 2 "$R/health"; }

daemon_start
t_wait 10 router_up || t_fail "the router never answered on $R"

t_begin "mode A is up: big_a holds 16000 MiB, big_b is down"
t_run 0 gpumod mode switch A
t_eq "$(state_of big_a)" ready "big_a"
t_eq "$(state_of big_b)" down "big_b"
t_end

t_begin "a person's switch counts in the switch histogram"
t_eq "$(metric 'gpumod_switch_duration_seconds_count{outcome="ok"}')" 1 "switches (the CLI's)"
t_eq "$(metric 'gpumod_switch_duration_seconds_count{outcome="failed"}')" 0 "failed switches"
t_end

t_begin "20 requests for big_b wait for one switch to B and are all served; a 21st gets 429"
pids=()
for i in $(seq 1 20); do
    chat "$T/q$i" big_b &
    pids+=($!)
done
t_wait 20 metric_is 'gpumod_router_queue_depth{service="big_b"}' 20 ||
    t_fail "queue depth never reached 20: $(metric 'gpumod_router_queue_depth{service="big_b"}')"
chat "$T/q21" big_b
t_eq "$(cat "$T/q21.st")" 429 "the 21st request's status"
t_jq "$T/q21" .error.code queue_full
t_has "$T/q21" "the queue for 'big_b' is full: 20 requests wait for it to be ready (router.queue_max 20)"
for p in "${pids[@]}"; do wait "$p"; done
ok=0
for i in $(seq 1 20); do
    [ "$(cat "$T/q$i.st")" = 200 ] && jq -e '.choices[0].message' "$T/q$i" >/dev/null && ok=$((ok + 1))
done
t_eq "$ok" 20 "requests answered 200 with a completion"
t_eq "$(count spawn big_b)" 1 "spawn events of big_b (one load for all)"
t_eq "$(state_of big_b)" ready "big_b"
t_eq "$(state_of big_a)" down "big_a (switched away)"
t_run 0 gpumod mode current --json
t_jq out .mode B
t_run 0 sh -c "curl -s --unix-socket '$GPUMOD_SOCKET' 'http://gpumod/switches?limit=1'"
t_jq out '.switches[0].origin' router
t_jq out '.switches[0].to' B
t_jq out '.switches[0].outcome' committed
t_eq "$(metric 'gpumod_router_queue_depth{service="big_b"}')" 0 "queue depth after"
t_eq "$(metric 'gpumod_switch_duration_seconds_count{outcome="ok"}')" 2 "switches (the CLI's and the router's)"
t_eq "$(metric 'gpumod_router_requests_total{model="big_b",service="big_b",status="200"}')" 20 "200s counted"
t_eq "$(metric 'gpumod_router_requests_total{model="big_b",service="big_b",status="429"}')" 1 "429s counted"
t_eq "$(metric 'gpumod_router_queue_wait_seconds_count')" 20 "queue waits counted once each"
t_end

t_begin "the activation is one router.activation event: the gate refused a start, the switch to B served 20"
t_eq "$(count router.activation big_b)" 1 "router.activation events of big_b"
act_ev big_b
t_jq "$T/act.json" .service big_b
t_jq "$T/act.json" .data.policy switch
t_jq "$T/act.json" .data.action switch
t_jq "$T/act.json" .data.mode B
t_jq "$T/act.json" .data.tried_start true
t_jq "$T/act.json" .data.waiters 20
t_jq "$T/act.json" .data.timed_out 0
t_jq "$T/act.json" .data.outcome ready
t_jq "$T/act.json" .data.status 200
t_jq "$T/act.json" '.data.duration_ms > 0' true
t_jq "$T/act.json" '.reason | test("^.big_b.: start refused by the gate, then switch to .B. \\(activation switch\\): ready after [0-9]+ ms, 20 waiter\\(s\\) served$")' true
t_end

t_begin "reject: 503 with Retry-After, nothing started"
chat "$T/rej" rej
t_eq "$(cat "$T/rej.st")" 503 "status"
t_jq "$T/rej" .error.code unavailable
t_has "$T/rej" "'rej' is down and its activation is reject: start it with gpumod service start rej"
t_match "$T/rej.h" '^[Rr]etry-[Aa]fter: 30'
t_eq "$(state_of rej)" down "rej"
act_ev rej
t_jq "$T/act.json" .data.policy reject
t_jq "$T/act.json" .data.action refused
t_jq "$T/act.json" .data.waiters 1
t_jq "$T/act.json" .data.outcome unavailable
t_jq "$T/act.json" .data.status 503
t_jq "$T/act.json" '.data.message | test("activation is reject")' true
t_end

t_begin "start: refused by the gate beside big_b -> 503 with the gate's reason; nothing stopped"
chat "$T/so" startonly
t_eq "$(cat "$T/so.st")" 503 "status"
t_jq "$T/so" .error.code unavailable
t_has "$T/so" "refused: 'startonly'"
t_match "$T/so" 'gpu|GPU'
t_match "$T/so.h" '^[Rr]etry-[Aa]fter: 30'
t_eq "$(state_of big_b)" ready "big_b"
t_eq "$(state_of startonly)" down "startonly"
t_eq "$(count spawn startonly)" 0 "spawns of startonly"
act_ev startonly
t_jq "$T/act.json" .data.policy start
t_jq "$T/act.json" .data.action start
t_jq "$T/act.json" .data.mode null
t_jq "$T/act.json" .data.outcome unavailable
t_jq "$T/act.json" .data.waiters 1
t_end

t_begin "a waiting streaming request gets SSE headers and ': loading N%' comments, then the stream"
chat "$T/st" streamer true
t_eq "$(cat "$T/st.st")" 200 "status"
t_match "$T/st.h" '^[Cc]ontent-[Tt]ype: text/event-stream'
t_match "$T/st" '^: loading [0-9]+%'
n_pct=$(grep -Eo '^: loading [0-9]+%' "$T/st" | sort -u | wc -l)
[ "$n_pct" -ge 2 ] || t_fail "the load percentage never moved: $(grep '^: loading' "$T/st" | tr '\n' ' ')"
t_has "$T/st" 'data: {'
t_has "$T/st" 'data: [DONE]'
# the comments come before the first data line
first_data=$(grep -n '^data:' "$T/st" | head -n 1 | cut -d: -f1)
last_load=$(grep -n '^: loading' "$T/st" | tail -n 1 | cut -d: -f1)
[ "${last_load:-0}" -lt "${first_data:-0}" ] || t_fail "a loading comment after the data (line $last_load >= $first_data)"
t_eq "$(state_of streamer)" ready "streamer"
t_end

t_begin "a failed start reaches a streaming waiter as an SSE error event"
chat "$T/cr" crashy true
t_eq "$(cat "$T/cr.st")" 200 "status (the SSE head was sent while waiting)"
t_match "$T/cr.h" '^[Cc]ontent-[Tt]ype: text/event-stream'
t_has "$T/cr" 'event: error'
t_has "$T/cr" 'start_failed'
t_lacks "$T/cr" '[DONE]'
t_eq "$(state_of crashy)" failed "crashy"
t_end

t_begin "a failed service is not reset by the router: 503, a person must start it"
chat "$T/cr2" crashy
t_eq "$(cat "$T/cr2.st")" 503 "status"
t_has "$T/cr2" "service 'crashy' failed; a person must start it (gpumod service start crashy)"
t_eq "$(count spawn crashy)" 1 "spawns of crashy"
t_end

t_begin "the queue deadline: 504 after router.queue_timeout; the load goes on"
chat "$T/sl" slow
t_eq "$(cat "$T/sl.st")" 504 "status"
t_jq "$T/sl" .error.code timeout
t_has "$T/sl" "'slow' was not ready within router.queue_timeout"
t_eq "$(state_of slow)" starting "slow (still loading)"
t_run 0 gpumod service stop slow
# the activation ends with the stop: nobody left to serve, one timed out
t_wait 10 has_act slow || t_fail "no router.activation event for slow"
t_jq "$T/act.json" .data.action start
t_jq "$T/act.json" .data.waiters 0
t_jq "$T/act.json" .data.timed_out 1
t_jq "$T/act.json" '.data.outcome != "ready"' true
t_end

t_begin "/metrics after all this passes promtool check metrics"
curl -s --max-time 5 -o "$T/metrics" "$R/metrics"
# like t71: promtool missing is a failure (make test fetches it), not a skip
t_run 0 promtool_check "$T/metrics"
t_eq "$(cat "$T/out" "$T/err")" "" "promtool's remarks"
t_has "$T/metrics" 'gpumod_service_state{service="crashy",state="failed"} 1'
t_has "$T/metrics" 'gpumod_gpu_memory_total_bytes{gpu="0"} 25769803776'
t_match "$T/metrics" '^gpumod_activation_duration_seconds_count\{outcome="failed"\} [1-9]'
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end
t_done
