#include "runtime/repr/rvq/rvq_rotation.h"

#include "runtime/repr/bytes_util.h"

namespace submoe::runtime::repr {

uint64_t rvq_default_seed(uint32_t n) { return 0x5375624d6f455251ull ^ (uint64_t{n} * 0x9E3779B97F4A7C15ull); }

Result<RvqRotation> RvqRotation::create(uint32_t rows, uint32_t cols, uint64_t seed_out, uint64_t seed_in) {
  SUBMOE_ASSIGN_OR_RETURN(kernels::RandomizedHadamard o, kernels::RandomizedHadamard::create(rows, seed_out));
  SUBMOE_ASSIGN_OR_RETURN(kernels::RandomizedHadamard i, kernels::RandomizedHadamard::create(cols, seed_in));
  return RvqRotation{std::move(o), std::move(i)};
}

Status RvqRotation::rotate_problem(std::vector<float>& w, std::vector<float>& h) const {
  SUBMOE_RETURN_IF_ERROR(kernels::rotate_matrix(out, in, std::span<float>(w), out.n(), in.n()));
  if (!h.empty()) {
    std::vector<double> hd(h.begin(), h.end());
    SUBMOE_RETURN_IF_ERROR(kernels::rotate_hessian(in, hd, in.n()));
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(hd[i]);
  }
  return Status::ok();
}

Status RvqRotation::unrotate(std::span<float> w) const {
  const uint32_t rows = out.n(), cols = in.n();
  if (w.size() != size_t{rows} * cols) return invalid_argument("rvq unrotate: size does not match the rotation");
  // Rows: w_r <- T_i^T w_r (the row vector times T_i); then columns: T_o^T.
  std::vector<double> v(std::max(rows, cols));
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t c = 0; c < cols; ++c) v[c] = w[size_t{r} * cols + c];
    in.transpose_reference(v.data());
    for (uint32_t c = 0; c < cols; ++c) w[size_t{r} * cols + c] = static_cast<float>(v[c]);
  }
  for (uint32_t c = 0; c < cols; ++c) {
    for (uint32_t r = 0; r < rows; ++r) v[r] = w[size_t{r} * cols + c];
    out.transpose_reference(v.data());
    for (uint32_t r = 0; r < rows; ++r) w[size_t{r} * cols + c] = static_cast<float>(v[r]);
  }
  return Status::ok();
}

Result<RvqRotation> rotation_of_seeds(uint32_t rows, uint32_t cols, std::span<const std::byte> seeds,
                                      std::string_view repr) {
  if (seeds.size() != 16)
    return corrupt_data(std::string(repr) + ": rht_seeds holds " + std::to_string(seeds.size()) + " bytes, not 16");
  const std::vector<uint64_t> s = copy_as<uint64_t>(seeds);
  return RvqRotation::create(rows, cols, s[0], s[1]);
}

PackedTensor seeds_field(uint64_t seed_out, uint64_t seed_in) {
  const uint64_t seeds[2] = {seed_out, seed_in};
  return {"rht_seeds", io::DType::kU64, {2}, bytes_of(std::span<const uint64_t>(seeds, 2), 2)};
}

}  // namespace submoe::runtime::repr
