// Issue 57: chat templates and tokenizer.json files an attacker writes (a
// server's clients send messages and tools; model folders come from the Hub).
// Each case either renders / encodes correctly or is refused by a named limit
// with the template's line and column; never a hang, an exhausted stack or
// gigabytes of memory. Expected outputs were checked against Jinja2 3.1
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks).
//
// Every case runs in a child process (InChild) that builds its input there,
// at test time, and the child's peak RSS (wait4's rusage) must stay under
// 512 MB. Time is not asserted (tools/bench's tokenizer_budget measures it).
#include <gtest/gtest.h>
#include <jansson.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "atlas/runtime/chat/chat_template.h"
#include "atlas/runtime/text/tokenizer.h"

namespace {

std::string g_llama3;  // the Llama 3 tokenizer.json (argv)

// Under AddressSanitizer (CI's --config=asan) the shadow memory and the
// quarantine are most of a process's RSS: the bound is Atlas's, so it is
// only asserted without ASan (every other check still runs).
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kMaxRss = SIZE_MAX;
#else
constexpr size_t kMaxRss = 512u << 20;
#endif

// What a child sends back: a status code, a text (the output or the error
// message) and ids.
struct Outcome {
  int code = 0;
  std::string text;
  std::vector<uint32_t> ids;
  size_t peak = 0;  // the child's peak RSS, bytes
};

bool WriteAll(int fd, const void *p, size_t n) {
  const char *c = static_cast<const char *>(p);
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Runs fn in a child process; its outcome comes back through a pipe and
// its peak RSS from wait4. A child that dies gives code -1.
Outcome InChild(const std::function<Outcome()> &fn) {
  int p[2];
  Outcome r;
  r.code = -1;
  if (pipe(p) != 0) return r;
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    Outcome o = fn();
    uint64_t n[2] = {o.text.size(), o.ids.size()};
    int32_t code = o.code;
    bool ok = WriteAll(p[1], &code, sizeof(code)) &&
              WriteAll(p[1], n, sizeof(n)) &&
              WriteAll(p[1], o.text.data(), o.text.size()) &&
              (o.ids.empty() ||
               WriteAll(p[1], o.ids.data(), o.ids.size() * sizeof(uint32_t)));
    _exit(ok ? 0 : 3);
  }
  close(p[1]);
  std::string bytes;
  char buf[1 << 16];
  ssize_t got;
  while ((got = read(p[0], buf, sizeof(buf))) > 0) bytes.append(buf, got);
  close(p[0]);
  int status = 0;
  struct rusage ru = {};
  if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    r.text = "the child died (status " + std::to_string(status) + ")";
    return r;
  }
  r.peak = static_cast<size_t>(ru.ru_maxrss) * 1024;
  int32_t code = 0;
  uint64_t n[2] = {0, 0};
  if (bytes.size() < sizeof(code) + sizeof(n)) return r;
  memcpy(&code, bytes.data(), sizeof(code));
  memcpy(n, bytes.data() + sizeof(code), sizeof(n));
  size_t at = sizeof(code) + sizeof(n);
  if (bytes.size() != at + n[0] + n[1] * sizeof(uint32_t)) return r;
  r.code = code;
  r.text = bytes.substr(at, n[0]);
  r.ids.resize(n[1]);
  if (n[1] > 0) {  // an empty vector's data() may be NULL
    memcpy(r.ids.data(), bytes.data() + at + n[0], n[1] * sizeof(uint32_t));
  }
  return r;
}

#define EXPECT_BOUNDED(o) \
  EXPECT_LT((o).peak, kMaxRss) << "peak RSS " << ((o).peak >> 20) << " MB"

struct Rendered {
  atlas_status_code code = ATLAS_STATUS_OK;
  std::string text;  // the output, or the error message
};

