#!/usr/bin/env bash
# Issue 16's command-line cases: output files appear whole or not at all
# (temporary name, renamed on success, opened before any load); --steps is
# checked against the model's context before anything is allocated; nan/inf
# are refused wherever a finite number is meant; a failed swap leaves the old
# model serving with the same logits, bit for bit, and nothing leaked.
#   hostile_cli_test.sh ATLAS MAKE_CHECKPOINT
set -uo pipefail
atlas="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
make_checkpoint="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/atlas_hostile_cli.XXXXXX")"
fails=0
unset BUILD_WORKING_DIRECTORY ATLAS_FAULT

check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}
# No file at PATH and no temporary file beside it.
nothing_at() { [ ! -e "$1" ] && ! ls "$1".tmp.* >/dev/null 2>&1; }

"$make_checkpoint" --out "$tmp/a" --seed 1 --preset tiny --dtype f32 >/dev/null
"$make_checkpoint" --out "$tmp/b" --seed 2 --preset small --dtype f32 >/dev/null
run=(--backend host --tokens 1,2,3 --steps 4)

# ---- --logits: whole or not at all ----
"$atlas" run --model "$tmp/a" "${run[@]}" --logits "$tmp/ok.bin" >/dev/null 2>&1
check "a good run writes its logits" [ "$(stat -c %s "$tmp/ok.bin")" -eq $(( (3 + 4 - 1) * 64 * 4 )) ]
check "... and no temporary file stays" bash -c "! ls '$tmp'/ok.bin.tmp.* >/dev/null 2>&1"
touch "$tmp/ref_mode"
check "... with the permissions fopen would give" [ "$(stat -c %a "$tmp/ok.bin")" = "$(stat -c %a "$tmp/ref_mode")" ]

"$atlas" run --model "$tmp/nope" "${run[@]}" --logits "$tmp/fail1.bin" >/dev/null 2>&1
check "a run whose load fails leaves no --logits file nor temp file" nothing_at "$tmp/fail1.bin"
# Fails in the open, before anything is allocated: the token is outside the
# vocabulary.
"$atlas" run --model "$tmp/a" --backend host --tokens 1,999 --steps 2 --logits "$tmp/fail2.bin" >/dev/null 2>&1
check "a run whose generation fails leaves no --logits file nor temp file" nothing_at "$tmp/fail2.bin"
# A fault in generation, after some rows were written: at the run's last
# launch (found by bisection: ATLAS_FAULT=launch:n succeeds exactly when n is
# past the last launch; decode steps replay a captured graph, one launch).
lo=1 hi=4096
while [ $lo -lt $hi ]; do
  mid=$(( (lo + hi) / 2 ))
  if ATLAS_FAULT=launch:$mid "$atlas" run --model "$tmp/a" "${run[@]}" >/dev/null 2>&1; then
    hi=$mid
  else
    lo=$((mid + 1))
  fi
done
last=$((lo - 1))
check "the run has launches to fail ($last)" [ "$last" -gt 1 ]
ATLAS_FAULT=launch:$last "$atlas" run --model "$tmp/a" "${run[@]}" --logits "$tmp/fail3.bin" >/dev/null 2>"$tmp/err"; rc=$?
check "an injected fault mid-generation exits 1" [ "$rc" -eq 1 ]
check "... names the fault" grep -q "injected fault" "$tmp/err"
check "... and leaves no partial --logits file" nothing_at "$tmp/fail3.bin"
echo old >"$tmp/keep.bin"
"$atlas" run --model "$tmp/nope" "${run[@]}" --logits "$tmp/keep.bin" >/dev/null 2>&1
check "a failed run leaves an existing file as it was" [ "$(cat "$tmp/keep.bin")" = old ]

