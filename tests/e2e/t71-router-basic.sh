#!/usr/bin/env bash
# t71-router-basic: the router's own answers.  A non-loopback listen
# without API keys is refused (exit 2); API keys (Bearer or x-api-key,
# else 401); /health; /v1/models with every name, its service and state
# and no remote key; unknown model 404 listing names, bad JSON and a
# missing model 400 with the byte offset, an ambiguous model_id 409,
# Anthropic's error shape on /v1/messages; 413, 431, 408; "model":
# "default" follows `gpumod route default`, kept across a restart; CORS
# preflight; /metrics passes promtool; a remote service (plain http to a
# fakellm that needs its own key) gets the remote's key, never the
# client's, and the key is in no log.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"
. "$(dirname "$0")/router-lib.sh"

PA=$(free_port) PB=$(free_port) PR=$(free_port) PX=$(free_port) PY=$(free_port)
export RKEYS="k-one, k-two" REMOTE_SECRET="sk-remote-7f3a9c"
rsettings 'api_keys_env: RKEYS, default: a, max_body_mb: 1, max_header_kb: 2, header_timeout: 500ms, body_timeout: 700ms, cors_origins: ["https://app.example"]'
rpreset a "$PA" 128 'aliases: [alpha]'
rpreset b "$PB" 128 'model_id: shared-model'
rpreset x "$PX" 128 'model_id: twin'
rpreset y "$PY" 128 'model_id: twin'
printf 'id: far\nmodel_id: far\ndriver: remote\nremote: {base_url: "http://127.0.0.1:%s/v1", api_key_env: REMOTE_SECRET}\n' "$PR" \
    >"$C/presets/far.yaml"
K=(-H "Authorization: Bearer k-two")

t_begin "api_keys_env naming an unset or empty variable is refused (exit 2) on any address; so is a non-loopback listen without keys"
env -u RKEYS "$GPUMOD_BIN" serve --foreground --listen "0.0.0.0:$RP" >"$T/out" 2>"$T/err" </dev/null
t_eq "$?" 2 "exit code"
t_has err "router: router.api_keys_env names the variable 'RKEYS', but it is not set: refusing to serve without the API keys it should hold"
RKEYS=" , " "$GPUMOD_BIN" serve --foreground >"$T/out" 2>"$T/err" </dev/null
t_eq "$?" 2 "exit code (loopback, empty)"
t_has err "router: router.api_keys_env names the variable 'RKEYS', but it is empty (no key in it)"
env -u RKEYS "$GPUMOD_BIN" serve --foreground --insecure >"$T/out" 2>"$T/err" </dev/null
t_eq "$?" 2 "exit code (--insecure does not lift it)"
sed 's/api_keys_env: RKEYS, //' "$C/gpumod.yaml" >"$T/nokeys.yaml"
cp "$C/gpumod.yaml" "$T/keys.yaml"
cp "$T/nokeys.yaml" "$C/gpumod.yaml"
"$GPUMOD_BIN" serve --foreground --listen "0.0.0.0:$RP" >"$T/out" 2>"$T/err" </dev/null
t_eq "$?" 2 "exit code (no api_keys_env, non-loopback)"
t_has err "router: listen address '0.0.0.0:$RP' is not loopback and no API keys are configured (router.api_keys_env)"
t_has err "--insecure"
cp "$T/keys.yaml" "$C/gpumod.yaml"
t_run 2 gpumod serve --foreground --listen nonsense
t_has err "router: listen address 'nonsense' is not HOST:PORT"
t_end

daemon_start
t_wait 10 curl -sf -o /dev/null "$RURL/health" || t_fail "the router never answered on $RURL"

