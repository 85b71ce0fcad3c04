#!/usr/bin/env bash
# t73-router-remote: remote services (driver: remote) through the router.
# HTTPS with verification against a throw-away CA made here with the
# openssl program (GPUMOD_TLS_CA_FILE): an OpenAI-shaped backend (fakellm
# behind tests/fakes/tls-front.py, when python3 is there) by DNS name and by
# IP SAN, a 200 KB body, 8 concurrent streams; `openssl s_server -www`
# through /upstream/; a certificate for another name (DNS and IP), another
# CA, and a missing libssl each give 502 with the documented message.
# DNS: a remote whose host is a name only NSS knows (this machine's
# hostname; "localhost" is not looked up, docs/router.md) works; an
# unresolvable name fails with 502 (504 past the 5 s DNS deadline), never
# hangs.  The remote's key is sent instead of the client's (fakellm
# --api-key answers 401 otherwise) and is in no log, no event, no state
# file and not in /v1/models.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"
. "$(dirname "$0")/router-lib.sh"

if ! command -v openssl >/dev/null; then
    t_skip "remote services over HTTPS" "no openssl program (scripts/install-deps installs it)"
    t_done
    exit
fi

export REMOTE_SECRET="sk-remote-73c1e9d2" RKEYS="k-client"
K=(-H "Authorization: Bearer k-client")
CA=$T/ca
mkdir -p "$CA"

# cert NAME SIGNER SAN: a key and a certificate for CN=NAME in $CA; SIGNER
# "-" makes a self-signed CA
cert() {
    local n=$1 ca=$2 san=$3 args=()
    [ "$ca" = - ] || args=(-CA "$CA/$ca.pem" -CAkey "$CA/$ca.key" -addext "subjectAltName=$san"
        -addext "basicConstraints=critical,CA:FALSE" -addext "extendedKeyUsage=serverAuth")
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$CA/$n.key" \
        -out "$CA/$n.pem" -days 2 -subj "/CN=$n" "${args[@]}" >"$T/openssl.out" 2>&1 ||
        { sed 's/^/#   openssl: /' "$T/openssl.out"; t_fail "openssl req for $n failed"; }
}

# accept_port NAME: the port in the "ACCEPT 127.0.0.1:PORT" line of $T/NAME.log
accept_port() {
    t_wait 10 grep -q '^ACCEPT 127.0.0.1:[0-9]' "$T/$1.log" ||
        { sed 's/^/#   '"$1"': /' "$T/$1.log" | tail -5; return 1; }
    sed -n 's/^ACCEPT 127.0.0.1:\([0-9]*\).*/\1/p' "$T/$1.log" | head -1
}

# remote ID BASE_URL: a remote preset with the remote's key; the remote's model is named as the id
remote() {
    printf 'id: %s\nmodel_id: %s\ndriver: remote\nremote: {base_url: "%s", api_key_env: REMOTE_SECRET}\n' "$1" "$1" "$2" \
        >"$C/presets/$1.yaml"
}

# no_secret WHAT: the remote's key is in no log of this run, no state file
no_secret() {
    t_lacks "$T/daemon.log" "$REMOTE_SECRET"
    if grep -rqaF -- "$REMOTE_SECRET" "$T/state"; then t_fail "$1: the key is in $T/state: $(grep -rlaF -- "$REMOTE_SECRET" "$T/state")"; fi
}

