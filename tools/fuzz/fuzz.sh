#!/bin/sh
# Builds the model-loading fuzzers with clang + libFuzzer (ASan, UBSan) and
# runs each. Bazel 4.2.3 here defaults to gcc, so this builds directly.
#
#   tools/fuzz/fuzz.sh [RUNS] [TARGET...]     RUNS default 1000000 per target
#   targets: safetensors config config_check checkpoint_dir tokenizer
#            chat_template oai_request gguf (default: all)
# Work dirs (grown corpus, crash files) go to ${FUZZ_OUT:-/tmp/atlas-fuzz}.
# A unit slower than FUZZ_TIMEOUT seconds (default 2) or a process past
# FUZZ_RSS_MB (default 512; ASan's quarantine is kept at 16 MB so that the
# limit measures Atlas) is a finding too: a slow or large input is the
# denial of service a server must not have.
# FUZZ_SECONDS (optional) also caps each target's run time; -print_final_stats
# then says how many executions it reached. Every target runs even when one
# finds a crash; the exit status is 1 if any did.
#
# Last full runs (2026-11-30, 2 shared cores, nice 19, -max_len="$(target_max_len "$t")"):
#   safetensors     10,000,000 executions (18.8k/s), no crash (an earlier,
#                   contended run: 3,384,830 at 1.9k/s, no crash)
#   config          10,000,000 (9.2k/s), no crash
#   config_check    10,000,000 (21.3k/s), no crash once the oracle stopped
#                   calling an untied model's lm_head.weight optional (the
#                   crash it found; corpus/config_check/untied_lm_head_dropped.bin)
#   checkpoint_dir  10,000,000 as two 5,000,000-run workers on one corpus
#                   (3.2k/s each), no crash (before: 2,351,365 at 0.65k/s)
#   2026-12-04 (tree 95c714c, FUZZ_SECONDS=600, nice 19, fresh work dirs):
#                   safetensors 13,762,745 (22.9k/s), config 57,680,080
#                   (96.0k/s), config_check 23,164,530 (38.5k/s),
#                   checkpoint_dir 1,447,570 (2.4k/s); no crash
#   tokenizer       (2026-12-02, 2 shared cores, 10 minutes) 79,678
#                   executions (130/s: each loads a tokenizer.json); found
#                   null-pointer arithmetic on all-empty decoded pieces and
#                   on an empty lossy UTF-8 run (UBSan; fixed). 2026-12-04:
#                   after 39,085 executions, a vocab id of 726553673 made
#                   the table by id ask for 5.8 GB (ids now in a map;
#                   corpus/tokenizer/sparse_vocab_id.bin); after 30,697 more,
#                   the harness's own UTF-8 check took the overlong E0 91 A0
#                   for UTF-8 (now utf8proc's; overlong_utf8_text.bin); then
#                   182,274 in 20 minutes (151/s), no crash
#   chat_template   (2026-12-02, three runs of 10-25 minutes, about 5,000
#                   executions/s) found: a segfault when a keyword argument
#                   failed after another (atlas run --chat crashed), a leak
#                   when a loop filter failed, dict keys with NUL cut short,
#                   a number literal past the lexer's buffer (a stack write),
#                   NULL + 1 in map/select without arguments, and
#                   '' * 3046609909900 looping for hours; each fixed, with a
#                   test and a seed in corpus/chat_template. Later:
#                   'a'|indent(3e14) ran out of memory after about 72,000
#                   executions (indent now capped as repetition); then 6
#                   minutes, 888,170 executions, no crash. Then
#                   786,850 executions in 20 minutes, one slow unit:
#                   1 ** 55555555555 multiplied 5.6e10 times (powers now
#                   by squaring; corpus/chat_template/integer_power_slow.jinja);
#                   then 1,727,612 in 15 minutes, no crash; after the
#                   Unicode names, 1,014,725 in 17 minutes, no crash (one
#                   unit reported slow, '@'*+++0469499900: 0.56 s alone; the
#                   run shared the cores with CI). 2026-12-04: after
#                   1,775,186 executions, [1] * 777777 * 5555 asked for
#                   4.3e9 list items (lists now capped by their items, every
#                   text buffer at 64 MiB; list_repetition_items.bin); then
#                   1,614,451 in 20 minutes, no crash (one unit reported
#                   slow, 776 * tools * 555: 1.6 s alone without sanitizers)
#   oai_request     (2026-12-07, tree 89883a9, FUZZ_SECONDS=600, nice 19,
#                   beside builds on the 2 shared cores) 1,213,912 executions
#                   (2.0k/s) over both endpoints' bodies and Batch lines, no
#                   crash, no leak; again (tree 2dbc2ee, a fresh work dir)
#                   2,023,614 (3.4k/s), no crash; 10,000,000 (tree 3a767a1,
#                   a fresh work dir, nice 19 beside CI on the 2 shared
#                   cores: 1,541 s, 6.5k/s), no crash, slowest unit under
#                   1 s, peak RSS 76 MB
#   tokenizer and chat_template with -timeout and -rss_limit_mb (2026-12-07,
#                   tree 5a99206, 2 shared cores under load, nice 19): at
#                   -timeout 2, chat_template stopped after about 2 minutes
#                   on {{7, 737777 * tools}}, whose depth check walked 700k
#                   shared references without spending the step budget
#                   (fixed; repeated_tools_depth_walk.jinja), and tokenizer
#                   after 7,609 executions on a unit that takes 0.47 s alone
#                   (the load's, not a finding); then, at -timeout 10 and
#                   -rss_limit_mb 512, chat_template 604,832 executions in
#                   600 s (1.0k/s, peak RSS 187 MB) and tokenizer 95,435 in
#                   600 s (158/s, 75 MB), no finding
#   gguf            (2026-12-07, tree 099c373, 2 shared cores under load,
#                   nice 19, -max_len 4096) 10,000,000 executions in 851 s
#                   (11.8k/s), peak RSS 59 MB, no crash
#   gguf with the config.json, tokenizer.json and chat template builders
#                   (2026-12-08, parent 34e1c28, FUZZ_SECONDS=240, nice 19):
#                   found a leak of config.json's object when
#                   tokenizer.ggml.bos_token_id is not an integer (fixed);
#                   then 4,112,677 executions (17.1k/s), peak RSS 65 MB, no
#                   crash
#   gguf with the checkpoint view too (each tensor read whole, the
#                   snapshot; 2026-12-08, commit 51cfb9a, FUZZ_SECONDS=600,
#                   nice 19, the other core busy): 8,999,843 executions
#                   (15.0k/s), peak RSS 64 MB, no crash
#   tokenizer and chat_template after the streaming encode, the per-encode
#                   regex budget and the limits' API (2026-12-07, tree
#                   6079ca0's runtime/text and runtime/chat, the 2 shared
#                   cores under load, nice 19, fuzz_many_cores.sh with 2 jobs
#                   each, -timeout 10, -rss_limit_mb 512): chat_template
#                   140,800 executions in 150 s, tokenizer 98,656 in 150 s,
#                   no finding. Then 540 s each: chat_template 186,473
#                   executions and one slow unit (14 s under ASan, nice 19
#                   and load 8: the repr of a 12.5 MB string inside a tuple,
#                   a character at a time: 3.1 s alone under the fuzzer's
#                   instrumentation, 0.2 s without; printable ASCII runs are
#                   now appended whole, 0.39 s;
#                   corpus/chat_template/repr_long_string_slow.jinja),
#                   tokenizer 157,555, no finding. Not the issue's 10M
#                   each: that needs the 16-core machine
#                   (fuzz_many_cores.sh there), not run.
#   chat_template's repr of long strings (2026-12-08, 2 shared cores under
#                   load, stage_fuzzers.sh's build; CPU seconds of one
#                   execution, user+sys, best of 3): a tuple holding 9 MB
#                   of bytes that are not UTF-8 took 2.08 s at tree 7743ed1,
#                   0.62 s with repr a table lookup a byte (the commit that
#                   adds this line; libFuzzer's comparison tracing was the
#                   cost: about 30 traced comparisons a byte before);
#                   9 MB of text in Latin, symbols and CJK 0.84 s -> 0.45 s;
#                   12.5 MB of ASCII 0.37 s -> 0.42 s (/usr/bin/time -f
#                   %U+%S ./chat_template_fuzz FILE, on
#                   corpus/chat_template/repr_{invalid_utf8,non_ascii}.jinja
#                   with the copies raised to 70000 and 300000: the seeds
#                   hold a tenth, since a seed of 0.5 s cut a 90 s run
#                   from 246 to 72 executions/s)
#   tokenizer's executions a second (2026-12-08, stage_fuzzers.sh's build,
#                   2 shared cores under load, CPU seconds with
#                   ASAN_OPTIONS=quarantine_size_mb=16, tree ee41f91 before,
#                   the commit that adds this line after): the 9 seeds of
#                   corpus/tokenizer, 100 runs each (-runs=100 FILES), 3.5 s
#                   -> 1.1 s (250/s -> 800/s); 74 inputs a 2,000-run
#                   campaign had grown, 20 runs each, 10.5 s -> 2.9 s
#                   (140/s -> 500/s); -seed=1 -runs=20000 from the seeds,
#                   1,176/s -> 1,666/s. The stream the harness steps through
#                   every id (four ways) allocated about ten buffers a decode
#                   and held ids decoding drops, decoding each run of them
#                   again every step; it now keeps its buffers and holds
#                   only ids with text. What is left is the product's own
#                   decode work under the sanitizers, and the load.
set -eu
cd "$(dirname "$0")/../.."
RUNS=${1:-1000000}
[ $# -gt 0 ] && shift
TARGETS=${*:-safetensors config config_check checkpoint_dir tokenizer chat_template oai_request gguf}
OUT=${FUZZ_OUT:-/tmp/atlas-fuzz}
mkdir -p "$OUT"
CC=${CC:-clang}
# Atlas's sources include each other as atlas/...: a link named atlas to
# the tree gives plain compilers that prefix.
INC=$(mktemp -d)
ln -s "$PWD" "$INC/atlas"
CFLAGS="-std=c11 -Wall -Wextra -Werror -g -O1 -I. -I$INC \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
LIB="runtime/formats/safetensors.c runtime/formats/checkpoint.c \
  runtime/arch/decoder/decoder_config.c runtime/arch/decoder/decoder_weights.c \
  runtime/formats/json_words.c runtime/base/file_read.c \
  runtime/base/weight_scan.c runtime/arch/rope/rope.c"
TEXT_LIB="$(echo runtime/text/*.c) runtime/base/file_read.c -lpcre2-8 -lutf8proc -pthread"
CHAT_LIB="$(echo runtime/chat/*.c) runtime/base/file_read.c -lutf8proc"
GGUF_LIB="runtime/formats/gguf.c runtime/formats/gguf_values.c runtime/base/file_read.c \
  runtime/formats/gguf_model.c runtime/formats/gguf_rope_freqs.c \
  runtime/formats/gguf_tokenizer.c runtime/formats/gguf_checkpoint.c \
  runtime/formats/checkpoint.c runtime/formats/safetensors.c \
  runtime/formats/safetensors_header.c runtime/formats/safetensors_view.c \
  runtime/formats/json_words.c runtime/base/weight_scan.c -ljansson -lm"
OAI_LIB="runtime/serve/openai/oai_request.c runtime/serve/openai/oai_response.c \
  runtime/serve/openai/oai_batch.c runtime/formats/json_words.c -lutf8proc"
# Each target's sources, and the longest input (a tokenizer.json or chat
# template seed is a few KiB).
target_lib() {
  case "$1" in
    tokenizer) echo "$TEXT_LIB" ;;
    chat_template) echo "$CHAT_LIB" ;;
    oai_request) echo "$OAI_LIB" ;;
    gguf) echo "$GGUF_LIB" ;;
    *) echo "$LIB" ;;
  esac
}
target_max_len() {
  case "$1" in
    tokenizer|chat_template) echo 16384 ;;
    *) echo 4096 ;;
  esac
}
# status.c (and the escaping it uses) is built once and linked into every
# fuzzer.
# shellcheck disable=SC2086
$CC $CFLAGS -c -o "$OUT/status.o" runtime/base/status.c
# shellcheck disable=SC2086
$CC $CFLAGS -c -o "$OUT/escape.o" runtime/base/escape.c
SECONDS_FLAG=""
[ -n "${FUZZ_SECONDS:-}" ] && SECONDS_FLAG="-max_total_time=$FUZZ_SECONDS"
failed=0
for t in $TARGETS; do
  echo "== building ${t}_fuzz"
  # shellcheck disable=SC2086
  $CC $CFLAGS -o "$OUT/${t}_fuzz" "tests/fuzz/${t}_fuzz.c" $(target_lib "$t") \
    "$OUT/status.o" "$OUT/escape.o" -ljansson -lm
  mkdir -p "$OUT/${t}_corpus"
  echo "== running ${t}_fuzz for $RUNS executions"
  # shellcheck disable=SC2086
  if ! (cd "$OUT" && ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=16 \
    "./${t}_fuzz" -runs="$RUNS" $SECONDS_FLAG -max_len="$(target_max_len "$t")" \
    -timeout="${FUZZ_TIMEOUT:-2}" -rss_limit_mb="${FUZZ_RSS_MB:-512}" \
    -print_final_stats=1 -dict="$OLDPWD/tests/fuzz/$t.dict" \
    -artifact_prefix="$OUT/${t}_" "${t}_corpus" \
    "$OLDPWD/tests/fuzz/corpus/$t"); then
    echo "== ${t}_fuzz FAILED (crash files: $OUT/${t}_*)"
    failed=1
  fi
done
exit "$failed"
