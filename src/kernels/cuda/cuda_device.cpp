#include "submoe/kernels/cuda/cuda_device.h"

#include <utility>

#if defined(SUBMOE_HAVE_CUDA) && SUBMOE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_status.h"
#define SUBMOE_CUDA_ENABLED 1
#else
#define SUBMOE_CUDA_ENABLED 0
#endif

namespace submoe::kernels::cuda {

namespace {
[[maybe_unused]] Status not_built() {
  return unsupported("this build has no CUDA support (nvcc not found at configure time, or SUBMOE_CUDA=OFF)");
}
}  // namespace

#if SUBMOE_CUDA_ENABLED

using detail::cuda_status;

namespace {
cudaStream_t native(Stream s) { return reinterpret_cast<cudaStream_t>(s); }
}  // namespace

bool cuda_compiled() { return true; }

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

std::string no_device_reason() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no usable CUDA device: ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
  }
  return n == 0 ? "no CUDA device present" : "";
}

Result<DeviceInfo> current_device_info() {
  DeviceInfo info;
  SUBMOE_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&info.device), "cudaGetDevice"));
  cudaDeviceProp prop{};
  SUBMOE_RETURN_IF_ERROR(cuda_status(cudaGetDeviceProperties(&prop, info.device), "cudaGetDeviceProperties"));
  info.name = prop.name;
  info.compute_major = prop.major;
  info.compute_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.global_memory_bytes = prop.totalGlobalMem;
  info.l2_bytes = static_cast<size_t>(prop.l2CacheSize);
  info.smem_per_block_optin = prop.sharedMemPerBlockOptin;
  info.smem_per_sm = prop.sharedMemPerMultiprocessor;
  SUBMOE_RETURN_IF_ERROR(cuda_status(cudaRuntimeGetVersion(&info.runtime_version), "cudaRuntimeGetVersion"));
  SUBMOE_RETURN_IF_ERROR(cuda_status(cudaDriverGetVersion(&info.driver_version), "cudaDriverGetVersion"));
  return info;
}

DeviceBuffer::~DeviceBuffer() { release(); }

void DeviceBuffer::release() {
  if (data_ != nullptr) (void)cudaFree(data_);
  data_ = nullptr;
  bytes_ = 0;
}

Result<DeviceBuffer> DeviceBuffer::allocate(size_t bytes) {
  DeviceBuffer buffer;
  if (bytes == 0) return buffer;
  void* p = nullptr;
  SUBMOE_RETURN_IF_ERROR(cuda_status(cudaMalloc(&p, bytes), "cudaMalloc"));
  buffer.data_ = p;
  buffer.bytes_ = bytes;
  return buffer;
}

Status copy_to_device(void* device_dst, const void* host_src, size_t bytes, Stream stream) {
  if (bytes == 0) return Status::ok();
  if (device_dst == nullptr || host_src == nullptr) return invalid_argument("copy_to_device: null pointer");
  SUBMOE_RETURN_IF_ERROR(cuda_status(
      cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, native(stream)), "cudaMemcpyAsync H2D"));
  return cuda_status(cudaStreamSynchronize(native(stream)), "cudaStreamSynchronize");
}

Status copy_to_host(void* host_dst, const void* device_src, size_t bytes, Stream stream) {
  if (bytes == 0) return Status::ok();
  if (host_dst == nullptr || device_src == nullptr) return invalid_argument("copy_to_host: null pointer");
  SUBMOE_RETURN_IF_ERROR(cuda_status(
      cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, native(stream)), "cudaMemcpyAsync D2H"));
  return cuda_status(cudaStreamSynchronize(native(stream)), "cudaStreamSynchronize");
}

Status copy_device_to_device(void* device_dst, const void* device_src, size_t bytes, Stream stream) {
  if (bytes == 0) return Status::ok();
  if (device_dst == nullptr || device_src == nullptr) return invalid_argument("copy_device_to_device: null pointer");
  SUBMOE_RETURN_IF_ERROR(cuda_status(
      cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, native(stream)), "cudaMemcpyAsync D2D"));
  return cuda_status(cudaStreamSynchronize(native(stream)), "cudaStreamSynchronize");
}

Status fill_zero(void* device_dst, size_t bytes, Stream stream) {
  if (bytes == 0) return Status::ok();
  if (device_dst == nullptr) return invalid_argument("fill_zero: null pointer");
  SUBMOE_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(device_dst, 0, bytes, native(stream)), "cudaMemsetAsync"));
  return cuda_status(cudaStreamSynchronize(native(stream)), "cudaStreamSynchronize");
}

Status synchronize(Stream stream) {
  return cuda_status(cudaStreamSynchronize(native(stream)), "cudaStreamSynchronize");
}

