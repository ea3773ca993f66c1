// Host side of the CUDA ternary dictionary kernels: uploads, launch planning and
// checked launches. The planner is plain C++ (tested without a GPU); everything
// that touches the runtime is compiled only when CUDA is.
#include "submoe/kernels/cuda/ternary_dict_cuda.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "submoe/codec/ternary_packed.h"
#include "submoe/kernels/cuda/ternary_dict_lane.h"

#if defined(SUBMOE_HAVE_CUDA) && SUBMOE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/ternary_dict_launch.h"
#define SUBMOE_CUDA_ENABLED 1
#else
#define SUBMOE_CUDA_ENABLED 0
#endif

namespace submoe::kernels::cuda {

namespace lane = cuda_lane;

namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

std::string shape_string(uint32_t rows, uint32_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

[[maybe_unused]] Status not_built() {
  return unsupported("this build has no CUDA support (nvcc not found at configure time, or SUBMOE_CUDA=OFF)");
}

}  // namespace

uint32_t max_warps_per_block(uint32_t batch_slots) { return lane::max_warps_per_block_for(batch_slots); }

size_t launch_smem_bytes(uint32_t batch_slots, uint32_t tile_cols, uint32_t warps_per_block, uint32_t rows_per_block) {
  return sizeof(float) * static_cast<size_t>(lane::smem_words(batch_slots, tile_cols, warps_per_block, rows_per_block));
}

Result<LaunchPlan> plan_ternary_dict_gemm_for(const DeviceLimits& limits, const BlocksPerSm& blocks_per_sm,
                                              uint32_t rows, uint32_t cols, uint32_t batch, Activation activation,
                                              const LaunchOptions& options) {
  if (batch < 1 || batch > lane::kMaxBatch) {
    return invalid_argument("batch must be 1.." + std::to_string(lane::kMaxBatch) + ", got " + std::to_string(batch));
  }
  if (options.tile_cols % lane::kTileAlign != 0) {
    return invalid_argument("tile_cols must be a multiple of " + std::to_string(lane::kTileAlign) + ", got " +
                            std::to_string(options.tile_cols));
  }
  if (limits.sm_count == 0) return invalid_argument("device limits: sm_count is 0");
  LaunchPlan plan;
  plan.rows = rows;
  plan.cols = cols;
  plan.batch = batch;
  plan.batch_slots = lane::batch_slots_for(batch);
  plan.activation = activation;
  const uint32_t max_warps = max_warps_per_block(plan.batch_slots);
  if (options.warps_per_block > max_warps) {
    return invalid_argument("warps_per_block must be at most " + std::to_string(max_warps) + ", got " +
                            std::to_string(options.warps_per_block));
  }
  // One row per warp and, when there are few rows, about one block per SM: the
  // rows are the only parallelism (a row's codewords cannot be split without
  // extra per-row metadata).
  plan.warps_per_block =
      options.warps_per_block != 0
          ? options.warps_per_block
          : static_cast<uint32_t>(std::clamp<uint64_t>(ceil_div(rows, limits.sm_count), 1, max_warps));

  const size_t optin = limits.smem_per_block_optin;
  const size_t fixed_single = sizeof(float) * plan.warps_per_block * lane::kDeqWordsPerWarp;
  const size_t fixed_multi = fixed_single + 2 * sizeof(uint32_t) * kMaxStateRows;
  const size_t bytes_per_col = sizeof(float) * plan.batch_slots;
  if (options.tile_cols != 0) {
    plan.tile_cols = options.tile_cols;
  } else {
    const uint32_t whole = lane::single_tile_cols(cols);
    const size_t whole_bytes = bytes_per_col * lane::tile_smem_cols(whole);
    if (fixed_single + whole_bytes <= optin && whole_bytes <= kAutoTileBudgetBytes) {
      plan.tile_cols = whole;
    } else {
      const size_t budget = std::min(kAutoTileBudgetBytes, optin > fixed_multi ? optin - fixed_multi : 0);
      const size_t fit_cols = budget / bytes_per_col;
      if (fit_cols < lane::kTileHalo + lane::kTileAlign) {
        return unsupported("device shared memory (" + std::to_string(optin) + " bytes per block) is too small for " +
                           std::to_string(plan.batch_slots) + " activation vectors");
      }
      plan.tile_cols = static_cast<uint32_t>((fit_cols - lane::kTileHalo) / lane::kTileAlign * lane::kTileAlign);
    }
  }
  plan.num_tiles = lane::tile_count(cols, plan.tile_cols);
  const bool multi = plan.num_tiles > 1;
  const uint32_t threads = plan.warps_per_block * lane::kWarpSize;
  const size_t reserve =
      launch_smem_bytes(plan.batch_slots, plan.tile_cols, plan.warps_per_block, multi ? kMaxStateRows : 0);
  if (reserve > optin) {
    return invalid_argument("tile of " + std::to_string(plan.tile_cols) + " columns x " +
                            std::to_string(plan.batch_slots) + " activation vectors needs " + std::to_string(reserve) +
                            " bytes of shared memory; the device allows " + std::to_string(optin));
  }
  if (rows == 0) {
    plan.rows_per_block = plan.warps_per_block;
    plan.grid_blocks = 0;
    plan.smem_bytes =
        launch_smem_bytes(plan.batch_slots, plan.tile_cols, plan.warps_per_block, multi ? plan.rows_per_block : 0);
    return plan;
  }
  SUBMOE_ASSIGN_OR_RETURN(const int per_sm, blocks_per_sm(plan.batch_slots, activation, threads, reserve));
  if (per_sm < 1) {
    return unsupported("no block of " + std::to_string(threads) + " threads with " + std::to_string(reserve) +
                       " bytes of shared memory fits on an SM");
  }
  // Few enough blocks to stay resident (x is loaded once per block), each row a warp.
  const uint64_t resident = static_cast<uint64_t>(per_sm) * limits.sm_count;
  uint64_t grid = std::min<uint64_t>(ceil_div(rows, plan.warps_per_block), resident);
  uint64_t rows_per_block = ceil_div(rows, grid);
  if (multi && rows_per_block > kMaxStateRows) rows_per_block = kMaxStateRows;
  grid = ceil_div(rows, rows_per_block);
  plan.rows_per_block = static_cast<uint32_t>(rows_per_block);
  plan.grid_blocks = static_cast<uint32_t>(grid);
  plan.smem_bytes =
      launch_smem_bytes(plan.batch_slots, plan.tile_cols, plan.warps_per_block, multi ? plan.rows_per_block : 0);
  return plan;
}

Status check_launch_plan(const LaunchPlan& plan, uint32_t rows, uint32_t cols, Activation activation) {
  if (plan.rows != rows || plan.cols != cols) {
    return invalid_argument("launch plan made for " + shape_string(plan.rows, plan.cols) + ", matrix is " +
                            shape_string(rows, cols));
  }
  if (plan.activation != activation) return invalid_argument("launch plan made for another activation type");
  if (plan.batch < 1 || plan.batch > lane::kMaxBatch || plan.batch_slots != lane::batch_slots_for(plan.batch)) {
    return invalid_argument("launch plan: bad batch " + std::to_string(plan.batch) + " / slots " +
                            std::to_string(plan.batch_slots));
  }
  if (plan.tile_cols == 0 || plan.tile_cols % lane::kTileAlign != 0 ||
      plan.num_tiles != lane::tile_count(cols, plan.tile_cols)) {
    return invalid_argument("launch plan: inconsistent tiling");
  }
  if (plan.warps_per_block < 1 || plan.warps_per_block > max_warps_per_block(plan.batch_slots)) {
    return invalid_argument("launch plan: bad warps_per_block " + std::to_string(plan.warps_per_block));
  }
  const bool multi = plan.num_tiles > 1;
  if (rows > 0 && (plan.rows_per_block == 0 ||
                   static_cast<uint64_t>(plan.grid_blocks) * plan.rows_per_block < rows ||
                   static_cast<uint64_t>(plan.grid_blocks - 1) * plan.rows_per_block >= rows ||
                   (multi && plan.rows_per_block > kMaxStateRows))) {
    return invalid_argument("launch plan: rows_per_block x grid_blocks does not cover the rows exactly");
  }
  if (rows == 0 && plan.grid_blocks != 0) return invalid_argument("launch plan: blocks for an empty matrix");
  if (plan.smem_bytes !=
      launch_smem_bytes(plan.batch_slots, plan.tile_cols, plan.warps_per_block, multi ? plan.rows_per_block : 0)) {
    return invalid_argument("launch plan: shared memory size does not match its geometry");
  }
  return Status::ok();
}

size_t DeviceTernaryMatrix::device_bytes() const {
  return codes_.bytes() + row_offsets_.bytes() + scales_.bytes();
}

#if SUBMOE_CUDA_ENABLED

namespace {

cudaStream_t native(Stream s) { return reinterpret_cast<cudaStream_t>(s); }

Status launch(const DeviceTernaryMatrix& w, const void* x, float* y, const LaunchPlan& plan, Activation activation,
              Stream stream) {
  SUBMOE_RETURN_IF_ERROR(check_launch_plan(plan, w.rows(), w.cols(), activation));
  // Checked before the empty-matrix shortcut: a default-constructed matrix has 0 rows.
  if (w.device_view().dict == nullptr) return invalid_argument("matrix has not been uploaded");
  if (w.rows() == 0) return Status::ok();
  if (y == nullptr) return invalid_argument("y is null");
  if (x == nullptr && w.cols() > 0) return invalid_argument("x is null");
  const ternary::PackedTernaryView& v = w.device_view();
  if (v.row_offsets == nullptr || v.scales == nullptr || v.dict == nullptr) {
    return invalid_argument("matrix has not been uploaded");
  }
  detail::TernaryDictLaunch l;
  l.codes = v.codes;
  l.row_offsets = v.row_offsets;
  l.scales = v.scales;
  l.dict = v.dict;
  l.x = x;
  l.y = y;
  l.rows = plan.rows;
  l.cols = plan.cols;
  l.batch = plan.batch;
  l.batch_slots = plan.batch_slots;
  l.bf16 = activation == Activation::kBf16;
  l.warps_per_block = plan.warps_per_block;
  l.rows_per_block = plan.rows_per_block;
  l.grid_blocks = plan.grid_blocks;
  l.tile_cols = plan.tile_cols;
  l.num_tiles = plan.num_tiles;
  l.smem_bytes = plan.smem_bytes;
  return detail::cuda_status(detail::launch_ternary_dict_gemm(l, native(stream)), "ternary dictionary kernel launch");
}

}  // namespace

Result<DeviceTernaryDictionary> DeviceTernaryDictionary::upload(const ternary::DictEntry* entries) {
  if (entries == nullptr) return invalid_argument("dictionary: null entries");
  SUBMOE_RETURN_IF_ERROR(ternary::validate_dictionary_table(entries));
  DeviceTernaryDictionary d;
  d.host_.assign(entries, entries + ternary::kDictEntries);
  SUBMOE_ASSIGN_OR_RETURN(d.buffer_, DeviceBuffer::allocate(ternary::kDictEntries * sizeof(ternary::DictEntry)));
  SUBMOE_RETURN_IF_ERROR(copy_to_device(d.buffer_.data(), entries, d.buffer_.bytes()));
  return d;
}

Result<DeviceTernaryMatrix> DeviceTernaryMatrix::upload(const ternary::PackedTernaryView& v,
                                                        const DeviceTernaryDictionary& dict) {
  if (dict.host_entries().size() != ternary::kDictEntries || dict.device_entries() == nullptr) {
    return invalid_argument("the device dictionary has not been uploaded");
  }
  SUBMOE_RETURN_IF_ERROR(ternary::validate_packed_with_trusted_dict(v));
  if (v.dict == nullptr ||
      std::memcmp(v.dict, dict.host_entries().data(), ternary::kDictEntries * sizeof(ternary::DictEntry)) != 0) {
    return invalid_argument("the matrix was coded with a different dictionary than the device dictionary holds");
  }
  DeviceTernaryMatrix m;
  SUBMOE_ASSIGN_OR_RETURN(m.codes_, DeviceBuffer::allocate(v.num_codes * sizeof(uint16_t)));
  SUBMOE_ASSIGN_OR_RETURN(m.row_offsets_, DeviceBuffer::allocate((static_cast<size_t>(v.rows) + 1) * sizeof(int32_t)));
  SUBMOE_ASSIGN_OR_RETURN(m.scales_, DeviceBuffer::allocate(static_cast<size_t>(v.rows) * sizeof(ternary::RowScales)));
  SUBMOE_RETURN_IF_ERROR(copy_to_device(m.codes_.data(), v.codes, m.codes_.bytes()));
  SUBMOE_RETURN_IF_ERROR(copy_to_device(m.row_offsets_.data(), v.row_offsets, m.row_offsets_.bytes()));
  SUBMOE_RETURN_IF_ERROR(copy_to_device(m.scales_.data(), v.scales, m.scales_.bytes()));
  m.view_.rows = v.rows;
  m.view_.cols = v.cols;
  m.view_.num_codes = v.num_codes;
  m.view_.codes = m.codes_.as<const uint16_t>();
  m.view_.row_offsets = m.row_offsets_.as<const int32_t>();
  m.view_.scales = m.scales_.as<const ternary::RowScales>();
  m.view_.dict = dict.device_entries();
  return m;
}

Result<LaunchPlan> plan_ternary_dict_gemm(uint32_t rows, uint32_t cols, uint32_t batch, Activation activation,
                                          const LaunchOptions& options) {
  int device = 0;
  SUBMOE_RETURN_IF_ERROR(detail::cuda_status(cudaGetDevice(&device), "cudaGetDevice"));
  int sms = 0;
  int optin = 0;
  SUBMOE_RETURN_IF_ERROR(detail::cuda_status(
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute"));
  SUBMOE_RETURN_IF_ERROR(detail::cuda_status(
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), "cudaDeviceGetAttribute"));
  const DeviceLimits limits{static_cast<uint32_t>(sms), static_cast<size_t>(optin)};
  const BlocksPerSm occupancy = [](uint32_t slots, Activation act, uint32_t threads, size_t smem) -> Result<int> {
    int blocks = 0;
    SUBMOE_RETURN_IF_ERROR(detail::cuda_status(
        detail::ternary_dict_gemm_blocks_per_sm(slots, act == Activation::kBf16, threads, smem, &blocks),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor"));
    return blocks;
  };
  return plan_ternary_dict_gemm_for(limits, occupancy, rows, cols, batch, activation, options);
}

Status gemm_f32_ternary_dict_cuda(const DeviceTernaryMatrix& w, const float* x, float* y, const LaunchPlan& plan,
                                  Stream stream) {
  return launch(w, x, y, plan, Activation::kF32, stream);
}

Status gemm_bf16_ternary_dict_cuda(const DeviceTernaryMatrix& w, const bf16_t* x, float* y, const LaunchPlan& plan,
                                   Stream stream) {
  return launch(w, x, y, plan, Activation::kBf16, stream);
}

#else  // !SUBMOE_CUDA_ENABLED

Result<DeviceTernaryDictionary> DeviceTernaryDictionary::upload(const ternary::DictEntry*) { return not_built(); }
Result<DeviceTernaryMatrix> DeviceTernaryMatrix::upload(const ternary::PackedTernaryView&,
                                                        const DeviceTernaryDictionary&) {
  return not_built();
}
Result<LaunchPlan> plan_ternary_dict_gemm(uint32_t, uint32_t, uint32_t, Activation, const LaunchOptions&) {
  return not_built();
}
Status gemm_f32_ternary_dict_cuda(const DeviceTernaryMatrix&, const float*, float*, const LaunchPlan&, Stream) {
  return not_built();
}
Status gemm_bf16_ternary_dict_cuda(const DeviceTernaryMatrix&, const bf16_t*, float*, const LaunchPlan&, Stream) {
  return not_built();
}

#endif  // SUBMOE_CUDA_ENABLED

Status gemv_f32_ternary_dict_cuda(const DeviceTernaryMatrix& w, const float* x, float* y, Stream stream,
                                  const LaunchOptions& options) {
  return gemm_f32_ternary_dict_cuda(w, x, 1, y, stream, options);
}

Status gemv_bf16_ternary_dict_cuda(const DeviceTernaryMatrix& w, const bf16_t* x, float* y, Stream stream,
                                   const LaunchOptions& options) {
  return gemm_bf16_ternary_dict_cuda(w, x, 1, y, stream, options);
}

Status gemm_f32_ternary_dict_cuda(const DeviceTernaryMatrix& w, const float* x, uint32_t batch, float* y,
                                  Stream stream, const LaunchOptions& options) {
  SUBMOE_ASSIGN_OR_RETURN(const LaunchPlan plan,
                          plan_ternary_dict_gemm(w.rows(), w.cols(), batch, Activation::kF32, options));
  return gemm_f32_ternary_dict_cuda(w, x, y, plan, stream);
}

Status gemm_bf16_ternary_dict_cuda(const DeviceTernaryMatrix& w, const bf16_t* x, uint32_t batch, float* y,
                                   Stream stream, const LaunchOptions& options) {
  SUBMOE_ASSIGN_OR_RETURN(const LaunchPlan plan,
                          plan_ternary_dict_gemm(w.rows(), w.cols(), batch, Activation::kBf16, options));
  return gemm_bf16_ternary_dict_cuda(w, x, y, plan, stream);
}

}  // namespace submoe::kernels::cuda
