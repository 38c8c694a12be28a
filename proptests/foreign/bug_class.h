#pragma once

// Note [Bug classes]
// PyTorch's open autograd bugs sit where state meets the graph, so an `--against` campaign says
// how many of its programs exercised each such class: a clean campaign then says what it searched,
// and a finding is filed under the classes of its reduced program. A program belongs to every
// class it exercises (or to none):
//   views x in-place   an in-place write to a value that shares storage with another one (a
//                      view or a detach of it, or the base of one), while both exist;
//   version counter    an in-place write to a value that an op or custom Function read before,
//                      with a grad()/backward() after the write (the saved-value check runs);
//   higher order       a grad()/backward() with create_graph;
//   custom Function    a custom Function's apply;
//   backward(inputs=)  a backward() with inputs;
//   .grad state        reading or setting a tensor's .grad;
//   hooks              a tensor or Node hook (generated with the fuzz driver's --hooks);
//   mode inconsistency one function run in several of PyTorch's modes: the mode check's programs
//                      (a transform statement of eager_vjp, compiled_vjp or dual_jvp; Note
//                      [PyTorch against itself], proptests/conformance/mode_check.h), made only
//                      with the fuzz driver's --modes, and counted per generated program whose
//                      functional core ran in the modes (BugClassCoverage::add_mode_check).

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "proptests/conformance/program.h"

namespace ag::proptests {

enum class BugClass {
  kViewsInplace,
  kVersionCounter,
  kHigherOrder,
  kCustomFunction,
  kBackwardInputs,
  kGradState,
  kHooks,
  kModeInconsistency,
};
constexpr size_t kNumBugClasses = 8;

const char* bug_class_name(BugClass c);  // "views x in-place", ...
// The fuzz driver's flag without which no program exercises the class ("" for none).
const char* generated_only_with(BugClass c);

// The classes `program` exercises, in enum order.
std::vector<BugClass> bug_classes(const ConformanceProgram& program);

// Programs per class over a campaign.
class BugClassCoverage {
 public:
  void add(const ConformanceProgram& program);
  // The classes of the mode check's program for the program last added (not a program more).
  void add_mode_check(const ConformanceProgram& mode_program);
  int64_t programs() const { return programs_; }
  int64_t count(BugClass c) const { return counts_[static_cast<size_t>(c)]; }
  // One line per class, every class listed (0, and the flag that generates it where one does).
  std::string report() const;

 private:
  int64_t programs_ = 0;
  std::array<int64_t, kNumBugClasses> counts_{};
};

}  // namespace ag::proptests
