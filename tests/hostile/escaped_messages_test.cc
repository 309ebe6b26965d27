// Hostile text in messages (issue 57): every error path that quotes input
// (paths, tokenizer.json contents, template text, log lines) gets ESC, NUL,
// C1 controls, bidirectional overrides, bytes that are not UTF-8 and a 1 MB
// string; what comes back must be plain UTF-8 without control bytes other
// than newlines, and bounded in size.
#include <gtest/gtest.h>
#include <jansson.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "atlas/runtime/base/escape.h"
#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/base/log.h"
#include "atlas/runtime/base/status.h"
#include "atlas/runtime/chat/chat_template.h"
#include "atlas/runtime/text/tokenizer.h"

namespace {

const std::string kEsc = "\x1b[2J\x1b]0;PWNED\x07";
const std::string kNul = std::string("a\0b", 3);
const std::string kBad = "\xff\xfe\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\xe2\x82";
const std::string kC1 =
    "\xc2\x9b"
    "31m";
const std::string kBidi =
    "\xe2\x80\xae"
    "txt.exe";
const std::string kBig(1 << 20, 'A');

std::vector<std::string> Payloads() {
  return {kEsc, kNul, kBad, kC1, kBidi, kBig, kEsc + kBig + kBad};
}

// Why `text` could not go to a terminal or a log as it is ("" if it can).
std::string Unsafe(const std::string &text, size_t max_bytes) {
  if (text.size() > max_bytes) {
    return "is " + std::to_string(text.size()) + " bytes, over " +
           std::to_string(max_bytes);
  }
  const auto *u = reinterpret_cast<const unsigned char *>(text.data());
  for (size_t i = 0; i < text.size();) {
    size_t len = atlas_escape_utf8_length(u + i, text.size() - i);
    if (len == 0) return "has a byte that is not UTF-8 at " + std::to_string(i);
    unsigned c = u[i];
    if (len == 1 && ((c < 0x20 && c != '\n') || c == 0x7f)) {
      return "has control byte " + std::to_string(c) + " at " +
             std::to_string(i);
    }
    if (len == 2 && c == 0xc2 && u[i + 1] < 0xa0) {
      return "has a C1 control at " + std::to_string(i);
    }
    if (len == 3 && c == 0xe2 && u[i + 1] == 0x80 && u[i + 2] >= 0xaa &&
        u[i + 2] <= 0xae) {
      return "has a bidirectional override at " + std::to_string(i);
    }
    i += len;
  }
  return "";
}

// A status message: bounded by the status's own cap (16384 bytes shown,
// escaped at most 4 times over, plus its tail).
constexpr size_t kStatusMax = 4 * 16384 + 48;

// For inputs some of which are valid (a payload that happens to parse).
void ExpectSafeIfFailed(atlas_status s, const std::string &what) {
  if (s == ATLAS_OK) return;
  std::string msg = atlas_status_message(s);
  EXPECT_EQ(Unsafe(msg, kStatusMax), "") << what << ": " << msg.substr(0, 300);
  atlas_status_free(s);
}

void ExpectSafeStatus(atlas_status s, const std::string &what) {
  ASSERT_NE(s, ATLAS_OK) << what << ": expected a failure";
  std::string msg = atlas_status_message(s);
  EXPECT_EQ(Unsafe(msg, kStatusMax), "") << what << ": " << msg.substr(0, 300);
  atlas_status_free(s);
}

std::string Escape(const std::string &s, unsigned flags, size_t shown) {
  std::string buf(ATLAS_ESCAPE_BYTES(shown), '\0');
  atlas_escape(s.data(), s.size(), flags, shown, buf.data(), buf.size());
  return std::string(buf.c_str());
}

TEST(Escape, ControlsAndBadBytesBecomeHexAndUtf8Stays) {
  EXPECT_EQ(Escape("a\x1b[2Jb", 0, 100), "a\\x1b[2Jb");
  EXPECT_EQ(Escape(kNul, 0, 100), "a\\x00b");
  EXPECT_EQ(Escape("caf\xc3\xa9 \xe2\x82\xac", 0, 100),
            "caf\xc3\xa9 \xe2\x82\xac");
  EXPECT_EQ(Escape("\xff", 0, 100), "\\xff");
  EXPECT_EQ(Escape("\xc0\xaf", 0, 100), "\\xc0\\xaf");           // overlong
  EXPECT_EQ(Escape("\xed\xa0\x80", 0, 100), "\\xed\\xa0\\x80");  // surrogate
  EXPECT_EQ(Escape("\xf4\x90\x80\x80", 0, 100),
            "\\xf4\\x90\\x80\\x80");                    // > U+10FFFF
  EXPECT_EQ(Escape("\xe2\x82", 0, 100), "\\xe2\\x82");  // cut short
  EXPECT_EQ(Escape(kC1, 0, 100), "\\xc2\\x9b31m");
  EXPECT_EQ(Escape(kBidi, 0, 100), "\\xe2\\x80\\xaetxt.exe");
  EXPECT_EQ(Escape("a\\b", 0, 100), "a\\b");
  EXPECT_EQ(Escape("a\\b", ATLAS_ESCAPE_BACKSLASH, 100), "a\\x5cb");
  EXPECT_EQ(Escape("a\nb\tc", 0, 100), "a\\x0ab\\x09c");
  EXPECT_EQ(Escape("a\nb\tc", ATLAS_ESCAPE_KEEP_NEWLINE, 100), "a\nb\\x09c");
}

TEST(Escape, LongTextIsCutWithTheCountOfWhatIsLeft) {
  EXPECT_EQ(Escape(kBig, 0, 10), "AAAAAAAAAA...(1048566 more bytes)");
  // Never inside a character: "é" is two bytes and does not fit in 4.
  EXPECT_EQ(Escape("abc\xc3\xa9", 0, 4), "abc...(2 more bytes)");
  // A small buffer cuts earlier, the same way.
  char small[48];
  atlas_escape(kBig.data(), kBig.size(), 0, 1000, small, sizeof(small));
  EXPECT_EQ(std::string(small), "AAAAAAAA...(1048568 more bytes)");
}

TEST(Escape, IsCleanAgreesWithEscape) {
  for (const std::string &p : Payloads()) {
    EXPECT_FALSE(atlas_escape_is_clean(p.data(), p.size(), 0) &&
                 Escape(p, 0, p.size()) != p);
  }
  EXPECT_TRUE(
      atlas_escape_is_clean("caf\xc3\xa9\n", 6, ATLAS_ESCAPE_KEEP_NEWLINE));
  EXPECT_FALSE(atlas_escape_is_clean("caf\xc3\xa9\n", 6, 0));
}

TEST(EscapedMessages, StatusesEscapeWhateverTheirCallersQuoted) {
  for (const std::string &p : Payloads()) {
    ExpectSafeStatus(atlas_status_make(ATLAS_STATUS_NOT_FOUND, "no '%.*s'",
                                       (int)p.size(), p.data()),
                     "make");
    atlas_status s = atlas_status_make(ATLAS_STATUS_IO, "inner");
    ExpectSafeStatus(
        atlas_status_annotate(s, "outer %.*s", (int)p.size(), p.data()),
        "annotate");
  }
  // Newlines between joined failures stay.
  atlas_status j = atlas_status_join(atlas_status_make(ATLAS_STATUS_IO, "a"),
                                     atlas_status_make(ATLAS_STATUS_IO, "b"));
  EXPECT_STREQ(atlas_status_message(j), "a\nb");
  atlas_status_free(j);
  // A 1 MB quote is cut to the status's cap, saying how much was left.
  atlas_status big = atlas_status_make(ATLAS_STATUS_IO, "%s", kBig.c_str());
  std::string msg = atlas_status_message(big);
  EXPECT_LE(msg.size(), 16384u + 48);
  EXPECT_NE(msg.find("more bytes)"), std::string::npos);
  atlas_status_free(big);
}

TEST(EscapedMessages, FilePaths) {
  for (const std::string &p : Payloads()) {
    std::string path = "/nonexistent/" + p;
    int fd = -1;
    atlas_file_identity id;
    ExpectSafeStatus(
        atlas_file_open_regular(path.c_str(), "a test file", &fd, &id), "open");
    atlas_tokenizer *t = nullptr;
    ExpectSafeStatus(atlas_tokenizer_load(path.c_str(), &t), "tokenizer path");
    atlas_chat_template *c = nullptr;
    ExpectSafeStatus(atlas_chat_template_load(path.c_str(), &c),
                     "chat template path");
  }
}

// JSON text for `s` (escapes NUL and the rest as JSON does).
std::string JsonString(const std::string &s) {
  json_t *j = json_stringn(s.data(), s.size());
  if (j == nullptr) {  // not UTF-8: jansson refuses it; keep the rest
    j = json_string("\xe2\x80\xae\x1b[31m");
  }
  char *d = json_dumps(j, JSON_ENCODE_ANY);
  std::string out = d;
  free(d);
  json_decref(j);
  return out;
}

TEST(EscapedMessages, TokenizerJsonContentsAreNeverQuotedRaw) {
  for (const std::string &p : Payloads()) {
    atlas_tokenizer *t = nullptr;
    // Not JSON: the message says where, never what the file says.
    std::string bad = "{\"model\": CANARY" + p;
    atlas_status s =
        atlas_tokenizer_load_from_memory(bad.data(), bad.size(), p.c_str(), &t);
    ASSERT_NE(s, ATLAS_OK);
    EXPECT_EQ(std::string(atlas_status_message(s)).find("CANARY"),
              std::string::npos)
        << atlas_status_message(s);
    ExpectSafeStatus(s, "bad JSON");
    // A merge whose piece is not in the vocabulary.
    std::string merges =
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [" +
        JsonString(p + " a") + "]}}";
    ExpectSafeStatus(atlas_tokenizer_load_from_memory(
                         merges.data(), merges.size(), "t.json", &t),
                     "merges");
    // An unknown model type and pre-tokenizer type.
    std::string type = "{\"model\": {\"type\": " + JsonString(p) + "}}";
    ExpectSafeStatus(atlas_tokenizer_load_from_memory(type.data(), type.size(),
                                                      "t.json", &t),
                     "model type");
    std::string pre =
        "{\"pre_tokenizer\": {\"type\": " + JsonString(p) +
        "}, \"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}";
    ExpectSafeStatus(
        atlas_tokenizer_load_from_memory(pre.data(), pre.size(), "t.json", &t),
        "pre_tokenizer type");
    // A regex that does not compile, quoting the pattern.
    std::string regex =
        "{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": " +
        JsonString("(" + p) +
        "}, \"behavior\": \"Isolated\", \"invert\": false}, \"model\": "
        "{\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}";
    ExpectSafeStatus(atlas_tokenizer_load_from_memory(
                         regex.data(), regex.size(), "t.json", &t),
                     "regex");
  }
}

atlas_status Render(const std::string &source) {
  atlas_chat_template *t = nullptr;
  atlas_status s = atlas_chat_template_parse(source.data(), source.size(),
                                             nullptr, nullptr, &t);
  if (s != ATLAS_OK) return s;
  json_t *messages = json_array();
  atlas_chat_render_options o = {};
  o.messages = messages;
  char *text = nullptr;
  size_t len = 0;
  s = atlas_chat_template_render(t, &o, &text, &len);
  free(text);
  json_decref(messages);
  atlas_chat_template_free(t);
  return s;
}

TEST(EscapedMessages, ChatTemplateTextIsEscaped) {
  for (const std::string &p : Payloads()) {
    std::string lit = JsonString(p);  // a valid Jinja string literal too
    ExpectSafeStatus(Render("{{ raise_exception(" + lit + ") }}"),
                     "raise_exception");
    ExpectSafeStatus(Render("{{ x | " + p + " }}"), "filter name");
    ExpectSafeIfFailed(Render("{{ " + p + " }}"), "expression");
    ExpectSafeStatus(Render("{% " + p + " %}"), "tag");
    ExpectSafeStatus(Render("{{ x." + p + " }}"), "attribute");
    ExpectSafeStatus(Render("{{ 1 is " + p + " }}"), "test name");
    ExpectSafeStatus(Render("{{ undefined_" + p + " + 1 }}"), "undefined");
    ExpectSafeStatus(Render("{{ " + lit + " | round(1, " + lit + ") }}"),
                     "round");
    ExpectSafeStatus(Render("{{ [" + lit + "] | map(" + lit + ") | list }}"),
                     "map");
  }
}

struct Captured {
  std::vector<std::string> lines;
};

void Capture(void *ctx, atlas_log_level, const char *line) {
  static_cast<Captured *>(ctx)->lines.emplace_back(line);
}

TEST(EscapedMessages, LogLines) {
  Captured got;
  atlas_log_sink sink = {};
  sink.fn = Capture;
  sink.ctx = &got;
  sink.min_level = ATLAS_LOG_DEBUG;
  for (const std::string &p : Payloads()) {
    atlas_log(&sink, ATLAS_LOG_WARNING, "request from %.*s", (int)p.size(),
              p.data());
  }
  ASSERT_EQ(got.lines.size(), Payloads().size());
  for (const std::string &line : got.lines) {
    EXPECT_EQ(Unsafe(line, 4u << 20 | 64), "") << line.substr(0, 200);
  }
  EXPECT_EQ(got.lines[0], "request from \\x1b[2J\\x1b]0;PWNED\\x07");
}

}  // namespace
