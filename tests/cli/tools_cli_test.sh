#!/usr/bin/env bash
# make_checkpoint and bench follow the atlas command-line conventions:
# --help / help CMD / CMD --help exit 0 and document every option with its
# default, --opt=value, one-line usage errors with exit 2, --version, and
# relative paths under `bazel run` taken from BUILD_WORKING_DIRECTORY.
#   tools_cli_test.sh MAKE_CHECKPOINT BENCH VERSION_H
set -uo pipefail
mc="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
bench="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
version_h="$3"
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/tools_cli.XXXXXX")"
fails=0
unset BUILD_WORKING_DIRECTORY

# Help output with each option's wrapped lines joined into one.
unwrap() { sed -E ':a;N;$!ba;s/\n {28}([^ ])/ \1/g' "$@"; }

check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}
version=$(sed -n 's/^#define ATLAS_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' "$version_h" | paste -sd.)

documents() {  # documents NAME HELPFILE OPTION...
  local name="$1" file="$tmp/unwrapped"; unwrap "$2" >"$file"; shift 2
  for o in "$@"; do
    check "$name documents --$o with its default" \
      grep -qE "^  --$o( [A-Z0-9|.]+)? .*(\[default: [^]]+\]|\(required\))$" "$file"
  done
  local bare
  bare=$(grep -E '^  --' "$file" | grep -vE '\[default: [^]]+\]$|\(required\)$' | grep -vE '^  --version ' || true)
  check "$name: every option states its default" [ -z "$bare" ]
}
expect_usage() {  # expect_usage NAME PROGRAM HELP_CMD PATTERN ARGS...
  local name="$1" prog="$2" helpcmd="$3" pattern="$4"; shift 4
  "$prog" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  check "$name exits 2" [ "$rc" -eq 2 ]
  check "$name: one line" [ "$(wc -l <"$tmp/err")" -eq 1 ]
  check "$name says why" grep -q -- "$pattern" "$tmp/err"
  check "$name points at the help" grep -qF "see \`$helpcmd --help\`" "$tmp/err"
}

# ---- make_checkpoint ----
"$mc" --help >"$tmp/h" 2>&1; rc=$?
check "make_checkpoint --help exits 0" [ "$rc" -eq 0 ]
check "make_checkpoint -h = --help" cmp -s <("$mc" -h) "$tmp/h"
documents "make_checkpoint" "$tmp/h" out seed preset dtype shards tied qk-norm vocab hidden \
  intermediate layers heads kv-heads max-pos
check "make_checkpoint --help says the weights are random" grep -q "RANDOM weights" "$tmp/h"
check "make_checkpoint --version" [ "$("$mc" --version)" = "make_checkpoint $version" ]
expect_usage "make_checkpoint without --out" "$mc" make_checkpoint "--out DIR is required"
expect_usage "make_checkpoint unknown option" "$mc" make_checkpoint "unknown option '--frob'" --out "$tmp/x" --frob
expect_usage "make_checkpoint bad dtype" "$mc" make_checkpoint "unknown dtype 'f8'" --out "$tmp/x" --dtype f8
expect_usage "make_checkpoint bad preset" "$mc" make_checkpoint "unknown preset 'huge'" --out "$tmp/x" --preset huge
expect_usage "make_checkpoint bad number" "$mc" make_checkpoint "--seed wants an integer" --out "$tmp/x" --seed -3
expect_usage "make_checkpoint zero dim" "$mc" make_checkpoint "--layers wants an integer from 1 to" --out "$tmp/x" --layers 0
expect_usage "make_checkpoint zero shards" "$mc" make_checkpoint "--shards wants an integer from 1 to 1000, not '0'" --out "$tmp/x" --shards 0
# What the runtime would refuse at load is refused before anything is
# written (it exited 1 after writing, naming a temporary file that was gone).
expect_usage "make_checkpoint kv-heads not dividing heads" "$mc" make_checkpoint "heads 4 is not a multiple of kv-heads 3" --out "$tmp/x" --kv-heads 3
expect_usage "make_checkpoint odd head dimension" "$mc" make_checkpoint "hidden / heads = 9 is odd" --out "$tmp/x" --hidden 36
# More shards than tensors was quietly cut to the tensor count.
expect_usage "make_checkpoint more shards than tensors" "$mc" make_checkpoint "--shards 50: the checkpoint has only 21 tensors" --out "$tmp/x" --shards 50
expect_usage "make_checkpoint heads not dividing hidden" "$mc" make_checkpoint "not divisible" --out "$tmp/x" --heads 5
expect_usage "make_checkpoint missing value" "$mc" make_checkpoint "--seed needs a value" --out "$tmp/x" --seed
check "make_checkpoint wrote nothing on usage errors" [ ! -e "$tmp/x" ]

