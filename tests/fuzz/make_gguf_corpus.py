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


def u32(key, v):
    return kv(key, 4, struct.pack("<I", v))


def f32s(key, items):
    return kv(key, 9, struct.pack("<IQ", 6, len(items)) + b"".join(struct.pack("<f", x) for x in items))


def i32s(key, items):
    return kv(key, 9, struct.pack("<IQ", 5, len(items)) + b"".join(struct.pack("<i", x) for x in items))


# A whole model's metadata, for the config and tokenizer builders the
# fuzzer runs too (gguf_model.h, gguf_tokenizer.h).
MODEL = [
    kv("general.architecture", 8, gstr("llama")),
    u32("llama.context_length", 64), u32("llama.embedding_length", 32),
    u32("llama.block_count", 1), u32("llama.feed_forward_length", 64),
    u32("llama.attention.head_count", 4), u32("llama.attention.head_count_kv", 2),
    kv("llama.rope.scaling.type", 8, gstr("yarn")),
    kv("llama.rope.scaling.factor", 6, struct.pack("<f", 4.0)),
    u32("llama.rope.scaling.original_context_length", 16),
    u32("tokenizer.ggml.bos_token_id", 0), u32("tokenizer.ggml.eos_token_id", 1),
    kv("tokenizer.ggml.add_bos_token", 7, b"\x01"),
    kv("tokenizer.chat_template", 8, gstr("{% for m in messages %}{{ m['content'] }}{% endfor %}")),
]
GPT2 = MODEL + [
    kv("tokenizer.ggml.model", 8, gstr("gpt2")),
    kv("tokenizer.ggml.pre", 8, gstr("qwen2")),
    strings("tokenizer.ggml.tokens", ["<|s|>", "<|e|>", "a", "b", "ab", "\u0120a"]),
    i32s("tokenizer.ggml.token_type", [3, 3, 1, 1, 1, 4]),
    strings("tokenizer.ggml.merges", ["a b"]),
]
SPM = MODEL + [
    kv("tokenizer.ggml.model", 8, gstr("llama")),
    strings("tokenizer.ggml.tokens", ["<unk>", "<s>", "\u2581", "a", "\u2581a", "<0x0A>"]),
    i32s("tokenizer.ggml.token_type", [2, 3, 1, 1, 1, 6]),
    f32s("tokenizer.ggml.scores", [0, 0, -1, -2, -3, 0]),
]

SEEDS = {
    "model_gpt2.bin": gguf(GPT2, [("token_embd.weight", [32, 6], 0)]),
    "model_spm.bin": gguf(SPM, [("blk.0.attn_q.weight", [32, 32], 8)]),
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
