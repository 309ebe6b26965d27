#!/usr/bin/env python3
"""Reference logits from Hugging Face transformers for Atlas's architectures.

Runs on a machine with torch and transformers (no network). For each case
(family x rope type x config spelling x dtype) it builds a tiny random model
with a fixed seed, saves it with `save_pretrained` (in the case's dtype), and
loads it back in float64 with eager attention to compute the reference:

  * every float32 upcast inside transformers' modeling code (RMSNorm, the
    softmax, the RoPE angles and inverse frequencies) is widened to float64
    for the run (`f64_everywhere`), so the reference is float64 throughout;
    the bf16/f16 cases use the same rounded weights, upcast exactly;
  * greedy decoding as `generate` does it with a cache: the prompt is one
    forward, then one forward per generated token, stopping after an EOS id
    (generation_config.json's, else config.json's). Rows = forward steps.

Writes DIR/<case>/{config.json, model.safetensors, [generation_config.json],
ref.json, logits.f32} (logits: rows x vocab little-endian float32) and
DIR/manifest.json. `--set small` is what tests/arch/data holds (CI runs the
host backend against it without torch); `--set long` has prompts of 1000+
tokens where RoPE scaling or a window matters; `--set smoke` writes random
bf16 checkpoints with the published shapes and keys of Llama-3.2-1B,
Llama-3.1-8B, Qwen2.5-0.5B, Qwen3-0.6B and Mistral-7B-v0.3 (no reference;
for `atlas run`).

  python3 tests/arch/gen_reference.py --set small --out tests/arch/data
"""
import argparse
import contextlib
import json
import os
import shutil
import struct
import sys
import time

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

ARCH = {
    "llama": "LlamaForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "mistral": "MistralForCausalLM",
    "gemma2": "Gemma2ForCausalLM",
    "gemma3_text": "Gemma3ForCausalLM",
    "phi3": "Phi3ForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
    "mixtral": "MixtralForCausalLM",
    "qwen2_moe": "Qwen2MoeForCausalLM",
}
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


@contextlib.contextmanager
def f64_everywhere():
    """Makes transformers' explicit float32 upcasts float64 for the block."""
    saved = (torch.float, torch.float32, torch.Tensor.float)
    torch.float = torch.float64
    torch.float32 = torch.float64
    torch.Tensor.float = lambda self, *a, **k: self.double()
    try:
        yield
    finally:
        torch.float, torch.float32, torch.Tensor.float = saved


def tiny(family, **kw):
    c = {
        "model_type": family,
        "architectures": [ARCH[family]],
        "vocab_size": 128,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 64,
        "rms_norm_eps": 1e-6,
        "hidden_act": "silu",
        "initializer_range": 0.2,
        "tie_word_embeddings": False,
        "rope_theta": 10000.0,
        "bos_token_id": None,
        "eos_token_id": None,
        "pad_token_id": None,
    }
    if family == "qwen3":
        c["head_dim"] = 16  # not hidden_size / heads (8), as in Qwen3
    if family in ("gemma2", "gemma3_text"):
        # Gemma's keys: gelu_pytorch_tanh under hidden_activation, tied
        # embeddings, an explicit head_dim and the query scale.
        del c["hidden_act"]
        c.update(hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True,
                 head_dim=16, query_pre_attn_scalar=24)
    c.update(kw)
    return c


def gemma2(**kw):
    """Gemma 2: sandwich norms, (1 + w) norms, the embedding scaled by
    sqrt(hidden), soft-capped attention scores and logits, windows on the
    even layers (transformers' layer_types), head_dim 256. The caps are set
    low enough that they change the logits (ref.json: softcap_effect)."""
    c = tiny("gemma2", head_dim=256, query_pre_attn_scalar=256, sliding_window=4,
             attn_logit_softcapping=2.0, final_logit_softcapping=3.0)
    c.update(kw)
    return c


def gemma3(**kw):
    """Gemma 3 text: q/k norms, 5 local layers to 1 global, the local RoPE
    base on the sliding layers and linear RoPE scaling on the global ones."""
    c = tiny("gemma3_text", num_hidden_layers=6, sliding_window=4,
             sliding_window_pattern=6, rope_theta=1000000.0,
             rope_local_base_freq=10000.0,
             rope_scaling={"rope_type": "linear", "factor": 8.0})
    c.update(kw)
    return c


