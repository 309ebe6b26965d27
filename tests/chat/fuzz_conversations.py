#!/usr/bin/env python3
"""Random conversations for the chat-template fuzz (tools/fuzz/fuzz_chat.sh
--conversations): every template of the committed reference.json (the real
Llama 3, Llama 3.1, Qwen3, Qwen2.5, Llama 2 and Mixtral templates and the
synthetic one) rendered with random messages, tools and options by Jinja2
configured as transformers configures it (gen_reference.py's jinja renderer). Writes a
reference.json holding only templates, their config paths absolute.

  fuzz_conversations.py --seed N --count K --out FILE

Messages: any order of system, user, assistant, tool and ipython turns (and
now and then an unknown role), contents of tricky text (whitespace runs,
special-token strings, <think> tags, template syntax, quotes, Unicode),
lists of content parts, null or object contents, assistant tool calls with
object or string arguments, reasoning_content; tools with random schemas;
add_generation_prompt, enable_thinking and date_string at random.
"""
import argparse
import copy
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gen_reference  # noqa: E402

PIECES = ["Hello", "world", " ", "  ", "\n", "\n\n", "\t", " padded ", "é", "中文", "😀", "\"", "'",
          "\\", "{{ x }}", "{% if %}", "<|eot_id|>", "<|im_end|>", "<|im_start|>", "</s>", "<s>",
          "[INST]", "<<SYS>>", "<think>", "</think>", "\n<think>\nplan\n</think>\n", "<tool_call>",
          "<tool_response>", "</tool_response>", "null", "true", "1.5", "a" * 40, "\r\n", "\u00a0",
          "\u2028", "x", "?", "{\"k\": 1}"]
ROLES = ["user"] * 6 + ["assistant"] * 5 + ["system"] * 2 + ["tool"] * 2 + ["ipython"]


def text(r):
    return "".join(r.choice(PIECES) for _ in range(r.choice([0, 1, 1, 2, 3, 5, 8])))


def content(r):
    k = r.random()
    if k < 0.8:
        return text(r)
    if k < 0.92:
        return [{"type": "text", "text": text(r)} for _ in range(r.randint(1, 3))]
    if k < 0.96:
        return None
    return {"value": text(r), "n": r.randint(-5, 5)}


def args_value(r):
    k = r.random()
    if k < 0.4:
        return {"city": text(r) or "Paris"}
    if k < 0.6:
        return {"a": r.randint(-3, 99), "b": [1.5, None, True], "c": {"d": text(r)}}
    if k < 0.8:
        return json.dumps({"city": "Rome", "unit": "c"})
    return {}


def tool_calls(r):
    calls = []
    for _ in range(r.choice([1, 1, 2, 3])):
        fn = {"name": r.choice(["get_weather", "search", "f", "do_it_now"]), "arguments": args_value(r)}
        calls.append({"type": "function", "function": fn} if r.random() < 0.85 else
                     {"type": "function", "id": "call_%d" % r.randint(0, 99), "function": fn})
    return calls


def message(r, first):
    role = "system" if first and r.random() < 0.4 else r.choice(ROLES)
    if r.random() < 0.02:
        role = r.choice(["developer", "function", "odd"])
    m = {"role": role, "content": content(r)}
    if role == "assistant":
        if r.random() < 0.25:
            m["tool_calls"] = tool_calls(r)
            if r.random() < 0.3:
                del m["content"]
        if r.random() < 0.15:
            m["reasoning_content"] = text(r)
    if role == "tool" and r.random() < 0.3:
        m["name"] = "get_weather"
    return m


def tools(r):
    out = []
    for i in range(r.randint(1, 3)):
        props = {}
        for p in range(r.randint(0, 3)):
            props["p%d" % p] = {"type": r.choice(["string", "integer", "number", "boolean"]),
                                "description": text(r)}
            if r.random() < 0.3:
                props["p%d" % p]["enum"] = ["a", "b"]
        fn = {"name": "tool_%d" % i, "description": text(r),
              "parameters": {"type": "object", "properties": props, "required": sorted(props)[:1]}}
        out.append({"type": "function", "function": fn})
    return out


def case(r, tid, i):
    msgs = [message(r, j == 0) for j in range(r.choice([1, 1, 2, 3, 4, 6, 9]))]
    extra = {}
    if tid == "qwen3" and r.random() < 0.5:
        extra["enable_thinking"] = r.random() < 0.5
    if tid == "synthetic_tools_date" and r.random() < 0.3:
        extra["date_string"] = "01 Jan 2025"
    return {"name": "fuzz%d" % i, "messages": msgs,
            "tools": tools(r) if r.random() < 0.3 else None,
            "add_generation_prompt": r.random() < 0.5, "extra": extra}


def templates():
    """The committed reference's templates, with absolute config paths."""
    ref = json.load(open(os.path.join(HERE, "reference.json")))
    base = subprocess.run([os.path.join(ROOT, "tools", "bazel"), "info", "output_base"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout.strip()
    out = []
    for t in ref["templates"]:
        rel = t["config"]
        path = os.path.join(base, rel) if rel.startswith("external/") else os.path.join(ROOT, rel)
        cfg = json.load(open(path))
        if cfg.get("chat_template") != t["chat_template"]:
            sys.exit("%s holds another chat_template than reference.json" % path)
        out.append({"id": t["id"], "source": t["source"], "config": path, "cfg": cfg})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    render, _, producer = gen_reference.jinja_renderer()
    doc = {"producer": producer, "now": gen_reference.NOW.strftime("%Y-%m-%dT%H:%M:%S"),
           "templates": [], "snippets": []}
    for t in templates():
        r = random.Random("%d:%s" % (a.seed, t["id"]))
        entry = {"id": t["id"], "source": t["source"], "config": t["config"],
                 "chat_template": t["cfg"]["chat_template"],
                 "special_tokens": gen_reference.special_tokens(t["cfg"]), "cases": []}
        for i in range(a.count):
            c = case(r, t["id"], i)
            entry["cases"].append(gen_reference.with_outcome(c, lambda: render(t, copy.deepcopy(c))))
        doc["templates"].append(entry)
    with open(a.out, "w") as f:
        json.dump(doc, f, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
