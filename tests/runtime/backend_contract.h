// The backend contract suite: written once, run against every backend.
//
// A backend's test file instantiates it with a factory:
//   INSTANTIATE_TEST_SUITE_P(Host, BackendContract,
//                            ::testing::Values(HostFactory()));
// A factory whose create() returns UNAVAILABLE (no driver, no device) makes
// every test skip with that message.
#ifndef ATLAS_TESTS_RUNTIME_BACKEND_CONTRACT_H_
#define ATLAS_TESTS_RUNTIME_BACKEND_CONTRACT_H_

#include <gtest/gtest.h>

#include <string>

#include "atlas/runtime/device/backend.h"

struct BackendFactory {
  std::string name;
  atlas_status (*create)(const atlas_backend_options *options,
                         atlas_backend **out_backend);
  // The contract kernels (tests/runtime/contract_kernels.h) for this backend.
  const atlas_module_def *contract_module;
  // A module whose kernels the contract module lacks (isolation tests).
  const atlas_module_def *other_module;
};

inline std::ostream &operator<<(std::ostream &os, const BackendFactory &f) {
  return os << f.name;
}

class BackendContract : public ::testing::TestWithParam<BackendFactory> {};

#endif  // ATLAS_TESTS_RUNTIME_BACKEND_CONTRACT_H_