def phi3(rot=0.75, orig=16, **kw):
    """Phi-3 / Phi-4: fused qkv_proj and gate_up_proj, partial rotary and
    LongRoPE (short factors up to original_max_position_embeddings, long
    ones past it)."""
    hd = 16
    half = int(hd * rot) // 2
    c = tiny("phi3", hidden_size=64, intermediate_size=96, partial_rotary_factor=rot,
             original_max_position_embeddings=orig, max_position_embeddings=4 * orig,
             rope_scaling={"type": "longrope",
                           "short_factor": [1.0 + 0.05 * i for i in range(half)],
                           "long_factor": [1.0 + 0.9 * i for i in range(half)]})
    c.update(kw)
    return c


def qwen3_moe(**kw):
    """Qwen3-MoE: 8 experts, 2 a token, renormalised, layer 1 dense
    (mlp_only_layers), q/k norms. Routing as moe_routing sets it."""
    c = tiny("qwen3_moe", head_dim=16, num_hidden_layers=3, num_experts=8,
             num_experts_per_tok=2, moe_intermediate_size=16, norm_topk_prob=True,
             decoder_sparse_step=1, mlp_only_layers=[1], max_position_embeddings=128)
    c.update(kw)
    return c


def mixtral(**kw):
    """Mixtral: 7 experts of intermediate_size, 2 a token (always
    renormalised), every layer sparse."""
    c = tiny("mixtral", num_local_experts=7, num_experts_per_tok=2,
             intermediate_size=32, max_position_embeddings=128)
    c.update(kw)
    return c


def qwen2_moe(**kw):
    """Qwen2-MoE: a shared expert with its sigmoid gate, q/k/v biases, the
    top k not renormalised, layers 1 and 3 sparse (decoder_sparse_step 2)."""
    c = tiny("qwen2_moe", num_hidden_layers=4, num_experts=7, num_experts_per_tok=2,
             moe_intermediate_size=16, shared_expert_intermediate_size=24,
             norm_topk_prob=False, decoder_sparse_step=2, use_sliding_window=False,
             max_position_embeddings=128)
    c.update(kw)
    return c


ROPES = {
    "default": None,
    "linear": {"factor": 2.0},
    "dynamic": {"factor": 2.0},
    "yarn": {"factor": 4.0, "original_max_position_embeddings": 16},
    "llama3": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 16},
}


def with_rope(c, rope, spelling):
    """Writes rope settings in one of the three spellings."""
    c = dict(c)
    params = ROPES[rope] if isinstance(rope, str) else rope[1]
    name = rope if isinstance(rope, str) else rope[0]
    if spelling == "rope_parameters":
        theta = c.pop("rope_theta")
        p = {"rope_type": name, "rope_theta": theta}
        p.update(params or {})
        c["rope_parameters"] = p
    elif params is not None or name != "default":
        key = "type" if spelling == "rope_scaling.type" else "rope_type"
        s = {key: name}
        s.update(params or {})
        c["rope_scaling"] = s
    return c


