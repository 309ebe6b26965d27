#!/usr/bin/env python3
"""Expected sampling distributions for tests/sampling/sampler_test.cc.

For each case (logits, ids already in the sequence, options) writes the
probabilities the next token is drawn from. With transformers importable it
applies transformers' own logits processors, in the order generate() builds
them (RepetitionPenaltyLogitsProcessor, then TemperatureLogitsWarper,
TopKLogitsWarper, TopPLogitsWarper, MinPLogitsWarper), in float64, then softmax.
Without it, a plain-Python transcription of those processors' definitions is
used. The output records which one produced it.

  python3 tests/sampling/gen_reference.py [OUT.json]   (default: next to this file)
"""
import json
import math
import os
import sys

CASES = [
    {"name": "plain", "logits": [1.0, 2.0, 3.0, 0.5, -1.0], "history": [], "options": {}},
    {"name": "temperature_0.5", "logits": [1.0, 2.0, 3.0, 0.5, -1.0], "history": [],
     "options": {"temperature": 0.5}},
    {"name": "temperature_2", "logits": [1.0, 2.0, 3.0, 0.5, -1.0], "history": [],
     "options": {"temperature": 2.0}},
    {"name": "top_k_2", "logits": [1.0, 2.0, 3.0, 0.5, -1.0], "history": [], "options": {"top_k": 2}},
    {"name": "top_k_ties", "logits": [1.0, 2.0, 2.0, 0.5, 2.0], "history": [], "options": {"top_k": 2}},
    {"name": "top_p_0.75", "logits": [math.log(0.5), math.log(0.3), math.log(0.15), math.log(0.05)],
     "history": [], "options": {"top_p": 0.75}},
    {"name": "top_p_0.85", "logits": [math.log(0.5), math.log(0.3), math.log(0.15), math.log(0.05)],
     "history": [], "options": {"top_p": 0.85}},
    {"name": "top_p_tiny", "logits": [0.1, 0.3, 0.2], "history": [], "options": {"top_p": 0.01}},
    {"name": "min_p_0.35", "logits": [math.log(0.5), math.log(0.3), math.log(0.15), math.log(0.05)],
     "history": [], "options": {"min_p": 0.35}},
    {"name": "repetition_1.5", "logits": [2.0, -1.0, 0.5, 1.0, 0.0], "history": [0, 1, 1, 4],
     "options": {"repetition_penalty": 1.5}},
    {"name": "all_options", "logits": [2.0, -1.0, 0.5, 1.0, 0.0, 1.7, -0.3, 0.9],
     "history": [0, 3, 3],
     "options": {"repetition_penalty": 1.3, "temperature": 0.7, "top_k": 6, "top_p": 0.9,
                 "min_p": 0.05}},
    {"name": "top_k_then_top_p", "logits": [4.0, 3.5, 3.0, 2.0, 1.0, 0.0],
     "history": [], "options": {"top_k": 4, "top_p": 0.8}},
]


def with_transformers(case):
    import torch
    from transformers.generation.logits_process import (
        MinPLogitsWarper, RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper,
        TopKLogitsWarper, TopPLogitsWarper)
    o = case["options"]
    procs = []
    if o.get("repetition_penalty", 1.0) != 1.0:
        procs.append(RepetitionPenaltyLogitsProcessor(penalty=o["repetition_penalty"]))
    if o.get("temperature", 1.0) != 1.0:
        procs.append(TemperatureLogitsWarper(o["temperature"]))
    if o.get("top_k", 0):
        procs.append(TopKLogitsWarper(top_k=o["top_k"]))
    if o.get("top_p", 1.0) < 1.0:
        procs.append(TopPLogitsWarper(top_p=o["top_p"]))
    if o.get("min_p") is not None:
        procs.append(MinPLogitsWarper(min_p=o["min_p"]))
    ids = torch.tensor([case["history"] or [0]], dtype=torch.long)
    scores = torch.tensor([case["logits"]], dtype=torch.float64)
    for p in procs:
        if isinstance(p, RepetitionPenaltyLogitsProcessor) and not case["history"]:
            continue
        scores = p(ids, scores)
    return torch.softmax(scores, dim=-1)[0].tolist()


def softmax(v):
    m = max(v)
    e = [math.exp(x - m) if x != -math.inf else 0.0 for x in v]
    s = sum(e)
    return [x / s for x in e]


def plain_python(case):
    o = case["options"]
    s = list(case["logits"])
    pen = o.get("repetition_penalty", 1.0)
    if pen != 1.0:
        for i in set(case["history"]):
            s[i] = s[i] * pen if s[i] < 0 else s[i] / pen
    t = o.get("temperature", 1.0)
    if t != 1.0:
        s = [x / t for x in s]
    k = o.get("top_k", 0)
    if k:
        kth = sorted(s, reverse=True)[min(k, len(s)) - 1]
        s = [x if x >= kth else -math.inf for x in s]
    p = o.get("top_p", 1.0)
    if p < 1.0:
        order = sorted(range(len(s)), key=lambda i: s[i])  # ascending
        probs = softmax(s)
        cum = 0.0
        remove = set()
        for pos, i in enumerate(order):
            cum += probs[i]
            if cum <= 1 - p and pos != len(order) - 1:
                remove.add(i)
        s = [-math.inf if i in remove else x for i, x in enumerate(s)]
    mp = o.get("min_p")
    if mp is not None:
        probs = softmax(s)
        top = max(probs)
        s = [-math.inf if probs[i] < mp * top and probs[i] != top else x for i, x in enumerate(s)]
    return softmax(s)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "reference.json")
    try:
        import transformers  # noqa: F401
        import torch  # noqa: F401
        fn, producer = with_transformers, "transformers %s (logits processors, float64)" % transformers.__version__
    except ImportError:
        fn, producer = plain_python, "plain-Python transcription of transformers' logits processors"
    cases = []
    for c in CASES:
        cases.append(dict(c, probs=fn(c)))
    with open(out, "w") as f:
        json.dump({"producer": producer, "cases": cases}, f, indent=1)
        f.write("\n")
    print("wrote %s (%s)" % (out, producer))


if __name__ == "__main__":
    main()