t_begin "a test CA, a second CA, certificates for localhost + 127.0.0.1 and for another name; the servers listen"
cert ca - ""
cert ca2 - ""
cert srv ca "DNS:localhost,IP:127.0.0.1"
cert other ca "DNS:other.example"
PF=$(free_port)
fakellm_spawn llm -- -m "$MODEL" --port "$PF" --api-key "$REMOTE_SECRET"
wait_healthy "$PF" || t_fail "fakellm never came up on $PF"
t_spawn www openssl s_server -accept 127.0.0.1:0 -www -cert "$CA/srv.pem" -key "$CA/srv.key"
PW=$(accept_port www) || t_fail "openssl s_server (localhost) did not listen"
t_spawn wrongname openssl s_server -accept 127.0.0.1:0 -www -cert "$CA/other.pem" -key "$CA/other.key"
PM=$(accept_port wrongname) || t_fail "openssl s_server (other.example) did not listen"
PT=""
if command -v python3 >/dev/null; then
    t_spawn front python3 "$GPUMOD_SRC/tests/fakes/tls-front.py" "$CA/srv.pem" "$CA/srv.key" "$PF"
    PT=$(accept_port front) || t_fail "tls-front.py did not listen"
fi
# a name only NSS (/etc/hosts) knows: this machine's own, when its first
# address (what getaddrinfo gives the router first) is IPv4 loopback
# (Debian maps it to 127.0.1.1): a second fakellm listens there
HN=$(hostname 2>/dev/null) HA="" PN=""
[ -n "$HN" ] && [ "$HN" != localhost ] && HA=$(getent ahosts "$HN" 2>/dev/null | awk 'NR == 1 { print $1 }')
case "$HA" in
    127.*)
        PN=$(free_port)
        fakellm_spawn named -- -m "$MODEL" --host "$HA" --port "$PN" --api-key "$REMOTE_SECRET"
        t_wait 10 curl -sf -o /dev/null "http://$HA:$PN/health" || t_fail "fakellm never came up on $HA:$PN" ;;
    *) HN="" ;;
esac
t_end

rsettings 'api_keys_env: RKEYS'
remote www "https://localhost:$PW/v1"
remote wrongname "https://localhost:$PM/v1"
remote wrongip "https://127.0.0.1:$PM/v1"
remote nodns "http://no-such-host.invalid:$PF/v1"
[ -n "$PT" ] && remote tls "https://localhost:$PT/v1" && remote tlsip "https://127.0.0.1:$PT/v1"
[ -n "$HN" ] && remote named "http://$HN:$PN/v1"

t_begin "HTTPS with the test CA: /upstream/ GET to openssl s_server -www answers 200 with its page"
export GPUMOD_TLS_CA_FILE=$CA/ca.pem
daemon_start
t_wait 10 curl -sf -o /dev/null "$RURL/health" || t_fail "the router never answered on $RURL"
t_run 0 gpumod service start www
t_wait 10 is_state www ready || t_fail "www is $(state_of www), expected ready"
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/upstream/www/status")" 200 "status"
t_has "$T/o" "Ciphers supported in s_server binary"
t_match "$T/o" "^New, TLSv1\\.[23], Cipher is "
t_end

