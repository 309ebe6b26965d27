#!/usr/bin/env bash
# tools/dev/kernel_images.sh --check on altered copies of the committed
# images and their sources: each alteration fails, naming what is wrong.
set -uo pipefail
src="$TEST_SRCDIR/$TEST_WORKSPACE"
script="$src/tools/dev/kernel_images.sh"
tmp="${TEST_TMPDIR:-$(mktemp -d)}/images"
fails=0

check() { # description, command...
  local what="$1"
  shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what" >&2; fails=$((fails + 1)); fi
}

# A fresh copy of what the test sees (runfiles are links: copy the files).
fresh() {
  rm -rf "$tmp"
  mkdir -p "$tmp"
  cp -rL "$src/kernels" "$tmp/kernels"
  chmod -R u+w "$tmp"
}

# Runs the check on the copy: its exit code, its stderr in $tmp.err.
run() { bash "$script" --check "$tmp" >"$tmp.out" 2>"$tmp.err"; }

first_module() { awk '$1 != "nvcc" && $1 !~ /^#/ && NF > 4 {print $1; exit}' "$tmp/kernels/images/MANIFEST"; }

fresh
run
check "the committed images pass as they are" [ $? -eq 0 ]
m=$(first_module)
check "MANIFEST lists a module" [ -n "$m" ]
cu=$(awk -v m="$m" '$1 == m {print $5}' "$tmp/kernels/images/MANIFEST")

fresh
echo "// changed" >>"$tmp/$cu"
run
check "a changed kernel source fails" [ $? -eq 1 ]
check "... naming the stale image" grep -q "kernels/images/$m.fatbin is stale" "$tmp.err"

fresh
printf 'x' >>"$tmp/kernels/images/$m.fatbin"
run
check "an altered image fails" [ $? -eq 1 ]
check "... saying it is not MANIFEST's" grep -q "$m.fatbin is not the image MANIFEST names" "$tmp.err"

fresh
echo "kernels/extra.cuh" >>"$tmp/kernels/$m.sources"
run
check "a header the build adds fails" [ $? -eq 1 ]
check "... naming both lists" grep -q "$m: the build makes it from .*kernels/extra.cuh" "$tmp.err"

fresh
awk '$1 == "nvcc" {print $2}' "$tmp/kernels/images/MANIFEST" >"$tmp/kernels/nvcc_version.txt"
printf 'other PTX' >"$tmp/kernels/$m.ptx.fatbin"
run
check "PTX from the same nvcc that differs fails" [ $? -eq 1 ]
check "... saying it differs" grep -q "$m.fatbin differs from the PTX nvcc" "$tmp.err"
echo "0.0.0" >"$tmp/kernels/nvcc_version.txt"
run
check "PTX from another nvcc is not compared" [ $? -eq 0 ]
check "... and says so" grep -q "not compared with this build's PTX" "$tmp.err"

fresh
echo "kernels/new.cu" >"$tmp/kernels/new_fatbin.sources"
run
check "a committed module without an image fails" [ $? -eq 1 ]
check "... naming it" grep -q "new_fatbin is built with committed = True but MANIFEST has no image" "$tmp.err"

[ "$fails" -eq 0 ] || { echo "$fails checks failed" >&2; exit 1; }