def small_cases():
    cases = []
    spellings = ["rope_parameters", "rope_scaling.type", "rope_scaling.rope_type"]
    dts = ["f32", "bf16", "f16"]
    for rope in ROPES:
        for i, dt in enumerate(dts):
            cfg = tiny("llama")
            prompt, steps = 10, 8
            if rope == "dynamic":
                cfg["max_position_embeddings"] = 16
                # prompt inside the window, decoding past it (and in the f16
                # case a prompt longer than max_position_embeddings)
                prompt, steps = (20, 6) if dt == "f16" else (10, 12)
            cases.append(dict(name=f"llama_{rope}_{dt}", dtype=dt, prompt=prompt,
                              steps=steps, config=with_rope(cfg, rope, spellings[i])))
    # yarn without original_max_position_embeddings, with explicit knobs
    cfg = tiny("llama")
    cases.append(dict(name="llama_yarn_knobs_f32", dtype="f32", prompt=10, steps=8,
                      config=with_rope(cfg, ("yarn", {"factor": 2.0, "beta_fast": 16,
                                                      "beta_slow": 2, "mscale": 0.8,
                                                      "mscale_all_dim": 0.5}),
                                       "rope_scaling.rope_type")))
    for dt in dts:
        cases.append(dict(name=f"llama_bias_{dt}", dtype=dt, prompt=10, steps=8,
                          config=tiny("llama", attention_bias=True, mlp_bias=True)))
        cases.append(dict(name=f"qwen2_{dt}", dtype=dt, prompt=12, steps=8,
                          config=tiny("qwen2", tie_word_embeddings=True,
                                      rope_theta=1000000.0, use_sliding_window=True,
                                      sliding_window=5, max_window_layers=1)))
        cases.append(dict(name=f"qwen3_{dt}", dtype=dt, prompt=10, steps=8,
                          config=tiny("qwen3", tie_word_embeddings=True,
                                      rope_theta=1000000.0)))
        cases.append(dict(name=f"mistral_{dt}", dtype=dt, prompt=12, steps=8,
                          config=tiny("mistral", sliding_window=6)))
    cases.append(dict(name="qwen2_yarn_f32", dtype="f32", prompt=10, steps=8,
                      config=with_rope(tiny("qwen2", use_sliding_window=False),
                                       ("yarn", {"factor": 4.0,
                                                 "original_max_position_embeddings": 16}),
                                       "rope_scaling.type")))
    cases.append(dict(name="qwen3_bias_linear_f32", dtype="f32", prompt=10, steps=8,
                      config=with_rope(tiny("qwen3", attention_bias=True), "linear",
                                       "rope_parameters")))
    cases.append(dict(name="mistral_dynamic_f32", dtype="f32", prompt=10, steps=12,
                      config=with_rope(tiny("mistral", sliding_window=None,
                                            max_position_embeddings=16),
                                       "dynamic", "rope_scaling.type")))
    # EOS: the id greedy decoding reaches at step 3 is in generation_config's
    # list; config.json names another id (generation_config wins).
    cases.append(dict(name="llama_eos_f32", dtype="f32", prompt=10, steps=10,
                      config=tiny("llama"), eos_at=3))
    # Added 2026-12-04 (appended, so the cases above keep their seeds): configs
    # Atlas refused where transformers runs them.
    # Llama with a sliding_window key: LlamaAttention never windows; the 17
    # positions fed (10 + 8 - 1) fit the window, where generate's cache
    # (which does read sliding_window) keeps every key too.
    cases.append(dict(name="llama_window_f32", dtype="f32", prompt=10, steps=8,
                      config=tiny("llama", sliding_window=17)))
    # Tied, and the checkpoint holds lm_head.weight but no embedding
    # (transformers loads it into both). Seed 1034: the H200 run that wrote
    # it also tried Mistral with layer_types [full, sliding] as case 33,
    # which transformers 5.17 failed to build (rope_theta at the top level).
    cases.append(dict(name="llama_tied_head_only_f32", dtype="f32", prompt=10, steps=8,
                      config=tiny("llama", tie_word_embeddings=True), head_only=True,
                      seed=1034))
    # Added 2026-12-07 (appended, so the cases above keep their seeds): the
    # families read from a descriptor.
    for dt in ["f32", "bf16"]:
        cases.append(dict(name=f"gemma2_{dt}", dtype=dt, prompt=12, steps=8,
                          config=gemma2(), scale={"q_proj": 3.0, "k_proj": 3.0,
                                                  "embed_tokens": 3.0}))
        cases.append(dict(name=f"gemma3_text_{dt}", dtype=dt, prompt=12, steps=8,
                          config=gemma3()))
        # prompt 10 (short factors), decoding past 16 (long ones)
        cases.append(dict(name=f"phi3_{dt}", dtype=dt, prompt=10, steps=12,
                          config=phi3()))
    # Gemma 2 as published (caps 50 / 30), head_dim 256 with heads * head_dim
    # != hidden, windows by layer_types as transformers 5 writes them.
    cases.append(dict(name="gemma2_published_caps_f32", dtype="f32", prompt=12,
                      steps=8, config=gemma2(attn_logit_softcapping=50.0,
                                             final_logit_softcapping=30.0,
                                             query_pre_attn_scalar=224,
                                             num_hidden_layers=3),
                      keep_saved=True))
    # Gemma 3 in transformers 5's spelling (rope_parameters per layer type,
    # layer_types), as save_pretrained writes it; a q scale of head_dim.
    cases.append(dict(name="gemma3_text_saved_f32", dtype="f32", prompt=12, steps=8,
                      config=gemma3(query_pre_attn_scalar=16), keep_saved=True))
    # The prompt alone past original_max_position_embeddings (long factors
    # from the first forward); a window; the whole head rotated.
    cases.append(dict(name="phi3_long_prompt_f32", dtype="f32", prompt=20, steps=6,
                      config=phi3()))
    cases.append(dict(name="phi3_window_full_rot_f32", dtype="f32", prompt=12, steps=8,
                      config=phi3(rot=1.0, sliding_window=5, tie_word_embeddings=True)))
    # Added 2026-12-08 (appended, so the cases above keep their seeds): the
    # mixture-of-experts families, prompts of a few dozen tokens, routing
    # with an expert nobody picks and a tie at every token (moe_routing).
    for dt in ["f32", "bf16"]:
        cases.append(dict(name=f"qwen3_moe_{dt}", dtype=dt, prompt=30, steps=8,
                          config=qwen3_moe(), moe=True))
        cases.append(dict(name=f"mixtral_{dt}", dtype=dt, prompt=30, steps=8,
                          config=mixtral(), moe=True))
        cases.append(dict(name=f"qwen2_moe_{dt}", dtype=dt, prompt=30, steps=8,
                          config=qwen2_moe(), moe=True))
    # As transformers 5 saves them (its config spelling, and its experts'
    # layout, fused 3-D or not), unconverted.
    cases.append(dict(name="qwen3_moe_saved_f32", dtype="f32", prompt=30, steps=8,
                      config=qwen3_moe(), moe=True, keep_saved=True))
    cases.append(dict(name="mixtral_saved_f32", dtype="f32", prompt=30, steps=8,
                      config=mixtral(), moe=True, keep_saved=True))
    return cases