# Unwritable: fails before loading anything. The model does not exist
# either; the message is about the output, so the output was tried first.
"$atlas" run --model "$tmp/nope" "${run[@]}" --logits "$tmp/no/such/dir/l.bin" >/dev/null 2>"$tmp/err"; rc=$?
check "unwritable --logits exits 1" [ "$rc" -eq 1 ]
check "unwritable --logits names the path" grep -q "cannot create $tmp/no/such/dir/l.bin" "$tmp/err"
check "unwritable --logits fails before the load" bash -c "! grep -q config.json '$tmp/err'"
mkdir "$tmp/ro" && chmod 500 "$tmp/ro"
if [ "$(id -u)" -ne 0 ]; then  # root writes anywhere
  "$atlas" run --model "$tmp/a" "${run[@]}" --logits "$tmp/ro/l.bin" >/dev/null 2>"$tmp/err"; rc=$?
  check "--logits in a read-only folder exits 1 naming it" bash -c "[ $rc -eq 1 ] && grep -q '$tmp/ro/l.bin' '$tmp/err'"
fi
"$atlas" swap --model "$tmp/nope" --to "$tmp/b" "${run[@]}" --logits "$tmp/no/dir/s.bin" >/dev/null 2>"$tmp/err"; rc=$?
check "swap: unwritable --logits exits 1 before the load" bash -c "[ $rc -eq 1 ] && grep -q 'cannot create $tmp/no/dir/s.bin' '$tmp/err' && ! grep -q config.json '$tmp/err'"

# ---- report --json/--svg: the same rules ----
"$atlas" report --model "$tmp/nope" --backend host --json "$tmp/no/dir/r.json" >/dev/null 2>"$tmp/err"; rc=$?
check "report: unwritable --json exits 1 before the load, naming it" bash -c "[ $rc -eq 1 ] && grep -q 'cannot create $tmp/no/dir/r.json' '$tmp/err' && ! grep -q config.json '$tmp/err'"
"$atlas" report --model "$tmp/nope" --backend host --svg "$tmp/no/dir/r.svg" >/dev/null 2>"$tmp/err"; rc=$?
check "report: unwritable --svg exits 1 before the load, naming it" bash -c "[ $rc -eq 1 ] && grep -q 'cannot create $tmp/no/dir/r.svg' '$tmp/err'"
"$atlas" report --model "$tmp/nope" --backend host --json "$tmp/r1.json" --svg "$tmp/r1.svg" >/dev/null 2>&1
check "a failed report leaves no JSON nor SVG nor temp file" bash -c "$(declare -f nothing_at); nothing_at '$tmp/r1.json' && nothing_at '$tmp/r1.svg'"
"$atlas" report --model "$tmp/a" --backend host --json "$tmp/r2.json" --svg "$tmp/r2.svg" >/dev/null 2>&1
check "a good report writes both" [ -s "$tmp/r2.json" -a -s "$tmp/r2.svg" ]
check "... and no temp file stays" bash -c "! ls '$tmp'/r2.*.tmp.* >/dev/null 2>&1"

