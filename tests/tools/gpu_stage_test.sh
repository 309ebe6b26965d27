#!/usr/bin/env bash
# tools/gpu/gpu_stage.sh with a fake Bazel: it stages self-contained
# binaries, refuses one that needs a Bazel-built shared library (it would not
# start on the GPU machine), and stages it with a warning only when asked.
#   gpu_stage_test.sh STAGE_SCRIPT STATIC_FIXTURE DYNAMIC_FIXTURE
set -uo pipefail
stage="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
static="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
dynamic="$(cd "$(dirname "$3")" && pwd)/$(basename "$3")"
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/gpu_stage.XXXXXX")"
fails=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}

# The fake Bazel "builds" each label by copying a fixture to where
# bazel-bin would hold it: the dynamic one for FAKE_DYNAMIC_LABEL.
cat >"$tmp/bazel" <<'FAKE'
#!/usr/bin/env bash
cmd="$1"; shift
case "$cmd" in
  build)
    for a in "$@"; do
      case "$a" in
        //*)
          p="${a#//}"
          if [[ "$p" == *:* ]]; then p="${p/://}"; else p="$p/${p##*/}"; fi
          mkdir -p "$FAKE_ROOT/$(dirname "$p")"
          src="$FAKE_STATIC"
          [ "$a" = "${FAKE_DYNAMIC_LABEL:-}" ] && src="$FAKE_DYNAMIC"
          cp "$src" "$FAKE_ROOT/$p" ;;
      esac
    done ;;
  info) echo "$FAKE_ROOT" ;;
  *) exit 2 ;;
esac
FAKE
chmod +x "$tmp/bazel"
export BAZEL="$tmp/bazel" FAKE_ROOT="$tmp/bin" FAKE_STATIC="$static" FAKE_DYNAMIC="$dynamic"

"$stage" "$tmp/ok" >"$tmp/ok.out" 2>&1; rc=$?
check "self-contained: exits 0" [ "$rc" -eq 0 ]
check "self-contained: the default tests are staged" [ -x "$tmp/ok/tests/cuda_backend_test" ]
check "self-contained: the bench is staged" [ -x "$tmp/ok/bin/bench" ]
check "self-contained: the runner is staged" [ -x "$tmp/ok/run_all.sh" ]

export FAKE_DYNAMIC_LABEL=//tests/cuda:dynamic_test
GPU_STAGE_TARGETS=//tests/cuda:dynamic_test "$stage" "$tmp/dyn" >"$tmp/dyn.out" 2>&1; rc=$?
check "dynamic: exits 1" [ "$rc" -eq 1 ]
check "dynamic: names the binary and the library" \
  grep -q 'tests/dynamic_test: needs lib[^ ]*fixture[^ ]*\.so (link it statically: linkstatic = True)' "$tmp/dyn.out"
check "dynamic: says it refused" grep -q 'gpu_stage: refusing to stage' "$tmp/dyn.out"
check "dynamic: leaves no half-staged folder" [ ! -e "$tmp/dyn" ]
check "dynamic: the static ones are not named" bash -c "! grep -q 'cuda_backend_test: needs' '$tmp/dyn.out'"

GPU_STAGE_ALLOW_DYNAMIC=1 GPU_STAGE_TARGETS=//tests/cuda:dynamic_test \
  "$stage" "$tmp/allowed" >"$tmp/allowed.out" 2>&1; rc=$?
check "allowed: exits 0" [ "$rc" -eq 0 ]
check "allowed: warns" grep -q 'gpu_stage: WARNING: staged anyway' "$tmp/allowed.out"
check "allowed: staged" [ -x "$tmp/allowed/tests/dynamic_test" ]

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
