// The CUDA runtime as submoe sees it: device discovery, owned device memory,
// copies and streams, every failure returned as a Status. Compiled with and
// without CUDA; without it (or without a driver or a GPU) device_count() is 0
// and everything else returns an "unsupported" Status, so callers and tests can
// branch on it instead of crashing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "submoe/core/status.h"

// cudaStream_t is `CUstream_st*`; naming the struct keeps CUDA headers out of
// every includer.
struct CUstream_st;

namespace submoe::kernels::cuda {

using Stream = CUstream_st*;  // nullptr: the legacy default stream

// True when this build contains the CUDA kernels (nvcc was found at configure time).
bool cuda_compiled();

// Number of usable GPUs: 0 without CUDA, without a driver or without a device.
int device_count();
// Why device_count() is 0, for skip messages ("" when a device exists).
std::string no_device_reason();

struct DeviceInfo {
  int device = 0;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  int sm_count = 0;
  size_t global_memory_bytes = 0;
  size_t l2_bytes = 0;
  size_t smem_per_block_optin = 0;  // largest dynamic shared memory one block may request
  size_t smem_per_sm = 0;
  int runtime_version = 0;  // e.g. 13000
  int driver_version = 0;
};
// Properties of the current device.
Result<DeviceInfo> current_device_info();
std::string describe(const DeviceInfo& info);  // one line for logs and benchmarks

// Owner of device memory (cudaMalloc / cudaFree). Move-only. A zero-byte buffer
// holds no allocation and a null pointer.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static Result<DeviceBuffer> allocate(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void release();
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Blocking copies (the stream is synchronized before returning).
Status copy_to_device(void* device_dst, const void* host_src, size_t bytes, Stream stream = nullptr);
Status copy_to_host(void* host_dst, const void* device_src, size_t bytes, Stream stream = nullptr);
Status copy_device_to_device(void* device_dst, const void* device_src, size_t bytes, Stream stream = nullptr);
Status fill_zero(void* device_dst, size_t bytes, Stream stream = nullptr);
Status synchronize(Stream stream = nullptr);

// An owned non-blocking stream.
class OwnedStream {
 public:
  OwnedStream() = default;
  static Result<OwnedStream> create();
  ~OwnedStream();
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  OwnedStream(OwnedStream&& other) noexcept;
  OwnedStream& operator=(OwnedStream&& other) noexcept;
  Stream get() const { return stream_; }

 private:
  Stream stream_ = nullptr;
};

// Measures device time between two points of a stream (cudaEvent pairs).
class EventTimer {
 public:
  EventTimer() = default;
  static Result<EventTimer> create();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  EventTimer(EventTimer&& other) noexcept;
  EventTimer& operator=(EventTimer&& other) noexcept;

  Status start(Stream stream = nullptr);
  Status stop(Stream stream = nullptr);
  // Waits for the stop event; milliseconds between start and stop.
  Result<double> elapsed_ms();

 private:
  void* start_ = nullptr;  // cudaEvent_t
  void* stop_ = nullptr;
};

}  // namespace submoe::kernels::cuda
