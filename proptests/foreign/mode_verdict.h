#pragma once

// Note [Mode verdicts]
// The mode check (proptests/conformance/mode_check.h, Note [PyTorch against itself]) runs one
// function through several of PyTorch's modes and compares what they say about the same
// quantities: the function's value, its gradient per input (the reverse modes), and the
// directional derivative <c, J t> (reverse modes: sum_i <g_i, t_i>; forward modes: <c, jvp>).
// PyTorch is then its own witness; this engine's answer for the quantity is a third one. The
// rules, in order:
//   1. a random op in the function                                          -> undecided
//   2. a NaN or an infinity in any answer                                   -> undecided
//   3. fewer than two of PyTorch's modes answered a quantity                -> (that one skipped)
//   4. every mode agrees with every other on every quantity                 -> consistent
//   5. a kink within the finite-difference step of the function (the caller's
//      test: a non-smooth op at a non-differentiable point)                 -> undecided
//   6. otherwise                                                            -> inconsistent
// "Agree" is Closeness (verdict.h) with the quantity's own scale for atol: a sum of many terms
// carries the rounding of each (scale = the sum of their magnitudes). An inconsistency names the
// first quantity the modes disagree on, which modes agree with the first mode, which do not, and
// which of them agree with the engine.

#include <string>
#include <vector>

#include "proptests/foreign/verdict.h"

namespace ag::proptests {

// One mode's answer for a quantity (a tensor's elements, row-major).
struct ModeAnswer {
  std::string mode;  // "torch.func.vjp", "torch.autograd.grad", ...
  std::vector<double> values;
};

struct ModeQuantity {
  std::string name;  // "value", "grad v0", "<c, J t>"
  std::vector<ModeAnswer> answers;
  IndependentAnswer engine;  // this engine's answer, the third witness
  double scale = 1;          // atol is multiplied by it
};

struct ModeCheckInput {
  std::vector<ModeQuantity> quantities;
  bool has_random_op = false;
  bool smooth = true;  // no kink within the finite-difference step
};

// The tolerance for a float32 or a float64 function: the modes may sum in other orders, fuse or
// split kernels (torch.compile).
Closeness mode_tolerance(bool float32);

enum class ModeVerdictKind { kConsistent, kInconsistent, kUndecided };
const char* mode_verdict_name(ModeVerdictKind kind);  // "consistent", "inconsistent", "undecided"

struct ModeVerdict {
  ModeVerdictKind kind = ModeVerdictKind::kUndecided;
  std::string reason;
  // kInconsistent: the first quantity they disagree on, the modes that agree with the first
  // answer and those that do not, and the modes that agree with the engine (empty: none, or no
  // engine answer).
  std::string quantity;
  std::vector<std::string> agreeing, disagreeing, agree_with_engine;
  // A finding about PyTorch: an inconsistency.
  bool enters_findings() const { return kind == ModeVerdictKind::kInconsistent; }
};

ModeVerdict decide_modes(const ModeCheckInput& input, const Closeness& tolerance);

}  // namespace ag::proptests
