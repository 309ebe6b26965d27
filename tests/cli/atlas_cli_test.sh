#!/usr/bin/env bash
# The atlas command line as outside checks call it.
#   atlas_cli_test.sh ATLAS MAKE_CHECKPOINT VERSION_H
set -uo pipefail
atlas="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
make_checkpoint="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
version_h="$3"
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/atlas_cli.XXXXXX")"
fails=0
unset BUILD_WORKING_DIRECTORY

# Help output with each option's wrapped lines joined into one.
unwrap() { sed -E ':a;N;$!ba;s/\n {28}([^ ])/ \1/g' "$@"; }

check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}

"$make_checkpoint" --out "$tmp/a" --seed 1 --preset tiny --dtype f32 >/dev/null
"$make_checkpoint" --out "$tmp/b" --seed 2 --preset small --dtype bf16 --shards 3 >/dev/null

# ---- demo: generates, swaps, tears down, nothing leaked ----
out=$("$atlas" demo 2>&1); rc=$?
check "demo exits 0" [ "$rc" -eq 0 ]
check "demo swaps" grep -q "swapped to tiny-b" <<<"$out"
check "demo leaks nothing" grep -qx "leaked: 0 bytes" <<<"$out"
check "demo says its weights are random" grep -q "RANDOM weights" <<<"$out"
check "demo says repeats are expected" grep -q "repeated ids are expected" <<<"$out"

# ---- run: token ids on one line, logits steps x vocab float32 ----
out=$("$atlas" run --model "$tmp/a" --backend host --tokens 1,2,3 --steps 5 --logits "$tmp/l.bin" 2>"$tmp/err"); rc=$?
check "run exits 0" [ "$rc" -eq 0 ]
check "run prints 5 ids" grep -qE '^[0-9]+(,[0-9]+){4}$' <<<"$out"
size=$(stat -c %s "$tmp/l.bin" 2>/dev/null || echo 0)
check "logits are (3+5-1) x 64 floats" [ "$size" -eq $(( (3 + 5 - 1) * 64 * 4 )) ]
again=$("$atlas" run --model "$tmp/a" --backend host --tokens 1,2,3 --steps 5 2>/dev/null)
check "run is deterministic" [ "$out" = "$again" ]
eq=$("$atlas" run --model="$tmp/a" --backend=host --tokens=1,2,3 --steps=5 2>/dev/null); rc=$?
check "--opt=value exits 0" [ "$rc" -eq 0 ]
check "--opt=value gives the same ids" [ "$eq" = "$out" ]
sharded=$("$atlas" run --model "$tmp/b" --backend auto --tokens 7 --steps 3 2>/dev/null); rc=$?
check "sharded bf16 checkpoint runs" [ "$rc" -eq 0 ]
"$atlas" run --model "$tmp/a" --backend host --tokens 1,2,3 --steps 5 --max-seq 8 >/dev/null 2>&1
check "run --max-seq above prompt+steps works" [ $? -eq 0 ]
# The last generated token is never fed back: prompt + steps - 1 positions suffice.
"$atlas" run --model "$tmp/a" --backend host --tokens 1,2,3 --steps 5 --max-seq 7 --ignore-eos >"$tmp/exact.txt" 2>&1
check "run --max-seq of exactly prompt+steps-1 works" [ $? -eq 0 ]
check "... and generates every step" grep -qE "^[0-9]+(,[0-9]+){4}$" "$tmp/exact.txt"

# ---- --kv-dtype: a 16-bit cache runs; an unknown type is a usage error ----
for kv in f32 f16 bf16; do
  "$atlas" run --model "$tmp/b" --backend host --tokens 7,8,9 --steps 3 --kv-dtype "$kv" \
    --logits "$tmp/kv_$kv.bin" >/dev/null 2>&1
  check "run --kv-dtype $kv exits 0" [ $? -eq 0 ]
