#pragma once

// The ops of the op list that engine code runs while a RecordedOps lives on this thread, seen
// through the tracing hook (Note [Tracing hook], ops/spec.h), so that a generator's test can
// check its coverage() against what it really runs (Note [Generator coverage]).

#include <set>
#include <string>

#include "ops/op_list.h"
#include "ops/spec.h"
#include "proptests/op_coverage.h"

namespace ag::proptests {

class RecordedOps : public ops::TraceHook {
 public:
  RecordedOps() : guard_(this) {}
  void record_op(const ops::OpSpec& spec, std::initializer_list<const Tensor*>, const Tensor&,
                 const ops::OpAttrs&) override {
    ops::OpId op = ops::OpId::kAdd;
    if (ops::op_named(spec.name().c_str(), &op)) ran_.insert(op);
  }
  const std::set<ops::OpId>& ran() const { return ran_; }

 private:
  std::set<ops::OpId> ran_;
  ops::TraceHookGuard guard_;
};

// Ops made of other ops of the list: they report the ops they call, not themselves.
inline bool made_of_other_ops(ops::OpId op) {
  using ops::OpId;
  return op == OpId::kMean || op == OpId::kMeanDim || op == OpId::kView || op == OpId::kMatmul ||
         op == OpId::kCrossEntropy || op == OpId::kDropout || op == OpId::kDropout2d;
}

// Where `ran` disagrees with `coverage`: an excluded op that ran, or a covered op (reporting
// itself) that did not. Empty when they agree.
template <typename CoverageFn>
std::string coverage_mismatches(CoverageFn coverage, const std::set<ops::OpId>& ran) {
  std::string out;
  for (ops::OpId op : ops::kAllOps) {
    const Coverage c = coverage(op);
    const bool did_run = ran.count(op) == 1;
    if (!c.covered && did_run) {
      out += std::string(ops::op_name(op)) + " ran, but is excluded: " + c.note + "\n";
    }
    if (c.covered && !did_run && !made_of_other_ops(op)) {
      out += std::string(ops::op_name(op)) + " did not run, but is covered by " + c.note + "\n";
    }
  }
  return out;
}

}  // namespace ag::proptests
