// GPU side of the roofline through the CUDA host API (kernels/cuda/cuda_device.h):
// pageable host-to-device and device-to-host copies and a device-to-device copy
// timed with CUDA events. Without a build with CUDA, a driver or a device it
// reports why instead.
#include <algorithm>
#include <chrono>
#include <vector>

#include "submoe/eval/roofline.h"
#include "submoe/kernels/cuda/cuda_device.h"

namespace submoe::eval {
namespace {

using Clock = std::chrono::steady_clock;
namespace cuda = kernels::cuda;

Status measure(GpuRoofline* g, uint64_t bytes, int reps) {
  SUBMOE_ASSIGN_OR_RETURN(cuda::DeviceInfo info, cuda::current_device_info());
  g->device = cuda::describe(info);
  g->bytes = bytes;
  std::vector<uint8_t> host(bytes, 1);
  SUBMOE_ASSIGN_OR_RETURN(cuda::DeviceBuffer a, cuda::DeviceBuffer::allocate(bytes));
  SUBMOE_ASSIGN_OR_RETURN(cuda::DeviceBuffer b, cuda::DeviceBuffer::allocate(bytes));
  SUBMOE_RETURN_IF_ERROR(cuda::copy_to_device(a.data(), host.data(), bytes));  // warm-up
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    SUBMOE_RETURN_IF_ERROR(cuda::copy_to_device(a.data(), host.data(), bytes));
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    g->h2d_gbps = std::max(g->h2d_gbps, static_cast<double>(bytes) / s / 1e9);
    t0 = Clock::now();
    SUBMOE_RETURN_IF_ERROR(cuda::copy_to_host(host.data(), a.data(), bytes));
    s = std::chrono::duration<double>(Clock::now() - t0).count();
    g->d2h_gbps = std::max(g->d2h_gbps, static_cast<double>(bytes) / s / 1e9);
  }
  SUBMOE_ASSIGN_OR_RETURN(cuda::EventTimer timer, cuda::EventTimer::create());
  SUBMOE_RETURN_IF_ERROR(cuda::copy_device_to_device(b.data(), a.data(), bytes));
  for (int r = 0; r < reps; ++r) {
    SUBMOE_RETURN_IF_ERROR(timer.start());
    SUBMOE_RETURN_IF_ERROR(cuda::copy_device_to_device(b.data(), a.data(), bytes));
    SUBMOE_RETURN_IF_ERROR(timer.stop());
    SUBMOE_ASSIGN_OR_RETURN(double ms, timer.elapsed_ms());
    if (ms > 0) g->device_copy_gbps = std::max(g->device_copy_gbps, 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
  }
  return Status::ok();
}

}  // namespace

GpuRoofline measure_gpu(const RooflineOptions& o) {
  GpuRoofline g;
  if (cuda::device_count() <= 0) {
    g.note = "no GPU: " + cuda::no_device_reason();
    return g;
  }
  const Status s = measure(&g, o.quick ? (32u << 20) : (256u << 20), o.quick ? 2 : 5);
  if (!s.is_ok()) {
    g.note = "GPU present but the measurement failed: " + s.to_string();
    return g;
  }
  g.present = true;
  return g;
}

}  // namespace submoe::eval
