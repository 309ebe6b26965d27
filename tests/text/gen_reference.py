#!/usr/bin/env python3
"""Reference ids and decodes from Hugging Face tokenizers (Rust, Python
bindings) for tests/text/reference_test: writes expected.json in the same
format as gen_reference_node.js. No network; run where `tokenizers` (and
optionally `transformers`) are installed:

  python3 gen_reference.py --corpus corpus.json --out expected.json \\
      llama3=DIR/llama3.json:clean qwen3=DIR/qwen3.json llama2=DIR/llama2.json \\
      gpt2_style=synthetic/gpt2_style.json:clean sp_metaspace=... (see README.md)

NAME=PATH[:clean]: ":clean" when the model's tokenizer_config.json says
clean_up_tokenization_spaces: true; decode_clean then comes from
transformers' decode(..., clean_up_tokenization_spaces=True) when
transformers is installed, else from the same replacement list in Python.
"""
import argparse
import hashlib
import json
import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
import tokenizers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

try:
    import transformers
    from transformers import PreTrainedTokenizerFast
except Exception:  # transformers is optional
    transformers = None


def clean_up(s):
    """transformers' PreTrainedTokenizerBase.clean_up_tokenization."""
    for a, b in [(" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"),
                 (" n't", "n't"), (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"),
                 (" 're", "'re")]:
        s = s.replace(a, b)
    return s


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("models", nargs="+", help="NAME=PATH[:clean]")
    args = ap.parse_args()
    with open(args.corpus, encoding="utf-8") as f:
        corpus = json.load(f)
    oracle = "tokenizers (Rust) via Python tokenizers %s" % tokenizers.__version__
    if transformers is not None:
        oracle += ", clean-up by transformers %s" % transformers.__version__
    out = {"oracle": oracle, "corpus_sha256": sha256(args.corpus), "models": {}}
    for spec in args.models:
        name, path = spec.split("=", 1)
        clean = path.endswith(":clean")
        if clean:
            path = path[: -len(":clean")]
        tok = Tokenizer.from_file(path)
        fast = None
        if clean and transformers is not None:
            fast = PreTrainedTokenizerFast(tokenizer_object=tok)

        def cleaned(ids, skip, plain):
            if fast is None:
                return clean_up(plain)
            return fast.decode(ids, skip_special_tokens=skip, clean_up_tokenization_spaces=True)

        cases = []
        for text in corpus:
            ids = tok.encode(text, add_special_tokens=True).ids
            plain = tok.encode(text, add_special_tokens=False).ids
            keep = tok.decode(ids, skip_special_tokens=False)
            skip = tok.decode(ids, skip_special_tokens=True)
            cases.append({
                "ids": ids, "ids_no_special": plain, "decode": keep, "decode_skip": skip,
                "decode_clean": cleaned(ids, False, keep) if clean else keep,
                "decode_skip_clean": cleaned(ids, True, skip) if clean else skip,
            })
        out["models"][name] = {"tokenizer_sha256": sha256(path),
                               "clean_up_tokenization_spaces": clean, "cases": cases}
        print("%s: %d cases" % (name, len(cases)))
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(json.dumps(out, ensure_ascii=False, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
