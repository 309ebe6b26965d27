// runtime/base/version.h: the macros, the string and the linked library agree.
#include "atlas/runtime/base/version.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

std::string g_module;  // MODULE.bazel (argv[1])

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

// bzlmod adopters see the module's version: the same as the library's.
TEST(Version, ModuleBazelDeclaresTheSameVersion) {
  std::ifstream in(g_module);
  ASSERT_TRUE(in.good()) << g_module;
  std::stringstream text;
  text << in.rdbuf();
  std::smatch m;
  std::string body = text.str();
  ASSERT_TRUE(std::regex_search(
      body, m, std::regex(R"re(module\([^)]*version\s*=\s*"([^"]+)")re")));
  EXPECT_EQ(m[1].str(), ATLAS_VERSION_STRING);
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc > 1) g_module = argv[1];
  return RUN_ALL_TESTS();
}
