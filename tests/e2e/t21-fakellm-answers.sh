#!/usr/bin/env bash
# fakellm's known answers (issue 17's canary and eval against known truth):
# the solver for the canary's questions on every endpoint, streamed or not;
# thinking in the content or in reasoning_content; FAKELLM_SCRIPT (answers,
# errors, empty answers, its file:line mistakes); the seeded error rate
# (deterministic, independent of order, different per seed, never
# containing the right answer); garbage mode that no canary answer survives;
# embeddings the embedding canary can judge.
. "$(dirname "$0")/lib.sh"

MODEL=$GPUMOD_SRC/tests/fixtures/models/aidreams260K-f32.gguf
S=$GPUMOD_TEST_TIME_SCALE
command -v python3 >/dev/null || { t_skip "fakellm's known answers" "python3 is missing"; t_done; exit; }

Q_ADD="What is 17 + 25? Reply with the number only."
Q_ECHO="Repeat this exactly, with nothing else: gpumod-canary-7f3a"
Q_CAP="What is the capital of France? Answer with one word."

status_is() { t_eq "$(cat "$T/status")" "$1" "${2:-HTTP status}"; }

# chat URL CONTENT [EXTRA_JSON]: one user message; EXTRA is merged into the body
chat() {
    local body
    body=$(jq -nc --arg c "$2" --argjson x "${3:-{\}}" '{messages:[{role:"user",content:$c}]} + $x')
    http POST "$1/v1/chat/completions" "$body"
}
# sse URL PATH BODY: a stream's data events, one JSON per line, in $T/chunks
sse() {
    curl -sN --max-time $((10 * S)) "$1$2" -d "$3" >"$T/sse"
    grep '^data: {' "$T/sse" | sed 's/^data: //' >"$T/chunks"
}
streamed_content() { jq -sr '[.[].choices[0].delta.content // empty] | join("")' "$T/chunks"; }

# ask.py URL MODE N: N chat requests in 8 threads, answers as "I<TAB>TEXT"
# sorted by I.  MODE sum: "What is I + 1000?" (right: I+1000); seed: the
# same question with the request's own "seed": I (right: 1042).
cat >"$T/ask.py" <<'EOF'
import json, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
url, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def one(i):
    if mode == "sum":
        body = {"messages": [{"role": "user", "content": "What is %d + 1000? Reply with the number only." % i}]}
    else:
        body = {"messages": [{"role": "user", "content": "What is 17 + 1025?"}], "seed": i}
    req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return i, json.load(r)["choices"][0]["message"]["content"]
with ThreadPoolExecutor(8) as ex:
    res = sorted(ex.map(one, range(1, n + 1) if mode == "sum" else range(n)))
for i, c in res:
    print("%d\t%s" % (i, c))
EOF
# wrong FILE MODE: the ids whose answer is not the right one
wrong() {
    if [ "$2" = sum ]; then awk -F'\t' '$2 != $1 + 1000 { print $1 }' "$1"
    else awk -F'\t' '$2 != 1042 { print $1 }' "$1"; fi
}

P=$(free_port)
fakellm_spawn main -- -m "$MODEL" --host 127.0.0.1 --port "$P" -c 4096
U=http://127.0.0.1:$P
PV=$(free_port)
fakellm_spawn v -- serve Org/M --host 127.0.0.1 --port "$PV"
UV=http://127.0.0.1:$PV
wait_healthy "$P" || t_fail "never healthy"
wait_healthy "$PV" || t_fail "vLLM fake never healthy"

t_begin "chat: the canary's three questions get their answers and stop there"
chat "$U" "$Q_ADD"
status_is 200
t_jq out '.choices[0].message.content' 42
t_jq out '.choices[0].finish_reason' stop
t_jq out .usage.completion_tokens 1
t_jq out .usage.prompt_tokens 10
t_jq out .timings.predicted_n 1
chat "$U" "$Q_ECHO"
t_jq out '.choices[0].message.content' gpumod-canary-7f3a
t_jq out .usage.completion_tokens 1
chat "$U" "$Q_CAP"
t_jq out '.choices[0].message.content' Paris
t_jq out '.choices[0].finish_reason' stop
chat "$UV" "$Q_ADD" '{"model":"Org/M"}'
t_jq out '.choices[0].message.content' 42
t_jq out '.choices[0].finish_reason' stop
t_end

