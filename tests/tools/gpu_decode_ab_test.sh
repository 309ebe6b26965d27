#!/usr/bin/env bash
# tools/gpu/gpu_decode_ab.sh here, without a GPU: fake bench binaries and a fake
# checkpoint maker beside a copy of the script.
#   gpu_decode_ab_test.sh SCRIPT
set -uo pipefail
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/decode_ab.XXXXXX")"
cp "$1" "$tmp/gpu_decode_ab.sh"
ab="$tmp/gpu_decode_ab.sh"
fails=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}
cat >"$tmp/gpu_profile_decode.py" <<'PY'
def checkpoint(name):
    return "/ckpt/" + name
PY
# A bench that prints ms = MS + context / 100000 + round (a file counts its
# runs) for each context, beside other modes' lines, and checks its arguments.
fake() {  # fake NAME MS
  cat >"$tmp/$1" <<SH
#!/usr/bin/env bash
[ "\$1" = decode ] && [ "\${2#/ckpt/}" != "\$2" ] && [ "\$4" = --steps ] || exit 9
n=\$(cat "$tmp/$1.runs" 2>/dev/null || echo 0); echo \$((n + 1)) >"$tmp/$1.runs"
IFS=, read -r -a cs <<<"\${3#--context=}"
for c in "\${cs[@]}"; do
  echo "atlas decode at context \$c"
  awk "BEGIN { printf \"RESULT decode_%s_ms %.4f\\n\", \$c, $2 + \$c / 100000 + \$n / 1000 }"
  echo "RESULT decode_sync_\${c}_ms 9.9"
done
SH
  chmod +x "$tmp/$1"
}
fake base 0.8
fake new 0.7
printf '#!/bin/sh\nexit 3\n' >"$tmp/broken"
chmod +x "$tmp/broken"

OUT="$tmp/out" bash "$ab" --rounds=2 --contexts-1b=128,1024 --contexts-8b=64 \
  base="$tmp/base" new="$tmp/new" >"$tmp/table" 2>&1
rc=$?
cat "$tmp/table"
check "exit 0" [ "$rc" -eq 0 ]
check "one row per shape, context and binary" [ "$(grep -c ' best [0-9]' "$tmp/table")" -eq 6 ]
check "the first binary's rounds, then its best" \
  grep -q '^1b     128  base           0.8013 0.8023   best 0.8013$' "$tmp/table"
check "another binary's best against the first's" \
  grep -q '^1b     128  new            0.7013 0.7023   best 0.7013  0.875x$' "$tmp/table"
check "contexts in numeric order" \
  [ "$(grep '^1b' "$tmp/table" | awk '{print $2}' | uniq | tr '\n' ' ')" = "128 1024 " ]
check "the 8B shape's own contexts" grep -q '^8b      64  new ' "$tmp/table"
check "other modes left out" bash -c "! grep -q '9.9' '$tmp/table'"
check "every run's output kept" [ -s "$tmp/out/new_8b_2.log" ]

bash "$ab" --shapes=1b --rounds=1 a="$tmp/base" b="$tmp/broken" >"$tmp/fail" 2>&1
check "a failing binary: exit 1" [ $? -eq 1 ]
check "a failing binary: named" grep -q "b failed on 1b (round 1)" "$tmp/fail"
check "a failing binary: the others still measured" grep -q '^1b  .* a  ' "$tmp/fail"
bash "$ab" --bogus >"$tmp/usage" 2>&1
check "an unknown option: exit 2" [ $? -eq 2 ]
check "an unknown option: named" grep -q "unknown option '--bogus'" "$tmp/usage"
bash "$ab" base="$tmp/none" >"$tmp/missing" 2>&1
check "a missing binary: exit 2" [ $? -eq 2 ]
bash "$ab" --shapes=3b a="$tmp/base" >"$tmp/shape" 2>&1
check "an unknown shape: exit 2" [ $? -eq 2 ]
bash "$ab" --help >"$tmp/help" 2>&1
check "--help: exit 0 and the usage" grep -q 'NAME=BENCH NAME=BENCH' "$tmp/help"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all passed"