done
check "a 16-bit KV cache changes the logits" bash -c "! cmp -s '$tmp/kv_f32.bin' '$tmp/kv_bf16.bin'"
# The default (auto): a BF16 model keeps a BF16 cache, an F32 model an F32 one.
"$atlas" run --model "$tmp/b" --backend host --tokens 7,8,9 --steps 3 \
  --logits "$tmp/kv_default.bin" >/dev/null 2>&1
check "the default KV cache of a bf16 model is bf16" cmp -s "$tmp/kv_default.bin" "$tmp/kv_bf16.bin"
for kv in auto f32; do
  "$atlas" run --model "$tmp/a" --backend host --tokens 7,8,9 --steps 3 --kv-dtype "$kv" \
    --logits "$tmp/kv_a_$kv.bin" >/dev/null 2>&1
done
check "the default KV cache of an f32 model is f32" cmp -s "$tmp/kv_a_auto.bin" "$tmp/kv_a_f32.bin"
"$atlas" run --model "$tmp/a" --backend host --tokens 1 --steps 1 --kv-dtype f8 >/dev/null 2>"$tmp/err"
check "--kv-dtype f8 exits 2" [ $? -eq 2 ]
check "--kv-dtype f8 is named" grep -q 'kv-dtype.*f8.*none of auto, f32, f16, bf16' "$tmp/err"

# ---- help: --help, help CMD, CMD --help; every option with its default ----
for args in "--help" "help"; do
  "$atlas" $args >"$tmp/help" 2>"$tmp/err"; rc=$?
  check "atlas $args exits 0" [ "$rc" -eq 0 ]
  for c in demo run report swap; do
    check "atlas $args lists $c" grep -qE "^  $c " "$tmp/help"
  done
done
declare -A opts=(
  [demo]="backend"
  [run]="model tokens steps backend max-seq logits kv-dtype"
  [report]="model backend max-seq top min-mb json svg kv-budget-mb"
  [swap]="model to tokens steps backend max-seq logits kv-dtype budget-mb fail-alloc"
)
for c in demo run report swap; do
  "$atlas" help "$c" >"$tmp/h1" 2>&1; rc1=$?
  "$atlas" "$c" --help >"$tmp/h2" 2>&1; rc2=$?
  "$atlas" "$c" -h >"$tmp/h3" 2>&1; rc3=$?
  check "atlas help $c exits 0" [ "$rc1" -eq 0 ]
  check "atlas $c --help exits 0" [ "$rc2" -eq 0 ]
  check "atlas $c -h exits 0" [ "$rc3" -eq 0 ]
  check "help $c = $c --help = $c -h" cmp -s "$tmp/h1" "$tmp/h2"
  check "$c -h = $c --help" cmp -s "$tmp/h3" "$tmp/h2"
  check "$c help has a usage line" grep -q "^usage: atlas $c" "$tmp/h1"
  check "$c help fits 79 columns" [ "$(awk '{ if (length($0) > n) n = length($0) } END { print n + 0 }' "$tmp/h1")" -le 79 ]
  unwrap "$tmp/h2" >"$tmp/h1"
  for o in ${opts[$c]}; do
    check "$c --help documents --$o with its default" \
      grep -qE "^  --$o( [A-Z0-9]+)? .*(\[default: [^]]+\]|\(required\))$" "$tmp/h1"
  done
  # No option line lacks a default or (required), help and version aside.
  undocumented=$(grep -E '^  --' "$tmp/h1" | grep -vE '\[default: [^]]+\]$|\(required\)$' |
                 grep -vE '^  --version ' || true)
  check "$c: every option states its default" [ -z "$undocumented" ]
done

