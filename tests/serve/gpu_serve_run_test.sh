#!/usr/bin/env bash
# tools/gpu/gpu_serve_run.sh's logic on the host backend with a tiny model:
# the checkpoint, atlas serve under a small load, atlas batch on the same
# requests, and the llama-server leg against a stand-in (atlas serve behind
# llama-server's command line), all in bounded time. Figures are not
# checked (timings never are); what each leg produced is.
#   gpu_serve_run_test.sh ATLAS MAKE_CHECKPOINT TOKENIZER_JSON SCRIPT SERVE_LOAD
set -uo pipefail
atlas="$(realpath "$1")" make_ck="$(realpath "$2")" tokenizer="$(realpath "$3")"
script="$4"
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/gpu_serve.XXXXXX")"
fails=0
check() {
  if "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}
mkdir -p "$tmp/tok"
cp "$tokenizer" "$tmp/tok/tokenizer.json"
# The stand-in: llama-server's flags, atlas serve's answers.
cat >"$tmp/llama-server" <<SH
#!/usr/bin/env bash
while [ \$# -gt 0 ]; do
  case "\$1" in
    -m) model="\$2"; shift 2 ;;
    --port) port="\$2"; shift 2 ;;
    --host) host="\$2"; shift 2 ;;
    -ngl | -c | -np | -fa) shift 2 ;;
    *) shift ;;
  esac
done
exec "$atlas" serve --model "\$model" --host "\$host" --port "\$port" --backend host
SH
chmod +x "$tmp/llama-server"
OUT="$tmp/out" ATLAS="$atlas" MAKE_CHECKPOINT="$make_ck" TOKENIZER_DIR="$tmp/tok" \
  CKPT_DIR="$tmp/ck" LLAMA_SERVER="$tmp/llama-server" LLAMA_GGUF="$tmp/ck" \
  timeout 300 bash "$script" --shape tiny --backend host --clients 4 --requests 2 \
  --max-tokens 8 --prompt-words 6 >"$tmp/run.log" 2>&1
rc=$?
cat "$tmp/run.log"
check "the run exits 0" [ "$rc" -eq 0 ]
check "the tiny checkpoint was written" [ -f "$tmp/ck/model.safetensors" ]
check "atlas.json, llama.json and the summary" \
  test -f "$tmp/out/atlas.json" -a -f "$tmp/out/llama.json" -a -f "$tmp/out/summary.txt"
python3 - "$tmp/out" <<'PY' || fails=$((fails + 1))
import json, os, sys
out = sys.argv[1]
a = json.load(open(os.path.join(out, "atlas.json")))
l = json.load(open(os.path.join(out, "llama.json")))
ok = True
def check(name, cond, detail=""):
    global ok
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else f"  [{detail}]"))
    ok = ok and cond
check("atlas serve: 8 requests, none failed", a["requests"] == 8 and a["failed"] == 0, a)
check("atlas serve: tokens, latencies measured",
      a["tokens"] > 0 and a["ttft_ms"]["p50"] > 0 and a["itl_ms"]["p99"] > 0, a)
check("atlas batch: the same greedy requests make the same tokens",
      a["batch"]["tokens"] == a["tokens"], a.get("batch"))
check("the llama-server leg: 8 requests, none failed, no batch",
      l["requests"] == 8 and l["failed"] == 0 and "batch" not in l, l)
check("the llama-server leg: the same tokens (the stand-in is atlas)",
      l["tokens"] == a["tokens"], (l["tokens"], a["tokens"]))
rows = open(os.path.join(out, "summary.txt")).read()
check("the summary has both rows", "| atlas serve |" in rows and "| llama-server |" in rows,
      rows)
sys.exit(0 if ok else 1)
PY
echo "$fails failed"
[ "$fails" -eq 0 ]
