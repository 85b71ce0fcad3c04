#!/usr/bin/env bash
# t97-model-fit: `gpumod model fit SOURCE`: local files and directories,
# the fake Hub (hf: repositories, a split model, a huge synthetic header
# read for a tiny fraction of its size, a gated repository), a CDN URL;
# the per-file "model" and "estimate" objects byte-for-byte those of
# `model inspect`; --mode; and the errors a user meets.
. "$(dirname "$0")/lib.sh"
fake_gpu_24g
MODELS=$FIXTURES/models
TINY=$MODELS/llama-2-tiny-random.gguf

fake_hub

# same_objects FIT_JSON INSPECT_JSON INDEX: the fit file's model and
# estimate equal inspect's, byte for byte as JSON texts
same_objects() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
fit = json.load(open(sys.argv[1]))
ins = json.load(open(sys.argv[2]))
f = fit["files"][int(sys.argv[3])]
for k in ("model", "estimate"):
    a = json.dumps(f[k], sort_keys=False, separators=(",", ":"))
    b = json.dumps(ins[k], sort_keys=False, separators=(",", ":"))
    if a != b:
        print(f"{k} differs:\n fit     {a}\n inspect {b}")
        sys.exit(1)
PY
}

t_begin "a local file: fits now and alone, its model and estimate are inspect's"
t_run 0 gpumod --json model fit "$TINY"
cp "$T/out" "$T/fit.json"
t_jq "$T/fit.json" '.files | length' 1
t_jq "$T/fit.json" '.files[0].fits.now' true
t_jq "$T/fit.json" '.files[0].fits.alone' true
t_jq "$T/fit.json" '.files[0].fits.mode' null
t_jq "$T/fit.json" '.files[0].max_ctx.alone > 0' true
t_jq "$T/fit.json" '.bytes_fetched' 0
t_run 0 gpumod --json model inspect "$TINY"
cp "$T/out" "$T/inspect.json"
same_objects "$T/fit.json" "$T/inspect.json" 0 || t_fail "fit and inspect disagree"
t_run 0 gpumod --json model fit "$TINY" --ctx 2048 --parallel 2 -fa on
cp "$T/out" "$T/fit.json"
t_run 0 gpumod --json model inspect "$TINY" --ctx 2048 --parallel 2 -fa on
same_objects "$T/fit.json" "$T/out" 0 || t_fail "fit and inspect disagree with flags"
t_run 0 gpumod model fit "$TINY"
t_has out "llama-2-tiny-random.gguf"
t_match out "max ctx"
t_end

t_begin "a directory: both models, sorted by bits per weight"
t_run 0 gpumod --json model fit "$MODELS"
t_jq out '.files | length' 2
t_jq out '.files[0].file' aidreams260K-f32.gguf
t_jq out '.files[0].bits_per_weight >= .files[1].bits_per_weight' true
t_end

t_begin "hf:test/tiny-GGUF: two files over Range requests"
t_run 0 gpumod --json model fit hf:test/tiny-GGUF
t_jq out '.files | length' 2
t_jq out '[.files[].estimate != null] | all' true
t_jq out '.bytes_fetched > 0' true
t_run 0 gpumod model fit hf:test/tiny-GGUF
t_match out "read .* of .* in [0-9]+ requests"
t_end

t_begin "hf:test/split-GGUF: one model of two parts, equal to inspect of the parts"
t_run 0 gpumod --json model fit hf:test/split-GGUF
cp "$T/out" "$T/fit.json"
t_jq "$T/fit.json" '.files | length' 1
t_jq "$T/fit.json" '.files[0].parts' 2
t_jq "$T/fit.json" '.files[0].model.split_count' 2
mkdir -p "$T/split"
for f in $(jq -r '.. | .path? // empty' <(curl -s --max-time 10 "$HF_ENDPOINT/api/models/test/split-GGUF/tree/main?recursive=true") | grep '\.gguf$'); do
    curl -s -L --max-time 20 -o "$T/split/$f" "$HF_ENDPOINT/test/split-GGUF/resolve/main/$f"
done
first=$(ls "$T/split" | grep -- '-00001-of-' | head -1)
t_run 0 gpumod --json model inspect "$T/split/$first"
same_objects "$T/fit.json" "$T/out" 0 || t_fail "fit and inspect of the split disagree"
t_end

t_begin "hf:synth/Big-70B-GGUF: does not fit 24 GB alone, read a tiny fraction"
t_run 0 gpumod --json model fit hf:synth/Big-70B-GGUF
t_jq out '.files[0].fits.alone' false
t_jq out '.files[0].max_ctx.alone >= 0' true
t_jq out '.bytes_fetched * 50 < .files_bytes' true
t_jq out '.files[0].reason | length > 0' true
t_end

t_begin "an http:// URL of the CDN"
loc=$(curl -s -o /dev/null -w '%{redirect_url}' --max-time 10 \
    "$HF_ENDPOINT/test/tiny-GGUF/resolve/main/llama-2-tiny-random.gguf")
case "$loc" in http://127.0.0.2:*) ;; *) t_fail "no CDN redirect: '$loc'" ;; esac
t_run 0 gpumod --json model fit "$loc"
t_jq out '.files[0].estimate != null' true
t_jq out '.files[0].model.architecture' llama
t_end

t_begin "--mode: beside a mode's services"
mkdir -p "$T/config/presets" "$T/config/modes"
cat >"$T/config/presets/big.yaml" <<YAML
id: big
driver: llamacpp
port: 18555
model_path: $TINY
context_size: 256
memory:
  gpu_mb: [23000]
  host_mb: 100
YAML
cat >"$T/config/modes/heavy.yaml" <<'YAML'
id: heavy
services: [big]
YAML
t_run 0 gpumod --json model fit "$TINY" --mode heavy
t_jq out '.mode' heavy
t_jq out '.files[0].fits.mode' false
t_jq out '.files[0].fits.alone' true
t_jq out '.files[0].max_ctx.mode' 0
t_match out '"reason":"GPU 0'
t_run 0 gpumod model fit "$TINY" --mode heavy
t_match out "mode"
t_match out " none$" # max ctx: not even 256 fits (JSON: 0)
t_end

t_begin "errors: unknown mode, 404, not a GGUF, refused connection, gated, http endpoint"
t_run 2 gpumod model fit "$TINY" --mode nosuch
t_has err "no mode 'nosuch'"
t_has err "heavy"
t_run 1 gpumod model fit hf:no/such-repo
t_match err "404|not found"
t_run 1 gpumod model fit "$HF_ENDPOINT/test/tiny-GGUF/resolve/main/README.md"
t_has err "does not name a .gguf file"
port=$(free_port)
t_run 1 gpumod model fit "https://127.0.0.1:$port/x.gguf"
t_match out "error|Could not connect|refused"
t_run 1 gpumod model fit hf:test/gated-GGUF
t_has err "HF_TOKEN"
t_match err "401|unauthorized|Unauthorized"
HF_TOKEN=hf_fake_token_123 t_run 0 gpumod --json model fit hf:test/gated-GGUF
t_jq out '.files[0].estimate != null' true
HF_ENDPOINT=http://example.com t_run 2 gpumod model fit hf:test/tiny-GGUF
t_has err "http:// is accepted only for loopback addresses"
t_run 2 gpumod model fit
t_has err "missing SOURCE"
t_run 2 gpumod model fit "$TINY" --ctx nope
t_has err "--ctx: expected an integer"
t_end

t_done
