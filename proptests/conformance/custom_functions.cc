#include "proptests/conformance/custom_functions.h"

#include "engine/function.h"
#include "ops/ops.h"

namespace ag::proptests {
namespace {

thread_local int creating_stmt = -1;

void log_needs(const BackwardCtx& ctx, size_t n) {
  NeedsEvent e{static_cast<int>(ctx.saved_data().at("stmt")), {}};
  for (size_t i = 0; i < n; ++i) e.needs.push_back(ctx.needs_input_grad(i));
  needs_log().push_back(e);
}

void remember_stmt(ForwardCtx& ctx) { ctx.saved_data()["stmt"] = creating_stmt; }

// a * b
struct MulFn : Function<MulFn> {
  static constexpr const char* name = "Mul";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    remember_stmt(ctx);
    ctx.save_for_backward({in[0], in[1]});
    return {ops::mul(in[0], in[1])};
  }
  static TensorList backward(BackwardCtx& ctx, const TensorList& g) {
    log_needs(ctx, 2);
    const TensorList s = ctx.saved_tensors();
    TensorList out(2);
    if (ctx.needs_input_grad(0)) out[0] = ops::sum_to(ops::mul(g[0], s[1]), s[0].shape());
    if (ctx.needs_input_grad(1)) out[1] = ops::sum_to(ops::mul(g[0], s[0]), s[1].shape());
    return out;
  }
};

// (a * b, a + b): a node with two outputs.
struct TwoFn : Function<TwoFn> {
  static constexpr const char* name = "Two";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    remember_stmt(ctx);
    ctx.save_for_backward({in[0], in[1]});
    return {ops::mul(in[0], in[1]), ops::add(in[0], in[1])};
  }
  static TensorList backward(BackwardCtx& ctx, const TensorList& g) {
    log_needs(ctx, 2);
    const TensorList s = ctx.saved_tensors();
    TensorList out(2);
    if (ctx.needs_input_grad(0)) {
      out[0] = ops::sum_to(ops::add(ops::mul(g[0], s[1]), g[1]), s[0].shape());
    }
    if (ctx.needs_input_grad(1)) {
      out[1] = ops::sum_to(ops::add(ops::mul(g[0], s[0]), g[1]), s[1].shape());
    }
    return out;
  }
};

// (2 * a, -a), the second output marked non-differentiable.
struct SplitFn : Function<SplitFn> {
  static constexpr const char* name = "Split";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    remember_stmt(ctx);
    TensorList out = {ops::mul(in[0], 2.0), ops::neg(in[0])};
    ctx.mark_non_differentiable({out[1]});
    return out;
  }
  static TensorList backward(BackwardCtx& ctx, const TensorList& g) {
    log_needs(ctx, 1);
    if (!ctx.needs_input_grad(0)) return {Tensor()};
    return {ops::mul(g[0], 2.0)};
  }
};

}  // namespace

std::vector<NeedsEvent>& needs_log() {
  thread_local std::vector<NeedsEvent> log;
  return log;
}

TensorList apply_custom(CustomKind kind, const TensorList& args, int stmt) {
  creating_stmt = stmt;
  switch (kind) {
    case CustomKind::kMul:
      return MulFn::apply(args);
    case CustomKind::kTwo:
      return TwoFn::apply(args);
    case CustomKind::kSplit:
      return SplitFn::apply({args[0]});
  }
  return {};
}

}  // namespace ag::proptests
