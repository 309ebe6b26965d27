#!/usr/bin/env bash
# atlas batch (the paged batch step of atlas serve) on quantized safetensors
# checkpoints of a tiny random model with a byte-level BPE tokenizer: for
# fp8 block and gptq int4 with g_idx, each greedy completion's text and a
# chat answer equal atlas run's (the token path) for the same prompt, and
# the report shows the projections quantized.
#   quant_batch_cli_test.sh ATLAS MAKE_CHECKPOINT QUANT_CHECKPOINT TOKENIZER_JSON
set -uo pipefail
atlas="$1" make_checkpoint="$2" quantize="$3" tokenizer="$4"
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/atlas_quant_batch.XXXXXX")"
fails=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}
field() {  # field FILE LINE EXPR: of output line LINE (1-based)
  python3 -c 'import json,sys; o=[json.loads(l) for l in open(sys.argv[1])][int(sys.argv[2])-1]; print(eval(sys.argv[3]))' "$@"
}
src="$tmp/f32"
"$make_checkpoint" --out "$src" --seed 5 --preset tiny --vocab 665 --dtype f32 >/dev/null
cp "$tokenizer" "$src/tokenizer.json"
cat >"$src/tokenizer_config.json" <<'JSON'
{"bos_token": "<|bos|>", "eos_token": "<|eos|>",
 "chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"}
JSON
prompts=("Hello wörld" "The quick brown fox" "a")
steps=(10 6 12)
python3 - "$tmp/in.jsonl" <<'PY'
import json, sys
ps = [("Hello wörld", 10), ("The quick brown fox", 6), ("a", 12)]
with open(sys.argv[1], "w") as f:
    for i, (p, n) in enumerate(ps):
        f.write(json.dumps({"custom_id": f"c{i}", "method": "POST", "url": "/v1/completions",
                            "body": {"prompt": p, "max_tokens": n, "temperature": 0}},
                           ensure_ascii=False) + "\n")
    f.write(json.dumps({"custom_id": "chat", "method": "POST", "url": "/v1/chat/completions",
                        "body": {"messages": [{"role": "user", "content": "hi there"}],
                                 "max_completion_tokens": 8, "temperature": 0}}) + "\n")
PY
for scheme in fp8_fp8_block16x16 gptq_int4_g32_asym_actorder; do
  m="$tmp/$scheme"
  "$quantize" "$src" "$scheme" "$m" || { echo "FAIL quant_checkpoint $scheme"; fails=$((fails + 1)); continue; }
  "$atlas" batch --model "$m" --input "$tmp/in.jsonl" --output "$tmp/out.jsonl" \
    --backend host --parallel 4 2>"$tmp/err"; rc=$?
  check "$scheme: atlas batch exits 0" [ "$rc" -eq 0 ]
  [ "$rc" -eq 0 ] || { cat "$tmp/err"; continue; }
  check "$scheme: the sweep found nothing leaked" grep -q "leaked: 0 bytes" "$tmp/err"
  for i in "${!prompts[@]}"; do
    "$atlas" run --model "$m" --backend host --prompt "${prompts[$i]}" \
      --steps "${steps[$i]}" >"$tmp/run$i" 2>/dev/null
    field "$tmp/out.jsonl" $((i + 1)) 'o["response"]["body"]["choices"][0]["text"]' >"$tmp/batch$i"
    check "$scheme c$i: batch's text is atlas run's" cmp -s "$tmp/batch$i" "$tmp/run$i"
    check "$scheme c$i: ... not empty" [ -s "$tmp/run$i" ]
  done
  "$atlas" run --model "$m" --backend host --chat --prompt "hi there" \
    --steps 8 >"$tmp/run_chat" 2>/dev/null
  field "$tmp/out.jsonl" 4 'o["response"]["body"]["choices"][0]["message"]["content"]' >"$tmp/batch_chat"
  check "$scheme chat: batch's message is atlas run --chat's" cmp -s "$tmp/batch_chat" "$tmp/run_chat"
  "$atlas" report --model "$m" --backend host >"$tmp/report" 2>&1
  check "$scheme: the report shows quantized weights" grep -q "quantized weights (" "$tmp/report"
done
rm -rf "$tmp"
[ "$fails" -eq 0 ] && echo "all passed" || echo "$fails failed"
[ "$fails" -eq 0 ]
