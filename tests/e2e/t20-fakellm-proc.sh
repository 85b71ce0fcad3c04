#!/usr/bin/env bash
# fakellm as a process a supervisor must handle: a crash after N requests,
# a SIGTERM that is ignored, a forked worker that outlives its parent (and
# one whose death takes the parent down), garbage output, request logs.
. "$(dirname "$0")/lib.sh"

MODEL=$GPUMOD_SRC/tests/fixtures/models/aidreams260K-f32.gguf
S=$GPUMOD_TEST_TIME_SCALE
SENTENCE="Once upon a time a small model loaded in the fake server and answered every request."

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
gone() { ! alive "$1"; }
children() { ps -o pid= --ppid "$1" | tr -d ' '; }

t_begin "FAKELLM_CRASH_AFTER=2: two answers, then SIGABRT (134) with a CUDA error line"
P=$(free_port)
fakellm_spawn crash FAKELLM_CRASH_AFTER=2 -- -m "$MODEL" --port "$P"
pid=$_t_last_pid
wait_healthy "$P" || t_fail "never healthy"
U=http://127.0.0.1:$P
http GET "$U/health"; http GET "$U/v1/models"; http GET "$U/health"
http POST "$U/v1/chat/completions" '{"messages":[]}'
t_eq "$(cat "$T/status")" 200 "first answer"
alive "$pid" || t_fail "died after one request"
http POST "$U/completion" '{"prompt":"x"}'
t_eq "$(cat "$T/status")" 200 "second answer"
t_jq out .content "$SENTENCE"
reap "$pid" 5 || t_fail "still alive after the second request"
t_eq "$rc" 134 "exit status"
t_has "$T/crash.log" "CUDA error: an illegal memory access was encountered"
curl -s -o /dev/null --max-time 5 "$U/health"
t_eq "$?" 7 "curl after the crash (7 = refused)"
t_end

t_begin "FAKELLM_IGNORE_SIGTERM: SIGTERM (to the group too) is ignored, SIGKILL ends it"
P=$(free_port)
fakellm_spawn hung FAKELLM_IGNORE_SIGTERM=1 -- -m "$MODEL" --port "$P"
pid=$_t_last_pid
wait_healthy "$P" || t_fail "never healthy"
kill -TERM "$pid"; kill -TERM -- "-$pid"
sleep 1
alive "$pid" || t_fail "died on SIGTERM"
t_eq "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P/health")" 200 "health after SIGTERM"
t_lacks "$T/hung.log" "cleaning up before exit"
kill -KILL "$pid"
reap "$pid" 5 || t_fail "survived SIGKILL"
t_eq "$rc" 137 "exit status"
t_end

t_begin "FAKELLM_IGNORE_SIGTERM leaves SIGINT working"
P=$(free_port)
fakellm_spawn hung2 FAKELLM_IGNORE_SIGTERM=1 -- -m "$MODEL" --port "$P"
pid=$_t_last_pid
wait_healthy "$P" || t_fail "never healthy"
kill -INT "$pid"
reap "$pid" 3 || t_fail "survived SIGINT"
t_eq "$rc" 0 "exit status"
t_end

t_begin "FAKELLM_FORK_WORKER: the worker shares the group and holds the memory"
cat >"$T/nvml.json" <<'EOF'
{"devices": [{"index": 0, "uuid": "GPU-0", "name": "Fake", "total_mb": 24576, "base_used_mb": 300, "memory": "ok"}],
 "processes": []}
EOF
P=$(free_port)
fakellm_spawn fw FAKELLM_FORK_WORKER=1 FAKELLM_RAM_MB=200 FAKELLM_GPU_MB=3000 GPUMOD_FAKE_NVML_STATE="$T/nvml.json" \
    -- -m "$MODEL" --port "$P"
pid=$_t_last_pid
wait_healthy "$P" || t_fail "never healthy"
w=$(children "$pid")
t_eq "$(wc -w <<<"$w")" 1 "worker count"
t_eq "$(cat "/proc/$w/comm")" fakellm-worker "worker name"
t_eq "$(ps -o pgid= "$w" | tr -d ' ')" "$(ps -o pgid= "$pid" | tr -d ' ')" "worker process group"
r=$(rss_mb "$w"); [ "$r" -ge 200 ] || t_fail "worker RSS $r MiB < 200"
r=$(rss_mb "$pid"); [ "$r" -lt 150 ] || t_fail "parent RSS $r MiB: the worker should hold it"
t_jq "$T/nvml.json" '[.processes[] | "\(.pid):\(.used_mb)"] | join(",")' "$w:3000"
t_end

t_begin "FAKELLM_FORK_WORKER: killing the parent alone orphans the worker, which keeps its memory"
kill -KILL "$pid"
reap "$pid" 5 || t_fail "parent survived SIGKILL"
sleep 0.5
alive "$w" || t_fail "the worker died with its parent"
r=$(rss_mb "$w"); [ "${r:-0}" -ge 200 ] || t_fail "orphan RSS ${r:-?} MiB < 200"
fakellm_spawn again -- -m "$MODEL" --port "$P"
wait_healthy "$P" || t_fail "the port stayed taken: the worker kept the listening socket"
kill -KILL -- "-$pid"
t_wait 5 gone "$w" || t_fail "the worker survived a group SIGKILL"
t_end

