#!/usr/bin/env bash
# atlas run --prompt / --chat / sampling flags / --stop on a tiny random
# model whose vocabulary is that of a small byte-level BPE tokenizer.json
# (tests/text/synthetic/gpt2_style.json, checked against tokenizers in
# //tests/text). The reference for every text is `atlas detokenize` of the
# ids the --tokens path generates (itself checked in text_cli_test).
#   prompt_cli_test.sh ATLAS MAKE_CHECKPOINT TOKENIZER_JSON
set -uo pipefail
atlas="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
make_checkpoint="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
tokenizer="$3"
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/atlas_prompt.XXXXXX")"
fails=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}
valid_utf8() { python3 -c 'import sys; sys.stdin.buffer.read().decode("utf-8")' <"$1"; }
# The text --prompt streams for generated ids IDS: their decode, special
# tokens left out, less a character still incomplete when generation ends
# (the full decode shows it as U+FFFD; the stream never sends it).
streamed_text_of() {
  "$atlas" detokenize --tokenizer "$t" --ids "$1" --skip-special 2>/dev/null |
    python3 -c 'import sys; t = sys.stdin.buffer.read().decode()[:-1]; sys.stdout.buffer.write((t.rstrip("\ufffd") + "\n").encode())'
}

m="$tmp/m"
"$make_checkpoint" --out "$m" --seed 3 --preset tiny --vocab 665 --dtype f32 >/dev/null
cp "$tokenizer" "$m/tokenizer.json"
t="$m/tokenizer.json"
run() { "$atlas" run --model "$m" --backend host --ignore-eos "$@"; }
steps=24

# ---- --prompt streams the text of the ids --tokens generates ----
prompt='Hello wörld, 中文 😀'
ids=$(printf '%s' "$prompt" | "$atlas" tokenize --tokenizer "$t" --add-special)
gen=$(run --tokens "$ids" --steps $steps 2>/dev/null)
check "--tokens generates $steps ids" grep -qE "^[0-9]+(,[0-9]+){$((steps - 1))}$" <<<"$gen"
streamed_text_of "$gen" >"$tmp/want"
run --prompt "$prompt" --steps $steps >"$tmp/got" 2>"$tmp/err"; rc=$?
check "run --prompt exits 0" [ "$rc" -eq 0 ]
check "run --prompt prints the decoded text of the generated ids" cmp -s "$tmp/got" "$tmp/want"
check "the streamed text is valid UTF-8 (never half a character)" valid_utf8 "$tmp/got"
[ "$fails" -eq 0 ] || { echo "got: $(od -c "$tmp/got" | head -5)"; echo "want: $(od -c "$tmp/want" | head -5)"; cat "$tmp/err"; }

# ---- --prompt-file: the same text from a file or stdin, every byte ----
printf '%s' "$prompt" >"$tmp/prompt.txt"
run --prompt-file "$tmp/prompt.txt" --steps $steps >"$tmp/pf" 2>"$tmp/err"; rc=$?
check "run --prompt-file exits 0" [ "$rc" -eq 0 ]
check "--prompt-file FILE generates what --prompt TEXT does" cmp -s "$tmp/pf" "$tmp/got"
run --prompt-file - --steps $steps <"$tmp/prompt.txt" >"$tmp/pf_stdin" 2>/dev/null
check "--prompt-file - reads stdin" cmp -s "$tmp/pf_stdin" "$tmp/got"
printf '%s\n' "$prompt" >"$tmp/prompt_nl.txt"
nl_ids=$("$atlas" tokenize --tokenizer "$t" --add-special <"$tmp/prompt_nl.txt")
run --tokens "$nl_ids" --steps $steps >"$tmp/nl_ids_gen" 2>/dev/null
streamed_text_of "$(cat "$tmp/nl_ids_gen")" >"$tmp/nl_want"
run --prompt-file "$tmp/prompt_nl.txt" --steps $steps >"$tmp/nl_got" 2>/dev/null
check "--prompt-file keeps a final newline (the ids of tokenize)" cmp -s "$tmp/nl_got" "$tmp/nl_want"
run --prompt-file "$tmp/missing.txt" --steps 2 >/dev/null 2>"$tmp/err"; rc=$?
check "--prompt-file of a missing file exits 1" [ "$rc" -eq 1 ]
check "... naming it" grep -q "missing.txt: cannot open" "$tmp/err"
run --prompt-file "$tmp" --steps 2 >/dev/null 2>"$tmp/err"; rc=$?
check "--prompt-file of a folder exits 1" [ "$rc" -eq 1 ]
run --prompt-file /dev/zero --steps 2 >/dev/null 2>"$tmp/err"; rc=$?
check "--prompt-file of an endless source exits 1" [ "$rc" -eq 1 ]
check "... naming it and the limit" grep -q "/dev/zero: more than 268435456 bytes" "$tmp/err"
"$atlas" run --model "$m" --prompt hi --prompt-file "$tmp/prompt.txt" --steps 1 >/dev/null 2>"$tmp/err"; rc=$?
check "--prompt with --prompt-file exits 2" [ "$rc" -eq 2 ]

