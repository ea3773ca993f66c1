// AQLM's per-matrix optimization (aqlm_solver.h). Notation: R rows, C
// columns, N = C / 8 groups per row, M codebooks of K = 2^B entries; U the
// unscaled decode (U[r] = sum of the row's codewords), E = W - S U the error,
// V = E G. L = sum_r E[r] . V[r].
#include "runtime/repr/aqlm/aqlm_solver.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/repr/kmeans8.h"
#include "submoe/core/bf16.h"
#include "submoe/linalg/dense.h"

namespace submoe::runtime::repr::aqlm_solver {
namespace {

constexpr uint32_t D = aqlm::kDim;

float to_f16_value(float x) {
  x = std::clamp(x, -aqlm::kMaxEntryMagnitude, aqlm::kMaxEntryMagnitude);
  return f16_bits_to_float(float_to_f16_bits(x));
}

// The problem and its running state.
class Solver {
 public:
  Solver(std::span<const float> w, uint32_t rows, uint32_t cols, std::span<const float> h, double damp,
         const Options& o)
      : w_(w), R_(rows), C_(cols), N_(cols / D), M_(o.shape.codebooks), K_(o.shape.entries()), o_(o) {
    identity_ = h.empty();
    if (!identity_) {
      // G = H + damp x mean(diag H) I, scaled to mean diagonal 1 (L's unit).
      g_.assign(h.begin(), h.end());
      double diag = 0;
      for (uint32_t i = 0; i < C_; ++i) diag += g_[size_t{i} * C_ + i];
      diag /= C_;
      if (!(diag > 0) || !std::isfinite(diag)) {
        identity_ = true;
        g_.clear();
      } else {
        const double add = damp * diag;
        for (uint32_t i = 0; i < C_; ++i) g_[size_t{i} * C_ + i] = static_cast<float>(g_[size_t{i} * C_ + i] + add);
        const float inv = static_cast<float>(1.0 / (diag + add));
        for (float& x : g_) x *= inv;
      }
    }
    codes_.assign(size_t{R_} * N_ * M_, 0);
    cb_.assign(size_t{M_} * K_ * D, 0.0f);
    s_.assign(R_, 0.0f);
    u_.assign(size_t{R_} * C_, 0.0f);
    e_.assign(size_t{R_} * C_, 0.0f);
    v_.assign(size_t{R_} * C_, 0.0f);
  }

  Status init();
  void code_pass();
  void update_codebooks();
  void update_scales();
  double refresh();  // U, E, V from codes / codebooks / scales; returns L

  // Snapshots for keeping the best state.
  struct State {
    std::vector<uint16_t> codes;
    std::vector<float> cb, s;
  };
  State save() const { return {codes_, cb_, s_}; }
  void restore(const State& st) {
    codes_ = st.codes;
    cb_ = st.cb;
    s_ = st.s;
  }
  aqlm::AqlmMatrix matrix() const;

 private:
  // out[R x C] = in[R x C] G.
  void times_g(const float* in, float* out) const {
    if (identity_) {
      std::memcpy(out, in, sizeof(float) * R_ * C_);
      return;
    }
    linalg::gemm_f32(false, false, R_, C_, C_, 1.0f, in, C_, g_.data(), C_, 0.0f, out, C_);
  }
  float g(uint32_t i, uint32_t j) const { return identity_ ? (i == j ? 1.0f : 0.0f) : g_[size_t{i} * C_ + j]; }
  const float* entry(const std::vector<float>& cb, uint32_t m, uint32_t k) const {
    return cb.data() + (size_t{m} * K_ + k) * D;
  }
  // u = sum of the M codewords of `codes` (M indices) in codebook order.
  void sum_codes(const std::vector<float>& cb, const uint16_t* codes, float* u) const {
    for (uint32_t j = 0; j < D; ++j) u[j] = 0.0f;
    for (uint32_t m = 0; m < M_; ++m) {
      const float* c = entry(cb, m, codes[m]);
      for (uint32_t j = 0; j < D; ++j) u[j] += c[j];
    }
  }
  void decode_unscaled(const std::vector<float>& cb, float* u) const {
    for (uint32_t r = 0; r < R_; ++r)
      for (uint32_t n = 0; n < N_; ++n) sum_codes(cb, codes_.data() + (size_t{r} * N_ + n) * M_, u + size_t{r} * C_ + n * D);
  }
  // out[m][k] += sum over (r, n) with code k in codebook m of s_r z[r][group n].
  void scatter(const float* z, std::vector<double>& out) const {
    std::fill(out.begin(), out.end(), 0.0);
    for (uint32_t r = 0; r < R_; ++r) {
      const double s = s_[r];
      if (s == 0) continue;
      for (uint32_t n = 0; n < N_; ++n) {
        const uint16_t* a = codes_.data() + (size_t{r} * N_ + n) * M_;
        const float* zz = z + size_t{r} * C_ + n * D;
        for (uint32_t m = 0; m < M_; ++m) {
          double* o = out.data() + (size_t{m} * K_ + a[m]) * D;
          for (uint32_t j = 0; j < D; ++j) o[j] += s * zz[j];
        }
      }
    }
  }
  void beam_search(const float* t, const float* gjj, const std::vector<float>& q, uint16_t* codes) const;

