#!/usr/bin/env bash
# GGUF parity with llama.cpp on the GPU machine: a random-weight checkpoint
# (make_checkpoint, the Llama 3 tokenizer) converted by llama.cpp's own
# convert_hf_to_gguf.py (BF16) and quantized by its llama-quantize (Q8_0,
# Q4_K_M, ...); then, for each file, the greedy ids of `atlas run --model
# FILE.gguf` and of llama-server (temperature 0, top_k 1) over the same
# prompt ids. Where the ids diverge, the first divergence is shown with
# Atlas's two best logits there (from --logits) and llama.cpp's top
# log-probabilities, so a near tie can be told from a bug.
#
# llama.cpp is built there first by tools/gpu/gpu_llamacpp.sh (--pack here,
# --build there: /tmp/llama.cpp/build/bin). Then:
# Here (Bazel; ATLAS_CUDA_ARCHS=90 keeps the fatbins, and the folder, small):
#   ATLAS_CUDA_ARCHS=90 tools/gpu/gpu_gguf_parity.sh --stage   # -> .gpu_gguf/
# There (no Bazel, no network):
#   bash tools/gpu/gpu_gguf_parity.sh [--shape 1b|8b] [--types bf16,q8_0,q4_k_m]
#        [--steps 64] [--backend cuda]
# Logs, the GGUF files' ids and summary.txt go to $OUT (else
# /tmp/gpu_gguf). Exit 0 when every type's ids agree, 1 when one diverged
# (see the near-tie lines) or a step failed.
#
# LLAMA_CPP_SRC (default /tmp/llama.cpp) is where llama.cpp was unpacked and
# built; ATLAS, MAKE_CHECKPOINT, TOKENIZER_DIR override the staged files.
# Q4_K and Q6_K need every matrix's columns in whole 256-element blocks:
# llama-quantize falls back to Q5_0/Q5_1 for other shapes, which Atlas
# refuses by name. The 1b and 8b shapes qualify.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${GPU_GGUF_DIR:-$root/.gpu_gguf}"

stage() {
  local bazel="${BAZEL:-$root/tools/bazel}" mode="${STAGE_MODE:-opt}"
  (cd "$root" && "$bazel" build -c "$mode" --symlink_prefix=/ //tools/atlas \
    //tools/checkpoint:make_checkpoint @tokenizer_llama3//:files >&2) || return 1
  local bin ext lib
  bin="$(cd "$root" && "$bazel" info -c "$mode" bazel-bin 2>/dev/null)"
  ext="$(cd "$root" && "$bazel" info output_base 2>/dev/null)/external"
  rm -rf "$dir" && mkdir -p "$dir/lib" "$dir/tokenizer" || return 1
  install -m 0755 "$bin/tools/atlas/atlas" \
    "$bin/tools/checkpoint/make_checkpoint" "$dir/" || return 1
  # The 9 MB tokenizer.json travels compressed (the carried folder's limit).
  xz -T2 -c "$ext/tokenizer_llama3/pkg/models/tokenizer.json" \
    >"$dir/tokenizer/tokenizer.json.xz" || return 1
  cp "$ext/tokenizer_llama3/pkg/models/tokenizer_config.json" \
    "$dir/tokenizer/" || return 1
  "$root/tools/gpu/check_static.sh" "$dir/make_checkpoint" || return 1
  # What check_static.sh refuses in atlas (GnuTLS and its chain, through
  # libmicrohttpd) goes along.
  for lib in $(ldd "$dir/atlas" | awk '$3 ~ /^\// {print $3}'); do
    case "$(basename "$lib")" in
      libc.so* | libm.so* | libstdc++* | libgcc_s* | libpthread* | libdl.so* | \
        librt.so* | ld-linux*) ;;
      *) cp -L "$lib" "$dir/lib/" || return 1 ;;
    esac
  done
  git -C "$root" rev-parse --short HEAD >"$dir/COMMIT"
  echo "staged in $dir ($(du -sh "$dir" | cut -f1)): $(ls "$dir" | tr '\n' ' ')"
}

