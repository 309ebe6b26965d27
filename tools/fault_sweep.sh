#!/usr/bin/env bash
# ATLAS_FAULT sweep: drives `atlas swap` through every fault point of every
# kind (alloc, copy, stream, event, launch, host-alloc) and checks that each
# failure exits 1 with a clear message, that the old model is still serving
# (never unloaded, or restored), and that no backend had to reclaim anything
# at destroy (the CLI's teardown sweeps report leaks). A kind is done at the
# first n where the swap succeeds (n is past its last operation).
#
#   tools/fault_sweep.sh [--short] [--backend host|cuda] ATLAS MAKE_CHECKPOINT
#   tools/bazel build //tools:atlas //tools:make_checkpoint &&
#     tools/fault_sweep.sh --short bazel-bin/tools/atlas bazel-bin/tools/make_checkpoint
#
# --short (CI): n = 1..8 then every 5th up to 200. Default (full): every n.
set -u
short=0
backend=host
while [ $# -gt 0 ]; do
  case "$1" in
    --short) short=1; shift ;;
    --backend) backend="$2"; shift 2 ;;
    *) break ;;
  esac
done
atlas="${1:?usage: fault_sweep.sh [--short] ATLAS MAKE_CHECKPOINT}"
make_ck="${2:?usage: fault_sweep.sh [--short] ATLAS MAKE_CHECKPOINT}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$make_ck" --out "$work/a" --seed 1 --preset tiny >/dev/null || exit 2
"$make_ck" --out "$work/b" --seed 2 --preset small >/dev/null || exit 2

failures=0
summary=""
for kind in alloc copy stream event launch host-alloc; do
  n=1
  points=0
  in_swap=0
  while :; do
    out="$work/out" err="$work/err"
    ATLAS_FAULT="$kind:$n" "$atlas" swap --model "$work/a" --to "$work/b" \
      --backend "$backend" --tokens 1,2,3 --steps 4 >"$out" 2>"$err"
    rc=$?
    if [ $rc -eq 0 ]; then
      break  # past the last operation of this kind
    fi
    points=$((points + 1))
    bad=""
    [ $rc -eq 1 ] || bad="exit $rc (want 1)"
    grep -q "injected fault" "$err" || bad="$bad; no 'injected fault' in the message"
    # A fault inside the swap must leave the old model serving; one after
    # it (the new model generating) is an ordinary failure of the run.
    if grep -q "swap failed\|swap refused" "$err"; then
      grep -qE "still serving|restored and is serving" "$err" ||
        bad="$bad; does not say the old model is serving"
      in_swap=$((in_swap + 1))
    fi
    if grep -q "reclaimed" "$err"; then bad="$bad; a backend reclaimed leaked allocations"; fi
    if [ -n "$bad" ]; then
      failures=$((failures + 1))
      echo "FAIL ATLAS_FAULT=$kind:$n: $bad" >&2
      sed 's/^/    /' "$err" | head -20 >&2
    fi
    if [ $short -eq 1 ] && [ $n -ge 8 ]; then n=$((n + 5)); else n=$((n + 1)); fi
    if [ $short -eq 1 ] && [ $n -gt 200 ]; then break; fi
    if [ $n -gt 100000 ]; then echo "FAIL: $kind never ran out of points" >&2; failures=$((failures + 1)); break; fi
  done
  summary="$summary$kind: $points fault points swept ($in_swap inside the swap)\n"
done
printf "%b" "$summary"
if [ $failures -ne 0 ]; then
  echo "fault sweep: $failures failures" >&2
  exit 1
fi
echo "fault sweep: every injected fault exited 1 with the old model serving, nothing leaked"