# ---- outputs never replace inputs, folders or links; devices are written ----
cp "$tmp/a/model.safetensors" "$tmp/a_weights_before"
"$atlas" run --model "$tmp/a" "${run[@]}" --logits "$tmp/a/model.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
check "--logits onto the model's weights exits 1" [ "$rc" -eq 1 ]
check "... naming both options" grep -q -- "--logits $tmp/a/model.safetensors would replace a file, which --model $tmp/a reads" "$tmp/err"
check "... and the weights are untouched" cmp -s "$tmp/a/model.safetensors" "$tmp/a_weights_before"
"$atlas" swap --model "$tmp/a" --to "$tmp/b" "${run[@]}" --logits "$tmp/b/config.json" >/dev/null 2>"$tmp/err"; rc=$?
check "swap --logits onto the new model's config.json is refused" bash -c "[ $rc -eq 1 ] && grep -q -- '--to $tmp/b reads' '$tmp/err'"
ln -s "$tmp/a/config.json" "$tmp/config_link"
"$atlas" run --model "$tmp/a" "${run[@]}" --logits "$tmp/config_link" >/dev/null 2>"$tmp/err"; rc=$?
check "... also through a symbolic link" bash -c "[ $rc -eq 1 ] && grep -q 'would replace' '$tmp/err' && [ -L '$tmp/config_link' ]"
echo "1,2,3" >"$tmp/prompt.txt"
"$atlas" run --model "$tmp/a" --backend host --prompt-file "$tmp/prompt.txt" --steps 2 --logits "$tmp/prompt.txt" >/dev/null 2>"$tmp/err"; rc=$?
check "--logits onto the --prompt-file is refused" bash -c "[ $rc -eq 1 ] && grep -q -- 'which --prompt-file $tmp/prompt.txt reads' '$tmp/err' && [ \"\$(cat '$tmp/prompt.txt')\" = 1,2,3 ]"
mkdir "$tmp/outdir"
"$atlas" run --model "$tmp/nope" "${run[@]}" --logits "$tmp/outdir" >/dev/null 2>"$tmp/err"; rc=$?
check "--logits naming a folder exits 1 before the load" bash -c "[ $rc -eq 1 ] && grep -q -- '--logits $tmp/outdir is a folder' '$tmp/err' && ! grep -q config.json '$tmp/err'"
echo old >"$tmp/real.bin"
ln -s "$tmp/real.bin" "$tmp/link.bin"
"$atlas" run --model "$tmp/a" "${run[@]}" --logits "$tmp/link.bin" >/dev/null 2>&1
check "--logits through a symbolic link writes its target" cmp -s "$tmp/real.bin" "$tmp/ok.bin"
check "... and the link stays a link" [ -L "$tmp/link.bin" ]
ln -s "$tmp/missing/x.bin" "$tmp/dangling.bin"
"$atlas" run --model "$tmp/a" "${run[@]}" --logits "$tmp/dangling.bin" >/dev/null 2>"$tmp/err"; rc=$?
check "--logits on a link to nothing is refused" bash -c "[ $rc -eq 1 ] && grep -q 'symbolic link to nothing' '$tmp/err'"
"$atlas" run --model "$tmp/a" "${run[@]}" --logits /dev/null >/dev/null 2>"$tmp/err"; rc=$?
check "--logits /dev/null is written through (exit 0)" bash -c "[ $rc -eq 0 ] && [ -c /dev/null ]"
mkfifo "$tmp/fifo"
cat "$tmp/fifo" >"$tmp/from_fifo" &
"$atlas" run --model "$tmp/a" "${run[@]}" --logits "$tmp/fifo" >/dev/null 2>&1; rc=$?
wait
check "--logits into a FIFO streams the logits through it" bash -c "[ $rc -eq 0 ] && cmp -s '$tmp/from_fifo' '$tmp/ok.bin' && [ -p '$tmp/fifo' ]"
"$atlas" run --model "$tmp/a" "${run[@]}" --logits /dev/stdout 2>/dev/null | cat >"$tmp/piped"
check "--logits /dev/stdout into a pipe carries the logits" python3 -c "import sys; sys.exit(open('$tmp/ok.bin','rb').read() not in open('$tmp/piped','rb').read())"
echo "keep me" >"$tmp/log.txt"
"$atlas" run --model "$tmp/a" "${run[@]}" --logits /dev/stdout >>"$tmp/log.txt" 2>/dev/null; rc=$?
check "--logits /dev/stdout >> FILE appends (nothing there is lost)" bash -c "[ $rc -eq 0 ] && [ \"\$(head -1 '$tmp/log.txt')\" = 'keep me' ] && [ \$(stat -c %s '$tmp/log.txt') -gt $(stat -c %s "$tmp/ok.bin") ]"
"$atlas" report --model "$tmp/a" --backend host --json "$tmp/same" --svg "$tmp/./same" >/dev/null 2>"$tmp/err"; rc=$?
check "report --json and --svg naming one file is refused" bash -c "[ $rc -eq 1 ] && grep -q 'name the same file' '$tmp/err' && [ ! -e '$tmp/same' ]"
"$atlas" report --model "$tmp/a" --backend host --json "$tmp/a/config.json" >/dev/null 2>"$tmp/err"; rc=$?
check "report --json onto the model's config.json is refused" bash -c "[ $rc -eq 1 ] && grep -q 'would replace' '$tmp/err'"

long=$(printf 'L%.0s' $(seq 250)).bin
"$atlas" run --model "$tmp/a" "${run[@]}" --logits "$tmp/$long" >/dev/null 2>"$tmp/err"; rc=$?
check "--logits with a 254-byte name works" bash -c "[ $rc -eq 0 ] && cmp -s '$tmp/$long' '$tmp/ok.bin'"
check "... and leaves no temporary file" bash -c "! ls -a '$tmp' | grep -q atlas-tmp"

