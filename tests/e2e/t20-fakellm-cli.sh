#!/usr/bin/env bash
# fakellm's command line: --help, --version, argv it must accept, the
# start-up failures a manager must recognise, and clean signal exits.
. "$(dirname "$0")/lib.sh"

MODEL=$GPUMOD_SRC/tests/fixtures/models/aidreams260K-f32.gguf
S=$GPUMOD_TEST_TIME_SCALE

t_begin "--help lists llama-server's flags and exits 0"
t_run 0 "$FAKELLM_BIN" --help
t_match out '^-m, +--model FNAME +model path to load'
t_match out '^--port PORT +port to listen'
t_match out '^-ngl, +--gpu-layers, --n-gpu-layers N'
t_has out "--models-dir PATH"
t_has out "--alias STRING"
t_end

t_begin "serve --help lists vLLM's flags"
t_run 0 "$FAKELLM_BIN" serve --help
t_has out "usage: vllm serve"
t_has out "--served-model-name SERVED_MODEL_NAME"
t_has out "--max-model-len MAX_MODEL_LEN"
t_has out "--enable-sleep-mode"
t_end

t_begin "--version prints a version line in each flavour"
t_run 0 "$FAKELLM_BIN" --version
t_match out '^version: [0-9.]+.*\(build [0-9]+'
t_run 0 "$FAKELLM_BIN" serve --version
t_match out '^0\.[0-9]+\.[0-9]+$'
t_end

t_begin "a missing -m file exits 1 like llama-server"
P=$(free_port)
t_run 1 timeout $((10 * S)) "$FAKELLM_BIN" -m "$T/nope.gguf" --port "$P"
t_has err "failed to open GGUF file '$T/nope.gguf'"
t_has err "exiting due to model loading error"
t_end

t_begin "a file that is not GGUF exits 1 with the magic error"
echo "not a model" >"$T/fake.gguf"
t_run 1 timeout $((10 * S)) "$FAKELLM_BIN" -m "$T/fake.gguf" --port "$(free_port)"
t_has err "invalid magic characters: 'not ', expected 'GGUF'"
t_end

t_begin "no -m and no --models-dir is a usage error"
t_run 1 "$FAKELLM_BIN" --port "$(free_port)"
t_has err "no model given"
t_run 1 "$FAKELLM_BIN" -m "$MODEL" --port notaport
t_has err "invalid value 'notaport'"
t_run 1 "$FAKELLM_BIN" serve
t_has err "required: model_tag"
t_end

t_begin "a port in use: llama exits 1 naming host and port, vLLM with Errno 98"
P=$(free_port)
fakellm_spawn holder -- -m "$MODEL" --host 127.0.0.1 --port "$P"
wait_healthy "$P" || t_fail "first server never became healthy"
t_run 1 timeout $((10 * S)) "$FAKELLM_BIN" -m "$MODEL" --host 127.0.0.1 --port "$P"
t_has err "couldn't bind HTTP server socket, hostname: 127.0.0.1, port: $P"
t_has err "exiting due to HTTP server error"
t_run 1 timeout $((10 * S)) "$FAKELLM_BIN" serve some/model --host 127.0.0.1 --port "$P"
t_has err "[Errno 98] error while attempting to bind on address ('127.0.0.1', $P)"
t_end

t_begin "unknown flags and their values are skipped, known ones still parsed"
P=$(free_port)
fakellm_spawn unknown -- --frobnicate --weird-value 12 -m "$MODEL" --jinja -fa on --x=y -ngl 99 \
    --port "$P" --host 127.0.0.1 --alias one,two -np 3 -c 300 --no-such-switch
wait_healthy "$P" || t_fail "never healthy"
http GET "http://127.0.0.1:$P/props"
t_jq out .total_slots 3
t_jq out .default_generation_settings.n_ctx 100
t_jq out .model_alias one
t_end

t_begin "vLLM argv: served names, max-model-len, unknown engine args"
P=$(free_port)
fakellm_spawn vargs -- serve org/model --host 127.0.0.1 --port "$P" --served-model-name id alias2 \
    --gpu-memory-utilization 0.5 --max-model-len 2k --some-future-flag --trust-remote-code
wait_healthy "$P" || t_fail "never healthy"
http GET "http://127.0.0.1:$P/v1/models"
t_jq out '[.data[].id] | join(",")' "id,alias2"
t_jq out '.data[0].max_model_len' 2000
t_jq out '.data[0].root' org/model
t_end

t_begin "--host may be a name (localhost)"
P=$(free_port)
fakellm_spawn byname -- -m "$MODEL" --host localhost --port "$P"
wait_healthy "$P" || t_fail "never healthy"
t_has "$T/byname.log" "listening on http://localhost:$P"
t_end

t_begin "SIGTERM: llama-server exits 0 quickly, logging the clean-up line"
P=$(free_port)
fakellm_spawn term -- -m "$MODEL" --port "$P"
pid=$_t_last_pid
wait_healthy "$P" || t_fail "never healthy"
kill -TERM "$pid"
reap "$pid" 2 || t_fail "still running 2 s after SIGTERM"
t_eq "$rc" 0 "exit status"
t_has "$T/term.log" "cleaning up before exit..."
t_end

t_begin "SIGINT exits 0 too"
P=$(free_port)
fakellm_spawn int -- -m "$MODEL" --port "$P"
pid=$_t_last_pid
wait_healthy "$P" || t_fail "never healthy"
kill -INT "$pid"
reap "$pid" 2 || t_fail "still running 2 s after SIGINT"
t_eq "$rc" 0 "exit status"
t_end

t_begin "SIGTERM in vLLM mode: uvicorn's shutdown lines, exit 0"
P=$(free_port)
fakellm_spawn vterm -- serve m --host 127.0.0.1 --port "$P"
pid=$_t_last_pid
wait_healthy "$P" || t_fail "never healthy"
kill -TERM "$pid"
reap "$pid" 2 || t_fail "still running 2 s after SIGTERM"
t_eq "$rc" 0 "exit status"
t_has "$T/vterm.log" "INFO:     Shutting down"
t_has "$T/vterm.log" "INFO:     Finished server process [$pid]"
t_end

t_begin "SIGTERM during a long load still exits 0"
P=$(free_port)
fakellm_spawn termload FAKELLM_LOAD_MS=60000 -- -m "$MODEL" --port "$P"
pid=$_t_last_pid
t_wait 10 grep -q "loading model" "$T/termload.log" || t_fail "load never started"
kill -TERM "$pid"
reap "$pid" 2 || t_fail "still running 2 s after SIGTERM"
t_eq "$rc" 0 "exit status"
t_end

t_begin "every fakellm still running exits 0 on SIGTERM, no sanitizer report"
stop_all_clean
t_end

t_done
