#!/usr/bin/env python3
"""Times Hugging Face tokenizers (Rust, Python bindings) single-threaded on
the same files and in the same modes as tools/bench/bench_tokenizer.c, so the two
can be compared side by side on one machine:

  TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 \\
  python3 bench_tokenizer_hf.py --tokenizer tokenizer.json --text big.txt \\
      [--mode whole|lines] [--repeat N] [--ids-out FILE]

whole: one encode() of the whole file; lines: encode_batch() over the lines
(newline kept with its line; parallelism off, so one thread, and no Python
call per line). add_special_tokens is off in both. --ids-out writes the ids
one per line, to compare with bench_tokenizer --ids-out.
"""
import argparse
import os
import time

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ.setdefault("RAYON_NUM_THREADS", "1")
import tokenizers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--tokenizer", required=True)
ap.add_argument("--text", required=True)
ap.add_argument("--mode", choices=["whole", "lines"], default="whole")
ap.add_argument("--repeat", type=int, default=3)
ap.add_argument("--ids-out")
args = ap.parse_args()

with open(args.text, encoding="utf-8", newline="") as f:
    text = f.read()
nbytes = len(text.encode("utf-8"))
inputs = [text]
if args.mode == "lines":  # split at "\n" only, as the C bench does
    parts = text.split("\n")
    inputs = [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])

t = time.monotonic()
tok = Tokenizer.from_file(args.tokenizer)
load = time.monotonic() - t
best = best_cpu = float("inf")
n = 0
for r in range(args.repeat):
    tok = Tokenizer.from_file(args.tokenizer)  # a fresh word cache each run
    t, c = time.monotonic(), time.process_time()
    if args.mode == "whole":
        encs = [tok.encode(text, add_special_tokens=False)]
    else:
        encs = tok.encode_batch(inputs, add_special_tokens=False)
    dt, dc = time.monotonic() - t, time.process_time() - c
    best, best_cpu = min(best, dt), min(best_cpu, dc)
    n = sum(len(e.ids) for e in encs)
    if r == 0 and args.ids_out:
        with open(args.ids_out, "w") as f:
            for e in encs:
                for i in e.ids:
                    f.write("%d\n" % i)
print("hf tokenizers %s: %s mode=%s bytes=%d tokens=%d load=%.2fs best_of_%d: "
      "wall %.3fs = %.2f MB/s, cpu %.3fs = %.2f MB/s" % (
          tokenizers.__version__, args.tokenizer, args.mode, nbytes, n, load, args.repeat,
          best, nbytes / best / 1e6, best_cpu, nbytes / best_cpu / 1e6))
