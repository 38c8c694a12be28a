// Options passed to one call and options set for a scope cannot be told apart (Note [Engine
// options], engine/options.h): every switch, the ones the engine reads and the ones the ops read
// (guard_saves when a formula's op records under create_graph, skip_zero_products when it
// multiplies), acts the same way both ways. Compared: every work counter, the saves by name, the
// nodes run in order, the live bytes the calls leave, and the gradients' bits.
#include <algorithm>
#include <functional>
#include <map>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "engine/memory/allocator.h"
#include "ops/ops.h"
#include "proptests/fuzz_stats.h"
#include "proptests/graph_gen.h"
#include "proptests/property.h"

namespace ag::proptests {
namespace {

// What a call (and, under create_graph, a second call through its results) did and returned.
struct CallRecord {
  std::vector<int64_t> counts;
  std::map<std::string, int64_t> saves;
  std::vector<uint64_t> executed;
  int64_t bytes_left = 0;  // live bytes after the calls, less before them
  TensorList grads;

  static CallRecord of_counters() {
    const Counters& c = counters();
    CallRecord r;
    r.counts = {c.nodes_expanded,    c.nodes_executed,          c.formulas_evaluated, c.bytes_saved,
                c.products_of_zeros, c.products_of_known_zeros, c.fused_formulas,     c.fused_sums};
    r.saves = c.save_counts();
    // Sequence numbers count every node the process made: the nodes of the two runs differ by
    // how many were made between them, so the order is compared from the oldest node that ran.
    r.executed = c.executed;
    if (!r.executed.empty()) {
      const uint64_t oldest = *std::min_element(r.executed.begin(), r.executed.end());
      for (uint64_t& n : r.executed) n -= oldest;
    }
    return r;
  }
};

bool same_bits(const TensorList& a, const TensorList& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].defined() != b[i].defined()) return false;
    if (!a[i].defined()) continue;
    if (a[i].shape() != b[i].shape() || a[i].to_vector() != b[i].to_vector()) return false;
  }
  return true;
}

std::string describe(const CallRecord& r) {
  std::string s = "counts:";
  for (int64_t c : r.counts) s += " " + std::to_string(c);
  s += " bytes_left: " + std::to_string(r.bytes_left) + " saves:";
  for (const auto& [name, n] : r.saves) s += " " + name + "=" + std::to_string(n);
  return s;
}

// The options with every switch flipped: the scope a per-call run runs in, so that a switch read
// from the scope instead of the call shows.
EngineOptions flipped(const EngineOptions& o) {
  return EngineOptions::from_bits(~o.bits() & (EngineOptions::kCombinations - 1));
}

// A workload: builds its forward (under the options in force) and returns (outputs, inputs).
using Forward = std::function<std::pair<TensorList, TensorList>()>;

// sum_k <t_k, w_k> over the defined tensors that require grad, with fixed weights; undefined when
// none does.
Tensor weighted_total(const TensorList& ts) {
  Tensor total;
  for (size_t k = 0; k < ts.size(); ++k) {
    if (!ts[k].defined() || !ts[k].requires_grad()) continue;
    Tensor w = ops::uniform(ts[k].shape(), 0.5, 1.5, 11 + k, ts[k].dtype());
    Tensor term = ops::sum(ops::mul(ts[k], w));
    total = total.defined() ? ops::add(total, term) : term;
  }
  return total;
}

// Runs grad(outputs, inputs) with `options`, passed to the call (per_call) or set for the scope;
// under create_graph, then a second grad through the weighted total of the first's results.
// Everything outside the calls (the forward, the total between them) runs under `options` both
// ways: only the calls differ.
CallRecord run_calls(const Forward& forward, const EngineOptions& options, bool per_call,
                     bool create_graph) {
  const int64_t before = live_bytes();
  CallRecord record;
  {
    OptionsGuard outside(options);
    auto [outputs, inputs] = forward();
    TensorList grad_outputs;
    for (size_t k = 0; k < outputs.size(); ++k) {
      grad_outputs.push_back(ops::uniform(outputs[k].shape(), 0.5, 1.5, 7 + k, outputs[k].dtype()));
    }
    auto call = [&](const TensorList& roots, const TensorList& grads_in, bool create) {
      GradArgs args = GradArgs().grad_outputs(grads_in).retain_graph().allow_unused();
      args.create_graph(create);
      if (!per_call) return grad(roots, inputs, args);
      OptionsGuard elsewhere(flipped(options));
      return grad(roots, inputs, args.engine_options(options));
    };
    reset_counters();
    counters().trace_executed = true;
    TensorList grads = call(outputs, grad_outputs, create_graph);
    if (create_graph) {
      const Tensor total = weighted_total(grads);  // under `options`, outside the calls
      if (total.defined()) {
        RC_TAG("second order");
        TensorList second = call({total}, {}, false);
        grads.insert(grads.end(), second.begin(), second.end());
      }
    }
    record = CallRecord::of_counters();
    for (const Tensor& g : grads) record.grads.push_back(g.defined() ? g.detach() : g);
    counters().trace_executed = false;
  }
  record.bytes_left = live_bytes() - before;
  return record;
}

void check_per_call_equals_scoped(const Forward& forward, const EngineOptions& options,
                                  bool create_graph) {
  const CallRecord scoped = run_calls(forward, options, false, create_graph);
  const CallRecord per_call = run_calls(forward, options, true, create_graph);
  RC_LOG() << "options: " << to_string(options) << (create_graph ? ", create_graph" : "")
           << "\n scoped:   " << describe(scoped) << "\n per call: " << describe(per_call) << "\n";
  RC_ASSERT(per_call.counts == scoped.counts);
  RC_ASSERT(per_call.saves == scoped.saves);
  RC_ASSERT(per_call.executed == scoped.executed);
  RC_ASSERT(per_call.bytes_left == scoped.bytes_left);
  RC_ASSERT(same_bits(per_call.grads, scoped.grads));
}