Rendered RenderHere(const std::string &src, const atlas_chat_budget *budget) {
  Rendered r;
  atlas_chat_template *t = nullptr;
  atlas_status s =
      atlas_chat_template_parse(src.data(), src.size(), nullptr, nullptr, &t);
  if (s == ATLAS_OK && budget != nullptr) {
    s = atlas_chat_template_set_budget(t, budget);
  }
  if (s == ATLAS_OK) {
    json_t *messages = json_array();
    atlas_chat_render_options o = {};
    o.messages = messages;
    char *text = nullptr;
    size_t len = 0;
    s = atlas_chat_template_render(t, &o, &text, &len);
    if (s == ATLAS_OK) r.text.assign(text, len);
    free(text);
    json_decref(messages);
  }
  atlas_chat_template_free(t);
  r.code = atlas_status_code_of(s);
  if (s != ATLAS_OK) r.text = atlas_status_message(s);
  atlas_status_free(s);
  return r;
}

// Renders in a child process: the peak RSS is asserted here.
Rendered Render(const std::string &src, const atlas_chat_budget *budget) {
  Outcome o = InChild([&] {
    Rendered r = RenderHere(src, budget);
    Outcome x;
    x.code = r.code;
    x.text = r.text;
    return x;
  });
  EXPECT_BOUNDED(o) << " rendering " << src.substr(0, 80);
  Rendered r;
  r.code = static_cast<atlas_status_code>(o.code);
  r.text = o.text;
  return r;
}

Rendered Render(const std::string &src) { return Render(src, nullptr); }

