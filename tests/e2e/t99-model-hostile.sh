#!/usr/bin/env bash
# t99-model-hostile: what a Hub, mirror or CDN must not be able to do to
# `gpumod model fit`: have the token follow a redirect (the CDN's later
# Range requests go without it), show a signed URL's query in an error,
# follow a listing's next page to another server, or get a path out of
# the repository accepted.  Complements t97-model-pull's hostile cases.
. "$(dirname "$0")/lib.sh"
fake_gpu_24g

fake_hub

# cdn_auth: how many requests to the CDN carried an Authorization header
cdn_auth() {
    python3 -c '
import json, sys
print(sum(1 for l in open(sys.argv[1]) if l.strip() and json.loads(l).get("server") == "cdn" and json.loads(l).get("auth")))' "$HUBLOG"
}

t_begin "the token reaches the Hub, never the CDN, over a header read in several windows"
: >"$HUBLOG"
HF_TOKEN=hf_fake_token_123 t_run 0 gpumod --json model fit hf:test/tiny-GGUF
t_jq "$T/out" '[.files[] | select(.estimate != null)] | length' 2
t_jq "$T/out" '.requests > 2' true
t_eq "$(cdn_auth)" 0 "CDN requests with the token"
grep -q '"server": *"hub".*"auth": *true' "$HUBLOG" || t_fail "the Hub never got the token"
t_lacks out "hf_fake_token_123"
t_lacks err "hf_fake_token_123"
t_end

t_begin "a signed URL's query stays out of the errors (the source is echoed as given)"
t_run 1 gpumod --json model fit "http://127.0.0.2:$CP/cdn/test/tiny-GGUF/nothere.gguf?sig=SECRETSIG"
t_jq "$T/out" '.files[0].error | test("nothere.gguf")' true
t_jq "$T/out" '.files[0].error | test("SECRETSIG") | not' true
t_end

t_begin "a split part by its signed CDN URL: the error has no signature"
LOC=$(curl -s -o /dev/null -w '%{redirect_url}' \
    "$HF_ENDPOINT/test/split-GGUF/resolve/main/tiny-split-00002-of-00002.gguf")
case "$LOC" in *'?'*) ;; *) t_fail "no signed CDN URL: '$LOC'" ;; esac
SIG=${LOC#*\?}
t_run 1 gpumod --json model fit "$LOC"
t_jq "$T/out" '.files[0].error | test("a split model .* named by a URL with a query")' true
case "$(jq -r '.files[0].error' "$T/out")" in *"$SIG"*) t_fail "the signature is in the error" ;; esac
t_end

t_begin "a listing's next page on another server is refused, and gets no token"
: >"$HUBLOG"
HF_TOKEN=hf_fake_token_123 t_run 1 gpumod model fit hf:evil/link-GGUF
t_has err "the next page is on another server"
t_eq "$(cdn_auth)" 0 "CDN requests with the token"
t_end

t_begin "a listed path that leaves the repository, or holds a newline, is refused"
t_run 1 gpumod model fit hf:evil/traversal-GGUF
t_has err "leaves the repository"
t_run 1 gpumod model fit hf:evil/ctrl-GGUF
t_has err "a control character in the path"
t_has err '\x0a'
t_end

t_begin "a size that is no whole number of bytes is refused"
t_run 1 gpumod model fit hf:evil/hugesize-GGUF
t_has err "whole number of bytes"
t_end

t_done
