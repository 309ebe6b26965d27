// runtime/text/unicode.h against facts of the Unicode Character Database
// (the code charts of 9.0, 14.0, 16.0 and 17.0), independent of the tables'
// generator. The tokenizer-level evidence is reference_test's corpus rows.
#include "atlas/runtime/text/unicode.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace {

TEST(Unicode, CategoriesFollowTheVersionAsked) {
  // Egyptian Hieroglyphs Extended-A (16.0): letters; PCRE2 10.42 and
  // utf8proc 2.8 call them unassigned.
  EXPECT_EQ(atlas_unicode_category(0x13460, ATLAS_UNICODE_16),
            UTF8PROC_CATEGORY_LO);
  EXPECT_EQ(atlas_unicode_category(0x143FA, ATLAS_UNICODE_16),
            UTF8PROC_CATEGORY_LO);
  EXPECT_EQ(atlas_unicode_category(0x143FB, ATLAS_UNICODE_16),
            UTF8PROC_CATEGORY_CN);
  // CJK Extension I (15.1), Garay digits (16.0).
  EXPECT_EQ(atlas_unicode_category(0x2EBF0, ATLAS_UNICODE_16),
            UTF8PROC_CATEGORY_LO);
  EXPECT_EQ(atlas_unicode_category(0x10D40, ATLAS_UNICODE_16),
            UTF8PROC_CATEGORY_ND);
  // Tolong Siki digit one (17.0): unassigned in 16.0.
  EXPECT_EQ(atlas_unicode_category(0x11DE1, ATLAS_UNICODE_16),
            UTF8PROC_CATEGORY_CN);
  EXPECT_EQ(atlas_unicode_category(0x11DE1, ATLAS_UNICODE_17),
            UTF8PROC_CATEGORY_ND);
  // LATIN LETTER PHARYNGEAL VOICED FRICATIVE: Ll until 16.0, Lo in 17.0.
  EXPECT_EQ(atlas_unicode_category(0x0295, ATLAS_UNICODE_16),
            UTF8PROC_CATEGORY_LL);
  EXPECT_EQ(atlas_unicode_category(0x0295, ATLAS_UNICODE_17),
            UTF8PROC_CATEGORY_LO);
  // Unchanged code points come from utf8proc.
  EXPECT_EQ(atlas_unicode_category('A', ATLAS_UNICODE_16),
            UTF8PROC_CATEGORY_LU);
  EXPECT_EQ(atlas_unicode_category(0x4E00, ATLAS_UNICODE_17),
            UTF8PROC_CATEGORY_LO);
  EXPECT_EQ(atlas_unicode_category(0x10FFFF, ATLAS_UNICODE_17),
            UTF8PROC_CATEGORY_CN);
}

TEST(Unicode, AfterNineIsWhatUnicode9DidNotAssign) {
  EXPECT_FALSE(atlas_unicode_after_9('a'));
  EXPECT_FALSE(atlas_unicode_after_9(0x00E9));
  EXPECT_FALSE(atlas_unicode_after_9(0x1F16B));   // 6.1
  EXPECT_FALSE(atlas_unicode_after_9(0x1E944));   // Adlam, 9.0
  EXPECT_TRUE(atlas_unicode_after_9(0x0560));     // 11.0
  EXPECT_TRUE(atlas_unicode_after_9(0x1DF6));     // 10.0
  EXPECT_TRUE(atlas_unicode_after_9(0x32FF));     // 12.1
  EXPECT_TRUE(atlas_unicode_after_9(0x1E05D));    // 15.0
  EXPECT_TRUE(atlas_unicode_after_9(0x11DE1));    // 17.0
  EXPECT_FALSE(atlas_unicode_after_9(0x10FFFF));  // never assigned
}

std::string Added(const char *name, bool *known) {
  atlas_text_buf b = {};
  atlas_status st = atlas_unicode_append_added(name, strlen(name), &b, known);
  EXPECT_TRUE(atlas_status_is_ok(st)) << atlas_status_message(st);
  atlas_status_free(st);
  std::string s(b.data ? b.data : "", b.len);
  atlas_text_buf_free(&b);
  return s;
}

TEST(Unicode, ClassesGainWhatTheCategoryGained) {
  bool known = false;
  std::string l = Added("L", &known);
  EXPECT_TRUE(known);
  EXPECT_NE(l.find("\\x{13460}-\\x{143fa}"), std::string::npos) << l;
  EXPECT_NE(l.find("\\x{2ebf0}-"), std::string::npos) << l;
  EXPECT_EQ(l.find("\\x{10d40}"), std::string::npos)
      << "a digit is not a letter";
  std::string nd = Added("Nd", &known);
  EXPECT_TRUE(known);
  EXPECT_NE(nd.find("\\x{10d40}-\\x{10d49}"), std::string::npos) << nd;
  EXPECT_EQ(nd.find("\\x{11de"), std::string::npos)
      << "17.0 digits are not in 16.0";
  // Names match loosely, as in PCRE2 and Oniguruma.
  EXPECT_EQ(Added("l", &known), l);
  EXPECT_TRUE(known);
  EXPECT_EQ(Added("nD", &known), nd);
  EXPECT_EQ(Added("Cn", &known), "");
  EXPECT_TRUE(known);
  EXPECT_EQ(Added("Latin", &known), "");
  EXPECT_FALSE(known);
  EXPECT_EQ(Added("Lx", &known), "");
  EXPECT_FALSE(known);
}

}  // namespace
