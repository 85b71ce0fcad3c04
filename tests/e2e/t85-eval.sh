#!/usr/bin/env bash
# t85-eval: `gpumod eval` against fakellm's known answers (tests/fakes/
# README.md "Known answers").  A generated suite of 100 scripted items
# with a seeded error rate of 0.3: the Wilson interval holds the scripted
# accuracy 0.7; compare finds the drop from 0.1 to 0.3 ("worse", exit 1)
# and calls two runs at one rate with independent errors not
# distinguishable; golden mode records, passes an identical rerun and
# flags one changed item (exit 1); a scripted HTTP 500 is an error after
# one retry; a suite mistake exits 2 with file:line; a run through the
# daemon's router is stored and read back by eval list / show.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"
. "$(dirname "$0")/router-lib.sh"

# 100 items "Qnnn: say the code word" answered "wnnnx" by the script, and
# one that the script answers with an HTTP 500
python3 - "$T" <<'EOF'
import sys
t = sys.argv[1]
with open(f"{t}/suite.yaml", "w") as s, open(f"{t}/script.jsonl", "w") as sc:
    s.write("name: codes\ndefaults: {scorer: exact, max_tokens: 16}\nitems:\n")
    for i in range(100):
        cat = "even" if i % 2 == 0 else "odd"
        s.write(f"  - {{id: q{i:03d}, category: {cat}, prompt: 'Q{i:03d}: say the code word', expected: w{i:03d}x}}\n")
        sc.write(f'{{"match": "Q{i:03d}:", "answer": "w{i:03d}x"}}\n')
    sc.write('{"match": "boom", "error": 500}\n')
with open(f"{t}/boom.yaml", "w") as s:
    s.write("items:\n  - {id: ok, prompt: 'Q001: say the code word', expected: w001x}\n"
            "  - {id: boom, prompt: 'boom', expected: x}\n")
# the golden script: the same answers but one
with open(f"{t}/script.jsonl") as a, open(f"{t}/script2.jsonl", "w") as b:
    b.write('{"match": "Q007:", "answer": "w007y"}\n')
    b.write(a.read())
EOF

# fk NAME PORT RATE SEED [SCRIPT]: a fakellm with the script and an error rate
fk() {
    fakellm_spawn "$1" FAKELLM_SCRIPT="${5:-$T/script.jsonl}" FAKELLM_ERROR_RATE="$3" FAKELLM_SEED="$4" \
        -- -m "$MODEL" --host 127.0.0.1 --port "$2" -c 8192 -np 4
    wait_healthy "$2" || t_fail "fakellm $1 never came up on $2"
}
P1=$(free_port) P2=$(free_port) P3=$(free_port) P4=$(free_port) P5=$(free_port)
fk f30 "$P1" 0.3 1
fk f10 "$P2" 0.1 1
fk f30b "$P3" 0.3 2
fk fgold "$P4" 0 0 "$T/script2.jsonl"
fk fright "$P5" 0 0
E=(eval --suite "$T/suite.yaml" --no-store -q --concurrency 16)

t_begin "scripted answers at an error rate of 0.3: the Wilson interval holds 0.7"
t_run 0 gpumod "${E[@]}" "http://127.0.0.1:$P1" --json "$T/a30.json" --csv "$T/a30.csv" --svg "$T/a30.svg"
t_jq "$T/a30.json" .schema gpumod.eval/1
t_jq "$T/a30.json" '.summary.records' 100
t_jq "$T/a30.json" '.summary.error' 0
t_jq "$T/a30.json" '.summary.accuracy | (.lo <= 0.7 and 0.7 <= .hi and .lo <= .est and .est <= .hi)' true
t_jq "$T/a30.json" '.summary.accuracy.est == (.summary.pass / 100)' true
t_jq "$T/a30.json" '[.categories[].name] | join(",")' "even,odd"
t_jq "$T/a30.json" '[.items[] | select(.state == "fail")] | length > 10' true
t_jq "$T/a30.json" '.items[0] | [.id, .rule, .expected, .seed, .rep, .attempts] | map(tostring) | join(" ")' \
    "q000 whole_text w000x 1 0 1"