  std::span<const float> w_;
  uint32_t R_, C_, N_, M_, K_;
  Options o_;
  bool identity_ = true;
  std::vector<float> g_;
  std::vector<uint16_t> codes_;
  std::vector<float> cb_;  // f16 values, [M, K, 8]
  std::vector<float> s_;   // f16 values
  std::vector<float> u_, e_, v_;
};

Status Solver::init() {
  for (uint32_t r = 0; r < R_; ++r) {
    double ss = 0;
    for (uint32_t c = 0; c < C_; ++c) ss += double{w_[size_t{r} * C_ + c]} * w_[size_t{r} * C_ + c];
    s_[r] = to_f16_value(static_cast<float>(std::sqrt(ss / C_)));
  }
  // Residual targets: the groups of W / s.
  std::vector<float> residual(size_t{R_} * C_);
  for (uint32_t r = 0; r < R_; ++r)
    for (uint32_t c = 0; c < C_; ++c)
      residual[size_t{r} * C_ + c] = s_[r] > 0 ? w_[size_t{r} * C_ + c] / s_[r] : 0.0f;
  const size_t points = size_t{R_} * N_;
  KMeansOptions ko;
  ko.max_iterations = o_.kmeans_iterations;
  ko.max_points = o_.kmeans_points;
  // Large codebooks start as all sums of two residual k-means halves.
  const uint32_t B = o_.shape.code_bits;
  const bool split = B > 10;
  for (uint32_t m = 0; m < M_; ++m) {
    std::vector<float> book(size_t{K_} * D);
    std::vector<uint32_t> assign(points);
    if (!split) {
      ko.seed = o_.seed + m;
      SUBMOE_ASSIGN_OR_RETURN(book, kmeans8(residual, K_, ko));
      assign_nearest8(residual, book, assign);
    } else {
      const uint32_t b1 = B / 2, b2 = B - b1;
      std::vector<float> half_res = residual;
      ko.seed = o_.seed + 2 * m;
      SUBMOE_ASSIGN_OR_RETURN(std::vector<float> c1, kmeans8(half_res, 1u << b1, ko));
      std::vector<uint32_t> a1(points);
      assign_nearest8(half_res, c1, a1);
      for (size_t p = 0; p < points; ++p)
        for (uint32_t j = 0; j < D; ++j) half_res[p * D + j] -= c1[size_t{a1[p]} * D + j];
      ko.seed = o_.seed + 2 * m + 1;
      SUBMOE_ASSIGN_OR_RETURN(std::vector<float> c2, kmeans8(half_res, 1u << b2, ko));
      for (uint32_t k1 = 0; k1 < (1u << b1); ++k1)
        for (uint32_t k2 = 0; k2 < (1u << b2); ++k2)
          for (uint32_t j = 0; j < D; ++j)
            book[((size_t{k1} << b2) + k2) * D + j] = c1[size_t{k1} * D + j] + c2[size_t{k2} * D + j];
      for (float& x : book) x = to_f16_value(x);
      assign_nearest8(residual, book, assign);
    }
    for (size_t i = 0; i < book.size(); ++i) cb_[size_t{m} * K_ * D + i] = to_f16_value(book[i]);
    const float* fb = cb_.data() + size_t{m} * K_ * D;
    for (size_t p = 0; p < points; ++p) {
      codes_[p * M_ + m] = static_cast<uint16_t>(assign[p]);
      for (uint32_t j = 0; j < D; ++j) residual[p * D + j] -= fb[size_t{assign[p]} * D + j];
    }
  }
  return Status::ok();
}

double Solver::refresh() {
  decode_unscaled(cb_, u_.data());
  for (uint32_t r = 0; r < R_; ++r)
    for (uint32_t c = 0; c < C_; ++c) {
      const size_t i = size_t{r} * C_ + c;
      e_[i] = w_[i] - s_[r] * u_[i];
    }
  times_g(e_.data(), v_.data());
  double l = 0;
  for (size_t i = 0; i < e_.size(); ++i) l += double{e_[i]} * v_[i];
  return l;
}

// The tuple minimizing y G_JJ y - 2 y . t over y = sum_m C_m[a_m] (the
// group's loss up to a constant, in units of s^2), by beam search from the
// current tuple: each round replaces one code of each hypothesis in every
// way and keeps the `beam` best distinct tuples; M rounds (one is exact for
// M = 1). The current tuple stays a candidate, so the result is never worse.
void Solver::beam_search(const float* t, const float* gjj, const std::vector<float>& q, uint16_t* codes) const {
  struct Hyp {
    uint16_t a[aqlm::kMaxCodebooks];
    float y[D];
    float score;
  };
  auto score_of = [&](const float* y) {
    float s = 0;
    for (uint32_t i = 0; i < D; ++i) {
      float gy = 0;
      for (uint32_t j = 0; j < D; ++j) gy += gjj[i * D + j] * y[j];
      s += y[i] * (gy - 2.0f * t[i]);
    }
    return s;
  };
  const uint32_t width = std::max<uint32_t>(1, o_.beam);
  thread_local std::vector<Hyp> beam, next;
  beam.assign(1, Hyp{});
  std::copy(codes, codes + M_, beam[0].a);
  sum_codes(cb_, codes, beam[0].y);
  beam[0].score = score_of(beam[0].y);
  thread_local std::vector<float> scores;
  scores.resize(K_);
  for (uint32_t round = 0; round < M_; ++round) {
    next.clear();
    auto worst = [&] { return next.size() < width ? std::numeric_limits<float>::infinity() : next.back().score; };
    for (const Hyp& h : beam) {
      for (uint32_t m = 0; m < M_; ++m) {
        // z = t - G_JJ o, o = the other codes' sum.
        const float* cur = entry(cb_, m, h.a[m]);
        float o[D], z[D];
        for (uint32_t j = 0; j < D; ++j) o[j] = h.y[j] - cur[j];
        for (uint32_t i = 0; i < D; ++i) {
          float go = 0;
          for (uint32_t j = 0; j < D; ++j) go += gjj[i * D + j] * o[j];
          z[i] = t[i] - go;
        }
        float cur_dot = 0;
        for (uint32_t j = 0; j < D; ++j) cur_dot += cur[j] * z[j];
        const float base = h.score - (q[size_t{m} * K_ + h.a[m]] - 2.0f * cur_dot);
        const float* book = cb_.data() + size_t{m} * K_ * D;
        const float* qm = q.data() + size_t{m} * K_;
        for (uint32_t k = 0; k < K_; ++k) {
          const float* c = book + size_t{k} * D;
          float dot = 0;
          for (uint32_t j = 0; j < D; ++j) dot += c[j] * z[j];
          scores[k] = base + qm[k] - 2.0f * dot;
        }
        for (uint32_t k = 0; k < K_; ++k) {
          if (!(scores[k] < worst())) continue;
          Hyp cand = h;
          cand.a[m] = static_cast<uint16_t>(k);
          bool dup = false;
          for (const Hyp& x : next) dup = dup || std::equal(x.a, x.a + M_, cand.a);
          if (dup) continue;
          const float* nc = book + size_t{k} * D;
          for (uint32_t j = 0; j < D; ++j) cand.y[j] = o[j] + nc[j];
          cand.score = scores[k];
          auto pos = std::upper_bound(next.begin(), next.end(), cand.score,
                                      [](float v, const Hyp& x) { return v < x.score; });
          next.insert(pos, cand);
          if (next.size() > width) next.pop_back();
        }
      }
    }
    beam.swap(next);
  }
  std::copy(beam[0].a, beam[0].a + M_, codes);
}

void Solver::code_pass() {
  std::vector<float> q(size_t{M_} * K_);
  float gjj[D * D];
  for (uint32_t n = 0; n < N_; ++n) {
    const uint32_t c0 = n * D;
    for (uint32_t i = 0; i < D; ++i)
      for (uint32_t j = 0; j < D; ++j) gjj[i * D + j] = g(c0 + i, c0 + j);
    // Unary terms c G_JJ c of every entry, shared by all rows.
    for (size_t e = 0; e < size_t{M_} * K_; ++e) {
      const float* c = cb_.data() + e * D;
      float v = 0;
      for (uint32_t i = 0; i < D; ++i) {
        float gc = 0;
        for (uint32_t j = 0; j < D; ++j) gc += gjj[i * D + j] * c[j];
        v += c[i] * gc;
      }
      q[e] = v;
    }
    for (uint32_t r = 0; r < R_; ++r) {
      const float s = s_[r];
      if (s == 0) continue;
      float* ur = u_.data() + size_t{r} * C_ + c0;
      const float* vr = v_.data() + size_t{r} * C_ + c0;
      float t[D];
      for (uint32_t i = 0; i < D; ++i) {
        float gu = 0;
        for (uint32_t j = 0; j < D; ++j) gu += gjj[i * D + j] * ur[j];
        t[i] = vr[i] / s + gu;
      }
      uint16_t* a = codes_.data() + (size_t{r} * N_ + n) * M_;
      uint16_t before[aqlm::kMaxCodebooks];
      std::copy(a, a + M_, before);
      beam_search(t, gjj, q, a);
      if (std::equal(a, a + M_, before)) continue;
      // delta = s (y' - u): E_J -= delta, V -= delta G[J, :].
      float y[D], delta[D];
      sum_codes(cb_, a, y);
      for (uint32_t j = 0; j < D; ++j) {
        delta[j] = s * (y[j] - ur[j]);
        ur[j] = y[j];
        e_[size_t{r} * C_ + c0 + j] -= delta[j];
      }
      float* vrow = v_.data() + size_t{r} * C_;
      if (identity_) {
        for (uint32_t j = 0; j < D; ++j) vrow[c0 + j] -= delta[j];
      } else {
        for (uint32_t j = 0; j < D; ++j) {
          const float* grow = g_.data() + size_t{c0 + j} * C_;
          const float dj = delta[j];
          for (uint32_t c = 0; c < C_; ++c) vrow[c] -= dj * grow[c];
        }
      }
    }
  }
}

// min_cb sum_r (w_r - s_r D_r cb) G (w_r - s_r D_r cb)^T: the normal
// equations A cb = b with A p = scatter(s (S D_r p) G), b = scatter(s W G),
// solved by conjugate gradients from the current codebooks (each step lowers
// L; entries no row uses have zero rows in A and b and stay as they are).
void Solver::update_codebooks() {
  const size_t n = cb_.size();
  std::vector<float> tmp(size_t{R_} * C_), z(size_t{R_} * C_);
  std::vector<double> b(n), ap(n);
  auto apply = [&](const std::vector<float>& p, std::vector<double>& out) {
    decode_unscaled(p, tmp.data());
    for (uint32_t r = 0; r < R_; ++r)
      for (uint32_t c = 0; c < C_; ++c) tmp[size_t{r} * C_ + c] *= s_[r];
    times_g(tmp.data(), z.data());
    scatter(z.data(), out);
  };
  times_g(w_.data(), z.data());
  scatter(z.data(), b);
  std::vector<float> x = cb_, p(n);
  std::vector<double> res(n), dir(n);
  apply(x, ap);
  double rr = 0;
  for (size_t i = 0; i < n; ++i) {
    res[i] = b[i] - ap[i];
    dir[i] = res[i];
    rr += res[i] * res[i];
  }
  const double rr0 = rr;
  std::vector<double> xd(x.begin(), x.end());
  for (uint32_t it = 0; it < o_.cg_iterations && rr > 1e-20 * rr0 && rr > 0; ++it) {
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>(dir[i]);
    apply(p, ap);
    double pap = 0;
    for (size_t i = 0; i < n; ++i) pap += dir[i] * ap[i];
    if (!(pap > 0)) break;
    const double alpha = rr / pap;
    double rr_new = 0;
    for (size_t i = 0; i < n; ++i) {
      xd[i] += alpha * dir[i];
      res[i] -= alpha * ap[i];
      rr_new += res[i] * res[i];
    }
    const double beta = rr_new / rr;
    rr = rr_new;
    for (size_t i = 0; i < n; ++i) dir[i] = res[i] + beta * dir[i];
  }
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(xd[i]) || std::fabs(xd[i]) > aqlm::kMaxEntryMagnitude) return;  // keep the old codebooks
  for (size_t i = 0; i < n; ++i) cb_[i] = to_f16_value(static_cast<float>(xd[i]));
}

// s_r = (w_r G u_r) / (u_r G u_r) with the codes and codebooks fixed.
void Solver::update_scales() {
  decode_unscaled(cb_, u_.data());
  times_g(u_.data(), v_.data());  // v_ is scratch here; refresh() rebuilds it
  for (uint32_t r = 0; r < R_; ++r) {
    double num = 0, den = 0;
    for (uint32_t c = 0; c < C_; ++c) {
      const size_t i = size_t{r} * C_ + c;
      num += double{w_[i]} * v_[i];
      den += double{u_[i]} * v_[i];
    }
    if (den > 0 && std::isfinite(num / den)) s_[r] = to_f16_value(static_cast<float>(num / den));
  }
}

aqlm::AqlmMatrix Solver::matrix() const {
  aqlm::AqlmMatrix m;
  m.rows = R_;
  m.cols = C_;
  m.shape = o_.shape;
  m.codes = codes_;
  m.codebooks.resize(cb_.size());
  for (size_t i = 0; i < cb_.size(); ++i) m.codebooks[i] = float_to_f16_bits(cb_[i]);
  m.scales.resize(R_);
  for (uint32_t r = 0; r < R_; ++r) m.scales[r] = float_to_f16_bits(s_[r]);
  return m;
}

}  // namespace