def long_cases():
    cases = []
    for rope in ["default", "dynamic", "yarn", "llama3", "linear"]:
        cfg = tiny("llama", max_position_embeddings=256)
        r = rope
        if rope == "yarn":
            r = ("yarn", {"factor": 4.0, "original_max_position_embeddings": 256})
            cfg["max_position_embeddings"] = 1024
        if rope == "llama3":
            r = ("llama3", dict(ROPES["llama3"], original_max_position_embeddings=256))
        cases.append(dict(name=f"long_llama_{rope}_f32", dtype="f32", prompt=1000,
                          steps=40, config=with_rope(cfg, r, "rope_scaling.rope_type")))
    cases.append(dict(name="long_llama_dynamic_bf16", dtype="bf16", prompt=1000,
                      steps=40, config=with_rope(tiny("llama", max_position_embeddings=256),
                                                 "dynamic", "rope_parameters")))
    cases.append(dict(name="long_mistral_f32", dtype="f32", prompt=1000, steps=40,
                      config=tiny("mistral", sliding_window=64,
                                  max_position_embeddings=2048)))
    cases.append(dict(name="long_qwen2_f32", dtype="f32", prompt=1000, steps=40,
                      config=tiny("qwen2", tie_word_embeddings=True, use_sliding_window=True,
                                  sliding_window=100, max_window_layers=1,
                                  max_position_embeddings=2048)))
    cases.append(dict(name="long_qwen3_bf16", dtype="bf16", prompt=1000, steps=40,
                      config=tiny("qwen3", max_position_embeddings=2048)))
    # Added 2026-12-07: the descriptor's families past their windows and
    # past LongRoPE's switch.
    cases.append(dict(name="long_gemma2_f32", dtype="f32", prompt=1000, steps=40,
                      config=gemma2(sliding_window=64, max_position_embeddings=2048,
                                    head_dim=32, attn_logit_softcapping=50.0,
                                    final_logit_softcapping=30.0)))
    cases.append(dict(name="long_gemma3_text_bf16", dtype="bf16", prompt=1000, steps=40,
                      config=gemma3(sliding_window=100, max_position_embeddings=2048)))
    cases.append(dict(name="long_phi3_f32", dtype="f32", prompt=1000, steps=40,
                      config=phi3(orig=256, sliding_window=300,
                                max_position_embeddings=2048)))
    return cases


def randomize(model, seed):
    """Norm weights and biases start at 1 and 0 in transformers; vary them so
    that the test sees them."""
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(0.5 + torch.rand(p.shape, generator=g, dtype=p.dtype))
            elif name.endswith(".bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=g, dtype=p.dtype))


def moe_routing(model, cfg, seed):
    """Routers the checks can count on, whatever the random weights: experts
    0/1 and 2/3 get opposite router rows (one of each pair has a logit > 0 at
    every token), the last expert a zero row (with k = 2 never picked), and
    experts 4 and 5 one shared row and the same weights (equal probabilities
    at every token; which of the two torch.topk keeps where only one fits is
    unspecified on the CPU, and with equal experts it changes nothing).
    Returns the routers' modules, for moe_stats."""
    n = cfg.get("num_experts") or cfg.get("num_local_experts")
    g = torch.Generator().manual_seed(seed + 3)
    routers = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".gate.weight") and p.dim() == 2 and p.shape[0] == n:
                a, b, t = (3.0 * (torch.rand(p.shape[1], generator=g) - 0.5)
                           for _ in range(3))
                rows = [a, -a, b, -b, t, t]
                while len(rows) < n - 1:
                    rows.append(3.0 * (torch.rand(p.shape[1], generator=g) - 0.5))
                rows.append(torch.zeros(p.shape[1]))
                p.copy_(torch.stack(rows).to(p.dtype))
                routers.append(name[:-len(".weight")])
        params = dict(model.named_parameters())
        for name, p in params.items():
            if ".experts.5." in name:  # one module per expert
                p.copy_(params[name.replace(".experts.5.", ".experts.4.")])
            elif ".experts." in name and p.dim() == 3 and p.shape[0] == n:
                p[5].copy_(p[4])  # fused 3-D experts (transformers 5)
    modules = dict(model.named_modules())
    return [modules[r] for r in routers], n