t_jq "$T/a30.json" '.target.identity.n_ctx' 2048
t_jq "$T/a30.json" '.client.max_in_flight' 16
t_eq "$(wc -l <"$T/a30.csv")" 101 "CSV rows (header + 100)"
t_has "$T/a30.svg" "<svg"
t_has out "codes: "
t_has out "accuracy "
# the wrong answers are fakellm's: "w...x" never holds the right one
t_jq "$T/a30.json" '[.items[] | select(.state == "fail") | .answer == "wrong-answer"] | all' true
t_end

t_begin "-k 3: pass@1 over the repetitions, seeds 5..7, pass@3"
t_run 0 gpumod "${E[@]}" "http://127.0.0.1:$P1" -k 3 --seed 5 --json "$T/k3.json"
t_jq "$T/k3.json" '.summary.records' 300
t_jq "$T/k3.json" '.summary.k' 3
t_jq "$T/k3.json" '[.items[].seed] | unique | map(tostring) | join(",")' "5,6,7"
t_jq "$T/k3.json" '.summary.pass_at_k > .summary.accuracy.est' true
t_has out "pass@1 "
t_end

t_begin "compare: 0.1 against 0.3 is worse (exit 1); two seeds at 0.3 are not distinguishable"
t_run 0 gpumod "${E[@]}" "http://127.0.0.1:$P2" --json "$T/a10.json"
t_run 1 gpumod eval compare "$T/a10.json" "$T/a30.json"
t_has out "B is worse than A"
t_has out "paired 100 records"
t_run 0 gpumod eval compare "$T/a30.json" "$T/a10.json" --json
t_jq out .verdict better
t_run 0 gpumod "${E[@]}" "http://127.0.0.1:$P3" --json "$T/b30.json"
t_run 0 gpumod eval compare "$T/a30.json" "$T/b30.json"
t_has out "B is not distinguishable from A"
t_run 0 gpumod eval compare "$T/a30.json" "$T/b30.json" --json
t_jq out '.b > 0 and .c > 0' true
t_run 2 gpumod eval compare "$T/a30.json" "$T/nope.json"
t_has err "gpumod: eval: cannot read '$T/nope.json'"
t_run 0 gpumod eval report "$T/a30.json" "$T/b30.json" --svg "$T/ab.svg"
t_has "$T/ab.svg" "B: "
t_end

t_begin "golden: recorded, an identical rerun passes, a changed item is flagged (exit 1)"
G=(eval --suite "$T/suite.yaml" --no-store -q --golden "$T/golden.json")
t_run 0 gpumod "${G[@]}" "http://127.0.0.1:$P5"
t_has err "golden: recorded 100 items"
t_jq "$T/golden.json" '.identity.build_info' b10587-fakellm
t_jq "$T/golden.json" '.identity.model_file.header_sha256 | length' 64
t_jq "$T/golden.json" '.identity.model_file.size > .identity.model_file.header_bytes' true
t_run 0 gpumod "${G[@]}" "http://127.0.0.1:$P5"
t_has out "golden: 0 of 100 items no longer byte-identical; the server's identity is the same"
t_run 1 gpumod "${G[@]}" "http://127.0.0.1:$P4"
t_has out "item 'q007': content differs at byte 4: was 'w007x', now 'w007y'"
t_has out "golden: 1 of 100 items no longer byte-identical"
t_lacks out "item 'q008'"
t_run 2 gpumod "${G[@]}" "http://127.0.0.1:$P5" -k 2
t_has err "--golden runs at concurrency 1"
t_end

t_begin "a scripted HTTP 500 is an error after one retry, the other item passes"
t_run 0 gpumod eval "http://127.0.0.1:$P4" --suite "$T/boom.yaml" --no-store -q --json "$T/boom.json"
t_jq "$T/boom.json" '.items[] | select(.id == "boom") | [.state, .attempts] | map(tostring) | join(" ")' "error 2"
t_jq "$T/boom.json" '.items[] | select(.id == "boom") | .error | test("HTTP 500 .*scripted error")' true
t_jq "$T/boom.json" '.items[] | select(.id == "ok") | .state' pass
t_jq "$T/boom.json" '.summary | [.pass, .error] | map(tostring) | join(" ")' "1 1"
t_has out "ERROR boom"
t_end

t_begin "judge items: the judge's score decides; a reply without one is an error after one retry"
printf '%s\n' '{"match": "RUBRIC-A", "answer": "Fine.\nScore: 5"}' '{"match": "RUBRIC-B", "answer": "Score: 2"}' \
    '{"match": "RUBRIC-C", "answer": "no idea"}' >"$T/judge.jsonl"
