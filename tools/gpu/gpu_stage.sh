#!/usr/bin/env bash
# Builds the GPU test and benchmark binaries here (with Bazel) and stages them
# with a runner in one folder that can be carried to a GPU machine without
# Bazel and run there:
#
#   tools/gpu/gpu_stage.sh [DIR]          # default DIR: .gpu (in .git/info/exclude)
#   (copy DIR to the GPU machine)
#   bash DIR/run_all.sh               # runs every test binary, then the bench
#
# The binaries dlopen libcuda.so.1 at run time and link everything but libc and
# libstdc++ statically, so they need no CUDA toolkit on either machine; a
# binary that needs any other shared library is refused (check_static.sh).
# BAZEL overrides the Bazel command (default: bazel); GPU_STAGE_TARGETS adds
# more test targets and GPU_STAGE_BINS more programs for bin/ (space-separated
# labels; run_all.sh runs only the tests and the bench).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
dir="${1:-.gpu}"
bazel_cmd="${BAZEL:-bazel}"

tests=(//tests/cuda:cuda_contract_test //tests/cuda:cuda_backend_test
  //tests/cuda:fatbin_embed_test //tests/cuda:cuda_host_test
  //tests/cuda:llama_kernels_cuda_test //tests/cuda:llama_cuda_test
  //tests/cuda:weight_scan_cuda_test //tests/cuda:prefill_kernels_cuda_test
  //tests/cuda:cuda_matmul_test)
if [ -n "${GPU_STAGE_TARGETS:-}" ]; then
  read -r -a extra <<<"$GPU_STAGE_TARGETS"
  tests+=("${extra[@]}")
fi
bins=(//tools/bench:bench)
if [ -n "${GPU_STAGE_BINS:-}" ]; then
  read -r -a extra_bins <<<"$GPU_STAGE_BINS"
  bins+=("${extra_bins[@]}")
fi

echo "gpu_stage: building ${tests[*]} ${bins[*]}" >&2
# --symlink_prefix=/: leave the bazel-bin links of everyday (fastbuild) builds alone.
$bazel_cmd build -c opt --symlink_prefix=/ "${tests[@]}" "${bins[@]}" >&2

if [ "$dir" = ".gpu" ] && ! grep -qx '/.gpu/' .git/info/exclude 2>/dev/null; then
  mkdir -p .git/info
  echo '/.gpu/' >>.git/info/exclude
fi
rm -rf "$dir"
mkdir -p "$dir/tests" "$dir/bin"
bin_root="$($bazel_cmd info -c opt bazel-bin 2>/dev/null)"
# //pkg:name -> pkg/name; //pkg/name (a short label) -> pkg/name/name.
label_path() {
  local p="${1#//}"
  if [[ "$p" == *:* ]]; then echo "${p/://}"; else echo "$p/${p##*/}"; fi
}
for t in "${tests[@]}"; do
  install -m 0755 "$bin_root/$(label_path "$t")" "$dir/tests/"
done
for b in "${bins[@]}"; do
  install -m 0755 "$bin_root/$(label_path "$b")" "$dir/bin/"
done
# A binary that needs a Bazel-built shared library would not start there:
# refuse to stage it (GPU_STAGE_ALLOW_DYNAMIC=1 stages it with a warning).
if ! problems=$(tools/gpu/check_static.sh "$dir"/tests/* "$dir"/bin/*); then
  printf '%s\n' "$problems" >&2
  if [ "${GPU_STAGE_ALLOW_DYNAMIC:-0}" = 1 ]; then
    echo "gpu_stage: WARNING: staged anyway (GPU_STAGE_ALLOW_DYNAMIC=1); those binaries will not start on the GPU machine" >&2
  else
    echo "gpu_stage: refusing to stage binaries that would not start on a machine without Bazel; add linkstatic = True to their targets" >&2
    rm -rf "$dir"
    exit 1
  fi
fi
git rev-parse --short HEAD >"$dir/COMMIT" 2>/dev/null || true
install -m 0755 tools/gpu/gpu_run_all.sh "$dir/run_all.sh"
echo "gpu_stage: staged in $dir ($(du -sh "$dir" | cut -f1)):" >&2
find "$dir" -type f | sort >&2
