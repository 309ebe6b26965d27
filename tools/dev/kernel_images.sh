#!/usr/bin/env bash
# Makes or checks kernels/images/: the CUDA kernel images a build embeds
# where nvcc is absent (PTX only: the driver JIT-compiles it for the GPU at
# first load), and kernels/images/MANIFEST, which names the nvcc that made
# them and, per image, the sha256 of the sources it was made from (the .cu,
# then its headers by name, as kernels/cuda_fatbin.bzl hashes them).
#
#   tools/dev/kernel_images.sh            remake them (needs nvcc): builds
#                                         //kernels and copies each module's
#                                         PTX image, rewrites MANIFEST
#   tools/dev/kernel_images.sh --check [ROOT]
#                                         checks ROOT (default: this
#                                         checkout); exits 1 naming each
#                                         stale or altered image
#
# The check: every image's sources hash as MANIFEST says (else the image is
# stale: a kernel changed after it was made) and the image is the one
# MANIFEST names. Where a Bazel build put them beside the sources (the
# runfiles of //tests/kernels:images_test), also: the files the build hashes
# are the ones MANIFEST lists, every committed module has an image, and,
# where this build's nvcc is MANIFEST's, the PTX it made now is byte for byte
# the committed image, and, where this build had no nvcc, that it embedded
# the committed images. CI runs that test both ways (.ci/run).
# BAZEL overrides the Bazel command (default: tools/bazel).
set -euo pipefail

die() {
  echo "kernel_images: $*" >&2
  exit 1
}

sha() { sha256sum | cut -d' ' -f1; }