Result<OwnedStream> OwnedStream::create() {
  OwnedStream s;
  cudaStream_t raw = nullptr;
  SUBMOE_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking), "cudaStreamCreate"));
  s.stream_ = reinterpret_cast<Stream>(raw);
  return s;
}

OwnedStream::~OwnedStream() {
  if (stream_ != nullptr) (void)cudaStreamDestroy(native(stream_));
}

Result<EventTimer> EventTimer::create() {
  EventTimer t;
  cudaEvent_t a = nullptr;
  cudaEvent_t b = nullptr;
  SUBMOE_RETURN_IF_ERROR(cuda_status(cudaEventCreate(&a), "cudaEventCreate"));
  t.start_ = a;
  SUBMOE_RETURN_IF_ERROR(cuda_status(cudaEventCreate(&b), "cudaEventCreate"));
  t.stop_ = b;
  return t;
}

EventTimer::~EventTimer() {
  if (start_ != nullptr) (void)cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  if (stop_ != nullptr) (void)cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
}

Status EventTimer::start(Stream stream) {
  if (start_ == nullptr) return invalid_argument("EventTimer used before create()");
  return cuda_status(cudaEventRecord(static_cast<cudaEvent_t>(start_), native(stream)), "cudaEventRecord");
}

Status EventTimer::stop(Stream stream) {
  if (stop_ == nullptr) return invalid_argument("EventTimer used before create()");
  return cuda_status(cudaEventRecord(static_cast<cudaEvent_t>(stop_), native(stream)), "cudaEventRecord");
}

Result<double> EventTimer::elapsed_ms() {
  if (start_ == nullptr || stop_ == nullptr) return invalid_argument("EventTimer used before create()");
  SUBMOE_RETURN_IF_ERROR(cuda_status(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_)), "cudaEventSynchronize"));
  float ms = 0;
  SUBMOE_RETURN_IF_ERROR(cuda_status(
      cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_), static_cast<cudaEvent_t>(stop_)),
      "cudaEventElapsedTime"));
  return static_cast<double>(ms);
}

#else  // !SUBMOE_CUDA_ENABLED

bool cuda_compiled() { return false; }
int device_count() { return 0; }
std::string no_device_reason() { return not_built().message(); }
Result<DeviceInfo> current_device_info() { return not_built(); }
DeviceBuffer::~DeviceBuffer() = default;
void DeviceBuffer::release() {}
Result<DeviceBuffer> DeviceBuffer::allocate(size_t) { return not_built(); }
Status copy_to_device(void*, const void*, size_t, Stream) { return not_built(); }
Status copy_to_host(void*, const void*, size_t, Stream) { return not_built(); }
Status copy_device_to_device(void*, const void*, size_t, Stream) { return not_built(); }
Status fill_zero(void*, size_t, Stream) { return not_built(); }
Status synchronize(Stream) { return not_built(); }
Result<OwnedStream> OwnedStream::create() { return not_built(); }
OwnedStream::~OwnedStream() = default;
Result<EventTimer> EventTimer::create() { return not_built(); }
EventTimer::~EventTimer() = default;
Status EventTimer::start(Stream) { return not_built(); }
Status EventTimer::stop(Stream) { return not_built(); }
Result<double> EventTimer::elapsed_ms() { return not_built(); }

#endif  // SUBMOE_CUDA_ENABLED

// Moves are the same with and without CUDA: they only transfer handles.
DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

OwnedStream::OwnedStream(OwnedStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}

OwnedStream& OwnedStream::operator=(OwnedStream&& other) noexcept {
  if (this != &other) {
    OwnedStream dying(std::move(*this));  // destroys our current stream on scope exit
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

EventTimer::EventTimer(EventTimer&& other) noexcept
    : start_(std::exchange(other.start_, nullptr)), stop_(std::exchange(other.stop_, nullptr)) {}

EventTimer& EventTimer::operator=(EventTimer&& other) noexcept {
  if (this != &other) {
    EventTimer dying(std::move(*this));
    start_ = std::exchange(other.start_, nullptr);
    stop_ = std::exchange(other.stop_, nullptr);
  }
  return *this;
}

std::string describe(const DeviceInfo& info) {
  return info.name + " (sm_" + std::to_string(info.compute_major) + std::to_string(info.compute_minor) + ", " +
         std::to_string(info.sm_count) + " SMs, " + std::to_string(info.global_memory_bytes >> 20) + " MiB, L2 " +
         std::to_string(info.l2_bytes >> 20) + " MiB, smem/block opt-in " +
         std::to_string(info.smem_per_block_optin >> 10) + " KiB, runtime " + std::to_string(info.runtime_version) +
         ", driver " + std::to_string(info.driver_version) + ")";
}

}  // namespace submoe::kernels::cuda
