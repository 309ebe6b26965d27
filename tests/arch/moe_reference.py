#!/usr/bin/env python3
"""A mixture-of-experts decoder written out in plain Python, for the host check.

Families: qwen3_moe, mixtral and qwen2_moe (its shared expert and gate); the
qwen3_moe and mixtral models are written a second time with their experts as
transformers 5 holds them (fused 3-D gate_up_proj and down_proj).

Independent of Atlas's kernels (kernels/moe_host.c) and of transformers: every
sum is a Python float (float64), the model is read from the dictionaries this
script builds, and the routing is written from the model classes' definition
(softmax over the router's logits, the k largest, equal ones to the lower
expert index, renormalised where norm_topk_prob or Mixtral).

Each case is a tiny random model, f32 weights, written in the parity format
(config.json, model.safetensors, ref.json, logits.f32: rows = the prompt's
positions, then one per generated token) with routing rows chosen so that:
  * experts 0/1 and 2/3 have opposite router rows, so for every token one of
    each pair has a logit > 0;
  * the last expert's router row is 0: with k = 2 it is never picked (two
    experts are above it at every token), and ref.json counts its picks (0);
  * two experts share one router row (their probabilities are equal at every
    token) but not their weights: where only one of them fits in the top k,
    the lower index must be the one taken. ref.json counts those tokens.

  python3 tests/arch/moe_reference.py --out tests/arch/data_moe
"""
import argparse
import json
import math
import os
import random
import struct


def rand_matrix(rng, rows, cols, scale):
    return [[scale * (rng.random() - 0.5) for _ in range(cols)] for _ in range(rows)]


def f32(v):
    """Rounds to float32 (what the checkpoint stores and Atlas reads)."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


def bf16(v):
    """Rounds to bfloat16 (nearest even), as a float."""
    b = struct.unpack("<I", struct.pack("<f", v))[0]
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", b))[0]


def matvec(w, x):
    return [sum(a * b for a, b in zip(row, x)) for row in w]


def rmsnorm(x, w, eps):
    r = 1.0 / math.sqrt(sum(v * v for v in x) / len(x) + eps)
    return [v * r * g for v, g in zip(x, w)]


def silu(v):
    return v / (1.0 + math.exp(-v))


def rope(vec, pos, head_dim, theta):
    """transformers' rotate_half RoPE on one head."""
    half = head_dim // 2
    out = list(vec)
    for i in range(half):
        f = pos * theta ** (-2.0 * i / head_dim)
        c, s = math.cos(f), math.sin(f)
        a, b = vec[i], vec[i + half]
        out[i] = a * c - b * s
        out[i + half] = b * c + a * s
    return out


def route(cfg, router, x, stats):
    logits = matvec(router, x)
    top = max(logits)
    p = [math.exp(v - top) for v in logits]
    total = sum(p)
    p = [v / total for v in p]
    k = cfg["k"]
    # Stable: the larger probability first, equal ones by expert index.
    order = sorted(range(len(p)), key=lambda e: (-p[e], e))
    chosen = order[:k]
    tie = cfg["tie"]
    if p[tie[0]] == p[tie[1]] and (tie[0] in chosen) != (tie[1] in chosen):
        stats["tie_straddles"] += 1
    if tie[0] in chosen and tie[1] in chosen:
        stats["tie_both"] += 1
    for e in chosen:
        stats["picks"][e] += 1
    w = [p[e] for e in chosen]
    if cfg["norm_topk_prob"]:
        s = sum(w)
        w = [v / s for v in w]
    return chosen, w


def expert(ew, x):
    g = matvec(ew["gate"], x)
    u = matvec(ew["up"], x)
    return matvec(ew["down"], [silu(a) * b for a, b in zip(g, u)])


