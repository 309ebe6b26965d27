#include "atlas/runtime/status.h"

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