if [ -n "$PT" ]; then
    t_begin "HTTPS to an OpenAI-shaped backend (fakellm behind TLS): chat, streamed chat, by name and by IP SAN"
    t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" -d "$(chat tls)")" 200 "chat"
    t_jq "$T/o" .object chat.completion
    t_jq "$T/o" '.choices[0].message.content | length > 0' true
    t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" -d "$(chat tls true 16)")" 200 "streamed chat"
    t_has "$T/o" '"object":"chat.completion.chunk"'
    t_has "$T/o" "data: [DONE]"
    # a request body of many TLS records
    printf '{"model":"tls","max_tokens":4,"messages":[{"role":"user","content":"%s"}]}' \
        "$(head -c 200000 /dev/zero | tr '\0' a)" >"$T/big.json"
    t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" --data-binary @"$T/big.json")" 200 "a 200 KB body"
    t_jq "$T/o" .object chat.completion
    # concurrent streams: several TLS connections in the pool at once
    pids=()
    for i in 1 2 3 4 5 6 7 8; do
        rcurl "$T/par$i" "${K[@]}" "$RURL/v1/chat/completions" -d "$(chat tls true 64)" >"$T/par$i.code" &
        pids+=($!)
    done
    wait "${pids[@]}" # (curl's --max-time bounds each)
    for i in 1 2 3 4 5 6 7 8; do
        t_eq "$(cat "$T/par$i.code")" 200 "concurrent stream $i"
        t_has "$T/par$i" "data: [DONE]"
    done
    t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" -d "$(chat tlsip)")" 200 "by IP address"
    t_jq "$T/o" .object chat.completion
    t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/models")" 200 "models"
    t_lacks "$T/o" "$REMOTE_SECRET"
    t_end

    t_begin "HTTPS: the client's Authorization is not forwarded, the remote's key is (fakellm answers 401 otherwise)"
    t_eq "$(rcurl "$T/o" -H "Authorization: Bearer k-client" "http://127.0.0.1:$PF/v1/models")" 401 \
        "fakellm refuses the client's key on /v1/models"
    t_eq "$(rcurl "$T/o" -H "Authorization: Bearer k-client" -X POST -d "$(chat x)" \
        "http://127.0.0.1:$PF/v1/chat/completions")" 401 "fakellm refuses the client's key"
    t_eq "$(rcurl "$T/o" "${K[@]}" -H "x-api-key: k-client" "$RURL/v1/chat/completions" -d "$(chat tls)")" 200 \
        "through the router with Bearer and x-api-key"
    t_jq "$T/o" .object chat.completion
    t_end
else
    t_skip "HTTPS to an OpenAI-shaped backend" "no python3 for tests/fakes/tls-front.py"
fi

t_begin "HTTPS: a certificate for another name is refused (502, hostname / IP address mismatch)"
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" -d "$(chat wrongname)")" 502 "status"
t_jq "$T/o" .error.code upstream_unreachable
t_has "$T/o" "TLS handshake with 'localhost' failed: certificate verify failed: hostname mismatch"
t_has "$T/o" "service 'wrongname': backend localhost:$PM: TLS handshake with 'localhost' failed"
t_eq "$(grep -o 'TLS handshake' "$T/o" | wc -l)" 1 "the handshake failure said once"
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" -d "$(chat wrongip)")" 502 "an IP literal the certificate does not name"
t_has "$T/o" "TLS handshake with '127.0.0.1' failed: certificate verify failed: IP address mismatch"
t_end

if [ -n "$HN" ]; then
    t_begin "DNS: a host name resolved through getaddrinfo (this machine's name, $HN -> $HA) reaches the plain-http remote"
    t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" -d "$(chat named)")" 200 "chat via $HN"
    t_jq "$T/o" .object chat.completion
    t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" -d "$(chat named true)")" 200 "again, streamed (cached address)"
    t_has "$T/o" "data: [DONE]"
    t_end
else
    t_skip "DNS: a host name resolved through getaddrinfo reaches the plain-http remote" \
        "this machine's name '$(hostname 2>/dev/null)' does not resolve to IPv4 loopback (localhost is not looked up)"
fi

t_begin "DNS: an unresolvable name gives 502 (or 504 past the 5 s deadline) saying so, never a hang"
code=$(rcurl "$T/o" "${K[@]}" --max-time $((15 * S)) "$RURL/v1/chat/completions" -d "$(chat nodns)")
case "$code" in
    502) t_has "$T/o" "remote service 'nodns': cannot resolve 'no-such-host.invalid'"
         t_jq "$T/o" .error.code upstream_unreachable ;;
    504) t_has "$T/o" "remote service 'nodns': resolving 'no-such-host.invalid' took longer than 5000 ms"
         t_jq "$T/o" .error.code upstream_timeout ;;
    *) t_fail "status $code, expected 502 or 504 (000: no answer within $((15 * S)) s)" ;;
esac
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/health")" 200 "the router still answers"
t_end

