// The communicators: the in-process one over N host backends (every
// collective against a sum formed here, the same bits on every rank,
// disagreeing ranks, an injected fault on one rank failing every rank), and
// the NCCL one's refusal where its library does not open.
#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "atlas/runtime/base/half.h"
#include "atlas/runtime/device/host_backend.h"
#include "atlas/runtime/parallel/comm_host.h"
#include "atlas/runtime/parallel/comm_nccl.h"
#include "gtest/gtest.h"
#include "tests/runtime/test_util.h"

namespace {

// N host backends and a host communicator over them.
class Ranks {
 public:
  explicit Ranks(int n) : backends_(n, nullptr) {
    for (int r = 0; r < n; ++r) {
      EXPECT_OK(atlas_host_backend_create(nullptr, &backends_[r]));
    }
    EXPECT_OK(atlas_comm_host_create(n, backends_.data(), &comm_));
  }
  ~Ranks() {
    EXPECT_OK(atlas_comm_destroy(comm_));
    for (atlas_backend *b : backends_) {
      EXPECT_EQ(atlas_backend_live_alloc_count(b), 0u);
      EXPECT_OK(atlas_backend_destroy(b));
    }
  }
  int size() const { return (int)backends_.size(); }
  atlas_backend *backend(int r) { return backends_[r]; }
  atlas_comm *comm() { return comm_; }
  // body(rank) on a thread per rank; the statuses, by rank.
  std::vector<StatusResult> Run(const std::function<atlas_status(int)> &body) {
    std::vector<StatusResult> out(backends_.size());
    std::vector<std::thread> threads;
    for (int r = 0; r < size(); ++r) {
      threads.emplace_back([&, r] { out[r] = Take(body(r)); });
    }
    for (std::thread &t : threads) t.join();
    return out;
  }