def forward_token(cfg, model, token, pos, cache, stats):
    hidden, hd = cfg["hidden"], cfg["head_dim"]
    nh, nkv = cfg["heads"], cfg["kv_heads"]
    eps = cfg["eps"]
    x = list(model["embed"][token])
    for li, L in enumerate(model["layers"]):
        h = rmsnorm(x, L["input_norm"], eps)
        q, k, v = matvec(L["q"], h), matvec(L["k"], h), matvec(L["v"], h)
        if "q_bias" in L:
            q = [a + b for a, b in zip(q, L["q_bias"])]
            k = [a + b for a, b in zip(k, L["k_bias"])]
            v = [a + b for a, b in zip(v, L["v_bias"])]
        qs = [q[i * hd:(i + 1) * hd] for i in range(nh)]
        ks = [k[i * hd:(i + 1) * hd] for i in range(nkv)]
        vs = [v[i * hd:(i + 1) * hd] for i in range(nkv)]
        if cfg["qk_norm"]:
            qs = [rmsnorm(t, L["q_norm"], eps) for t in qs]
            ks = [rmsnorm(t, L["k_norm"], eps) for t in ks]
        qs = [rope(t, pos, hd, cfg["theta"]) for t in qs]
        ks = [rope(t, pos, hd, cfg["theta"]) for t in ks]
        cache[li].append((ks, vs))
        att = []
        for i in range(nh):
            g = i // (nh // nkv)
            scores = [sum(a * b for a, b in zip(qs[i], kk[g])) / math.sqrt(hd)
                      for kk, _ in cache[li]]
            top = max(scores)
            e = [math.exp(s - top) for s in scores]
            tot = sum(e)
            out = [0.0] * hd
            for wgt, (_, vv) in zip(e, cache[li]):
                for d in range(hd):
                    out[d] += wgt / tot * vv[g][d]
            att.extend(out)
        x = [a + b for a, b in zip(x, matvec(L["o"], att))]
        h = rmsnorm(x, L["post_norm"], eps)
        if "router" in L:
            chosen, w = route(cfg, L["router"], h, stats)
            y = [0.0] * hidden
            for e, wgt in zip(chosen, w):
                ye = expert(L["experts"][e], h)
                y = [a + wgt * b for a, b in zip(y, ye)]
            if "shared" in L:
                g = sum(a * b for a, b in zip(L["shared_gate"], h))
                g = 1.0 / (1.0 + math.exp(-g))
                y = [a + g * b for a, b in zip(y, expert(L["shared"], h))]
        else:
            y = expert(L["mlp"], h)
        x = [a + b for a, b in zip(x, y)]
    h = rmsnorm(x, model["final_norm"], eps)
    return matvec(model["lm_head"], h)


def build(cfg, seed):
    """The model's tensors (float32 values) and their checkpoint names."""
    rng = random.Random(seed)
    f32 = bf16 if cfg.get("dtype") == "bf16" else globals()["f32"]
    hidden, hd = cfg["hidden"], cfg["head_dim"]
    nh, nkv = cfg["heads"], cfg["kv_heads"]
    tensors = {}

    def mat(name, rows, cols, scale=0.6):
        m = [[f32(v) for v in row] for row in rand_matrix(rng, rows, cols, scale)]
        tensors[name] = m
        return m

    def vec(name, n):
        v = [f32(0.5 + rng.random()) for _ in range(n)]
        tensors[name] = [v]
        return v

    names = cfg["names"]
    model = {"embed": mat("model.embed_tokens.weight", cfg["vocab"], hidden, 2.0),
             "layers": []}
    E, inter = cfg["experts"], cfg["moe_inter"]
    for li in range(cfg["layers"]):
        p = "model.layers.%d." % li
        L = {"input_norm": vec(p + "input_layernorm.weight", hidden),
             "q": mat(p + "self_attn.q_proj.weight", nh * hd, hidden),
             "k": mat(p + "self_attn.k_proj.weight", nkv * hd, hidden),
             "v": mat(p + "self_attn.v_proj.weight", nkv * hd, hidden),
             "o": mat(p + "self_attn.o_proj.weight", hidden, nh * hd),
             "post_norm": vec(p + "post_attention_layernorm.weight", hidden)}
        if cfg.get("qkv_bias"):
            for part, n in (("q", nh * hd), ("k", nkv * hd), ("v", nkv * hd)):
                b = [f32(0.4 * (rng.random() - 0.5)) for _ in range(n)]
                tensors[p + "self_attn.%s_proj.bias" % part] = [b]
                L[part + "_bias"] = b
        if cfg["qk_norm"]:
            L["q_norm"] = vec(p + "self_attn.q_norm.weight", hd)
            L["k_norm"] = vec(p + "self_attn.k_norm.weight", hd)
        if li in cfg["dense_layers"]:
            L["mlp"] = {"gate": mat(p + "mlp.gate_proj.weight", cfg["inter"], hidden),
                        "up": mat(p + "mlp.up_proj.weight", cfg["inter"], hidden),
                        "down": mat(p + "mlp.down_proj.weight", hidden, cfg["inter"])}
        else:
            def row(scale=3.0):
                return [f32(scale * (rng.random() - 0.5)) for _ in range(hidden)]
            a, b, t = row(), row(), row()
            router = [a, [-v for v in a], b, [-v for v in b]]
            while len(router) < E - 1:
                router.append(t if len(router) in cfg["tie"] else row())
            router.append([0.0] * hidden)  # never picked
            assert len(router) == E
            tensors[p + names["router"]] = router
            L["router"] = router
            L["experts"] = []
            for e in range(E):
                q = p + names["prefix"] + "%d." % e
                L["experts"].append({
                    "gate": mat(q + names["gate"], inter, hidden),
                    "up": mat(q + names["up"], inter, hidden),
                    "down": mat(q + names["down"], hidden, inter)})
            if cfg.get("shared_inter"):
                si = cfg["shared_inter"]
                q = p + "mlp.shared_expert."
                L["shared"] = {"gate": mat(q + "gate_proj.weight", si, hidden),
                               "up": mat(q + "up_proj.weight", si, hidden),
                               "down": mat(q + "down_proj.weight", hidden, si)}
                L["shared_gate"] = mat(p + "mlp.shared_expert_gate.weight", 1,
                                       hidden, 2.0)[0]
        model["layers"].append(L)
    model["final_norm"] = vec("model.norm.weight", hidden)
    model["lm_head"] = mat("lm_head.weight", cfg["vocab"], hidden)
    return model, tensors