t_begin "API keys: /health is open; otherwise Bearer or x-api-key, else 401"
t_eq "$(rcurl "$T/o" "$RURL/health")" 200 "/health"
t_eq "$(rcurl "$T/o" "$RURL/v1/models")" 401 "no key"
t_jq "$T/o" .error.type authentication_error
t_jq "$T/o" .error.message "a valid API key is required: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'"
t_eq "$(rcurl "$T/o" -H 'Authorization: Bearer k-three' "$RURL/v1/models")" 401 "a wrong key"
t_eq "$(rcurl "$T/o" -H 'Authorization: Bearer k-on' "$RURL/v1/models")" 401 "a prefix of a key"
t_eq "$(rcurl "$T/o" -H 'x-api-key: k-one' "$RURL/v1/models")" 200 "x-api-key"
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/models")" 200 "Bearer"
t_lacks "$T/daemon.log" "k-two"
t_end

t_begin "/v1/models: every routable name with its service and state; no remote key"
t_jq "$T/o" .object list
t_jq "$T/o" '[.data[].id] | join(",")' "a,alpha,b,far,shared-model,twin,twin,x,y,default"
t_jq "$T/o" '.data[] | select(.id == "alpha") | .service + " " + .state + " " + .object + " " + .owned_by' \
    "a down model gpumod"
t_jq "$T/o" '.data[] | select(.id == "default") | .service' a
t_lacks "$T/o" "$REMOTE_SECRET"
t_end

t_begin "unknown model 404 listing the names; bad JSON and no model 400 with the offset; ambiguous 409"
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" -d '{"model":"nope","messages":[]}')" 404 "unknown"
t_jq "$T/o" .error.message "model 'nope' not found; available: 'a', 'alpha', 'b', 'default', 'far', 'shared-model', 'twin', 'x', 'y'"
t_jq "$T/o" .error.code model_not_found
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" -d '{"model": "a", "messages": [}')" 400 "bad JSON"
t_jq "$T/o" .error.type invalid_request_error
t_has "$T/o" "malformed JSON at byte 28: expected a value or ']', found '}'"
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/completions" -d '{"prompt":"x"}')" 400 "no model"
t_jq "$T/o" .error.code model_missing
t_has "$T/o" 'no \"model\" key at the top level'
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/embeddings" -d '{"model":"twin","input":"x"}')" 409 "ambiguous"
t_has "$T/o" "model 'twin' is ambiguous"
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/messages" -d '{"model":"nope"}')" 404 "anthropic"
t_jq "$T/o" '.type + " " + .error.type' "error not_found_error"
t_eq "$(rcurl "$T/o" "${K[@]}" -d "" "$RURL/v1/chat/completions")" 400 "an empty body"
t_eq "$(rcurl "$T/o" "${K[@]}" -X GET "$RURL/v1/chat/completions")" 405 "GET"
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/nowhere")" 404 "unknown path"
t_end

t_begin "limits: 413 body, 431 header, 408 slow head and slow body, with their documented error bodies"
head -c $((2 * 1048576)) /dev/zero | tr '\0' ' ' >"$T/big"
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" --data-binary @"$T/big")" 413 "a 2 MiB body"
t_jq "$T/o" .error.code too_large
t_has "$T/o" "body"
# chunked: the limit is passed while the router reads the body itself
t_eq "$(rcurl "$T/o" "${K[@]}" -H "Transfer-Encoding: chunked" "$RURL/v1/chat/completions" --data-binary @"$T/big")" \
    413 "a 2 MiB chunked body"
t_jq "$T/o" .error.code too_large
# out= is the body the client got, not 0
olen=$(stat -c %s "$T/o")
t_wait 5 grep -q '"POST /v1/chat/completions" model=- -> - status=413 in=[0-9]* out='"$olen"' .* aborted=no' "$T/daemon.log" ||
    t_fail "the access log does not record the 413 ($olen bytes) the client got: $(grep 'status=413' "$T/daemon.log")"