check() {
  local root="$1" k="$1/kernels" bad=0 nvcc_made nvcc_now
  local manifest="$k/images/MANIFEST"
  [ -r "$manifest" ] || die "no $manifest"
  nvcc_made=$(awk '$1 == "nvcc" {print $2}' "$manifest")
  nvcc_now=$(cat "$k/nvcc_version.txt" 2>/dev/null || true)
  local listed=()
  while read -r name want_src want_img bytes files; do
    case "$name" in "" | "#"* | nvcc) continue ;; esac
    listed+=("$name")
    local have_src have_img missing=0 f
    for f in $files; do
      [ -r "$root/$f" ] || { echo "kernel_images: $name: $f is missing" >&2; missing=1; }
    done
    if [ "$missing" -eq 1 ]; then bad=1; continue; fi
    # shellcheck disable=SC2086 # files: a space-separated list of paths
    have_src=$(cd "$root" && cat $files | sha)
    if [ "$have_src" != "$want_src" ]; then
      echo "kernel_images: kernels/images/$name.fatbin is stale: it was made from other" \
        "sources than $files are now (sha256 $want_src, now $have_src). Run" \
        "tools/dev/kernel_images.sh on a machine with nvcc and commit kernels/images/." >&2
      bad=1
    fi
    if [ ! -r "$k/images/$name.fatbin" ]; then
      echo "kernel_images: kernels/images/$name.fatbin is missing" >&2
      bad=1
      continue
    fi
    have_img=$(sha <"$k/images/$name.fatbin")
    if [ "$have_img" != "$want_img" ]; then
      echo "kernel_images: kernels/images/$name.fatbin is not the image MANIFEST names" \
        "(sha256 $want_img, now $have_img): remake it with tools/dev/kernel_images.sh" >&2
      bad=1
    fi
    if [ -r "$k/$name.sources" ]; then
      local built
      built=$(tr '\n' ' ' <"$k/$name.sources" | sed 's/ $//')
      if [ "$built" != "$files" ]; then
        echo "kernel_images: $name: the build makes it from $built, MANIFEST lists" \
          "$files: run tools/dev/kernel_images.sh" >&2
        bad=1
      fi
    fi
    # Without nvcc the build embeds the committed image itself.
    if [ -z "$nvcc_now" ] && [ -e "$k/$name.fatbin" ] && ! cmp -s "$k/$name.fatbin" "$k/images/$name.fatbin"; then
      echo "kernel_images: $name: this build has no nvcc, yet it did not embed" \
        "kernels/images/$name.fatbin (see the build's WARNING)" >&2
      bad=1
    fi
    local fresh="$k/$name.ptx.fatbin"
    if [ -s "$fresh" ]; then
      if [ "$nvcc_now" != "$nvcc_made" ]; then
        echo "kernel_images: $name: not compared with this build's PTX: made by nvcc" \
          "$nvcc_made, this build has nvcc $nvcc_now" >&2
      elif ! cmp -s "$fresh" "$k/images/$name.fatbin"; then
        echo "kernel_images: kernels/images/$name.fatbin differs from the PTX nvcc" \
          "$nvcc_now makes of its sources now: run tools/dev/kernel_images.sh" >&2
        bad=1
      fi
    fi
  done <"$manifest"
  local s m
  for s in "$k"/*.sources; do
    [ -e "$s" ] || continue
    m=$(basename "$s" .sources)
    case " ${listed[*]} " in
      *" $m "*) ;;
      *)
        echo "kernel_images: $m is built with committed = True but MANIFEST has no image" \
          "for it: run tools/dev/kernel_images.sh" >&2
        bad=1
        ;;
    esac
  done
  if [ "$bad" -eq 0 ]; then
    echo "kernel_images: ${#listed[@]} committed images match their sources (nvcc $nvcc_made)"
  fi
  return "$bad"
}

if [ "${1:-}" = "--check" ]; then
  check "${2:-$(cd "$(dirname "$0")/../.." && pwd)}"
  exit $?
fi
[ $# -eq 0 ] || die "usage: tools/dev/kernel_images.sh [--check [ROOT]]"

cd "$(dirname "$0")/../.."
bazel_cmd="${BAZEL:-tools/bazel}"
images=kernels/images
mkdir -p "$images"
[ -e "$images/MANIFEST" ] || : >"$images/MANIFEST"
mapfile -t modules < <($bazel_cmd query --output=label 'attr(name, "_ptx$", //kernels:*)' 2>/dev/null |
  sed 's/.*://; s/_ptx$//')
[ "${#modules[@]}" -gt 0 ] || die "found no committed modules (//kernels:*_ptx)"
targets=(//kernels:nvcc_version)
for m in "${modules[@]}"; do targets+=("//kernels:${m}_ptx" "//kernels:${m}_sources"); done
$bazel_cmd build "${targets[@]}" >&2
bin="$($bazel_cmd info bazel-bin 2>/dev/null)/kernels"
version=$(cat "$bin/nvcc_version.txt")
[ -n "$version" ] || die "this build has no nvcc: the images are made from nvcc's output" \
  "(install the CUDA toolkit, or set ATLAS_NVCC)"
{
  echo "# CUDA kernel images embedded where nvcc is absent: the PTX entries (compute_80,"
  echo "# compute_90) of the fatbins nvcc makes. Made by tools/dev/kernel_images.sh; checked by"
  echo "# //tests/kernels:images_test. Lines: module, sha256 of its sources (concatenated in"
  echo "# the order listed), sha256 of the image, its bytes, the sources."
  echo "nvcc $version"
  for m in "${modules[@]}"; do
    [ -s "$bin/$m.ptx.fatbin" ] || die "$m: the build made no PTX image (ATLAS_CUDA_ARCHS" \
      "must include 80 and 90, or be unset)"
    install -m 0644 "$bin/$m.ptx.fatbin" "$images/$m.fatbin"
    files=$(tr '\n' ' ' <"$bin/$m.sources" | sed 's/ $//')
    # shellcheck disable=SC2086 # files: a space-separated list of paths
    echo "$m $(cat $files | sha) $(sha <"$images/$m.fatbin") $(stat -c %s "$images/$m.fatbin") $files"
  done
} >"$images/MANIFEST.new"
mv "$images/MANIFEST.new" "$images/MANIFEST"
echo "kernel_images: wrote ${#modules[@]} images (nvcc $version):" >&2
ls -l "$images" >&2
