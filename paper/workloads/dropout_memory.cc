#include "paper/workloads/dropout_memory.h"

#include "engine/counters.h"
#include "engine/memory/allocator.h"
#include "ops/ops.h"

namespace ag::paper {
namespace {

template <typename F>
DropoutMemory measure(const EngineOptions& options, F&& expression) {
  OptionsGuard guard(options);
  Tensor x = ops::uniform({2, 3, 10, 10}, -1, 1, 21);
  x.set_requires_grad(true);
  Tensor m = ops::uniform({1, 3, 1, 1}, 0, 2, 22);
  Tensor z = ops::sum(x);
  const int64_t base = live_bytes();
  reset_counters();
  z = expression(x, m);
  DropoutMemory result;
  result.extra_live_bytes = live_bytes() - base;
  result.bytes_saved = counters().bytes_saved;
  return result;
}

}  // namespace

DropoutMemory measure_dropout_memory(const EngineOptions& options) {
  return measure(options, [](const Tensor& x, const Tensor& m) { return ops::sum((x + 2.0) * m); });
}

DropoutMemory measure_dropout2d_op_memory(const EngineOptions& options) {
  return measure(options, [](const Tensor& x, const Tensor&) {
    return ops::sum(ops::dropout2d(x + 2.0, 0.5, /*train=*/true, /*seed=*/5));
  });
}

}  // namespace ag::paper
