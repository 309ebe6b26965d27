// Python's repr of a string as templates print it inside a tuple, a list or
// a dict ({{ (s,) }}): against Python's own output for text, and against a
// code point at a time restatement of the rule for bytes that are not UTF-8
// (each such byte reads as the code point of its value), over strings long
// enough to cross the engine's internal chunks.
#include <gtest/gtest.h>
#include <jansson.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

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

// Code points str.isprintable() rejects that the engine tracks (controls,
// separators, format characters, surrogates, private use; not unassigned
// ones), as inclusive ranges.
bool Unprintable(uint32_t cp) {
  static const uint32_t kRanges[][2] = {
      {0x0, 0x1f},      {0x7f, 0xa0},     {0xad, 0xad},     {0x1680, 0x1680},
      {0x180e, 0x180e}, {0x2000, 0x200f}, {0x2028, 0x202f}, {0x205f, 0x206f},
      {0x3000, 0x3000}, {0xd800, 0xf8ff}, {0xfeff, 0xfeff}, {0xfff9, 0xfffb},
      {0xf0000, ~0u}};
  for (const auto &r : kRanges) {
    if (cp >= r[0] && cp <= r[1]) return true;
  }
  return false;
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
    } else if (Unprintable(cp)) {
      snprintf(hex, sizeof hex,
               cp < 0x100     ? "\\x%02x"
               : cp < 0x10000 ? "\\u%04x"
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

}  // namespace
