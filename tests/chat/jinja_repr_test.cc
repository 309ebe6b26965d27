// Python's repr of a string as templates print it inside a tuple, a list or
// a dict ({{ (s,) }}): against Python's own output for text and for every
// code point (python_repr_ranges.txt, from python3), and against a code
// point at a time restatement of the rule for bytes that are not UTF-8 (each
// such byte reads as the code point of its value), over strings long enough
// to cross the engine's internal chunks.
#include <gtest/gtest.h>
#include <jansson.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <utf8proc.h>

#include "atlas/runtime/chat/chat_template.h"

namespace {

// Renders src with the string s as the variable `s`.
std::string Render(const std::string &src, const std::string &s) {
  atlas_chat_template *t = nullptr;
  atlas_status st =
      atlas_chat_template_parse(src.data(), src.size(), nullptr, nullptr, &t);
  std::string out;
  if (st == ATLAS_OK) {
    json_t *messages = json_array();
    json_t *extra = json_object();
    json_object_set_new(extra, "s", json_stringn_nocheck(s.data(), s.size()));
    atlas_chat_render_options o = {};
    o.messages = messages;
    o.extra = extra;
    char *text = nullptr;
    size_t len = 0;
    st = atlas_chat_template_render(t, &o, &text, &len);
    if (st == ATLAS_OK) out.assign(text, len);
    free(text);
    json_decref(extra);
    json_decref(messages);
  }
  atlas_chat_template_free(t);
  if (st != ATLAS_OK) out = std::string("error: ") + atlas_status_message(st);
  atlas_status_free(st);
  return out;
}

std::string Repr(const std::string &s) { return Render("{{ (s,) }}", s); }

// Python's repr of each code point, as runs read from python_repr_ranges.txt
// (written by gen_printable.py with python3): its general category and the
// form repr gives it.
struct PyRun {
  uint32_t first, last;
  std::string category, form;
};

struct PyTable {
  std::string header;  // the Python and unicodedata versions
  std::vector<PyRun> runs;
};

const PyTable &Python() {
  static const PyTable table = [] {
    PyTable t;
    const char *path = "tests/chat/python_repr_ranges.txt";
    FILE *f = fopen(path, "r");
    EXPECT_NE(f, nullptr) << path << " is missing from the test's runfiles";
    if (f == nullptr) return t;
    char line[256];
    uint32_t next = 0;
    while (fgets(line, sizeof line, f) != nullptr) {
      if (line[0] == '#') {
        if (t.header.empty())
          t.header.assign(line + 2, strcspn(line + 2, "\n"));
        continue;
      }
      unsigned first = 0, last = 0;
      char cat[8], form[8];
      if (sscanf(line, "%x %x %7s %7s", &first, &last, cat, form) != 4 ||
          first != next || last < first) {
        ADD_FAILURE() << path << ": bad run at U+" << std::hex << next << ": "
                      << line;
        break;
      }
      t.runs.push_back({first, last, cat, form});
      next = last + 1;
    }
    fclose(f);
    EXPECT_EQ(next, 0x110000u) << path << " does not cover U+0000..U+10FFFF";
    return t;
  }();
  return table;
}

const PyRun *PythonRun(uint32_t cp) {
  const auto &runs = Python().runs;
  auto it =
      std::upper_bound(runs.begin(), runs.end(), cp,
                       [](uint32_t c, const PyRun &r) { return c < r.first; });
  if (it == runs.begin()) return nullptr;
  --it;
  return cp <= it->last ? &*it : nullptr;
}

// Python's rule (Py_UNICODE_ISPRINTABLE) for a code point of category c.
bool RuleUnprintable(const std::string &c, uint32_t cp) {
  return c == "Cc" || c == "Cf" || c == "Cs" || c == "Co" || c == "Cn" ||
         c == "Zl" || c == "Zp" || (c == "Zs" && cp != 0x20);
}

// The escape letter repr gives cp (x, u, U), or 0 when it writes cp as
// itself: Python's own form, except where utf8proc (the engine's Unicode
// version) gives cp another category, where it is Python's rule with
// utf8proc's category. Past U+10FFFF there is no character; the engine
// escapes it.
char ReferenceEscape(uint32_t cp) {
  const PyRun *r = PythonRun(cp);
  if (r == nullptr) return 'U';
  const char *ours = utf8proc_category_string(static_cast<int32_t>(cp));
  if (r->category != ours) {
    return !RuleUnprintable(ours, cp) ? 0 : cp < 0x10000 ? 'u' : 'U';
  }
  if (r->form == "x" || r->form == "u" || r->form == "U") return r->form[0];
  return 0;
}

void PutUtf8(uint32_t cp, std::string *out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xc0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xe0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    *out += static_cast<char>(0xf0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

// The rule, a code point at a time: a lead byte and its continuation bytes
// decode (overlong forms too) when all are there; any other byte is the code
// point of its value. Then Python's repr of each code point.
std::string ReferenceRepr(const std::string &s) {
  const char q =
      s.find('\'') != std::string::npos && s.find('"') == std::string::npos
          ? '"'
          : '\'';
  std::string out(1, q);
  const auto *b = reinterpret_cast<const unsigned char *>(s.data());
  for (size_t i = 0; i < s.size();) {
    const unsigned c = b[i];
    const size_t extra = c >= 0xf8   ? 0
                         : c >= 0xf0 ? 3
                         : c >= 0xe0 ? 2
                         : c >= 0xc0 ? 1
                                     : 0;
    bool whole = extra > 0 && i + extra < s.size();
    uint32_t v = c & (0x3fu >> extra);
    for (size_t k = 1; whole && k <= extra; ++k) {
      whole = (b[i + k] & 0xc0) == 0x80;
      v = (v << 6) | (b[i + k] & 0x3f);
    }
    const uint32_t cp = whole ? v : c;
    i += whole ? 1 + extra : 1;
    char hex[16];
    if (cp == static_cast<unsigned char>(q) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (const char e = ReferenceEscape(cp)) {
      snprintf(hex, sizeof hex,
               e == 'x'   ? "\\x%02x"
               : e == 'u' ? "\\u%04x"
                          : "\\U%08x",
               cp);
      out += hex;
    } else {
      PutUtf8(cp, &out);
    }
  }
  return out + q;
}

TEST(JinjaRepr, TextAsPython) {
  // Python 3's repr((s,)) of each.
  EXPECT_EQ(Repr("it's"), "(\"it's\",)");
  EXPECT_EQ(Repr("say \"hi\""), "('say \"hi\"',)");
  EXPECT_EQ(Repr("both ' and \""), "('both \\' and \"',)");
  EXPECT_EQ(Repr("a\\b\n\r\t"), "('a\\\\b\\n\\r\\t',)");
  EXPECT_EQ(Repr(std::string("\0\x1b\x7f\u0085\u00a0\u00ad\u00a1\u00e9", 13)),
            "('\\x00\\x1b\\x7f\\x85\\xa0\\xad\u00a1\u00e9',)");
  EXPECT_EQ(Repr("\u2713 \u65e5\u672c \U0001F600"),
            "('\u2713 \u65e5\u672c \U0001F600',)");
  EXPECT_EQ(Repr("\u2028\ufeff\U000f0000\u180e"),
            "('\\u2028\\ufeff\\U000f0000\\u180e',)");
  EXPECT_EQ(Repr("x\xed\xa0\x80y"), "('x\\ud800y',)");  // a lone surrogate
  // Format characters, unassigned code points and tags (Cf, Cn).
  EXPECT_EQ(Repr("\u0600\u061c\u06dd\u200b\u200f\u2029\u0378\U000e0020"
                 "\U000e007f\U0010ffff"),
            "('\\u0600\\u061c\\u06dd\\u200b\\u200f\\u2029\\u0378"
            "\\U000e0020\\U000e007f\\U0010ffff',)");
  EXPECT_EQ(Render("{{ [s, 'b'] }}{{ {s: 1} }}", "a"), "['a', 'b']{'a': 1}");
}

TEST(JinjaRepr, BytesThatAreNotUtf8ReadAsTheirCodePoints) {
  EXPECT_EQ(Repr("\x80\xa0\xad\xff"), "('\\x80\\xa0\\xad\u00ff',)");
  EXPECT_EQ(Repr("\xc3"), "('\u00c3',)");           // a lead byte at the end
  EXPECT_EQ(Repr("\xe2\x9c"), "('\u00e2\\x9c',)");  // a cut sequence
  EXPECT_EQ(Repr("\xc1\x81"), "('A',)");            // overlong 'A'
  // Overlong quotes: the one that quotes the string is escaped.
  EXPECT_EQ(Repr("'\xc0\xa7"), "(\"''\",)");
  EXPECT_EQ(Repr("'\xc0\xa2"), "(\"'\\\"\",)");
  // As dict keys too (a key that is not UTF-8 was refused as out of
  // memory).
  EXPECT_EQ(
      Render("{{ {s: [s]} }}", "\xc3("),
      "{" + ReferenceRepr("\xc3(") + ": [" + ReferenceRepr("\xc3(") + "]}");
  // Every byte alone, before ASCII and before another byte.
  for (int c = 0; c < 256; ++c) {
    for (const std::string &s :
         {std::string(1, static_cast<char>(c)),
          std::string(1, static_cast<char>(c)) + "z",
          std::string(1, static_cast<char>(c)) + "\x80",
          std::string(1, static_cast<char>(c)) + "\x80\x80\x80"}) {
      EXPECT_EQ(Repr(s), "(" + ReferenceRepr(s) + ",)") << "byte " << c;
    }
  }
}

TEST(JinjaRepr, LongMixedStringsMatchTheRule) {
  std::vector<std::string> pieces;
  for (int c = 0; c < 256; ++c) pieces.emplace_back(1, static_cast<char>(c));
  for (const char *p : {"\u00e9",
                        "\u2713",
                        "\U0001F600",
                        "\u65e5\u672c",
                        "\xc0\x80",
                        "\xc1\x81",
                        "\xc0\xa7",
                        "\xe0\x82\xa9",
                        "\xed\xa0\x80",
                        "\xf4\x90\x80\x80",
                        "\xf7\xbf\xbf\xbf",
                        "\xf0\x8f\xbf\xbf",
                        "\u00a0",
                        "\u00ad",
                        "\u2028",
                        "\ufeff",
                        "\U000f0000",
                        "abc def",
                        "\xe2\x82",
                        "\xf0\x9f\x98",
                        "'",
                        "\"",
                        "\\"}) {
    pieces.emplace_back(p);
  }
  std::mt19937 rng(57);
  for (size_t target : {4000u, 4097u, 9000u, 100000u, 1u << 20}) {
    for (int round = 0; round < 3; ++round) {
      std::string s;
      while (s.size() < target) s += pieces[rng() % pieces.size()];
      if (round == 1) s.erase(std::remove(s.begin(), s.end(), '"'), s.end());
      if (round == 2) {  // a long run of bytes that are not UTF-8
        s.clear();
        while (s.size() < target) s += static_cast<char>(0x80 + rng() % 128);
      }
      EXPECT_EQ(Repr(s), "(" + ReferenceRepr(s) + ",)")
          << s.size() << " bytes, round " << round;
    }
  }
}

// Every code point U+0000..U+10FFFF, as UTF-8, against Python's repr of it
// (python_repr_ranges.txt). The engine takes categories from utf8proc, whose
// Unicode version may be newer than that Python's: code points whose general
// category differs between the two are checked against the rule with
// utf8proc's category instead, and counted.
TEST(JinjaRepr, EveryCodePointAsPython) {
  const PyTable &py = Python();
  ASSERT_FALSE(py.runs.empty());
  printf("reference: %s; utf8proc %s, Unicode %s\n", py.header.c_str(),
         utf8proc_version(), utf8proc_unicode_version());
  size_t differ = 0;
  std::string differ_list;
  uint32_t run_first = 0, run_last = 0;
  bool in_run = false;
  auto flush = [&] {
    if (!in_run) return;
    char buf[64];
    snprintf(buf, sizeof buf,
             run_first == run_last ? " U+%04X" : " U+%04X..U+%04X", run_first,
             run_last);
    differ_list += buf;
    in_run = false;
  };
  int failures = 0;
  std::string newer, newer_want;  // the code points checked by utf8proc's rule
  for (uint32_t base = 0; base < 0x110000; base += 0x1000) {
    std::string s;
    for (uint32_t cp = base; cp < base + 0x1000; ++cp) {
      const PyRun *r = PythonRun(cp);
      ASSERT_NE(r, nullptr) << std::hex << cp;
      const char *ours = utf8proc_category_string(static_cast<int32_t>(cp));
      if (r->category == ours) {
        flush();
        PutUtf8(cp, &s);
        continue;
      }
      ++differ;
      if (in_run && run_last + 1 == cp) {
        run_last = cp;
      } else {
        flush();
        run_first = run_last = cp;
        in_run = true;
      }
      std::string one;
      PutUtf8(cp, &one);
      newer += one;
      if (RuleUnprintable(ours, cp)) {
        char hex[16];
        snprintf(hex, sizeof hex, cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp);
        newer_want += hex;
      } else {
        newer_want += one;
      }
    }
    if (Repr(s) == "(" + ReferenceRepr(s) + ",)") continue;
    // Name the code points that differ, a few at most.
    for (uint32_t cp = base; cp < base + 0x1000 && failures < 20; ++cp) {
      std::string one;
      PutUtf8(cp, &one);
      if (s.find(one) == std::string::npos) continue;
      const std::string want = "(" + ReferenceRepr(one) + ",)";
      const std::string got = Repr(one);
      if (got != want) {
        ADD_FAILURE() << "U+" << std::hex << cp << " ("
                      << PythonRun(cp)->category << "): engine " << got
                      << ", Python " << want;
        ++failures;
      }
    }
  }
  flush();
  printf("%zu code points have another category in utf8proc:%s\n", differ,
         differ_list.c_str());
  EXPECT_EQ(Repr(newer), "('" + newer_want + "',)");
  // Equal versions leave nothing to skip; a newer utf8proc assigns a few
  // thousand code points at most (Unicode 15.0 added 4,489).
  if (py.header.find(std::string("unicodedata ") +
                     utf8proc_unicode_version()) != std::string::npos) {
    EXPECT_EQ(differ, 0u) << differ_list;
  } else {
    EXPECT_LT(differ, 20000u) << differ_list;
  }
}

}  // namespace
