#!/usr/bin/env python3
"""Writes a ~4.8 GB (4.4 GiB) BF16 Llama checkpoint with Hugging Face's own
safetensors writer, for `bench load` on a GPU machine (where torch is).

    python3 tools/gpu/gpu_big_checkpoint.py DIR [LAYERS]

Random weights drawn on the GPU (fast); 12 layers of a 4096-wide model.
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file

out = sys.argv[1]
layers = int(sys.argv[2]) if len(sys.argv) > 2 else 12
H, I, NH, KV, V = 4096, 11008, 32, 8, 32000
hd = H // NH
os.makedirs(out, exist_ok=True)
g = torch.Generator(device="cuda").manual_seed(0)


def w(*shape):
    x = torch.randn(*shape, generator=g, device="cuda", dtype=torch.float32)
    return (x * 0.02).to(torch.bfloat16).cpu()


t = {"model.embed_tokens.weight": w(V, H), "model.norm.weight": torch.ones(H, dtype=torch.bfloat16),
     "lm_head.weight": w(V, H)}
for l in range(layers):
    p = f"model.layers.{l}."
    t[p + "input_layernorm.weight"] = torch.ones(H, dtype=torch.bfloat16)
    t[p + "post_attention_layernorm.weight"] = torch.ones(H, dtype=torch.bfloat16)
    t[p + "self_attn.q_proj.weight"] = w(NH * hd, H)
    t[p + "self_attn.k_proj.weight"] = w(KV * hd, H)
    t[p + "self_attn.v_proj.weight"] = w(KV * hd, H)
    t[p + "self_attn.o_proj.weight"] = w(H, NH * hd)
    t[p + "mlp.gate_proj.weight"] = w(I, H)
    t[p + "mlp.up_proj.weight"] = w(I, H)
    t[p + "mlp.down_proj.weight"] = w(H, I)
save_file(t, os.path.join(out, "model.safetensors"))
config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": V,
          "hidden_size": H, "intermediate_size": I, "num_hidden_layers": layers,
          "num_attention_heads": NH, "num_key_value_heads": KV, "rms_norm_eps": 1e-5,
          "rope_theta": 500000.0, "max_position_embeddings": 8192,
          "tie_word_embeddings": False, "hidden_act": "silu"}
with open(os.path.join(out, "config.json"), "w") as f:
    json.dump(config, f, indent=2)
size = os.path.getsize(os.path.join(out, "model.safetensors"))
print(f"wrote {out}: {size / 1e9:.2f} GB ({size / 2**30:.2f} GiB), {layers} layers")
