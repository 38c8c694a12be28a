// Each op's forward, inside random compositions, equals a naive loop over the same inputs
// (reference.h), in float64 and float32. Every instruction is checked on the values it actually
// received, so rounding does not accumulate along the composition.

#include <algorithm>
#include <cmath>
#include <sstream>

#include "proptests/ops/composition.h"
#include "proptests/ops/reference.h"
#include "proptests/property.h"

namespace ag::proptests {
namespace {

// Normwise: every element within tol * (1 + the largest reference magnitude).
bool close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  double scale = 1;
  for (double w : want) scale = std::max(scale, 1 + std::abs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::abs(got[i] - want[i]) <= tol * scale)) return false;
  }
  return true;
}

std::string show(const std::vector<double>& v) {
  std::ostringstream os;
  for (double x : v) os << x << " ";
  return os.str();
}

AG_PROPERTY(OpsForward, EachOpMatchesNaiveLoops) {
  const Plan plan = pick_plan();
  for (DType dtype : {DType::kFloat64, DType::kFloat32}) {
    const double tol = dtype == DType::kFloat64 ? 1e-12 : 1e-5;
    const TensorList values = run(plan, make_leaves(plan, dtype));
    for (size_t i = 0; i < plan.instrs.size(); ++i) {
      const Instr& in = plan.instrs[i];
      if (in.op == Op::kLeaf) continue;
      std::vector<RTensor> args;
      for (int a : in.args) args.push_back(to_reference(values[a]));
      const RTensor want = reference(in, args);
      const std::string where =
          "v" + std::to_string(i) + " = " + op_name(in.op) + " in " + to_string(dtype);
      RC_ASSERT(values[i].dtype() == dtype);
      if (values[i].shape() != want.shape) {
        RC_FAIL(where + ": shape " + to_string(values[i].shape()) + ", expected " +
                to_string(want.shape));
      }
      const std::vector<double> got = values[i].to_vector();
      if (!close(got, want.v, tol)) {
        RC_FAIL(where + ": got " + show(got) + "expected " + show(want.v));
      }
    }
  }
}

}  // namespace
}  // namespace ag::proptests
