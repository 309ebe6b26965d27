#include "atlas/runtime/sampling/stop.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Outcome {
  std::string shown;
  atlas_stop_reason reason = ATLAS_STOP_NONE;
  int tokens = 0;
};

// Feeds (id, piece) pairs until a stop; collects what the user would see.
Outcome Feed(atlas_stop *stop,
             const std::vector<std::pair<int32_t, std::string>> &tokens) {
  Outcome r;
  for (const auto &t : tokens) {
    atlas_stop_step step;
    atlas_status st =
        atlas_stop_feed(stop, t.first, t.second.data(), t.second.size(), &step);
    EXPECT_EQ(st, ATLAS_OK) << atlas_status_message(st);
    atlas_status_free(st);
    r.shown.append(step.emit, step.emit_len);
    r.tokens++;
    if (step.reason != ATLAS_STOP_NONE) {
      r.reason = step.reason;
      break;
    }
  }
  return r;
}

struct Stop {
  atlas_stop s;
  Stop(std::vector<int32_t> eos, std::vector<const char *> strs, size_t max) {
    atlas_status st = atlas_stop_init(&s, eos.data(), eos.size(), strs.data(),
                                      strs.size(), max);
    EXPECT_EQ(st, ATLAS_OK) << atlas_status_message(st);
    atlas_status_free(st);
  }
  ~Stop() { atlas_stop_deinit(&s); }
};

TEST(Stop, EosIdsFromAList) {
  Stop s({2, 7}, {}, 0);
  Outcome r = Feed(&s.s, {{5, "Hel"}, {6, "lo"}, {7, "</s>"}, {8, "never"}});
  EXPECT_EQ(r.reason, ATLAS_STOP_EOS);
  EXPECT_EQ(r.shown, "Hello");
  EXPECT_EQ(r.tokens, 3);
}

TEST(Stop, StopStringSplitAcrossTokensIsNotShown) {
  Stop s({}, {"<|end|>"}, 0);
  // "<|" and "end" are held back until "|>" completes the stop string.
  std::vector<std::string> seen;
  atlas_stop_step step;
  for (const char *p : {"Sure", ". <|", "end", "|> tail"}) {
    ASSERT_EQ(atlas_stop_feed(&s.s, 1, p, strlen(p), &step), ATLAS_OK);
    seen.emplace_back(step.emit, step.emit_len);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"Sure", ". ", "", ""}));
  EXPECT_EQ(step.reason, ATLAS_STOP_STRING);
}

TEST(Stop, HeldTextIsReleasedWhenItIsNotAStopString) {
  Stop s({}, {"\n\nUser:"}, 0);
  Outcome r = Feed(
      &s.s,
      {{1, "a\n"}, {1, "\nUs"}, {1, "ually"}, {1, " b\n\nUser:"}, {1, "x"}});
  EXPECT_EQ(r.reason, ATLAS_STOP_STRING);
  EXPECT_EQ(r.shown, "a\n\nUsually b");
}

TEST(Stop, EarliestOfSeveralStopStrings) {
  Stop s({}, {"World", "lo W"}, 0);
  Outcome r = Feed(&s.s, {{1, "Hel"}, {1, "lo Wor"}, {1, "ld"}});
  EXPECT_EQ(r.reason, ATLAS_STOP_STRING);
  EXPECT_EQ(r.shown, "Hel");
}

TEST(Stop, MaxTokensFlushesHeldText) {
  Stop s({}, {"STOP"}, 3);
  Outcome r = Feed(&s.s, {{1, "a"}, {1, "b"}, {1, "ST"}, {1, "OP"}});
  EXPECT_EQ(r.reason, ATLAS_STOP_MAX_TOKENS);
  EXPECT_EQ(r.tokens, 3);
  EXPECT_EQ(r.shown, "abST");
}

TEST(Stop, EosFlushesHeldTextAndFeedingAfterAStopFails) {
  Stop s({0}, {"STOP"}, 0);
  Outcome r = Feed(&s.s, {{1, "x ST"}, {0, "<eos>"}});
  EXPECT_EQ(r.reason, ATLAS_STOP_EOS);
  EXPECT_EQ(r.shown, "x ST");
  atlas_stop_step step;
  atlas_status st = atlas_stop_feed(&s.s, 1, "y", 1, &step);
  EXPECT_EQ(atlas_status_code_of(st), ATLAS_STATUS_FAILED_PRECONDITION);
  atlas_status_free(st);
}

TEST(Stop, EmptyStopStringIsRefused) {
  atlas_stop s;
  const char *strs[] = {"ok", ""};
  atlas_status st = atlas_stop_init(&s, nullptr, 0, strs, 2, 0);
  ASSERT_NE(st, ATLAS_OK);
  EXPECT_NE(std::string(atlas_status_message(st)).find("entry 1 is empty"),
            std::string::npos);
  atlas_status_free(st);
}

TEST(Stop, ManySmallPiecesDoNotLoseText) {
  Stop s({}, {"abcabd"}, 0);
  std::string text = "xxabcabcabdyy";
  std::vector<std::pair<int32_t, std::string>> toks;
  for (char ch : text) toks.push_back({1, std::string(1, ch)});
  Outcome r = Feed(&s.s, toks);
  EXPECT_EQ(r.reason, ATLAS_STOP_STRING);
  EXPECT_EQ(r.shown, "xxabc");
}

// A stop string that is not UTF-8 could match inside a character: refused.
TEST(Stop, StopStringThatIsNotUtf8IsRefused) {
  atlas_stop s;
  const char *strs[] = {"ok", "\xac world"};
  atlas_status st = atlas_stop_init(&s, nullptr, 0, strs, 2, 0);
  ASSERT_NE(st, ATLAS_OK);
  EXPECT_EQ(atlas_status_code_of(st), ATLAS_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(atlas_status_message(st))
                .find("entry 1 is not UTF-8 (at byte 0)"),
            std::string::npos)
      << atlas_status_message(st);
  atlas_status_free(st);
}

// At the end, the held text and the stream's last text go out up to the
// earliest stop string, whatever ended generation (EOS included).
TEST(Stop, FinishReleasesHeldTextUpToAStopString) {
  {
    Stop s({}, {"world"}, 0);
    Outcome o = Feed(&s.s, {{1, "Hello wor"}});
    EXPECT_EQ(o.shown, "Hello ");
    atlas_stop_step step;
    ASSERT_EQ(atlas_stop_finish(&s.s, "ld!", 3, &step), ATLAS_OK);
    EXPECT_EQ(step.reason, ATLAS_STOP_STRING);
    EXPECT_EQ(std::string(step.emit, step.emit_len), "");
  }
  {
    Stop s({}, {"world"}, 0);
    Outcome o = Feed(&s.s, {{1, "Hello wor"}});
    atlas_stop_step step;
    ASSERT_EQ(atlas_stop_finish(&s.s, " ", 1, &step), ATLAS_OK);
    EXPECT_EQ(step.reason, ATLAS_STOP_NONE);
    EXPECT_EQ(o.shown + std::string(step.emit, step.emit_len), "Hello wor ");
  }
  {
    Stop s({7}, {"x"}, 0);
    Outcome o = Feed(&s.s, {{1, "ab"}, {7, ""}});
    EXPECT_EQ(o.reason, ATLAS_STOP_EOS);
    atlas_stop_step step;
    ASSERT_EQ(atlas_stop_finish(&s.s, "cxd", 3, &step), ATLAS_OK);
    EXPECT_EQ(o.shown + std::string(step.emit, step.emit_len), "abc");
  }
}

}  // namespace