t_begin "the solver: signs, operators, case, the rest of the line, a table of capitals"
for qa in "what is -7 * 6?|-42" "WHAT IS 3 x -4? Just the number.|-12" "What is 10 - 25?|-15" \
          "What is 6X7?|42" "Please: what is 2+2?|4" "What is the capital of japan?|Tokyo" \
          "What is the capital of Canada? One word.|Ottawa" \
          "Repeat this exactly, with nothing else: a  b, c!|a  b, c!" \
          "Repeat this exactly, with nothing else: first line
second line|first line"; do
    chat "$U" "${qa%%|*}"
    t_jq out '.choices[0].message.content' "${qa#*|}"
    t_jq out '.choices[0].finish_reason' stop
done
# multi-token echo: usage counts the real tokens
chat "$U" "Repeat this exactly, with nothing else: one two  three"
t_jq out .usage.completion_tokens 3
# only the last user message counts; unknown questions get the sentence
http POST "$U/v1/chat/completions" "$(jq -nc --arg q "$Q_ADD" '{messages:[{role:"user",content:$q},
    {role:"assistant",content:"42"},{role:"user",content:"thanks"}]}')"
t_jq out '.choices[0].message.content | startswith("Once upon a time")' true
t_jq out .usage.completion_tokens 16
for q in "What is the capital of Atlantis?" "What is 17 + 25" "What is 99999999999999999999 + 1?" \
         "What is 9223372036854775807 + 1?" "what is love?"; do
    chat "$U" "$q"
    t_jq out .usage.completion_tokens 16
done
# multi-part content: the text parts
http POST "$U/v1/chat/completions" '{"messages":[{"role":"user","content":[{"type":"text","text":"What is 1 + 1?"}]}]}'
t_jq out '.choices[0].message.content' 2
t_end

t_begin "streamed chat: the answer in the deltas, stop, usage with the real count"
sse "$U" /v1/chat/completions "$(jq -nc --arg q "$Q_ECHO" '{messages:[{role:"user",content:$q}],stream:true,stream_options:{include_usage:true}}')"
t_eq "$(streamed_content)" gpumod-canary-7f3a "streamed text"
t_eq "$(jq -sr '[.[].choices[0].finish_reason // empty] | join(",")' "$T/chunks")" stop "finish"
t_eq "$(jq -sr '.[-1].usage.completion_tokens' "$T/chunks")" 1 "usage"
t_eq "$(tail -n 2 "$T/sse" | head -n 1)" "data: [DONE]" "last event"
sse "$UV" /v1/chat/completions "$(jq -nc --arg q "$Q_CAP" '{messages:[{role:"user",content:$q}],stream:true}')"
t_eq "$(streamed_content)" Paris "vLLM streamed text"
t_end

t_begin "/v1/completions and llama's /completion answer the prompt, streamed or not"
for u in "$U" "$UV"; do
    http POST "$u/v1/completions" "$(jq -nc --arg q "$Q_ADD" '{prompt:$q}')"
    t_jq out '.choices[0].text' 42
    t_jq out '.choices[0].finish_reason' stop
    t_jq out .usage.completion_tokens 1
    sse "$u" /v1/completions "$(jq -nc --arg q "$Q_CAP" '{prompt:$q,stream:true}')"
    t_eq "$(jq -sr '[.[].choices[0].text] | join("")' "$T/chunks")" Paris "streamed completion on $u"
