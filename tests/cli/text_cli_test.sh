#!/usr/bin/env bash
# atlas tokenize / detokenize against Hugging Face tokenizers' own ids and
# decodes (tests/text/expected.json, made by tests/text/gen_reference*).
#   text_cli_test.sh ATLAS EXPECTED_JSON CORPUS_JSON --model=NAME FILES... ...
set -uo pipefail
atlas="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
expected="$2"; corpus="$3"; shift 3
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/atlas_text.XXXXXX")"
fails=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}
declare -A tok=()
model=""
for a in "$@"; do
  case "$a" in
    --model=*) model="${a#--model=}" ;;
    */error.txt) echo "FAIL fetching the $model tokenizer: $(cat "$a")"; fails=$((fails + 1)) ;;
    */tokenizer.json) tok[$model]="$a" ;;
  esac
done
# Cases: (model, index into the corpus) -> text file, ids, ids without special
# tokens, decode and decode without special tokens, as the reference has them.
python3 - "$expected" "$corpus" "$tmp" "${!tok[@]}" <<'PY'
import json, sys, os
expected, corpus, tmp = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
for model in sys.argv[4:]:
    cases = expected["models"][model]["cases"]
    # Loading a real tokenizer takes seconds: two cases each (the library's
    # own reference test covers the corpus), an English sentence with
    # contractions and the longest text (multi-byte, several scripts).
    picks = [next(i for i, t in enumerate(corpus) if "'" in t and len(t) > 30),
             max(range(len(corpus)), key=lambda i: len(corpus[i].encode()))]
    for i in picks:
        d = os.path.join(tmp, model, str(i)); os.makedirs(d)
        open(os.path.join(d, "text"), "wb").write(corpus[i].encode("utf-8", "surrogatepass"))
        c = cases[i]
        for k in ("ids", "ids_no_special"):
            open(os.path.join(d, k), "w").write(",".join(map(str, c[k])) + "\n")
        for k in ("decode", "decode_skip"):
            open(os.path.join(d, k), "wb").write(c[k].encode("utf-8", "surrogatepass") + b"\n")
PY
check "the reference cases were written" [ $? -eq 0 ]
for model in "${!tok[@]}"; do
  t="${tok[$model]}"
  n=0; bad=0
  for d in "$tmp/$model"/*/; do
    n=$((n + 1))
    "$atlas" tokenize --tokenizer "$t" --add-special <"$d/text" >"$d/got_ids" 2>"$d/err" || bad=$((bad + 1))
    cmp -s "$d/got_ids" "$d/ids" || { echo "  $model case $(basename "$d"): ids $(cat "$d/got_ids") != $(cat "$d/ids")"; bad=$((bad + 1)); }
    "$atlas" tokenize --tokenizer "$t" <"$d/text" >"$d/got_plain" 2>"$d/err" || bad=$((bad + 1))
    cmp -s "$d/got_plain" "$d/ids_no_special" || { echo "  $model case $(basename "$d"): ids without special tokens differ"; bad=$((bad + 1)); }
    ids=$(cat "$d/ids")
    if [ -n "${ids%$'\n'}" ]; then
      "$atlas" detokenize --tokenizer "$t" --ids "$ids" >"$d/got_text" 2>"$d/err" || bad=$((bad + 1))
      cmp -s "$d/got_text" "$d/decode" || { echo "  $model case $(basename "$d"): decode differs"; bad=$((bad + 1)); }
      "$atlas" detokenize --tokenizer "$t" --ids "$ids" --skip-special >"$d/got_skip" 2>"$d/err" || bad=$((bad + 1))
      cmp -s "$d/got_skip" "$d/decode_skip" || { echo "  $model case $(basename "$d"): decode --skip-special differs"; bad=$((bad + 1)); }
    fi
  done
  check "$model: $n cases tokenize and detokenize as tokenizers does" [ "$n" -gt 0 -a "$bad" -eq 0 ]
done
check "tokenizers for llama3 and qwen3" [ -n "${tok[llama3]:-}" -a -n "${tok[qwen3]:-}" ]

# Errors: a missing file exits 1 naming it; bad ids and no --ids exit 2.
t="${tok[llama3]:-/nonexistent}"
"$atlas" tokenize --tokenizer "$tmp/none.json" </dev/null >/dev/null 2>"$tmp/err"; rc=$?
check "tokenize with a missing tokenizer exits 1" [ "$rc" -eq 1 ]
check "... naming the file" grep -q "$tmp/none.json" "$tmp/err"
printf '\xff\xfe' | "$atlas" tokenize --tokenizer "$t" >/dev/null 2>"$tmp/err"; rc=$?
check "invalid UTF-8 exits 1" [ "$rc" -eq 1 ]
"$atlas" detokenize --tokenizer "$t" --ids 1,x >/dev/null 2>"$tmp/err"; rc=$?
check "detokenize --ids 1,x exits 2" [ "$rc" -eq 2 ]
check "... saying why" grep -q -- "--ids wants comma-separated ids" "$tmp/err"
"$atlas" detokenize --tokenizer "$t" >/dev/null 2>"$tmp/err"; rc=$?
check "detokenize without --ids exits 2" [ "$rc" -eq 2 ]
for c in tokenize detokenize; do
  "$atlas" help "$c" >"$tmp/h" 2>&1; rc=$?
  check "atlas help $c exits 0" [ "$rc" -eq 0 ]
  check "$c help has a usage line" grep -q "^usage: atlas $c" "$tmp/h"
done

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