# ---- version: the macros of runtime/base/version.h ----
major=$(sed -n 's/^#define ATLAS_VERSION_MAJOR \([0-9]*\)$/\1/p' "$version_h")
minor=$(sed -n 's/^#define ATLAS_VERSION_MINOR \([0-9]*\)$/\1/p' "$version_h")
patch=$(sed -n 's/^#define ATLAS_VERSION_PATCH \([0-9]*\)$/\1/p' "$version_h")
out=$("$atlas" --version); rc=$?
check "--version exits 0" [ "$rc" -eq 0 ]
check "--version prints the header's version ($major.$minor.$patch)" [ "$(head -n 1 <<<"$out")" = "atlas $major.$minor.$patch" ]
# Then the CUDA images built in: every module of the Llama set, each with
# the architectures it holds (compute_90 PTX whether nvcc built it or not).
for m in token prefill paged weight_scan; do
  check "--version lists the $m image with compute_90" grep -qE "^  $m +[0-9]+ KiB  .*compute_90" <<<"$out"
done
check "--version says where the images came from" grep -qE '^CUDA kernels: (compiled by nvcc [0-9.]+ at build time|no nvcc at build time; the committed PTX)' <<<"$out"
check "the version is 0.2.0 or later" [ $((major * 10000 + minor * 100 + patch)) -ge 200 ]

# ---- usage errors: one line naming the problem and the help, exit 2 ----
expect_usage() {  # expect_usage NAME HELP_CMD PATTERN ARGS...
  local name="$1" helpcmd="$2" pattern="$3"; shift 3
  "$atlas" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  check "$name exits 2" [ "$rc" -eq 2 ]
  check "$name: one line" [ "$(wc -l <"$tmp/err")" -eq 1 ]
  check "$name says why" grep -q -- "$pattern" "$tmp/err"
  check "$name points at the help" grep -qF "see \`$helpcmd --help\`" "$tmp/err"
  check "$name prints nothing on stdout" [ ! -s "$tmp/out" ]
}
expect_usage "no command" "atlas" "a command is needed"
expect_usage "unknown command" "atlas" "unknown command 'frobnicate'" frobnicate
expect_usage "unknown top option" "atlas" "unknown option '--frob'" --frob
expect_usage "help for an unknown command" "atlas" "unknown command 'nope'" help nope
expect_usage "unknown option" "atlas run" "unknown option '--frob'" run --model "$tmp/a" --tokens 1 --steps 1 --frob
expect_usage "unknown option=value" "atlas report" "unknown option '--nope=3'" report --model "$tmp/a" --nope=3
expect_usage "missing value" "atlas run" "--steps needs a value" run --model "$tmp/a" --tokens 1 --steps
expect_usage "missing required option" "atlas run" "--tokens IDS is required" run --model "$tmp/a" --steps 1
expect_usage "swap without --to" "atlas swap" "--to DIR2 is required" swap --model "$tmp/a" --tokens 1 --steps 1
expect_usage "bad number" "atlas run" "--steps wants an integer" run --model "$tmp/a" --tokens 1 --steps x
expect_usage "negative number" "atlas report" "--top wants an integer" report --model "$tmp/a" --top -1
expect_usage "bad --min-mb" "atlas report" "--min-mb wants a number" report --model "$tmp/a" --min-mb lots
expect_usage "bad tokens" "atlas run" "comma-separated" run --model "$tmp/a" --tokens 1,x --steps 1
for ids in "1,2," "1,,2" " 1" "+1" "1, 2"; do
  expect_usage "--tokens '$ids'" "atlas run" "comma-separated" run --model "$tmp/a" --tokens "$ids" --steps 1
done
expect_usage "ambiguous abbreviation" "atlas run" "ambiguous option '--t' (could be --tokens, " run --model "$tmp/a" --t 1 --steps 1
expect_usage "help with two commands" "atlas" "help takes one command, not also 'extra'" help run extra
expect_usage "unknown backend" "atlas run" "unknown backend 'tpu'" run --model "$tmp/a" --backend tpu --tokens 1 --steps 1
expect_usage "flag given a value" "atlas demo" "--help takes no value" demo --help=yes
expect_usage "stray argument" "atlas run" "unexpected argument 'extra'" run --model "$tmp/a" --tokens 1 --steps 1 extra
expect_usage "--max-seq below prompt+steps-1" "atlas run" "--max-seq 5 is less than the 6 positions" run --model "$tmp/a" --tokens 1,2,3 --steps 4 --max-seq 5

