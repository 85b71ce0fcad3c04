#!/usr/bin/env bash
# gpumod model pull against the fake Hub (tests/fakes/fakehf.py): a file
# pulled and verified (identical bytes), pulled again (present, nothing
# fetched), a split model's two parts; a connection cut at half resumed by
# itself (the fake's log shows the Range from the half); a .part left
# behind resumed with If-Range; a stale etag sidecar and a server that
# ignores Range both start again from 0; a wrong digest discards the
# download; a gated repository without and with a token (which never
# reaches the CDN nor any output); --dry-run fetches nothing; a held lock
# refuses; the disk check (on a small tmpfs when mount works); the
# models_dir setting; a URL source; a local path and a repository of two
# models refused.  Against the fake's hostile repositories (evil/*): a path
# that climbs out of DIR and one with a newline refused, a listed size of
# 1e30 never taken for 0, a body longer than the listed size cut and
# discarded, a weak ETag never sent as If-Range, upper-case digests
# verified, one part of a split model by URL refused, a tree page's Link
# to another origin never given the token.
. "$(dirname "$0")/lib.sh"

fake_hub
HUB=$HUBDIR
export GPUMOD_QUIET=1
M=$T/models
TOKEN=hf_fake_token_123

mark() { N=$(wc -l <"$HUBLOG"); }
since() { tail -n +$((N + 1)) "$HUBLOG"; }
# how many log lines since the mark match a jq condition
nlog() { since | jq -c "select($1)" | wc -l; }
leftovers() { find "$1" -name '*.part*' | head -5; }

A=aidreams260K-f32.gguf
L=llama-2-tiny-random.gguf
LSIZE=$(stat -c %s "$HUB/test/tiny-GGUF/$L")
HALF=$((LSIZE / 2))
LSHA=$(sha256sum "$HUB/test/tiny-GGUF/$L" | cut -c1-64)

t_begin "a file pulled, verified, identical; nothing left beside it"
mark
t_run 0 gpumod model pull "hf:test/tiny-GGUF/$A" --dir "$M"
t_has out "pulled $M/test/tiny-GGUF/$A (1.0 MiB, sha256 verified)"
cmp -s "$M/test/tiny-GGUF/$A" "$HUB/test/tiny-GGUF/$A" || t_fail "the pulled file differs"
t_eq "$(leftovers "$M")" "" "leftovers"
t_eq "$(nlog '.server == "cdn" and .status == 200')" 1 "CDN downloads"
t_end

t_begin "pulled again: present, nothing fetched"
mark
t_run 0 gpumod model pull "hf:test/tiny-GGUF/$A" --dir "$M"
t_has out "present $M/test/tiny-GGUF/$A (1.0 MiB, sha256 verified)"
t_eq "$(nlog '.path | contains("/resolve/") or startswith("/cdn/")')" 0 "downloads"
t_end

t_begin "a split model: both parts, JSON"
t_run 0 gpumod --json model pull hf:test/split-GGUF --dir "$M"
t_jq out '.files | length' 2
t_jq out '[.files[] | .status] | join(",")' "pulled,pulled"
t_jq out '[.files[] | .verified] | all' true
t_jq out '.bytes_fetched' "$(cat "$HUB"/test/split-GGUF/*.gguf | wc -c)"
for p in tiny-split-00001-of-00002.gguf tiny-split-00002-of-00002.gguf; do
    cmp -s "$M/test/split-GGUF/$p" "$HUB/test/split-GGUF/$p" || t_fail "$p differs"
done
t_end

t_begin "a connection cut at half: resumed by itself from the half"
mark
t_run 0 gpumod model pull "hf:test/cut-GGUF/$L" --dir "$M"
t_has out "pulled $M/test/cut-GGUF/$L"
t_has err "resuming in 1 s (retry 1 of 3)"
t_eq "$(nlog '.server == "cdn" and .cut == true')" 1 "cut transfers"
t_eq "$(nlog ".server == \"cdn\" and .range == \"bytes=$HALF-\" and .status == 206")" 1 \
    "the resumed request"
cmp -s "$M/test/cut-GGUF/$L" "$HUB/test/cut-GGUF/$L" || t_fail "the file differs"
t_end

