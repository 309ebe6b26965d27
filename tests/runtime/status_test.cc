#include "atlas/runtime/base/status.h"

#include <gtest/gtest.h>

#include <string>

TEST(Status, OkIsNull) {
  EXPECT_TRUE(atlas_status_is_ok(ATLAS_OK));
  EXPECT_STREQ(atlas_status_message(ATLAS_OK), "");
  EXPECT_EQ(atlas_status_count(ATLAS_OK), 0u);
}

TEST(Status, AnnotateAndJoin) {
  atlas_status a = atlas_status_make(ATLAS_STATUS_NOT_FOUND, "no %s", "file");
  a = atlas_status_annotate(a, "loading %d", 7);
  EXPECT_STREQ(atlas_status_message(a), "loading 7: no file");
  atlas_status b = atlas_status_make(ATLAS_STATUS_INTERNAL, "second");
  atlas_status j = atlas_status_join(a, b);
  EXPECT_EQ(atlas_status_code_of(j), ATLAS_STATUS_NOT_FOUND);
  EXPECT_EQ(atlas_status_count(j), 2u);
  EXPECT_STREQ(atlas_status_message(j), "loading 7: no file\nsecond");
  EXPECT_EQ(atlas_status_consume(j), ATLAS_STATUS_NOT_FOUND);
  EXPECT_EQ(atlas_status_join(ATLAS_OK, ATLAS_OK), ATLAS_OK);
}

TEST(Status, RecordsWhereItWasMadeThroughAnnotateAndJoin) {
  const int line = __LINE__ + 1;
  atlas_status a = atlas_status_make(ATLAS_STATUS_IO, "read failed");
  EXPECT_EQ(atlas_status_line(a), line);
  EXPECT_NE(std::string(atlas_status_file(a)).find("status_test.cc"),
            std::string::npos);
  a = atlas_status_annotate(a, "loading");
  EXPECT_EQ(atlas_status_line(a), line);
  a = atlas_status_join(a, atlas_status_make(ATLAS_STATUS_INTERNAL, "other"));
  EXPECT_EQ(atlas_status_line(a), line);
  atlas_status_free(a);
  EXPECT_STREQ(atlas_status_file(ATLAS_OK), "");
  EXPECT_EQ(atlas_status_line(ATLAS_OK), 0);
}

namespace {
atlas_status Fails() {
  return atlas_status_make(ATLAS_STATUS_NOT_FOUND, "gone");
}
atlas_status Plain() {
  ATLAS_RETURN_IF_ERROR(Fails());
  return ATLAS_OK;
}
atlas_status WithContext(const char *what, int n) {
  ATLAS_RETURN_IF_ERROR(Fails(), "opening %s #%d", what, n);
  return ATLAS_OK;
}
atlas_status PassesThrough() {
  ATLAS_RETURN_IF_ERROR(ATLAS_OK, "never %s", "added");
  return ATLAS_OK;
}
}  // namespace

TEST(Status, ReturnIfErrorAddsContextInOneLine) {
  atlas_status p = Plain();
  EXPECT_STREQ(atlas_status_message(p), "gone");
  atlas_status_free(p);
  atlas_status c = WithContext("config.json", 2);
  EXPECT_EQ(atlas_status_code_of(c), ATLAS_STATUS_NOT_FOUND);
  EXPECT_STREQ(atlas_status_message(c), "opening config.json #2: gone");
  atlas_status_free(c);
  EXPECT_EQ(PassesThrough(), ATLAS_OK);
}