# ---- bad input: message on stderr naming the file, exit 1 ----
expect_error() {  # expect_error NAME PATTERN ARGS...
  local name="$1" pattern="$2"; shift 2
  "$atlas" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  check "$name exits 1" [ "$rc" -eq 1 ]
  check "$name says why" grep -q "$pattern" "$tmp/err"
}
expect_error "missing dir" "config.json" run --model "$tmp/nope" --tokens 1 --steps 1
expect_error "token past vocab" "outside the vocabulary" run --model "$tmp/a" --backend host --tokens 999 --steps 1
cp -r "$tmp/a" "$tmp/trunc"
truncate -s -7 "$tmp/trunc/model.safetensors"
expect_error "truncated weights" "model.safetensors" run --model "$tmp/trunc" --backend host --tokens 1 --steps 1
expect_error "report of a missing dir" "config.json" report --model "$tmp/nope"
expect_error "unwritable --json" "cannot create" report --model "$tmp/a" --backend host --json "$tmp/no/such/dir/r.json"

# ---- report: --top/--min-mb shape text, JSON and SVG alike; legend; paths ----
# Two sites: the weights' arena and the buffers (KV cache, scratch, prefill
# scratch: one allocation since issue #16).
"$atlas" report --model "$tmp/a" --backend host --top 1 --json "$tmp/r.json" --svg "$tmp/r.svg" >"$tmp/report.txt" 2>&1; rc=$?
check "report exits 0" [ "$rc" -eq 0 ]
"$atlas" report --model "$tmp/a" --backend host >"$tmp/all.txt" 2>&1
check "report names the weight site" grep -q "load_weights" "$tmp/all.txt"
check "report names what the buffers hold" grep -q "kv_cache, scratch, prefill_scratch" "$tmp/all.txt"
check "report says where the JSON went" grep -qxF "wrote the JSON report to $tmp/r.json" "$tmp/report.txt"
check "report says where the SVG went" grep -qxF "wrote the SVG chart to $tmp/r.svg" "$tmp/report.txt"
check "report SVG is an svg" grep -q "<svg" "$tmp/r.svg"
check "report SVG has a legend" grep -q 'id="legend"' "$tmp/r.svg"
check "legend explains the folded row" grep -q "folded together" "$tmp/r.svg"
text_rows=$(grep -cE '^ +[0-9.]+ [kMG]?B across ' "$tmp/report.txt")
text_sites=$(grep -E '^ +[0-9.]+ [kMG]?B across ' "$tmp/report.txt" | grep -vc 'smaller sites')
check "text: --top 1 gives 1 site + 1 folded row" [ "$text_rows" -eq 2 -a "$text_sites" -eq 1 ]
svg_rows=$(grep -c '<rect x="20" y="[0-9]*" width="[0-9]*" height="22"' "$tmp/r.svg")
check "SVG: --top 1 gives 1 bar + 1 folded bar" [ "$svg_rows" -eq 2 ]
json_summary() {  # sites count, other present, live bytes
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["sites"]), "other" in d, d["live_bytes"], sum(s["bytes"] for s in d["sites"]) + d.get("other", {}).get("bytes", 0))' "$1"
}
read -r jsites jother jlive jsum < <(json_summary "$tmp/r.json")
check "JSON: --top 1 gives 1 site" [ "$jsites" = 1 ]
check "JSON: the rest folds into \"other\"" [ "$jother" = True ]
check "JSON: rows sum to live_bytes" [ "$jlive" = "$jsum" ]
text_live=$(sed -n 's/^live: .*(\([0-9]*\) bytes).*/\1/p' "$tmp/report.txt")
check "JSON and text agree on live bytes" [ "$jlive" = "$text_live" ]
# --min-mb 0.15: only sites of 150 kB or more stay (the tiny model's buffers,
# 191 kB; its weights are 91 kB).
"$atlas" report --model "$tmp/a" --backend host --top 0 --min-mb 0.15 --json "$tmp/m.json" --svg "$tmp/m.svg" >"$tmp/m.txt" 2>&1
read -r msites mother _ _ < <(json_summary "$tmp/m.json")
check "JSON: --min-mb keeps only big sites" [ "$msites" = 1 -a "$mother" = True ]
check "SVG: --min-mb keeps only big sites" [ "$(grep -c 'height="22"' "$tmp/m.svg")" -eq 2 ]
check "text: --min-mb keeps only big sites" [ "$(grep -cE '^ +[0-9.]+ [kMG]?B across ' "$tmp/m.txt")" -eq 2 ]
# --kv-budget-mb: the paged KV pool is one more site, and a last line counts
# its blocks (none used or cached by a report).
"$atlas" report --model "$tmp/a" --backend host --top 0 --kv-budget-mb 1 >"$tmp/kv.txt" 2>&1; rc=$?
check "report --kv-budget-mb exits 0" [ "$rc" -eq 0 ]
check "report shows the KV pool's site" grep -q "kv_pool.c" "$tmp/kv.txt"
check "report counts the KV pool's blocks" grep -qE "^KV pool: [0-9]+ blocks of 16 positions .*used 0, cached 0, free [0-9]+; 0 sequences$" "$tmp/kv.txt"
# report and run size the KV cache alike when given the same --max-seq.
"$atlas" swap --model "$tmp/a" --to "$tmp/a" --backend host --tokens 1,2,3 --steps 4 >"$tmp/s.txt" 2>/dev/null
"$atlas" report --model "$tmp/a" --backend host --max-seq 7 >"$tmp/r7.txt" 2>/dev/null
run_live=$(sed -n 's/^live: .*(\([0-9]*\) bytes).*/\1/p' "$tmp/s.txt" | head -1)
rep_live=$(sed -n 's/^live: .*(\([0-9]*\) bytes).*/\1/p' "$tmp/r7.txt")
check "run (3 tokens + 4 steps) and report --max-seq 7 hold the same bytes" [ -n "$run_live" -a "$run_live" = "$rep_live" ]
check "report says how many positions the KV cache holds" grep -q "KV cache for 7 positions" "$tmp/r7.txt"