// On random DAGs, every option combination, with and without create_graph.
AG_PROPERTY(PerCallOptions, PerCallOptionsActAsScopedOnes) {
  const GraphSpec spec = *rc::gen::arbitrary<GraphSpec>();
  const EngineOptions options =
      all_option_combinations()[*rc::gen::inRange<int>(0, EngineOptions::kCombinations)];
  const bool create_graph = *rc::gen::arbitrary<bool>();
  fuzz_stats().record("options", to_string(options));
  check_per_call_equals_scoped(
      [&] {
        BuiltGraph g = build_graph(spec);
        return std::pair{g.outputs, g.requested};
      },
      options, create_graph);
}

// Workloads where the switches that ops read have something to act on: products large enough for
// the zero scan, with an all-zero operand (Note [Products with a zero operand]), and tanh chains
// whose formulas fuse their sums (Note [Sums fused into formulas]) or, under create_graph, record
// nodes whose saves guard_saves decides.
// x [rows, 128] @ w [128, 128], w all zeros: at 64 rows each product is 2^20 multiply-adds, the
// least the zero scan looks at.
std::pair<TensorList, TensorList> product_with_zeros(int64_t rows = 64, int64_t cols = 128) {
  Tensor x = ops::uniform({rows, cols}, -1.0, 1.0, 3, DType::kFloat32);
  Tensor w = ops::zeros({cols, cols}, DType::kFloat32);
  x.set_requires_grad(true);
  w.set_requires_grad(true);
  return {{ops::sum(ops::mm(x, w))}, {x, w}};
}

std::pair<TensorList, TensorList> tanh_mlp() {
  Tensor x = ops::uniform({64, 32}, -1.0, 1.0, 4, DType::kFloat64);
  Tensor w1 = ops::uniform({32, 32}, -0.5, 0.5, 5, DType::kFloat64);
  Tensor w2 = ops::zeros({32, 32}, DType::kFloat64);
  for (Tensor* t : {&x, &w1, &w2}) t->set_requires_grad(true);
  Tensor h = ops::tanh(ops::mm(x, w1));
  Tensor y = ops::add(ops::tanh(ops::mm(h, w2)), ops::tanh(h));
  return {{ops::sum(ops::mul(y, y))}, {x, w1, w2}};
}

TEST(PerCallOptions, EverySwitchActsTheSameOnProductsAndFusedSums) {
  for (const Forward& forward : {Forward([] { return product_with_zeros(); }), Forward(tanh_mlp)}) {
    for (const EngineOptions& options : all_option_combinations()) {
      for (bool create_graph : {false, true}) {
        SCOPED_TRACE(to_string(options) + (create_graph ? ", create_graph" : ""));
        const CallRecord scoped = run_calls(forward, options, false, create_graph);
        const CallRecord per_call = run_calls(forward, options, true, create_graph);
        EXPECT_EQ(per_call.counts, scoped.counts)
            << "scoped: " << describe(scoped) << "\nper call: " << describe(per_call);
        EXPECT_EQ(per_call.saves, scoped.saves);
        EXPECT_EQ(per_call.executed, scoped.executed);
        EXPECT_EQ(per_call.bytes_left, scoped.bytes_left);
        EXPECT_TRUE(same_bits(per_call.grads, scoped.grads));
      }
    }
  }
}

// The case that showed the bug (x [512, 512], w zeros [512, 512]): skip_zero_products off for
// one call multiplies the zeros.
TEST(PerCallOptions, SkipZeroProductsOffForOneCallMultipliesTheZeros) {
  auto [outputs, inputs] = product_with_zeros(512, 512);
  reset_counters();
  grad(outputs, inputs,
       GradArgs().retain_graph().engine_options(EngineOptions().with_skip_zero_products(false)));
  EXPECT_EQ(counters().products_of_zeros, 0);
  reset_counters();
  grad(outputs, inputs, GradArgs().retain_graph());
  EXPECT_EQ(counters().products_of_zeros, 1);  // dx = dy @ w^T, with w all zeros
}

// And guard_saves off for one create_graph call saves what the guards drop: the formula's
// mm(ones, w^T) need not keep its first operand, since only mat2's gradient can be asked for.
TEST(PerCallOptions, GuardSavesOffForOneCallSavesEverySlotItRecords) {
  Tensor x = ops::uniform({3, 4}, -1.0, 1.0, 8, DType::kFloat64);
  Tensor w = ops::uniform({4, 2}, -1.0, 1.0, 9, DType::kFloat64);
  x.set_requires_grad(true);
  w.set_requires_grad(true);
  Tensor y = ops::sum(ops::mm(x, w));
  auto saved_by_call = [&](const GradArgs& args) {
    reset_counters();
    grad({y}, {x}, args);
    return counters().bytes_saved;
  };
  const int64_t guarded = saved_by_call(GradArgs().create_graph());
  const int64_t unguarded = saved_by_call(
      GradArgs().create_graph().engine_options(EngineOptions().with_guard_saves(false)));
  EXPECT_GT(unguarded, guarded);
  OptionsGuard scope(EngineOptions().with_guard_saves(false));
  EXPECT_EQ(saved_by_call(GradArgs().create_graph()), unguarded);
}

}  // namespace
}  // namespace ag::proptests