def moe_stats(ref, cfg, prompt, steps):
    """Runs the prompt and counts, from the routers' own inputs, the picks of
    each expert (largest probability first, ties to the lower index) and the
    tokens where experts 4 and 5 tie across the top k's edge."""
    n = cfg.get("num_experts") or cfg.get("num_local_experts")
    k = cfg["num_experts_per_tok"]
    routers = [m for name, m in ref.named_modules()
               if name.endswith(".gate") and hasattr(m, "weight")
               and m.weight.dim() == 2 and m.weight.shape[0] == n]
    stats = {"picks": [0] * n, "tie_straddles": 0, "tie_both": 0}

    def hook(mod, inputs, _out):
        x = inputs[0].reshape(-1, inputs[0].shape[-1]).double()
        p = torch.softmax(x @ mod.weight.double().t(), dim=-1)
        for row in p.tolist():
            order = sorted(range(n), key=lambda e: (-row[e], e))[:k]
            for e in order:
                stats["picks"][e] += 1
            if (4 in order) != (5 in order):
                stats["tie_straddles"] += 1
            if 4 in order and 5 in order:
                stats["tie_both"] += 1
    handles = [m.register_forward_hook(hook) for m in routers]
    try:
        rebuild_rotary(ref)
        with f64_everywhere(), torch.no_grad():
            ref(input_ids=torch.tensor([prompt]))
    finally:
        for h in handles:
            h.remove()
    return stats


def eager_experts(model):
    """transformers 5 may run the experts through torch._grouped_mm or a
    batched product (config._experts_implementation); the reference runs
    its eager loop, in float64. Returns what was set before."""
    before = None
    for m in [model] + list(model.modules()):
        cfg = getattr(m, "config", None)
        if cfg is not None and hasattr(cfg, "_experts_implementation"):
            before = before or cfg._experts_implementation
            cfg._experts_implementation = "eager"
    return before


def hub_layout(path, family, n):
    """The experts as the Hub publishes them, one tensor each: where
    save_pretrained wrote fused 3-D tensors (gate_up_proj [E, 2I, H], gate
    rows first, and down_proj [E, H, I]) or another module name, they are
    split and renamed. Returns what it found."""
    from safetensors.torch import load_file, save_file
    st = os.path.join(path, "model.safetensors")
    sd = load_file(st)
    if family == "mixtral":
        prefix, parts = "block_sparse_moe.", ("w1", "w3", "w2")
    else:
        prefix, parts = "mlp.", ("gate_proj", "up_proj", "down_proj")
    out, fused = {}, False
    for name, t in sd.items():
        base = name[:-len(".weight")] if name.endswith(".weight") else name
        if base.endswith(".experts.gate_up_proj") and t.dim() == 3:
            fused = True
            layer = base[:base.index(".experts.")].rsplit(".", 1)[0]
            inter = t.shape[1] // 2
            for e in range(n):
                out[f"{layer}.{prefix}experts.{e}.{parts[0]}.weight"] = t[e, :inter].clone()
                out[f"{layer}.{prefix}experts.{e}.{parts[1]}.weight"] = t[e, inter:].clone()
        elif base.endswith(".experts.down_proj") and t.dim() == 3:
            fused = True
            layer = base[:base.index(".experts.")].rsplit(".", 1)[0]
            for e in range(n):
                out[f"{layer}.{prefix}experts.{e}.{parts[2]}.weight"] = t[e].clone()
        elif family == "mixtral" and ".mlp." in name:
            out[name.replace(".mlp.", ".block_sparse_moe.")] = t
        else:
            out[name] = t
    if out.keys() != sd.keys():
        save_file(out, st, metadata={"format": "pt"})
    return {"fused_3d": fused, "renamed": out.keys() != sd.keys(),
            "saved_keys": sorted(k for k in sd if "expert" in k or ".gate." in k)[:12]}


