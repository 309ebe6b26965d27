// Small helpers for tests: status assertions that print the message.
#ifndef ATLAS_TESTS_RUNTIME_TEST_UTIL_H_
#define ATLAS_TESTS_RUNTIME_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <stdlib.h>

#include <string>

#include "atlas/runtime/base/status.h"

// Takes ownership of the status; returns its message and code.
struct StatusResult {
  atlas_status_code code;
  std::string message;
};

inline StatusResult Take(atlas_status s) {
  StatusResult r{atlas_status_code_of(s), atlas_status_message(s)};
  atlas_status_free(s);
  return r;
}

#define ASSERT_OK(expr)                                \
  do {                                                 \
    StatusResult r_ = Take(expr);                      \
    ASSERT_EQ(r_.code, ATLAS_STATUS_OK) << r_.message; \
  } while (0)

#define EXPECT_OK(expr)                                \
  do {                                                 \
    StatusResult r_ = Take(expr);                      \
    EXPECT_EQ(r_.code, ATLAS_STATUS_OK) << r_.message; \
  } while (0)

#define EXPECT_STATUS(expr, want_code, substring)                           \
  do {                                                                      \
    StatusResult r_ = Take(expr);                                           \
    EXPECT_EQ(r_.code, (want_code)) << r_.message;                          \
    EXPECT_NE(r_.message.find(substring), std::string::npos) << r_.message; \
  } while (0)

// Sets an environment variable for the life of the object (backends read
// their switches once, at creation).
class ScopedEnv {
 public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    const char *old = getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

#endif  // ATLAS_TESTS_RUNTIME_TEST_UTIL_H_