# Says what it wrote: the folder, each file and its size, the shape.
out=$("$mc" --out="$tmp/one" --seed=3 --dtype=bf16 --tied 2>&1); rc=$?
check "make_checkpoint --opt=value exits 0" [ "$rc" -eq 0 ]
check "says which folder" grep -qxF "make_checkpoint: wrote $tmp/one" <<<"$out"
check "says config.json and its size" grep -qxF "  config.json ($(stat -c %s "$tmp/one/config.json") bytes)" <<<"$out"
check "says model.safetensors and its size" grep -qxF "  model.safetensors ($(stat -c %s "$tmp/one/model.safetensors") bytes)" <<<"$out"
check "says the shape" grep -q "preset tiny: vocab 64, hidden 32, intermediate 64, 2 layers, 4 heads, 2 kv heads, max_pos 128, tied embeddings" <<<"$out"
check "says dtype, seed and that the weights are random" grep -q "bf16, RANDOM weights from seed 3; loaded back and checked" <<<"$out"
check "the config it describes is the one written" grep -q '"tie_word_embeddings": true' "$tmp/one/config.json"
# --qk-norm: a Qwen3 checkpoint (q_norm and k_norm a layer), read back as one.
out=$("$mc" --out "$tmp/qwen3" --qk-norm 2>&1); rc=$?
check "make_checkpoint --qk-norm exits 0" [ "$rc" -eq 0 ]
check "--qk-norm: says Qwen3" grep -q "  Qwen3, preset tiny: vocab 64" <<<"$out"
check "--qk-norm: config.json says qwen3" grep -q '"model_type": "qwen3"' "$tmp/qwen3/config.json"
check "--qk-norm: 2 more tensors a layer (25)" grep -q "  25 tensors, f32" <<<"$out"
out=$("$mc" --out "$tmp/sh" --preset small --shards 3 2>&1)
shard_bytes=$(cat "$tmp"/sh/model-*-of-00003.safetensors | wc -c)
check "sharded: says the index and the shards" grep -qF "model.safetensors.index.json ($(stat -c %s "$tmp/sh/model.safetensors.index.json") bytes) and 3 shards" <<<"$out"
check "sharded: the shard bytes add up" grep -qF "($shard_bytes bytes)" <<<"$out"
touch "$tmp/afile"
"$mc" --out "$tmp/afile/sub" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "make_checkpoint into an impossible folder exits 1" [ "$rc" -eq 1 ]
check "and names it" grep -q "$tmp/afile" "$tmp/err"
# The folder is written as <out>.tmp-XXXXXX beside it and renamed into place
# only once written and checked: a failure leaves neither.
leftovers() { compgen -G "$tmp/*.tmp-*" >/dev/null; }
check "make_checkpoint leaves no temporary folder on success" eval '! leftovers'
"$mc" --out "$tmp/bad" --shards 21 --tied >"$tmp/out" 2>"$tmp/err"; rc=$?
check "a refused checkpoint exits 2" [ "$rc" -eq 2 ]
check "and leaves no folder, temporary or final" [ ! -e "$tmp/bad" ]
check "nor a temporary folder" eval '! leftovers'
# Killed while writing: the watcher removes the temporary folder and the
# process still ends by the signal. Killed the moment the folder appears,
# 20 times: a stop between the folder's creation and the watcher's start,
# or a writer that made the folder again after the watcher removed it, left
# it behind about one kill in 30 before 2026-12-04.
seen=0 by_signal=0 left=0
for i in $(seq 20); do
  "$mc" --out "$tmp/killed$i" --layers 2 --hidden 2048 --intermediate 8192 --heads 16 \
    --kv-heads 4 --vocab 64 --dtype bf16 >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 500); do compgen -G "$tmp/killed$i.tmp-*" >/dev/null && break; sleep 0.01; done
  compgen -G "$tmp/killed$i.tmp-*" >/dev/null && seen=$((seen + 1))
  kill -TERM "$pid"; wait "$pid"; rc=$?
  [ "$rc" -eq 143 ] && by_signal=$((by_signal + 1))
  compgen -G "$tmp/killed$i*" >/dev/null && left=$((left + 1))
