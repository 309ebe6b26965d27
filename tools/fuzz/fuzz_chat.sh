#!/usr/bin/env bash
# Differential fuzz of the chat-template engine against Jinja2 configured as
# transformers configures it: random filters and tests over random values
# (tests/chat/fuzz_snippets.py) through chat_template_test's snippet check.
# Needs python3 with jinja2; not part of CI.
#
#   tools/fuzz/fuzz_chat.sh [--conversations] [--seeds A-B] [--count N]
#                                          # default 1-4, 4000 (snippets)
#
# --conversations: random conversations (tests/chat/fuzz_conversations.py)
# through every real template of reference.json instead, N a template.
#
# Prints, a seed a row, how many snippets rendered differently, rendered where
# Jinja raised, or crashed (any other failure of the test counts as a crash;
# each fails the run: exit 1), and how many Atlas refused by name where Jinja
# rendered (its limits: printed, not failures).
set -euo pipefail
cd "$(dirname "$0")/../.."
seeds=1-4
count=4000
conversations=false
rest=()
for a in "$@"; do
  if [ "$a" = --conversations ]; then conversations=true; else rest+=("$a"); fi
done
set -- "${rest[@]}"
source tools/fuzz/fuzz_args.sh
python3 -c 'import jinja2' 2>/dev/null || { echo "fuzz_chat: python3 has no jinja2" >&2; exit 1; }

tools/bazel build //tests/chat:chat_template_test >/dev/null 2>&1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tests/chat"
status=0
refusals="$work/refusals.txt"
: >"$refusals"
if $conversations; then
  printf '%-6s %13s %8s %8s\n' seed conversations failed crashed
  for ((s = ${seeds%-*}; s <= ${seeds#*-}; s++)); do
    python3 tests/chat/fuzz_conversations.py --seed "$s" --count "$count" \
      --out "$work/tests/chat/reference.json"
    log="$work/conv$s.log"
    rc=0
    (cd "$work" && "$OLDPWD/bazel-bin/tests/chat/chat_template_test" \
      --gtest_filter='ChatTemplate.RealTemplatesRenderExactlyAsTransformers') >"$log" 2>&1 || rc=$?
    crashed=0
    [ "$rc" -gt 1 ] && crashed=1
    failed=$(grep -c 'Failure' "$log" || true)
    if [ "$crashed$failed" != "00" ]; then
      status=1
      keep="/tmp/fuzz_chat_conv$s"
      mkdir -p "$keep" && cp "$log" "$work/tests/chat/reference.json" "$keep/"
    fi
    n=$(python3 -c 'import json,sys; print(sum(len(t["cases"]) for t in json.load(open(sys.argv[1]))["templates"]))' \
      "$work/tests/chat/reference.json")
    printf '%-6s %13s %8s %8s\n' "$s" "$n" "$failed" "$crashed"
  done
  [ "$status" -eq 0 ] || echo "fuzz_chat: failures kept in /tmp/fuzz_chat_conv*" >&2
  exit "$status"
fi
printf '%-6s %8s %8s %14s %8s %8s\n' seed snippets differ rendered-raise crashed refused
for ((s = ${seeds%-*}; s <= ${seeds#*-}; s++)); do
  python3 tests/chat/fuzz_snippets.py --seed "$s" --count "$count" \
    --out "$work/tests/chat/reference.json"
  log="$work/seed$s.log"
  rc=0
  (cd "$work" && "$OLDPWD/bazel-bin/tests/chat/chat_template_test" \
    --gtest_filter='ChatTemplate.EngineSnippetsMatchJinja') >"$log" 2>&1 || rc=$?
  crashed=0
  [ "$rc" -gt 1 ] && crashed=1
  differ=$(grep -c 'std::string(out, len)' "$log" || true)
  raised=$(grep -c 'rendered where Jinja raised' "$log" || true)
  refused=$(grep -c '^chat template line' "$log" || true)
  # Any other failure (the reference not loading, say) fails the seed too.
  failures=$(grep -c ': Failure$' "$log" || true)
  [ "$failures" -gt $((differ + raised + refused)) ] && crashed=1
  grep '^chat template line' "$log" | sed 's/^chat template line [0-9]* column [0-9]*: //' \
    >>"$refusals" || true
  if [ "$crashed$differ$raised" != "000" ]; then
    status=1
    keep="/tmp/fuzz_chat_seed$s"
    mkdir -p "$keep" && cp "$log" "$work/tests/chat/reference.json" "$keep/"
  fi
  printf '%-6s %8s %8s %14s %8s %8s\n' "$s" "$count" "$differ" "$raised" "$crashed" "$refused"
done
if [ -s "$refusals" ]; then
  echo "refused by name (Atlas's limits), by message:"
  sed -E "s/'[^']*'/'…'/g; s/-?[0-9][0-9.e+-]*/N/g" "$refusals" | sort | uniq -c | sort -rn
fi
[ "$status" -eq 0 ] || echo "fuzz_chat: failures kept in /tmp/fuzz_chat_seed*" >&2
exit "$status"