PJ=$(free_port)
fk judge "$PJ" 0 0 "$T/judge.jsonl"
cat >"$T/judged.yaml" <<'EOF'
items:
  - {id: j1, prompt: 'Q001: say the code word', scorer: judge, rubric: RUBRIC-A}
  - {id: j2, prompt: 'Q002: say the code word', scorer: judge, rubric: RUBRIC-B, expected: w002x}
  - {id: j3, prompt: 'Q003: say the code word', scorer: judge, rubric: RUBRIC-C}
EOF
t_run 0 gpumod eval "http://127.0.0.1:$P5" --suite "$T/judged.yaml" --judge "http://127.0.0.1:$PJ" --no-store -q \
    --json "$T/j.json"
t_jq "$T/j.json" '[.items[] | "\(.id)=\(.state)/\(.judge)"] | join(" ")' "j1=pass/5 j2=fail/2 j3=error/null"
t_jq "$T/j.json" '.items[2].error | startswith("judge: ")' true
t_jq "$T/j.json" '.summary.judge | [.n, .mean, .share4, .share5] | map(tostring) | join(" ")' "2 3.5 0.5 0.5"
t_jq "$T/j.json" '.judge.spec' "http://127.0.0.1:$PJ"
t_has out "judge: mean 3.50"
t_run 2 gpumod eval "http://127.0.0.1:$P5" --suite "$T/judged.yaml" --no-store -q
t_has err "gpumod: eval: the suite has 3 judge items: give --judge TARGET"
t_end

t_begin "warnings: answers cut at max_tokens, and a budget past the server's context"
printf 'items:\n  - {id: short, prompt: "Q001: say the code word", expected: w001x, max_tokens: 1}\n' >"$T/short.yaml"
t_run 0 gpumod eval "http://127.0.0.1:$P5" --suite "$T/short.yaml" --no-store -q --json "$T/w.json"
t_jq "$T/w.json" '.summary.length_hits' 1
t_has out "warning: 1 answers stopped at max_tokens"
t_run 0 gpumod eval "http://127.0.0.1:$P5" --suite "$T/boom.yaml" --no-store -q --max-tokens 4000 --json "$T/c.json"
t_jq "$T/c.json" '.summary.context | [.server, .needed > 4000] | map(tostring) | join(" ")' "2048 true"
t_jq "$T/c.json" '.summary.context_hits' 1
t_has out "the suite needs a context of"
t_has out "the server has 2048"
t_end

t_begin "a suite with mistakes exits 2 with file:line, nothing sent"
printf 'items:\n  - id: a\n    prompt: hi\n    expectd: x\n  - id: a\n    prompt: hi\n' >"$T/bad.yaml"
t_run 2 gpumod eval "http://127.0.0.1:$P1" --suite "$T/bad.yaml" --no-store
t_has err "bad.yaml:4:5: error: item 'a': unknown key 'expectd' (did you mean 'expected'?)"
t_has err "gpumod: eval: the suite '$T/bad.yaml' has errors: nothing was sent"
t_run 2 gpumod eval "http://127.0.0.1:$P1" --suite "$T/suite.yaml" --concurrency 0
t_has err "gpumod: eval: --concurrency '0': expected an integer from 1 to 4096"
t_run 2 gpumod eval "http://127.0.0.1:$P1"
t_has err "--suite PATH is required"
t_end

t_begin "through the daemon's router: stored, listed and shown"
rsettings ""
rpreset svc "$(free_port)" 4096 "env: {FAKELLM_SCRIPT: \"$T/script.jsonl\"}"
daemon_start
t_wait 10 curl -sf -o /dev/null "$RURL/health" || t_fail "the router never answered on $RURL"
t_run 0 gpumod eval svc --suite "$T/boom.yaml" -q --max-tokens 64
t_has err "stored as result 1"
t_has out "ERROR boom"
t_run 0 gpumod eval list
t_has out "boom"
t_match out "^1 .* svc .* 1/2 "
t_run 0 gpumod eval list --json
t_jq out '.results[0].kind' eval
t_jq out '.results[0].service' svc
t_jq out '.results[0].summary.pass' 1
t_run 0 gpumod eval show 1 --json
t_jq out '.target.via' router
t_jq out '.detail.records_cut' 0
t_run 0 gpumod eval show 1
t_has out "1/2 passed"
t_run 2 gpumod eval show 99
t_has err "no result 99"
t_end

stop_all_clean
t_done