part() { # REPO ETAG: the first half of the tiny file as a .part with its sidecar
    mkdir -p "$M/test/$1"
    head -c "$HALF" "$HUB/test/tiny-GGUF/$L" >"$M/test/$1/$L.part"
    echo "$2" >"$M/test/$1/$L.part.etag"
}

t_begin "--dry-run: fetches nothing but the listing; says it would resume"
part tiny-GGUF "$LSHA"
mark
t_run 0 gpumod model pull "hf:test/tiny-GGUF/$L" --dir "$M" --dry-run
t_has out "resume http://127.0.0.1:$HP/test/tiny-GGUF/resolve/main/$L"
t_has out "to $M/test/tiny-GGUF/$L (1.7 MiB, resuming from"
t_has out "to fetch: 854.8 KiB; free on $M/test/tiny-GGUF:"
t_run 0 gpumod --json model pull "hf:test/tiny-GGUF/$L" --dir "$T/elsewhere" --dry-run
t_jq out '.files[0].status' fetch
t_jq out '.bytes_to_fetch' "$LSIZE"
t_jq out '.enough_disk' true
t_eq "$(nlog '.path | contains("/tree/") | not')" 0 "requests other than the listing"
[ -e "$T/elsewhere" ] && t_fail "--dry-run created $T/elsewhere"
t_end

t_begin "a .part left behind: resumed with Range from its end and If-Range"
mark
t_run 0 gpumod --json model pull "hf:test/tiny-GGUF/$L" --dir "$M"
t_jq out '.files[0].status' resumed
t_jq out '.files[0].verified' true
t_jq out '.bytes_fetched' $((LSIZE - HALF))
t_eq "$(nlog ".server == \"cdn\" and .range == \"bytes=$HALF-\" and .if_range == \"\\\"$LSHA\\\"\" and .status == 206")" \
    1 "the resumed request"
cmp -s "$M/test/tiny-GGUF/$L" "$HUB/test/tiny-GGUF/$L" || t_fail "the file differs"
t_eq "$(leftovers "$M")" "" "leftovers"
t_end

t_begin "a .part already whole: the 416 is taken as done, verified"
rm -f "$M/test/tiny-GGUF/$L"
mkdir -p "$M/test/tiny-GGUF"
cp "$HUB/test/tiny-GGUF/$L" "$M/test/tiny-GGUF/$L.part"
echo "$LSHA" >"$M/test/tiny-GGUF/$L.part.etag"
mark
t_run 0 gpumod --json model pull "hf:test/tiny-GGUF/$L" --dir "$M"
t_jq out '.files[0].status' resumed
t_jq out '.files[0].verified' true
t_jq out '.bytes_fetched' 0
t_eq "$(nlog ".server == \"cdn\" and .range == \"bytes=$LSIZE-\" and .status == 416")" 1 "the 416"
cmp -s "$M/test/tiny-GGUF/$L" "$HUB/test/tiny-GGUF/$L" || t_fail "the file differs"
t_eq "$(leftovers "$M")" "" "leftovers"
t_end

t_begin "a stale etag sidecar: the CDN sends the whole file, the pull starts again"
rm -f "$M/test/tiny-GGUF/$L"
part tiny-GGUF stale-etag
mark
t_run 0 gpumod --json model pull "hf:test/tiny-GGUF/$L" --dir "$M"
t_has err "starting again from 0"
t_jq out '.files[0].status' pulled
t_eq "$(nlog '.server == "cdn" and .if_range == "\"stale-etag\"" and .status == 200')" 1 \
    "the If-Range request answered 200"
cmp -s "$M/test/tiny-GGUF/$L" "$HUB/test/tiny-GGUF/$L" || t_fail "the file differs"
t_end

t_begin "a server that ignores Range: the resume starts again, right"
part norange-GGUF "$LSHA"
mark
t_run 0 gpumod model pull "hf:test/norange-GGUF/$L" --dir "$M"
t_has err "starting again from 0"
t_eq "$(nlog ".server == \"cdn\" and .range == \"bytes=$HALF-\" and .status == 200")" 1 \
    "the ignored Range"
