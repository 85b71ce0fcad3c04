#!/usr/bin/env bash
# t70-router-promtool: the promtool the /metrics tests rely on (lib.sh's
# promtool_check) runs from the test cache, accepts a clean exposition and
# rejects the mistakes a hand-written exporter makes.
. "$(dirname "$0")/lib.sh"

cat >"$T/good.txt" <<'M'
# HELP gpumod_requests_total Requests by model and status.
# TYPE gpumod_requests_total counter
gpumod_requests_total{model="qwen3",status="200"} 3
# HELP gpumod_queue_wait_seconds Time a request waited for its service.
# TYPE gpumod_queue_wait_seconds histogram
gpumod_queue_wait_seconds_bucket{le="0.1"} 1
gpumod_queue_wait_seconds_bucket{le="+Inf"} 2
gpumod_queue_wait_seconds_sum 4.5
gpumod_queue_wait_seconds_count 2
M
printf 'gpumod_requests_total 3\n' >"$T/nohelp.txt"
printf '# TYPE x counter\nx{a="b" 1\n' >"$T/broken.txt"

t_begin "promtool accepts a clean exposition"
t_run 0 promtool_check "$T/good.txt"
t_eq "$(cat "$T/out" "$T/err")" ""
t_end

t_begin "promtool flags a metric without HELP"
t_run 3 promtool_check "$T/nohelp.txt"
t_has err "gpumod_requests_total no help text"
t_end

t_begin "promtool rejects a malformed line"
t_run 1 promtool_check "$T/broken.txt"
t_has err "text format parsing error in line 2"
t_end

t_done
