#!/usr/bin/python3
"""The reference for experiments/attention_lab.cu: PyTorch's scaled_dot_product_attention
(what transformers' "sdpa" attention calls) timed on the same shapes, causal, BF16 and
F16, one sequence: ms per call (CUDA events, mean of 20 after a warm-up) and TFLOPS
counting 4 * n^2 / 2 * head_dim * heads, as the lab counts.

  python3 experiments/attention_sdpa.py            (prints; with $OUT set, also $OUT/attention_sdpa.txt)

GQA: K and V are expanded to every query head before the timing (enable_gqa where
this torch has it is timed too), as transformers does for sdpa.
"""

import os

import torch
import torch.nn.functional as F

SHAPES = [("1B d64", 32, 8, 64), ("8B d128", 32, 8, 128)]
REPS = 20


def time_ms(fn):
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(REPS):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / REPS


def main():
    lines = [f"torch {torch.__version__}, {torch.cuda.get_device_name()}"]
    for dtype, name in ((torch.bfloat16, "bf16"), (torch.float16, "f16")):
        for shape, heads, kv, dim in SHAPES:
            for n in (512, 2048):
                q = torch.randn(1, heads, n, dim, device="cuda", dtype=dtype)
                k = torch.randn(1, kv, n, dim, device="cuda", dtype=dtype)
                v = torch.randn(1, kv, n, dim, device="cuda", dtype=dtype)
                ke = k.repeat_interleave(heads // kv, dim=1)
                ve = v.repeat_interleave(heads // kv, dim=1)
                ms = time_ms(lambda: F.scaled_dot_product_attention(q, ke, ve, is_causal=True))
                flops = 4.0 * n * n / 2.0 * dim * heads
                line = f"{name:4} {shape:8} n {n:5}  sdpa {ms:8.4f} ms {flops / ms / 1e9:7.1f} TFLOPS"
                try:
                    ms_gqa = time_ms(lambda: F.scaled_dot_product_attention(
                        q, k, v, is_causal=True, enable_gqa=True))
                    line += f"   enable_gqa {ms_gqa:8.4f} ms {flops / ms_gqa / 1e9:7.1f} TFLOPS"
                except TypeError:
                    pass  # this torch has no enable_gqa
                lines.append(line)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "attention_sdpa.txt"), "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
