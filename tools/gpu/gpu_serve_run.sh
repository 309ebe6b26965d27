#!/usr/bin/env bash
# atlas serve under load on the GPU, in one command: a random-weight
# checkpoint of the Llama-3.2-1B shape (make_checkpoint, BF16, the Llama 3
# tokenizer), `atlas serve` on it driven by CLIENTS concurrent streaming
# clients (tools/serve/serve_load.py: time to first token and inter-token
# latency p50/p99, tokens a second), then `atlas batch` on the same requests
# (the "within 10%" comparison). With LLAMA_SERVER set (a llama-server binary
# built elsewhere, e.g. by tools/gpu/gpu_llamacpp.sh --build), the same load
# against llama-server on a GGUF of the same checkpoint: LLAMA_GGUF if set,
# else converted with $LLAMA_CPP_SRC/convert_hf_to_gguf.py (default
# /tmp/llama.cpp, where gpu_llamacpp.sh unpacks it).
#
# Here (Bazel; -c opt, or STAGE_MODE=fastbuild for the everyday -O2 build;
# ATLAS_CUDA_ARCHS=90 keeps the fatbins, and the folder, small):
#   ATLAS_CUDA_ARCHS=90 tools/gpu/gpu_serve_run.sh --stage   # -> .gpu_serve/
# There (no Bazel, no network):
#   bash tools/gpu/gpu_serve_run.sh [--shape 1b] [--clients 64] [--requests 4]
#        [--max-tokens 128] [--prompt-words 64] [--backend cuda]
# Logs, atlas.json, llama.json and summary.txt go to $OUT (else
# /tmp/gpu_serve). Exit 1 when a request failed or a step did not run.
#
# The staged binaries link everything statically but the C and C++ runtimes
# and GnuTLS (libmicrohttpd's, tools/debian-packages.txt): --stage copies
# the shared libraries check_static.sh names into lib/, which the run puts
# on LD_LIBRARY_PATH. ATLAS, MAKE_CHECKPOINT, TOKENIZER_DIR and CKPT_DIR
# override the staged binaries, the tokenizer and where the checkpoint is
# written (//tests/serve:gpu_serve_run_test: --shape tiny --backend host,
# a stand-in llama-server).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${GPU_SERVE_DIR:-$root/.gpu_serve}"

stage() {
  local bazel="${BAZEL:-$root/tools/bazel}" mode="${STAGE_MODE:-opt}"
  (cd "$root" && "$bazel" build -c "$mode" --symlink_prefix=/ //tools/atlas \
    //tools/checkpoint:make_checkpoint @tokenizer_llama3//:files >&2) || return 1
  local bin ext
  bin="$(cd "$root" && "$bazel" info -c "$mode" bazel-bin 2>/dev/null)"
  ext="$(cd "$root" && "$bazel" info output_base 2>/dev/null)/external"
  rm -rf "$dir" && mkdir -p "$dir/lib" "$dir/tokenizer" || return 1
  install -m 0755 "$bin/tools/atlas/atlas" "$bin/tools/checkpoint/make_checkpoint" \
    "$root/tools/serve/serve_load.py" "$dir/" || return 1
  # The 9 MB tokenizer.json travels compressed (the carried folder's limit).
  xz -T2 -c "$ext/tokenizer_llama3/pkg/models/tokenizer.json" \
    >"$dir/tokenizer/tokenizer.json.xz" || return 1
  cp "$ext/tokenizer_llama3/pkg/models/tokenizer_config.json" "$dir/tokenizer/" || return 1
  # What check_static.sh refuses (GnuTLS and its chain) goes along.
  "$root/tools/gpu/check_static.sh" "$dir/make_checkpoint" || return 1
  local lib
  for lib in $(ldd "$dir/atlas" | awk '$3 ~ /^\// {print $3}'); do
    case "$(basename "$lib")" in
      libc.so* | libm.so* | libstdc++* | libgcc_s* | libpthread* | libdl.so* | \
        librt.so* | ld-linux*) ;;
      *) cp -L "$lib" "$dir/lib/" || return 1 ;;
    esac
  done
  git -C "$root" rev-parse --short HEAD >"$dir/COMMIT"
  echo "staged in $dir ($(du -sh "$dir" | cut -f1)): $(ls "$dir" | tr '\n' ' ')" \
    "lib: $(ls "$dir/lib" | tr '\n' ' ')"
}

if [ "${1:-}" = "--stage" ]; then
  stage
  exit $?
fi

shape=1b clients=64 requests=4 max_tokens=128 words=64 backend=cuda
while [ $# -gt 0 ]; do
  case "$1" in
    --shape) shape="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --requests) requests="$2"; shift 2 ;;
    --max-tokens) max_tokens="$2"; shift 2 ;;
    --prompt-words) words="$2"; shift 2 ;;
    --backend) backend="$2"; shift 2 ;;
    *) echo "gpu_serve_run: unknown argument $1" >&2; exit 2 ;;
  esac