# ---- --max-seq: the prompt's tokens + steps - 1 positions suffice ----
n_prompt=$(tr ',' '\n' <<<"$ids" | wc -l)
run --prompt "$prompt" --steps $steps --max-seq $((n_prompt + steps - 1)) >"$tmp/ms" 2>"$tmp/err"; rc=$?
check "--max-seq of exactly prompt + steps - 1 runs" [ "$rc" -eq 0 ]
check "... the same text" cmp -s "$tmp/ms" "$tmp/got"
run --prompt "$prompt" --steps $steps --max-seq $((n_prompt + steps - 2)) >/dev/null 2>"$tmp/err"; rc=$?
check "one position fewer exits 1" [ "$rc" -eq 1 ]
check "... naming the positions needed" grep -q "less than the $((n_prompt + steps - 1)) positions" "$tmp/err"

# ---- --steps 0 runs the prompt only: no text ----
run --prompt "$prompt" --steps 0 >"$tmp/none" 2>"$tmp/err"; rc=$?
check "--steps 0 exits 0" [ "$rc" -eq 0 ]
check "--steps 0 prints no generated text (an empty line)" [ "$(od -An -c "$tmp/none" | tr -d ' ')" = '\n' ]
run --prompt "$prompt" --steps 0 --stats >/dev/null 2>"$tmp/err"
check "--stats with --steps 0 says no token was generated" grep -q "^stats: prompt [0-9]* tokens in [0-9.]* ms, no token generated$" "$tmp/err"

# ---- --stats: the prompt's length and the tokens after the first, on stderr ----
run --prompt "$prompt" --steps $steps --stats >"$tmp/st" 2>"$tmp/st_err"; rc=$?
check "--stats exits 0" [ "$rc" -eq 0 ]
check "--stats leaves stdout as it was" cmp -s "$tmp/st" "$tmp/got"
n_ids=$(tr ',' '\n' <<<"$ids" | wc -l)
check "--stats counts the prompt's $n_ids tokens" grep -q "^stats: prompt $n_ids tokens, first token after [0-9.]* ms" "$tmp/st_err"
check "... and the $((steps - 1)) tokens after the first" grep -q "; $((steps - 1)) more tokens in [0-9.]* ms ([0-9.]* tokens/s)$" "$tmp/st_err"
[ "$fails" -eq 0 ] || cat "$tmp/st_err"

# ---- sampling ----
run --prompt "$prompt" --steps $steps --temperature 1 --top-k 1 --seed 9 >"$tmp/k1" 2>/dev/null
check "--top-k 1 samples the greedy text" cmp -s "$tmp/k1" "$tmp/got"
run --prompt "$prompt" --steps $steps --temperature 0 >"$tmp/t0" 2>/dev/null
check "--temperature 0 is greedy" cmp -s "$tmp/t0" "$tmp/got"
run --tokens "$ids" --steps $steps --temperature 1.5 --top-p 0.9 --min-p 0.01 --repetition-penalty 1.2 --seed 7 >"$tmp/s1" 2>/dev/null; rc=$?
run --tokens "$ids" --steps $steps --temperature 1.5 --top-p 0.9 --min-p 0.01 --repetition-penalty 1.2 --seed 7 >"$tmp/s2" 2>/dev/null
check "sampling exits 0" [ "$rc" -eq 0 ]
check "the same seed gives the same ids" cmp -s "$tmp/s1" "$tmp/s2"
differs=0
for seed in 1 2 3 4 5; do
  out=$(run --tokens "$ids" --steps $steps --temperature 2 --seed $seed 2>/dev/null)
  [ -n "$out" ] && [ "$out" != "$gen" ] && differs=$((differs + 1))
done
check "--temperature 2 samples something other than the greedy ids" [ "$differs" -gt 0 ]
# Out-of-range sampling options are usage errors, greedy or not, before
# anything loads.
for bad in "--temperature 1 --top-p 1.5" "--top-p 0" "--min-p 1.01" \
           "--repetition-penalty 0" "--temperature 1e39" "--temperature -1"; do
  run --tokens "$ids" --steps 2 $bad >"$tmp/out" 2>"$tmp/err"; rc=$?
  flag=$(tr ' ' '\n' <<<"$bad" | grep -- '^--' | tail -1)
  check "$bad is a usage error (exit 2)" [ "$rc" -eq 2 ]
  check "... naming $flag and its range" grep -q -- "$flag wants a number in" "$tmp/err"
  check "... before anything loads" [ ! -s "$tmp/out" ]
done