def load_f64(path):
    try:
        return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float64,
                                                    attn_implementation="eager")
    except TypeError:
        return AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float64,
                                                    attn_implementation="eager")


def rebuild_rotary(model):
    """Recomputes every RotaryEmbedding under f64_everywhere (their inverse
    frequencies are computed in float32 at construction otherwise)."""
    for parent in list(model.modules()):
        for child_name, child in list(parent.named_children()):
            if type(child).__name__.endswith("RotaryEmbedding"):
                config = getattr(child, "config", None) or model.config
                with f64_everywhere():
                    fresh = type(child)(config=config)
                setattr(parent, child_name, fresh.to(torch.float64))


def rotary_state(model):
    for m in model.modules():
        if type(m).__name__.endswith("RotaryEmbedding"):
            return {"inv_freq": [float(x) for x in m.inv_freq.double()],
                    "inv_freq_dtype": str(m.inv_freq.dtype),
                    "attention_scaling": float(getattr(m, "attention_scaling", 1.0))}
    return {}


def greedy(model, prompt, steps, eos):
    """generate()'s greedy loop with a cache, keeping every step's logits."""
    rows = []
    with torch.no_grad():
        out = model(input_ids=torch.tensor([prompt]), use_cache=True)
        rows.append(out.logits[0].double())
        past = out.past_key_values
        ids = [int(out.logits[0, -1].argmax())]
        while len(ids) < steps and ids[-1] not in eos:
            out = model(input_ids=torch.tensor([[ids[-1]]]), past_key_values=past,
                        use_cache=True)
            past = out.past_key_values
            rows.append(out.logits[0].double())
            ids.append(int(out.logits[0, -1].argmax()))
    if steps == 0:
        ids = []
    return torch.cat(rows, 0), ids


