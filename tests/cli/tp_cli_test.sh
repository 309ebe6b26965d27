#!/usr/bin/env bash
# atlas run and atlas report with --tensor-parallel on host backends (the
# devices simulated in one process): the same ids as one device, each
# device's ledger and a total, the refusals by name.
#   tp_cli_test.sh ATLAS MAKE_CHECKPOINT
set -uo pipefail
atlas="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
make_checkpoint="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/tp_cli.XXXXXX")"
fails=0
unset BUILD_WORKING_DIRECTORY

check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}

# 4 heads, 2 KV heads, intermediate 64, vocabulary 64.
"$make_checkpoint" --out "$tmp/m" --seed 1 --preset tiny --dtype f32 >/dev/null

one=$("$atlas" run --model "$tmp/m" --tokens 1,2,3 --steps 12 --backend host)
check "one device generates" [ -n "$one" ]
for n in 2 4; do
  out=$("$atlas" run --model "$tmp/m" --tokens 1,2,3 --steps 12 --backend host \
    --tensor-parallel "$n" 2>&1); rc=$?
  check "tensor parallel $n exits 0" [ "$rc" -eq 0 ]
  check "tensor parallel $n gives one device's ids" [ "$out" = "$one" ]
done
out=$("$atlas" run --model "$tmp/m" --tokens 1,2,3 --steps 4 --backend host \
  --tensor-parallel 2 --devices 0,1 2>&1); rc=$?
check "--devices with as many devices runs" [ "$rc" -eq 0 ]

out=$("$atlas" report --model "$tmp/m" --backend host --max-seq 16 \
  --tensor-parallel 2 2>&1); rc=$?
check "report exits 0" [ "$rc" -eq 0 ]
check "report shows device 0" grep -q "^device 0 of 2 (host): [0-9]* bytes live" <<<"$out"
check "report shows device 1" grep -q "^device 1 of 2 (host): [0-9]* bytes live" <<<"$out"
d0=$(sed -n 's/^device 0 of 2 (host): \([0-9]*\) bytes live$/\1/p' <<<"$out")
d1=$(sed -n 's/^device 1 of 2 (host): \([0-9]*\) bytes live$/\1/p' <<<"$out")
check "report's total is the devices' sum" \
  grep -q "^total over 2 devices: $((d0 + d1)) bytes live" <<<"$out"

out=$("$atlas" run --model "$tmp/m" --tokens 1 --steps 2 --backend host \
  --tensor-parallel 3 2>&1); rc=$?
check "a split that does not divide fails" [ "$rc" -eq 1 ]
check "... naming the field" grep -q "tensor parallel 3 does not split num_attention_heads 4" <<<"$out"
out=$("$atlas" run --model "$tmp/m" --tokens 1 --steps 2 \
  --tensor-parallel 2 2>&1); rc=$?
check "tensor parallel without a named backend fails" [ "$rc" -eq 1 ]
check "... saying which backends split" grep -q 'needs the backend named: "host"' <<<"$out"
out=$("$atlas" run --model "$tmp/m" --tokens 1 --steps 2 --backend host \
  --tensor-parallel 2 --devices 0 2>&1); rc=$?
check "--devices of another count is a usage error" [ "$rc" -eq 2 ]
out=$("$atlas" run --model "$tmp/m" --tokens 1 --steps 2 --backend host \
  --tensor-parallel 0 2>&1); rc=$?
check "--tensor-parallel 0 is a usage error" [ "$rc" -eq 2 ]

rm -rf "$tmp"
[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
