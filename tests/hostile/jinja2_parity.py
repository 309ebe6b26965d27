#!/usr/bin/env python3
"""Chat templates Jinja2 raises on, renders oddly, or renders as usual:
Atlas must give the same text, or refuse (with the template's line and
column) where Jinja2 configured as transformers configures it raises
(tests/chat/gen_reference.py's renderer: ImmutableSandboxedEnvironment,
trim_blocks, lstrip_blocks, loopcontrols, transformers' tojson,
raise_exception and strftime_now). A rendering that is not UTF-8 (a lone
surrogate) counts as raising: no tokenizer takes it.

  jinja2_parity.py --render RENDER_CORPUS [--templates JSON...]   the test
  jinja2_parity.py --transformers TOKENIZER_JSON [--templates ...]
      Jinja2 against transformers' own apply_chat_template on the same
      corpus (where transformers is installed); exit 1 on a difference.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "chat"))
import gen_reference  # noqa: E402

U = gen_reference.U
A = gen_reference.A
S = gen_reference.S
CHAT = [S("You are kind."), U("Hi \x1b[2J there"), A("Hello."), U("Bye")]

# (name, template, variables): the cases, then neighbours that
# must keep rendering.
SNIPPETS = [
    ("unique_dicts", "{{ [{'a': 1}, {'a': 1}]|unique|list }}", {}),
    ("unique_lists", "{{ [[1], [1]]|unique|list }}", {}),
    ("unique_dict_from_messages", "{{ messages|unique|list }}", {"messages": [U("a"), U("a")]}),
    ("unique_scalars", "{{ [1, 2, 1, 'a', 'A', 'b', 2.0]|unique|list }}", {}),
    ("escape_beyond_unicode", "{{ '\\U00110000' }}", {}),
    ("escape_max_unicode", "{{ '\\U0010FFFF'|length }}", {}),
    ("escape_lone_surrogate", "{{ '\\ud800' }}", {}),
    ("escape_low_surrogate", "{{ 'x\\udfff' }}", {}),
    ("escape_surrogate_pair", "{{ '\\ud83d\\ude00' }}", {}),
    ("escape_astral", "{{ '\\U0001F600' }}", {}),
    ("loop_as_for_target", "{% for loop in [1] %}{% endfor %}", {}),
    ("loop_in_for_tuple", "{% for a, loop in [(1, 2)] %}{% endfor %}", {}),
    ("loop_set_inside_for", "{% for x in [1] %}{% set loop = 2 %}{% endfor %}", {}),
    ("loop_set_outside", "{% set loop = 1 %}{{ loop }}", {}),
    ("loop_attribute", "{% for x in 'ab' %}{{ loop.index }}{{ loop.last }}{% endfor %}", {}),
    ("nul_literal", "{{ 'a\\x00b' }}|{{ 'a\\x00b'|length }}", {}),
    ("nul_join", "{{ ['a\\x00b', 'c']|join('\\x00') }}", {}),
    ("nul_in_message", "{{ messages[0].content }}{{ messages[0].content|length }}",
     {"messages": [U("x\x00y")]}),
    ("nul_upper_replace", "{{ 'a\\x00b'|upper|replace('\\x00', '0') }}", {}),
    ("esc_in_output", "{{ '\\x1b[2J' }}{{ messages[0].content }}", {"messages": [U("\x1b]0;PWNED\x07")]}),
    ("raise_exception", "{{ raise_exception('bad \\x1b[2J role') }}", {}),
    ("undefined_call", "{{ foo() }}", {}),
    ("undefined_print", "[{{ foo }}][{{ foo.bar|default('d') }}]", {}),
    ("zero_division", "{{ 1 / 0 }}", {}),
    ("str_plus_int", "{{ 'a' + 1 }}", {}),
    ("index_past_end", "[{{ [1][5] }}]", {}),
    ("slice_huge_step", "{{ [1, 2, 3][::9223372036854775807] }}", {}),
    ("slice_huge_negative", "{{ 'abcdef'[9223372036854775807:-9223372036854775807 - 1:-2] }}", {}),
    ("range_edges", "{{ range(9223372036854775806, 9223372036854775807)|list }}", {}),
    ("tojson_nested", "{{ messages|tojson }}", {"messages": CHAT}),
    ("tojson_indent", "{{ {'b': [1, {'c': None}], 'a': 'é\\n'}|tojson(indent=2) }}", {}),
    ("namespace_loop", "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
                       "{% endfor %}{{ ns.n }}", {"messages": CHAT}),
    ("macro_recursion", "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
                        "{{ f(5) }}", {}),
    ("filters_chain", "{{ ' A b '|trim|lower|replace('b', 'c')|title|string|length }}", {}),
    ("strftime", "{{ strftime_now('%d %b %Y') }}", {}),
    ("string_multiply", "{{ 'ab' * 3 }}{{ [0] * 2 }}", {}),
    ("dict_items", "{% for k, v in {'b': 1, 'a': 2}|items %}{{ k }}={{ v }};{% endfor %}", {}),
]


def snippet_corpus():
    out = []
    for name, src, variables in SNIPPETS:
        case = {"name": name, "messages": variables.get("messages", []), "tools": None,
                "add_generation_prompt": False, "extra": {}}
        out.append(({"id": name, "cfg": {"chat_template": src}, "tokenizer_json": None}, case))
    return out


def template_corpus(paths):
    out = []
    for p in paths:
        cfg = json.load(open(p))
        tid = os.path.splitext(os.path.basename(p))[0]
        t = {"id": tid, "cfg": cfg, "tokenizer_json": None}
        for case in gen_reference.cases_for(tid):
            out.append((t, case))
        for agp in (False, True):
            out.append((t, {"name": "escapes/%s" % agp, "messages": CHAT, "tools": None,
                            "add_generation_prompt": agp, "extra": {}}))
    return out


def outcome(render, t, case):
    try:
        text = render(t, case)
    except Exception as e:  # what Jinja2 or transformers raises
        return ("raise", "%s: %s" % (type(e).__name__, e))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return ("raise", "not UTF-8: %s" % e)
    return ("ok", text)


def atlas_outcomes(render_bin, corpus):
    items = []
    for t, case in corpus:
        item = {"template": t["cfg"]["chat_template"], "messages": case["messages"],
                "tools": case["tools"], "add_generation_prompt": case["add_generation_prompt"],
                "extra": case["extra"]}
        item.update(gen_reference.special_tokens(t["cfg"]))
        items.append(item)
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "in.json"), os.path.join(d, "out.json")
        with open(src, "w") as f:
            json.dump(items, f, ensure_ascii=False)
        subprocess.run([render_bin, src, dst], check=True)
        with open(dst, encoding="utf-8", errors="surrogateescape") as f:
            got = json.load(f)
    return [("ok", g["ok"]) if "ok" in g else ("raise", g["error"]) for g in got]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--render")
    ap.add_argument("--transformers")
    ap.add_argument("--templates", nargs="*", default=[])
    args = ap.parse_args()
    corpus = snippet_corpus() + template_corpus(args.templates)
    jinja, _, producer = gen_reference.jinja_renderer()
    want = [outcome(jinja, t, c) for t, c in corpus]
    if args.transformers:
        render, _, other = gen_reference.transformers_renderer(args.transformers)
        got = [outcome(render, t, c) for t, c in corpus]
        label = other
    else:
        got = atlas_outcomes(args.render, corpus)
        label = "Atlas"
    bad = 0
    for (t, c), w, g in zip(corpus, want, got):
        where = "%s %s" % (t["id"], c["name"])
        if w[0] == "ok" and g[0] == "ok" and w[1] != g[1]:
            print("DIFFER %s:\n  jinja2: %r\n  %s: %r" % (where, w[1][:300], label, g[1][:300]))
            bad += 1
        elif w[0] != g[0]:
            print("DIFFER %s: jinja2 %s %r, %s %s %r" % (where, w[0], w[1][:200], label, g[0], g[1][:200]))
            bad += 1
        elif w[0] == "raise" and label == "Atlas" and " column " not in g[1]:
            print("NO POSITION %s: %r" % (where, g[1][:200]))
            bad += 1
    raised = sum(1 for w in want if w[0] == "raise")
    print("%d cases (%d raise in jinja2), %d differ; reference: %s; against %s"
          % (len(corpus), raised, bad, producer, label))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
