// The backend contract suite on the CUDA backend. Without a driver or a GPU
// every test skips with the reason ("CUDA driver not found: ...").
#include "atlas/kernels/contract_cuda_module.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "tests/runtime/backend_contract.h"

namespace {

BackendFactory CudaFactory() {
  return {"cuda", atlas_cuda_backend_create, &atlas_contract_cuda_module,
          &atlas_contract_other_cuda_module};
}

INSTANTIATE_TEST_SUITE_P(Cuda, BackendContract,
                         ::testing::Values(CudaFactory()));

}  // namespace
