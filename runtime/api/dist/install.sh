#!/usr/bin/env bash
# bazel run //:install -- PREFIX
# Installs include/atlas/atlas.h (+ atlas/runtime/{status,log_sink,version}.h),
# lib/libatlas.so, lib/libatlas.a and lib/pkgconfig/atlas.pc under PREFIX.
set -euo pipefail
# The files are in the runfiles tree: ours under `bazel run`, a test's when a
# test runs this script.
root=.
for r in "${RUNFILES_DIR:-}" "$0.runfiles" "${TEST_SRCDIR:-}"; do
  if [ -n "$r" ] && [ -f "$r/atlas/runtime/api/dist/atlas.pc.in" ]; then root="$r/atlas"; break; fi
done
api="$root/runtime/api"; dist="$api/dist"
so="$dist/libatlas.so" a="$dist/libatlas.a" pc="$dist/atlas.pc.in"
headers=("$root/runtime/status.h" "$root/runtime/log_sink.h" "$root/runtime/version.h")
if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: bazel run //:install -- PREFIX" >&2
  exit 2
fi
prefix="$1"
case "$prefix" in
  /*) ;;
  *) prefix="${BUILD_WORKING_DIRECTORY:-$PWD}/$prefix" ;;
esac
install -d "$prefix/include/atlas/runtime" "$prefix/lib/pkgconfig"
install -m 0644 "$api/atlas.h" "$prefix/include/atlas/atlas.h"
for h in "${headers[@]}"; do
  install -m 0644 "$h" "$prefix/include/atlas/runtime/$(basename "$h")"
done
install -m 0755 "$so" "$prefix/lib/libatlas.so"
install -m 0644 "$a" "$prefix/lib/libatlas.a"
v=$(awk '/^#define ATLAS_VERSION_(MAJOR|MINOR|PATCH) /{printf "%s%s", s, $3; s="."}' \
  "$prefix/include/atlas/runtime/version.h")
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$v|" "$pc" > "$prefix/lib/pkgconfig/atlas.pc"
chmod 0644 "$prefix/lib/pkgconfig/atlas.pc"
echo "atlas $v installed under $prefix (lib/pkgconfig/atlas.pc)"
