#!/usr/bin/env bash
# `atlas run` at the front door: an unsupported model_type exits 1 naming the
# file, the key and the value; EOS stops generation unless --ignore-eos.
set -uo pipefail
atlas="$1"
make_checkpoint="$2"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
fails=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}

"$make_checkpoint" --out "$tmp/a" --seed 1 --preset tiny --dtype f32 >/dev/null
cp -r "$tmp/a" "$tmp/gpt2"
sed -i 's/"model_type": *"llama"/"model_type": "gpt2"/' "$tmp/gpt2/config.json"
"$atlas" run --model "$tmp/gpt2" --backend host --tokens 1,2 --steps 2 >/dev/null 2>"$tmp/err"; rc=$?
check "unsupported model_type exits 1" [ "$rc" -eq 1 ]
check "message names file, key and value" grep -q "gpt2/config.json: \"model_type\" is \"gpt2\"" "$tmp/err"
check "message says what is supported" grep -q "supported: llama, qwen2, qwen3, mistral" "$tmp/err"

out=$("$atlas" run --model "$tmp/a" --backend host --tokens 1,2,3 --steps 6 2>/dev/null)
third=$(cut -d, -f3 <<<"$out")
cp -r "$tmp/a" "$tmp/eos"
echo "{\"eos_token_id\": [$third]}" >"$tmp/eos/generation_config.json"
stopped=$("$atlas" run --model "$tmp/eos" --backend host --tokens 1,2,3 --steps 6 --logits "$tmp/l.bin" 2>/dev/null)
want=$(tr ',' '\n' <<<"$out" | awk -v e="$third" '{print; if ($1 == e) exit}' | paste -sd, -)
check "run stops after EOS" [ "$stopped" = "$want" ]
n=$(tr ',' '\n' <<<"$stopped" | wc -l)
size=$(stat -c %s "$tmp/l.bin")
check "logits have one row per forward step" [ "$size" -eq $(( (3 + n - 1) * 64 * 4 )) ]
full=$("$atlas" run --model "$tmp/eos" --backend host --tokens 1,2,3 --steps 6 --ignore-eos 2>/dev/null)
check "--ignore-eos runs every step" [ "$full" = "$out" ]

[ "$fails" -eq 0 ]