def make_case(case, out_dir, seed):
    path = os.path.join(out_dir, case["name"])
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    cfg = dict(case["config"])
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    torch.manual_seed(seed)
    hf_cfg = AutoConfig.from_pretrained(path)
    model = AutoModelForCausalLM.from_config(hf_cfg, attn_implementation="eager")
    randomize(model, seed)
    if case.get("scale"):
        # Larger weights, so that soft-capping changes the scores and logits.
        with torch.no_grad():
            for name, p in model.named_parameters():
                for part, f in case["scale"].items():
                    if ("." + part + ".") in name:
                        p.mul_(f)
    if case.get("moe"):
        moe_routing(model, cfg, seed)
    model = model.to(DTYPES[case["dtype"]])
    model.save_pretrained(path)
    layout = None
    if case.get("moe") and not case.get("keep_saved"):
        layout = hub_layout(path, cfg["model_type"],
                            cfg.get("num_experts") or cfg.get("num_local_experts"))
    elif case.get("moe"):  # as save_pretrained wrote them, fused or not
        from safetensors.torch import load_file
        keys = load_file(os.path.join(path, "model.safetensors")).keys()
        layout = {"kept": True, "saved_keys": sorted(
            k for k in keys if ".experts." in k or ".gate." in k)[:12]}
    if case.get("head_only"):
        # Keep the embedding's values under lm_head.weight alone.
        from safetensors.torch import load_file, save_file
        st = os.path.join(path, "model.safetensors")
        sd = load_file(st)
        embed = sd.pop("model.embed_tokens.weight")
        sd.setdefault("lm_head.weight", embed)
        save_file(sd, st, metadata={"format": "pt"})
    saved_cfg = json.load(open(os.path.join(path, "config.json")))
    spelled_v5 = "rope_parameters" in cfg or case.get("keep_saved")
    if case.get("keep_saved"):
        cfg = dict(saved_cfg)
    if not spelled_v5:
        # Keep the Hub spelling we wrote (save_pretrained writes v5's).
        cfg["torch_dtype"] = {"f32": "float32", "bf16": "bfloat16",
                              "f16": "float16"}[case["dtype"]]
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump(cfg, f, indent=1)
    g = torch.Generator().manual_seed(seed + 2)
    prompt = torch.randint(0, cfg["vocab_size"], (case["prompt"],), generator=g).tolist()
    ref = load_f64(path)
    ref.eval()
    experts_impl = eager_experts(ref) if case.get("moe") else None
    eos_list = []
    if case.get("eos_at") is not None:
        rebuild_rotary(ref)
        with f64_everywhere():
            _, ids = greedy(ref, prompt, case["steps"], [])
        target = ids[case["eos_at"]]
        eos_list = [cfg["vocab_size"] + 5, target]  # a list, one id unreachable
        other = (target + 1) % cfg["vocab_size"]
        cfg["eos_token_id"] = other
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump(cfg, f, indent=1)
        with open(os.path.join(path, "generation_config.json"), "w") as f:
            json.dump({"eos_token_id": eos_list, "_from_model_config": False}, f)
        ref = load_f64(path)
        ref.eval()
    # Diagnostic: how far transformers' own float32 internals are from float64.
    unpatched = None
    if case["prompt"] <= 64:
        with torch.no_grad():
            lo = ref(input_ids=torch.tensor([prompt])).logits[0].double()
    # A fresh rotary module before each run: dynamic RoPE keeps state across
    # calls (the longest sequence seen), as in transformers.
    if case["prompt"] <= 64:
        rebuild_rotary(ref)
        with f64_everywhere(), torch.no_grad():
            hi = ref(input_ids=torch.tensor([prompt])).logits[0].double()
        unpatched = float(((lo - hi).norm(dim=-1) / hi.norm(dim=-1)).max())
    rebuild_rotary(ref)
    before = rotary_state(ref)
    with f64_everywhere():
        logits, ids = greedy(ref, prompt, case["steps"], eos_list)
    after = rotary_state(ref)
    rebuild_rotary(ref)
    gen_ids = None
    try:
        with f64_everywhere():
            # An explicit mask: without one, generate() masks every prompt
            # token equal to pad_token_id.
            ids_in = torch.tensor([prompt])
            g_out = ref.generate(ids_in, attention_mask=torch.ones_like(ids_in),
                                 max_new_tokens=case["steps"], do_sample=False,
                                 eos_token_id=eos_list or None,
                                 pad_token_id=cfg["vocab_size"] + 7)
        gen_ids = g_out[0, len(prompt):].tolist()
    except Exception as e:  # recorded, not fatal
        gen_ids = "generate failed: %r" % (e,)
    softcap_effect = None
    caps = [k for k in ("attn_logit_softcapping", "final_logit_softcapping")
            if getattr(ref.config, k, None)]
    if caps and case["prompt"] <= 64:
        # How much the caps change the prompt's logits (0: they never bite).
        # The attention modules copy the cap at construction: set both.
        holders = [ref.config] + [m for m in ref.modules()
                                  if hasattr(m, "attn_logit_softcapping")]
        saved_caps = [(h, k, getattr(h, k)) for h in holders for k in caps
                      if hasattr(h, k)]
        try:
            rebuild_rotary(ref)
            with f64_everywhere(), torch.no_grad():
                capped = ref(input_ids=torch.tensor([prompt])).logits[0].double()
                for h, k, _ in saved_caps:
                    setattr(h, k, None)
                rebuild_rotary(ref)
                free = ref(input_ids=torch.tensor([prompt])).logits[0].double()
            softcap_effect = float(((capped - free).norm(dim=-1) /
                                    capped.norm(dim=-1)).max())
        except Exception as e:  # recorded, not fatal
            softcap_effect = "failed: %r" % (e,)
        for h, k, v in saved_caps:
            setattr(h, k, v)
    routing = moe_stats(ref, cfg, prompt, case["steps"]) if case.get("moe") else None
    with open(os.path.join(path, "logits.f32"), "wb") as f:
        f.write(logits.to(torch.float32).contiguous().numpy().astype("<f4").tobytes())
    meta = {
        "name": case["name"], "family": cfg["model_type"], "dtype": case["dtype"],
        "prompt": prompt, "steps": case["steps"], "ids": ids,
        "rows": int(logits.shape[0]), "vocab": cfg["vocab_size"],
        "eos": eos_list, "generate_ids": gen_ids,
        "generate_agrees": gen_ids == ids,
        "rope_before": before, "rope_after": after,
        "f32_internals_rel_l2": unpatched,
        "saved_config_keys": sorted(saved_cfg.keys()),
        "saved_config": saved_cfg, "softcap_effect": softcap_effect,
        "routing": routing, "moe_layout": layout,
        "experts_implementation_before": experts_impl,
        "transformers": transformers.__version__, "torch": torch.__version__,
    }
    with open(os.path.join(path, "ref.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta


def smoke_configs():
    """Published shapes and keys (config.json and generation_config.json)."""
    llama32 = {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 128000, "eos_token_id": 128001,
        "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
        "initializer_range": 0.02, "intermediate_size": 8192,
        "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "llama",
        "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
        "pretraining_tp": 1, "rms_norm_eps": 1e-05,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "use_cache": True, "vocab_size": 128256}
    llama31 = dict(llama32, hidden_size=4096, intermediate_size=14336,
                   num_hidden_layers=32, head_dim=128, tie_word_embeddings=False,
                   rope_scaling={"factor": 8.0, "high_freq_factor": 4.0,
                                 "low_freq_factor": 1.0,
                                 "original_max_position_embeddings": 8192,
                                 "rope_type": "llama3"})
    llama_gen = {"bos_token_id": 128000, "do_sample": True,
                 "eos_token_id": [128001, 128008, 128009], "temperature": 0.6, "top_p": 0.9}
    qwen25 = {
        "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
        "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu",
        "hidden_size": 896, "initializer_range": 0.02, "intermediate_size": 4864,
        "max_position_embeddings": 32768, "max_window_layers": 24, "model_type": "qwen2",
        "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True,
        "use_sliding_window": False, "vocab_size": 151936}
    qwen25_gen = {"bos_token_id": 151643, "do_sample": False, "eos_token_id": 151643,
                  "max_new_tokens": 2048}
    qwen3 = {
        "architectures": ["Qwen3ForCausalLM"], "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
        "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
        "initializer_range": 0.02, "intermediate_size": 3072,
        "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
        "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
        "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000,
        "sliding_window": None, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "use_cache": True, "use_sliding_window": False, "vocab_size": 151936}
    qwen3_gen = {"bos_token_id": 151643, "do_sample": True,
                 "eos_token_id": [151645, 151643], "pad_token_id": 151643,
                 "temperature": 0.6, "top_k": 20, "top_p": 0.95}
    mistral = {
        "architectures": ["MistralForCausalLM"], "attention_dropout": 0.0,
        "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096,
        "initializer_range": 0.02, "intermediate_size": 14336,
        "max_position_embeddings": 32768, "model_type": "mistral",
        "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": None,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
        "vocab_size": 32768}
    mistral_gen = {"bos_token_id": 1, "eos_token_id": 2}
    return [("Llama-3.2-1B", llama32, llama_gen), ("Qwen2.5-0.5B", qwen25, qwen25_gen),
            ("Qwen3-0.6B", qwen3, qwen3_gen), ("Llama-3.1-8B", llama31, llama_gen),
            ("Mistral-7B-v0.3", mistral, mistral_gen)]


def make_smoke(name, cfg, gen, out_dir):
    """Random bf16 weights of the published shapes, built on the GPU."""
    path = os.path.join(out_dir, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    with open(os.path.join(path, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=1)
    t0 = time.time()
    hf_cfg = AutoConfig.from_pretrained(path)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    with torch.device(dev):
        try:
            model = AutoModelForCausalLM.from_config(hf_cfg, dtype=torch.bfloat16)
        except TypeError:
            model = AutoModelForCausalLM.from_config(hf_cfg, torch_dtype=torch.bfloat16)
    model.save_pretrained(path, max_shard_size="5GB")
    # save_pretrained rewrites config.json in transformers 5's spelling: keep
    # the published one.
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    with open(os.path.join(path, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=1)
    n = sum(p.numel() for p in model.parameters())
    del model
    return {"name": name, "params": n, "build_s": time.time() - t0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", choices=["small", "long", "smoke"], required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="", help="comma-separated case names")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    if args.set == "smoke":
        done = []
        for name, cfg, gen in smoke_configs():
            if args.only and name not in args.only.split(","):
                continue
            done.append(make_smoke(name, cfg, gen, args.out))
            print(json.dumps(done[-1]), flush=True)
        return
    cases = small_cases() if args.set == "small" else long_cases()
    metas = []
    for i, case in enumerate(cases):
        if args.only and case["name"] not in args.only.split(","):
            continue
        t0 = time.time()
        try:
            meta = make_case(case, args.out, seed=case.get("seed", 1000 + i))
            metas.append(meta["name"])
            print("%-28s rows %4d ids %s gen_agrees %s f32_internals %s (%.1fs)" % (
                meta["name"], meta["rows"], meta["ids"][:6], meta["generate_agrees"],
                meta["f32_internals_rel_l2"], time.time() - t0), flush=True)
        except Exception as e:
            import traceback
            traceback.print_exc()
            print("FAILED %s: %r" % (case["name"], e), flush=True)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump({"cases": metas, "transformers": transformers.__version__,
                   "torch": torch.__version__}, f, indent=1)


if __name__ == "__main__":
    main()