done
http POST "$U/completion" "$(jq -nc --arg q "$Q_ECHO" '{prompt:$q}')"
t_jq out .content gpumod-canary-7f3a
t_jq out .stop_type eos
t_jq out .tokens_predicted 1
sse "$U" /completion "$(jq -nc --arg q "$Q_ADD" '{prompt:$q,stream:true}')"
t_eq "$(jq -sr '[.[].content] | join("")' "$T/chunks")" 42 "native stream"
t_eq "$(jq -sr '.[-1].stop' "$T/chunks")" true "native stream stops"
t_lacks "$T/sse" "[DONE]"
t_end

t_begin "limits: max_tokens cuts an answer (length), ignore_eos goes on with the sentence"
chat "$U" "Repeat this exactly, with nothing else: one two three" '{"max_tokens":2}'
t_jq out '.choices[0].message.content' "one two"
t_jq out '.choices[0].finish_reason' length
chat "$U" "$Q_CAP" '{"max_tokens":1}'
t_jq out '.choices[0].finish_reason' length "an answer as long as the limit: no room for the end"
chat "$U" "$Q_ADD" '{"max_tokens":5,"ignore_eos":true}'
t_jq out '.choices[0].message.content' "42 Once upon a time"
t_jq out .usage.completion_tokens 5
t_jq out '.choices[0].finish_reason' length
t_end

t_begin "unknown prompts keep the sentence and its counts (what bench measures)"
chat "$U" "count these words please"
t_jq out '.choices[0].message.content' "Once upon a time a small model loaded in the fake server and answered every request."
t_jq out .usage.completion_tokens 16
chat "$U" "x" '{"max_tokens":40,"ignore_eos":true}'
t_jq out .usage.completion_tokens 40
t_end

t_begin "FAKELLM_THINK=content: <think>...</think> before the answer; enable_thinking false turns it off"
PT=$(free_port)
fakellm_spawn think FAKELLM_THINK=content -- -m "$MODEL" --port "$PT"
wait_healthy "$PT" || t_fail "never healthy"
UT=http://127.0.0.1:$PT
chat "$UT" "$Q_CAP"
t_jq out '.choices[0].message.content | startswith("<think>\n")' true
t_jq out '.choices[0].message.content | split("</think>\n") | .[-1]' Paris
t_jq out '.choices[0].message | has("reasoning_content")' false
t_jq out '.choices[0].finish_reason' stop
jq -r '.choices[0].message.content' "$T/out" >"$T/text"
t_jq out .usage.completion_tokens "$(wc -w <"$T/text")"
chat "$UT" "$Q_CAP" '{"chat_template_kwargs":{"enable_thinking":false}}'
t_jq out '.choices[0].message.content' Paris
t_jq out .usage.completion_tokens 1
sse "$UT" /v1/chat/completions "$(jq -nc --arg q "$Q_ADD" '{messages:[{role:"user",content:$q}],stream:true}')"
t_eq "$(streamed_content | sed -n '$p')" 42 "streamed: the line after </think>"
t_eq "$(streamed_content | head -n 1)" "<think>" "streamed: the opening tag"
# unknown prompts think too, then say the sentence; completions never think
chat "$UT" "hello"
t_jq out '.choices[0].message.content | endswith("</think>\nOnce upon a time a small model loaded in the fake server and answered every request.")' true
http POST "$UT/v1/completions" "$(jq -nc --arg q "$Q_ADD" '{prompt:$q}')"
t_jq out '.choices[0].text' 42
t_end

