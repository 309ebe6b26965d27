#!/usr/bin/env bash
# //kernels:embed_fatbin: the assembly it writes changes with the image's
# bytes, not only its size (embed_fatbin.c says why), and assembled, it
# holds the image byte for byte.
set -euo pipefail
tool="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "embed_fatbin_test: $*" >&2; exit 1; }

printf 'kernels, first build' >img.fatbin
"$tool" img.fatbin atlas_img one.S one.h
printf 'kernels, other build' >img.fatbin  # same size, other bytes
"$tool" img.fatbin atlas_img two.S two.h
cmp -s one.S two.S && fail "same assembly for two different images"
cmp -s one.h two.h || fail "the header changed though the size did not"
printf 'kernels, first build' >img.fatbin
"$tool" img.fatbin atlas_img three.S three.h
cmp -s one.S three.S || fail "the same image gave two assemblies"
grep -q '^#define ATLAS_IMG_SIZE ((size_t)20)$' one.h || fail "size macro: $(cat one.h)"

# Assembled, the section holds the image.
cc -c -o img.o three.S
objcopy -O binary --only-section=.rodata.atlas_img img.o section.bin
cmp section.bin img.fatbin || fail "the object's section is not the image"

# No image (nvcc absent): size 0, one placeholder byte, still assembles.
: >empty.fatbin
"$tool" empty.fatbin atlas_empty empty.S empty.h
grep -q '((size_t)0)' empty.h || fail "empty image: $(cat empty.h)"
cc -c -o empty.o empty.S
echo "embed_fatbin_test: passed"
