#!/usr/bin/env bash
# t75-router-activation-rank: when the gate refuses a start beside the
# running services, on-demand activation switches to the mode whose plan
# fits (then fewest stops, then smallest), never the smallest mode the plan
# refuses; when no mode fits, the 503 names each mode and why, best
# first.  Against
# fakellm and the fake NVML (one 24 GiB GPU, 300 MiB used).  Mode A runs
# big_a (16000 MiB).  x (9000) does not fit beside it; mode pair (x and
# huge, 16000) is the smallest containing x but cannot fit; mode trio (x
# and two 500 MiB services) fits.  y (15000) fits in no mode.
. "$(dirname "$0")/lib.sh"

fake_gpu_24g
. "$(dirname "$0")/sup-lib.sh"

RP=$(free_port)
R=http://127.0.0.1:$RP
cat >"$C/gpumod.yaml" <<Y
drivers:
  llamacpp: {binary: fakellm}
supervisor: {stop_timeout: 2s, health_interval: 1s}
router: {enabled: true, listen: "127.0.0.1:$RP"}
Y

# gpu_preset ID MIB: fakellm (driver command, so the declared memory is
# the need) holding MIB on the fake GPU
gpu_preset() {
    {
        printf 'id: %s\ndriver: command\nport: %s\ncommand: [%s, -m, %s, --port, "{port}"]\n' \
            "$1" "$(free_port)" "$FAKELLM_BIN" "$MODEL"
        printf 'devices: [0]\nmemory: {gpu_mb: %s, host_mb: 16}\nenv:\n' "$2"
        printf '  GPUMOD_FAKE_NVML_STATE: %s\n  FAKELLM_GPU_MB: "%s"\n' "$T/nvml.json" "$2"
    } >"$C/presets/$1.yaml"
}
gpu_preset big_a 16000
gpu_preset x 9000
gpu_preset y 15000
gpu_preset huge 16000
gpu_preset c1 500
gpu_preset c2 500
mkdir -p "$C/modes"
printf 'id: A\nservices: [big_a]\n' >"$C/modes/A.yaml"
printf 'id: pair\nservices: [x, huge]\n' >"$C/modes/pair.yaml"
printf 'id: trio\nservices: [x, c1, c2]\n' >"$C/modes/trio.yaml"
printf 'id: ypair\nservices: [y, huge]\n' >"$C/modes/ypair.yaml"
printf 'id: ybig\nservices: [y, huge, c1]\n' >"$C/modes/ybig.yaml"

# ask MODEL: a chat request through the router; status printed, body in $T/o
ask() {
    curl -s -o "$T/o" -w '%{http_code}' --max-time $((60 * S)) "$R/v1/chat/completions" \
        -d "{\"model\":\"$1\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":3}"
}
router_up() { curl -s -o /dev/null --max-time 2 "$R/health"; }

daemon_start
t_wait 10 router_up || t_fail "the router never answered on $R"
t_run 0 gpumod mode switch A

t_begin "x does not fit beside big_a: the mode whose plan fits (trio) is switched to, not the smaller pair"
t_eq "$(ask x)" 200 "status"
t_eq "$(state_of x)" ready "x"
t_eq "$(state_of c1)" ready "c1"
t_eq "$(state_of big_a)" down "big_a"
t_eq "$(state_of huge)" down "huge"
t_run 0 gpumod mode current
t_has out trio
t_end

t_begin "y fits in no mode: 503 naming each mode and why, nothing stopped"
t_eq "$(ask y)" 503 "status"
t_jq "$T/o" .error.code unavailable
t_has "$T/o" "refused: 'y': GPU 0 free "
# ybig keeps c1 (2 stops), ypair stops all three: ybig is named first
t_has "$T/o" "; no mode containing 'y' fits: mode 'ybig': the start of 'huge' is refused: GPU 0 free "
t_has "$T/o" "; mode 'ypair': the start of 'huge' is refused: GPU 0 free "
t_eq "$(state_of x)" ready "x still"
t_eq "$(state_of y)" down "y"
t_end

daemon_stop
stop_all_clean
t_done