Status check_fittable(uint32_t rows, uint32_t cols, aqlm::Shape shape) {
  SUBMOE_RETURN_IF_ERROR(aqlm::check_shape(shape));
  SUBMOE_RETURN_IF_ERROR(aqlm::check_matrix_shape(rows, cols));
  const uint64_t groups = uint64_t{rows} * (cols / aqlm::kDim);
  if (groups < shape.entries())
    return invalid_argument("aqlm " + shape.name() + ": a [" + std::to_string(rows) + ", " + std::to_string(cols) +
                            "] matrix has " + std::to_string(groups) + " groups of 8 weights, fewer than the " +
                            std::to_string(shape.entries()) +
                            " entries of each codebook (its codebooks alone would cost more than its codes; "
                            "use fewer code bits, e.g. 2x8 or 3x5)");
  return Status::ok();
}

Result<aqlm::AqlmMatrix> solve(std::span<const float> w, uint32_t rows, uint32_t cols, std::span<const float> h,
                               double damp, const Options& options, Report* report) {
  SUBMOE_RETURN_IF_ERROR(check_fittable(rows, cols, options.shape));
  if (w.size() != size_t{rows} * cols) return invalid_argument("aqlm solve: W has the wrong size");
  if (!h.empty() && h.size() != size_t{cols} * cols) return invalid_argument("aqlm solve: H has the wrong size");
  for (size_t i = 0; i < w.size(); ++i)
    if (!std::isfinite(w[i])) return invalid_argument("aqlm solve: weight " + std::to_string(i) + " is not finite");
  Solver s(w, rows, cols, h, damp, options);
  SUBMOE_RETURN_IF_ERROR(s.init());
  Report local;
  Report& rep = report ? *report : local;
  rep = Report{};
  s.refresh();
  s.code_pass();
  double best = s.refresh();
  rep.loss_history.push_back(best);
  Solver::State kept = s.save();
  for (uint32_t it = 0; it < options.max_iterations; ++it) {
    s.update_codebooks();
    s.update_scales();
    s.refresh();
    s.code_pass();
    const double l = s.refresh();
    rep.loss_history.push_back(l);
    rep.iterations = it + 1;
    // Stop when L rose (the kept state is the best) or improved by less than the tolerance.
    const bool small = !(best > 0) || (best - l) / best < options.tolerance;
    if (l < best) {
      kept = s.save();
      best = l;
    }
    if (small) {
      rep.converged = true;
      break;
    }
  }
  s.restore(kept);
  return s.matrix();
}

}  // namespace submoe::runtime::repr::aqlm_solver
