#!/usr/bin/env bash
# atlas batch on a tiny random checkpoint with a byte-level BPE tokenizer:
# - determinism: each greedy request's text equals `atlas run` with the same
#   prompt and options (the one-sequence path), whatever shares its batches
#   (--parallel 1 and 8 give the same lines);
# - a bad line gets its own 400 line naming the field; the others still run;
# - the output is written whole or not at all; nothing leaks.
#   batch_cli_test.sh ATLAS MAKE_CHECKPOINT TOKENIZER_JSON
set -uo pipefail
atlas="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
make_checkpoint="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
tokenizer="$3"
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/atlas_batch.XXXXXX")"
fails=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}
# A field of output line N (1-based), by a Python expression on `o`.
field() {
  python3 -c 'import json,sys; o=[json.loads(l) for l in open(sys.argv[1])][int(sys.argv[2])-1]; print(eval(sys.argv[3]))' "$@"
}

m="$tmp/m"
"$make_checkpoint" --out "$m" --seed 3 --preset tiny --vocab 665 --dtype f32 >/dev/null
cp "$tokenizer" "$m/tokenizer.json"
cat >"$m/tokenizer_config.json" <<'JSON'
{"bos_token": "<|bos|>", "eos_token": "<|eos|>",
 "chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"}
JSON

prompts=("Hello wörld" "The quick brown fox" "中文 😀 and more" "a" "Once upon a time, far away")
steps=(12 5 20 1 9)
python3 - "$tmp/in.jsonl" "${prompts[@]}" -- "${steps[@]}" <<'PY'
import json, sys
out = sys.argv[1]
args = sys.argv[2:]
cut = args.index("--")
prompts, steps = args[:cut], [int(s) for s in args[cut + 1:]]
lines = []
for i, (p, n) in enumerate(zip(prompts, steps)):
    lines.append({"custom_id": f"c{i}", "method": "POST", "url": "/v1/completions",
                  "body": {"model": "m", "prompt": p, "max_tokens": n, "temperature": 0}})
lines.append({"custom_id": "chat", "method": "POST", "url": "/v1/chat/completions",
              "body": {"messages": [{"role": "system", "content": "be brief"},
                                    {"role": "user", "content": "hi there"}],
                       "max_completion_tokens": 10, "temperature": 0}})
lines.append({"custom_id": "bad-n", "method": "POST", "url": "/v1/completions",
              "body": {"prompt": "x", "n": 0}})
lines.append({"custom_id": "bad-url", "method": "POST", "url": "/v1/embeddings", "body": {}})
lines.append({"custom_id": "too-long", "method": "POST", "url": "/v1/completions",
              "body": {"prompt": "x", "max_tokens": 100000}})
with open(out, "w") as f:
    for l in lines:
        f.write(json.dumps(l, ensure_ascii=False) + "\n")
    f.write("{not json\n\n")
PY
nlines=10  # 5 completions, 1 chat, 3 bad bodies, 1 bad JSON (the blank line is skipped)

"$atlas" batch --model "$m" --input "$tmp/in.jsonl" --output "$tmp/out1.jsonl" \
  --backend host --parallel 1 2>"$tmp/err1"; rc=$?
check "batch --parallel 1 exits 0" [ "$rc" -eq 0 ]
"$atlas" batch --model "$m" --input "$tmp/in.jsonl" --output "$tmp/out8.jsonl" \
  --backend host --parallel 8 2>"$tmp/err8"; rc=$?
check "batch --parallel 8 exits 0" [ "$rc" -eq 0 ]
check "one output line a request" [ "$(wc -l <"$tmp/out8.jsonl")" -eq "$nlines" ]
check "the sweep found nothing leaked" grep -q "leaked: 0 bytes" "$tmp/err8"
check "a summary line" grep -q "10 requests: 6 answered, 4 refused" "$tmp/err8"

