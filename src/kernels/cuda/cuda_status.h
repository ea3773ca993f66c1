// cudaError_t -> Status, for the host glue only (needs the CUDA runtime headers).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "submoe/core/status.h"

namespace submoe::kernels::cuda::detail {

inline ErrorCode cuda_error_code(cudaError_t err) {
  switch (err) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
      return ErrorCode::kUnsupported;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidConfiguration:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidDevice:
      return ErrorCode::kInvalidArgument;
    default:
      return ErrorCode::kInternal;
  }
}

// OK for cudaSuccess; otherwise "<what>: <cudaErrorName> (<description>)". A
// failed runtime call also leaves its error as the thread's "last error"; it is
// cleared here so that a later launch check does not report it again.
inline Status cuda_status(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::ok();
  (void)cudaGetLastError();
  return Status(cuda_error_code(err),
                std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

}  // namespace submoe::kernels::cuda::detail