t_eq "$(rcurl "$T/o" "${K[@]}" -H "X-Big: $(head -c 3000 /dev/zero | tr '\0' a)" "$RURL/v1/models")" 431 "a 3 KB header"
t_jq "$T/o" .error.code too_large
exec 7<>"/dev/tcp/127.0.0.1/$RP"
printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n' >&7
timeout $((5 * S)) cat <&7 >"$T/slow"
exec 7<&-
t_has "$T/slow" "HTTP/1.1 408"
t_has "$T/slow" '{"error":{"code":"timeout","message":"request head not received in time"}}'
# the body deadline: a head, then a few bytes of a 100-byte body
exec 7<>"/dev/tcp/127.0.0.1/$RP"
printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k-one\r\nContent-Length: 100\r\n\r\n{"mo' >&7
timeout $((5 * S)) cat <&7 >"$T/slowbody"
exec 7<&-
t_has "$T/slowbody" "HTTP/1.1 408"
t_has "$T/slowbody" '{"error":{"code":"timeout","message":"request body not received in time"}}'
blen=$(python3 -c 'import sys; print(len(open(sys.argv[1], "rb").read().split(b"\r\n\r\n", 1)[1]))' "$T/slowbody")
t_wait 5 grep -q '"POST /v1/chat/completions" model=- -> - status=408 in=4 out='"$blen"' .* aborted=no' "$T/daemon.log" ||
    t_fail "the access log does not record the 408 ($blen bytes) the client got: $(grep 'status=408' "$T/daemon.log")"
t_end

t_begin "\"model\": \"default\" follows route default, rewritten to the target's id, kept across a restart"
t_run 0 gpumod route default
t_has out "default -> a (router.default)"
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" -d "$(chat default)")" 200 "default -> a"
t_jq "$T/o" .model a
t_run 2 gpumod route default shared-model
t_has err "not a service id or alias"
t_run 0 gpumod route default b
t_has out "default -> b (route default)"
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" -d "$(chat default)")" 200 "default -> b"
t_jq "$T/o" .model b
t_run 0 gpumod route show
t_match out "shared-model +b +model_id"
t_has out "default: b"
daemon_stop
daemon_start
t_wait 10 curl -sf -o /dev/null "$RURL/health"
t_run 0 gpumod route default --json
t_jq out .service b
t_jq out .source "route default"
t_run 0 gpumod route default --clear
t_has out "default -> a (router.default)"
t_end

t_begin "CORS: preflight for an allowed origin, 403 for another, the header on answers"
curl -s -o /dev/null -D "$T/h" -X OPTIONS -H "Origin: https://app.example" \
    -H "Access-Control-Request-Headers: authorization, content-type" "$RURL/v1/chat/completions"
t_has "$T/h" "HTTP/1.1 204"
t_has "$T/h" "Access-Control-Allow-Origin: https://app.example"
t_has "$T/h" "Access-Control-Allow-Headers: authorization, content-type"
t_eq "$(curl -s -o /dev/null -w '%{http_code}' -X OPTIONS -H 'Origin: https://evil.example' "$RURL/v1/models")" 403 "other origin"
curl -s -o /dev/null -D "$T/h" "${K[@]}" -H "Origin: https://app.example" "$RURL/v1/models"
t_has "$T/h" "Access-Control-Allow-Origin: https://app.example"
t_end

t_begin "/metrics passes promtool check metrics"
t_eq "$(rcurl "$T/metrics.txt" "${K[@]}" "$RURL/metrics")" 200 "status"
t_run 0 promtool_check "$T/metrics.txt"
t_has "$T/metrics.txt" "gpumod_router_requests_total"
t_end

t_begin "a remote service gets the remote's key (never the client's) and the key is in no log"
fakellm_spawn remote -- -m "$MODEL" --port "$PR" --api-key "$REMOTE_SECRET"
wait_healthy "$PR" || t_fail "the remote fake never came up"
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" -d "$(chat far)")" 200 "through the router"
t_jq "$T/o" .object chat.completion
t_eq "$(rcurl "$T/o" -H "Authorization: Bearer $REMOTE_SECRET" "http://127.0.0.1:$PR/v1/models")" 200 "the fake checks keys"
t_eq "$(rcurl "$T/o" -H "Authorization: Bearer k-two" "http://127.0.0.1:$PR/v1/models")" 401 "... and refuses the router's"
t_lacks "$T/daemon.log" "$REMOTE_SECRET"
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/models")" 200 "models"
t_lacks "$T/o" "$REMOTE_SECRET"
t_end

daemon_stop
stop_all_clean
t_done