# ---- swap: success, refused, restored ----
out=$("$atlas" swap --model "$tmp/a" --to "$tmp/b" --backend host --tokens 1,2 --steps 2 2>"$tmp/err"); rc=$?
check "swap exits 0" [ "$rc" -eq 0 ]
check "swap reports twice" [ "$(grep -c '^memory report' <<<"$out")" -eq 2 ]
check "swap says it serves the new model" grep -q "^swap: now serving $tmp/b (side-by-side path" "$tmp/err"
# Refused: a budget of 1 byte cannot hold the new model.
out=$("$atlas" swap --model "$tmp/a" --to "$tmp/b" --backend host --tokens 1,2 --steps 2 --budget-mb 0.000001 2>"$tmp/err"); rc=$?
check "refused swap exits 1" [ "$rc" -eq 1 ]
check "refused swap says so" grep -q "^swap: REFUSED before anything changed" "$tmp/err"
check "refused swap: the old model is still serving" grep -q "The old model $tmp/a is still serving" "$tmp/err"
check "refused swap prints no timing line" bash -c "! grep -qE 'path|[0-9] ms' '$tmp/err'"
check "refused swap prints no 'now serving'" bash -c "! grep -q 'now serving' '$tmp/err'"
needed=$(sed -n 's/.*the new model needs \([0-9]*\) bytes;.*/\1/p' "$tmp/err")
held=$(sed -n 's/.* + \([0-9]*\) held by the old model.*/\1/p' "$tmp/err")
check "refused swap gives the figures" [ -n "$needed" -a -n "$held" ]
# Refused because the new model cannot be read: no made-up figures.
"$atlas" swap --model "$tmp/a" --to "$tmp/nope" --backend host --tokens 1 --steps 1 >/dev/null 2>"$tmp/err"; rc=$?
check "swap to a missing model exits 1" [ "$rc" -eq 1 ]
check "swap to a missing model: refused, old model serving" grep -q "^swap: REFUSED before anything changed: the new model could not be read, or cannot take this prompt (reason below). The old model $tmp/a is still serving.$" "$tmp/err"
check "swap to a missing model names the file" grep -q "$tmp/nope/config.json" "$tmp/err"
check "swap to a missing model prints no figures" bash -c "! grep -q 'needs 0 bytes' '$tmp/err'"
# Restored: a budget that fits only one model at a time (replace path), and
# the new model's first allocation fails.
budget=$(awk -v n="${needed:-0}" -v h="${held:-0}" 'BEGIN { printf "%.6f", (n + h / 2) / 1e6 }')
out=$("$atlas" swap --model "$tmp/a" --to "$tmp/b" --backend host --tokens 1,2 --steps 2 --budget-mb "$budget" --fail-alloc 1 2>"$tmp/err"); rc=$?
check "failed swap exits 1" [ "$rc" -eq 1 ]
check "failed swap says the old model was restored" grep -q "^swap: FAILED part-way; the old model $tmp/a was restored" "$tmp/err"
check "failed swap names the failure" grep -q "injected fault" "$tmp/err"
check "failed swap prints no 'now serving'" bash -c "! grep -q 'now serving' '$tmp/err'"
# Failed beside the old model (no budget): never unloaded.
"$atlas" swap --model "$tmp/a" --to "$tmp/b" --backend host --tokens 1,2 --steps 2 --fail-alloc 1 >/dev/null 2>"$tmp/err"; rc=$?
check "failed side-by-side swap exits 1" [ "$rc" -eq 1 ]
check "failed side-by-side swap: old model never unloaded" grep -q "was never unloaded and is still serving" "$tmp/err"