t_begin "FAKELLM_THINK=field: reasoning_content in the message and the deltas (llama and vLLM)"
PF=$(free_port); PFV=$(free_port)
fakellm_spawn field FAKELLM_THINK=field -- -m "$MODEL" --port "$PF"
fakellm_spawn fieldv FAKELLM_THINK=field -- serve Org/M --host 127.0.0.1 --port "$PFV"
wait_healthy "$PF" || t_fail "never healthy"
wait_healthy "$PFV" || t_fail "vLLM fake never healthy"
for u in "http://127.0.0.1:$PF" "http://127.0.0.1:$PFV"; do
    chat "$u" "$Q_ECHO"
    t_jq out '.choices[0].message.content' gpumod-canary-7f3a
    t_jq out '.choices[0].message.reasoning_content | length > 20' true
    t_jq out '.choices[0].message.reasoning_content | contains("<think>")' false
    r=$(jq -r '.choices[0].message.reasoning_content' "$T/out")
    t_jq out .usage.completion_tokens $(( $(echo "$r" | wc -w) + 1 ))
    sse "$u" /v1/chat/completions "$(jq -nc --arg q "$Q_ECHO" '{messages:[{role:"user",content:$q}],stream:true}')"
    t_eq "$(streamed_content)" gpumod-canary-7f3a "streamed content on $u"
    t_eq "$(jq -sr '[.[].choices[0].delta.reasoning_content // empty] | join("")' "$T/chunks")" "$r" "streamed reasoning on $u"
    chat "$u" "$Q_ECHO" '{"chat_template_kwargs":{"enable_thinking":false}}'
    t_jq out '.choices[0].message | has("reasoning_content")' false
    t_jq out .usage.completion_tokens 1
done
t_end

t_begin "FAKELLM_SCRIPT: first match wins over the solver; error and empty lines"
cat >"$T/script.jsonl" <<'EOF'
# comments and blank lines are skipped

{"match": "17 + 25", "answer": "The answer is 43."}
{"match": "boom", "error": 500}
{"match": "busy", "error": 503}
{"match": "silence", "empty": true}
{"match": "capital", "answer": "Lyon"}
{"match": "capital of France", "answer": "never reached"}
EOF
PS=$(free_port); PSV=$(free_port)
fakellm_spawn script FAKELLM_SCRIPT="$T/script.jsonl" -- -m "$MODEL" --port "$PS"
fakellm_spawn scriptv FAKELLM_SCRIPT="$T/script.jsonl" -- serve Org/M --host 127.0.0.1 --port "$PSV"
wait_healthy "$PS" || t_fail "never healthy"
wait_healthy "$PSV" || t_fail "vLLM fake never healthy"
US=http://127.0.0.1:$PS
t_has "$T/script.log" "6 scripted answers from FAKELLM_SCRIPT"
chat "$US" "$Q_ADD"
t_jq out '.choices[0].message.content' "The answer is 43."
t_jq out .usage.completion_tokens 4
t_jq out '.choices[0].finish_reason' stop
chat "$US" "$Q_CAP"
t_jq out '.choices[0].message.content' Lyon
chat "$US" "$Q_ECHO"
t_jq out '.choices[0].message.content' gpumod-canary-7f3a "no line matches: the solver"
chat "$US" "go boom now"
status_is 500
t_jq out .error.type server_error
t_jq out .error.message "fakellm: scripted error ($T/script.jsonl:4)"
chat "$US" "busy?"
status_is 503
chat "http://127.0.0.1:$PSV" "go boom" '{"model":"Org/M"}'
status_is 500 "vLLM scripted error"
t_jq out .error.type InternalServerError
chat "$US" "silence please"
status_is 200
t_jq out '.choices[0].message.content' ""
t_jq out .usage.completion_tokens 0
t_jq out '.choices[0].finish_reason' stop
sse "$US" /v1/chat/completions '{"messages":[{"role":"user","content":"silence"}],"stream":true}'
t_eq "$(streamed_content)" "" "streamed empty answer"
t_eq "$(jq -sr '[.[].choices[0].finish_reason // empty] | join(",")' "$T/chunks")" stop "streamed empty finish"
http POST "$US/v1/completions" '{"prompt":"what is the capital?"}'
t_jq out '.choices[0].text' Lyon "completion prompts are matched too"
chat "$US" "the capital" '{"max_tokens":1,"ignore_eos":true}'
t_jq out '.choices[0].message.content' Lyon
t_end

