#include "proptests/api_model/custom_functions.h"

#include "engine/function.h"
#include "ops/ops.h"

namespace ag::proptests {
namespace {

int next_tag = -1;

int record_needs(BackwardCtx& ctx) {
  const int tag = static_cast<int>(ctx.saved_data().at("tag"));
  custom_needs_log()[tag] = {ctx.needs_input_grad(0), ctx.needs_input_grad(1)};
  return tag;
}

struct CMul : Function<CMul> {
  static constexpr const char* name = "CMul";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    ctx.save_for_backward({in[0], in[1]});
    ctx.saved_data()["tag"] = next_tag;
    return {ops::mul(in[0], in[1])};
  }
  static TensorList backward(BackwardCtx& ctx, const TensorList& grads) {
    record_needs(ctx);
    const TensorList s = ctx.saved_tensors();
    return {ctx.needs_input_grad(0) ? ops::mul(grads[0], s[1]) : Tensor(),
            ctx.needs_input_grad(1) ? ops::mul(grads[0], s[0]) : Tensor()};
  }
};

struct Two : Function<Two> {
  static constexpr const char* name = "Two";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    ctx.save_for_backward({in[0], in[1]});
    ctx.saved_data()["tag"] = next_tag;
    return {ops::mul(in[0], in[1]), ops::add(in[0], in[1])};
  }
  // d(u)/dp = q, d(w)/dp = 1; d(u)/dq = p, d(w)/dq = 1.
  static TensorList backward(BackwardCtx& ctx, const TensorList& grads) {
    record_needs(ctx);
    const TensorList s = ctx.saved_tensors();
    return {ctx.needs_input_grad(0) ? ops::add(ops::mul(grads[0], s[1]), grads[1]) : Tensor(),
            ctx.needs_input_grad(1) ? ops::add(ops::mul(grads[0], s[0]), grads[1]) : Tensor()};
  }
};

}  // namespace

void set_next_custom_tag(int tag) { next_tag = tag; }

std::map<int, std::vector<bool>>& custom_needs_log() {
  static std::map<int, std::vector<bool>> log;
  return log;
}

Tensor custom_mul(const Tensor& p, const Tensor& q) { return CMul::apply({p, q})[0]; }
TensorList custom_two(const Tensor& p, const Tensor& q) { return Two::apply({p, q}); }

}  // namespace ag::proptests
