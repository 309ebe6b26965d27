#!/usr/bin/env python3
"""Per-kernel time and DRAM bandwidth of Atlas's decode step (ncu).

    python3 tools/gpu/gpu_profile_decode.py BENCH [1b] [8b]

For each shape (random BF16 weights, as tools/gpu/gpu_speed.py writes them) runs
`bench decode DIR --context 128 --steps 2` under Nsight Compute and prints,
per decode kernel: launches, median time, bytes read + written and the
achieved bandwidth, then the sum over one step. ncu serialises kernels, so the
sum leaves out launch gaps; it says which kernels are far from the bandwidth
they could reach. Needs ncu (Nsight Compute) on the PATH, torch, safetensors.
"""
import csv
import io
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_speed  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

# Kernels of the prompt and the load, left out of the decode step's table
# (cuBLASLt's are "nvjet..." and "void cublasLt::...").
PREFILL_PREFIXES = ("gemm", "prefill", "attention_prefill", "embed_rows",
                    "rmsnorm_rows", "rope_rows", "rope_store_rows", "kv_store_rows",
                    "round_rows", "silu_mul_round", "weight_scan", "nvjet",
                    "void cublasLt")


def checkpoint(name):
    s = gpu_speed.SHAPES[name]
    ckpt = f"/tmp/atlas_speed_{name}"
    if not os.path.exists(os.path.join(ckpt, "model.safetensors")):
        weights = gpu_speed.make_weights(s)
        os.makedirs(ckpt, exist_ok=True)
        save_file({k: v.cpu() for k, v in weights.items()},
                  os.path.join(ckpt, "model.safetensors"))
        with open(os.path.join(ckpt, "config.json"), "w") as f:
            json.dump(gpu_speed.config_json(s), f)
        del weights
    return ckpt


def profile(bench, name):
    ckpt = checkpoint(name)
    cmd = ["ncu", "--clock-control", "none", "--csv", "--page", "raw",
           "--metrics", "gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum",
           bench, "decode", ckpt, "--context", "128", "--steps", "2"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    text = p.stdout
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], f"ncu_{name}.csv"), "w") as f:
            f.write(text)
    start = text.find('"ID"')
    if p.returncode != 0 or start < 0:
        print(f"{name}: ncu failed (rc {p.returncode})\n{p.stderr[-3000:]}\n{text[-2000:]}")
        return
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    units = rows[0]
    per = {}
    skipped = 0
    print(f"{name}: {len(rows) - 1} kernel rows; columns {list(rows[0].keys())[:12]}")
    for r in rows[1:]:
        k = r["Kernel Name"].split("(")[0]
        if k.startswith(PREFILL_PREFIXES):
            continue
        try:
            t = float(r["gpu__time_duration.sum"].replace(",", ""))
            rd = float(r["dram__bytes_read.sum"].replace(",", ""))
            wr = float(r["dram__bytes_write.sum"].replace(",", ""))
        except (ValueError, KeyError):
            skipped += 1
            continue
        per.setdefault(k, []).append((t, rd + wr))
    tu = units.get("gpu__time_duration.sum", "")
    bu = units.get("dram__bytes_read.sum", "")
    # Nsight Compute has written both spellings ("nsecond", and "ns" in 2025).
    tscale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0,
              "msecond": 1e3, "ms": 1e3}.get(tu, 1.0)
    bscale = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}.get(bu, 1.0)
    # 5 decode steps ran with the graph (3 warm-up + 2), 5 eager: 10 steps.
    steps = max(len(v) for k, v in per.items() if k.startswith("argmax")) if any(
        k.startswith("argmax") for k in per) else 10
    print(f"\n{name}: decode kernels under ncu ({steps} steps), time in us, bytes in MB")
    print(f"{'kernel':34s} {'per step':>8s} {'median':>9s} {'MB':>9s} {'GB/s':>8s} {'us/step':>9s}")
    total = 0.0
    for k, v in sorted(per.items(), key=lambda kv: -sum(t for t, _ in kv[1])):
        med_t = statistics.median(t for t, _ in v) * tscale
        med_b = statistics.median(b for _, b in v) * bscale
        n = len(v) / steps
        total += med_t * n
        gbs = med_b / (med_t * 1e-6) / 1e9 if med_t > 0 else 0
        print(f"{k:34s} {n:8.1f} {med_t:9.2f} {med_b / 1e6:9.2f} {gbs:8.0f} {med_t * n:9.1f}")
    print(f"{'sum of one step (no launch gaps)':34s} {'':8s} {'':9s} {'':9s} {'':8s} {total:9.1f}")


def main():
    bench = sys.argv[1]
    for name in sys.argv[2:] or ["1b"]:
        profile(bench, name)


if __name__ == "__main__":
    main()