t_begin "FAKELLM_FORK_WORKER (vLLM): EngineCore name; SIGTERM to the group ends both, exit 0"
P=$(free_port)
fakellm_spawn vfw FAKELLM_FORK_WORKER=1 FAKELLM_RAM_MB=64 -- serve m --host 127.0.0.1 --port "$P"
pid=$_t_last_pid
wait_healthy "$P" || t_fail "never healthy"
w=$(children "$pid")
t_eq "$(cat "/proc/$w/comm")" "VLLM::EngineCor" "worker name"
t_has "$T/vfw.log" "(EngineCore_DP0 pid=$w)"
kill -TERM -- "-$pid"
reap "$pid" 3 || t_fail "parent still running"
t_eq "$rc" 0 "parent exit status"
t_wait 3 gone "$w" || t_fail "worker still running"
t_end

t_begin "FAKELLM_FORK_WORKER: a clean exit of the parent alone takes the worker along"
P=$(free_port)
fakellm_spawn fw2 FAKELLM_FORK_WORKER=1 -- -m "$MODEL" --port "$P"
pid=$_t_last_pid
wait_healthy "$P" || t_fail "never healthy"
w=$(children "$pid")
kill -TERM "$pid"
reap "$pid" 3 || t_fail "parent still running"
t_eq "$rc" 0 "parent exit status"
gone "$w" || t_fail "worker left behind by a clean exit"
t_end

t_begin "FAKELLM_FORK_WORKER: when the worker dies, the server logs it and exits 1"
P=$(free_port)
fakellm_spawn fw3 FAKELLM_FORK_WORKER=1 -- serve m --host 127.0.0.1 --port "$P"
pid=$_t_last_pid
wait_healthy "$P" || t_fail "never healthy"
kill -KILL "$(children "$pid")"
reap "$pid" 3 || t_fail "parent still running"
t_eq "$rc" 1 "parent exit status"
t_has "$T/fw3.log" "Engine core proc EngineCore_DP0 died unexpectedly"
t_end

t_begin "FAKELLM_GARBAGE: same counts, meaningless text"
P=$(free_port)
fakellm_spawn garbage FAKELLM_GARBAGE=1 -- -m "$MODEL" --port "$P"
wait_healthy "$P" || t_fail "never healthy"
http POST "http://127.0.0.1:$P/v1/chat/completions" '{"messages":[{"role":"user","content":"What is 2+2?"}],"max_tokens":12}'
t_jq out .usage.completion_tokens 12
t_jq out '.choices[0].message.content | test("Once|upon|model|[aeiou]{2}")' false
t_jq out '.choices[0].message.content | length > 11' true
cp "$T/out" "$T/g1"
http POST "http://127.0.0.1:$P/v1/chat/completions" '{"messages":[{"role":"user","content":"What is 2+2?"}],"max_tokens":12}'
[ "$(jq -r '.choices[0].message.content' "$T/g1")" != "$(jq -r '.choices[0].message.content' "$T/out")" ] ||
    t_fail "two garbage answers were identical"
t_end

t_begin "FAKELLM_LOG_REQUESTS: default skips /health, all logs it, 0 logs nothing"
P=$(free_port); P2=$(free_port); P3=$(free_port)
fakellm_spawn ld -- -m "$MODEL" --port "$P"
fakellm_spawn la FAKELLM_LOG_REQUESTS=all -- -m "$MODEL" --port "$P2"
fakellm_spawn l0 FAKELLM_LOG_REQUESTS=0 -- -m "$MODEL" --port "$P3"
for p in "$P" "$P2" "$P3"; do
    wait_healthy "$p" || t_fail "$p never healthy"
    curl -s -o /dev/null "http://127.0.0.1:$p/health"
    curl -s -o /dev/null "http://127.0.0.1:$p/props"
done
# fakellm logs a request once its answer is out: wait for the lines
t_wait 5 grep -q "GET /props 200" "$T/ld.log" || t_fail "no /props line in ld.log"
t_wait 5 grep -q "GET /props 200" "$T/la.log" || t_fail "no /props line in la.log"
t_wait 5 grep -q "GET /health 200" "$T/la.log" || t_fail "no /health line in la.log"
t_match "$T/ld.log" 'log_request: id=[0-9]+ GET /props 200 recv_mono_ms=[0-9.]+ recv_real_ms=[0-9.]+ first_send_mono_ms=[0-9.]+ first_send_real_ms=[0-9.]+ done_mono_ms=[0-9.]+$'
t_lacks "$T/ld.log" "GET /health"
t_has "$T/la.log" "GET /health 200"
t_lacks "$T/l0.log" "log_request"
t_end

t_begin "every fakellm still running exits 0 on SIGTERM, no sanitizer report"
stop_all_clean
t_end

t_done
