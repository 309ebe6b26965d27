#!/usr/bin/env bash
# The atlas command line as outside checks call it.
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
"$make_checkpoint" --out "$tmp/b" --seed 2 --preset small --dtype bf16 --shards 3 >/dev/null

# demo: generates, swaps, tears down, nothing leaked.
out=$("$atlas" demo 2>&1); rc=$?
check "demo exits 0" [ "$rc" -eq 0 ]
check "demo swaps" grep -q "swapped to tiny-b" <<<"$out"
check "demo leaks nothing" grep -qx "leaked: 0 bytes" <<<"$out"

# run: token ids on one line, logits steps x vocab float32.
out=$("$atlas" run --model "$tmp/a" --backend host --tokens 1,2,3 --steps 5 --logits "$tmp/l.bin" 2>"$tmp/err"); rc=$?
check "run exits 0" [ "$rc" -eq 0 ]
check "run prints 5 ids" grep -qE '^[0-9]+(,[0-9]+){4}$' <<<"$out"
size=$(stat -c %s "$tmp/l.bin" 2>/dev/null || echo 0)
check "logits are (3+5-1) x 64 floats" [ "$size" -eq $(( (3 + 5 - 1) * 64 * 4 )) ]
again=$("$atlas" run --model "$tmp/a" --backend host --tokens 1,2,3 --steps 5 2>/dev/null)
check "run is deterministic" [ "$out" = "$again" ]
sharded=$("$atlas" run --model "$tmp/b" --backend auto --tokens 7 --steps 3 2>/dev/null); rc=$?
check "sharded bf16 checkpoint runs" [ "$rc" -eq 0 ]

# report: text, JSON, SVG.
"$atlas" report --model "$tmp/a" --backend host --top 3 --json "$tmp/r.json" --svg "$tmp/r.svg" >"$tmp/report.txt" 2>&1; rc=$?
check "report exits 0" [ "$rc" -eq 0 ]
check "report names the weight site" grep -q "plan_matrix" "$tmp/report.txt"
check "report JSON has sites" grep -q '"sites"' "$tmp/r.json"
check "report SVG is an svg" grep -q "<svg" "$tmp/r.svg"

# swap: both models run, report after each.
out=$("$atlas" swap --model "$tmp/a" --to "$tmp/b" --backend host --tokens 1,2 --steps 2 2>&1); rc=$?
check "swap exits 0" [ "$rc" -eq 0 ]
check "swap reports twice" [ "$(grep -c '^memory report' <<<"$out")" -eq 2 ]

# errors: message on stderr, exit 1.
expect_error() {  # expect_error NAME PATTERN ARGS...
  local name="$1" pattern="$2"; shift 2
  "$atlas" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  check "$name exits 1" [ "$rc" -eq 1 ]
  check "$name says why" grep -q "$pattern" "$tmp/err"
}
expect_error "missing dir" "config.json" run --model "$tmp/nope" --tokens 1 --steps 1
expect_error "bad tokens" "comma-separated" run --model "$tmp/a" --tokens 1,x --steps 1
expect_error "token past vocab" "outside the vocabulary" run --model "$tmp/a" --backend host --tokens 999 --steps 1
expect_error "unknown backend" "unknown backend" run --model "$tmp/a" --backend tpu --tokens 1 --steps 1
cp -r "$tmp/a" "$tmp/trunc"
truncate -s -7 "$tmp/trunc/model.safetensors"
expect_error "truncated weights" "model.safetensors" run --model "$tmp/trunc" --backend host --tokens 1 --steps 1
expect_error "unknown command" "unknown command" frobnicate

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
