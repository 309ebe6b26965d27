#!/usr/bin/env python3
"""Writes the GGUF fuzz seeds (tests/fuzz/corpus/gguf/; small, checked in).

A GGUF writer of its own, from the format's description: header (magic,
version, tensor and metadata counts), metadata, tensor table, padding to the
alignment, data. Rerun to regenerate.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
# ggml type: (elements per block, bytes per block)
BLOCKS = {0: (1, 4), 1: (1, 2), 2: (32, 18), 8: (32, 34), 12: (256, 144),
          13: (256, 176), 14: (256, 210), 30: (1, 2)}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return gstr(key) + struct.pack("<I", vtype) + payload


def gguf(kvs, tensors, version=3, alignment=32):
    """tensors: (name, dims, type); data bytes follow aligned."""
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    head += b"".join(kvs)
    data = b""
    table = b""
    for name, dims, t in tensors:
        block, size = BLOCKS[t]
        n = 1
        for d in dims:
            n *= d
        nbytes = n // block * size
        off = (len(data) + alignment - 1) // alignment * alignment
        data = data.ljust(off, b"\0") + bytes((i * 7) & 0xFF for i in range(nbytes))
        table += gstr(name) + struct.pack("<I", len(dims))
        table += b"".join(struct.pack("<Q", d) for d in dims)
        table += struct.pack("<IQ", t, off)
    head += table
    head = head.ljust((len(head) + alignment - 1) // alignment * alignment, b"\0")
    return head + data


def strings(key, items):
    return kv(key, 9, struct.pack("<IQ", 8, len(items)) + b"".join(gstr(s) for s in items))


META = [
    kv("general.architecture", 8, gstr("llama")),
    kv("llama.block_count", 4, struct.pack("<I", 1)),
    kv("llama.rope.freq_base", 6, struct.pack("<f", 10000.0)),
    kv("general.flag", 7, b"\x01"),
    strings("tokenizer.ggml.tokens", ["<s>", "a", "b"]),
    kv("tokenizer.ggml.token_type", 9, struct.pack("<IQ", 5, 3) + struct.pack("<3i", 1, 1, 3)),
]

SEEDS = {
    "empty_v3.bin": gguf([], []),
    "meta_only.bin": gguf(META, []),
    "f32_tensor.bin": gguf(META[:1], [("token_embd.weight", [4, 2], 0)]),
    "mixed_types.bin": gguf(META, [("a", [32, 2], 8), ("b", [256], 12), ("c", [256], 13),
                                   ("d", [256], 14), ("e", [32], 2), ("f", [8], 30),
                                   ("g", [8, 1, 1, 2], 1)]),
    "aligned_64.bin": gguf(META[:1] + [kv("general.alignment", 4, struct.pack("<I", 64))],
                           [("x", [16], 0), ("y", [16], 0)], alignment=64),
    "version_2.bin": gguf(META[:2], [("x", [4], 0)], version=2),
}

os.makedirs(os.path.join(HERE, "corpus", "gguf"), exist_ok=True)
for name, blob in SEEDS.items():
    with open(os.path.join(HERE, "corpus", "gguf", name), "wb") as f:
        f.write(blob)
