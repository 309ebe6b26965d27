#!/usr/bin/env python3
"""Reference ids and decodes from Hugging Face tokenizers (Rust, Python
bindings) and transformers for tests/text/reference_test and
tests/api/text_api_test: writes expected.json in the same format as
gen_reference_node.js. No network; run where `tokenizers` and `transformers`
are installed (tools/gpu/tokenizer_h200_stage.sh stages it for the H200):

  python3 gen_reference.py --corpus corpus.json --out expected.json \\
      llama3=DIR/llama3.json:clean qwen3=DIR/qwen3.json llama2=DIR/llama2.json \\
      gpt2_style=synthetic/gpt2_style.json:clean sp_metaspace=... (see README.md) \\
      [--auto llama3=DIR/llama3 ...]

NAME=PATH[:clean]: ":clean" when the model's tokenizer_config.json says
clean_up_tokenization_spaces: true (recorded in the file). ids and the plain
decodes come from tokenizers; decode_clean / decode_skip_clean from
transformers' decode(ids, clean_up_tokenization_spaces=True) on that
tokenizer, for every model (transformers 5 ignores the flag for BPE models,
so they equal the plain decodes there; transformers 4 applied its
clean_up_tokenization).

--auto NAME=DIR (DIR holding the model's tokenizer.json and
tokenizer_config.json) adds decode_auto / decode_skip_auto: what
AutoTokenizer.from_pretrained(DIR).decode(ids) gives, the default decode a
transformers user gets with that model's own config and tokenizer class.
"""
import argparse
import hashlib
import json
import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import tokenizers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoTokenizer, PreTrainedTokenizerFast  # noqa: E402


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--auto", action="append", default=[], metavar="NAME=DIR",
                    help="also decode with AutoTokenizer.from_pretrained(DIR)")
    ap.add_argument("models", nargs="+", help="NAME=PATH[:clean]")
    args = ap.parse_args()
    auto_dirs = dict(a.split("=", 1) for a in args.auto)
    with open(args.corpus, encoding="utf-8") as f:
        corpus = json.load(f)
    oracle = "tokenizers (Rust) via Python tokenizers %s, clean-up by transformers %s" % (
        tokenizers.__version__, transformers.__version__)
    if auto_dirs:
        oracle += ", decode_auto by transformers %s AutoTokenizer" % transformers.__version__
    out = {"oracle": oracle, "corpus_sha256": sha256(args.corpus), "models": {}}
    for spec in args.models:
        name, path = spec.split("=", 1)
        clean = path.endswith(":clean")
        if clean:
            path = path[: -len(":clean")]
        tok = Tokenizer.from_file(path)
        fast = PreTrainedTokenizerFast(tokenizer_object=tok)
        auto, auto_error = None, None
        if name in auto_dirs:
            try:
                auto = AutoTokenizer.from_pretrained(auto_dirs[name])
            except Exception as e:  # recorded; the rest of the file still comes
                auto_error = "%s: %s" % (type(e).__name__, e)
                print("%s: AutoTokenizer failed: %s" % (name, auto_error))

        cases = []
        for text in corpus:
            ids = tok.encode(text, add_special_tokens=True).ids
            plain = tok.encode(text, add_special_tokens=False).ids
            case = {
                "ids": ids, "ids_no_special": plain,
                "decode": tok.decode(ids, skip_special_tokens=False),
                "decode_skip": tok.decode(ids, skip_special_tokens=True),
                "decode_clean": fast.decode(ids, skip_special_tokens=False,
                                            clean_up_tokenization_spaces=True),
                "decode_skip_clean": fast.decode(ids, skip_special_tokens=True,
                                                 clean_up_tokenization_spaces=True),
            }
            if auto is not None:
                case["decode_auto"] = auto.decode(ids)
                case["decode_skip_auto"] = auto.decode(ids, skip_special_tokens=True)
            cases.append(case)
        model = {"tokenizer_sha256": sha256(path), "clean_up_tokenization_spaces": clean,
                 "cases": cases}
        if auto is not None:
            model["auto_class"] = type(auto).__name__
        if auto_error is not None:
            model["auto_error"] = auto_error
        out["models"][name] = model
        print("%s: %d cases%s" % (name, len(cases),
                                  " (auto: %s)" % type(auto).__name__ if auto else ""))
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(json.dumps(out, ensure_ascii=False, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
