#!/usr/bin/env bash
# tools/bazel on a fresh Debian machine, with shims first on PATH: a
# dpkg-query that knows no package (it exits 1, as the real one does), an
# apt-get that records its arguments, an `id` that says root, and a fake
# Bazel (BAZEL_REAL). Asserts that every package in debian-packages.txt is
# installed (apt-get update first), that Bazel then runs with the arguments
# given, that a failing apt-get step stops the wrapper with a message naming
# the step, and that `test` ends with one line counting CUDA skips.
#
#   tests/tools/bazel_wrapper_test.sh [WRAPPER]   (default: tools/bazel)
#
# The wrapper before 2cd3f30 died silently on dpkg-query's exit status under
# `set -euo pipefail`; this test fails on it.
set -uo pipefail

wrapper="${1:-$(cd "$(dirname "$0")/../.." && pwd)/tools/bazel}"
wrapper="$(cd "$(dirname "$wrapper")" && pwd)/$(basename "$wrapper")"
list="$(dirname "$wrapper")/debian-packages.txt"
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/bazel_wrapper.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {  # check NAME COMMAND...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}

[ -x "$wrapper" ] || { echo "FAIL no executable wrapper at $wrapper"; exit 1; }
[ -r "$list" ] || { echo "FAIL no package list at $list"; exit 1; }
# The packages, read here independently of the wrapper.
mapfile -t packages < <(sed 's/#.*//' "$list" | tr -s ' \t' '\n\n' | grep -v '^$')
[ "${#packages[@]}" -gt 0 ] || { echo "FAIL empty package list"; exit 1; }

shims="$tmp/shims"
mkdir -p "$shims"
export SHIM_SEQ="$tmp/seq"  # one line per shim call, in order

cat >"$shims/dpkg-query" <<'SHIM'
#!/bin/bash
# SHIM_DPKG=installed: every package is installed (the -f format is filled
# in for each, as dpkg-query does); else no package is known and it exits 1.
echo "dpkg-query $*" >>"$SHIM_SEQ"
fmt='${Status}'
pkgs=()
for a; do
  case "$a" in
    -f=*|--showformat=*) fmt="${a#*=}" ;;
    -*) ;;
    *) pkgs+=("$a") ;;
  esac
done
if [ "${SHIM_DPKG:-missing}" = installed ]; then
  for p in "${pkgs[@]}"; do
    out="${fmt//'${Package}'/$p}"
    out="${out//'${Status}'/install ok installed}"
    printf '%b' "$out"
  done
  exit 0
fi
for p in "${pkgs[@]}"; do echo "dpkg-query: no packages found matching $p" >&2; done
exit 1
SHIM
cat >"$shims/apt-get" <<'SHIM'
#!/bin/sh
# Records its arguments; SHIM_APT_FAIL=update|install makes that step fail.
echo "apt-get $*" >>"$SHIM_SEQ"
case "$1" in "${SHIM_APT_FAIL:-none}") echo "E: shim $1 failed" >&2; exit 100 ;; esac
exit 0
SHIM
cat >"$shims/id" <<'SHIM'
#!/bin/sh
if [ "${1:-}" = -u ]; then echo 0; exit 0; fi
exec /usr/bin/id "$@"
SHIM
cat >"$shims/bazel" <<'SHIM'
#!/bin/sh
# Records its arguments; for `test`, writes a build event file naming one
# test log with two CUDA skips and one with none.
echo "bazel $*" >>"$SHIM_SEQ"
for a; do
  case "$a" in
    --build_event_json_file=*)
      f="${a#--build_event_json_file=}"
      d="$(dirname "$SHIM_SEQ")"
      printf 'Skipped\nCUDA skip: CUDA unavailable: no driver here\n' >"$d/a.log"
      printf 'Skipped\nCUDA skip: CUDA unavailable: no driver here\n' >>"$d/a.log"
      printf '[  PASSED  ] 3 tests.\n' >"$d/b.log"
      for l in a b; do
        printf '{"id":{"testResult":{"label":"//x:%s"}},"testResult":{"testActionOutput":[{"name":"test.log","uri":"file://%s/%s.log"}]}}\n' "$l" "$d" "$l" >>"$f"
      done ;;
  esac
