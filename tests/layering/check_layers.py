#!/usr/bin/env python3
"""Checks that every #include in Atlas's sources looks down the layers.

The layers, lowest first (docs/ARCHITECTURE.md explains each):
  0 base      runtime/base/            status, log, ledger, file reads, teardown
  1 device    runtime/device/          backend front door, red zones, op cache
  2 kernels   kernels/                 kernel modules (host C + CUDA images)
  2 cuda      runtime/cuda/            the CUDA backend
  2 lifecycle runtime/lifecycle/       the process's exit: the shutdown signal flag
  3 backends  runtime/backends/        the backend table
  3 parallel  runtime/parallel/        communicators (host, NCCL) over N backends
  4 formats   runtime/formats/         safetensors, checkpoints (no model)
              runtime/quant/           quantized formats (quantization_config)
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
Within the core (base and device) every concept has a level of its own
(CORE_LEVELS): a file includes only concepts of a lower level, or its own
concept (its .c includes its .h), so no two core files depend on each other
in a circle.
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
    ("parallel", 3, "runtime/parallel/"),
    ("formats", 4, "runtime/formats/"),
    ("formats", 4, "runtime/quant/"),
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
# The core's concepts by level, lowest first; a concept is a file stem (its
# .c and .h). A new core file must be placed here.
CORE_LEVELS = {
    "runtime/base/": [
        ["escape"],  # what statuses, logs and messages escape text with
        ["status", "site", "log_sink", "half", "version", "format_bytes"],
        ["log", "checked_math", "file_read", "weight_scan"],
        ["ledger"],
        ["ledger_report"],
        ["teardown"],
    ],
    "runtime/device/": [
        ["kernel_module", "fault", "host_pool"],
        ["kernel_registry"],
        ["backend_types"],     # handles, options, typed arguments
        ["backend_impl"],      # the vtable and the state every backend shares
        ["redzone"],           # guard bands, through the copy and fill entries
        ["backend_memory", "backend_modules"],  # ledgered memory; modules
        ["op_cache"],          # built on memory and modules, not the front door
        ["backend_lifecycle"],  # base_init / base_deinit (owns the op cache)
        ["backend"],           # the front door
        ["host_backend", "forward", "weight_upload"],
    ],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    best = None
    for group, level, prefix in LAYERS:
        if path.startswith(prefix) and (best is None or len(prefix) > len(best[2])):
            best = (group, level, prefix)
    return best  # None: a folder missing from LAYERS, reported by main


def core_level(path):
    """(folder, level, concept) of a core file; level None if unlisted."""
    for folder, levels in CORE_LEVELS.items():
        if path.startswith(folder) and "/" not in path[len(folder):]:
            stem = os.path.splitext(os.path.basename(path))[0]
            for level, concepts in enumerate(levels):
                if stem in concepts:
                    return folder, level, stem
            return folder, None, stem
    return None


def check_core(path, target, problems):
    src, dst = core_level(path), core_level(target)
    if src is None or dst is None or src[0] != dst[0] or src[2] == dst[2]:
        return
    if src[1] is None or dst[1] is None:
        return  # reported once per file by main
    if dst[1] >= src[1]:
        problems.append(f"{path} ({src[2]}, core level {src[1]}) includes {target} "
                        f"({dst[2]}, core level {dst[1]}): within the core, files "
                        "include only lower levels")


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
                core = core_level(path)
                if core is not None and core[1] is None:
                    problems.append(f"{path}: {core[2]} has no level in the core; add it to "
                                    "CORE_LEVELS in tests/layering/check_layers.py")
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
                    check_core(path, target, problems)
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
