// Forward mode against reverse mode and finite differences, on random compositions of the op set
// in float64 (Note [Jvp rules], ops/jvp.h): the per-op oracle of three independent derivatives.
// First order: the tangent J u from the dual level equals central differences of the program
// along u, and <w, J u> equals <J^T w, u> from grad() to rounding. Second order: the tangent of a
// gradient taken inside the level (forward-over-reverse, H u) equals the gradient of <g, u>
// (reverse-over-reverse).

#include <cmath>
#include <sstream>

#include "engine/autograd.h"
#include "engine/forward_ad.h"
#include "ops/ops.h"
#include "proptests/ops/composition.h"
#include "proptests/property.h"

namespace ag::proptests {
namespace {

// Random directions: one per leaf that requires grad (the others carry no tangent).
TensorList directions(const Plan& plan, uint64_t seed) {
  TensorList u;
  for (size_t i = 0; i < plan.leaf_shapes.size(); ++i) {
    u.push_back(plan.leaf_requires_grad[i]
                    ? ops::uniform(plan.leaf_shapes[i], -1, 1, seed + i, DType::kFloat64)
                    : Tensor());
  }
  return u;
}

// The leaves as duals along u, inside `level` (the ones without a direction as they are).
TensorList duals(const TensorList& leaves, const TensorList& u) {
  TensorList out;
  for (size_t i = 0; i < leaves.size(); ++i) {
    out.push_back(u[i].defined() ? make_dual(leaves[i], u[i]) : leaves[i]);
  }
  return out;
}

double dot(const Tensor& a, const Tensor& b) { return ops::sum(ops::mul(a, b)).item(); }

// Whether x and y agree to rounding, relative to `scale`.
bool close(double x, double y, double scale, double tol = 1e-9) {
  return std::abs(x - y) <= tol * (1.0 + scale);
}

AG_PROPERTY(OpsJvp, ForwardReverseAndFiniteDifferencesAgree) {
  const Plan plan = pick_plan();
  const TensorList leaves = make_leaves(plan, DType::kFloat64);
  const TensorList u = directions(plan, plan.seed + 7);
  Tensor ju, out;
  {
    DualLevel level;
    out = run(plan, duals(leaves, u))[plan.output()];
    ju = unpack_dual(out).tangent;
  }
  if (!ju.defined()) ju = ops::zeros_like(out);
  RC_ASSERT(ju.shape() == out.shape());

  // Central differences along u, element by element.
  const double eps = 1e-6;
  TensorList plus, minus;
  {
    NoGradGuard no_grad;
    for (size_t i = 0; i < leaves.size(); ++i) {
      plus.push_back(u[i].defined() ? ops::add(leaves[i], ops::mul(u[i], eps)) : leaves[i]);
      minus.push_back(u[i].defined() ? ops::sub(leaves[i], ops::mul(u[i], eps)) : leaves[i]);
    }
  }
  const std::vector<double> fp = run(plan, plus)[plan.output()].to_vector();
  const std::vector<double> fm = run(plan, minus)[plan.output()].to_vector();
  const std::vector<double> analytic = ju.to_vector();
  for (size_t k = 0; k < analytic.size(); ++k) {
    const double numeric = (fp[k] - fm[k]) / (2 * eps);
    if (!std::isfinite(numeric) || !std::isfinite(analytic[k])) continue;
    if (std::abs(numeric - analytic[k]) > 1e-5 + 1e-3 * std::abs(numeric)) {
      std::ostringstream os;
      os << "element " << k << ": jvp " << analytic[k] << ", finite differences " << numeric << "\n"
         << describe(plan);
      RC_FAIL(os.str());
    }
  }

  // <w, J u> = <J^T w, u>.
  const Tensor w = ops::uniform(out.shape(), -1, 1, plan.seed + 11, DType::kFloat64);
  const Tensor y = run(plan, leaves)[plan.output()];
  if (!y.requires_grad()) return;
  TensorList wanted;
  TensorList wanted_u;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (u[i].defined()) wanted.push_back(leaves[i]), wanted_u.push_back(u[i]);
  }
  const TensorList g = grad({y}, wanted, GradArgs().grad_outputs({w}).allow_unused());
  double reverse = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i].defined()) reverse += dot(g[i], wanted_u[i]);
  }
  const double forward = dot(w, ju);
  RC_ASSERT(std::isfinite(forward) == std::isfinite(reverse));
  if (std::isfinite(forward) && !close(forward, reverse, std::abs(forward))) {
    std::ostringstream os;
    os << "<w, J u> by forward mode " << forward << ", by reverse mode " << reverse << "\n"
       << describe(plan);
    RC_FAIL(os.str());
  }
}

AG_PROPERTY(OpsJvp, ForwardOverReverseEqualsReverseOverReverse) {
  const Plan plan = pick_plan();
  const TensorList leaves = make_leaves(plan, DType::kFloat64);
  const TensorList u = directions(plan, plan.seed + 7);
  TensorList wanted, wanted_u;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (u[i].defined()) wanted.push_back(leaves[i]), wanted_u.push_back(u[i]);
  }
  if (wanted.empty()) return;
  const auto weighted = [&plan](const TensorList& values) {
    const Tensor out = run(plan, values)[plan.output()];
    return ops::sum(ops::mul(out, ops::uniform(out.shape(), -1, 1, 99, DType::kFloat64)));
  };
  const Tensor s = weighted(leaves);
  if (!s.requires_grad()) return;

  // Reverse over reverse: d<g(x), u>/dx = H u.
  const TensorList g = grad({s}, wanted, GradArgs().create_graph().allow_unused());
  Tensor gu;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!g[i].defined() || !g[i].requires_grad()) continue;
    const Tensor part = ops::sum(ops::mul(g[i], wanted_u[i]));
    gu = gu.defined() ? ops::add(gu, part) : part;
  }
  TensorList hu_reverse(wanted.size());
  if (gu.defined()) hu_reverse = grad({gu}, wanted, GradArgs().allow_unused());

  // Forward over reverse: the tangent of the gradient taken inside the level.
  TensorList hu_forward;
  {
    DualLevel level;
    TensorList stand_ins;  // the leaves as duals, each a fresh leaf-backed alias
    TensorList all = leaves;
    size_t j = 0;
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (u[i].defined()) all[i] = stand_ins.emplace_back(make_dual(leaves[i], wanted_u[j++]));
    }
    const Tensor sd = weighted(all);
    const TensorList gd = grad({sd}, stand_ins, GradArgs().allow_unused());
    for (const Tensor& t : gd) {
      hu_forward.push_back(t.defined() ? unpack_dual(t).tangent : Tensor());
    }
  }
  for (size_t i = 0; i < wanted.size(); ++i) {
    const Tensor a = hu_forward[i].defined() ? hu_forward[i] : ops::zeros_like(wanted[i]);
    const Tensor b = hu_reverse[i].defined() ? hu_reverse[i] : ops::zeros_like(wanted[i]);
    const std::vector<double> av = a.to_vector(), bv = b.to_vector();
    for (size_t k = 0; k < av.size(); ++k) {
      if (!std::isfinite(av[k]) && !std::isfinite(bv[k])) continue;
      if (!close(av[k], bv[k], std::abs(bv[k]), 1e-8)) {
        std::ostringstream os;
        os << "leaf " << i << " element " << k << ": H u by forward-over-reverse " << av[k]
           << ", by reverse-over-reverse " << bv[k] << "\n"
           << describe(plan);
        RC_FAIL(os.str());
      }
    }
  }
}

}  // namespace
}  // namespace ag::proptests
