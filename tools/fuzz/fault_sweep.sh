#!/usr/bin/env bash
# ATLAS_FAULT sweep of `atlas swap`: fails the n-th operation of each kind
# (alloc, copy, stream, event, launch, host-alloc, free, collective) for
# every n until the fault no longer fires, on both swap paths (side-by-side:
# both models fit; replace: --budget-mb lets only one fit, so the old model
# is torn down first and a failure restores it from its host snapshot).
#
# `collective` is swept with both models split over two devices
# (--tensor-parallel 2: on the host backend two simulated devices and the
# in-process communicator), where every rank's n-th collective fails; its
# references are clean split runs (the same bits every run) and its budget
# is per device.
#
# `atlas swap` loads its first model without ATLAS_FAULT
# (atlas_testing_open_unfaulted), so each fault lands in the swap: in the new
# model's load or its proving forward step (runtime/model/swap.h), or, past
# the swap, in the new model's generation or its close. The restore ignores
# ATLAS_FAULT.
#
# Every failing point must:
#   - exit 1 with "injected fault" in the message;
#   - close with "leaked: 0 bytes", no backend reclaiming allocations and no
#     "leak:" from a teardown;
#   - inside the swap: say the old model is still serving / was restored, and
#     the old model must serve WITH IDENTICAL LOGITS: the --logits file
#     (round 1 and, after the failed swap, round 2, both the old model) must
#     equal, byte for byte, two clean `atlas run`s of the old model;
#   - past the swap: leave no --logits file and no temporary file.
# The first n that succeeds ends a kind; its logits must equal a clean run
# of the old model followed by a clean run of the new one.
#
# `free` differs: a refused free (ATLAS_FAULT=free:n) keeps its allocation
# live, marked, and the sweep of its backend releases it at destroy; that is
# no leak. So a free point must, besides the checks above, name the refused
# free ("injected fault: free #n") and account for its bytes exactly: the
# sweep that released it says "(B bytes) whose free the device had refused
# (no leak); freed 1 of them" (stderr) or the close says "released after a
# refused free: B bytes in 1 allocation" (stdout), B the bytes of the free
# the message names; "leaked: 0 bytes" still holds (leaked counts only what
# nobody freed). A free point may also succeed (exit 0) if it names the
# refused free, accounts for it and its logits equal the clean runs'. The
# first n whose fault never fires (no "free #n" in the output) ends the kind.
#
#   tools/fuzz/fault_sweep.sh [--short] [--backend host|cuda] [--kinds "K..."] \
#     ATLAS MAKE_CHECKPOINT
#   tools/bazel build //tools/atlas //tools/checkpoint:make_checkpoint &&
#     tools/fuzz/fault_sweep.sh --short bazel-bin/tools/atlas/atlas bazel-bin/tools/checkpoint/make_checkpoint
#
# --short (CI): n = 1..8, then every 7th; a kind stops at n = 120 if it has
# not ended. Default (full): every n. --kinds limits the kinds swept (default:
# all eight). Prints, per path and kind, the points swept and how many were
# inside the swap (for free also how many the command survived); exits 1 if
# any point failed a check or if a kind had no point inside the swap.
set -u
short=0
backend=host
kinds="alloc copy stream event launch host-alloc free collective"
while [ $# -gt 0 ]; do
  case "$1" in
    --short) short=1; shift ;;
    --backend) backend="$2"; shift 2 ;;
    --kinds) kinds="$2"; shift 2 ;;
    *) break ;;
  esac
done
usage="usage: fault_sweep.sh [--short] [--backend B] [--kinds \"K...\"] ATLAS MAKE_CHECKPOINT"
atlas="${1:?$usage}"
make_ck="${2:?$usage}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$make_ck" --out "$work/a" --seed 1 --preset tiny >/dev/null || exit 2
"$make_ck" --out "$work/b" --seed 2 --preset small >/dev/null || exit 2
args=(--backend "$backend" --tokens 1,2,3 --steps 4)

# References: clean runs of each model, and the live bytes of each (of a
# split model, device 0's), whole (suffix "") and split over two devices
# (suffix _tp, for collective).
split=(--tensor-parallel 2)
for sfx in "" _tp; do
  extra=()
  [ "$sfx" = _tp ] && extra=("${split[@]}")
  for m in a b; do
    "$atlas" run --model "$work/$m" "${args[@]}" "${extra[@]}" \
      --logits "$work/ref_$m$sfx" >/dev/null 2>"$work/err" ||
      { cat "$work/err" >&2; exit 2; }
  done
  cat "$work/ref_a$sfx" "$work/ref_a$sfx" >"$work/ref_kept$sfx"  # old model, twice
  cat "$work/ref_a$sfx" "$work/ref_b$sfx" >"$work/ref_swapped$sfx"
  "$atlas" swap --model "$work/a" --to "$work/b" "${args[@]}" "${extra[@]}" \
    >"$work/out" 2>"$work/err" || { cat "$work/err" >&2; exit 2; }
  if [ "$sfx" = _tp ]; then
    live() { sed -n 's/^device 0 of 2 ([a-z]*): \([0-9]*\) bytes live$/\1/p' "$work/out" | sed -n "$1p"; }
  else
    live() { grep -o '([0-9]* bytes)' "$work/out" | tr -dc '0-9\n' | sed -n "$1p"; }
  fi
  live_a=$(live 1)
  live_b=$(live 2)
  # Room for the new model and half the old one: only one fits at a time.
  printf -v "budget_mb$sfx" "%s" \
    "$(awk -v a="$live_a" -v b="$live_b" 'BEGIN { printf "%.6f", (b + a / 2) / 1e6 }')"