cmp -s "$M/test/norange-GGUF/$L" "$HUB/test/norange-GGUF/$L" || t_fail "the file differs"
t_end

t_begin "a wrong digest: sha256 mismatch, nothing left"
t_run 1 gpumod model pull "hf:test/baddigest-GGUF/$A" --dir "$M"
t_has err "sha256 mismatch: expected"
t_has err "the download was discarded"
[ -e "$M/test/baddigest-GGUF/$A" ] && t_fail "the file is there"
t_eq "$(leftovers "$M/test/baddigest-GGUF")" "" "leftovers"
t_end

t_begin "a gated repository: 401 without a token, which names HF_TOKEN"
t_run 1 gpumod model pull "hf:test/gated-GGUF/$A" --dir "$M"
t_has err "HTTP 401"
t_has err "HF_TOKEN"
t_end

t_begin "with HF_TOKEN: pulled; the token reaches the Hub only and no output"
mark
HF_TOKEN=$TOKEN GPUMOD_VERBOSE=1 t_run 0 gpumod --json model pull "hf:test/gated-GGUF/$A" --dir "$M"
t_jq out '.files[0].verified' true
t_eq "$(nlog '.server == "cdn" and .auth')" 0 "CDN requests with a token"
t_eq "$(nlog '.server == "cdn" and .status == 200')" 1 "CDN downloads"
[ "$(nlog '.server == "hub" and .auth')" -ge 2 ] || t_fail "the Hub saw no token"
t_lacks out "$TOKEN"
t_lacks err "$TOKEN"
t_has err "GET http://127.0.0.1:$HP/test/gated-GGUF/resolve/main/$A"
grep -q 'token forwarded' "$T/fakehf.log" && t_fail "the fake saw a token on the CDN"
t_end

t_begin "a held lock: another pull is writing"
rm -f "$M/test/tiny-GGUF/$A"
t_spawn locker flock "$M/test/tiny-GGUF/$A.part.lock" sleep 60
t_wait 10 sh -c "! flock -n '$M/test/tiny-GGUF/$A.part.lock' true" || t_fail "the lock was not taken"
t_run 1 gpumod model pull "hf:test/tiny-GGUF/$A" --dir "$M"
t_has err "another gpumod model pull is writing $M/test/tiny-GGUF/$A"
kill -TERM -- "-$(cat "$T/locker.pid")" 2>/dev/null
t_wait 10 flock -n "$M/test/tiny-GGUF/$A.part.lock" true || t_fail "the lock stayed held"
t_run 0 gpumod model pull "hf:test/tiny-GGUF/$A" --dir "$M"
t_end

if [ "$(id -u)" = 0 ] && mkdir -p "$T/small" && mount -t tmpfs -o size=4m tmpfs "$T/small" 2>/dev/null; then
    t_begin "not enough disk (a 4 MiB tmpfs): both figures, nothing written"
    t_run 1 gpumod model pull "hf:test/tiny-GGUF/$A" --dir "$T/small"
    t_has err "not enough disk: the pull needs 1.0 MiB (1068640 bytes) plus 1.0 GiB to spare"
    t_match err "$T/small has 4.0 MiB \\([0-9]+ bytes\\) free"
    t_eq "$(find "$T/small" -mindepth 1 | wc -l)" 0 "files written"
    t_run 1 gpumod model pull "hf:test/tiny-GGUF/$A" --dir "$T/small" --dry-run
    t_has out "(not enough)"
    t_end
    umount "$T/small"
else
    t_skip "not enough disk" "no tmpfs mount here (the message is unit-tested: test_models_pull)"
fi

t_begin "the models_dir setting"
printf 'models_dir: %s\n' "$T/fromyaml" >"$GPUMOD_CONFIG_DIR/gpumod.yaml"
t_run 0 gpumod model pull "hf:test/tiny-GGUF/$A"
t_has out "pulled $T/fromyaml/test/tiny-GGUF/$A"
cmp -s "$T/fromyaml/test/tiny-GGUF/$A" "$HUB/test/tiny-GGUF/$A" || t_fail "the file differs"
rm "$GPUMOD_CONFIG_DIR/gpumod.yaml"
t_end

