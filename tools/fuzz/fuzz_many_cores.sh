#!/usr/bin/env bash
# Runs the tokenizer.json and chat template fuzzers (built by fuzz.sh's flags
# into DIR, statically: tools/fuzz/stage_fuzzers.sh) on every core of a
# machine without Bazel, each with -timeout and -rss_limit_mb, and prints the
# executions each reached and what it found.
#   tools/fuzz/fuzz_many_cores.sh DIR OUT [CHAT_SECONDS] [TOKENIZER_SECONDS]
# OUT receives summary.txt and logs.tgz (job logs, crash inputs).
set -uo pipefail
dir=$(cd "$1" && pwd)
out=$2
chat_s=${3:-110}
tok_s=${4:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
cores=$(nproc)
mkdir -p "$out"
work=$(mktemp -d)
summary="$out/summary.txt"
: >"$summary"
for t in chat_template:"$chat_s" tokenizer:"$tok_s"; do
  name=${t%%:*}
  secs=${t#*:}
  mkdir -p "$work/$name/corpus" "$work/$name/crashes"
  (cd "$work/$name" && ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=16 \
    "$dir/${name}_fuzz" -jobs="$cores" -workers="$cores" \
    -max_total_time="$secs" -max_len=16384 -timeout=10 -rss_limit_mb=512 \
    -print_final_stats=1 -dict="$root/tests/fuzz/$name.dict" \
    -artifact_prefix="$work/$name/crashes/" corpus \
    "$root/tests/fuzz/corpus/$name" >/dev/null 2>&1)
  runs=$(cat "$work/$name"/fuzz-*.log 2>/dev/null |
    sed -n 's/^stat::number_of_executed_units: //p' | awk '{s += $1} END {print s + 0}')
  crashes=$(ls "$work/$name/crashes" | wc -l)
  echo "$name: $cores jobs, $secs s: $runs executions, $crashes findings" \
    "($(ls "$work/$name/crashes" | tr '\n' ' '))" | tee -a "$summary"
  grep -h -E "^==[0-9]+==ERROR|SUMMARY|runtime error|ERROR: libFuzzer" \
    "$work/$name"/fuzz-*.log | sort | uniq -c | head -20 | tee -a "$summary"
done
tar -czf "$out/logs.tgz" -C "$work" . 2>/dev/null
