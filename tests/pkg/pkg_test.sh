#!/usr/bin/env bash
# The installed Atlas as a C programmer meets it: `bazel run //:install --
# PREFIX`, then plain `cc $(pkg-config --cflags --libs atlas)`.
# 1. libatlas.so exports exactly the functions the public headers declare.
# 2. A program built against the install (shared, then static through
#    `pkg-config --static`) runs the tiny model and closes with 0 leaked bytes.
# Usage: pkg_test.sh INSTALL MAKE_CHECKPOINT PUBLIC_SYMBOLS_PY MAIN_C
set -euo pipefail
install_bin="$1" make_checkpoint="$2" symbols_py="$3" main_c="$4"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
prefix="$tmp/prefix"

"$install_bin" "$prefix"
for f in include/atlas/atlas.h include/atlas/runtime/base/status.h include/atlas/runtime/base/log_sink.h \
         include/atlas/runtime/base/version.h include/atlas/runtime/base/format_bytes.h lib/libatlas.so lib/libatlas.a lib/pkgconfig/atlas.pc; do
  [ -f "$prefix/$f" ] || { echo "FAIL: install did not write $f"; exit 1; }
done

# 1. Exported symbols == declared functions (nothing internal leaks out,
#    nothing declared is missing).
python3 "$symbols_py" "$prefix"/include/atlas/atlas.h "$prefix"/include/atlas/runtime/base/*.h \
  > "$tmp/declared"
nm -D --defined-only "$prefix/lib/libatlas.so" | awk '{print $3}' | sed 's/@.*//' | sort -u \
  > "$tmp/exported"
if ! diff -u "$tmp/declared" "$tmp/exported"; then
  echo "FAIL: libatlas.so exports differ from the public headers' declarations (-declared +exported)"
  exit 1
fi
echo "ok: libatlas.so exports exactly the $(wc -l < "$tmp/declared") declared functions"

# 1b. Every global the static archive defines is in Atlas's namespace (atlas_*, or the compiler's
#     and sanitizers' own _-names): a program linking libatlas.a with another library that has a
#     jv_free (libjq did) must not get ours.
nm -g --defined-only "$prefix/lib/libatlas.a" 2>/dev/null | awk 'NF == 3 {print $3}' \
  | grep -vE '^(atlas_|ATLAS_|_)' | sort -u > "$tmp/foreign" || true
if [ -s "$tmp/foreign" ]; then
  echo "FAIL: libatlas.a defines globals outside the atlas_ namespace: $(head -20 "$tmp/foreign" | tr '\n' ' ')"
  exit 1
fi
echo "ok: libatlas.a defines only atlas_* globals"

# 2. Build against the install with pkg-config only.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
"$make_checkpoint" --out "$tmp/tiny" --seed 1 --preset tiny > /dev/null
extra=()
# Under --config=asan the library is instrumented; the program must be too.
# (nm to a file: with pipefail, grep -q closing the pipe early fails it.)
nm -D "$prefix/lib/libatlas.so" > "$tmp/dynsyms"
if grep -q ' U __asan_' "$tmp/dynsyms"; then
  extra=(-fsanitize=address,undefined)
fi

# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Wpedantic -Werror "${extra[@]}" "$main_c" -o "$tmp/embed_shared" \
  $(pkg-config --cflags --libs atlas)
LD_LIBRARY_PATH="$prefix/lib" "$tmp/embed_shared" "$tmp/tiny" | tee "$tmp/out_shared"
grep -q '^leaked: 0 bytes' "$tmp/out_shared" || { echo "FAIL: shared build leaked"; exit 1; }
# It records the versioned soname (libatlas.so.MAJOR.MINOR while MAJOR is 0),
# not the bare name a later, incompatible libatlas.so would also answer to.
read -r major minor < <(awk '/^#define ATLAS_VERSION_(MAJOR|MINOR) /{printf "%s ", $3} END {print ""}' \
  "$prefix/include/atlas/runtime/base/version.h")
want_soname="libatlas.so.$major"
[ "$major" = 0 ] && want_soname="libatlas.so.0.$minor"
if ! readelf -d "$tmp/embed_shared" | grep -q "NEEDED.*\[$want_soname\]"; then
  echo "FAIL: the shared build does not record $want_soname"; readelf -d "$tmp/embed_shared" | grep NEEDED; exit 1
fi
[ -L "$prefix/lib/$want_soname" ] && [ -L "$prefix/lib/libatlas.so" ] \
  || { echo "FAIL: $want_soname or libatlas.so is not a link to the versioned file"; exit 1; }
echo "ok: soname $want_soname, linked from libatlas.so"

# Static: libatlas.a + Libs.private, no libatlas.so at run time.
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Wpedantic -Werror "${extra[@]}" "$main_c" -o "$tmp/embed_static" \
  $(pkg-config --cflags atlas) "$prefix/lib/libatlas.a" \
  $(pkg-config --static --libs-only-l atlas | sed 's/-latlas//')
if ldd "$tmp/embed_static" | grep -q libatlas; then
  echo "FAIL: the static build still needs libatlas.so"; exit 1
fi
"$tmp/embed_static" "$tmp/tiny" | tee "$tmp/out_static"
grep -q '^leaked: 0 bytes' "$tmp/out_static" || { echo "FAIL: static build leaked"; exit 1; }
# Same library, same model, same greedy ids either way.
if [ "$(grep '^generated:' "$tmp/out_shared")" != "$(grep '^generated:' "$tmp/out_static")" ]; then
  echo "FAIL: the shared and static builds generated different ids"; exit 1
fi
# A prefix with a space, '&' and '|': the .pc holds it (escaped as pkg-config expects), and a
# build that lets the shell parse pkg-config's output (eval, as make and meson do) finds it.
odd="$tmp/odd pre&fix|x"
"$install_bin" "$odd" >/dev/null
got=$(PKG_CONFIG_PATH="$odd/lib/pkgconfig" pkg-config --variable=prefix atlas)
# (--variable prints it as written: spaces escaped.)
[ "$got" = "${odd// /\\ }" ] || { echo "FAIL: atlas.pc's prefix is '$got', not '$odd'"; exit 1; }
eval "cc -std=c11 \"\$main_c\" -o \"\$tmp/embed_odd\" $(PKG_CONFIG_PATH="$odd/lib/pkgconfig" pkg-config --cflags --libs atlas) ${extra[*]}"
LD_LIBRARY_PATH="$odd/lib" "$tmp/embed_odd" "$tmp/tiny" | grep -q '^leaked: 0 bytes' \
  || { echo "FAIL: the build from an odd prefix did not run"; exit 1; }
echo "ok: a prefix with a space, '&' and '|' installs and builds"
echo "PASS"
