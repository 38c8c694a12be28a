#pragma once

// The ops of the op list that engine code runs while a RecordedOps lives on this thread, seen
// through the tracing hook (Note [Tracing hook], ops/trace_hook.h), so that a generator's test can
// check what the traits table says it makes against what it really runs (Note [Op traits]).

#include <set>
#include <string>

#include "ops/op_list.h"
#include "ops/spec.h"
#include "ops/trace_hook.h"
#include "proptests/op_traits.h"

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

// Where `ran` disagrees with the table's column for `gen`: an op the generator does not make that
// ran, or one it makes (reporting itself, not composite) that did not. Empty when they agree.
inline std::string coverage_mismatches(Gen gen, const std::set<ops::OpId>& ran) {
  std::string out;
  for (ops::OpId op : ops::kAllOps) {
    const OpTraits& t = traits(op);
    const bool did_run = ran.count(op) == 1;
    if (!t.made_by(gen) && did_run) {
      out += std::string(ops::op_name(op)) + " ran, but " + gen_name(gen) +
             " do not make it: " + t.how + "\n";
    }
    if (t.made_by(gen) && !did_run && !t.composite) {
      out += std::string(ops::op_name(op)) + " did not run, but " + gen_name(gen) +
             " make it: " + t.how + "\n";
    }
  }
  return out;
}

}  // namespace ag::proptests
