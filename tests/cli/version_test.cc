// runtime/version.h: the macros, the string and the linked library agree.
#include "atlas/runtime/version.h"

#include <gtest/gtest.h>

#include <string>

namespace {

TEST(Version, StringIsMajorDotMinorDotPatch) {
  std::string want = std::to_string(ATLAS_VERSION_MAJOR) + "." +
                     std::to_string(ATLAS_VERSION_MINOR) + "." +
                     std::to_string(ATLAS_VERSION_PATCH);
  EXPECT_EQ(want, ATLAS_VERSION_STRING);
}

TEST(Version, LinkedLibraryMatchesTheHeader) {
  EXPECT_STREQ(atlas_version(), ATLAS_VERSION_STRING);
}

TEST(Version, NumberOrdersVersions) {
  EXPECT_EQ(ATLAS_VERSION_NUMBER, ATLAS_VERSION_MAJOR * 10000 +
                                      ATLAS_VERSION_MINOR * 100 +
                                      ATLAS_VERSION_PATCH);
  // 0.2.0 is where the version starts; it only grows.
  EXPECT_GE(ATLAS_VERSION_NUMBER, 200);
  EXPECT_LT(ATLAS_VERSION_MINOR, 100);
  EXPECT_LT(ATLAS_VERSION_PATCH, 100);
}

}  // namespace