def fuse_experts(tensors, cfg):
    """transformers 5's layout: each MoE layer's experts as two 3-D tensors,
    gate_up_proj [E, 2I, H] (gate rows first) and down_proj [E, H, I]."""
    names, E = cfg["names"], cfg["experts"]
    # Mixtral's block sits at "mlp" there, its router too.
    router = cfg["names"]["router"]
    fused_router = "mlp.gate.weight"
    for li in range(cfg["layers"]):
        p = "model.layers.%d." % li
        first = p + names["prefix"] + "0." + names["gate"]
        if first not in tensors:
            continue
        gu, dn = [], []
        for e in range(E):
            q = p + names["prefix"] + "%d." % e
            g, u, d = (tensors.pop(q + names[k]) for k in ("gate", "up", "down"))
            gu.extend(v for r in g + u for v in r)
            dn.extend(v for r in d for v in r)
        inter, hidden = cfg["moe_inter"], cfg["hidden"]
        tensors[p + "mlp.experts.gate_up_proj"] = {"shape": [E, 2 * inter, hidden],
                                                  "flat": gu}
        tensors[p + "mlp.experts.down_proj"] = {"shape": [E, hidden, inter],
                                               "flat": dn}
        tensors[p + fused_router] = tensors.pop(p + router)


def write_safetensors(path, tensors, dtype):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        rows = tensors[name]
        if isinstance(rows, dict):  # a 3-D tensor, flat
            flat, shape = rows["flat"], rows["shape"]
        else:
            flat = [v for r in rows for v in r]
            shape = [len(rows[0])] if len(rows) == 1 and name.endswith(
                ("norm.weight", ".bias")) else [len(rows), len(rows[0])]
        blob = struct.pack("<%df" % len(flat), *flat)
        if dtype == "BF16":  # the upper halves (the values are bf16 already)
            blob = b"".join(blob[i + 2:i + 4] for i in range(0, len(blob), 4))
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


QWEN3_MOE = {"names": {"router": "mlp.gate.weight", "prefix": "mlp.experts.",
                       "gate": "gate_proj.weight", "up": "up_proj.weight",
                       "down": "down_proj.weight"}}
MIXTRAL = {"names": {"router": "block_sparse_moe.gate.weight",
                     "prefix": "block_sparse_moe.experts.", "gate": "w1.weight",
                     "up": "w3.weight", "down": "w2.weight"}}