t_begin "the remote's key is in no log, no event, not in /v1/models; the access log has the requests"
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/models")" 200 "models"
t_lacks "$T/o" "$REMOTE_SECRET"
t_jq "$T/o" '[.data[] | select(.id == "www") | .service] | join(",")' www
gpumod events --json >"$T/ev.json" 2>&1
t_lacks "$T/ev.json" "$REMOTE_SECRET"
no_secret "CA run"
t_has "$T/daemon.log" '"GET /upstream/www/status" model=- -> www status=200'
[ -n "$PT" ] && t_match "$T/daemon.log" '"POST /v1/chat/completions" model=tls -> tls status=200'
t_match "$T/daemon.log" '"POST /v1/chat/completions" model=wrongname -> wrongname status=502'
daemon_stop # (exit 0: no sanitizer report at its exit either)
mv "$T/daemon.log" "$T/daemon-run1.log" # kept for the sanitizer check at the end
t_end

t_begin "HTTPS with another CA in GPUMOD_TLS_CA_FILE: 502, certificate verification failed"
export GPUMOD_TLS_CA_FILE=$CA/ca2.pem
daemon_start
t_wait 10 curl -sf -o /dev/null "$RURL/health" || t_fail "the router never answered on $RURL"
t_run 0 gpumod service start www
t_wait 10 is_state www ready || t_fail "www is $(state_of www), expected ready"
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/upstream/www/status")" 502 "/upstream/"
t_jq "$T/o" .error.code upstream_unreachable
t_has "$T/o" "TLS handshake with 'localhost' failed: certificate verify failed: unable to get local issuer certificate (the server's CA is not in GPUMOD_TLS_CA_FILE)"
if [ -n "$PT" ]; then
    t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" -d "$(chat tls)")" 502 "chat"
    t_has "$T/o" "certificate verify failed"
    t_lacks "$T/o" "$REMOTE_SECRET"
fi
t_has "$T/daemon.log" "certificate verify failed"
no_secret "wrong CA run"
daemon_stop
mv "$T/daemon.log" "$T/daemon-run2.log"
t_end

t_begin "libssl missing: 502 with \"needs HTTPS but libssl.so.3 cannot be loaded\"; plain http remotes still work"
export GPUMOD_TLS_CA_FILE=$CA/ca.pem GPUMOD_LIBSSL=/nonexistent/libssl.so.3
daemon_start
t_wait 10 curl -sf -o /dev/null "$RURL/health" || t_fail "the router never answered on $RURL"
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" -d "$(chat wrongname)")" 502 "chat"
t_has "$T/o" "remote service 'wrongname' needs HTTPS but /nonexistent/libssl.so.3 cannot be loaded: install libssl3"
t_jq "$T/o" .error.code upstream_unreachable
if [ -n "$HN" ]; then
    t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" -d "$(chat named)")" 200 "a plain http remote"
fi
no_secret "no libssl run"
daemon_stop
unset GPUMOD_LIBSSL
t_end

t_begin "a remote key with a space or a control character is refused at start (exit 2), never silently not sent"
REMOTE_SECRET="sk-remote 73c1" "$GPUMOD_BIN" serve --foreground >"$T/out" 2>"$T/err" </dev/null
t_eq "$?" 2 "exit code"
t_has err "remote.api_key_env: the variable 'REMOTE_SECRET' holds a key with a space or a control character"
t_lacks err "sk-remote 73c1"
t_end

t_begin "fakellm and the TLS front exit 0 on SIGTERM; no sanitizer report in any log"
# openssl s_server dies of SIGTERM (not exit 0): stop it first
for n in www wrongname; do
    p=$(cat "$T/$n.pid")
    kill -TERM "$p" 2>/dev/null
    reap "$p" 5 || t_fail "openssl s_server $n did not exit 5 s after SIGTERM"
done
stop_all_clean
for f in "$T"/daemon*.log; do t_lacks "$f" "$REMOTE_SECRET"; done
t_end
t_done
