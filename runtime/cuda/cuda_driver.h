// Our own declarations of the slice of the CUDA driver API that Atlas uses.
//
// The driver is loaded at run time (dlopen of libcuda.so.1), so nothing here
// needs CUDA's headers: every binary builds on a machine without CUDA. The
// values and layouts below are copied from cuda.h (CUDA 13.0) and are part of
// the driver's stable ABI. The table holds the entry points under the
// versioned names the driver exports (cuMemAlloc_v2, ...); see cuda_host.c.
#ifndef ATLAS_RUNTIME_CUDA_CUDA_DRIVER_H_
#define ATLAS_RUNTIME_CUDA_CUDA_DRIVER_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUarray_st *CUarray;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
  CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
  CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906,
};

// CUstreamCaptureStatus
enum {
  CU_STREAM_CAPTURE_STATUS_NONE = 0,
  CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2,
};
typedef int CUstreamCaptureStatus;

// CUstreamCaptureMode
enum {
  CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2,
};
typedef int CUstreamCaptureMode;

enum { CU_STREAM_DEFAULT = 0, CU_STREAM_NON_BLOCKING = 1 };
enum { CU_EVENT_DEFAULT = 0, CU_EVENT_DISABLE_TIMING = 2 };
enum { CU_MEM_ATTACH_GLOBAL = 1 };
enum {
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
};

// cuLaunchKernelEx's configuration, with the one attribute Atlas sets.
enum { CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6 };
typedef struct CUlaunchAttribute {
  int id;
  char pad[4];
  union {
    char pad[64];
    int programmaticStreamSerializationAllowed;
  } value;
} CUlaunchAttribute;
typedef struct CUlaunchConfig {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned int numAttrs;
} CUlaunchConfig;

// CUjit_option
enum {
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};
typedef int CUjit_option;

// CUmemorytype
enum {
  CU_MEMORYTYPE_HOST = 1,
  CU_MEMORYTYPE_DEVICE = 2,
  CU_MEMORYTYPE_ARRAY = 3,
  CU_MEMORYTYPE_UNIFIED = 4,
};
typedef int CUmemorytype;

typedef struct CUDA_MEMCPY2D {
  size_t srcXInBytes;
  size_t srcY;
  CUmemorytype srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  size_t srcPitch;
  size_t dstXInBytes;
  size_t dstY;
  CUmemorytype dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  size_t dstPitch;
  size_t WidthInBytes;
  size_t Height;
} CUDA_MEMCPY2D;