# ---- the standard streams ----
"$atlas" run --model "$tmp/a" "${run[@]}" >/dev/full 2>"$tmp/err"; rc=$?
check "run with stdout on a full disk exits 1" [ "$rc" -eq 1 ]
check "... saying the standard output failed" grep -q "writing the standard output failed" "$tmp/err"
"$atlas" --help >/dev/full 2>/dev/null
check "--help on a full disk exits 1" [ $? -eq 1 ]
"$atlas" run --model "$tmp/a" "${run[@]}" --logits "$tmp/closed.bin" >&- 2>/dev/null; rc=$?
check "a closed stdout: the run still succeeds" [ "$rc" -eq 0 ]
check "... and nothing printed lands in the --logits file" cmp -s "$tmp/closed.bin" "$tmp/ok.bin"
left=$(printf 'hello' | { "$atlas" tokenize --tokenizer "$tmp/nope.json" 2>/dev/null; cat; })
check "tokenize with a missing tokenizer leaves stdin unread" [ "$left" = hello ]
left=$(printf 'hello' | { "$atlas" run --model "$tmp/nope" --backend host --prompt-file - --steps 1 2>/dev/null; cat; })
check "run --prompt-file - with a missing model leaves stdin unread" [ "$left" = hello ]
for bad in " -1" " 5" "-0"; do
  "$atlas" run --model "$tmp/a" "${run[@]}" --temperature 1 --seed "$bad" >/dev/null 2>"$tmp/err"; rc=$?
  check "--seed '$bad' is a usage error" bash -c "[ $rc -eq 2 ] && grep -q -- '--seed wants an integer' '$tmp/err'"
done

"$atlas" swap --model "$tmp/a" --to "$tmp/b" "${run[@]}" --budget-mb 0.0000001 >/dev/null 2>"$tmp/err"; rc=$?
check "--budget-mb below one byte is a usage error (it read as 'the whole device')" bash -c "[ $rc -eq 2 ] && grep -q -- '--budget-mb wants 0' '$tmp/err'"
"$atlas" swap --model "$tmp/a" --to "$tmp/b" "${run[@]}" --budget-mb 1.9e13 >/dev/null 2>&1
check "--budget-mb past 2^64 bytes is a usage error" [ $? -eq 2 ]
"$atlas" run --model "$tmp/a" "${run[@]}" --temperature 1e-320 >/dev/null 2>&1
check "--temperature 1e-320 (underflows to 0) is accepted" [ $? -eq 0 ]
"$atlas" run --model "$tmp/a" "${run[@]}" --kv-dtype BF16 >/dev/null 2>&1
check "--kv-dtype takes any case, as the API does" [ $? -eq 0 ]

# ---- --steps against the model's context (tiny: max_position_embeddings 128) ----
"$atlas" run --model "$tmp/a" --backend host --tokens 1,2,3 --steps 126 >/dev/null 2>&1
check "3 prompt tokens + 126 steps (128 positions) fit a context of 128" [ $? -eq 0 ]
# Every allocation, pinned or not, fails if one is attempted: the context
# message proves nothing was allocated before the check (no KV cache of a
# million positions, no 4 x steps buffer).
ATLAS_FAULT=alloc:1,host-alloc:1 "$atlas" run --model "$tmp/a" --backend host --tokens 1,2,3 --steps 1048576 --logits "$tmp/steps.bin" >/dev/null 2>"$tmp/err"; rc=$?
check "--steps past the context exits 1" [ "$rc" -eq 1 ]
check "... names the positions and the config key" grep -q "need 1048578 positions, but $tmp/a has a context of 128 (config.json max_position_embeddings)" "$tmp/err"
check "... before allocating anything" bash -c "! grep -q 'injected fault' '$tmp/err'"
check "... and writes no --logits file" nothing_at "$tmp/steps.bin"
"$atlas" run --model "$tmp/a" --backend host --tokens 1,2,3 --steps 127 >/dev/null 2>"$tmp/err"
check "129 positions in a context of 128 are refused" grep -q "need 129 positions" "$tmp/err"
"$atlas" swap --model "$tmp/b" --to "$tmp/a" --backend host --tokens 1,2,3 --steps 200 >"$tmp/out" 2>"$tmp/err"; rc=$?
check "swap to a model whose context is too short is refused" bash -c "[ $rc -eq 1 ] && grep -q '^swap: REFUSED before anything changed' '$tmp/err' && grep -q 'has a context of 128' '$tmp/err'"

