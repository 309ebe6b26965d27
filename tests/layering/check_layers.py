#!/usr/bin/env python3
"""Checks that every #include in Atlas's sources looks down the layers.

The layers, lowest first (docs/ARCHITECTURE.md explains each):
  0 core      runtime/*.{c,h}          status, ledger, backend, teardown, ...
  1 kernels   kernels/                 kernel modules (host C + CUDA images)
  1 cuda      runtime/cuda/            the CUDA backend
  1 lifecycle runtime/lifecycle/       the process's exit: the shutdown signal flag
  2 backends  runtime/backends/        the backend table
  3 formats   runtime/formats/         safetensors, checkpoints (no model)
  3 text      runtime/text/, runtime/chat/, runtime/sampling/
  4 arch      runtime/arch/            one folder per architecture family
  5 model     runtime/model/           serving: a model on its own backend, swap
  6 generate  runtime/generate/        the step loop: sampling, stop strings, EOS, text
  7 serve     runtime/serve/           the scheduler, the KV pool, the prefix cache,
                                       OpenAI request/response JSON
  8 api       runtime/api/             the public C API (atlas/atlas.h)
  9 tools     tools/                   the CLI, benchmarks, writers

A file may include a file of a lower layer, or of its own group. Groups on
one level (kernels and cuda; formats and text) never include each other.
Usage: check_layers.py [ROOT]; exit 1 listing every upward include.
"""
import os
import re
import sys

LAYERS = [  # (group, level, path prefix); longest prefix wins
    ("core", 0, "runtime/"),
    ("core", 0, "lint/atlas_static.h"),
    ("lifecycle", 1, "runtime/lifecycle/"),
    ("kernels", 1, "kernels/"),
    ("cuda", 1, "runtime/cuda/"),
    ("backends", 2, "runtime/backends/"),
    ("formats", 3, "runtime/formats/"),
    ("text", 3, "runtime/text/"),
    ("text", 3, "runtime/chat/"),
    ("text", 3, "runtime/sampling/"),
    ("arch", 4, "runtime/arch/"),
    ("model", 5, "runtime/model/"),
    ("generate", 6, "runtime/generate/"),
    ("serve", 7, "runtime/serve/"),
    ("api", 8, "runtime/api/"),
    ("tools", 9, "tools/"),
]
# Within core, backend and teardown never depend on each other.
FORBIDDEN = [
    ("runtime/backend", "runtime/teardown"),
    ("runtime/teardown", "runtime/backend"),
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    best = None
    for group, level, prefix in LAYERS:
        if path.startswith(prefix) and (best is None or len(prefix) > len(best[2])):
            best = (group, level, prefix)
    if best is None:
        return None
    if best[0] == "core" and "/" in path[len("runtime/"):] and path.startswith("runtime/"):
        return None  # a runtime subfolder missing from LAYERS: reported below
    return best


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