done
check "a long make_checkpoint has its temporary folder while writing ($seen of 20)" [ "$seen" -eq 20 ]
check "killed by SIGTERM, it ends by SIGTERM ($by_signal of 20)" [ "$by_signal" -eq 20 ]
check "and leaves no folder, temporary or final ($left of 20 left one)" [ "$left" -eq 0 ]
check "nor a temporary folder" eval '! leftovers'
# --out through links, '.', and names too long for a '.tmp-XXXXXX' suffix:
# each was accepted up front and then failed (or wrote) somewhere unexpected.
mkdir "$tmp/target"; ln -s target "$tmp/link"; ln -s nowhere "$tmp/dangling"
"$mc" --out "$tmp/link" >/dev/null 2>"$tmp/err"; rc=$?
check "--out a link to an empty folder writes through it" [ "$rc" -eq 0 -a -L "$tmp/link" -a -s "$tmp/target/model.safetensors" ]
"$mc" --out "$tmp/dangling" >/dev/null 2>"$tmp/err"; rc=$?
check "--out a link to nothing exits 1" [ "$rc" -eq 1 ]
check "and says so" grep -qF "$tmp/dangling is a symbolic link to nothing" "$tmp/err"
check "and leaves the link" [ -L "$tmp/dangling" ]
mkdir "$tmp/dot"
(cd "$tmp/dot" && "$mc" --out . >/dev/null 2>"$tmp/err"); rc=$?
check "--out . exits 1" [ "$rc" -eq 1 ]
check "and says to name the new folder" grep -qF "name the new folder itself" "$tmp/err"
long=$(printf 'n%.0s' $(seq 250))
"$mc" --out "$tmp/$long" >/dev/null 2>"$tmp/err"; rc=$?
check "--out a 250-character name exits 0" [ "$rc" -eq 0 -a -s "$tmp/$long/model.safetensors" ]
check "and leaves no temporary folder" eval '! compgen -G "$tmp/.atlas-tmp-*" >/dev/null'
# Output that never arrived is a failure (exit 0 with nothing said).
for prog in "$mc" "$bench"; do
  "$prog" --version >/dev/full 2>"$tmp/err"; rc=$?
  check "$(basename "$prog") >/dev/full exits 1" [ "$rc" -eq 1 ]
  check "$(basename "$prog") says the output failed" grep -q "writing the standard output failed" "$tmp/err"
done
mkdir "$tmp/empty"
"$mc" --out "$tmp/empty/" >/dev/null 2>&1; rc=$?
check "make_checkpoint into an empty folder exits 0" [ "$rc" -eq 0 -a -s "$tmp/empty/model.safetensors" ]
before=$(ls -l --time-style=full-iso "$tmp/one")
"$mc" --out "$tmp/one" --seed 9 >"$tmp/out" 2>"$tmp/err"; rc=$?
check "make_checkpoint into a full folder exits 1" [ "$rc" -eq 1 ]
check "and says why" grep -qF "$tmp/one exists and is not empty" "$tmp/err"
check "and leaves it as it was" [ "$(ls -l --time-style=full-iso "$tmp/one")" = "$before" ]
check "and no temporary folder" eval '! leftovers'
mkdir -p "$tmp/wd" "$tmp/elsewhere"
(cd "$tmp/elsewhere" && BUILD_WORKING_DIRECTORY="$tmp/wd" "$mc" --out rel >"$tmp/rel.out" 2>&1)
check "make_checkpoint --out relative to BUILD_WORKING_DIRECTORY" [ -s "$tmp/wd/rel/model.safetensors" -a ! -e "$tmp/elsewhere/rel" ]
check "make_checkpoint names the resolved folder" grep -qxF "make_checkpoint: wrote $tmp/wd/rel" "$tmp/rel.out"

# ---- bench ----
for args in "--help" "help"; do
  "$bench" $args >"$tmp/h" 2>&1; rc=$?
  check "bench $args exits 0" [ "$rc" -eq 0 ]
  for c in ledger cuda load prefill decode; do check "bench $args lists $c" grep -qE "^  $c " "$tmp/h"; done
done
check "bench --version" [ "$("$bench" --version)" = "bench (atlas) $version" ]
declare -A bopts=([ledger]="iters rounds" [cuda]="device rounds quick" [load]=""
  [prefill]="tokens reps backend kv-dtype" [decode]="context steps backend kv-dtype")
for c in ledger cuda load prefill decode; do
  "$bench" help "$c" >"$tmp/h1" 2>&1; rc1=$?
  "$bench" "$c" --help >"$tmp/h2" 2>&1; rc2=$?
  check "bench help $c exits 0" [ "$rc1" -eq 0 -a "$rc2" -eq 0 ]
  check "bench help $c = bench $c --help" cmp -s "$tmp/h1" "$tmp/h2"
  documents "bench $c" "$tmp/h1" ${bopts[$c]}
