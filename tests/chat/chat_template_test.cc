// Chat templates against transformers: every case in reference.json (written
// by gen_reference.py with transformers' apply_chat_template, or Jinja2
// configured as transformers configures it) must render byte for byte, or
// fail where the reference raised. The real templates come from the pinned npm
// packages Bazel fetched (see tests/text/npm_package.bzl) and from templates/.
#include "atlas/runtime/chat/chat_template.h"

#include <gtest/gtest.h>
#include <jansson.h>

#include <clocale>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include <sys/stat.h>
#include <unistd.h>

namespace {

struct JsonDeleter {
  void operator()(json_t *j) const { json_decref(j); }
};
using Json = std::unique_ptr<json_t, JsonDeleter>;

std::string Message(atlas_status st) {
  return st ? atlas_status_message(st) : "OK";
}

Json LoadReference() {
  json_error_t err;
  Json root(json_load_file("tests/chat/reference.json", JSON_ALLOW_NUL, &err));
  EXPECT_TRUE(root) << "tests/chat/reference.json: " << err.text;
  return root;
}

bool Exists(const std::string &p) { return std::ifstream(p).good(); }

std::string ReadFile(const std::string &p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The fetched config, or a failure that says why the fetch did not happen.
bool ResolveConfig(const std::string &config, std::string *out) {
  if (Exists(config)) {
    *out = config;
    return true;
  }
  if (config.rfind("external/", 0) == 0) {
    const std::string repo = config.substr(0, config.find('/', 9));
    const std::string alt =
        "../" + config.substr(9);  // runfiles without the legacy external/ tree
    if (Exists(alt)) {
      *out = alt;
      return true;
    }
    for (const std::string &e :
         {repo + "/error.txt", "../" + repo.substr(9) + "/error.txt"}) {
      if (Exists(e)) {
        ADD_FAILURE() << "the pinned npm package was not fetched: "
                      << ReadFile(e);
        return false;
      }
    }
  }
  ADD_FAILURE() << config << " is missing from the test's runfiles";
  return false;
}

struct tm FixedNow(json_t *ref) {
  struct tm t = {};
  const char *s = json_string_value(json_object_get(ref, "now"));
  EXPECT_NE(s, nullptr);
  if (s) strptime(s, "%Y-%m-%dT%H:%M:%S", &t);
  return t;
}

struct Template {
  atlas_chat_template *t = nullptr;
  ~Template() { atlas_chat_template_free(t); }
};

TEST(ChatTemplate, ReferenceIsFromAKnownProducer) {
  Json ref = LoadReference();
  ASSERT_TRUE(ref);
  const char *p = json_string_value(json_object_get(ref.get(), "producer"));
  ASSERT_NE(p, nullptr);
  std::printf("reference produced by: %s\n", p);
  EXPECT_GE(json_array_size(json_object_get(ref.get(), "templates")), 6u);
}

TEST(ChatTemplate, RealTemplatesRenderExactlyAsTransformers) {
  Json ref = LoadReference();
  ASSERT_TRUE(ref);
  struct tm now = FixedNow(ref.get());
  size_t i;
  json_t *tj;
  int rendered = 0, raised = 0;
  json_array_foreach(json_object_get(ref.get(), "templates"), i, tj) {
    const std::string id = json_string_value(json_object_get(tj, "id"));
    SCOPED_TRACE("template " + id);
    std::string path;
    if (!ResolveConfig(json_string_value(json_object_get(tj, "config")), &path))
      continue;
    // The fetched file must hold the template the reference was made from.
    json_error_t jerr;
    Json cfg(json_load_file(path.c_str(), JSON_DECODE_INT_AS_REAL, &jerr));
    ASSERT_TRUE(cfg) << path << ": " << jerr.text;
    ASSERT_TRUE(json_equal(json_object_get(cfg.get(), "chat_template"),
                           json_object_get(tj, "chat_template")))
        << path
        << " holds another chat_template than reference.json: rerun "
           "gen_reference.py";
    Template t;
    atlas_status st = atlas_chat_template_load(path.c_str(), &t.t);
    ASSERT_EQ(st, ATLAS_OK) << Message(st);
    size_t k;
    json_t *c;
    json_array_foreach(json_object_get(tj, "cases"), k, c) {
      const std::string name = json_string_value(json_object_get(c, "name"));
      SCOPED_TRACE("case " + name);
      atlas_chat_render_options o = {};
      o.messages = json_object_get(c, "messages");
      json_t *tools = json_object_get(c, "tools");
      o.tools = json_is_array(tools) ? tools : nullptr;
      o.add_generation_prompt =
          json_is_true(json_object_get(c, "add_generation_prompt"));
      o.extra = json_object_get(c, "extra");
      o.now = &now;
      char *out = nullptr;
      size_t len = 0;
      st = atlas_chat_template_render(t.t, &o, &out, &len);
      json_t *expect = json_object_get(c, "expect");
      if (expect) {
        EXPECT_EQ(st, ATLAS_OK) << Message(st);
        if (st == ATLAS_OK) {
          EXPECT_EQ(std::string(out, len),
                    std::string(json_string_value(expect),
                                json_string_length(expect)));
          ++rendered;
        }
      } else {
        ASSERT_NE(st, ATLAS_OK)
            << "rendered where transformers raised "
            << json_string_value(json_object_get(c, "error_type")) << ": "
            << json_string_value(json_object_get(c, "error"))
            << "\ngot: " << out;
        const std::string type =
            json_string_value(json_object_get(c, "error_type"));
        if (type ==
            "TemplateError") {  // raise_exception(msg): the message travels
          EXPECT_NE(
              Message(st).find(std::string("raise_exception: ") +
                               json_string_value(json_object_get(c, "error"))),
              std::string::npos)
              << Message(st);
        }
        EXPECT_NE(Message(st).find("chat template line "), std::string::npos)
            << Message(st);
        ++raised;
      }
      std::free(out);
      atlas_status_free(st);
    }
  }
  EXPECT_GT(rendered, 100);
  EXPECT_GT(raised, 10);
}

TEST(ChatTemplate, EngineSnippetsMatchJinja) {
  Json ref = LoadReference();
  ASSERT_TRUE(ref);
  struct tm now = FixedNow(ref.get());
  size_t i;
  json_t *s;
  json_array_foreach(json_object_get(ref.get(), "snippets"), i, s) {
    const char *src = json_string_value(json_object_get(s, "template"));
    SCOPED_TRACE(src);
    Template t;
    atlas_status st = atlas_chat_template_parse(src, std::strlen(src), nullptr,
                                                nullptr, &t.t);
    json_t *expect = json_object_get(s, "expect");
    if (st != ATLAS_OK) {
      EXPECT_EQ(expect, nullptr)
          << "refused a template Jinja renders: " << Message(st);
      atlas_status_free(st);
      continue;
    }
    json_t *vars = json_object_get(s, "vars");
    Json extra(json_deep_copy(vars));
    json_object_del(extra.get(), "messages");
    json_object_del(extra.get(), "tools");
    Json empty(json_array());
    atlas_chat_render_options o = {};
    o.messages = json_object_get(vars, "messages")
                     ? json_object_get(vars, "messages")
                     : empty.get();
    o.tools = json_is_array(json_object_get(vars, "tools"))
                  ? json_object_get(vars, "tools")
                  : nullptr;
    o.extra = extra.get();
    o.now = &now;
    char *out = nullptr;
    size_t len = 0;
    st = atlas_chat_template_render(t.t, &o, &out, &len);
    if (expect) {
      EXPECT_EQ(st, ATLAS_OK) << Message(st);
      if (st == ATLAS_OK) {
        EXPECT_EQ(
            std::string(out, len),
            std::string(json_string_value(expect), json_string_length(expect)));
      }
    } else {
      EXPECT_NE(st, ATLAS_OK) << "rendered where Jinja raised "
                              << json_string_value(json_object_get(s, "error"))
                              << "\ngot: " << (out ? out : "");
    }
    std::free(out);
    atlas_status_free(st);
  }
}

// Constructs outside the subset are refused with their name and position.
TEST(ChatTemplate, UnsupportedConstructsAreRefusedByNameAndPosition) {
  struct Bad {
    const char *src;
    const char *want;
  } bad[] = {
      {"{% raw %}x{% endraw %}",
       "line 1 column 1: construct 'raw' is not supported"},
      {"ok\n  {% include 'x.j2' %}",
       "line 2 column 6: construct 'include' is not supported"},
      {"{% extends 'base' %}", "construct 'extends' is not supported"},
      {"{% with a = 1 %}{% endwith %}", "construct 'with' is not supported"},
      {"{% call m() %}{% endcall %}", "construct 'call' is not supported"},
      {"{% filter upper %}x{% endfilter %}",
       "construct 'filter' is not supported"},
      {"{{ x|wordwrap }}",
       "line 1 column 6: filter 'wordwrap' is not supported"},
      {"{{ x is escaped }}", "test 'escaped' is not supported"},
      {"{% for x in xs recursive %}{% endfor %}",
       "construct 'recursive for loop' is not supported"},
      {"{{ f(*args) }}",
       "construct '*args'/'**kwargs' in a call is not supported"},
      {"{% if x %}\n{{ y }}", "line 1 column 4: 'if' is never closed"},
      {"{{ 'abc }}", "unterminated string literal"},
      {"{% break %}", "'break' outside a for loop"},
      {"{% endfor %}", "unexpected 'endfor'"},
      {"{{ 1 + }}", "expected an expression, found '}}'"},
      {"{{ a b }}", "expected '}}', found b"},
      {"{{ x @ y }}", "unexpected character '@'"},
  };
  for (const Bad &b : bad) {
    Template t;
    atlas_status st = atlas_chat_template_parse(b.src, std::strlen(b.src),
                                                nullptr, nullptr, &t.t);
    ASSERT_NE(st, ATLAS_OK) << b.src;
    EXPECT_NE(Message(st).find(b.want), std::string::npos)
        << b.src << " -> " << Message(st);
    atlas_status_free(st);
  }
}

atlas_status RenderSnippet(const char *src, const char *vars_json,
                           std::string *out) {
  atlas_chat_template *t = nullptr;
  atlas_status st =
      atlas_chat_template_parse(src, std::strlen(src), "<s>", "</s>", &t);
  if (st) return st;
  Json vars(json_loads(vars_json, 0, nullptr));
  Json msgs(json_array());
  atlas_chat_render_options o = {};
  o.messages = msgs.get();
  o.extra = vars.get();
  char *text = nullptr;
  size_t len = 0;
  st = atlas_chat_template_render(t, &o, &text, &len);
  if (st == ATLAS_OK) out->assign(text, len);
  std::free(text);
  atlas_chat_template_free(t);
  return st;
}

// The snippet's output; a render error fails the test (and gives "").
std::string Rendered(const char *src, const char *vars_json) {
  std::string out;
  atlas_status st = RenderSnippet(src, vars_json, &out);
  EXPECT_EQ(st, ATLAS_OK) << src << ": " << Message(st);
  atlas_status_free(st);
  return out;
}

// Things Jinja would print as an object address, or that need Python's
// Unicode tables, are refused at run time with a reason.
TEST(ChatTemplate, RunTimeRefusalsNameTheConstruct) {
  struct Bad {
    const char *src;
    const char *vars;
    const char *want;
  } bad[] = {
      {"{{ 'abc'.upper }}", "{}",
       "line 1 column 9: 'upper' of a str is a method"},
      {"{{ m.items }}", "{\"m\": {\"items\": 1}}",
       "'items' of a dict is a method"},
      {"{{ namespace(a=1) }}", "{}",
       "printing a Namespace object is not supported"},
      {"{{ x|upper }}", "{\"x\": \"\u00e9\"}",
       "upper of non-ASCII text is not supported"},
      {"{{ '%s' % 1 }}", "{}",
       "construct 'string % formatting' is not supported"},
      {"{{ '{}'.format(1) }}", "{}",
       "construct 'str.format()' is not supported"},
      {"{% set x = loop %}", "{}",
       ""},  // loop is undefined outside a loop: allowed, prints nothing
      {"{% for i in [1] %}{% set l = loop %}{% endfor %}", "{}",
       "assigning the loop object"},
      {"{% set d = {} %}{% set d.x = 1 %}", "{}",
       "cannot assign attribute 'x' on 'd'"},
      {"{{ [1][0:1:0] }}", "{}", "slice step cannot be zero"},
      {"{{ 1 // 0 }}", "{}", "integer division or modulo by zero"},
      {"{{ 1 < 'a' }}", "{}",
       "ordering comparison between 'int' and 'str' is not supported"},
      // Jinja's filters return generators, dict.items() a view, range() a
      // range: printing them shows Python object forms; a generator is used
      // once.
      {"{{ [1, 2]|map('string') }}", "{}",
       "printing a generator object is not supported"},
      {"{{ [1, 2]|reverse }}", "{}",
       "printing a generator object is not supported"},
      {"{{ range(3) }}", "{}", "printing a range object is not supported"},
      {"{{ {'a': 1}.keys() }}", "{}",
       "printing a dict_view object is not supported"},
      {"{{ ([1]|select)[0] }}", "{}",
       "'generator' object is not subscriptable"},
      {"{% set g = [1]|select %}{{ g|join }}{{ g|join }}", "{}",
       "a generator (the result of a filter such as map or select) is used a "
       "second time"},
      {"{{ [1]|select|length }}", "{}",
       "object of type 'generator' has no len()"},
      // Numbers are JSON numbers: 64-bit integers and finite doubles. What
      // Python would make a big int, inf or nan is refused; before, these
      // clamped to INT64_MIN, or crashed on jansson's NULL for inf.
      {"{{ x|int }}", "{\"x\": -8.4e22}",
       "int: -8.3999999999999992e+22 does not fit in a 64-bit integer"},
      {"{{ '99999999999999999999'|int }}", "{}",
       "does not fit in a 64-bit integer"},
      {"{{ x|float }}", "{\"x\": \"1e400\"}",
       "float: '1e400' is not a finite number"},
      {"{{ 'nan'|float }}", "{}", "float: 'nan' is not a finite number"},
      {"{{ 1e308 * 10 }}", "{}", "float arithmetic gives infinity"},
      {"{{ 1e400 }}", "{}", "float literal is not finite"},
      {"{{ 0 ** -1 }}", "{}", "0 cannot be raised to a negative power"},
      // A literal longer than the lexer's buffer was cut short (a wrong
      // value) or, with a '.', written past it (the fuzzer).
      {"{{ "
       "10000000000000000000000000000000000000000000000000000000000000000000000"
       "00000000000000000000000000000000000000000000000000000000000000000000.5 "
       "}}",
       "{}", "a number literal longer than 127 characters is not supported"},
      {"{{ 0.0 ** -1 }}", "{}", "0.0 cannot be raised to a negative power"},
      {"{{ 1.5|round(-1) }}", "{}",
       "round: a negative precision of a float is not supported"},
      {"{{ 1.5|round(1, 'up') }}", "{}",
       "round: method must be common, ceil or floor, not 'up'"},
      // Python reads Unicode digits and spaces (Jinja2: 12 and 1.5); these
      // gave the default, 0 and 0.0.
      {"{{ x|int }}", "{\"x\": \"\u0661\u0662\"}",
       "int: non-ASCII text is not supported"},
      {"{{ x|float }}", "{\"x\": \"\u00a01.5\"}",
       "float: non-ASCII text is not supported"},
      // A keyword argument that fails after another was evaluated: this
      // crashed (the failed call freed its keywords through a NULL pointer;
      // tools/fuzz/fuzz.sh chat_template found it). The second leaked a string.
      {"{{ [1]|tojson(indent=4, sort_keys=x.e) }}", "{}", "'x' is undefined"},
      {"{{ [1]|tojson(indent='  ' ~ 1, sort_keys=x.e) }}", "{}",
       "'x' is undefined"},
      // Keys are C strings: one with a NUL was cut short, and sort_keys
      // then dumped a NULL (the fuzzer).
      {"{{ {'a\\x00b': 1}|tojson(sort_keys=true) }}", "{}",
       "a dict key holding a NUL character"},
      // A loop filter that fails: the items it had kept leaked (the fuzzer).
      {"{% for i in [1, 2] if i > 1 and x.y %}{% endfor %}", "{}",
       "'x' is undefined"},
      // An undefined item is named after its key, a string the render frees
      // once the item is looked up (a constant's copy, a computed string):
      // the error that names it later read freed memory (ASan).
      {"{% set d = {} %}{{ d['ab'].c }}", "{}", "'ab' is undefined"},
      {"{% set d = {} %}{{ d['a' ~ 'b'].c }}", "{}", "'ab' is undefined"},
      {"{% set n = namespace() %}{{ n['a' ~ 'b'].c }}", "{}",
       "'ab' is undefined"},
      // Attribute paths (AttributePathDefaultsAndMissingParts): default=none
      // is no default in Jinja (Atlas printed "None,2" where Jinja's join
      // gives ",2"), so an item without the attribute is refused; a part
      // missing before the last raises UndefinedError in Jinja (Atlas said
      // undefined: selectattr kept 0); a dict method's name without that key
      // finds the bound method in Jinja (selectattr keeps the dict: 1).
      {"{{ x|map(attribute='b', default=none)|join(',') }}",
       "{\"x\": [{\"a\": 1}, {\"b\": 2}]}", "map: item 0 has no attribute 'b'"},
      {"{{ x|selectattr('a.b')|list|length }}", "{\"x\": [{\"c\": 1}]}",
       "'dict object' has no attribute 'a'"},
      {"{{ x|selectattr('items')|list|length }}", "{\"x\": [{\"a\": 1}]}",
       "attribute 'items' of a dict without that key is its method"},
      // Python attributes Jinja finds on other values: a bound method (it
      // prints its address), a number's part (the number). Atlas said
      // undefined: '' where Jinja printed 5 for x.real.
      {"{{ ['ab']|map(attribute='upper')|list }}", "{}",
       "attribute 'upper' of a str is its method"},
      {"{{ [[1]]|map(attribute='count')|list }}", "{}",
       "attribute 'count' of a list is its method"},
      {"{{ [1.5]|selectattr('hex')|list }}", "{}",
       "attribute 'hex' of a float is its method"},
      {"{{ [1]|map(attribute='real')|list }}", "{}",
       "attribute 'real' of an int is its number's attribute"},
      {"{{ x.real }}", "{\"x\": 5}",
       "'real' of an int is a number's attribute"},
      {"{{ x.bit_length }}", "{\"x\": true}",
       "'bit_length' of a bool is a method"},
      {"{{ 'ab'['upper'] }}", "{}",
       "['upper'] of a str is its method in Jinja"},
      {"{{ [1, 2]['index'] }}", "{}",
       "['index'] of a list is its method in Jinja"},
      {"{{ d['items'] }}", "{\"d\": {}}",
       "d['items'] of a dict without that key is its method"},
      // indent's width is capped as string repetition is (64 MiB): a width
      // of 3e14 looped that many times and ran out of memory (the
      // chat_template fuzzer). Jinja builds ' ' * width: a MemoryError.
      {"{{ 'a\\nb'|indent(333333333333333) }}", "{}",
       "indent: a width of 333333333333333 on 2 lines is too large"},
      // Lists are capped by the items they would hold (2^20), not by the
      // repeat count: [1] * 777777 * 5555 asked for 4.3e9 items (the
      // chat_template fuzzer: out of memory).
      {"{{ (777777 * x * 5555)|length }}", "{\"x\": [1]}",
       "list repetition too large"},
      {"{{ ([1, 2] * 600000)|length }}", "{}", "list repetition too large"},
      // Doubling in a loop, by each way a string or list grows: refused at
      // the max_string and max_output limits (16 MiB by default) or 2^20
      // items, not run out of memory.
      {"{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = "
       "ns.s ~ ns.s %}"
       "{% endfor %}{{ ns.s|length }}",
       "{}", "more than 16777216 (the max_string limit"},
      {"{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = "
       "ns.s + ns.s %}"
       "{% endfor %}{{ ns.s|length }}",
       "{}", "more than 16777216 (the max_string limit"},
      {"{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = "
       "[ns.s, ns.s]|join %}"
       "{% endfor %}{{ ns.s|length }}",
       "{}", "the max_string limit"},
      {"{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = "
       "ns.l + ns.l %}"
       "{% endfor %}{{ ns.l|length }}",
       "{}", "list concatenation too large"},
      {"{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "{}",
       "passes 16777216 bytes (the max_output limit"},
  };
  for (const Bad &b : bad) {
    std::string out;
    atlas_status st = RenderSnippet(b.src, b.vars, &out);
    if (b.want[0] == '\0') {
      EXPECT_EQ(st, ATLAS_OK) << b.src << ": " << Message(st);
    } else {
      ASSERT_NE(st, ATLAS_OK) << b.src << " rendered " << out;
      EXPECT_NE(Message(st).find(b.want), std::string::npos)
          << b.src << " -> " << Message(st);
    }
    atlas_status_free(st);
  }
}

// round with a precision and a method, and int / float of text, as Jinja2
// 3.1.6 configured as transformers configures it renders them (the same rows
// are in gen_reference.py's snippets; expected strings from that run).
TEST(ChatTemplate, NumbersRoundAndParseAsJinja) {
  struct Case {
    const char *src;
    const char *vars;
    const char *want;
  } cases[] = {
      {"{{ 2.675|round(2) }} {{ 0.125|round(2) }} {{ 1.005|round(2) }} {{ "
       "-0.3|round(1) }} {{ 3|round(2) }} "
       "{{ 1234|round(-2) }} {{ 1250|round(-2) }} {{ -1350|round(-2) }} {{ "
       "5e-324|round(3) }}",
       "{}", "2.67 0.12 1.0 -0.3 3 1200 1200 -1400 0.0"},
      {"{{ 2.671|round(2, 'ceil') }} {{ -2.671|round(2, 'floor') }} {{ "
       "-0.001|round(2, 'ceil') }} "
       "{{ 1234.5|round(-2, 'floor') }} {{ 7|round(0, 'ceil') }} {{ x|round(3) "
       "}}",
       "{\"x\": 123456.78901}", "2.68 -2.68 0.0 1200.0 7.0 123456.789"},
      {"{{ '1_000'|int }} {{ '1_0.5'|float }} {{ '1__0'|int(-1) }} {{ "
       "'_1'|int(-1) }} {{ '0x10'|int(-1) }} "
       "{{ '0x1p3'|float(-1.5) }} {{ 'inf'|int(-1) }} {{ ' -7 '|int }} {{ "
       "'1e3'|int }}",
       "{}", "1000 10.5 -1 -1 -1 -1.5 -1 -7 1000"},
  };
  for (const Case &c : cases) {
    std::string out;
    atlas_status st = RenderSnippet(c.src, c.vars, &out);
    EXPECT_EQ(st, ATLAS_OK) << c.src << ": " << Message(st);
    EXPECT_EQ(out, c.want) << c.src;
    atlas_status_free(st);
  }
  // Number text longer than 127 bytes gave the default (a fixed buffer);
  // text with a NUL inside was read up to the NUL. Python's int('12\x00')
  // raises (the default), int(' ' * 200 + '12') is 12.
  const std::string pad(200, ' ');
  const std::string vars =
      "{\"x\": \"" + pad + "12\", \"y\": \"0." + std::string(150, '0') + "5\"}";
  std::string out;
  atlas_status st = RenderSnippet(
      "{{ x|int }} {{ y|float }} {{ '12\\x00'|int(-1) }} {{ "
      "'1.5\\x00'|float(-1) }}",
      vars.c_str(), &out);
  EXPECT_EQ(st, ATLAS_OK) << Message(st);
  EXPECT_EQ(out, "12 5e-151 -1 -1");
  atlas_status_free(st);
}

// map(attribute=...) and selectattr read keys of any length (a 256-byte
// buffer made a longer key undefined: "no attribute" where Jinja found it).
TEST(ChatTemplate, AttributePathsOfAnyLength) {
  const std::string key(300, 'k');
  const std::string vars =
      "{\"items\": [{\"" + key + "\": 5}, {\"" + key + "\": 0}]}";
  const std::string src = "{{ items|map(attribute='" + key +
                          "')|list }}{{ items|selectattr('" + key +
                          "')|list|length }}";
  EXPECT_EQ(Rendered(src.c_str(), vars.c_str()), "[5, 0]1");
}

// Attribute paths as Jinja's make_attrgetter reads them: a part of ASCII
// digits is an integer (a list index or a string's code point, never a dict
// key), any other part (the empty one too) a dict key. Expected output from
// Jinja2 3.1.6's ImmutableSandboxedEnvironment (as transformers renders).
// Before, "1" found a dict's "1" key, "+1" indexed a list, "" and "a." ended
// the path early, and a string's code point was undefined.
TEST(ChatTemplate, AttributePathPartsAsJinja) {
  const char *src =
      "{{ x|map(attribute=\"1\", default=\"u\")|list }}|{{ "
      "x|map(attribute=\"01\", default=\"u\")|list }}|"
      "{{ y|map(attribute=\"a.1.b\")|list }}|{{ "
      "x|selectattr(\"1\")|list|length }}|"
      "{{ x|map(attribute=\"+1\", default=\"u\")|list }}|{{ "
      "z|map(attribute=\"\")|list }}|"
      "{{ x|map(attribute=\"99999999999999999999999\", default=\"u\")|list }}|"
      "{{ w|join(\",\", attribute=\"0\") }}|{{ s|map(attribute=\"0\")|list }}|"
      "{{ s|map(attribute=\"1.0\", default=\"u\")|list }}|{{ "
      "y|map(attribute=\"a.\", default=\"u\")|list }}";
  const char *vars =
      "{\"x\": [{\"1\": \"a\"}, [5, 6]], \"y\": [{\"a\": [0, {\"b\": 9}]}], "
      "\"z\": [{\"\": 3}], "
      "\"w\": [[5, 6], [7]], \"s\": [\"ab\", \"\u00e7d\", \"x\"]}";
  EXPECT_EQ(Rendered(src, vars),
            "['u', 6]|['u', 6]|[9]|1|['u', 'u']|[3]|['u', 'u']|5,7|['a', "
            "'\u00e7', 'x']|"
            "['b', 'd', 'u']|['u']");
}

// map's default stands in for any part that finds nothing and the path goes
// on from it. Expected from Jinja2 3.1.6's sandbox; before, Atlas gave
// ['xy'] for the first (the default replaced the whole path). Missing parts
// without a default and dict-method names are refused:
// RunTimeRefusalsNameTheConstruct.
TEST(ChatTemplate, AttributePathDefaultsAndMissingParts) {
  EXPECT_EQ(Rendered("{{ x|map(attribute='a.0', default='xy')|list }}|"
                     "{{ x|map(attribute='a.b', default='u')|list }}|"
                     "{{ y|selectattr('items')|list|length }}|{{ "
                     "y|map(attribute='items.k')|list }}|"
                     "{{ [['ab']]|join(',', attribute='0.1') }}",
                     "{\"x\": [{\"c\": 1}], \"y\": [{\"items\": {\"k\": 2}}]}"),
            "['x']|['u']|1|[2]|b");
}

// Mutating methods of lists and dicts are undefined in Jinja's immutable
// sandbox, not bound methods (Atlas refused d['pop'] and selectattr('pop')
// on dicts by name); their keys still come first. The rest of Python's
// attributes: RunTimeRefusalsNameTheConstruct.
TEST(ChatTemplate, MutatingMethodNamesAreUndefinedAsJinja) {
  EXPECT_EQ(
      Rendered("{{ [[1]]|selectattr('append')|list|length }}|{{ "
               "x|selectattr('pop')|list|length }}|"
               "{{ d['pop'] }}|{{ [1]['append'] }}|{{ "
               "x|map(attribute='update', default='u')|list }}|"
               "{{ [{'pop': 3}]|map(attribute='pop')|list }}|{{ e.update }}|{{ "
               "[1].append is defined }}",
               "{\"x\": [{\"a\": 1}], \"d\": {}, \"e\": {\"update\": 1}}"),
      "0|0|||['u']|[3]||False");
}

// Names of any script, as Jinja's lexer takes them (Python's \w and the
// marks identifiers hold) and then checks them (str.isidentifier()). Atlas
// took ASCII names only ("unexpected character"). Expected: Jinja2 3.1.6.
TEST(ChatTemplate, UnicodeNamesAsJinja) {
  EXPECT_EQ(Rendered("{% set caf\u00e9 = 'x' %}{{ caf\u00e9 }}|{{ d.\u00e9 "
                     "}}|{{ d['na\u00efve'] }}|"
                     "{{ d.na\u00efve }}|{% for \u043a\u043b\u044e\u0447, "
                     "\u5024 in d|items %}"
                     "{{ \u043a\u043b\u044e\u0447 }}={{ \u5024 }};{% endfor "
                     "%}|{{ a\u0301 }}|{{ d.x_ }}|"
                     "{{ \u01c5\u00b7x }}|{{ \u216b is defined }}",
                     "{\"d\": {\"\u00e9\": 1, \"na\u00efve\": 2, \"x_\": 3}, "
                     "\"a\u0301\": 7}"),
            "x|1|2|2|\u00e9=1;na\u00efve=2;x_=3;|7|3||False");
  struct Bad {
    const char *src, *want;
  } bad[] = {
      {"{{ \u00bd }}",
       "line 1 column 4: invalid character in identifier"},  // No
      {"{{ x\u00bd }}", "line 1 column 5: invalid character in identifier"},
      {"{{ \u0301a }}", "invalid character in identifier"},  // a mark first
      {"{{ \u203fx }}",
       "invalid character in identifier"},                  // a connector first
      {"{{ \u0661 }}", "invalid character in identifier"},  // a digit first
      {"{{ x\u20ac }}", "unexpected character '\u20ac' inside a tag"},
  };
  for (const Bad &b : bad) {
    atlas_chat_template *t = nullptr;
    atlas_status st = atlas_chat_template_parse(b.src, std::strlen(b.src),
                                                nullptr, nullptr, &t);
    ASSERT_NE(st, ATLAS_OK) << b.src;
    EXPECT_NE(Message(st).find(b.want), std::string::npos)
        << b.src << ": " << Message(st);
    atlas_status_free(st);
  }
}

// indent as Jinja below its cap (the cap: RunTimeRefusalsNameTheConstruct).
TEST(ChatTemplate, IndentAsJinja) {
  EXPECT_EQ(
      Rendered("{{ 'a\\nb'|indent(3) }}|{{ 'a'|indent(-2, true) }}", "{}"),
      "a\n   b|a");
}

// Repeating an empty string or list a huge number of times is empty at
// once (it looped that many times: the chat_template fuzzer's timeout).
TEST(ChatTemplate, EmptyRepetitionIsImmediate) {
  EXPECT_EQ(
      Rendered("[{{ '' * 3046609909900 }}]{{ [] * 3046609909900 }}", "{}"),
      "[][]");
}

// Repetition builds its text by doubling (atlas_jinja_buf_append_repeated): the
// copies as Python's, odd counts and multi-byte characters included.
TEST(ChatTemplate, RepetitionAsPython) {
  EXPECT_EQ(
      Rendered("{{ 'ab' * 3 }}|{{ '\u00e9' * 2 }}|{{ 'x' * 0 }}|{{ 'x' * -2 "
               "}}|{{ 3 * 'ab' }}|"
               "{{ ('-' * 1000)|length }}|{{ 'a\nb'|indent(3, true, true) "
               "}}|{{ 'xyz' * 7 }}",
               "{}"),
      "ababab|\u00e9\u00e9|||ababab|1000|   a\n   b|xyzxyzxyzxyzxyzxyzxyz");
}

// Integer powers by squaring: a multiplication a unit of the exponent ran
// 1 ** 55555555555 for minutes (the chat_template fuzzer). Values as
// Python's; 2 ** 63 overflows (RunTimeRefusalsNameTheConstruct's kind).
TEST(ChatTemplate, IntegerPowersAsPython) {
  EXPECT_EQ(Rendered("{{ 1 ** 55555555555 }}|{{ (-1) ** 55555555555 }}|{{ 0 ** "
                     "9223372036854775807 }}|"
                     "{{ 2 ** 62 }}|{{ (-2) ** 63 }}|{{ 3 ** 39 }}|{{ (-7) ** "
                     "3 }}|{{ 5 ** 0 }}",
                     "{}"),
            "1|-1|0|4611686018427387904|-9223372036854775808|"
            "4052555153018976267|-343|1");
  std::string out;
  for (const char *src : {"{{ 2 ** 63 }}", "{{ 3 ** 40 }}", "{{ (-2) ** 64 }}",
                          "{{ 10 ** 55555555555 }}"}) {
    atlas_status st = RenderSnippet(src, "{}", &out);
    ASSERT_NE(st, ATLAS_OK) << src << " rendered " << out;
    EXPECT_NE(Message(st).find("integer arithmetic overflows 64 bits"),
              std::string::npos)
        << Message(st);
    atlas_status_free(st);
  }
}

TEST(ChatTemplate, RaiseExceptionCarriesTheMessage) {
  std::string out;
  atlas_status st =
      RenderSnippet("x{{ raise_exception('Roles must alternate, got ' ~ n) }}",
                    "{\"n\": 3}", &out);
  ASSERT_NE(st, ATLAS_OK);
  EXPECT_EQ(atlas_status_code_of(st), ATLAS_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(Message(st).find("raise_exception: Roles must alternate, got 3"),
            std::string::npos)
      << Message(st);
  EXPECT_NE(Message(st).find("line 1 column "), std::string::npos)
      << Message(st);
  atlas_status_free(st);
}

TEST(ChatTemplate, StrftimeNowUsesTheInjectedDate) {
  atlas_chat_template *t = nullptr;
  const char *src = "{{ strftime_now('%d %b %Y|%Y-%m-%d|%A') }}";
  ASSERT_EQ(
      atlas_chat_template_parse(src, std::strlen(src), nullptr, nullptr, &t),
      ATLAS_OK);
  Json msgs(json_array());
  struct tm now = {};
  strptime("2025-02-03", "%Y-%m-%d", &now);
  atlas_chat_render_options o = {};
  o.messages = msgs.get();
  o.now = &now;
  char *out = nullptr;
  ASSERT_EQ(atlas_chat_template_render(t, &o, &out, nullptr), ATLAS_OK);
  EXPECT_STREQ(out, "03 Feb 2025|2025-02-03|Monday");
  std::free(out);
  atlas_chat_template_free(t);
}

TEST(ChatTemplate,
     SpecialTokensFromOptionsOverrideTheConfigAndNullMeansUndefined) {
  atlas_chat_template *t = nullptr;
  const char *src =
      "{{ bos_token is defined }}|{{ bos_token }}|{{ eos_token }}";
  ASSERT_EQ(
      atlas_chat_template_parse(src, std::strlen(src), nullptr, "</s>", &t),
      ATLAS_OK);
  Json msgs(json_array());
  atlas_chat_render_options o = {};
  o.messages = msgs.get();
  char *out = nullptr;
  ASSERT_EQ(atlas_chat_template_render(t, &o, &out, nullptr), ATLAS_OK);
  EXPECT_STREQ(out, "False||</s>");
  std::free(out);
  o.bos_token = "<B>";
  o.eos_token = "<E>";
  ASSERT_EQ(atlas_chat_template_render(t, &o, &out, nullptr), ATLAS_OK);
  EXPECT_STREQ(out, "True|<B>|<E>");
  std::free(out);
  atlas_chat_template_free(t);
}

// Mutated real templates (bytes dropped, chunks repeated, tag characters
// inserted) must parse or be refused, and render or fail, without crashing
// or leaking (run under --config=asan), with a message either way.
TEST(ChatTemplate, MutatedTemplatesFailCleanly) {
  Json ref = LoadReference();
  ASSERT_TRUE(ref);
  struct tm now = FixedNow(ref.get());
  static const char *const kInserts[] = {"{%",         "%}",
                                         "{{",         "}}",
                                         "{#",         "#}",
                                         "-",          "(",
                                         ")",          "[",
                                         "]",          "'",
                                         "\"",         "|",
                                         ".",          ",",
                                         " if ",       " for ",
                                         " endif ",    " in ",
                                         "~",          "{% endfor %}",
                                         "{% else %}", "loop.",
                                         "ns.",        "[::-1]"};
  uint64_t rng = 0x9e3779b97f4a7c15ULL;
  auto next = [&rng]() {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (size_t)(rng >> 33);
  };
  size_t i;
  json_t *tj;
  int parsed = 0, refused = 0;
  json_array_foreach(json_object_get(ref.get(), "templates"), i, tj) {
    const std::string base =
        json_string_value(json_object_get(tj, "chat_template"));
    json_t *c =
        json_array_get(json_object_get(tj, "cases"), 4);  // a multi-turn case
    for (int m = 0; m < 300; ++m) {
      std::string src = base;
      const int edits = 1 + (int)(next() % 3);
      for (int e = 0; e < edits && !src.empty(); ++e) {
        const size_t at = next() % src.size();
        switch (next() % 3) {
          case 0:
            src.erase(at, 1 + next() % 8);
            break;
          case 1:
            src.insert(at, src.substr(at, 1 + next() % 40));
            break;
          default:
            src.insert(
                at, kInserts[next() % (sizeof kInserts / sizeof kInserts[0])]);
            break;
        }
      }
      atlas_chat_template *t = nullptr;
      atlas_status st =
          atlas_chat_template_parse(src.data(), src.size(), "<s>", "</s>", &t);
      if (st != ATLAS_OK) {
        EXPECT_NE(Message(st).find("chat template"), std::string::npos)
            << Message(st);
        atlas_status_free(st);
        ++refused;
        continue;
      }
      ++parsed;
      atlas_chat_render_options o = {};
      o.messages = json_object_get(c, "messages");
      o.extra = json_object_get(c, "extra");
      o.add_generation_prompt = true;
      o.now = &now;
      char *out = nullptr;
      st = atlas_chat_template_render(t, &o, &out, nullptr);
      if (st != ATLAS_OK) {
        EXPECT_GT(Message(st).size(), 10u);
      }
      atlas_status_free(st);
      std::free(out);
      atlas_chat_template_free(t);
    }
  }
  EXPECT_GT(parsed, 100);
  EXPECT_GT(refused, 100);
}

TEST(ChatTemplate, DeepNestingIsRefusedNotOverflowed) {
  for (const char *unit : {"(", "[", "- ", "not ", "{% if x %}"}) {
    std::string src = "{{ ";
    if (unit[0] == '{') src = "";
    for (int k = 0; k < 5000; ++k) src += unit;
    if (unit[0] != '{') src += "x";
    for (int k = 0; k < 5000 && (unit[0] == '(' || unit[0] == '['); ++k)
      src += unit[0] == '(' ? ")" : "]";
    if (unit[0] != '{') src += " }}";
    atlas_chat_template *t = nullptr;
    atlas_status st =
        atlas_chat_template_parse(src.data(), src.size(), nullptr, nullptr, &t);
    ASSERT_NE(st, ATLAS_OK) << unit;
    EXPECT_NE(Message(st).find("nest deeper than"), std::string::npos)
        << Message(st);
    atlas_status_free(st);
  }
}

TEST(ChatTemplate, LoadNamesWhatIsWrongWithTheConfig) {
  struct Bad {
    const char *json;
    const char *want;
  } bad[] = {
      {"{\"bos_token\": \"<s>\"}", "has no 'chat_template'"},
      {"{\"chat_template\": 3}",
       "'chat_template' is neither a string nor a list"},
      {"{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"x\"}]}",
       "no template named 'default'"},
      {"{\"chat_template\": \"x\", \"eos_token\": 5}",
       "'eos_token' is neither a string nor an object"},
      {"{\"chat_template\": \"{% if %}\"}", "expected an expression"},
      {"[1", "not readable JSON"},
  };
  const char *dir = std::getenv("TEST_TMPDIR");
  const std::string path =
      std::string(dir ? dir : "/tmp") + "/tokenizer_config.json";
  for (const Bad &b : bad) {
    FILE *f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(b.json, f);
    std::fclose(f);
    atlas_chat_template *t = nullptr;
    atlas_status st = atlas_chat_template_load(path.c_str(), &t);
    ASSERT_NE(st, ATLAS_OK) << b.json;
    EXPECT_NE(Message(st).find(b.want), std::string::npos) << Message(st);
    EXPECT_NE(Message(st).find(path), std::string::npos) << Message(st);
    atlas_status_free(st);
  }
  // A list of named templates: "default", and "tool_use" when tools are given;
  // AddedToken objects for the special tokens.
  FILE *f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(
      "{\"bos_token\": {\"__type\": \"AddedToken\", \"content\": \"<s>\"}, "
      "\"chat_template\": ["
      "{\"name\": \"default\", \"template\": \"D{{ bos_token }}\"},"
      "{\"name\": \"tool_use\", \"template\": \"T{{ tools|length }}\"}]}",
      f);
  std::fclose(f);
  atlas_chat_template *t = nullptr;
  atlas_status st = atlas_chat_template_load(path.c_str(), &t);
  ASSERT_EQ(st, ATLAS_OK) << Message(st);
  Json msgs(json_array()), tools(json_loads("[{}, {}]", 0, nullptr));
  atlas_chat_render_options o = {};
  o.messages = msgs.get();
  char *out = nullptr;
  ASSERT_EQ(atlas_chat_template_render(t, &o, &out, nullptr), ATLAS_OK);
  EXPECT_STREQ(out, "D<s>");
  std::free(out);
  o.tools = tools.get();
  ASSERT_EQ(atlas_chat_template_render(t, &o, &out, nullptr), ATLAS_OK);
  EXPECT_STREQ(out, "T2");
  std::free(out);
  atlas_chat_template_free(t);
}

// Only a regular file is read: a FIFO nobody writes to was waited on for
// ever (`atlas run --chat` with such a tokenizer_config.json hung). Each
// other kind is refused by name, at once.
TEST(ChatTemplate, OnlyARegularFileIsRead) {
  const char *tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp");
  const std::string fifo = dir + "/fifo_tokenizer_config.json";
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::pair<std::string, const char *> cases[] = {
      {fifo, "FIFO"},
      {"/dev/zero", "character device"},
      {dir, "directory"},
      {dir + "/missing.json", "tokenizer_config.json"}};
  for (const auto &c : cases) {
    SCOPED_TRACE(c.first);
    atlas_chat_template *t = nullptr;
    atlas_status st = atlas_chat_template_load(c.first.c_str(), &t);
    ASSERT_NE(st, ATLAS_OK);
    EXPECT_NE(Message(st).find(c.first), std::string::npos) << Message(st);
    EXPECT_NE(Message(st).find(c.second), std::string::npos) << Message(st);
    atlas_status_free(st);
    EXPECT_EQ(t, nullptr);
  }
  unlink(fifo.c_str());
}

// An error while rendering names the file too (and which named template),
// not only the line and column.
TEST(ChatTemplate, RenderErrorsNameTheFile) {
  const char *dir = std::getenv("TEST_TMPDIR");
  const std::string path =
      std::string(dir ? dir : "/tmp") + "/render_error_config.json";
  FILE *f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(
      "{\"chat_template\": [{\"name\": \"default\", \"template\": \"{{ "
      "raise_exception('no') }}\"},"
      "{\"name\": \"tool_use\", \"template\": \"{{ x.y }}\"}]}",
      f);
  std::fclose(f);
  atlas_chat_template *t = nullptr;
  atlas_status st = atlas_chat_template_load(path.c_str(), &t);
  ASSERT_EQ(st, ATLAS_OK) << Message(st);
  Json msgs(json_array()), tools(json_loads("[{}]", 0, nullptr));
  atlas_chat_render_options o = {};
  o.messages = msgs.get();
  char *out = nullptr;
  st = atlas_chat_template_render(t, &o, &out, nullptr);
  ASSERT_NE(st, ATLAS_OK);
  EXPECT_EQ(Message(st),
            path + ": chat template line 1 column 19: raise_exception: no");
  atlas_status_free(st);
  o.tools = tools.get();
  st = atlas_chat_template_render(t, &o, &out, nullptr);
  ASSERT_NE(st, ATLAS_OK);
  EXPECT_EQ(Message(st), path +
                             ": chat_template 'tool_use': chat template line 1 "
                             "column 5: 'x' is undefined");
  atlas_status_free(st);
  EXPECT_EQ(out, nullptr);
  atlas_chat_template_free(t);
}

// Only the 'default' template serves without tools: a 'tool_use' template
// with a construct the engine does not run fails only a render with tools,
// not the load. Load errors name the file once; a NULL path is an argument
// error.
TEST(ChatTemplate, AToolUseTemplateOnlyMattersWithTools) {
  const char *dir = std::getenv("TEST_TMPDIR");
  const std::string path =
      std::string(dir ? dir : "/tmp") + "/tool_use_unsupported.json";
  FILE *f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(
      "{\"chat_template\": [{\"name\": \"default\", \"template\": \"D{{ "
      "messages|length }}\"},"
      "{\"name\": \"tool_use\", \"template\": \"{% include 'x' %}\"}]}",
      f);
  std::fclose(f);
  atlas_chat_template *t = nullptr;
  atlas_status st = atlas_chat_template_load(path.c_str(), &t);
  ASSERT_EQ(st, ATLAS_OK) << Message(st);
  Json msgs(json_array()), tools(json_loads("[{}]", 0, nullptr));
  atlas_chat_render_options o = {};
  o.messages = msgs.get();
  char *out = nullptr;
  ASSERT_EQ(atlas_chat_template_render(t, &o, &out, nullptr), ATLAS_OK);
  EXPECT_STREQ(out, "D0");
  std::free(out);
  out = nullptr;
  o.tools = tools.get();
  st = atlas_chat_template_render(t, &o, &out, nullptr);
  ASSERT_NE(st, ATLAS_OK);
  EXPECT_EQ(Message(st).rfind(path + ": chat_template 'tool_use': ", 0), 0u)
      << Message(st);
  EXPECT_NE(Message(st).find("include"), std::string::npos) << Message(st);
  atlas_status_free(st);
  EXPECT_EQ(out, nullptr);
  atlas_chat_template_free(t);

  f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\"bos_token\": 1}", f);
  std::fclose(f);
  st = atlas_chat_template_load(path.c_str(), &t);
  ASSERT_NE(st, ATLAS_OK);
  std::string m = Message(st);
  EXPECT_EQ(m.find(path), 0u) << m;
  EXPECT_EQ(m.find(path, 1), std::string::npos) << "the path twice: " << m;
  atlas_status_free(st);

  st = atlas_chat_template_load(nullptr, &t);
  EXPECT_EQ(atlas_status_code_of(st), ATLAS_STATUS_INVALID_ARGUMENT)
      << Message(st);
  atlas_status_free(st);
  EXPECT_EQ(t, nullptr);
}

// Numbers read and print as Python's do whatever locale the host program set:
// under de_DE strtod stops at '.' and printf writes ','.
TEST(ChatTemplate, NumbersIgnoreTheHostLocale) {
  const char *tmp = std::getenv("TEST_TMPDIR");
  const std::string loc = std::string(tmp ? tmp : "/tmp") + "/locales";
  // Debian's `locales` package (tools/debian-packages.txt) has the source.
  std::string cmd = "mkdir -p '" + loc + "' && localedef -i de_DE -f UTF-8 '" +
                    loc + "/de_DE.UTF-8' >/dev/null 2>&1";
  (void)std::system(cmd.c_str());  // warnings exit 1 with the locale made
  ASSERT_EQ(access((loc + "/de_DE.UTF-8/LC_NUMERIC").c_str(), R_OK), 0) << cmd;
  setenv("LOCPATH", loc.c_str(), 1);
  ASSERT_NE(setlocale(LC_ALL, "de_DE.UTF-8"), nullptr);
  char probe[16];
  std::snprintf(probe, sizeof(probe), "%.1f", 1.5);
  EXPECT_STREQ(probe, "1,5")
      << "the locale is not in effect; the test would prove nothing";
  atlas_chat_template *t = nullptr;
  const char *src =
      "{{ 0.5 }}|{{ 3 / 2 }}|{{ '2.5' | float }}|{{ 0.1 + 0.2 }}|{{ 1e20 }}";
  atlas_status st =
      atlas_chat_template_parse(src, std::strlen(src), nullptr, nullptr, &t);
  ASSERT_EQ(st, ATLAS_OK) << Message(st);
  Json msgs(json_array());
  atlas_chat_render_options o = {};
  o.messages = msgs.get();
  char *out = nullptr;
  st = atlas_chat_template_render(t, &o, &out, nullptr);
  std::snprintf(probe, sizeof(probe), "%.1f", 1.5);
  std::string after = probe;
  setlocale(LC_ALL, "C");
  unsetenv("LOCPATH");
  ASSERT_EQ(st, ATLAS_OK) << Message(st);
  EXPECT_STREQ(out, "0.5|1.5|2.5|0.30000000000000004|1e+20");
  EXPECT_EQ(after, "1,5") << "the caller's locale is restored";
  std::free(out);
  atlas_chat_template_free(t);
}

}  // namespace