# ---- bazel run: relative paths are the user's, via BUILD_WORKING_DIRECTORY ----
mkdir -p "$tmp/wd/sub" "$tmp/elsewhere"
cp -r "$tmp/a" "$tmp/wd/m"
cp -r "$tmp/a" "$tmp/wd/m2"
(
  cd "$tmp/elsewhere" || exit 1
  export BUILD_WORKING_DIRECTORY="$tmp/wd"
  "$atlas" run --model m --backend host --tokens 1,2 --steps 2 --logits sub/l.bin >/dev/null 2>&1
  echo "run=$?"
  "$atlas" report --model m --backend host --json r.json --svg sub/r.svg >report.out 2>&1
  echo "report=$?"
  "$atlas" swap --model m --to m2 --backend host --tokens 1 --steps 1 >/dev/null 2>&1
  echo "swap=$?"
) >"$tmp/bwd" 2>&1
check "run --model/--logits relative to BUILD_WORKING_DIRECTORY" grep -qx "run=0" "$tmp/bwd"
check "logits landed in the user's folder" [ -s "$tmp/wd/sub/l.bin" ]
check "report --model relative to BUILD_WORKING_DIRECTORY" grep -qx "report=0" "$tmp/bwd"
check "report --json/--svg landed in the user's folder" [ -s "$tmp/wd/r.json" -a -s "$tmp/wd/sub/r.svg" ]
check "report names the absolute path it wrote" grep -qxF "wrote the JSON report to $tmp/wd/r.json" "$tmp/elsewhere/report.out"
check "nothing landed in the working directory" [ ! -e "$tmp/elsewhere/r.json" -a ! -e "$tmp/elsewhere/sub" ]
check "swap --to relative to BUILD_WORKING_DIRECTORY" grep -qx "swap=0" "$tmp/bwd"
BUILD_WORKING_DIRECTORY="$tmp/wd" "$atlas" run --model "$tmp/a" --backend host --tokens 1 --steps 1 >/dev/null 2>&1
check "absolute paths stay as given" [ $? -eq 0 ]

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