t_begin "FAKELLM_SCRIPT mistakes: exit 2 naming file:line"
printf '{"match":"a","answer":"b"}\n{"match":"a","answer":\n' >"$T/bad1.jsonl"
printf '{"match":"a","answer":"b","eror":500}\n' >"$T/bad2.jsonl"
printf '\n\n{"match":"a","answer":"b","error":500}\n' >"$T/bad3.jsonl"
printf '{"answer":"b"}\n' >"$T/bad4.jsonl"
printf '{"match":"a","error":200}\n' >"$T/bad5.jsonl"
printf '["match","a"]\n' >"$T/bad6.jsonl"
for c in "bad1.jsonl:2: not a JSON object" "bad2.jsonl:1: unknown key 'eror'" \
         "bad3.jsonl:3: give exactly one of" "bad4.jsonl:1: \"match\" must be a string" \
         "bad5.jsonl:1: \"error\" must be an HTTP status" "bad6.jsonl:1: not a JSON object"; do
    f=${c%%:*}
    t_run 2 env FAKELLM_SCRIPT="$T/$f" timeout $((10 * S)) "$FAKELLM_BIN" -m "$MODEL" --port "$(free_port)"
    t_has err "fakellm: $T/$c"
done
t_run 2 env FAKELLM_SCRIPT="$T/none.jsonl" timeout $((10 * S)) "$FAKELLM_BIN" -m "$MODEL" --port "$(free_port)"
t_has err "$T/none.jsonl: No such file or directory"
t_run 2 env FAKELLM_ERROR_RATE=1.5 timeout $((10 * S)) "$FAKELLM_BIN" -m "$MODEL" --port "$(free_port)"
t_has err "FAKELLM_ERROR_RATE='1.5'"
t_run 2 env FAKELLM_THINK=yes timeout $((10 * S)) "$FAKELLM_BIN" serve M --port "$(free_port)"
t_has err "FAKELLM_THINK='yes'"
t_run 2 env FAKELLM_SEED=x timeout $((10 * S)) "$FAKELLM_BIN" -m "$MODEL" --port "$(free_port)"
t_has err "FAKELLM_SEED='x'"
t_end

t_begin "FAKELLM_ERROR_RATE=0.3: a deterministic set of wrong answers, the same on a rerun, other seeds differ"
declare -A EP
for n in a b c d; do EP[$n]=$(free_port); done
fakellm_spawn era FAKELLM_ERROR_RATE=0.3 FAKELLM_SEED=7 FAKELLM_TPS=0 -- -m "$MODEL" --port "${EP[a]}" -np 8
fakellm_spawn erb FAKELLM_ERROR_RATE=0.3 FAKELLM_SEED=7 FAKELLM_TPS=0 -- -m "$MODEL" --port "${EP[b]}" -np 3
fakellm_spawn erc FAKELLM_ERROR_RATE=0.3 FAKELLM_SEED=8 FAKELLM_TPS=0 -- -m "$MODEL" --port "${EP[c]}" -np 8
fakellm_spawn erd FAKELLM_ERROR_RATE=0.3 FAKELLM_TPS=0 -- -m "$MODEL" --port "${EP[d]}" -np 8
for n in a b c d; do wait_healthy "${EP[$n]}" || t_fail "$n never healthy"; done
for n in a b c d; do
    python3 "$T/ask.py" "http://127.0.0.1:${EP[$n]}" sum 200 >"$T/ans.$n" || t_fail "ask.py on $n"
    wrong "$T/ans.$n" sum | sort >"$T/wrong.$n"
done
python3 "$T/ask.py" "http://127.0.0.1:${EP[a]}" sum 200 >"$T/ans.a2" || t_fail "ask.py again"
na=$(wc -l <"$T/wrong.a")
t_diag "seed 7: $na of 200 wrong; seed 8: $(wc -l <"$T/wrong.c"); seed 0: $(wc -l <"$T/wrong.d")"
[ "$na" -ge 40 ] && [ "$na" -le 80 ] || t_fail "seed 7: $na wrong of 200 at P=0.3"
for n in c d; do
    k=$(wc -l <"$T/wrong.$n")
    [ "$k" -ge 40 ] && [ "$k" -le 80 ] || t_fail "$n: $k wrong of 200 at P=0.3"