"$atlas" run --model "$tmp/a" --backend host --tokens 1,2 --steps 0 --max-seq 1 >/dev/null 2>"$tmp/err"; rc=$?
check "--steps 0 --max-seq 1 with 2 prompt tokens: usage error with the right count" bash -c "[ $rc -eq 2 ] && grep -q -- \"--max-seq 1 is less than the 2 positions the prompt's 2 tokens and --steps 0 need\" '$tmp/err'"
"$atlas" swap --model "$tmp/a" --to "$tmp/b" --backend host --tokens 1,2 --steps 0 --max-seq 2 --logits "$tmp/z.bin" >/dev/null 2>&1; rc=$?
check "swap --steps 0: one row per prompt token from each model" bash -c "[ $rc -eq 0 ] && [ \$(stat -c %s '$tmp/z.bin') -eq $(( 2 * 64 * 4 + 2 * 256 * 4 )) ]"

# ---- nan / inf where a finite number is meant: usage errors ----
for opt in "report --min-mb" "swap --budget-mb" "run --temperature" "run --top-p" "run --min-p" "run --repetition-penalty"; do
  set -- $opt
  for v in nan inf -inf NaN Infinity 1e999; do
    case "$1" in
      report) args=(report --model "$tmp/a" --backend host) ;;
      swap) args=(swap --model "$tmp/a" --to "$tmp/b" "${run[@]}") ;;
      run) args=(run --model "$tmp/a" "${run[@]}") ;;
    esac
    "$atlas" "${args[@]}" "$2" "$v" >"$tmp/out" 2>"$tmp/err"; rc=$?
    check "$1 $2 $v is a usage error" bash -c "[ $rc -eq 2 ] && grep -q -- '$2 wants a number' '$tmp/err' && [ ! -s '$tmp/out' ]"
  done
done

# ---- a failed swap: the old model serves, same logits, nothing leaked ----
"$atlas" run --model "$tmp/a" "${run[@]}" --logits "$tmp/ref_a" >/dev/null 2>&1
"$atlas" run --model "$tmp/b" "${run[@]}" --logits "$tmp/ref_b" >/dev/null 2>&1
cat "$tmp/ref_a" "$tmp/ref_a" >"$tmp/ref_kept"
cat "$tmp/ref_a" "$tmp/ref_b" >"$tmp/ref_swapped"
"$atlas" swap --model "$tmp/a" --to "$tmp/b" "${run[@]}" --logits "$tmp/s0.bin" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "a clean swap exits 0" [ "$rc" -eq 0 ]
check "... its logits are the old model's then the new model's, bit for bit" cmp -s "$tmp/s0.bin" "$tmp/ref_swapped"
check "... and it leaked nothing" grep -qx "leaked: 0 bytes" "$tmp/out"
live_a=$(grep -o '([0-9]* bytes)' "$tmp/out" | tr -dc '0-9\n' | sed -n 1p)
live_b=$(grep -o '([0-9]* bytes)' "$tmp/out" | tr -dc '0-9\n' | sed -n 2p)
budget=$(awk -v a="$live_a" -v b="$live_b" 'BEGIN { printf "%.6f", (b + a / 2) / 1e6 }')
for path in side-by-side replace; do
  extra=()
  [ "$path" = replace ] && extra=(--budget-mb "$budget")
  # alloc:3 is the new model's last allocation (weights, their scan's
  # results, then its buffers), after its weights landed.
  for fault in alloc:3 copy:7 launch:3 host-alloc:1; do
    rm -f "$tmp/s.bin"
    ATLAS_FAULT=$fault "$atlas" swap --model "$tmp/a" --to "$tmp/b" "${run[@]}" "${extra[@]}" --logits "$tmp/s.bin" >"$tmp/out" 2>"$tmp/err"; rc=$?
    where="$path swap, ATLAS_FAULT=$fault"
    check "$where exits 1" [ "$rc" -eq 1 ]
    check "$where fails inside the swap" grep -q "swap failed" "$tmp/err"
    check "$where: the old model serves" grep -qE "never unloaded and is still serving|restored and is serving" "$tmp/err"
    check "$where: same logits as a clean run, bit for bit" cmp -s "$tmp/s.bin" "$tmp/ref_kept"
    check "$where: leaked: 0 bytes" grep -qx "leaked: 0 bytes" "$tmp/out"
    check "$where: nothing reclaimed" bash -c "! grep -q reclaimed '$tmp/err'"
  done