done
expect_usage "bench without a command" "$bench" bench "a command is needed"
expect_usage "bench unknown command" "$bench" bench "unknown command 'nope'" nope
expect_usage "bench ledger unknown option" "$bench" "bench ledger" "unknown option '--fast'" ledger --fast
expect_usage "bench ledger bad rounds" "$bench" "bench ledger" "--rounds wants an integer from 1 to 15" ledger --rounds=99
expect_usage "bench cuda bad device" "$bench" "bench cuda" "--device wants an integer" cuda --device x
expect_usage "bench cuda flag with a value" "$bench" "bench cuda" "--quick takes no value" cuda --quick=1
expect_usage "bench load without a path" "$bench" "bench load" "FILE.safetensors or DIR is required" load
expect_usage "bench load with two paths" "$bench" "bench load" "unexpected argument 'b'" load a b
expect_usage "bench decode without a DIR" "$bench" "bench decode" "DIR is required" decode --steps 2
expect_usage "bench prefill with two DIRs" "$bench" "bench prefill" "unexpected argument 'b'" prefill a b
expect_usage "bench decode zero steps" "$bench" "bench decode" "--steps wants an integer from 1" decode d --steps=0
expect_usage "bench decode bad context list" "$bench" "bench decode" "--context wants an integer from 1 to 16777216, not 'x'" decode d --context 8,x
expect_usage "bench prefill nine lengths" "$bench" "bench prefill" "--tokens wants 1 to 8 comma-separated integers" prefill d --tokens 1,2,3,4,5,6,7,8,9
expect_usage "bench decode unknown backend" "$bench" "bench decode" "bogus" decode d --backend bogus
expect_usage "bench help with two commands" "$bench" bench "help takes one command, not also 'extra'" help cuda extra
expect_usage "bench prefill bad KV type" "$bench" "bench prefill" "--kv-dtype wants auto, f32, f16 or bf16, not 'f8'" prefill d --kv-dtype=f8
(cd "$tmp/elsewhere" && BUILD_WORKING_DIRECTORY="$tmp/wd" "$bench" load missing.safetensors >"$tmp/out" 2>"$tmp/err"); rc=$?
check "bench load of a missing file exits 1" [ "$rc" -eq 1 ]
check "bench load resolves against BUILD_WORKING_DIRECTORY" grep -qF "cannot stat $tmp/wd/missing.safetensors" "$tmp/err"
(cd "$tmp/elsewhere" && BUILD_WORKING_DIRECTORY="$tmp/wd" "$bench" decode nomodel --backend host >"$tmp/out" 2>"$tmp/err"); rc=$?
check "bench decode of a missing checkpoint exits 1" [ "$rc" -eq 1 ]
check "bench decode resolves DIR against BUILD_WORKING_DIRECTORY" grep -qF "$tmp/wd/nomodel/config.json" "$tmp/err"
check "bench decode names itself and DIR" grep -qF "bench decode: opening $tmp/wd/nomodel: " "$tmp/err"

# The malloc baseline is measured, not optimised away (it printed 0.0 ns and
# a ratio of 919778x when the compiler elided malloc+free). Not a timing
# assertion: a real malloc+free pair cannot round to 0.0 ns.
"$bench" ledger --iters=2000 --rounds=1 >"$tmp/ledger" 2>&1; rc=$?
check "bench ledger --iters --rounds exits 0" [ "$rc" -eq 0 ]
check "bench ledger says what it timed" grep -qx "2000 alloc+free pairs per round, median of 1 rounds" "$tmp/ledger"
malloc_ns=$(awk '/^with 1000 live/ {print $5}' "$tmp/ledger")
check "the malloc baseline was measured ($malloc_ns ns)" awk -v v="${malloc_ns:-0}" 'BEGIN { exit !(v > 0) }'

# bench decode times N steps after three warm-up steps; the KV cache holds
# both (with --steps 1 the warm-up once ran past it: exit 1, nothing timed).
for st in 1 2; do
  "$bench" decode "$tmp/one" --context=8 --steps="$st" --backend host >"$tmp/dec" 2>&1; rc=$?
  check "bench decode --steps $st exits 0" [ "$rc" -eq 0 ]
  check "bench decode --steps $st prints every mode" [ "$(grep -c "^atlas decode at context     8: .* ($st steps, " "$tmp/dec")" -eq 5 ]
done
# --backend auto says which backend it chose (it printed "auto").
"$bench" decode "$tmp/one" --context=4 --steps=1 --backend auto >"$tmp/dec" 2>&1; rc=$?
check "bench decode --backend auto exits 0" [ "$rc" -eq 0 ]
check "and names the backend it chose" grep -qE "^loaded $tmp/one on (host|cuda:[0-9]+) " "$tmp/dec"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
