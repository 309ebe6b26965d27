#!/usr/bin/env bash
# Stages what the H200 (no network, no Bazel) needs to compute the reference
# ids and decodes with the Python `tokenizers` and transformers (AutoTokenizer
# on each real model's tokenizer.json + tokenizer_config.json too) and to
# time it against our tokenizer:
#
#   tools/gpu/tokenizer_h200_stage.sh [DIR]     # default .gpu/tokenizer
#
# then on the device: bash DIR/run.sh [PART...], PART one of expected,
# decode, unicode, bench (default all). They write $OUT/expected.json
# (commit as tests/text/expected.json), $OUT/decode_ids.json (commit as
# tests/text/decode_ids.json) and a fuzz of DecodeStream against our
# decode_ids_test ($OUT/decode_fuzz.txt), $OUT/unicode.txt, $OUT/bench.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-.gpu/tokenizer}
# Both link statically (linkstatic): they run without Bazel on the H200.
tools/bazel build -c opt --symlink_prefix=/ //tools/bench:bench_tokenizer \
  //tests/text:decode_ids_test >/dev/null
bin_root="$(tools/bazel info -c opt bazel-bin 2>/dev/null)"
ext="$(tools/bazel info output_base 2>/dev/null)/external"
mkdir -p "$dir"
for m in llama3 qwen3 llama2 llama3_1 qwen2_5; do
  src="$ext/tokenizer_$m/pkg/models/tokenizer.json"
  if [ ! -f "$src" ]; then
    echo "missing $src: $(cat "$ext/tokenizer_$m/error.txt" 2>/dev/null)" >&2
    exit 1
  fi
  cp "$src" "$dir/$m.json"
  # The model's folder as transformers' AutoTokenizer reads it (--auto).
  mkdir -p "$dir/$m"
  cp "$src" "$(dirname "$src")/tokenizer_config.json" "$dir/$m/"
done
cp tests/text/corpus.json tests/text/gen_reference.py tests/text/make_bench_text.py \
   tests/text/fuzz_ids.py tests/text/gen_decode_ids.py \
   tools/bench/bench_tokenizer_hf.py tools/dev/probe_tokenizers_unicode.py "$dir/"
mkdir -p "$dir/synthetic"
cp tests/text/synthetic/*.json "$dir/synthetic/"
cp -f "$bin_root/tools/bench/bench_tokenizer" "$bin_root/tests/text/decode_ids_test" "$dir/"
cat > "$dir/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs on the H200: reference ids and decodes, then atlas vs Hugging Face
# tokenizers. Arguments: the parts to run (default all).
set -uo pipefail
cd "$(dirname "$0")"
out=${OUT:-out}
mkdir -p "$out"
parts=${*:-expected decode unicode bench}
models=(llama3=llama3.json qwen3=qwen3.json llama2=llama2.json
  llama3_1=llama3_1.json qwen2_5=qwen2_5.json
  gpt2_style=synthetic/gpt2_style.json sp_metaspace=synthetic/sp_metaspace.json
  sp_unk_split=synthetic/sp_unk_split.json split_behaviors=synthetic/split_behaviors.json
  digits_plain=synthetic/digits_plain.json unicode_classes=synthetic/unicode_classes.json)
if [[ " $parts " == *" expected "* ]]; then
  python3 gen_reference.py --corpus corpus.json --out "$out/expected.json" \
    llama3=llama3.json:clean qwen3=qwen3.json llama2=llama2.json \
    llama3_1=llama3_1.json:clean qwen2_5=qwen2_5.json \
    gpt2_style=synthetic/gpt2_style.json:clean sp_metaspace=synthetic/sp_metaspace.json \
    sp_unk_split=synthetic/sp_unk_split.json split_behaviors=synthetic/split_behaviors.json \
    digits_plain=synthetic/digits_plain.json unicode_classes=synthetic/unicode_classes.json \
    --auto llama3=llama3 --auto qwen3=qwen3 --auto llama2=llama2 \
    --auto llama3_1=llama3_1 --auto qwen2_5=qwen2_5
fi
if [[ " $parts " == *" decode "* ]]; then
  # The committed set (seed 1, 300 a model), then a larger fuzz of decodes
  # and DecodeStream against decode_ids_test.
  python3 fuzz_ids.py --seed 1 --count 300 --out ids.json "${models[@]}"
  python3 gen_decode_ids.py --ids ids.json --out "$out/decode_ids.json" "${models[@]}"
  args=()
  for m in "${models[@]}"; do args+=("$m"); done
  {
    for seed in 2 3 4 5; do
      python3 fuzz_ids.py --seed $seed --count ${DECODE_FUZZ_COUNT:-3000} --out ids.json "${models[@]}"
      python3 gen_decode_ids.py --ids ids.json --out fuzz.json "${models[@]}"
      ./decode_ids_test --expected fuzz.json "${args[@]}" > "fuzz$seed.log" 2>&1
      echo "seed $seed: decode_ids_test exit $? ($(grep -c 'Failure' "fuzz$seed.log") failures)"
      grep -A12 Failure "fuzz$seed.log" | head -60
    done
  } 2>&1 | tee "$out/decode_fuzz.txt"
fi
if [[ " $parts " == *" unicode "* ]]; then
  # The Unicode versions tokenizers classifies by (runtime/text/unicode.h).
  python3 probe_tokenizers_unicode.py llama3.json synthetic | tee "$out/unicode.txt"
fi
if [[ " $parts " == *" bench "* ]]; then
  python3 make_bench_text.py --mb 12 --out bench.txt
  export TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1
  {
    for m in llama3 qwen3 llama2; do
      for mode in lines whole; do
        ./bench_tokenizer --tokenizer $m.json --text bench.txt --mode $mode --repeat 2 --ids-out atlas_ids.txt
        timeout 240 python3 bench_tokenizer_hf.py --tokenizer $m.json --text bench.txt --mode $mode \
          --repeat 1 --ids-out hf_ids.txt
        if cmp -s atlas_ids.txt hf_ids.txt; then echo "ids: identical ($m $mode)"; else echo "ids: DIFFER ($m $mode)"; fi
      done
    done
  } 2>&1 | tee "$out/bench.txt"
fi
RUN
chmod +x "$dir/run.sh"
echo "staged in $dir: carry it to the H200 and run: bash $dir/run.sh"
