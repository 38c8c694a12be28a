#include "proptests/conformance/transform_runner.h"

#include "engine/error.h"
#include "engine/functional.h"
#include "ops/ops.h"
#include "proptests/ops/composition.h"

namespace ag::proptests {
namespace {

// The body as a function: its arguments are values 0..n-1, each instruction adds one more, and
// the last is the result (the function's one output).
func::Function body_function(const std::vector<Instr>& body) {
  return [body](const TensorList& in) -> TensorList {
    TensorList values = in;
    for (const Instr& instr : body) {
      TensorList args;
      for (int a : instr.args) args.push_back(values.at(static_cast<size_t>(a)));
      values.push_back(run_instr(instr, args));
    }
    return {values.back()};
  };
}

TensorList range(const TensorList& args, size_t from, size_t to) {
  AG_CHECK(to <= args.size(), "a transform statement needs ", to, " arguments, has ", args.size());
  TensorList out;
  // Detached: the transforms' results are compared, not their history (program.h).
  for (size_t i = from; i < to; ++i) out.push_back(ops::detach(args[i]));
  return out;
}

}  // namespace

TensorList run_transform(const Stmt& s, const TensorList& args) {
  AG_CHECK(!s.body.empty(), "a transform's body is empty");
  const func::Function f = body_function(s.body);
  const size_t n = static_cast<size_t>(s.num_primals);
  const TensorList primals = range(args, 0, n);
  // The other modes' statements are PyTorch's own modes of the same transform
  // (Note [PyTorch against itself]); this engine has one of each.
  switch (s.transform) {
    case TransformKind::kJvp:
    case TransformKind::kDualJvp: {
      const func::JvpResult r = func::jvp(f, primals, range(args, n, 2 * n));
      return {r.outputs.at(0), r.tangents.at(0)};
    }
    case TransformKind::kVjp:
    case TransformKind::kEagerVjp:
    case TransformKind::kCompiledVjp: {
      const func::VjpResult r = func::vjp(f, primals);
      TensorList out = {r.outputs.at(0)};
      for (const Tensor& g : r.vjp(range(args, n, n + 1))) out.push_back(g);
      return out;
    }
    case TransformKind::kJacrev:
      return func::jacrev(f, primals).at(0);
    case TransformKind::kJacfwd:
      return func::jacfwd(f, primals).at(0);
    case TransformKind::kHessian:
      AG_CHECK(n == 1, "hessian of a function of one tensor");
      return {func::hessian(f, primals[0])};
    case TransformKind::kHvp:
      AG_CHECK(n == 1, "hvp of a function of one tensor");
      return {func::hvp(f, primals[0], range(args, 1, 2).at(0))};
  }
  return {};
}

}  // namespace ag::proptests