# ---- a run killed mid-way leaves no file behind ----
# The output is opened first; the prompt then waits on a FIFO no one writes.
mkfifo "$tmp/never"
"$atlas" run --model "$m" --backend host --prompt-file "$tmp/never" --steps 2 --logits "$tmp/killed.bin" >/dev/null 2>&1 &
pid=$!
sleep 0.5
kill -TERM "$pid"; wait "$pid" 2>/dev/null
check "a run killed before its end leaves no --logits file nor temporary file" \
  bash -c "[ ! -e '$tmp/killed.bin' ] && ! ls '$tmp'/killed.bin.* >/dev/null 2>&1"

# ---- --stop: the text up to (not including) the stop string ----
python3 - "$tmp/got" "$tmp/stop" "$tmp/stopped_want" <<'PY'
import sys
text = open(sys.argv[1], encoding="utf-8").read().rstrip("\n")
chars = [c for c in text]
stop = "".join(chars[len(chars) // 3: len(chars) // 3 + 2])
open(sys.argv[2], "w", encoding="utf-8").write(stop)
open(sys.argv[3], "w", encoding="utf-8").write(text[:text.index(stop)] + "\n")
PY
stop=$(cat "$tmp/stop")
run --prompt "$prompt" --steps $steps --stop "$stop" --stop "never-in-the-text" >"$tmp/stopped" 2>/dev/null; rc=$?
check "--stop exits 0" [ "$rc" -eq 0 ]
check "--stop prints the text before the stop string only" cmp -s "$tmp/stopped" "$tmp/stopped_want"

# ---- --chat: the prompt as a user message, through the chat template ----
cat >"$m/tokenizer_config.json" <<'JSON'
{"bos_token": "<|bos|>", "eos_token": "<|eos|>",
 "chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"}
JSON
cids=$(printf '<|im_start|>user\nhi there\n<|im_start|>assistant\n' | "$atlas" tokenize --tokenizer "$t")
cgen=$(run --tokens "$cids" --steps $steps 2>/dev/null)
streamed_text_of "$cgen" >"$tmp/chat_want"
run --chat --prompt "hi there" --steps $steps >"$tmp/chat" 2>"$tmp/err"; rc=$?
check "run --chat exits 0" [ "$rc" -eq 0 ]
check "run --chat generates after the rendered template" cmp -s "$tmp/chat" "$tmp/chat_want"
sids=$(printf '<|im_start|>system\nbe brief\n<|im_start|>user\nhi there\n<|im_start|>assistant\n' | "$atlas" tokenize --tokenizer "$t")
sgen=$(run --tokens "$sids" --steps $steps 2>/dev/null)
streamed_text_of "$sgen" >"$tmp/system_want"
run --chat --system "be brief" --prompt "hi there" --steps $steps >"$tmp/system" 2>"$tmp/err"; rc=$?
check "run --chat --system exits 0" [ "$rc" -eq 0 ]
check "--system comes before the user's message in the template" cmp -s "$tmp/system" "$tmp/system_want"
printf 'hi\0there' >"$tmp/nul.txt"
run --chat --prompt-file "$tmp/nul.txt" --steps 2 >/dev/null 2>"$tmp/err"; rc=$?
check "--chat with a NUL byte in --prompt-file exits 1" [ "$rc" -eq 1 ]
check "... naming the file and the offset" grep -q "nul.txt: a NUL byte at offset 2" "$tmp/err"
run --prompt-file "$tmp/nul.txt" --steps 2 >/dev/null 2>"$tmp/err"; rc=$?
check "without --chat the NUL is text like any other" [ "$rc" -eq 0 ]
rm "$m/tokenizer_config.json"
run --chat --prompt "hi" --steps 2 >/dev/null 2>"$tmp/err"; rc=$?
check "--chat without tokenizer_config.json exits 1" [ "$rc" -eq 1 ]
check "... naming the file" grep -q "tokenizer_config.json" "$tmp/err"

# ---- usage ----
"$atlas" run --model "$m" --tokens 1 --prompt hi --steps 1 >/dev/null 2>"$tmp/err"; rc=$?
check "--tokens with --prompt exits 2" [ "$rc" -eq 2 ]
"$atlas" run --model "$m" --tokens 1 --stop x --steps 1 >/dev/null 2>"$tmp/err"; rc=$?
check "--stop without --prompt exits 2" [ "$rc" -eq 2 ]
check "... saying so" grep -q -- "--stop needs --prompt" "$tmp/err"
"$atlas" run --model "$m" --prompt hi --system x --steps 1 >/dev/null 2>"$tmp/err"; rc=$?
check "--system without --chat exits 2" [ "$rc" -eq 2 ]
check "... saying so" grep -q -- "--system needs --chat" "$tmp/err"
"$make_checkpoint" --out "$tmp/notok" --seed 1 --preset tiny >/dev/null
"$atlas" run --model "$tmp/notok" --prompt hi --steps 1 >/dev/null 2>"$tmp/err"; rc=$?
check "--prompt without DIR/tokenizer.json exits 1" [ "$rc" -eq 1 ]
check "... naming the file" grep -q "tokenizer.json" "$tmp/err"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
