#!/usr/bin/env bash
# Says which of the given binaries would not start on a GPU machine without
# Bazel: one that needs a shared library other than the C and C++ runtimes
# every machine has (a Bazel-built .so from _solib, e.g., when a cc_test lacks
# linkstatic = True). Prints one line for each such binary and library.
#   tools/gpu/check_static.sh BINARY...
# Exit status: 0 all self-contained, 1 some are not, 2 a file cannot be read.
set -uo pipefail
# The runtimes a Debian or Ubuntu GPU machine has; anything else must be
# linked in.
allowed='^(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux-x86-64|ld-linux-aarch64)\.so(\.[0-9]+)*$'
status=0
for f in "$@"; do
  if ! needed=$(readelf -d -- "$f" 2>/dev/null); then
    echo "check_static: cannot read $f as an ELF file" >&2
    status=2
    continue
  fi
  while IFS= read -r lib; do
    [ -n "$lib" ] || continue
    if ! grep -qE "$allowed" <<<"$lib"; then
      echo "$f: needs $lib (link it statically: linkstatic = True)"
      [ "$status" -eq 0 ] && status=1
    fi
  done < <(sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' <<<"$needed")
done
exit "$status"
