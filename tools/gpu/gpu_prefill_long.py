#!/usr/bin/env python3
"""Long prompts: Atlas's batched prefill against transformers sdpa on the same
random BF16 weights, side by side (gpu_speed.py covers 512 and 2048 tokens).

    python3 tools/gpu/gpu_prefill_long.py BENCH [1b] [8b] [--tokens 4096,8192,16384]

Prints one row a length: Atlas (`bench prefill`, BF16 KV cache), transformers
sdpa, and the ratio. Needs torch, transformers, safetensors (the H200 has them).
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_speed as gs  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench")
    ap.add_argument("shapes", nargs="*", default=["1b", "8b"])
    ap.add_argument("--tokens", default="4096,8192,16384")
    a = ap.parse_args()
    lengths = [int(x) for x in a.tokens.split(",")]
    table = []
    for name in a.shapes:
        s = gs.SHAPES[name]
        ckpt = f"/tmp/atlas_prefill_long_{name}"
        weights = gs.make_weights(s)
        os.makedirs(ckpt, exist_ok=True)
        save_file({k: v.cpu() for k, v in weights.items()}, os.path.join(ckpt, "model.safetensors"))
        with open(os.path.join(ckpt, "config.json"), "w") as f:
            json.dump(gs.config_json(s), f)
        model = gs.hf_model(s, weights)
        gs.set_attn(model, "sdpa")
        sdpa = {}
        for n in lengths:
            try:
                sdpa[n] = gs.hf_prefill_ms(model, n, s["vocab"])
            except Exception as e:  # out of memory at the longest
                gs.log(f"sdpa {n}: {e}")
        del model, weights
        torch.cuda.empty_cache()
        _, _, pre = gs.run([a.bench, "prefill", ckpt, "--tokens", a.tokens, "--reps", "3"])
        for n in lengths:
            at, sd = pre.get(f"prefill_{n}_ms"), sdpa.get(n)
            ratio = f"{at / sd:.2f}x" if at and sd else ""
            table.append((s["label"], n, at, sd, ratio))
    print("\n== long prefill (ms, median)")
    print(f"{'shape':22} {'tokens':>7} {'atlas':>10} {'sdpa':>10} {'atlas/sdpa':>10}")
    for label, n, at, sd, ratio in table:
        fa = f"{at:.2f}" if at else "missing"
        fs = f"{sd:.2f}" if sd else "missing"
        print(f"{label:22} {n:>7} {fa:>10} {fs:>10} {ratio:>10}")


if __name__ == "__main__":
    main()