done
cmp -s "$T/ans.a" "$T/ans.a2" || t_fail "the same server answered differently the second time"
cmp -s "$T/ans.a" "$T/ans.b" || t_fail "another server with the same seed (3 slots) answered differently"
cmp -s "$T/wrong.a" "$T/wrong.c" && t_fail "seeds 7 and 8 made the same items wrong"
cmp -s "$T/wrong.a" "$T/wrong.d" && t_fail "seeds 7 and 0 made the same items wrong"
both=$(comm -12 "$T/wrong.a" "$T/wrong.c" | wc -l)
t_diag "wrong under both seeds 7 and 8: $both (independent: about 200 * 0.09 = 18)"
[ "$both" -ge 5 ] && [ "$both" -le 35 ] || t_fail "seeds 7 and 8 do not look independent: $both in common"
# a wrong answer never contains the right one
awk -F'\t' '$2 != $1 + 1000 && index($2, $1 + 1000) { print }' "$T/ans.a" "$T/ans.c" >"$T/bad"
t_eq "$(wc -l <"$T/bad")" 0 "wrong answers containing the right one"
t_end

t_begin "the request's own seed takes part: the same prompt, 100 request seeds"
python3 "$T/ask.py" "http://127.0.0.1:${EP[a]}" seed 100 >"$T/sd.a" || t_fail "ask.py seed"
python3 "$T/ask.py" "http://127.0.0.1:${EP[b]}" seed 100 >"$T/sd.b" || t_fail "ask.py seed b"
k=$(wrong "$T/sd.a" seed | wc -l)
t_diag "wrong for $k of 100 request seeds"
[ "$k" -ge 12 ] && [ "$k" -le 50 ] || t_fail "$k of 100 request seeds wrong at P=0.3"
cmp -s "$T/sd.a" "$T/sd.b" || t_fail "the same request seeds gave different answers"
t_end

t_begin "FAKELLM_ERROR_RATE=1: every known answer is wrong (and never contains the right one)"
cat >"$T/s2.jsonl" <<'EOF'
{"match": "LETTER-Q", "answer": "a"}
{"match": "NUMBER-Q", "answer": "99"}
{"match": "EMPTY-Q", "empty": true}
{"match": "OOPS-Q", "error": 502}
EOF
PE=$(free_port)
fakellm_spawn er1 FAKELLM_ERROR_RATE=1 FAKELLM_THINK=content FAKELLM_SCRIPT="$T/s2.jsonl" -- -m "$MODEL" --port "$PE"
wait_healthy "$PE" || t_fail "never healthy"
UE=http://127.0.0.1:$PE
for qa in "$Q_ADD|42" "$Q_ECHO|gpumod-canary-7f3a" "$Q_CAP|Paris" "LETTER-Q|a" "NUMBER-Q|99"; do
    chat "$UE" "${qa%%|*}" '{"chat_template_kwargs":{"enable_thinking":false}}'
    a=$(jq -r '.choices[0].message.content' "$T/out")
    [ -n "$a" ] || t_fail "${qa%%|*}: an empty wrong answer"
    case "${a,,}" in *"${qa#*|}"*) t_fail "${qa%%|*}: the wrong answer '$a' contains '${qa#*|}'" ;; esac
    t_jq out '.choices[0].finish_reason' stop
done
# the thinking still names the right answer: only a check that strips it fails the canary
chat "$UE" "$Q_ADD"
t_jq out '.choices[0].message.content | split("</think>")[0] | contains("42")' true
t_jq out '.choices[0].message.content | split("</think>")[-1] | contains("42")' false
chat "$UE" "EMPTY-Q" '{"chat_template_kwargs":{"enable_thinking":false}}'
t_jq out '.choices[0].message.content' "" "an empty scripted answer stays empty"
chat "$UE" "OOPS-Q"
status_is 502 "a scripted error stays an error"
chat "$UE" "hello" '{"chat_template_kwargs":{"enable_thinking":false}}'
t_jq out '.choices[0].message.content | startswith("Once upon")' true "the sentence is never 'wrong'"
t_end

