#include "engine/gradcheck.h"

#include <cmath>
#include <sstream>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/forward_ad.h"
#include "ops/ops.h"

namespace ag {

namespace {

// d(output element j)/d(input elements), for each input, from one grad() call.
std::vector<std::vector<double>> analytical_row(const Tensor& out, int64_t j,
                                                const TensorList& inputs) {
  std::vector<std::vector<double>> row;
  TensorList wrt;
  for (const Tensor& in : inputs) {
    if (in.requires_grad()) wrt.push_back(in);
  }
  TensorList grads;
  if (out.requires_grad() && !wrt.empty()) {
    std::vector<double> onehot(static_cast<size_t>(out.numel()), 0.0);
    onehot[j] = 1.0;
    Tensor v = ops::from_vector(onehot, out.shape(), out.dtype(), out.device());
    grads = grad({out}, wrt, GradArgs().grad_outputs({v}).retain_graph().allow_unused());
  }
  size_t k = 0;
  for (const Tensor& in : inputs) {
    if (!in.requires_grad()) continue;
    Tensor g = grads.empty() ? Tensor() : grads[k];
    ++k;
    row.push_back(g.defined() ? g.to_vector()
                              : std::vector<double>(static_cast<size_t>(in.numel()), 0.0));
  }
  return row;
}

// J u for the inputs that require grad, u[k] their directions, from one call of fn on duals.
std::vector<double> forward_jvp(const DifferentiableFn& fn, const TensorList& inputs,
                                const TensorList& u) {
  DualLevel level;
  TensorList duals;
  size_t k = 0;
  for (const Tensor& in : inputs) duals.push_back(in.requires_grad() ? make_dual(in, u[k++]) : in);
  const Tensor out = fn(duals);
  const Tensor t = unpack_dual(out).tangent;
  return t.defined() ? t.to_vector() : std::vector<double>(static_cast<size_t>(out.numel()), 0.0);
}

// Records the first failure of `value` against `expected` in `result`.
void compare(GradcheckResult& result, const GradcheckOptions& options, double value,
             double expected, const std::string& what) {
  const double err = std::abs(value - expected);
  result.max_abs_error = std::max(result.max_abs_error, err);
  if (!(err <= options.atol + options.rtol * std::abs(expected)) && result.passed) {
    result.passed = false;
    std::ostringstream os;
    os << "gradcheck: " << what << ": " << value << " vs " << expected;
    result.report = os.str();
  }
}

}  // namespace

GradcheckResult gradcheck(const DifferentiableFn& fn, const TensorList& inputs,
                          const GradcheckOptions& options) {
  for (const Tensor& in : inputs) {
    AG_CHECK(in.dtype() == DType::kFloat64 && in.is_leaf() && in.device().is_cpu(),
             "gradcheck: inputs must be float64 leaves on the CPU (it perturbs them in place), "
             "got ",
             in.describe());
  }
  GradcheckResult result;
  Tensor out = fn(inputs);
  const int64_t m = out.numel();
  std::vector<std::vector<std::vector<double>>> analytical;  // [j][input][element]
  for (int64_t j = 0; j < m; ++j) analytical.push_back(analytical_row(out, j, inputs));

  // Forward mode's direction per input that requires grad, and J u by finite differences and by
  // the reverse Jacobian.
  TensorList u;
  std::vector<double> numerical_ju(static_cast<size_t>(m), 0.0), analytical_ju = numerical_ju;
  size_t k = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.requires_grad()) continue;
    u.push_back(ops::uniform(in.shape(), -1, 1, 31 + i, DType::kFloat64));
    const std::vector<double> ui = u.back().to_vector();
    double* x = in.data<double>();
    for (int64_t e = 0; e < in.numel(); ++e) {
      const double saved = x[e];
      std::vector<double> plus, minus;
      // Written directly into the leaf's storage (no version bump): nothing holds a graph
      // over these evaluations. Grad mode stays on because fn may itself call grad().
      x[e] = saved + options.eps;
      plus = fn(inputs).to_vector();
      x[e] = saved - options.eps;
      minus = fn(inputs).to_vector();
      x[e] = saved;
      for (int64_t j = 0; j < m; ++j) {
        const double numerical = (plus[j] - minus[j]) / (2 * options.eps);
        const double a = analytical[j][k][e];
        numerical_ju[j] += numerical * ui[e];
        analytical_ju[j] += a * ui[e];
        const double err = std::abs(a - numerical);
        result.max_abs_error = std::max(result.max_abs_error, err);
        // Written so that a NaN on either side fails, as torch.allclose does without equal_nan.
        if (!(err <= options.atol + options.rtol * std::abs(numerical)) && result.passed) {
          result.passed = false;
          std::ostringstream os;
          os << "gradcheck: d(output[" << j << "])/d(input " << i << "[" << e << "]): analytical "
             << a << " vs numerical " << numerical << " (input " << in.describe() << ", output "
             << out.describe() << ")";
          result.report = os.str();
        }
      }
    }
    ++k;
  }
  if (options.check_forward_ad && !u.empty()) {
    const std::vector<double> ju = forward_jvp(fn, inputs, u);
    for (int64_t j = 0; j < m; ++j) {
      compare(result, options, ju[j], numerical_ju[j],
              "forward mode's (J u)[" + std::to_string(j) + "] vs finite differences'");
      compare(result, options, ju[j], analytical_ju[j],
              "forward mode's (J u)[" + std::to_string(j) + "] vs reverse mode's");
    }
  }
  return result;
}

GradcheckResult gradgradcheck(const DifferentiableFn& fn, const TensorList& inputs,
                              const GradcheckOptions& options) {
  // Fixed pseudo-random projections make the second-order check a scalar function.
  Tensor probe = fn(inputs);
  Tensor v = ops::uniform(probe.shape(), -1, 1, /*seed=*/17, probe.dtype(), probe.device());
  TensorList wrt;
  for (const Tensor& in : inputs) {
    if (in.requires_grad()) wrt.push_back(in);
  }
  TensorList weights;
  for (size_t i = 0; i < wrt.size(); ++i) {
    weights.push_back(ops::uniform(wrt[i].shape(), -1, 1, 100 + i, DType::kFloat64));
  }
  DifferentiableFn projected = [&](const TensorList& xs) {
    Tensor out = fn(xs);
    if (!out.requires_grad()) return ops::zeros({}, DType::kFloat64);
    TensorList gs =
        grad({out}, wrt, GradArgs().grad_outputs({v}).retain_graph().create_graph().allow_unused());
    Tensor total = ops::zeros({}, DType::kFloat64);
    for (size_t i = 0; i < gs.size(); ++i) {
      if (gs[i].defined()) total = ops::add(total, ops::sum(ops::mul(gs[i], weights[i])));
    }
    return total;
  };
  return gradcheck(projected, inputs, options);
}

}  // namespace ag