done

failures=0
summary=""
fail() {
  failures=$((failures + 1))
  echo "FAIL $1: $2" >&2
  sed 's/^/    /' "$work/err" | head -20 >&2
}

# A refused free's bytes must be accounted for exactly: released by a sweep
# that says they were refused (no leak), or by the close, which says so.
check_refused() {  # check_refused WHERE N
  local where="$1" n="$2" bytes
  bytes=$(grep -o "freeing [0-9]* bytes allocated at [^;]*; they stay live on the ledger until a later free or the sweep releases them: injected fault: free #$n " \
    "$work/err" | head -1 | awk '{print $2}')
  if [ -z "$bytes" ]; then
    fail "$where" "the refused free is not named with its bytes and site"
  elif ! grep -q "($bytes bytes) whose free the device had refused (no leak); freed 1 of them" "$work/err" &&
    ! grep -qx "released after a refused free: $bytes bytes in 1 allocation" "$work/out"; then
    fail "$where" "the $bytes bytes whose free was refused are not said to be released"
  fi
}

sweep() {  # sweep PATH_NAME
  local path="$1"; shift
  for kind in $kinds; do
    local n=1 points=0 in_swap=0 survived=0 ended=0 sfx="" extra=()
    if [ "$kind" = collective ]; then
      sfx=_tp
      extra=("${split[@]}")
    fi
    if [ "$path" = replace ]; then
      local budget_var="budget_mb$sfx"
      extra+=(--budget-mb "${!budget_var}")
    fi
    while :; do
      local where="$path ATLAS_FAULT=$kind:$n"
      rm -f "$work/logits"
      ATLAS_FAULT="$kind:$n" "$atlas" swap --model "$work/a" --to "$work/b" \
        "${args[@]}" --logits "$work/logits" "${extra[@]}" >"$work/out" 2>"$work/err"
      local rc=$?
      if ls "$work"/logits.tmp.* >/dev/null 2>&1; then
        fail "$where" "a temporary --logits file was left behind"
        rm -f "$work"/logits.tmp.*
      fi
      grep -q "^leaked: 0 bytes$" "$work/out" || fail "$where" "no 'leaked: 0 bytes'"
      if grep -q "reclaimed" "$work/err"; then
        fail "$where" "a backend reclaimed leaked allocations"
      fi
      if grep -q "leak:" "$work/err"; then
        fail "$where" "a teardown's sweep found a leak"
      fi
      local fired=0
      if [ "$kind" = free ]; then
        grep -q "injected fault: free #$n " "$work/err" && fired=1
        if [ $fired -eq 1 ]; then
          check_refused "$where" "$n"
        elif grep -q "refused" "$work/out" "$work/err"; then
          fail "$where" "a refusal reported, yet the fault did not fire"
        fi
      fi
      if [ $rc -eq 0 ]; then
        grep -q "now serving.*$path path" "$work/err" ||
          fail "$where" "the swap did not take the $path path"
        cmp -s "$work/logits" "$work/ref_swapped$sfx" ||
          fail "$where" "logits differ from clean runs of the old and new model"
        if [ $fired -eq 0 ]; then
          ended=1
          break  # past the last operation of this kind
        fi
        points=$((points + 1))
        survived=$((survived + 1))
      else
        points=$((points + 1))
        [ $rc -eq 1 ] || fail "$where" "exit $rc (want 1)"
        grep -q "injected fault" "$work/err" || fail "$where" "no 'injected fault' in the message"
        if grep -q "swap failed\|swap refused" "$work/err"; then
          in_swap=$((in_swap + 1))
          grep -qE "still serving|restored and is serving" "$work/err" ||
            fail "$where" "does not say the old model is serving"
          if [ ! -f "$work/logits" ]; then
            fail "$where" "no --logits file from the old model after the failed swap"
          elif ! cmp -s "$work/logits" "$work/ref_kept$sfx"; then
            fail "$where" "the old model's logits after the failed swap differ from a clean run"
          fi
        elif [ -e "$work/logits" ]; then
          fail "$where" "a failed run left its --logits file"
        fi
      fi
      if [ $short -eq 1 ] && [ $n -ge 8 ]; then n=$((n + 7)); else n=$((n + 1)); fi
      if [ $short -eq 1 ] && [ $n -gt 120 ]; then break; fi
      if [ $n -gt 100000 ]; then fail "$where" "$kind never ran out of points"; break; fi
    done
    if [ $in_swap -eq 0 ]; then
      failures=$((failures + 1))
      echo "FAIL $path $kind: no fault point inside the swap" >&2
    fi
    local note=""
    [ $kind = free ] && note=", $survived survived with the refused free named"
    [ $ended -eq 1 ] || note="$note, stopped at n=120 (--short)"
    summary="$summary$path $kind: $points fault points swept ($in_swap inside the swap$note)\n"
  done
}

sweep side-by-side
sweep replace
printf "%b" "$summary"
if [ $failures -ne 0 ]; then
  echo "fault sweep: $failures failures" >&2
  exit 1
fi
echo "fault sweep ($backend): every injected fault exited 1 (or, for a refused free, was named and accounted for); inside the swap the old model kept serving with identical logits; nothing leaked"