done
grep -q "restored and is serving" "$tmp/err"
check "the replace path restored the old model" [ $? -eq 0 ]

# ---- prompt ids the new model does not know: refused before the swap ----
# b (small) knows 256 ids, a (tiny) 64: id 200 is b's but not a's. The swap
# must not happen (it used to, then fail generating with no old model left).
vrun=(--backend host --tokens 1,2,200 --steps 4)
"$atlas" run --model "$tmp/b" "${vrun[@]}" --logits "$tmp/ref_b200" >/dev/null 2>&1
cat "$tmp/ref_b200" "$tmp/ref_b200" >"$tmp/ref_b200_kept"
"$atlas" swap --model "$tmp/b" --to "$tmp/a" "${vrun[@]}" --logits "$tmp/v.bin" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "swap to a model whose vocabulary lacks a prompt id exits 1" [ "$rc" -eq 1 ]
check "... refused before anything changed" grep -q "^swap: REFUSED before anything changed" "$tmp/err"
check "... naming the id, the model and its vocabulary size" grep -q "token id 200 is outside the vocabulary of $tmp/a: 64 ids, 0 to 63 (config.json vocab_size)" "$tmp/err"
check "... the old model still serving, bit for bit" cmp -s "$tmp/v.bin" "$tmp/ref_b200_kept"
check "... and nothing leaked" grep -qx "leaked: 0 bytes" "$tmp/out"
ATLAS_FAULT=alloc:1,host-alloc:1 "$atlas" run --model "$tmp/a" --backend host --tokens 1,64 --steps 2 >/dev/null 2>"$tmp/err"; rc=$?
check "run with an id past the vocabulary fails before allocating anything" bash -c "[ $rc -eq 1 ] && grep -q 'token id 64 is outside the vocabulary of $tmp/a: 64 ids' '$tmp/err' && ! grep -q 'injected fault' '$tmp/err'"
"$atlas" run --model "$tmp/a" --backend host --tokens 1,63 --steps 2 >/dev/null 2>&1
check "... the last id of the vocabulary runs" [ $? -eq 0 ]

# ---- a swap that leaves no model: the new one fails, then the restore ----
# (--fail-restore: ATLAS_FAULT cannot reach this, a restore ignores it.) One
# generation of the two ran, so a --logits file would look whole with only
# the first model's rows: none is written, and an existing one stays.
echo old >"$tmp/lost.bin"
"$atlas" swap --model "$tmp/a" --to "$tmp/b" "${run[@]}" --budget-mb "$budget" --fail-alloc 1 --fail-restore --logits "$tmp/lost.bin" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "a swap whose restore fails too exits 1" [ "$rc" -eq 1 ]
check "... saying no model is loaded" grep -q "^swap: FAILED, and the old model $tmp/a could not be restored; no model is loaded" "$tmp/err"
check "... and the --logits file is not replaced by the first model's rows alone" [ "$(cat "$tmp/lost.bin")" = old ]
rm -f "$tmp/lost.bin"
"$atlas" swap --model "$tmp/a" --to "$tmp/b" "${run[@]}" --budget-mb "$budget" --fail-alloc 1 --fail-restore --logits "$tmp/lost.bin" >/dev/null 2>&1
check "... nor created" nothing_at "$tmp/lost.bin"
"$atlas" swap --model "$tmp/a" --to "$tmp/b" "${run[@]}" --fail-restore >/dev/null 2>"$tmp/err"; rc=$?
check "--fail-restore without --fail-alloc is a usage error" bash -c "[ $rc -eq 2 ] && grep -q -- '--fail-restore needs --fail-alloc' '$tmp/err'"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
