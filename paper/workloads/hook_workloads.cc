#include "paper/workloads/hook_workloads.h"

#include <any>
#include <cmath>

#include "engine/autograd.h"
#include "engine/checkpoint.h"
#include "engine/memory/allocator.h"
#include "engine/saved_tensor_hooks.h"
#include "ops/ops.h"

namespace ag::paper {

TensorList ResidualBlock::operator()(const TensorList& in) const {
  const Tensor& h = in[0];
  const Tensor inner = ops::dropout(ops::tanh(ops::mm(h, w1)), p, /*train=*/true, seed);
  return {ops::add(h, ops::tanh(ops::mm(inner, w2)))};
}

ResidualMlp make_residual_mlp(const ResidualMlpConfig& c) {
  ResidualMlp mlp;
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.width));
  for (int i = 0; i < c.layers; ++i) {
    Tensor w1 = ops::uniform({c.width, 4 * c.width}, -scale, scale, 10 + 2 * i);
    Tensor w2 = ops::uniform({4 * c.width, c.width}, -scale / 2, scale / 2, 11 + 2 * i);
    w1.set_requires_grad(true);
    w2.set_requires_grad(true);
    mlp.blocks.push_back({w1, w2, static_cast<uint64_t>(100 + i), c.p});
  }
  mlp.x = ops::uniform({c.batch, c.width}, -1, 1, 5);
  return mlp;
}

TensorList ResidualMlp::weights() const {
  TensorList out;
  for (const ResidualBlock& b : blocks) {
    out.push_back(b.w1);
    out.push_back(b.w2);
  }
  return out;
}

Tensor residual_mlp_loss(const ResidualMlp& mlp, bool checkpointed) {
  Tensor h = mlp.x;
  for (const ResidualBlock& b : mlp.blocks) h = checkpointed ? checkpoint(b, {h})[0] : b({h})[0];
  return ops::sum(ops::mul(h, h));
}

TensorList residual_mlp_grads(const ResidualMlp& mlp, bool checkpointed) {
  return grad({residual_mlp_loss(mlp, checkpointed)}, mlp.weights());
}

double residual_mlp_step(const ResidualMlp& mlp, bool checkpointed) {
  double sum = 0;
  for (const Tensor& g : residual_mlp_grads(mlp, checkpointed)) sum += g.data<float>()[0];
  return sum;
}

int64_t residual_mlp_peak_bytes(const ResidualMlp& mlp, bool checkpointed) {
  const int64_t before = live_bytes();
  reset_peak_bytes();
  residual_mlp_step(mlp, checkpointed);
  return peak_bytes() - before;
}

PackCount count_packs(const EngineOptions& options, const std::function<void()>& forward) {
  PackCount count;
  OptionsGuard guard(options);
  SavedTensorsHooks hooks(
      [&count](const Tensor& t) -> std::any {
        ++count.calls;
        count.bytes += static_cast<int64_t>(t.nbytes());
        return t;
      },
      [](const std::any& packed) { return std::any_cast<Tensor>(packed); });
  forward();
  return count;
}

}  // namespace ag::paper