if [ "${1:-}" = "--stage" ]; then
  stage
  exit $?
fi

shape=1b types=bf16,q8_0,q4_k_m steps=64 backend=cuda
while [ $# -gt 0 ]; do
  case "$1" in
    --shape) shape="$2"; shift 2 ;;
    --types) types="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --backend) backend="$2"; shift 2 ;;
    *) echo "gpu_gguf_parity: unknown argument $1" >&2; exit 2 ;;
  esac
done
src="${LLAMA_CPP_SRC:-/tmp/llama.cpp}"
atlas="${ATLAS:-$dir/atlas}"
make_ck="${MAKE_CHECKPOINT:-$dir/make_checkpoint}"
tok="${TOKENIZER_DIR:-$dir/tokenizer}"
export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out="${OUT:-/tmp/gpu_gguf}"
mkdir -p "$out"
for b in llama-quantize llama-server; do
  [ -x "$src/build/bin/$b" ] || {
    echo "gpu_gguf_parity: $src/build/bin/$b is missing: run" \
      "tools/gpu/gpu_llamacpp.sh --build DIR first"
    exit 1
  }
done

case "$shape" in
  # Llama-3.2-1B: tied embeddings, GQA 32/8.
  1b) ck_args=(--vocab 128256 --hidden 2048 --intermediate 8192 --layers 16
    --heads 32 --kv-heads 8 --max-pos 8192 --tied --dtype bf16) ;;
  # Llama-3.1-8B's shape (make_checkpoint writes no rope scaling, so the
  # file has no rope_freqs tensor).
  8b) ck_args=(--vocab 128256 --hidden 4096 --intermediate 14336 --layers 32
    --heads 32 --kv-heads 8 --max-pos 8192 --dtype bf16) ;;
  *) echo "gpu_gguf_parity: --shape 1b or 8b" >&2; exit 2 ;;
esac
{
  command -v nvidia-smi >/dev/null &&
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  echo "commit $(cat "$dir/COMMIT" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null)"
  # gpu_llamacpp.sh --pack writes LLAMACPP_VERSION beside the source tarball.
  echo "llama.cpp $(cat "${LLAMA_PACK_DIR:-$root/.gpu_llama}/LLAMACPP_VERSION" \
    2>/dev/null || echo "(version unknown: LLAMA_PACK_DIR)")"
  echo "date $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "shape $shape, types $types, $steps greedy steps, backend $backend"
} | tee "$out/setup.txt"

ck="/tmp/atlas_gguf_$shape"
if [ ! -f "$ck/model.safetensors" ]; then
  rm -rf "$ck"
  "$make_ck" --out "$ck" --seed 7 "${ck_args[@]}" >"$out/checkpoint.log" 2>&1 ||
    { echo "make_checkpoint failed"; tail -5 "$out/checkpoint.log"; exit 1; }
fi
if [ -f "$tok/tokenizer.json.xz" ]; then
  python3 -c 'import lzma, sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())' \
    "$tok/tokenizer.json.xz" >"$ck/tokenizer.json" || exit 1
else
  cp "$tok/tokenizer.json" "$ck/" || exit 1
fi
cp "$tok/tokenizer_config.json" "$ck/" || exit 1

base="/tmp/atlas_gguf_$shape.bf16.gguf"
if [ ! -f "$base" ]; then
  PYTHONPATH="$src/gguf-py" python3 "$src/convert_hf_to_gguf.py" "$ck" \
    --outtype bf16 --outfile "$base" >"$out/convert.log" 2>&1 ||
    { echo "convert_hf_to_gguf failed"; tail -20 "$out/convert.log"; exit 1; }
fi