 private:
  std::vector<atlas_backend *> backends_;
  atlas_comm *comm_ = nullptr;
};

// A buffer of `bytes` on a backend, freed at scope exit.
struct DeviceBuffer {
  DeviceBuffer(atlas_backend *b, size_t bytes) : b_(b) {
    EXPECT_OK(atlas_backend_alloc(b, bytes, &p));
  }
  ~DeviceBuffer() { EXPECT_OK(atlas_backend_free(b_, p)); }
  atlas_backend *b_;
  void *p = nullptr;
};

float Value(int rank, size_t i) {
  return (float)(rank + 1) * 0.37f + (float)i * 1.0e-3f - 0.11f * (float)i;
}

class CommSizes : public ::testing::TestWithParam<int> {};

TEST_P(CommSizes, AllReduceF32IsTheRankOrderSumOnEveryRank) {
  Ranks ranks(GetParam());
  const size_t n = 1000;
  std::vector<std::vector<float>> got(ranks.size(), std::vector<float>(n));
  auto results = ranks.Run([&](int r) -> atlas_status {
    DeviceBuffer buf(ranks.backend(r), n * sizeof(float));
    std::vector<float> mine(n);
    for (size_t i = 0; i < n; ++i) mine[i] = Value(r, i);
    ATLAS_RETURN_IF_ERROR(
        atlas_backend_h2d(ranks.backend(r), buf.p, mine.data(), n * 4));
    // Twice: the second collective reuses the first's staging.
    for (int round = 0; round < 2; ++round) {
      if (round == 1) {
        ATLAS_RETURN_IF_ERROR(
            atlas_backend_h2d(ranks.backend(r), buf.p, mine.data(), n * 4));
      }
      ATLAS_RETURN_IF_ERROR(atlas_comm_all_reduce_sum(
          ranks.comm(), r, nullptr, buf.p, n, ATLAS_COMM_F32));
    }
    return atlas_backend_d2h(ranks.backend(r), got[r].data(), buf.p, n * 4);
  });
  for (int r = 0; r < ranks.size(); ++r) {
    ASSERT_EQ(results[r].code, ATLAS_STATUS_OK) << results[r].message;
  }
  for (size_t i = 0; i < n; ++i) {
    float want = Value(0, i);
    for (int r = 1; r < ranks.size(); ++r) want += Value(r, i);
    for (int r = 0; r < ranks.size(); ++r) {
      ASSERT_EQ(std::memcmp(&got[r][i], &want, 4), 0)
          << "rank " << r << " element " << i << ": " << got[r][i] << " vs "
          << want;
    }
  }
}

TEST_P(CommSizes, AllReduce16BitSumsInF32AndRoundsOnce) {
  for (atlas_comm_type type : {ATLAS_COMM_F16, ATLAS_COMM_BF16}) {
    Ranks ranks(GetParam());
    const size_t n = 64;
    std::vector<std::vector<uint16_t>> got(ranks.size(),
                                           std::vector<uint16_t>(n));
    auto to16 = [&](float v) {
      return type == ATLAS_COMM_F16 ? atlas_f32_to_f16(v)
                                    : atlas_f32_to_bf16(v);
    };
    auto to32 = [&](uint16_t b) {
      return type == ATLAS_COMM_F16 ? atlas_f16_to_f32(b)
                                    : atlas_bf16_to_f32(b);
    };
    auto results = ranks.Run([&](int r) -> atlas_status {
      DeviceBuffer buf(ranks.backend(r), n * 2);
      std::vector<uint16_t> mine(n);
      for (size_t i = 0; i < n; ++i) mine[i] = to16(Value(r, i));
      ATLAS_RETURN_IF_ERROR(
          atlas_backend_h2d(ranks.backend(r), buf.p, mine.data(), n * 2));
      ATLAS_RETURN_IF_ERROR(
          atlas_comm_all_reduce_sum(ranks.comm(), r, nullptr, buf.p, n, type));
      return atlas_backend_d2h(ranks.backend(r), got[r].data(), buf.p, n * 2);
    });
    for (int r = 0; r < ranks.size(); ++r) {
      ASSERT_EQ(results[r].code, ATLAS_STATUS_OK) << results[r].message;
    }
    for (size_t i = 0; i < n; ++i) {
      float sum = 0;
      for (int r = 0; r < ranks.size(); ++r) sum += to32(to16(Value(r, i)));
      for (int r = 0; r < ranks.size(); ++r) {
        ASSERT_EQ(got[r][i], to16(sum))
            << atlas_comm_type_name(type) << " rank " << r << " element " << i;
      }
    }
  }
}

TEST_P(CommSizes, AllGatherBroadcastAndArgmax) {
  Ranks ranks(GetParam());
  const int n = ranks.size();
  const size_t count = 5;
  std::vector<std::vector<float>> gathered(n, std::vector<float>(count * n));
  std::vector<std::vector<float>> cast(n, std::vector<float>(count));
  std::vector<float> best(n);
  std::vector<uint32_t> best_id(n);
  int root = n - 1;
  auto results = ranks.Run([&](int r) -> atlas_status {
    DeviceBuffer send(ranks.backend(r), count * 4);
    DeviceBuffer recv(ranks.backend(r), count * 4 * n);
    std::vector<float> mine(count);
    for (size_t i = 0; i < count; ++i) mine[i] = Value(r, i);
    ATLAS_RETURN_IF_ERROR(
        atlas_backend_h2d(ranks.backend(r), send.p, mine.data(), count * 4));
    ATLAS_RETURN_IF_ERROR(atlas_comm_all_gather(
        ranks.comm(), r, nullptr, send.p, recv.p, count, ATLAS_COMM_F32));
    ATLAS_RETURN_IF_ERROR(atlas_backend_d2h(
        ranks.backend(r), gathered[r].data(), recv.p, count * 4 * n));
    ATLAS_RETURN_IF_ERROR(atlas_comm_broadcast(ranks.comm(), r, nullptr, send.p,
                                               count, ATLAS_COMM_F32, root));
    ATLAS_RETURN_IF_ERROR(
        atlas_backend_d2h(ranks.backend(r), cast[r].data(), send.p, count * 4));
    // Every rank but the last ties at 2.0: the lowest index wins.
    float v = r == n - 1 && n > 1 ? 1.0f : 2.0f;
    return atlas_comm_argmax(ranks.comm(), r, nullptr, v,
                             (uint32_t)(100 - 10 * r), &best[r], &best_id[r]);
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(results[r].code, ATLAS_STATUS_OK) << results[r].message;
    for (int q = 0; q < n; ++q) {
      for (size_t i = 0; i < count; ++i) {
        EXPECT_EQ(gathered[r][q * count + i], Value(q, i));
      }
    }
    for (size_t i = 0; i < count; ++i) EXPECT_EQ(cast[r][i], Value(root, i));
    EXPECT_EQ(best[r], 2.0f);
    uint32_t want = n == 1 ? 100u : (uint32_t)(100 - 10 * (n - 2));
    EXPECT_EQ(best_id[r], want);
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, CommSizes, ::testing::Values(1, 2, 4));

TEST(HostComm, RanksThatDisagreeFailEveryRankAndAbortIt) {
  Ranks ranks(2);
  auto results = ranks.Run([&](int r) -> atlas_status {
    DeviceBuffer buf(ranks.backend(r), 64);
    ATLAS_RETURN_IF_ERROR(atlas_backend_memset(ranks.backend(r), buf.p, 0, 64));
    return atlas_comm_all_reduce_sum(ranks.comm(), r, nullptr, buf.p,
                                     r == 0 ? 4 : 8, ATLAS_COMM_F32);
  });
  int disagree = 0;
  for (const StatusResult &s : results) {
    EXPECT_NE(s.code, ATLAS_STATUS_OK);
    if (s.message.find("ranks disagree: rank 0 called all_reduce of 4 f32") !=
        std::string::npos) {
      ++disagree;
    }
  }
  EXPECT_EQ(disagree, 2) << results[0].message << " | " << results[1].message;
  EXPECT_TRUE(atlas_comm_aborted(ranks.comm()));
}

TEST(HostComm, AnInjectedFaultOnOneRankFailsEveryRankAndLeaksNothing) {
  Ranks ranks(4);
  // Rank 2's second collective fails.
  atlas_backend_inject_fault(ranks.backend(2), ATLAS_FAULT_COLLECTIVE, 2);
  auto results = ranks.Run([&](int r) -> atlas_status {
    DeviceBuffer buf(ranks.backend(r), 16 * 4);
    ATLAS_RETURN_IF_ERROR(
        atlas_backend_memset(ranks.backend(r), buf.p, 0, 16 * 4));
    for (int i = 0; i < 3; ++i) {
      ATLAS_RETURN_IF_ERROR(atlas_comm_all_reduce_sum(
          ranks.comm(), r, nullptr, buf.p, 16, ATLAS_COMM_F32));
    }
    return ATLAS_OK;
  });
  EXPECT_EQ(results[2].code, ATLAS_STATUS_ABORTED);
  EXPECT_NE(results[2].message.find("injected fault: all_reduce #2"),
            std::string::npos)
      << results[2].message;
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(results[r].code, ATLAS_STATUS_ABORTED) << results[r].message;
    EXPECT_NE(results[r].message.find("was aborted (rank 2: injected fault"),
              std::string::npos)
        << results[r].message;
  }
  EXPECT_EQ(atlas_backend_op_count(ranks.backend(2), ATLAS_FAULT_COLLECTIVE),
            2u);
  // Later collectives fail at once.
  float x = 0;
  uint32_t id = 0;
  EXPECT_STATUS(atlas_comm_argmax(ranks.comm(), 0, nullptr, 1.0f, 0, &x, &id),
                ATLAS_STATUS_ABORTED, "argmax on rank 0 of 4");
}

TEST(HostComm, RefusesBadArguments) {
  Ranks ranks(2);
  float v = 0;
  uint32_t id = 0;
  EXPECT_STATUS(atlas_comm_argmax(ranks.comm(), 2, nullptr, 1.0f, 0, &v, &id),
                ATLAS_STATUS_INVALID_ARGUMENT, "rank 2 of a communicator of 2");
  EXPECT_STATUS(atlas_comm_argmax(ranks.comm(), 0, nullptr, NAN, 0, &v, &id),
                ATLAS_STATUS_INVALID_ARGUMENT, "its value is NaN");
  atlas_comm *none = nullptr;
  atlas_backend *missing[2] = {ranks.backend(0), nullptr};
  EXPECT_STATUS(atlas_comm_host_create(2, missing, &none),
                ATLAS_STATUS_INVALID_ARGUMENT, "rank 1 has no backend");
  EXPECT_EQ(none, nullptr);
}

TEST(HostComm, AtlasFaultNamesTheCollectiveKind) {
  ScopedEnv env("ATLAS_FAULT", "collective:1");
  atlas_fault_state faults;
  ASSERT_OK(atlas_fault_read_env(&faults));
  EXPECT_STATUS(
      atlas_fault_check(&faults, ATLAS_FAULT_COLLECTIVE, "all_reduce", "host"),
      ATLAS_STATUS_ABORTED, "injected fault: all_reduce #1");
  EXPECT_STREQ(atlas_fault_kind_name(ATLAS_FAULT_COLLECTIVE), "collective");
}

TEST(NcclComm, RefusedNamingTheLibraryWhereItDoesNotOpen) {
  Ranks ranks(2);
  int devices[2] = {0, 1};
  atlas_backend *b[2] = {ranks.backend(0), ranks.backend(1)};
  atlas_comm *comm = nullptr;
  EXPECT_STATUS(
      atlas_comm_nccl_create(2, b, devices, "libnccl-absent.so.2", &comm),
      ATLAS_STATUS_UNAVAILABLE,
      "tensor parallel 2 on CUDA needs NCCL, and "
      "libnccl-absent.so.2 does not open");
  EXPECT_EQ(comm, nullptr);
  // The default library: absent here, the same refusal; present, the host
  // backends are refused by rank.
  void *lib = dlopen(ATLAS_NCCL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  StatusResult s = Take(atlas_comm_nccl_create(2, b, devices, nullptr, &comm));
  EXPECT_EQ(comm, nullptr);
  if (lib == nullptr) {
    EXPECT_EQ(s.code, ATLAS_STATUS_UNAVAILABLE) << s.message;
    EXPECT_NE(s.message.find("libnccl.so.2 does not open"), std::string::npos)
        << s.message;
  } else {
    dlclose(lib);
    EXPECT_EQ(s.code, ATLAS_STATUS_INVALID_ARGUMENT) << s.message;
    EXPECT_NE(s.message.find("rank 0's backend host is not a CUDA backend"),
              std::string::npos)
        << s.message;
  }
}

}  // namespace
