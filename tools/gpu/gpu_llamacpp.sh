#!/usr/bin/env bash
# llama.cpp as a peer on the GPU machine: built from source there (CMake,
# CUDA), then `llama-batched-bench` on the same random 1B/8B shapes that
# tools/gpu/gpu_batch_run.sh gives bench_batch, converted to GGUF by
# llama.cpp's own convert_hf_to_gguf.py.
#
# Here: the source comes from the npm package node-llama-cpp (its
# llama/gitRelease.bundle is a llama.cpp git bundle):
#   tools/gpu/gpu_llamacpp.sh --pack DIR   # npm pack, git archive -> DIR/llama-src.tar.xz
# There (no network, 16 cores; /tmp survives while the machine stays warm):
#   bash tools/gpu/gpu_llamacpp.sh --build DIR     # -> /tmp/llama.cpp/build/bin
#   bash tools/gpu/gpu_llamacpp.sh --bench DIR [--shapes 1b,8b] [--seqs 1,8,...]
#        [--npp 512] [--ntg 256]
# DIR also holds the Llama 3 tokenizer files (tokenizer.json,
# tokenizer_config.json), which the conversion needs. Logs go to $OUT.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mode="${1:-}"
dir="${2:-}"
[ -n "$mode" ] && [ -n "$dir" ] || {
  echo "usage: gpu_llamacpp.sh --pack|--build|--bench DIR [options]" >&2
  exit 2
}
shift 2
src=/tmp/llama.cpp
out="${OUT:-/tmp/gpu_llamacpp}"

case "$mode" in
--pack)
  mkdir -p "$dir"
  work="$(mktemp -d)"
  (cd "$work" && npm pack --silent node-llama-cpp >/dev/null &&
    tar xzf node-llama-cpp-*.tgz package/llama/gitRelease.bundle package/package.json &&
    git clone -q package/llama/gitRelease.bundle src) || exit 1
  # The vocab test files, docs and media are not needed to build.
  git -C "$work/src" archive --format=tar HEAD -- . ':!docs' ':!models' \
    ':!media' ':!benches' | xz -T2 -6 >"$dir/llama-src.tar.xz" || exit 1
  echo "node-llama-cpp $(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' \
    "$work/package/package.json" | head -1), llama.cpp $(git -C "$work/src" \
    rev-parse --short HEAD)" >"$dir/LLAMACPP_VERSION"
  rm -rf "$work"
  cat "$dir/LLAMACPP_VERSION"
  ;;
--build)
  mkdir -p "$out"
  if [ ! -x "$src/build/bin/llama-batched-bench" ]; then
    mkdir -p "$src" && tar xJf "$dir/llama-src.tar.xz" -C "$src" || exit 1
    cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release \
      -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_NCCL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF \
      -DLLAMA_USE_PREBUILT_UI=OFF >"$out/cmake.log" 2>&1 ||
      { tail -30 "$out/cmake.log"; exit 1; }
  fi
  cmake --build "$src/build" -j "$(nproc)" --target llama-batched-bench \
    llama-server llama-quantize llama-simple llama-cli >"$out/build.log" 2>&1 ||
    { tail -40 "$out/build.log"; exit 1; }
  ls "$src/build/bin"
  ;;
--bench)
  shapes=1b seqs=1,8,32,64,128,256 npp=512 ntg=256
  while [ $# -gt 0 ]; do
    case "$1" in
      --shapes) shapes="$2"; shift 2 ;;
      --seqs) seqs="$2"; shift 2 ;;
      --npp) npp="$2"; shift 2 ;;
      --ntg) ntg="$2"; shift 2 ;;
      *) echo "gpu_llamacpp: unknown argument $1" >&2; exit 2 ;;
    esac
  done
  mkdir -p "$out"
  status=0
  max_seqs="$(tr , '\n' <<<"$seqs" | sort -n | tail -1)"
  IFS=, read -r -a shape_list <<<"$shapes"
  for s in "${shape_list[@]}"; do
    ck="$(cd "$root/tools/gpu" && python3 -c "import gpu_profile_decode as g; print(g.checkpoint('$s'))")" ||
      { echo "could not write the $s checkpoint"; status=1; continue; }
    cp "$dir/tokenizer.json" "$dir/tokenizer_config.json" "$ck/"
    gguf="/tmp/atlas_speed_$s.bf16.gguf"
    if [ ! -f "$gguf" ]; then
      PYTHONPATH="$src/gguf-py" python3 "$src/convert_hf_to_gguf.py" "$ck" \
        --outtype bf16 --outfile "$gguf" >"$out/convert_$s.log" 2>&1 ||
        { echo "convert $s failed"; tail -20 "$out/convert_$s.log"; status=1; continue; }
    fi
    echo "== llama.cpp $s BF16 ($gguf)"
    # Context for every sequence's prompt and output at the largest batch.
    ctx=$(((npp + ntg) * max_seqs + 256))
    timeout 420 "$src/build/bin/llama-batched-bench" -m "$gguf" -c "$ctx" \
      -b 2048 -ub 512 -ngl 99 -fa on -npp "$npp" -ntg "$ntg" -npl "$seqs" \
      >"$out/batched_bench_$s.log" 2>&1 || status=1
    grep -E '^\|' "$out/batched_bench_$s.log" || tail -20 "$out/batched_bench_$s.log"
  done
  exit $status
  ;;
*)
  echo "gpu_llamacpp: unknown mode $mode" >&2
  exit 2
  ;;
esac
