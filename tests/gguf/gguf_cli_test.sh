#!/usr/bin/env bash
# `atlas run` on a GGUF file, the way llama.cpp users run one: weights,
# tokenizer and chat template all from FILE.gguf (gguf_fixture: quantized
# projections, a quantized embedding and output, a gpt2 tokenizer).
# - --tokens: the ids equal those of the same file converted to an F32
#   checkpoint by gguf_to_safetensors (its blocks dequantized);
# - --prompt: the text of the ids --tokens generates for the prompt's ids
#   (`atlas tokenize --tokenizer FILE.gguf`), as `atlas detokenize` gives it;
# - --chat: the prompt the file's chat template renders;
# - atlas batch on the quantized file and on an F32 one: a completion and a
#   chat answer as atlas run gives them;
# - a GGUF file whose tokenizer.ggml.pre is not read is refused naming it.
#   gguf_cli_test.sh ATLAS GGUF_FIXTURE GGUF_TO_SAFETENSORS TOKENIZER_JSON
set -uo pipefail
atlas="$1" fixture="$2" convert="$3" tokenizer="$4"
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/atlas_gguf_cli.XXXXXX")"
fails=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}
g="$tmp/model.gguf"
# The text --prompt streams for ids IDS: their decode, special tokens left
# out, less a character still incomplete when generation ends (the decode
# shows it as U+FFFD; the stream never sends it).
streamed_text_of() {
  "$atlas" detokenize --tokenizer "$g" --ids "$1" --skip-special 2>/dev/null |
    python3 -c 'import sys; t = sys.stdin.buffer.read().decode()[:-1]; sys.stdout.buffer.write((t.rstrip("\ufffd") + "\n").encode())'
}
"$fixture" "$tokenizer" "$g" || { echo "FAIL gguf_fixture"; exit 1; }
run() { "$atlas" run --backend host --ignore-eos "$@"; }
steps=12

ids=$(printf 'Hello world, 2 + 2' | "$atlas" tokenize --tokenizer "$g" --add-special)
check "atlas tokenize reads a GGUF file's tokenizer" grep -qE '^[0-9]+(,[0-9]+)+$' <<<"$ids"
gen=$(run --model "$g" --tokens "$ids" --steps $steps 2>"$tmp/err")
check "run --model FILE.gguf --tokens generates $steps ids" \
  grep -qE "^[0-9]+(,[0-9]+){$((steps - 1))}$" <<<"$gen"
"$convert" "$g" "$tmp/f32" >/dev/null 2>&1
twin=$(run --model "$tmp/f32" --tokens "$ids" --steps $steps 2>/dev/null)
check "the ids equal those of its dequantized F32 checkpoint" [ "$gen" = "$twin" ]

streamed_text_of "$gen" >"$tmp/want"
run --model "$g" --prompt 'Hello world, 2 + 2' --steps $steps >"$tmp/got" 2>"$tmp/err"; rc=$?
check "run --model FILE.gguf --prompt exits 0" [ "$rc" -eq 0 ]
check "--prompt prints the text of the ids --tokens generates" cmp -s "$tmp/got" "$tmp/want"

run --model "$g" --prompt 'What is 2 + 2?' --chat --steps $steps >"$tmp/chat" 2>"$tmp/err"; rc=$?
check "run --chat renders the file's chat template" [ "$rc" -eq 0 ]
chat_ids=$(printf '<|im_start|>user\nWhat is 2 + 2?<|eos|>\n<|im_start|>assistant\n' |
  "$atlas" tokenize --tokenizer "$g")
chat_gen=$(run --model "$g" --tokens "$chat_ids" --steps $steps 2>/dev/null)
streamed_text_of "$chat_gen" >"$tmp/chat_want"
check "--chat generates from the template's prompt" cmp -s "$tmp/chat" "$tmp/chat_want"

# atlas batch (the paged batch step of atlas serve) on the quantized file
# and on the same model all F32: a completion's text is atlas run's, a chat
# answer is atlas run --chat's.
f="$tmp/plain.gguf"
"$fixture" "$tokenizer" "$f" f32 || { echo "FAIL gguf_fixture f32"; exit 1; }
cat >"$tmp/in.jsonl" <<'JSONL'
{"custom_id": "c", "method": "POST", "url": "/v1/completions", "body": {"model": "m", "prompt": "Hello world", "max_tokens": 8, "temperature": 0}}
{"custom_id": "chat", "method": "POST", "url": "/v1/chat/completions", "body": {"messages": [{"role": "user", "content": "hi there"}], "max_completion_tokens": 8, "temperature": 0}}
JSONL
field() {  # field LINE EXPR: of the batch output's line LINE (1-based)
  python3 -c 'import json,sys; o=[json.loads(l) for l in open(sys.argv[1])][int(sys.argv[2])-1]; print(eval(sys.argv[3]))' "$tmp/out.jsonl" "$@"
}
for model in "$g" "$f"; do
  what="$(basename "$model")"
  rm -f "$tmp/out.jsonl"
  "$atlas" batch --model "$model" --input "$tmp/in.jsonl" --output "$tmp/out.jsonl" \
    --backend host 2>"$tmp/batch_err"; rc=$?
  check "atlas batch --model $what exits 0" [ "$rc" -eq 0 ]
  run --model "$model" --prompt 'Hello world' --steps 8 >"$tmp/run_c" 2>/dev/null
  field 1 'o["response"]["body"]["choices"][0]["text"]' >"$tmp/batch_c" 2>/dev/null
  check "$what: batch answers the completion" [ "$(field 1 'o["response"]["status_code"]')" = 200 ]
  check "$what: batch's completion is atlas run's text" cmp -s "$tmp/batch_c" "$tmp/run_c"
  check "$what: ... and not empty" [ -s "$tmp/run_c" ]
  run --model "$model" --prompt 'hi there' --chat --steps 8 >"$tmp/run_chat" 2>/dev/null
  field 2 'o["response"]["body"]["choices"][0]["message"]["content"]' >"$tmp/batch_chat" 2>/dev/null
  check "$what: batch answers the chat request" [ "$(field 2 'o["response"]["status_code"]')" = 200 ]
  check "$what: batch's chat answer is atlas run --chat's (the file's template)" \
    cmp -s "$tmp/batch_chat" "$tmp/run_chat"
  [ "$fails" -eq 0 ] || { cat "$tmp/batch_err"; head -c 600 "$tmp/out.jsonl"; }
done

# The same file with an unread pre-tokenizer name (same length, so the
# metadata keeps its layout): refused, naming the key.
python3 - "$g" "$tmp/bad.gguf" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
key = b"tokenizer.ggml.pre"
at = b.index(key) + len(key) + 4 + 8  # type u32, length u64
assert b[at:at + 5] == b"qwen2"
open(sys.argv[2], "wb").write(b[:at] + b"qwen9" + b[at + 5:])
PY
run --model "$tmp/bad.gguf" --prompt 'hi' --steps 2 >/dev/null 2>"$tmp/err"; rc=$?
check "an unread tokenizer.ggml.pre exits 1" [ "$rc" -eq 1 ]
check "... naming the key" grep -q 'tokenizer.ggml.pre "qwen9"' "$tmp/err"

rm -rf "$tmp"
[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
