#!/usr/bin/env python3
"""Writes the fuzz seed corpus (small, checked in). Rerun to regenerate."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = {"F32": 4, "F16": 2, "BF16": 2, "I8": 1}


def safetensors(tensors, metadata=None, lead="", pad=0):
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    off = 0
    data = b""
    for name, dtype, shape in tensors:
        n = SIZES[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + n]}
        data += bytes((i * 37 + len(name)) & 0xFF for i in range(n))
        off += n
    text = (lead + json.dumps(header, separators=(",", ":")) + " " * pad).encode()
    return struct.pack("<Q", len(text)) + text + data


def write(sub, name, blob):
    with open(os.path.join(HERE, "corpus", sub, name), "wb") as f:
        f.write(blob if isinstance(blob, bytes) else blob.encode())


seeds = {
    "f32_pair.bin": safetensors([("a", "F32", [2, 3]), ("b", "F32", [3])]),
    "f16_bf16.bin": safetensors([("x", "F16", [4]), ("y", "BF16", [2, 2])]),
    "metadata.bin": safetensors([("w", "F32", [1])], {"format": "pt"}),
    "scalar_empty.bin": safetensors([("s", "F32", []), ("z", "F32", [0, 5])]),
    "leading_ws.bin": safetensors([("w", "BF16", [3])], lead=" \n\t", pad=5),
    "empty.bin": safetensors([]),
    "unsupported.bin": safetensors([("i", "I8", [4])]),
    "rank3.bin": safetensors([("t", "F16", [2, 1, 2]), ("u", "F32", [1, 1, 1, 1])]),
}
for name, blob in seeds.items():
    write("safetensors", name, blob)

base = {
    "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
    "tie_word_embeddings": False, "max_position_embeddings": 128,
    "hidden_act": "silu", "model_type": "llama",
}
configs = {
    "tiny.json": base,
    "minimal.json": {k: base[k] for k in ["vocab_size", "hidden_size", "intermediate_size",
                                          "num_hidden_layers", "num_attention_heads"]},
    "rope_parameters.json": dict(base, rope_theta=None,
                                 rope_parameters={"rope_type": "default", "rope_theta": 500000.0}),
    "tied_head_dim.json": dict(base, tie_word_embeddings=True, head_dim=16, rope_scaling=None),
    "bad_types.json": dict(base, hidden_size="32"),
}
for name, cfg in configs.items():
    write("config", name, json.dumps(cfg, indent=1))

# config_check: config text followed by one selector byte (which tensor the
# oracle drops or misshapes).
checks = {name[:-5] + ".bin": (json.dumps(cfg, indent=1), 0x83) for name, cfg in configs.items()}
small = {"vocab_size": 16, "hidden_size": 8, "intermediate_size": 12,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}
checks["small.bin"] = (json.dumps(small), 0x05)
checks["small_tied.bin"] = (json.dumps(dict(small, tie_word_embeddings=True)), 0x81)
for name, (text, selector) in checks.items():
    write("config_check", name, text.encode() + bytes([selector]))

# Header sizes that exercise the metadata path: 250 __metadata__ keys
# (inserted out of order, so the sort does real work) within the fuzzers'
# -max_len of 4096 bytes, near-duplicate keys, and a non-string value.
many = {"k%03d" % (249 - i): "v%d" % i for i in range(250)}
write("safetensors", "metadata_many.bin", safetensors([("w", "F32", [2])], many))
prefixes = {"k" * (i + 1): "x" * i for i in range(40)}
write("safetensors", "metadata_prefixes.bin", safetensors([("w", "F16", [2])], prefixes))
write("safetensors", "metadata_nonstring.bin",
      safetensors([("w", "F32", [1])], {"format": "pt", "n": 3}))


# checkpoint_dir (tests/fuzz/checkpoint_dir_fuzz.c): byte 0 picks file kinds,
# then the index JSON and shards model-1..4.safetensors split on "\n--\n".
def ckdir(kinds, index, *shards):
    parts = [json.dumps(index).encode()] + list(shards)
    return bytes([kinds]) + b"\n--\n".join(parts)


def shard(tensors, metadata=None):
    return safetensors([(n, "F32", s) for n, s in tensors], metadata)


dirs = {
    # the index's own "metadata" block, shards with many __metadata__ keys
    "sharded_metadata.bin": ckdir(
        0, {"metadata": {"total_size": 12},
            "weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}},
        shard([("a", [2])], {"m%02d" % (59 - i): "x" for i in range(60)}),
        shard([("b", [1])], {"format": "pt"})),
    # shard names that leave the directory or name a subdirectory
    "sharded_traversal.bin": ckdir(
        0, {"weight_map": {"a": "../model-1.safetensors", "b": "/etc/passwd",
                           "c": "sub/model-2.safetensors", "d": ".."}},
        shard([("a", [1])]), shard([("c", [1])])),
    # the index names a tensor its shard lacks, and a shard holds one it
    # does not list
    "sharded_missing.bin": ckdir(
        0, {"weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}},
        shard([("a", [1]), ("extra", [1])]), shard([("c", [1])])),
    # one tensor in two shards
    "sharded_duplicate.bin": ckdir(
        0, {"weight_map": {"a": "model-1.safetensors"}},
        shard([("a", [1])]), shard([("a", [1])])),
    # many tensors spread over four shards
    "sharded_many.bin": ckdir(
        0, {"weight_map": {"t%02d" % i: "model-%d.safetensors" % (1 + i % 4)
                           for i in range(32)}},
        *[shard([("t%02d" % i, [1]) for i in range(32) if i % 4 == s])
          for s in range(4)]),
    # sharded index and a model.safetensors beside it; a weight_map value
    # that is not a string
    "sharded_and_single.bin": ckdir(
        8, {"weight_map": {"a": "model-1.safetensors", "b": 7}},
        shard([("a", [1])]), shard([("b", [1])])),
}
for name, blob in dirs.items():
    write("checkpoint_dir", name, blob)

# ---- tokenizer: tokenizer.json, a NUL, then a text to encode ----
# Each synthetic tokenizer of tests/text (make_synthetic.py), shrunk to its
# first 80 ids and the merges among them, so that a seed stays a few KiB.
ROOT = os.path.dirname(os.path.dirname(HERE))
TEXTS = ["Hello world, it's 2024!", "  spaced\tout\n\nlines ", "café 中文 😀 ﬁ ①",
         "<s> special </s> tokens <unk>", "a" * 40, "x\u0301y\u200b\r\n", ""]


def shrink(tok, keep=80):
    model = tok["model"]
    vocab = {t: i for t, i in model["vocab"].items() if i < keep}
    merges = []
    for m in model.get("merges", []):
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(m)
    model = dict(model, vocab=vocab, merges=merges[:40])
    if model.get("unk_token") not in vocab:
        model["unk_token"] = None
    return dict(tok, model=model)


for i, path in enumerate(sorted(os.listdir(os.path.join(ROOT, "tests", "text", "synthetic")))):
    tok = json.load(open(os.path.join(ROOT, "tests", "text", "synthetic", path), encoding="utf-8"))
    text = TEXTS[i % len(TEXTS)] + TEXTS[(i + 3) % len(TEXTS)]
    blob = json.dumps(shrink(tok), ensure_ascii=False, separators=(",", ":")).encode()
    write("tokenizer", path.replace(".json", ".bin"), blob + b"\0" + text.encode())

# ---- chat_template: template source ----
# The real templates (from tests/chat/reference.json, which holds their
# text) and a spread of its engine snippets.
ref = json.load(open(os.path.join(ROOT, "tests", "chat", "reference.json"), encoding="utf-8"))
for t in ref["templates"]:
    write("chat_template", t["id"] + ".jinja", t["chat_template"].encode())
for i, s in enumerate(ref["snippets"][::6]):
    write("chat_template", "snippet%02d.jinja" % i, s["template"].encode())