t_begin "FAKELLM_GARBAGE: no canary answer survives, on any endpoint, over the script"
PG=$(free_port)
fakellm_spawn garbage FAKELLM_GARBAGE=1 FAKELLM_THINK=content FAKELLM_SCRIPT="$T/script.jsonl" -- -m "$MODEL" --port "$PG"
wait_healthy "$PG" || t_fail "never healthy"
UG=http://127.0.0.1:$PG
cat >"$T/garbage.py" <<'EOF'
import json, sys, urllib.request
url, qs = sys.argv[1], sys.argv[2:]
def post(path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)
for i in range(15):
    for q in qs:
        j = post("/v1/chat/completions", {"messages": [{"role": "user", "content": q}], "max_tokens": 64})
        assert j["usage"]["completion_tokens"] == 16, j
        print(j["choices"][0]["message"]["content"])
    print(post("/v1/completions", {"prompt": qs[0], "max_tokens": 64})["choices"][0]["text"])
    print(post("/completion", {"prompt": qs[2]})["content"])
EOF
python3 "$T/garbage.py" "$UG" "$Q_ADD" "$Q_ECHO" "$Q_CAP" "silence" "the capital" >"$T/garbage" ||
    t_fail "garbage.py failed"
t_eq "$(grep -c . "$T/garbage")" 105 "garbage answers"
if grep -qiE '42|paris|gpumod|canary|lyon|[0-9]|think' "$T/garbage"; then
    t_fail "garbage contains an answer, a digit or a thinking tag:"
    grep -iE '42|paris|gpumod|canary|lyon|[0-9]|think' "$T/garbage" | head -3 | sed 's/^/#   /'
fi
t_eq "$(tr -d '!#$%&*+/<=>?@^_|~qxzjQXZJ\n' <"$T/garbage" | wc -c)" 0 "characters outside punctuation and qxzj"
t_end

t_begin "embeddings: the model's length, finite, deterministic, different inputs differ"
PM=$(free_port); PMV=$(free_port)
fakellm_spawn emb -- -m "$MODEL" --port "$PM" --embeddings
fakellm_spawn embv -- serve Org/E --host 127.0.0.1 --port "$PMV" --runner pooling
wait_healthy "$PM" || t_fail "never healthy"
wait_healthy "$PMV" || t_fail "vLLM fake never healthy"
http GET "http://127.0.0.1:$PM/v1/models"
dim=$(jq -r '.data[0].meta.n_embd' "$T/out")
t_eq "$dim" 64 "n_embd"
for u in "http://127.0.0.1:$PM" "http://127.0.0.1:$PMV"; do
    http POST "$u/v1/embeddings" '{"input":["The quick brown fox","A different sentence","The quick brown fox"]}'
    status_is 200
    t_jq out '[.data[].embedding | length] | unique | join(",")' "$dim"
    t_jq out '[.data[].embedding[] | isinfinite or isnan] | any' false
    t_jq out '.data[0].embedding == .data[2].embedding' true
    t_jq out '.data[0].embedding != .data[1].embedding' true
    t_jq out '[.data[0].embedding[] | . * .] | add | . > 0.99 and . < 1.01' true
done
t_end

t_begin "embeddings under FAKELLM_GARBAGE: the right length, all zero, every input the same"
PMG=$(free_port)
fakellm_spawn embg FAKELLM_GARBAGE=1 -- -m "$MODEL" --port "$PMG" --embeddings
wait_healthy "$PMG" || t_fail "never healthy"
http POST "http://127.0.0.1:$PMG/v1/embeddings" '{"input":["The quick brown fox","A different sentence"]}'
status_is 200
t_jq out '[.data[].embedding | length] | unique | join(",")' 64
t_jq out '.data[0].embedding == .data[1].embedding' true
t_jq out '[.data[].embedding[] | . == 0] | all' true
t_end

t_begin "every fakellm exits 0 on SIGTERM, no sanitizer report"
stop_all_clean
t_end

t_done