std::string Repeat(const std::string &s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

#define EXPECT_REFUSED(r, code_, words)                         \
  do {                                                          \
    EXPECT_EQ((r).code, (code_)) << (r).text.substr(0, 300);    \
    EXPECT_NE((r).text.find(words), std::string::npos)          \
        << (r).text.substr(0, 300);                             \
    EXPECT_NE((r).text.find("line "), std::string::npos)        \
        << "no template position: " << (r).text.substr(0, 300); \
  } while (0)

TEST(HostileTemplates, LoopsAndMacroFanOutRunOutOfSteps) {
  EXPECT_REFUSED(Render("{% for i in range(100000) %}{% for j in "
                        "range(100000) %}{% endfor %}{% endfor %}"),
                 ATLAS_STATUS_RESOURCE_EXHAUSTED, "max_steps");
  EXPECT_REFUSED(Render("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - "
                        "1) }}{% endif %}{% endmacro %}{{ f(40) }}"),
                 ATLAS_STATUS_RESOURCE_EXHAUSTED, "max_steps");
  // A costly filter in a loop is charged by what it walks.
  EXPECT_REFUSED(Render("{% set r = range(100000)|list %}{% for i in "
                        "range(100000) %}{{ r|length }}{% endfor %}"),
                 ATLAS_STATUS_RESOURCE_EXHAUSTED, "max_steps");
  EXPECT_REFUSED(Render("{% set s = 'x' * 1000000 %}{% for i in range(100000) "
                        "%}{% set t = s[1:] %}{% endfor %}"),
                 ATLAS_STATUS_RESOURCE_EXHAUSTED, "max_steps");
}

TEST(HostileTemplates, LimitsCanBeRaisedAndLowered) {
  const std::string src =
      "{% for i in range(300) %}{% for j in range(300) %}{% endfor %}"
      "{% endfor %}done";
  EXPECT_EQ(Render(src).text, "done");
  atlas_chat_budget low = atlas_chat_budget_default();
  low.max_steps = 1000;
  EXPECT_REFUSED(Render(src, &low), ATLAS_STATUS_RESOURCE_EXHAUSTED,
                 "more than 1000 steps");
  low = atlas_chat_budget_default();
  low.max_output = 3;
  EXPECT_REFUSED(Render(src, &low), ATLAS_STATUS_RESOURCE_EXHAUSTED,
                 "max_output");
  low = atlas_chat_budget_default();
  low.max_string = 10;
  EXPECT_REFUSED(Render("{{ 'a' ~ 'bcdefghijkl' }}", &low),
                 ATLAS_STATUS_RESOURCE_EXHAUSTED, "max_string");
  const std::string deep = "{{ x" + Repeat("|string", 400) + " }}";
  EXPECT_REFUSED(Render(deep), ATLAS_STATUS_RESOURCE_EXHAUSTED, "max_depth");
  atlas_chat_budget high = atlas_chat_budget_default();
  high.max_depth = 1000;
  Rendered r = Render(deep, &high);
  EXPECT_EQ(r.code, ATLAS_STATUS_OK) << r.text;
  EXPECT_EQ(r.text, "");  // an undefined x prints as nothing
  high.max_depth = 0;
  atlas_chat_template *t = nullptr;
  ASSERT_EQ(atlas_status_consume(
                atlas_chat_template_parse("x", 1, nullptr, nullptr, &t)),
            ATLAS_STATUS_OK);
  EXPECT_EQ(atlas_status_consume(atlas_chat_template_set_budget(t, &high)),
            ATLAS_STATUS_INVALID_ARGUMENT);
  atlas_chat_template_free(t);
}

TEST(HostileTemplates, DeepChainsAndValuesStopAtTheDepthLimit) {
  // 100k chained filters or attribute lookups: a recursion as deep in the
  // evaluator, which overflowed the C stack.
  EXPECT_REFUSED(Render("{{ x" + Repeat("|string", 100000) + " }}"),
                 ATLAS_STATUS_RESOURCE_EXHAUSTED, "max_depth");
  EXPECT_REFUSED(Render("{{ x" + Repeat(".a", 100000) + " }}"),
                 ATLAS_STATUS_RESOURCE_EXHAUSTED, "max_depth");
  EXPECT_REFUSED(Render("{{ 1" + Repeat(" + 1", 100000) + " }}"),
                 ATLAS_STATUS_RESOURCE_EXHAUSTED, "max_depth");
  // A value nested by the template itself, then printed, compared, freed.
  EXPECT_REFUSED(Render("{% set ns = namespace(x=[]) %}{% for i in "
                        "range(100000) %}{% set ns.x = [ns.x] %}{% endfor "
                        "%}{{ ns.x|tojson }}"),
                 ATLAS_STATUS_RESOURCE_EXHAUSTED, "max_depth");
  EXPECT_REFUSED(Render("{% set ns = namespace(x={}) %}{% for i in "
                        "range(100000) %}{% set ns.x = {'a': ns.x} %}{% endfor "
                        "%}{{ ns.x }}"),
                 ATLAS_STATUS_RESOURCE_EXHAUSTED, "max_depth");
  // Literals nested in the source: the parser's own bound.
  EXPECT_REFUSED(
      Render("{{ " + Repeat("[", 100000) + Repeat("]", 100000) + " }}"),
      ATLAS_STATUS_INVALID_ARGUMENT, "nest deeper");
}

TEST(HostileTemplates, MessagesNestedTooDeepAreRefused) {
  atlas_chat_template *t = nullptr;
  ASSERT_EQ(atlas_status_consume(atlas_chat_template_parse(
                "{{ messages|tojson }}", 21, nullptr, nullptr, &t)),
            ATLAS_STATUS_OK);
  json_t *v = json_object();
  for (int i = 0; i < 1000; ++i) {
    json_t *outer = json_array();
    json_array_append_new(outer, v);
    v = outer;
  }
  json_t *messages = json_array();
  json_array_append_new(messages, v);
  atlas_chat_render_options o = {};
  o.messages = messages;
  char *text = nullptr;
  size_t len = 0;
  atlas_status s = atlas_chat_template_render(t, &o, &text, &len);
  EXPECT_EQ(atlas_status_code_of(s), ATLAS_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_NE(std::string(atlas_status_message(s)).find("the input nests"),
            std::string::npos)
      << atlas_status_message(s);
  atlas_status_free(s);
  free(text);
  json_decref(messages);
  atlas_chat_template_free(t);
}

TEST(HostileTemplates, SixtyFourBitEdgesAsJinja2OrRefused) {
  EXPECT_EQ(Render("{{ range(9223372036854775806, 9223372036854775807)|list "
                   "}}")
                .text,
            "[9223372036854775806]");
  EXPECT_EQ(Render("{{ range(-9223372036854775807 - 1, -9223372036854775807 "
                   "+ 1)|list }}")
                .text,
            "[-9223372036854775808, -9223372036854775807]");
  EXPECT_EQ(Render("{{ range(0, 9223372036854775807, "
                   "4611686018427387904)|list }}")
                .text,
            "[0, 4611686018427387904]");
  EXPECT_EQ(Render("{{ [1, 2, 3][::9223372036854775807] }}").text, "[1]");
  EXPECT_EQ(Render("{{ [1, 2, 3][::-9223372036854775807 - 1] }}").text, "[3]");
  EXPECT_EQ(Render("{{ 'abc'[-9223372036854775807 - 1:] }}").text, "abc");
  EXPECT_EQ(Render("{{ 'abcdef'[9223372036854775807:-9223372036854775807 - "
                   "1:-2] }}")
                .text,
            "fdb");
  // Python's ints have no 64-bit bound; Atlas's do: refused, never wrapped.
  EXPECT_REFUSED(Render("{{ (-9223372036854775807 - 1)|abs }}"),
                 ATLAS_STATUS_INVALID_ARGUMENT, "overflows 64 bits");
  EXPECT_REFUSED(Render("{{ -(-9223372036854775807 - 1) }}"),
                 ATLAS_STATUS_INVALID_ARGUMENT, "overflows 64 bits");
}

TEST(HostileTemplates, RefusedWhereJinja2Raises) {
  EXPECT_REFUSED(Render("{{ [{'a': 1}, {'a': 1}]|unique|list }}"),
                 ATLAS_STATUS_INVALID_ARGUMENT, "unhashable type: 'dict'");
  EXPECT_REFUSED(Render("{{ [[1], [1]]|unique|list }}"),
                 ATLAS_STATUS_INVALID_ARGUMENT, "unhashable type: 'list'");
  EXPECT_REFUSED(Render("{{ '\\U00110000' }}"), ATLAS_STATUS_INVALID_ARGUMENT,
                 "illegal Unicode character");
  EXPECT_REFUSED(Render("{{ '\\ud800' }}"), ATLAS_STATUS_INVALID_ARGUMENT,
                 "surrogate");
  EXPECT_REFUSED(Render("{% for loop in [1] %}{% endfor %}"),
                 ATLAS_STATUS_INVALID_ARGUMENT, "special loop variable");
  EXPECT_REFUSED(Render("{% for a, loop in [(1, 2)] %}{% endfor %}"),
                 ATLAS_STATUS_INVALID_ARGUMENT, "special loop variable");
  EXPECT_REFUSED(Render("{% for x in [1] %}{% set loop = 2 %}{% endfor %}"),
                 ATLAS_STATUS_INVALID_ARGUMENT, "special loop variable");
  // Outside a loop Jinja2 lets `loop` be set.
  EXPECT_EQ(Render("{% set loop = 1 %}{{ loop }}").text, "1");
  // NUL kept in literals and join, as Jinja2 does.
  EXPECT_EQ(Render("{{ ['a\\x00b', 'c']|join('\\x00') }}").text,
            std::string("a\0b\0c", 5));
}

// ---- tokenizer.json ------------------------------------------------------------

struct Encoded {
  atlas_status_code code = ATLAS_STATUS_OK;
  std::string message;
  std::vector<uint32_t> ids;
};

// Loads the tokenizer.json text and encodes `text`, in this process.
Encoded EncodeHere(const char *dump, const std::string &text) {
  Encoded e;
  atlas_tokenizer *t = nullptr;
  atlas_status s =
      atlas_tokenizer_load_from_memory(dump, strlen(dump), "crafted.json", &t);
  uint32_t *ids = nullptr;
  size_t n = 0;
  if (s == ATLAS_OK) {
    s = atlas_tokenizer_encode(t, text.data(), text.size(), false, &ids, &n);
  }
  if (s == ATLAS_OK) e.ids.assign(ids, ids + n);
  free(ids);
  atlas_tokenizer_free(t);
  e.code = atlas_status_code_of(s);
  if (s != ATLAS_OK) e.message = atlas_status_message(s);
  atlas_status_free(s);
  return e;
}

// Builds the tokenizer.json (make) and the text (text) and encodes, in a
// child process: the input is made there, at test time, and the peak RSS of
// all of it is asserted.
Encoded EncodeMade(const std::function<std::string()> &make,
                   const std::function<std::string()> &text) {
  Outcome o = InChild([&] {
    std::string json = make();
    Encoded e = EncodeHere(json.c_str(), text());
    Outcome x;
    x.code = e.code;
    x.text = e.message;
    x.ids = e.ids;
    return x;
  });
  EXPECT_BOUNDED(o);
  Encoded e;
  e.code = static_cast<atlas_status_code>(o.code);
  e.message = o.text;
  e.ids = o.ids;
  return e;
}

// The same for a tokenizer.json built with jansson (freed here).
Encoded Encode(json_t *tokenizer_json, const std::string &text) {
  char *dump = json_dumps(tokenizer_json, JSON_COMPACT);
  json_decref(tokenizer_json);
  std::string json(dump);
  free(dump);
  return EncodeMade([&] { return json; }, [&] { return text; });
}

// A BPE model over the single characters of `chars` (id = position).
json_t *CharModel(const std::string &chars) {
  json_t *vocab = json_object();
  for (size_t i = 0; i < chars.size(); ++i) {
    json_object_set_new(vocab, chars.substr(i, 1).c_str(), json_integer(i));
  }
  return json_pack("{s:{s:s, s:o, s:[]}}", "model", "type", "BPE", "vocab",
                   vocab, "merges");
}

json_t *Replace(const std::string &from, const std::string &to) {
  return json_pack("{s:s, s:{s:s#}, s:s#}", "type", "Replace", "pattern",
                   "String", from.data(), (int)from.size(), "content",
                   to.data(), (int)to.size());
}

TEST(HostileTokenizers, ReplaceThatGrowsWithoutBoundIsRefused) {
  json_t *seq = json_array();
  for (int i = 0; i < 40; ++i) json_array_append_new(seq, Replace("a", "aa"));
  json_t *t = CharModel("ab");
  json_object_set_new(
      t, "normalizer",
      json_pack("{s:s, s:o}", "type", "Sequence", "normalizers", seq));
  Encoded e = Encode(t, "aaaa");
  EXPECT_EQ(e.code, ATLAS_STATUS_RESOURCE_EXHAUSTED) << e.message;
  EXPECT_NE(e.message.find("normalizer"), std::string::npos) << e.message;
  // A 1 MB content: refused once the text passes the cap, not built.
  t = CharModel("ab");
  json_object_set_new(t, "normalizer", Replace("a", std::string(1 << 20, 'b')));
  e = Encode(t, std::string(1000, 'a'));
  EXPECT_EQ(e.code, ATLAS_STATUS_RESOURCE_EXHAUSTED) << e.message;
  // Growth within the bound still works: "ab" -> "bbb".
  t = CharModel("ab");
  json_object_set_new(t, "normalizer", Replace("a", "bb"));
  e = Encode(t, "ab");
  EXPECT_EQ(e.code, ATLAS_STATUS_OK) << e.message;
  EXPECT_EQ(e.ids, (std::vector<uint32_t>{1, 1, 1}));
}

TEST(HostileTokenizers, CatastrophicRegexHitsTheMatchLimit) {
  json_t *t = CharModel("ab");
  json_object_set_new(
      t, "pre_tokenizer",
      json_pack("{s:s, s:{s:s}, s:s, s:b}", "type", "Split", "pattern", "Regex",
                "(a|aa)+$", "behavior", "Isolated", "invert", 0));
  Encoded e = Encode(t, std::string(60, 'a') + "b");
  EXPECT_EQ(e.code, ATLAS_STATUS_RESOURCE_EXHAUSTED) << e.message;
  EXPECT_NE(e.message.find("limit"), std::string::npos) << e.message;
}

TEST(HostileTokenizers, RegexJustUnderTheMatchLimitOnEverySearch) {
  // (a+)+c|b over runs of a's each ended by b: every search backtracks
  // through 2^n ways of splitting the run (just under the limit at n = 16)
  // before it matches the b, and a search every 17 bytes made the whole
  // text cost the match limit that often (28 s). The encode's budget (the
  // limit for each KiB of text) ends it, naming the limit.
  auto tokenizer = [] {
    json_t *t = CharModel("abc");
    json_object_set_new(
        t, "pre_tokenizer",
        json_pack("{s:s, s:{s:s}, s:s, s:b}", "type", "Split", "pattern",
                  "Regex", "(a+)+c|b", "behavior", "Isolated", "invert", 0));
    return t;
  };
  std::string run;
  for (int i = 0; i < 16; ++i) run += 'a';
  run += 'b';
  std::string text;
  for (int i = 0; i < 2000; ++i) text += run;
  Encoded e = Encode(tokenizer(), text);
  EXPECT_EQ(e.code, ATLAS_STATUS_RESOURCE_EXHAUSTED) << e.message;
  EXPECT_NE(e.message.find("steps in all"), std::string::npos) << e.message;
  // Which tokenizer.json set the rules.
  EXPECT_EQ(e.message.rfind("crafted.json: ", 0), 0u) << e.message;
  EXPECT_NE(e.message.find("regex_match_limit"), std::string::npos)
      << e.message;
  // The same regex on a text that does not backtrack: the right ids.
  e = Encode(tokenizer(), "acbab");
  ASSERT_EQ(e.code, ATLAS_STATUS_OK) << e.message;
  EXPECT_EQ(e.ids, (std::vector<uint32_t>{0, 2, 1, 0, 1}));
}

// Encodes make()'s text with Llama 3's tokenizer.json in a child, then
// decodes the ids: byte-level, so they must give the text back exactly,
// which checks them (code -2 when not). ids holds the id count.
Outcome EncodeWithLlama3(const std::function<std::string()> &make) {
  return InChild([&] {
    Outcome x;
    atlas_tokenizer *t = nullptr;
    atlas_status s = atlas_tokenizer_load(g_llama3.c_str(), &t);
    const std::string text = make();
    uint32_t *ids = nullptr;
    size_t n = 0;
    if (s == ATLAS_OK) {
      s = atlas_tokenizer_encode(t, text.data(), text.size(), false, &ids, &n);
    }
    char *back = nullptr;
    size_t len = 0;
    if (s == ATLAS_OK)
      s = atlas_tokenizer_decode(t, ids, n, false, &back, &len);
    x.code = atlas_status_code_of(s);
    if (s != ATLAS_OK) x.text = atlas_status_message(s);
    if (s == ATLAS_OK && std::string(back, len) != text) {
      x.code = -2;
      x.text = "the ids do not decode to the text";
    }
    x.ids.assign(1, static_cast<uint32_t>(n));
    free(back);
    free(ids);
    atlas_status_free(s);
    atlas_tokenizer_free(t);
    return x;
  });
}

// Ordinary regexes stay far inside the budget, even where every piece is a
// byte: a megabyte of "a1" through Llama 3's pattern (a piece a byte).
TEST(HostileTokenizers, APieceEveryByteStaysWithinTheRegexBudget) {
  Outcome o = EncodeWithLlama3([] {
    std::string text;
    for (int i = 0; i < (1 << 19); ++i) text += "a1";
    return text;
  });
  EXPECT_BOUNDED(o);
  EXPECT_EQ(o.code, ATLAS_STATUS_OK) << o.text;
}

TEST(HostileTokenizers, ManyAddedTokensAndLongLstripRunsStayCorrect) {
  // 120k special added tokens (their de-duplication scanned every earlier
  // one), then a text using the first and the last.
  json_t *t = CharModel("<>t0123456789 x");
  json_t *added = json_array();
  const int kAdded = 120000;
  for (int i = 0; i < kAdded; ++i) {
    std::string c = "<t" + std::to_string(i) + ">";
    json_array_append_new(
        added, json_pack("{s:i, s:s, s:b, s:b, s:b, s:b, s:b}", "id", 100 + i,
                         "content", c.c_str(), "special", 1, "lstrip", 0,
                         "rstrip", 0, "normalized", 0, "single_word", 0));
  }
  json_object_set_new(t, "added_tokens", added);
  Encoded e = Encode(t, "<t0>x<t119999>");
  ASSERT_EQ(e.code, ATLAS_STATUS_OK) << e.message;
  // Added ids follow the vocabulary (15 characters): 15 + index.
  EXPECT_EQ(e.ids, (std::vector<uint32_t>{15, 14, 15 + kAdded - 1}));

  // An lstrip token over 300k spaces: every space is a match that strips
  // back to the previous one (each used to walk back over all of them).
  t = CharModel("x");
  json_object_set_new(
      t, "added_tokens",
      json_pack("[{s:i, s:s, s:b, s:b, s:b, s:b, s:b}]", "id", 1, "content",
                " ", "special", 1, "lstrip", 1, "rstrip", 0, "normalized", 0,
                "single_word", 0));
  e = Encode(t, std::string(300000, ' ') + "x");
  ASSERT_EQ(e.code, ATLAS_STATUS_OK) << e.message;
  ASSERT_EQ(e.ids.size(), 300001u);
  EXPECT_EQ(e.ids[0], 1u);
  EXPECT_EQ(e.ids[299999], 1u);
  EXPECT_EQ(e.ids[300000], 0u);
}

// A long added token and a text of its prefix: matching walked the whole
// pattern from every position (quadratic); the automaton reads each byte
// about twice. The match must still be found where it is, across the
// windows the split scans in.
TEST(HostileTokenizers, LongAddedTokensMatchInLinearTime) {
  const std::string pattern = std::string(20000, 'a') + "b";
  auto tokenizer = [&] {
    json_t *t = CharModel("ab");
    json_object_set_new(
        t, "added_tokens",
        json_pack("[{s:i, s:s, s:b, s:b, s:b, s:b, s:b}]", "id", 2, "content",
                  pattern.c_str(), "special", 1, "lstrip", 0, "rstrip", 0,
                  "normalized", 0, "single_word", 0));
    return t;
  };
  Encoded e = Encode(tokenizer(), std::string(1000000, 'a'));
  ASSERT_EQ(e.code, ATLAS_STATUS_OK) << e.message;
  EXPECT_EQ(e.ids, std::vector<uint32_t>(1000000, 0));
  // 100000 a's, then the token (its last 20000 a's and the b), then "ab".
  e = Encode(tokenizer(), std::string(120000, 'a') + "bab");
  ASSERT_EQ(e.code, ATLAS_STATUS_OK) << e.message;
  std::vector<uint32_t> want(100000, 0);
  want.push_back(2);
  want.push_back(0);
  want.push_back(1);
  EXPECT_EQ(e.ids, want);
}

TEST(HostileTokenizers, ALargeVocabularyLoadsAndAnswers) {
  // 400k entries: with a fixed hash, keys chosen to collide made loading
  // quadratic; each map now draws its own seed, so no key set is chosen
  // against it. Built in the child as text.
  Encoded e = EncodeMade(
      [] {
        std::string j =
            "{\"model\": {\"type\": \"BPE\", \"merges\": [], "
            "\"vocab\": {";
        for (int i = 0; i < 400000; ++i) {
          j += "\"v" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
        }
        return j + "\"a\": 400000}}}";
      },
      [] { return std::string("aaa"); });
  ASSERT_EQ(e.code, ATLAS_STATUS_OK) << e.message;
  EXPECT_EQ(e.ids, (std::vector<uint32_t>{400000, 400000, 400000}));
}

// One character of 1000 (CJK ideographs from U+4E00), as UTF-8.
std::string Ideograph(int i) {
  const uint32_t cp = 0x4E00 + static_cast<uint32_t>(i);
  std::string s;
  s += static_cast<char>(0xE0 | (cp >> 12));
  s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
  s += static_cast<char>(0x80 | (cp & 0x3F));
  return s;
}

TEST(HostileTokenizers, AMillionMergesLoadAndMerge) {
  // 1000 characters and the merge of every ordered pair of them: 1,000,000
  // merges and as many vocabulary entries (34 s and 1.5 GB before).
  Encoded e = EncodeMade(
      [] {
        std::string vocab, merges;
        vocab.reserve(24u << 20);
        merges.reserve(16u << 20);
        int id = 0;
        for (int i = 0; i < 1000; ++i) {
          vocab += "\"" + Ideograph(i) + "\": " + std::to_string(id++) + ",";
        }
        for (int i = 0; i < 1000; ++i) {
          for (int k = 0; k < 1000; ++k) {
            vocab += "\"" + Ideograph(i) + Ideograph(k) +
                     "\": " + std::to_string(id++) + ",";
            merges += "\"" + Ideograph(i) + " " + Ideograph(k) + "\",";
          }
        }
        vocab.pop_back();
        merges.pop_back();
        return "{\"model\": {\"type\": \"BPE\", \"vocab\": {" + vocab +
               "}, \"merges\": [" + merges + "]}}";
      },
      // The lowest rank merges first: (0,1) rank 1, then (998,2) rank 998002
      // before (999,998) rank 999998, which then no longer exists.
      [] {
        return Ideograph(0) + Ideograph(1) + Ideograph(999) + Ideograph(998) +
               Ideograph(2);
      });
  ASSERT_EQ(e.code, ATLAS_STATUS_OK) << e.message;
  EXPECT_EQ(e.ids, (std::vector<uint32_t>{1000 + 0 * 1000 + 1, 999,
                                          1000 + 998 * 1000 + 2}));
}

// Distinct random words of 8-200 letters: each misses the BPE word cache
// and enters it (a fixed hash let crafted words collide there).
std::string FloodText(size_t n) {
  std::string t;
  t.reserve(n + 256);
  uint64_t s = 0x9E3779B97F4A7C15ull;
  auto next = [&s] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  while (t.size() < n) {
    size_t len = 8 + next() % 193;
    for (size_t j = 0; j < len; ++j) t += static_cast<char>('a' + next() % 26);
    t += ' ';
  }
  t.resize(n);
  return t;
}

TEST(HostileTokenizers, AFiveMegabyteCacheFloodEncodesAndRoundTrips) {
  Outcome o = EncodeWithLlama3([] { return FloodText(5u << 20); });
  EXPECT_BOUNDED(o);
  ASSERT_EQ(o.code, ATLAS_STATUS_OK) << o.text;
  ASSERT_EQ(o.ids.size(), 1u);
  EXPECT_GT(o.ids[0], 1000000u);  // about 2.8 bytes an id
}

TEST(HostileTemplates, HugeStringsAndStructuresAreRefusedByName) {
  // 60 MB strings (over 4 GB before), and tojson of a structure the
  // template builds: refused by a named limit, never built whole.
  EXPECT_REFUSED(Render("{% set s = 'x' * 60000000 %}{{ s|length }}"),
                 ATLAS_STATUS_RESOURCE_EXHAUSTED, "max_string");
  EXPECT_REFUSED(Render("{% set s = 'x' * 1000000 %}{% set ns = "
                        "namespace(t='') %}{% for i in range(100) %}{% set "
                        "ns.t = ns.t ~ s %}{% endfor %}{{ ns.t|length }}"),
                 ATLAS_STATUS_RESOURCE_EXHAUSTED, "max_");
  EXPECT_REFUSED(Render("{% set l = range(100000)|list %}{% set ns = "
                        "namespace(x=[]) %}{% for i in range(1000) %}{% set "
                        "ns.x = ns.x + [l] %}{% endfor %}{{ ns.x|tojson }}"),
                 ATLAS_STATUS_RESOURCE_EXHAUSTED, "max_");
}

}  // namespace

int main(int argc, char **argv) {
  testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() >= 14 && a.compare(a.size() - 14, 14, "tokenizer.json") == 0) {
      g_llama3 = a;
    }
  }
  if (g_llama3.empty()) {
    std::fprintf(stderr, "usage: hostile_text_test LLAMA3_PACKAGE_FILES...\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
