"""Which EOS ids transformers' generate() stops at (run where torch and
transformers are installed, e.g. the H200; not in CI):

    python3 tests/arch/eos_reference.py

A tiny random Llama whose config.json says eos_token_id 7, generation forced
to 9, 9, 7, 9, ... by a logits processor, saved three ways: a
generation_config.json without eos_token_id, one with eos_token_id 8, none
at all. transformers 5.x stops after the 7 only in the last case
(front_door_test's GenerationConfigWithoutEosMeansNone holds Atlas to it).
"""
import json, os, sys, tempfile, torch, transformers
from transformers import AutoModelForCausalLM, LlamaConfig, LogitsProcessor, LogitsProcessorList
print("transformers", transformers.__version__)
EOS = 7
class Force(LogitsProcessor):
    # Forces token EOS at the 3rd generated position, 9 elsewhere.
    def __init__(self, n0): self.n0 = n0
    def __call__(self, ids, scores):
        k = ids.shape[1] - self.n0
        s = torch.full_like(scores, -1e9)
        s[:, EOS if k == 2 else 9] = 0
        return s
for case, gen in [("gen without eos", {"bos_token_id": 1}), ("gen with eos 8", {"bos_token_id": 1, "eos_token_id": 8}), ("no generation_config.json", None)]:
    d = tempfile.mkdtemp()
    cfg = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, eos_token_id=EOS, bos_token_id=1)
    torch.manual_seed(0)
    m = AutoModelForCausalLM.from_config(cfg)
    m.save_pretrained(d)
    gp = os.path.join(d, "generation_config.json")
    if gen is None:
        os.remove(gp)
    else:
        json.dump(gen, open(gp, "w"))
    m = AutoModelForCausalLM.from_pretrained(d)
    ids = torch.tensor([[1, 3, 4]])
    out = m.generate(ids, max_new_tokens=6, do_sample=False, logits_processor=LogitsProcessorList([Force(3)]), pad_token_id=0)
    print(case, "| generation_config.eos_token_id =", m.generation_config.eos_token_id, "| generated", out[0, 3:].tolist())