t_begin "a URL source (the CDN's URL): its name in --dir, no token sent, not verifiable"
CDNPATH=$(jq -r "select(.server == \"cdn\" and (.path | startswith(\"/cdn/test/tiny-GGUF/$L?\"))) | .path" \
    "$HUBLOG" | head -1)
mark
HF_TOKEN=$TOKEN t_run 0 gpumod --json model pull "http://127.0.0.2:$CP$CDNPATH" --dir "$T/url"
t_jq out '.files[0].path' "$T/url/$L"
t_jq out '.files[0].url' "http://127.0.0.2:$CP${CDNPATH%%\?*}"
t_jq out '.files[0].size' "$LSIZE"
t_jq out '.files[0].verified' false
t_has err "not verified (the server publishes no digest)"
t_eq "$(nlog '.auth')" 0 "requests with a token"
t_lacks out "sig="
cmp -s "$T/url/$L" "$HUB/test/tiny-GGUF/$L" || t_fail "the file differs"
t_end

t_begin "refused: a local path, a repository of two models, http to another host"
t_run 1 gpumod model pull "$HUB/test/tiny-GGUF/$A"
t_has err "is already local"
t_run 1 gpumod model pull hf:test/tiny-GGUF --dir "$M"
t_has err "holds 2 models"
t_has err "hf:test/tiny-GGUF/$A"
t_has err "hf:test/tiny-GGUF/$L"
t_run 1 gpumod model pull http://example.com/x.gguf --dir "$M"
t_has err "http:// is accepted only for loopback addresses"
t_run 2 gpumod model pull
t_has err "SOURCE missing"
t_end

# ---- a hostile Hub (the fake's evil/* repositories) ----

t_begin "a listing path that climbs out of DIR: refused, nothing written outside"
rm -rf /tmp/gpumod-evil
mark
t_run 1 gpumod model pull hf:evil/traversal-GGUF --dir "$T/deep/models"
t_has err "../../../../tmp/gpumod-evil/pwn.gguf"
[ -e "$T/tmp" ] && t_fail "a file was written outside DIR: $(find "$T/tmp" | head -3)"
[ -e /tmp/gpumod-evil ] && t_fail "/tmp/gpumod-evil was created"
t_eq "$(nlog '.server == "cdn"')" 0 "CDN requests"
t_end

t_begin "a listing path with a newline and quotes: refused, shown escaped"
mark
t_run 1 gpumod model pull hf:evil/ctrl-GGUF --dir "$M"
t_match err 'm\\(n|x0a)args: '
grep -q '^args:' "$T/err" && t_fail "a raw newline from the listing reached the terminal"
t_eq "$(nlog '.server == "cdn"')" 0 "CDN requests"
t_eq "$(find "$M" -path '*evil/ctrl-GGUF/*' | head -3)" "" "files written"
t_end

t_begin "a folder below DIR that is a symbolic link: refused, nothing written through it"
mkdir -p "$T/sym/models" "$T/outside"
ln -s "$T/outside" "$T/sym/models/test"
t_run 1 gpumod model pull "hf:test/tiny-GGUF/$A" --dir "$T/sym/models"
t_has err "'$T/sym/models/test' is a symbolic link"
t_eq "$(find "$T/outside" -mindepth 1 | head -3)" "" "files written through the link"
t_end

t_begin "a size of 1e30 in the listing: refused, never taken for 0"
mark
t_run 1 gpumod model pull hf:evil/hugesize-GGUF --dir "$M"
t_lacks out "pulled"
t_eq "$(nlog '.server == "cdn" and .status == 200')" 0 "CDN downloads"
[ -e "$M/evil/hugesize-GGUF/$A" ] && t_fail "the file is there"
t_end

t_begin "the server sends more than the listed size: cut at once, discarded"
mark
t_run 1 gpumod model pull "hf:evil/overlong-GGUF/$L" --dir "$M"
t_has err "the server sent more than the 1000 bytes"
t_has err "the listing says; the download was discarded"
[ -e "$M/evil/overlong-GGUF/$L" ] && t_fail "the file is there"
t_eq "$(leftovers "$M/evil")" "" "leftovers"
t_end

