#!/usr/bin/env bash
# Differential fuzz of the tokenizer against Hugging Face tokenizers: random
# texts (tests/text/fuzz_corpus.py) encoded and decoded by every model of
# reference_test (the five real tokenizer.json files and synthetic/), with
# the reference made by the npm `tokenizers@0.23.2` bindings (the Rust
# library of the committed expected.json). Needs node and npm; not part of
# CI (tests/text/README.md says what it found).
#
#   tools/fuzz/fuzz_tokenizer.sh [--ids|--long] [--seeds A-B] [--count N]   # default 1-4, 5000
#
# Odd seeds draw mixed text, even seeds dense post-Unicode-9.0 text; with
# --long every seed draws long text (runs, long words; fuzz_corpus.py) and the
# count defaults to 500 (a reference of about 140 MB; 5,000 long texts make
# 1.4 GB, which reference_test loads whole in about 8 GB of memory). With
# --ids: random id sequences (tests/text/fuzz_ids.py) decoded with and
# without special tokens, checked by decode_ids_test (the Node bindings have
# no DecodeStream; run.sh of tools/gpu/tokenizer_h200_stage.sh fuzzes streams).
# Exit 0 when every case of every seed matches, 1 when one differs (its test
# log is kept and named), 2 on a usage error.
set -euo pipefail
cd "$(dirname "$0")/../.."
seeds=1-4
count=5000
ids=false
long=false
rest=()
for a in "$@"; do
  case "$a" in
    --ids) ids=true ;;
    --long) long=true ;;
    *) rest+=("$a") ;;
  esac
done
set -- "${rest[@]}"
$long && count=500
source tools/fuzz/fuzz_args.sh

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
oracle=${ATLAS_FUZZ_ORACLE:-$HOME/.cache/atlas/tokenizers-node}
if [ ! -d "$oracle/node_modules/tokenizers" ]; then
  mkdir -p "$oracle"
  npm install --silent --prefix "$oracle" tokenizers@0.23.2 >/dev/null
fi
tools/bazel build //tests/text:reference_test //tests/text:decode_ids_test >/dev/null 2>&1
ext="$(tools/bazel info output_base 2>/dev/null)/external"
ref=() test_args=()
for m in llama3 qwen3 llama2 llama3_1 qwen2_5; do
  f="$ext/tokenizer_$m/pkg/models/tokenizer.json"
  ref+=("$m=$f")
  test_args+=("--model=$m" "$f")
done
for f in tests/text/synthetic/*.json; do
  ref+=("$(basename "$f" .json)=$f")
  test_args+=("$(basename "$f" .json)=$f")
done

status=0
if $ids; then
  printf '%-6s %9s %8s\n' seed sequences differ
  for ((s = ${seeds%-*}; s <= ${seeds#*-}; s++)); do
    python3 tests/text/fuzz_ids.py --seed "$s" --count "$count" --out "$work/ids.json" "${ref[@]}"
    NODE_PATH="$oracle/node_modules" node tests/text/decode_ids_node.js \
      --ids "$work/ids.json" --out "$work/expected.json" "${ref[@]}" >/dev/null
    log="$work/ids$s.log"
    bazel-bin/tests/text/decode_ids_test --gtest_filter='DecodeIds.EveryModelMatches' \
      --expected "$work/expected.json" "${test_args[@]}" >"$log" 2>&1 || true
    differ=$({ grep -a 'decode_ids_test.cc:[0-9]*: cases\[' "$log" || true; } | sort -u | wc -l)
    if ! grep -q '^\[  PASSED  \] 1 test' "$log"; then
      status=1
      keep="/tmp/fuzz_tokenizer_ids$s"
      mkdir -p "$keep" && cp "$log" "$work/ids.json" "$work/expected.json" "$keep/"
      differ="$differ (see $keep)"
    fi
    printf '%-6s %9s %8s\n' "$s" "$((count * ${#ref[@]}))" "$differ"
  done
  exit "$status"
fi
printf '%-6s %-8s %6s %8s\n' seed kind texts differ
for ((s = ${seeds%-*}; s <= ${seeds#*-}; s++)); do
  kind=mixed
  [ $((s % 2)) -eq 0 ] && kind=unicode
  $long && kind=long
  python3 tests/text/fuzz_corpus.py --seed "$s" --count "$count" --kind "$kind" \
    --out "$work/corpus.json"
  NODE_PATH="$oracle/node_modules" node tests/text/gen_reference_node.js \
    --corpus "$work/corpus.json" --out "$work/expected.json" "${ref[@]}" >/dev/null
  log="$work/seed$s.log"
  bazel-bin/tests/text/reference_test --gtest_filter='Reference.EveryModelMatches' \
    --expected "$work/expected.json" --corpus "$work/corpus.json" "${test_args[@]}" \
    >"$log" 2>&1 || true
  differ=$({ grep -a 'reference_test.cc:[0-9]*: corpus\[' "$log" || true; } | sort -u | wc -l)
  if ! grep -q '^\[  PASSED  \] 1 test' "$log"; then
    status=1
    keep="/tmp/fuzz_tokenizer_seed$s"
    mkdir -p "$keep" && cp "$log" "$work/corpus.json" "$work/expected.json" "$keep/"
    differ="$differ (see $keep)"
  fi
  printf '%-6s %-8s %6s %8s\n' "$s" "$kind" "$count" "$differ"
done
exit "$status"