done
exit "${SHIM_BAZEL_RC:-0}"
SHIM
chmod +x "$shims"/*

run_wrapper() {  # run_wrapper ARGS... (env SHIM_* as set by the caller)
  : >"$SHIM_SEQ"
  env PATH="$shims:$PATH" BAZEL_REAL="$shims/bazel" "$wrapper" "$@" \
    >"$tmp/out" 2>"$tmp/err"
}

# 1. Nothing installed: apt-get update, apt-get install of every package,
#    then Bazel with the arguments given.
run_wrapper build //foo:bar --config=x
rc=$?
check "fresh machine: exits 0" [ "$rc" -eq 0 ]
check "apt-get ran exactly twice" [ "$(grep -c '^apt-get ' "$SHIM_SEQ")" -eq 2 ]
check "apt-get update ran first" grep -q '^apt-get update' <(grep '^apt-get ' "$SHIM_SEQ" | head -1)
install_line=$(grep '^apt-get install' "$SHIM_SEQ" || true)
check "apt-get install ran" [ -n "$install_line" ]
for p in "${packages[@]}"; do
  check "installs $p" grep -qx -- "$p" < <(tr ' ' '\n' <<<"$install_line")
done
check "bazel ran last, with the arguments" [ "$(tail -1 "$SHIM_SEQ")" = "bazel build //foo:bar --config=x" ]
check "order: update, install, bazel" \
  [ "$(grep -v '^dpkg-query ' "$SHIM_SEQ" | cut -d' ' -f1,2 | tr '\n' ,)" = "apt-get update,apt-get install,bazel build," ]
check "says what it installs" grep -q "installing missing Debian packages" "$tmp/err"

# 2. Everything installed: no apt-get, Bazel runs.
SHIM_DPKG=installed run_wrapper version
rc=$?
check "all installed: exits 0" [ "$rc" -eq 0 ]
check "all installed: no apt-get" [ "$(grep -c '^apt-get ' "$SHIM_SEQ")" -eq 0 ]
check "all installed: bazel ran" [ "$(tail -1 "$SHIM_SEQ")" = "bazel version" ]

# 3. A failing step stops the wrapper, names the step, and Bazel never runs.
SHIM_APT_FAIL=install run_wrapper build //foo:bar
rc=$?
check "failing install: exits non-zero" [ "$rc" -ne 0 ]
check "failing install: names the step" grep -q "step 'apt-get install" "$tmp/err"
check "failing install: bazel did not run" [ "$(grep -c '^bazel ' "$SHIM_SEQ")" -eq 0 ]
SHIM_APT_FAIL=update run_wrapper build //foo:bar
rc=$?
check "failing update: exits non-zero" [ "$rc" -ne 0 ]
check "failing update: names the step" grep -q "step 'apt-get update' failed" "$tmp/err"
check "failing update: no install tried" [ "$(grep -c '^apt-get install' "$SHIM_SEQ")" -eq 0 ]
check "failing update: bazel did not run" [ "$(grep -c '^bazel ' "$SHIM_SEQ")" -eq 0 ]

# 4. `test`: Bazel's exit status comes back, and one line counts the CUDA
#    cases that skipped, with the reason.
SHIM_DPKG=installed SHIM_BAZEL_RC=3 run_wrapper test //tests/... --config=asan
rc=$?
check "test: Bazel's exit status" [ "$rc" -eq 3 ]
check "test: user arguments kept in order" grep -q '^bazel test --build_event_json_file=[^ ]* //tests/\.\.\. --config=asan$' "$SHIM_SEQ"
check "test: one CUDA summary line" [ "$(grep -c '^CUDA: ' "$tmp/err")" -eq 1 ]
check "test: counts 2 skips and says why" grep -q '^CUDA: 2 test cases SKIPPED.*: no driver here' "$tmp/err"
SHIM_DPKG=installed ATLAS_REQUIRE_GPU=1 run_wrapper test //x
check "test: ATLAS_REQUIRE_GPU reaches the tests" grep -q -- '--test_env=ATLAS_REQUIRE_GPU=1' "$SHIM_SEQ"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
