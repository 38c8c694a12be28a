#pragma once

// Note [Verdicts]
// When this engine and a foreign engine (PyTorch) disagree on a value, the answers that share code
// with neither decide who is wrong, or that nobody can tell:
//   the API model's float64 dual numbers (exact derivatives, proptests/api_model/dual.h),
//   finite differences (only at smooth points: no kink within the step),
//   forward mode (when it lands).
// The rules, in order:
//   1. a random op in the program (dropout)                                  -> undecided
//   2. a NaN in the program or in any answer                                 -> undecided
//   3. a kink within the finite-difference step                              -> undecided
//   4. no independent answer available                                       -> undecided
//   5. the independent answers disagree among themselves                     -> undecided
//   6. ours and PyTorch within the comparison tolerance                      -> undecided
//      (there is no disagreement to judge)
//   7. ours agrees with every independent answer and PyTorch agrees with none -> PyTorch candidate
//   8. PyTorch agrees with every independent answer and ours agrees with none -> engine candidate
//   9. anything else (both within an answer's tolerance, or neither)         -> undecided
// "Agree" is |x - y| <= atol + rtol * max(|x|, |y|) elementwise with the same number of elements,
// each kind of answer with its own tolerance (VerdictTolerances). Only PyTorch candidates enter
// the findings; engine candidates are this engine's bugs. The fuzz driver's `--against` puts a
// mismatch of a grad() result's values before these rules, with finite differences where the
// program allows them (Note [Independent answers for a grad() result], grad_oracles.h).

#include <string>
#include <vector>

namespace ag::proptests {

struct Closeness {
  double rtol = 0, atol = 0;
  bool agree(double x, double y) const;
  bool agree(const std::vector<double>& x, const std::vector<double>& y) const;
};

struct VerdictTolerances {
  // Ours against PyTorch: the conformance comparison's (records.h, Tolerance).
  Closeness comparison{1e-12, 1e-14};
  // Dual numbers and forward mode: exact derivatives in float64, other summation orders.
  Closeness exact{1e-9, 1e-12};
  // Central differences in float64: truncation and cancellation error of the step.
  Closeness finite_differences{1e-5, 1e-6};
};

// One independent answer for the disputed value (a tensor's elements, row-major).
struct IndependentAnswer {
  bool available = false;
  std::vector<double> values;
};

struct FiniteDifferenceAnswer {
  bool available = false;
  std::vector<double> values;
  // No kink within the step: the one-sided differences agree with the central one (the caller's
  // kink detection) and no op of the program sits at a non-differentiable point.
  bool smooth = false;
};

struct VerdictInput {
  std::vector<double> ours, pytorch;
  IndependentAnswer dual;
  FiniteDifferenceAnswer finite_differences;
  IndependentAnswer forward_mode;
  bool has_random_op = false;  // e.g. dropout: its masks are the engines' own
  bool nan_appears = false;  // a NaN anywhere in the program's values (the answers are checked too)
};

enum class VerdictKind { kEngineCandidate, kPyTorchCandidate, kUndecided };
const char* verdict_name(VerdictKind kind);  // "engine-candidate", "pytorch-candidate", "undecided"

struct Verdict {
  VerdictKind kind = VerdictKind::kUndecided;
  std::string reason;
  // Only PyTorch candidates enter the findings.
  bool enters_findings() const { return kind == VerdictKind::kPyTorchCandidate; }
};

Verdict decide(const VerdictInput& input, const VerdictTolerances& tolerances = {});

}  // namespace ag::proptests
