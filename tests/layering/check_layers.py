#!/usr/bin/env python3
"""Checks that every #include in Atlas's sources looks down the layers.

The layers, lowest first (docs/ARCHITECTURE.md explains each):
  0 base      runtime/base/            status, log, ledger, file reads, teardown
  1 device    runtime/device/          backend front door, red zones, op cache
  2 kernels   kernels/                 kernel modules (host C + CUDA images)
  2 cuda      runtime/cuda/            the CUDA backend
  2 lifecycle runtime/lifecycle/       the process's exit: the shutdown signal flag
  3 backends  runtime/backends/        the backend table
  4 formats   runtime/formats/         safetensors, checkpoints (no model)
  4 text      runtime/text/, runtime/chat/, runtime/sampling/
  5 arch      runtime/arch/            one folder per architecture family
  6 model     runtime/model/           serving: a model on its own backend, swap
  7 generate  runtime/generate/        the step loop: sampling, stop strings, EOS, text
  8 serve     runtime/serve/           the scheduler, the KV pool, the prefix cache,
                                       OpenAI request/response JSON
  9 api       runtime/api/             the public C API (atlas/atlas.h)
 10 tools     tools/                   the CLI, benchmarks, writers

A file may include a file of a lower layer, or of its own group. Groups on
one level (kernels and cuda; formats and text) never include each other.
Usage: check_layers.py [ROOT]; exit 1 listing every upward include.
"""
import os
import re
import sys

LAYERS = [  # (group, level, path prefix); longest prefix wins
    ("base", 0, "runtime/base/"),
    ("base", 0, "lint/atlas_static.h"),
    ("device", 1, "runtime/device/"),
    ("kernels", 2, "kernels/"),
    ("cuda", 2, "runtime/cuda/"),
    ("lifecycle", 2, "runtime/lifecycle/"),
    ("backends", 3, "runtime/backends/"),
    ("formats", 4, "runtime/formats/"),
    ("text", 4, "runtime/text/"),
    ("text", 4, "runtime/chat/"),
    ("text", 4, "runtime/sampling/"),
    ("arch", 5, "runtime/arch/"),
    ("model", 6, "runtime/model/"),
    ("generate", 7, "runtime/generate/"),
    ("serve", 8, "runtime/serve/"),
    ("api", 9, "runtime/api/"),
    ("tools", 10, "tools/"),
]
# Backend and teardown never depend on each other (a teardown ends with the
# ledger's sweep result, not with a backend call).
FORBIDDEN = [
    ("runtime/device/backend", "runtime/base/teardown"),
    ("runtime/base/teardown", "runtime/device/backend"),
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    best = None
    for group, level, prefix in LAYERS:
        if path.startswith(prefix) and (best is None or len(prefix) > len(best[2])):
            best = (group, level, prefix)
    return best  # None: a folder missing from LAYERS, reported by main


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    problems = []
    checked = 0
    for top in ("runtime", "kernels", "tools"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".c", ".h", ".cu", ".cuh", ".cc")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                src = layer_of(path)
                if src is None:
                    problems.append(f"{path}: its folder has no layer; add it to "
                                    "tests/layering/check_layers.py and docs/ARCHITECTURE.md")
                    continue
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    text = f.read()
                for inc in INCLUDE.findall(text):
                    # CUDA sources are compiled by nvcc from the repository
                    # root (kernels/cuda_fatbin.bzl), so their device headers
                    # are spelled from there; C and C++ use the atlas/ prefix.
                    cuda_from_root = name.endswith((".cu", ".cuh")) and inc.endswith(".cuh")
                    if not inc.startswith("atlas/") and not cuda_from_root:
                        if re.match(r"(runtime|kernels|tools)/", inc):
                            problems.append(f"{path}: includes {inc} without the atlas/ prefix")
                        continue
                    target = inc if cuda_from_root else inc[len("atlas/"):]
                    checked += 1
                    dst = layer_of(target)
                    if dst is None:
                        continue  # tests/ or generated files outside the layers
                    if dst[0] != src[0] and dst[1] >= src[1]:
                        problems.append(f"{path} ({src[0]}, layer {src[1]}) includes "
                                        f"{target} ({dst[0]}, layer {dst[1]})")
                    for a, b in FORBIDDEN:
                        if path.startswith(a + ".") and target.startswith(b + ".") or \
                           path.startswith(a + "_") and target.startswith(b + "."):
                            problems.append(f"{path} includes {target}: {a} and {b} "
                                            "never depend on each other")
    for p in problems:
        print("layering:", p)
    print(f"layering: {checked} includes checked, {len(problems)} problems")
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