def cases():
    base = dict(vocab=64, hidden=32, heads=4, kv_heads=2, eps=1e-6, k=2, prompt=30,
                steps=8)
    q = dict(base, **QWEN3_MOE, family="qwen3_moe", head_dim=16, layers=3,
             dense_layers=[1], experts=8, moe_inter=12, inter=20, tie=(4, 5),
             qk_norm=True, theta=1000000.0, norm_topk_prob=False)
    q["config"] = {
        "model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"],
        "vocab_size": 64, "hidden_size": 32, "intermediate_size": 20,
        "moe_intermediate_size": 12, "num_hidden_layers": 3,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "num_experts": 8, "num_experts_per_tok": 2, "norm_topk_prob": False,
        "decoder_sparse_step": 1, "mlp_only_layers": [1], "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "max_position_embeddings": 64,
        "tie_word_embeddings": False, "hidden_act": "silu",
        "router_aux_loss_coef": 0.001, "output_router_logits": False}
    m = dict(base, **MIXTRAL, family="mixtral", head_dim=8, layers=2,
             dense_layers=[], experts=7, moe_inter=16, inter=16, tie=(4, 5),
             qk_norm=False, theta=1000000.0, norm_topk_prob=True, eps=1e-5)
    # rope_theta and rms_norm_eps absent: MixtralConfig's 1e6 and 1e-5.
    m["config"] = {
        "model_type": "mixtral", "architectures": ["MixtralForCausalLM"],
        "vocab_size": 64, "hidden_size": 32, "intermediate_size": 16,
        "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "num_local_experts": 7,
        "num_experts_per_tok": 2, "max_position_embeddings": 64,
        "tie_word_embeddings": False, "hidden_act": "silu",
        "router_jitter_noise": 0.0, "router_aux_loss_coef": 0.02}
    # Qwen2-MoE: q/k/v biases, a shared expert with its sigmoid gate, the
    # router's top k as they are (norm_topk_prob false), dense layers 0, 2
    # (decoder_sparse_step 2 leaves layers 1 and 3 sparse).
    w = dict(base, **QWEN3_MOE, family="qwen2_moe", head_dim=8, layers=4,
             dense_layers=[0, 2], experts=7, moe_inter=10, inter=24,
             shared_inter=14, tie=(4, 5), qk_norm=False, qkv_bias=True,
             theta=10000.0, norm_topk_prob=False)
    w["config"] = {
        "model_type": "qwen2_moe", "architectures": ["Qwen2MoeForCausalLM"],
        "vocab_size": 64, "hidden_size": 32, "intermediate_size": 24,
        "moe_intermediate_size": 10, "shared_expert_intermediate_size": 14,
        "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 2, "num_experts": 7, "num_experts_per_tok": 2,
        "norm_topk_prob": False, "decoder_sparse_step": 2,
        "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
        "max_position_embeddings": 64, "tie_word_embeddings": False,
        "hidden_act": "silu", "use_sliding_window": False}
    # The same in bf16: every tensor stored BF16 (the reference computes with
    # the rounded values), so the experts' bf16 kernels and the 16-bit mode.
    wb = dict(w, dtype="bf16")
    # The first case's model with its experts as transformers 5 holds them
    # (fused 3-D tensors): the same logits, read through views of them.
    qf = dict(q, fused=True)
    mf = dict(m, fused=True)
    return [("qwen3_moe_host_f32", q, 7), ("mixtral_host_f32", m, 11),
            ("qwen2_moe_host_f32", w, 13), ("qwen2_moe_host_bf16", wb, 17),
            ("qwen3_moe_host_fused_f32", qf, 7), ("mixtral_host_fused_f32", mf, 11)]


def make(name, cfg, seed, out):
    path = os.path.join(out, name)
    os.makedirs(path, exist_ok=True)
    model, tensors = build(cfg, seed)
    if cfg.get("fused"):
        fuse_experts(tensors, cfg)
    write_safetensors(os.path.join(path, "model.safetensors"), tensors,
                      "BF16" if cfg.get("dtype") == "bf16" else "F32")
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg["config"], f, indent=1)
    rng = random.Random(seed + 2)
    prompt = [rng.randrange(cfg["vocab"]) for _ in range(cfg["prompt"])]
    stats = {"picks": [0] * cfg["experts"], "tie_straddles": 0, "tie_both": 0}
    cache = [[] for _ in range(cfg["layers"])]
    rows, ids, pos = [], [], 0
    for t in prompt:
        rows.append(forward_token(cfg, model, t, pos, cache, stats))
        pos += 1
    while True:
        ids.append(max(range(cfg["vocab"]), key=lambda i: (rows[-1][i], -i)))
        if len(ids) == cfg["steps"]:
            break
        rows.append(forward_token(cfg, model, ids[-1], pos, cache, stats))
        pos += 1
    with open(os.path.join(path, "logits.f32"), "wb") as f:
        for r in rows:
            f.write(struct.pack("<%df" % len(r), *r))
    # What the routing covered: a token can fall on no side of a check.
    assert stats["picks"][-1] == 0, stats
    assert stats["tie_straddles"] > 0, stats
    meta = {"name": name, "family": cfg["family"], "dtype": cfg.get("dtype", "f32"),
            "prompt": prompt, "steps": cfg["steps"], "ids": ids,
            "rows": len(rows), "vocab": cfg["vocab"], "eos": [],
            "routing": stats,
            "reference": "tests/arch/moe_reference.py (plain Python, float64)"}
    with open(os.path.join(path, "ref.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(name, "rows", len(rows), "ids", ids, "routing", stats)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    for name, cfg, seed in cases():
        make(name, cfg, seed, args.out)


if __name__ == "__main__":
    main()