t_begin "a weak ETag in the .part's sidecar: no If-Range, the pull starts again"
ASHA=$(sha256sum "$HUB/test/tiny-GGUF/$A" | cut -c1-64)
ASIZE=$(stat -c %s "$HUB/test/tiny-GGUF/$A")
mkdir -p "$M/evil/weaketag-GGUF"
head -c 1000 "$HUB/test/tiny-GGUF/$A" >"$M/evil/weaketag-GGUF/$A.part"
echo "W/$ASHA" >"$M/evil/weaketag-GGUF/$A.part.etag"
mark
t_run 0 gpumod --json model pull "hf:evil/weaketag-GGUF/$A" --dir "$M"
t_has err "the server's ETag is weak: cannot resume safely, starting again"
t_jq out '.files[0].status' pulled
t_jq out '.files[0].verified' true
t_jq out '.bytes_fetched' "$ASIZE"
t_eq "$(nlog '.server == "cdn" and .if_range != null')" 0 "requests with If-Range"
t_eq "$(nlog '.server == "cdn" and .range != null')" 0 "requests with Range"
cmp -s "$M/evil/weaketag-GGUF/$A" "$HUB/test/tiny-GGUF/$A" || t_fail "the file differs"
t_end

t_begin "a resume answered 206 'bytes A-B/*' (no total): appended, verified"
mkdir -p "$M/evil/startotal-GGUF"
head -c 1000 "$HUB/test/tiny-GGUF/$A" >"$M/evil/startotal-GGUF/$A.part"
echo "$ASHA" >"$M/evil/startotal-GGUF/$A.part.etag"
t_run 0 gpumod --json model pull "hf:evil/startotal-GGUF/$A" --dir "$M"
t_jq out '.files[0].status' resumed
t_jq out '.files[0].verified' true
t_jq out '.bytes_fetched' "$((ASIZE - 1000))"
cmp -s "$M/evil/startotal-GGUF/$A" "$HUB/test/tiny-GGUF/$A" || t_fail "the file differs"
t_end

t_begin "a resume answered 206 without Content-Range: refused, nothing renamed into place"
mkdir -p "$M/evil/norangehdr-GGUF"
head -c 1000 "$HUB/test/tiny-GGUF/$A" >"$M/evil/norangehdr-GGUF/$A.part"
echo "$ASHA" >"$M/evil/norangehdr-GGUF/$A.part.etag"
t_run 1 gpumod model pull "hf:evil/norangehdr-GGUF/$A" --dir "$M"
t_has err "a 206 reply without a Content-Range this client can read"
t_run 0 test ! -e "$M/evil/norangehdr-GGUF/$A"
t_end

t_begin "upper-case digests (lfs.oid, X-Linked-Etag): verified, kept"
t_run 0 gpumod model pull "hf:evil/upperdigest-GGUF/$A" --dir "$M"
t_has out "pulled $M/evil/upperdigest-GGUF/$A (1.0 MiB, sha256 verified)"
t_run 0 gpumod --json model pull "http://127.0.0.1:$HP/evil/upperdigest-GGUF/resolve/main/$A" \
    --dir "$T/upper"
t_jq out '.files[0].verified' true
t_jq out '.files[0].sha256' "$ASHA"
cmp -s "$T/upper/$A" "$HUB/test/tiny-GGUF/$A" || t_fail "the file differs"
t_end

t_begin "a URL of one part of a split model: refused, says how"
S1=tiny-split-00001-of-00002.gguf
t_run 1 gpumod model pull "http://127.0.0.1:$HP/test/split-GGUF/resolve/main/$S1?x=1" --dir "$T/split"
t_has err "'http://127.0.0.1:$HP/test/split-GGUF/resolve/main/$S1' is part 1 of 2 of a split model: pull it as hf:ORG/REPO/FILE, or pull each part's URL"
[ -e "$T/split" ] && t_fail "$T/split was created"
t_end

t_begin "a tree page's Link to another origin: the token never follows it"
mark
HF_TOKEN=$TOKEN gpumod model pull hf:evil/link-GGUF --dir "$M" >"$T/out" 2>"$T/err" </dev/null
t_eq "$(nlog '.server == "cdn" and .auth')" 0 "CDN requests with a token"
t_lacks err "$TOKEN"
t_end

t_done
