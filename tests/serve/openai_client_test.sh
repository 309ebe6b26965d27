#!/usr/bin/env bash
# The official openai npm client drives a real `atlas serve` on loopback.
#   openai_client_test.sh ATLAS MAKE_CHECKPOINT TOKENIZER_JSON CLIENT_MJS NODE_MODULES_FILE...
set -uo pipefail
atlas="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
make_checkpoint="$2"
tokenizer="$3"
client="$4"
shift 4
for f in "$@"; do
  case "$f" in
    */error.txt) cat "$f"; exit 1 ;;  # the package could not be fetched
    */node_modules/openai/package.json) modules="$(cd "$(dirname "$f")/.." && pwd)" ;;
  esac
done
[ -n "${modules:-}" ] || { echo "no node_modules/openai among the data files"; exit 1; }
command -v node >/dev/null || { echo "node is not installed (Debian package nodejs)"; exit 1; }
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/atlas_npm.XXXXXX")"
m="$tmp/m"
"$make_checkpoint" --out "$m" --seed 3 --preset tiny --vocab 665 --dtype f32 >/dev/null
cp "$tokenizer" "$m/tokenizer.json"
cat >"$m/tokenizer_config.json" <<'JSON'
{"bos_token": "<|bos|>", "eos_token": "<|eos|>",
 "chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"}
JSON
expected="$("$atlas" run --model "$m" --backend host --prompt "Hello wörld" --steps 12; echo x)"
expected="${expected%?x}"  # run ends its text with a newline
key="npm-test-key"
"$atlas" serve --model "$m" --port 0 --backend host --api-key "$key" >"$tmp/out" 2>"$tmp/err" &
pid=$!
port=""
for _ in $(seq 1 300); do  # at most 30 s for the listening line
  port="$(sed -n 's/.*:\([0-9]*\)$/\1/p' "$tmp/out")"
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
[ -n "$port" ] || { echo "the server did not start"; cat "$tmp/err"; exit 1; }
timeout 120 node "$client" "$modules" "http://127.0.0.1:$port" "$key" m "$expected"
rc=$?
kill -TERM "$pid"
wait "$pid"
src=$?
grep -q "leaked: 0 bytes" "$tmp/err" || { echo "FAIL the server's log lacks leaked: 0 bytes"; rc=1; }
[ "$src" -eq 0 ] || { echo "FAIL the server exited $src after SIGTERM"; rc=1; }
rm -rf "$tmp"
exit "$rc"