done
atlas="${ATLAS:-$dir/atlas}"
make_ck="${MAKE_CHECKPOINT:-$dir/make_checkpoint}"
tok="${TOKENIZER_DIR:-$dir/tokenizer}"
load="$root/tools/serve/serve_load.py"
[ -f "$dir/serve_load.py" ] && [ -z "${ATLAS:-}" ] && load="$dir/serve_load.py"
export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out="${OUT:-/tmp/gpu_serve}"
mkdir -p "$out"
status=0

case "$shape" in
  # Llama-3.2-1B: tied embeddings, GQA 32/8, BF16.
  1b) ck_args=(--vocab 128256 --hidden 2048 --intermediate 8192 --layers 16 --heads 32
    --kv-heads 8 --max-pos 8192 --tied --dtype bf16) ;;
  # The host test's: the synthetic tokenizer's 665 ids.
  tiny) ck_args=(--preset small --vocab 665 --max-pos 1024 --dtype f32) ;;
  *) echo "gpu_serve_run: --shape 1b or tiny" >&2; exit 2 ;;
esac
ck="${CKPT_DIR:-/tmp/atlas_serve_$shape}"
{
  command -v nvidia-smi >/dev/null &&
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  echo "commit $(cat "$dir/COMMIT" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null)"
  echo "date $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "shape $shape, $clients clients x $requests requests, max_tokens $max_tokens," \
    "prompt $words words, backend $backend"
} | tee "$out/setup.txt"
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
[ -f "$tok/tokenizer_config.json" ] && cp "$tok/tokenizer_config.json" "$ck/"

common=(--clients "$clients" --requests "$requests" --max-tokens "$max_tokens"
  --prompt-words "$words" --backend "$backend" --timeout 900)
echo "== atlas serve, then atlas batch on the same requests"
timeout 1800 python3 "$load" "$atlas" "$ck" "${common[@]}" --label "atlas serve" \
  --json "$out/atlas.json" 2>&1 | tee "$out/atlas.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

if [ -n "${LLAMA_SERVER:-}" ]; then
  gguf="${LLAMA_GGUF:-/tmp/atlas_serve_$shape.bf16.gguf}"
  src="${LLAMA_CPP_SRC:-/tmp/llama.cpp}"
  if [ ! -e "$gguf" ]; then
    PYTHONPATH="$src/gguf-py" python3 "$src/convert_hf_to_gguf.py" "$ck" --outtype bf16 \
      --outfile "$gguf" >"$out/convert.log" 2>&1 ||
      { echo "convert_hf_to_gguf failed"; tail -20 "$out/convert.log"; exit 1; }
  fi
  port=$((20000 + RANDOM % 20000))
  # A slot a client: its prompt (~2 tokens a word) and its output, with room.
  ctx=$(((words * 2 + max_tokens + 64) * clients))
  echo "== llama-server ($gguf, -np $clients -c $ctx)"
  "$LLAMA_SERVER" -m "$gguf" --host 127.0.0.1 --port "$port" -ngl 99 -c "$ctx" \
    -np "$clients" -cb -fa on >"$out/llama_server.log" 2>&1 &
  pid=$!
  up=0
  for _ in $(seq 600); do  # up to 5 minutes to load
    kill -0 "$pid" 2>/dev/null || break
    python3 - "$port" <<'PY' && { up=1; break; }
import http.client, sys
try:
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=2)
    c.request("GET", "/health")
    sys.exit(0 if c.getresponse().status == 200 else 1)
except OSError:
    sys.exit(1)
PY
    sleep 0.5
  done
  if [ "$up" -eq 1 ]; then
    timeout 1800 python3 "$load" "$atlas" "$ck" "${common[@]}" --no-batch \
      --url "http://127.0.0.1:$port" --label "llama-server" --json "$out/llama.json" 2>&1 |
      tee "$out/llama.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  else
    echo "llama-server did not come up"; tail -20 "$out/llama_server.log"; status=1
  fi
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
fi

python3 - "$out" <<'PY' | tee "$out/summary.txt"
import json, os, sys
out = sys.argv[1]
rows = []
for name in ("atlas.json", "llama.json"):
    p = os.path.join(out, name)
    if os.path.exists(p):
        rows.append(json.load(open(p)))
print("| server | failed | TTFT p50 / p99 ms | ITL p50 / p99 ms | tokens/s | vs atlas batch |")
print("| --- | --- | --- | --- | --- | --- |")
for r in rows:
    b = r.get("batch", {}).get("serve_over_batch")
    print(f"| {r['label']} | {r['failed']} of {r['requests']} | "
          f"{r['ttft_ms']['p50']:.1f} / {r['ttft_ms']['p99']:.1f} | "
          f"{r['itl_ms']['p50']:.2f} / {r['itl_ms']['p99']:.2f} | {r['tokens_per_s']:.1f} | "
          + (f"{b:.3f} (batch {r['batch']['tokens_per_s']:.1f} tokens/s)" if b else "") + " |")
PY
exit $status
