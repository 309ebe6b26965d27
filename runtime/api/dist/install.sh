#!/usr/bin/env bash
# bazel run //:install -- PREFIX
# Installs include/atlas/atlas.h (+ atlas/runtime/base/{status,log_sink,version,format_bytes}.h),
# lib/libatlas.so.VERSION (with its soname link and libatlas.so), lib/libatlas.a
# and lib/pkgconfig/atlas.pc under PREFIX.
set -euo pipefail
# The files are in the runfiles tree: ours under `bazel run`, a test's when a
# test runs this script.
root=.
for r in "${RUNFILES_DIR:-}" "$0.runfiles" "${TEST_SRCDIR:-}"; do
  if [ -n "$r" ] && [ -f "$r/atlas/runtime/api/dist/atlas.pc.in" ]; then root="$r/atlas"; break; fi
done
api="$root/runtime/api"; dist="$api/dist"
so="$dist/libatlas.so" a="$dist/libatlas.a" pc="$dist/atlas.pc.in"
headers=("$root/runtime/base/status.h" "$root/runtime/base/log_sink.h" "$root/runtime/base/version.h"
  "$root/runtime/base/format_bytes.h")
if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: bazel run //:install -- PREFIX" >&2
  exit 2
fi
prefix="$1"
case "$prefix" in
  /*) ;;
  *) prefix="${BUILD_WORKING_DIRECTORY:-$PWD}/$prefix" ;;
esac
v=$(awk '/^#define ATLAS_VERSION_(MAJOR|MINOR|PATCH) /{printf "%s%s", s, $3; s="."}' \
  "$root/runtime/base/version.h")
# atlas.pc first, into a temporary file, so a failure installs nothing. The
# prefix goes in as text (awk's index/substr: no sed or gsub metacharacters,
# '&' and '|' stay themselves), with spaces escaped as pkg-config expects
# ("-I/opt/my\ atlas/include", split correctly by make, meson and eval).
pc_tmp=$(mktemp)
trap 'rm -f "$pc_tmp"' EXIT
PC_PREFIX="${prefix// /\\ }" PC_VERSION="$v" awk '
  function put(s, key, value,   out, i) {
    out = ""
    while ((i = index(s, key)) > 0) { out = out substr(s, 1, i - 1) value; s = substr(s, i + length(key)) }
    return out s
  }
  { print put(put($0, "@PREFIX@", ENVIRON["PC_PREFIX"]), "@VERSION@", ENVIRON["PC_VERSION"]) }
' "$pc" > "$pc_tmp"
install -d "$prefix/include/atlas/runtime/base" "$prefix/lib/pkgconfig"
install -m 0644 "$api/atlas.h" "$prefix/include/atlas/atlas.h"
for h in "${headers[@]}"; do
  install -m 0644 "$h" "$prefix/include/atlas/runtime/base/$(basename "$h")"
done
# The file by its full version, the soname programs record, and the name
# the linker looks for (-latlas).
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
install -m 0755 "$so" "$prefix/lib/libatlas.so.$v"
ln -sfn "libatlas.so.$v" "$prefix/lib/$soname"
ln -sfn "$soname" "$prefix/lib/libatlas.so"
install -m 0644 "$a" "$prefix/lib/libatlas.a"
install -m 0644 "$pc_tmp" "$prefix/lib/pkgconfig/atlas.pc"
echo "atlas $v installed under $prefix (lib/pkgconfig/atlas.pc)"
