#include "engine/gradcheck.h"

#include <cmath>
#include <sstream>

#include "engine/autograd.h"
#include "engine/error.h"
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

  size_t k = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.requires_grad()) continue;
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
