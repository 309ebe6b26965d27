#!/usr/bin/env python3
"""Atlas against transformers on the same random BF16 weights, side by side.

    python3 tools/gpu/gpu_speed.py BENCH ATLAS [1b] [8b]

BENCH and ATLAS are the staged `bench` and `atlas` binaries. For each shape
(Llama-3.2-1B, Llama-3.1-8B; random weights drawn on the GPU, written with
safetensors so both runtimes read the same bytes) it measures, in one process:
the device copy bandwidth and the decode floor (weight bytes read per token /
that bandwidth); transformers eager and sdpa prefill and decode; a CUDA graph
of plain cuBLAS matrix-vector products (torch F.linear) over the same matrices
(the "cuBLAS graph" stand-in); then runs `bench prefill` and `bench decode`;
and checks parity: `atlas run` greedy ids and logits against transformers
(BF16) and against an f32 upcast of the same weights (1B). Prints one table
per shape at the end. Needs python3, torch, transformers, safetensors.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

SHAPES = {
    "1b": dict(hidden=2048, inter=8192, layers=16, heads=32, kv=8, head_dim=64,
               vocab=128256, tied=True, label="Llama-3.2-1B shape"),
    "8b": dict(hidden=4096, inter=14336, layers=32, heads=32, kv=8, head_dim=128,
               vocab=128256, tied=False, label="Llama-3.1-8B shape"),
}
PREFILL = [512, 2048]
DECODE_STEPS = 32


def log(*a):
    print(*a, flush=True)


def events_ms(fn, reps=5, warm=1):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def copy_gbps():
    a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    ms = events_ms(lambda: b.copy_(a), reps=10, warm=2)
    return 2 * a.numel() / ms / 1e6


def make_weights(s):
    g = torch.Generator(device="cuda").manual_seed(1234)

    def w(*shape):
        return (torch.randn(*shape, generator=g, device="cuda") * 0.02).to(torch.bfloat16)

    H, I, hd = s["hidden"], s["inter"], s["head_dim"]
    t = {"model.embed_tokens.weight": w(s["vocab"], H),
         "model.norm.weight": torch.ones(H, dtype=torch.bfloat16, device="cuda")}
    if not s["tied"]:
        t["lm_head.weight"] = w(s["vocab"], H)
    for l in range(s["layers"]):
        p = f"model.layers.{l}."
        t[p + "input_layernorm.weight"] = torch.ones(H, dtype=torch.bfloat16, device="cuda")
        t[p + "post_attention_layernorm.weight"] = torch.ones(H, dtype=torch.bfloat16, device="cuda")
        t[p + "self_attn.q_proj.weight"] = w(s["heads"] * hd, H)
        t[p + "self_attn.k_proj.weight"] = w(s["kv"] * hd, H)
        t[p + "self_attn.v_proj.weight"] = w(s["kv"] * hd, H)
        t[p + "self_attn.o_proj.weight"] = w(H, s["heads"] * hd)
        t[p + "mlp.gate_proj.weight"] = w(I, H)
        t[p + "mlp.up_proj.weight"] = w(I, H)
        t[p + "mlp.down_proj.weight"] = w(H, I)
    return t


def config_json(s):
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
            "vocab_size": s["vocab"], "hidden_size": s["hidden"],
            "intermediate_size": s["inter"], "num_hidden_layers": s["layers"],
            "num_attention_heads": s["heads"], "num_key_value_heads": s["kv"],
            "head_dim": s["head_dim"], "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
            "max_position_embeddings": 131072, "tie_word_embeddings": s["tied"],
            "hidden_act": "silu", "torch_dtype": "bfloat16"}


def hf_model(s, weights, dtype=torch.bfloat16):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(**{k: v for k, v in config_json(s).items()
                         if k not in ("architectures", "model_type", "torch_dtype")})
    with torch.device("cuda"):
        try:
            model = LlamaForCausalLM._from_config(cfg, dtype=dtype)
        except TypeError:
            model = LlamaForCausalLM._from_config(cfg, torch_dtype=dtype)
    missing, unexpected = model.load_state_dict(weights, strict=False)
    missing = [m for m in missing if not (s["tied"] and m == "lm_head.weight")]
    if missing or unexpected:
        raise RuntimeError(f"state dict mismatch: missing {missing} unexpected {unexpected}")
    if s["tied"]:
        model.tie_weights()
    return model.eval()


def set_attn(model, impl):
    try:
        model.set_attn_implementation(impl)
    except Exception:  # older/newer API: the config field is read per call
        model.config._attn_implementation = impl


@torch.no_grad()
def hf_prefill_ms(model, n, vocab):
    ids = torch.randint(0, vocab, (1, n), device="cuda")
    return events_ms(lambda: model(input_ids=ids, use_cache=True, logits_to_keep=1))


@torch.no_grad()
def hf_decode_ms(model, ctx, vocab, steps=DECODE_STEPS):
    ids = torch.randint(0, vocab, (1, ctx), device="cuda")
    out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
    cache = out.past_key_values
    tok = out.logits[:, -1].argmax(-1, keepdim=True)
    for _ in range(2):  # warm-up steps
        out = model(input_ids=tok, past_key_values=cache, use_cache=True)
        tok = out.logits[:, -1].argmax(-1, keepdim=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        out = model(input_ids=tok, past_key_values=cache, use_cache=True)
        tok = out.logits[:, -1].argmax(-1, keepdim=True)
        tok.item()  # a greedy loop reads the id back every step
    return (time.perf_counter() - t0) * 1e3 / steps


@torch.no_grad()
def cublas_graph_ms(s, weights):
    """One token through every matrix as plain F.linear (cuBLAS), in a graph."""
    H = s["hidden"]
    mats = []
    for l in range(s["layers"]):
        p = f"model.layers.{l}."
        for n in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                  "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"):
            mats.append(weights[p + n + ".weight"])
    mats.append(weights["lm_head.weight" if not s["tied"] else "model.embed_tokens.weight"])
    xs = {m.shape[1]: torch.randn(1, m.shape[1], device="cuda", dtype=torch.bfloat16) for m in mats}
    outs = [torch.empty(1, m.shape[0], device="cuda", dtype=torch.bfloat16) for m in mats]

    def step():
        for m, o in zip(mats, outs):
            torch.matmul(xs[m.shape[1]], m.t(), out=o)

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        step()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return events_ms(graph.replay, reps=20, warm=3)


def decode_bytes(s):
    H, I, hd = s["hidden"], s["inter"], s["head_dim"]
    per_layer = H * s["heads"] * hd * 2 + 2 * H * s["kv"] * hd + 3 * H * I
    return 2 * (s["layers"] * per_layer + s["vocab"] * H)


def run(cmd):
    log("$ " + " ".join(cmd))
    p = subprocess.run(cmd, capture_output=True, text=True)
    log(p.stdout + p.stderr)
    results = dict((m.group(1), float(m.group(2)))
                   for m in re.finditer(r"^RESULT (\S+) (\S+)$", p.stdout, re.M))
    return p.returncode, p.stdout, results


def read_logits(path, rows, vocab):
    t = torch.frombuffer(bytearray(open(path, "rb").read()), dtype=torch.float32)
    return t.view(rows, vocab)


def rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


@torch.no_grad()
def parity(s, model, weights, atlas, ckpt, vocab, rows):
    g = torch.Generator().manual_seed(7)
    prompt = torch.randint(0, vocab, (32,), generator=g).tolist()
    steps = 8
    lpath = "/tmp/atlas_parity_logits.bin"
    cmd = [atlas, "run", "--model", ckpt, "--backend", "cuda", "--tokens",
           ",".join(map(str, prompt)), "--steps", str(steps), "--logits", lpath]
    rc, out, _ = run(cmd)
    if rc != 0:
        rows.append(("parity", "atlas run failed", ""))
        return
    ids = [int(x) for x in re.findall(r"\d+", out.strip().splitlines()[-1])]
    set_attn(model, "sdpa")
    ref = model.generate(torch.tensor([prompt], device="cuda"), max_new_tokens=steps,
                         do_sample=False, min_new_tokens=steps)
    hf_ids = ref[0, len(prompt):].tolist()
    seq = prompt + ids[:-1]
    got = read_logits(lpath, len(seq), vocab)
    hf_logits = model(torch.tensor([seq], device="cuda")).logits[0].float().cpu()
    rows.append(("greedy ids, atlas vs transformers bf16",
                 "equal" if ids == hf_ids else f"DIFFER atlas {ids} hf {hf_ids}", ""))
    rows.append(("logits rel. L2, atlas vs transformers bf16", f"{rel(got, hf_logits):.3g}", ""))
    if s is SHAPES["1b"]:
        model32 = hf_model(s, {k: v.float() for k, v in weights.items()}, torch.float32)
        set_attn(model32, "sdpa")
        ref32 = model32(torch.tensor([seq], device="cuda")).logits[0].float().cpu()
        rows.append(("logits rel. L2, atlas vs transformers f32", f"{rel(got, ref32):.3g}", ""))
        rows.append(("logits rel. L2, transformers bf16 vs f32", f"{rel(hf_logits, ref32):.3g}", ""))
        del model32
        torch.cuda.empty_cache()


def shape_run(name, bench, atlas, tables):
    s = SHAPES[name]
    rows = []
    ckpt = f"/tmp/atlas_speed_{name}"
    t0 = time.time()
    weights = make_weights(s)
    os.makedirs(ckpt, exist_ok=True)
    save_file({k: v.cpu() for k, v in weights.items()}, os.path.join(ckpt, "model.safetensors"))
    with open(os.path.join(ckpt, "config.json"), "w") as f:
        json.dump(config_json(s), f, indent=2)
    log(f"{name}: wrote {ckpt} in {time.time() - t0:.1f} s")

    gbps = copy_gbps()
    floor = decode_bytes(s) / gbps / 1e6
    rows.append(("device copy bandwidth (torch, 1 GiB)", f"{gbps:.0f} GB/s", ""))
    rows.append(("decode floor (weight bytes / bandwidth)", f"{floor:.3f} ms/token", "1.00x"))

    model = hf_model(s, weights)
    hf = {}
    for impl in ("sdpa", "eager"):
        set_attn(model, impl)
        for n in PREFILL:
            try:
                hf[f"prefill_{n}_{impl}"] = hf_prefill_ms(model, n, s["vocab"])
            except Exception as e:  # e.g. eager attention out of memory
                log(f"transformers {impl} prefill {n}: {e}")
        hf[f"decode_128_{impl}"] = hf_decode_ms(model, 128, s["vocab"])
    if name == "8b":
        set_attn(model, "sdpa")
        hf["decode_8192_sdpa"] = hf_decode_ms(model, 8192, s["vocab"], steps=16)
    graph_ms = cublas_graph_ms(s, weights)
    log(f"{name}: transformers {hf}, cuBLAS graph {graph_ms:.3f} ms")

    # The default (KV cache auto: BF16 for these BF16 weights, the fast mode),
    # then the faithful mode (f32 KV cache, f32 prompt activations).
    rc, _, pre = run([bench, "prefill", ckpt, "--tokens", ",".join(map(str, PREFILL)),
                      "--reps", "5"])
    _, _, pre32 = run([bench, "prefill", ckpt, "--tokens", ",".join(map(str, PREFILL)),
                       "--reps", "5", "--kv-dtype", "f32"])
    ctxs = "128,8192" if name == "8b" else "128"
    rc2, _, dec = run([bench, "decode", ckpt, "--context", ctxs, "--steps", "64"])
    _, _, dec32 = run([bench, "decode", ckpt, "--context", ctxs, "--steps", "64",
                       "--kv-dtype", "f32"])

    def row(what, atlas_ms, ref_ms, ref_name):
        if atlas_ms is None:
            rows.append((what, "missing", ""))
            return
        ratio = f"{atlas_ms / ref_ms:.2f}x of {ref_name}" if ref_ms else ""
        rows.append((what, f"{atlas_ms:.3f} ms", ratio))

    a_dec = dec.get("decode_128_ms")
    row("atlas decode, context 128 (graph, BF16 KV: default)", a_dec, floor, "floor")
    row("atlas decode, context 128 (host reads each id before the next step)",
        dec.get("decode_sync_128_ms"), floor, "floor")
    row("atlas decode, context 128 (no launch overlap)", dec.get("decode_nooverlap_128_ms"),
        floor, "floor")
    row("atlas decode, context 128 (eager launches)", dec.get("decode_eager_128_ms"),
        floor, "floor")
    row("atlas decode, context 128, f32 KV", dec32.get("decode_128_ms"), floor, "floor")
    for impl in ("eager", "sdpa"):
        v = hf.get(f"decode_128_{impl}")
        rows.append((f"transformers {impl} decode, context 128", f"{v:.3f} ms",
                     f"atlas/{impl} {a_dec / v:.2f}x" if a_dec else ""))
    rows.append(("cuBLAS graph of matvecs (stand-in)", f"{graph_ms:.3f} ms",
                 f"atlas/graph {a_dec / graph_ms:.2f}x" if a_dec else ""))
    if name == "8b":
        a8k = dec.get("decode_8192_ms")
        row("atlas decode, context 8192", a8k, a_dec, "atlas at 128")
        row("atlas decode, context 8192, f32 KV", dec32.get("decode_8192_ms"),
            dec32.get("decode_128_ms"), "f32 KV at 128")
        v = hf.get("decode_8192_sdpa")
        if v:
            rows.append(("transformers sdpa decode, context 8192", f"{v:.3f} ms", ""))
    for n in PREFILL:
        a = pre.get(f"prefill_{n}_ms")
        sd = hf.get(f"prefill_{n}_sdpa")
        row(f"atlas prefill {n} tokens (BF16 KV: default)", a, sd, "sdpa")
        row(f"atlas prefill {n} tokens, f32 KV (faithful)", pre32.get(f"prefill_{n}_ms"),
            sd, "sdpa")
        for impl in ("eager", "sdpa"):
            v = hf.get(f"prefill_{n}_{impl}")
            if v is not None:
                rows.append((f"transformers {impl} prefill {n}", f"{v:.3f} ms", ""))
    try:
        parity(s, model, weights, atlas, ckpt, s["vocab"], rows)
    except Exception as e:
        rows.append(("parity", f"error: {e}", ""))
    del model, weights
    torch.cuda.empty_cache()
    tables.append((s["label"], rows, rc, rc2))


def main():
    bench, atlas = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or ["1b", "8b"]
    log(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    try:
        import transformers
        log(f"transformers {transformers.__version__}")
    except Exception as e:
        log(f"transformers missing: {e}")
    tables = []
    for name in names:
        try:
            shape_run(name, bench, atlas, tables)
        except Exception as e:
            import traceback
            traceback.print_exc()
            tables.append((SHAPES[name]["label"], [("error", str(e), "")], 1, 1))
    for label, rows, rc, rc2 in tables:
        print(f"\n== {label} (bench prefill rc={rc}, bench decode rc={rc2})")
        for what, value, ratio in rows:
            print(f"{what:46s} {value:>16s}  {ratio}")


if __name__ == "__main__":
    main()
