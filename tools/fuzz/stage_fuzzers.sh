#!/usr/bin/env bash
# Builds the tokenizer.json and chat template fuzzers as fuzz.sh does, with
# jansson, PCRE2, utf8proc and libstdc++ linked statically, into DIR (for a
# machine without Bazel or the -dev packages: fuzz_many_cores.sh runs them).
#   tools/fuzz/stage_fuzzers.sh DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1
mkdir -p "$out"
inc=$(mktemp -d)
ln -s "$PWD" "$inc/atlas"
flags="-std=c11 -Wall -Wextra -Werror -g -O1 -I. -I$inc \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
lib=/usr/lib/x86_64-linux-gnu
# shellcheck disable=SC2086
clang $flags -static-libstdc++ -o "$out/tokenizer_fuzz" tests/fuzz/tokenizer_fuzz.c \
  runtime/text/*.c runtime/base/file_read.c runtime/base/status.c runtime/base/escape.c \
  "$lib/libpcre2-8.a" "$lib/libutf8proc.a" "$lib/libjansson.a" -pthread -lm
# shellcheck disable=SC2086
clang $flags -static-libstdc++ -o "$out/chat_template_fuzz" tests/fuzz/chat_template_fuzz.c \
  runtime/chat/*.c runtime/base/file_read.c runtime/base/status.c runtime/base/escape.c \
  "$lib/libutf8proc.a" "$lib/libjansson.a" -lm
tools/gpu/check_static.sh "$out/tokenizer_fuzz" "$out/chat_template_fuzz"
