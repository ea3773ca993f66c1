// Dense LinearOp over bf16 or f32 weights in their stored dtype.
#include <algorithm>
#include <cstring>

#include "dense_matmul.h"
#include "submoe/core/aligned_buffer.h"
#include "submoe/core/huge_page_buffer.h"
#include "submoe/core/page_backing.h"
#include "submoe/core/thread_pool.h"
#include "submoe/model/linear_op.h"

namespace submoe::model {
namespace {

// Below this many multiply-adds a thread hand-off costs more than it saves: a
// parallel_for round trip measured 3-5 us with 2 threads on the shared 2-vCPU
// machine; 128K bf16 weights (256 KB) stream from DRAM in ~18 us at 14 GB/s, so
// splitting them gains ~9 us, while at ~64K weights gain and cost are even.
constexpr size_t kParallelMinMacs = size_t{1} << 17;

// Smaller matrices stay where they are: a copy rounds up to a whole 2 MiB
// page, and a few small matrices cost few TLB misses.
constexpr size_t kHugePageMinBytes = size_t{1} << 20;

class DenseLinearOp final : public LinearOp {
 public:
  // huge_pages: the weights are in 2 MiB pages (the kernel's prefetch follows).
  DenseLinearOp(const void* data, DenseDType dtype, size_t rows, size_t cols, AlignedBuffer<uint8_t> owned,
                kernels::ActivationType activations, bool huge_pages)
      : owned_(std::move(owned)),
        m_{owned_.empty() ? data : owned_.data(), dtype, rows, cols, huge_pages},
        act_(activations) {}
  DenseLinearOp(HugePageBuffer huge, DenseDType dtype, size_t rows, size_t cols, kernels::ActivationType activations)
      : huge_(std::move(huge)), m_{huge_.data(), dtype, rows, cols, /*huge_pages=*/true}, act_(activations) {}

  size_t in_features() const override { return m_.cols; }
  size_t out_features() const override { return m_.rows; }

  void forward(const float* in, size_t n, float* out, ThreadPool* pool) const override {
    // Batches beyond the kernel's limit go in slices; each slice re-reads the
    // rows, which at 64 tokens per read costs little next to the products.
    for (size_t t0 = 0; t0 < n; t0 += kernels::kMaxKernelBatch) {
      const size_t count = std::min<size_t>(kernels::kMaxKernelBatch, n - t0);
      const detail::DenseRowsCall call(m_, in + t0 * m_.cols, count, out + t0 * m_.rows, m_.rows, act_);
      const size_t macs = m_.rows * m_.cols * count;
      if (pool == nullptr || pool->num_threads() == 1 || macs < kParallelMinMacs) {
        call.run(0, m_.rows);
      } else {
        pool->parallel_for(m_.rows, detail::kDenseRowGrain, [&](size_t b, size_t e, int) { call.run(b, e); });
      }
    }
  }

  std::string describe() const override {
    return std::string("dense ") + (m_.dtype == DenseDType::kF32 ? "f32" : "bf16") + " [" +
           std::to_string(m_.rows) + ", " + std::to_string(m_.cols) + "]" +
           (act_ == kernels::ActivationType::kBF16 ? ", bf16 inputs" : "");
  }
  size_t weight_bytes() const override {
    return m_.rows * m_.cols * (m_.dtype == DenseDType::kF32 ? sizeof(float) : sizeof(bf16_t));
  }

 private:
  AlignedBuffer<uint8_t> owned_;
  HugePageBuffer huge_;
  detail::DenseMatrix m_;
  kernels::ActivationType act_;
};

}  // namespace

Result<std::unique_ptr<LinearOp>> make_dense_linear(const io::TensorView& w, DenseStorage storage,
                                                    kernels::ActivationType activations) {
  if (w.shape.size() != 2 || w.shape[0] <= 0 || w.shape[1] <= 0)
    return invalid_argument("tensor '" + w.name + "': a linear weight must be 2-D [out, in], got " +
                            w.shape_string());
  const size_t rows = static_cast<size_t>(w.shape[0]), cols = static_cast<size_t>(w.shape[1]);
  AlignedBuffer<uint8_t> owned;
  DenseDType dtype;
  switch (w.dtype) {
    case io::DType::kF32: dtype = DenseDType::kF32; break;
    case io::DType::kBF16: dtype = DenseDType::kBF16; break;
    case io::DType::kF16:
    case io::DType::kF8E4M3:
    case io::DType::kF8E5M2: {
      // Widened to f32 once (FP8 with its block scales applied).
      owned.reset(rows * cols * sizeof(float), /*zero=*/false);
      SUBMOE_RETURN_IF_ERROR(io::read_as_f32(w, {reinterpret_cast<float*>(owned.data()), rows * cols}));
      return std::unique_ptr<LinearOp>(
          new DenseLinearOp(nullptr, DenseDType::kF32, rows, cols, std::move(owned), activations, false));
    }
    default:
      return invalid_argument("tensor '" + w.name + "': dtype " + std::string(io::dtype_name(w.dtype)) +
                              " is not a dense weight type (BF16, F16, F32, F8_E4M3, F8_E5M2)");
  }
  if (storage == DenseStorage::kHugePageCopy && w.nbytes >= kHugePageMinBytes) {
    SUBMOE_ASSIGN_OR_RETURN(HugePageBuffer huge, HugePageBuffer::allocate(w.nbytes));
    std::memcpy(huge.data(), w.data, w.nbytes);
    // A view into a checkpoint's (read-only) file mapping: its pages stop
    // counting towards the resident set; touching them again re-reads the file.
    if (!w.file.empty()) io::release_pages(w);
    return std::unique_ptr<LinearOp>(new DenseLinearOp(std::move(huge), dtype, rows, cols, activations));
  }
  const size_t elem = io::dtype_size(w.dtype);
  if (reinterpret_cast<uintptr_t>(w.data) % elem != 0) {
    owned.reset(w.nbytes, /*zero=*/false);
    std::memcpy(owned.data(), w.data, w.nbytes);
  }
  // In place: asked once, here, of the file mapping (the loader's finiteness
  // check has touched these pages, so their page size is established).
  const bool huge = owned.empty() && mapped_with_huge_pages(w.data);
  return std::unique_ptr<LinearOp>(new DenseLinearOp(w.data, dtype, rows, cols, std::move(owned), activations, huge));
}

std::unique_ptr<LinearOp> make_dense_linear(const void* data, DenseDType dtype, size_t out_features,
                                            size_t in_features) {
  return std::make_unique<DenseLinearOp>(data, dtype, out_features, in_features, AlignedBuffer<uint8_t>(),
                                         kernels::ActivationType::kF32, /*huge_pages=*/false);
}

}  // namespace submoe::model