# "<|begin_of_text|>The quick brown fox jumps over the lazy dog." in Llama 3's
# ids: both engines take the ids as they are.
prompt=128000,791,4062,14198,39935,35308,927,279,16053,5679,13
port=18733
status=0
IFS=, read -r -a type_list <<<"$types"
for t in "${type_list[@]}"; do
  gguf="/tmp/atlas_gguf_$shape.$t.gguf"
  if [ "$t" != bf16 ] && [ ! -f "$gguf" ]; then
    upper="$(tr '[:lower:]' '[:upper:]' <<<"$t")"
    "$src/build/bin/llama-quantize" "$base" "$gguf" "$upper" \
      >"$out/quantize_$t.log" 2>&1 ||
      { echo "== $t: llama-quantize failed"; tail -5 "$out/quantize_$t.log"; status=1; continue; }
  fi
  echo "== $t ($gguf, $(du -h "$gguf" | cut -f1))"
  # Atlas: the ids on stdout, every step's logits in a file.
  timeout 900 "$atlas" run --model "$gguf" --tokens "$prompt" --steps "$steps" \
    --ignore-eos --backend "$backend" --logits "$out/atlas_$t.logits" \
    >"$out/atlas_$t.ids" 2>"$out/atlas_$t.log" ||
    { echo "atlas run failed:"; tail -5 "$out/atlas_$t.log"; status=1; continue; }
  # llama.cpp: llama-server's /completion with the same ids, greedy.
  "$src/build/bin/llama-server" -m "$gguf" --host 127.0.0.1 --port "$port" \
    -ngl 99 -c 1024 -np 1 >"$out/llama_server_$t.log" 2>&1 &
  server=$!
  up=0
  for _ in $(seq 1 180); do
    if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then up=1; break; fi
    kill -0 "$server" 2>/dev/null || break
    sleep 1
  done
  if [ "$up" = 1 ]; then
    curl -sf "http://127.0.0.1:$port/completion" -H 'Content-Type: application/json' \
      -d "{\"prompt\": [$prompt], \"n_predict\": $steps, \"temperature\": 0,
           \"top_k\": 1, \"ignore_eos\": true, \"cache_prompt\": false,
           \"return_tokens\": true, \"n_probs\": 4}" \
      >"$out/llama_$t.json" || { echo "llama-server request failed"; status=1; }
  else
    echo "llama-server did not start:"; tail -5 "$out/llama_server_$t.log"; status=1
  fi
  kill "$server" 2>/dev/null
  wait "$server" 2>/dev/null
  [ -s "$out/llama_$t.json" ] || continue
  python3 - "$out" "$t" "$prompt" <<'EOF' | tee -a "$out/summary.txt"
import json, struct, sys
out, t, prompt = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
atlas = [int(x) for x in open(f"{out}/atlas_{t}.ids").read().strip().split(",") if x]
r = json.load(open(f"{out}/llama_{t}.json"))
llama = r.get("tokens") or []
probs = r.get("completion_probabilities") or []
n = min(len(atlas), len(llama))
first = next((i for i in range(n) if atlas[i] != llama[i]), None)
if first is None and len(atlas) == len(llama):
    print(f"{t}: {n} ids agree")
    sys.exit(0)
if first is None:
    print(f"{t}: lengths differ (atlas {len(atlas)}, llama.cpp {len(llama)})")
    sys.exit(1)
raw = open(f"{out}/atlas_{t}.logits", "rb").read()
vocab = len(raw) // 4 // (len(prompt) + len(atlas) - 1)
row = len(prompt) - 1 + first
logits = struct.unpack_from(f"<{vocab}f", raw, row * vocab * 4)
best = sorted(range(vocab), key=lambda i: -logits[i])[:2]
print(f"{t}: first divergence at step {first} of {n}: atlas {atlas[first]}, "
      f"llama.cpp {llama[first]}")
print(f"  atlas logits there: {best[0]}: {logits[best[0]]:.6f}, {best[1]}: "
      f"{logits[best[1]]:.6f} (margin {logits[best[0]] - logits[best[1]]:.3g}); "
      f"llama.cpp's id {llama[first]}: {logits[llama[first]]:.6f}")
if first < len(probs):
    p = probs[first]
    top = p.get("top_logprobs") or p.get("probs") or []
    shown = ", ".join(f"{e.get('id', e.get('tok_str'))}: "
                      f"{e.get('logprob', e.get('prob'))}" for e in top[:4])
    print(f"  llama.cpp top there: {shown}")
sys.exit(1)
EOF
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done
exit $status