// The entry points, one field per function; X(field, exported symbol, ret
// params). The list drives both the struct and the loader in cuda_host.c.
#define ATLAS_CUDA_DRIVER_ENTRY_POINTS(X)                                      \
  X(cuInit, "cuInit", (unsigned int flags))                                    \
  X(cuDriverGetVersion, "cuDriverGetVersion", (int *version))                  \
  X(cuGetErrorName, "cuGetErrorName", (CUresult error, const char **str))      \
  X(cuGetErrorString, "cuGetErrorString", (CUresult error, const char **str))  \
  X(cuDeviceGet, "cuDeviceGet", (CUdevice * device, int ordinal))              \
  X(cuDeviceGetCount, "cuDeviceGetCount", (int *count))                        \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute",                              \
    (int *value, int attrib, CUdevice dev))                                    \
  X(cuDeviceGetName, "cuDeviceGetName", (char *name, int len, CUdevice dev))   \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", (size_t * bytes, CUdevice dev))   \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain",                      \
    (CUcontext * pctx, CUdevice dev))                                          \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext ctx))                       \
  X(cuCtxGetCurrent, "cuCtxGetCurrent", (CUcontext * pctx))                    \
  X(cuCtxSynchronize, "cuCtxSynchronize", (void))                              \
  X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr * dptr, size_t bytes))           \
  X(cuMemFree, "cuMemFree_v2", (CUdeviceptr dptr))                             \
  X(cuMemAllocManaged, "cuMemAllocManaged",                                    \
    (CUdeviceptr * dptr, size_t bytes, unsigned int flags))                    \
  X(cuMemAllocHost, "cuMemAllocHost_v2", (void **pp, size_t bytes))            \
  X(cuMemFreeHost, "cuMemFreeHost", (void *p))                                 \
  X(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2",                 \
    (CUdeviceptr * pdptr, void *p, unsigned int flags))                        \
  X(cuMemGetInfo, "cuMemGetInfo_v2", (size_t * free_bytes, size_t * total))    \
  X(cuMemcpy, "cuMemcpy", (CUdeviceptr dst, CUdeviceptr src, size_t bytes))    \
  X(cuMemcpyAsync, "cuMemcpyAsync",                                            \
    (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream))         \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2",                                 \
    (CUdeviceptr dst, const void *src, size_t bytes, CUstream stream))         \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2",                                 \
    (void *dst, CUdeviceptr src, size_t bytes, CUstream stream))               \
  X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2",                                 \
    (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream))         \
  X(cuMemcpy2DAsync, "cuMemcpy2DAsync_v2",                                     \
    (const CUDA_MEMCPY2D *copy, CUstream stream))                              \
  X(cuMemsetD8Async, "cuMemsetD8Async",                                        \
    (CUdeviceptr dst, unsigned char value, size_t n, CUstream stream))         \
  X(cuStreamCreate, "cuStreamCreate", (CUstream * stream, unsigned int flags)) \
  X(cuStreamDestroy, "cuStreamDestroy_v2", (CUstream stream))                  \
  X(cuStreamSynchronize, "cuStreamSynchronize", (CUstream stream))             \
  X(cuStreamQuery, "cuStreamQuery", (CUstream stream))                         \
  X(cuStreamWaitEvent, "cuStreamWaitEvent",                                    \
    (CUstream stream, CUevent event, unsigned int flags))                      \
  X(cuEventCreate, "cuEventCreate", (CUevent * event, unsigned int flags))     \
  X(cuEventRecord, "cuEventRecord", (CUevent event, CUstream stream))          \
  X(cuEventSynchronize, "cuEventSynchronize", (CUevent event))                 \
  X(cuEventQuery, "cuEventQuery", (CUevent event))                             \
  X(cuEventDestroy, "cuEventDestroy_v2", (CUevent event))                      \
  X(cuStreamBeginCapture, "cuStreamBeginCapture_v2",                           \
    (CUstream stream, CUstreamCaptureMode mode))                               \
  X(cuStreamEndCapture, "cuStreamEndCapture",                                  \
    (CUstream stream, CUgraph * graph))                                        \
  X(cuStreamIsCapturing, "cuStreamIsCapturing",                                \
    (CUstream stream, CUstreamCaptureStatus * status))                         \
  X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags",                \
    (CUgraphExec * exec, CUgraph graph, unsigned long long flags))             \
  X(cuGraphLaunch, "cuGraphLaunch", (CUgraphExec exec, CUstream stream))       \
  X(cuGraphExecDestroy, "cuGraphExecDestroy", (CUgraphExec exec))              \
  X(cuGraphDestroy, "cuGraphDestroy", (CUgraph graph))                         \
  X(cuModuleLoadDataEx, "cuModuleLoadDataEx",                                  \
    (CUmodule * module, const void *image, unsigned int num_options,           \
     CUjit_option *options, void **option_values))                             \
  X(cuModuleGetFunction, "cuModuleGetFunction",                                \
    (CUfunction * fn, CUmodule module, const char *name))                      \
  X(cuModuleUnload, "cuModuleUnload", (CUmodule module))                       \
  X(cuLaunchKernel, "cuLaunchKernel",                                          \
    (CUfunction f, unsigned int grid_x, unsigned int grid_y,                   \
     unsigned int grid_z, unsigned int block_x, unsigned int block_y,          \
     unsigned int block_z, unsigned int shared_bytes, CUstream stream,         \
     void **params, void **extra))                                             \
  X(cuLaunchKernelEx, "cuLaunchKernelEx",                                      \
    (const CUlaunchConfig *config, CUfunction f, void **params, void **extra))

// X-macro: `params` is a parenthesized parameter list and `field` a declarator
// name; neither can take the extra parentheses bugprone-macro-parentheses asks
// for. NOLINTBEGIN(bugprone-macro-parentheses)
#define ATLAS_CUDA_DRIVER_FIELD_(field, symbol, params) CUresult(*field) params;
// NOLINTEND(bugprone-macro-parentheses)

// The loaded driver: filled once by cuda_host.c, then read-only.
typedef struct atlas_cuda_driver {
  ATLAS_CUDA_DRIVER_ENTRY_POINTS(ATLAS_CUDA_DRIVER_FIELD_)
} atlas_cuda_driver;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_CUDA_CUDA_DRIVER_H_