# The texts, by custom_id, whatever --parallel.
texts() {
  python3 -c '
import json, sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    b = o["response"]["body"]
    if o["response"]["status_code"] == 200:
        c = b["choices"][0]
        print(o["custom_id"], json.dumps(c.get("text", c.get("message", {}).get("content")), ensure_ascii=False), c["finish_reason"], b["usage"]["completion_tokens"])
    else:
        print(o["custom_id"], o["response"]["status_code"], b["error"]["param"])' "$1"
}
texts "$tmp/out1.jsonl" >"$tmp/t1"
texts "$tmp/out8.jsonl" >"$tmp/t8"
check "--parallel 1 and 8 answer alike (batch invariance)" cmp -s "$tmp/t1" "$tmp/t8"
[ "$fails" -eq 0 ] || diff "$tmp/t1" "$tmp/t8"

# Each greedy completion equals atlas run's text for the same prompt.
for i in "${!prompts[@]}"; do
  "$atlas" run --model "$m" --backend host --prompt "${prompts[$i]}" \
    --steps "${steps[$i]}" >"$tmp/run$i" 2>/dev/null
  field "$tmp/out8.jsonl" $((i + 1)) 'o["response"]["body"]["choices"][0]["text"]' >"$tmp/batch$i"
  check "c$i: batch's text is atlas run's" cmp -s "$tmp/batch$i" "$tmp/run$i"
  [ "$(field "$tmp/out8.jsonl" $((i + 1)) 'o["custom_id"]')" = "c$i" ] ||
    { echo "FAIL line $((i + 1)) is not c$i"; fails=$((fails + 1)); }
done
"$atlas" run --model "$m" --backend host --chat --system "be brief" \
  --prompt "hi there" --steps 10 >"$tmp/run_chat" 2>/dev/null
field "$tmp/out8.jsonl" 6 'o["response"]["body"]["choices"][0]["message"]["content"]' >"$tmp/batch_chat"
check "chat: batch's message is atlas run --chat's" cmp -s "$tmp/batch_chat" "$tmp/run_chat"
check "usage counts the tokens" [ "$(field "$tmp/out8.jsonl" 1 'o["response"]["body"]["usage"]["total_tokens"] - o["response"]["body"]["usage"]["prompt_tokens"]')" = 12 ]

# Bad lines: their own 400, naming the field.
check "n: 0 is a 400 naming body.n" grep -q '^bad-n 400 body.n$' "$tmp/t8"
check "an unknown url is a 400 naming url" grep -q '^bad-url 400 url$' "$tmp/t8"
check "max_tokens past the context is a 400 naming it" grep -q '^too-long 400 body.max_tokens$' "$tmp/t8"
check "a line that is not JSON is a 400 with no custom_id" \
  [ "$(field "$tmp/out8.jsonl" 10 'o["custom_id"], o["response"]["status_code"], o["error"] is not None')" = "(None, 400, True)" ]

# Whole or not at all.
"$atlas" batch --model "$tmp/missing" --input "$tmp/in.jsonl" --output "$tmp/none.jsonl" \
  --backend host 2>"$tmp/err"; rc=$?
check "a missing model exits 1" [ "$rc" -eq 1 ]
check "... and writes no output" [ ! -e "$tmp/none.jsonl" ]
check "... naming what is missing" grep -q "missing" "$tmp/err"
"$atlas" batch --model "$m" --input "$tmp/in.jsonl" --output "$tmp/no/dir/out.jsonl" \
  --backend host 2>"$tmp/err"; rc=$?
check "an output folder that does not exist exits 1" [ "$rc" -eq 1 ]
"$atlas" batch --model "$m" --input "$tmp/in.jsonl" --output "$tmp/in.jsonl" \
  --backend host 2>"$tmp/err"; rc=$?
check "--output over --input is refused" [ "$rc" -eq 1 ]
check "... leaving the input as it was" [ "$(wc -l <"$tmp/in.jsonl")" -eq 11 ]
"$atlas" batch --model "$m" --output "$tmp/x.jsonl" 2>/dev/null; rc=$?
check "--input is required (usage error, exit 2)" [ "$rc" -eq 2 ]

rm -rf "$tmp"
[ "$fails" -eq 0 ] && echo "all passed" || echo "$fails failed"
[ "$fails" -eq 0 ]
