#pragma once

// What running a conformance program produces: one line per observation, in a fixed order, the
// same for every engine (this engine: engine_runner.cc; PyTorch: torch_runtime.py):
//
//   s4 ok                                   statement 4 ran (else "raise", or "skip" when it
//                                           reads a value that is missing)
//   s4 raise freed                          it raised because saved tensors were freed ("freed")
//                                           or modified in place ("version"); "raise": other
//   s4 v7 [2,3] rg=1 leaf=0 = 0.5 -1 ...    a result (or an in-place target) after the statement:
//                                           shape, requires_grad, is_leaf, values ("none": absent)
//   s4 v8 [2,3] rg=1 leaf=0 same=v7 = ...   ... that is the very tensor value 7 names (identity,
//                                           not a copy or a view: as Python's `is`)
//   s4 flags v3 rg=1 leaf=0                 requires_grad/is_leaf of a value aliasing the target
//   s4 grad v0 [2,3] rg=0 leaf=1 = ...      a value's .grad ("none": no .grad)
//   s4 fire h2 [2,3] = 0.5 ...              hook 2 fired during statement 4, handed these values
//   s4 fire h3 none | [2] = 1 1 / [2] = ..  ("none": None; a node hook's slots joined by " | ",
//                                           a post-hook's grad_inputs / grad_outputs), in firing
//                                           order, right after "s4 ok" (Note [Conformance hooks])
//   s4 needs s2 [1,0]                       a custom Function (created by statement 2) ran its
//                                           backward during statement 4 and got needs 1, 0
//   end v3 rg=1 leaf=0 d=1.25 a=2.5 n=6     every value at the end of the program: flags and a
//   end v3 grad d=0.5 a=0.5 n=6             digest of its values and of its .grad (below; the
//                                           .grad's records say same=vK too)
//
// A statement that raises or is skipped has no further lines. The `needs` lines of one statement
// are sorted (engines may run independent nodes in another order).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ag::proptests {

// " freed", " version" or "" for an error message (the same words in both engines).
std::string error_kind(const std::string& message);

struct Records {
  std::vector<std::string> lines;
  std::string text() const;
  static Records parse(const std::string& text);
};

// A result's record "s4 v7 [3] rg=0 leaf=1 = 0.5 -1": statement 4, value 7, {0.5, -1}. Nothing
// for another line, or one with no values ("none", no " = ").
struct ValueLine {
  size_t stmt = 0;
  int value = -1;
  std::vector<double> values;
};
std::optional<ValueLine> parse_value_line(const std::string& line);

// Digest of a tensor's values (row-major): d = sum x_i w_i and a = sum |x_i| w_i, with
// w_i = 1 + frac(i * 0.618...) so that a swap or a change of any element changes d. Summed in
// order, without fused multiply-adds, so an engine with the same values gets the same bits.
// n, the number of values, bounds what elements within the tolerance can move d.
struct Digest {
  double d = 0, a = 0;
  int64_t n = 0;
};
Digest digest(const std::vector<double>& values);

// Numbers agree when bitwise equal (NaN equals NaN) or within this tolerance (DEVIATIONS.md,
// "Float tolerance"): |x - y| <= atol + rtol * max(|x|, |y|). A digest `d` of n values agrees
// when within 2 n atol + rtol * a: what n values that each agree can move it (w_i < 2).
struct Tolerance {
  double rtol = 1e-12;
  // The programs compute with values of order 1 (leaves in [-1, 1]); a result that cancels them
  // carries their rounding, a few ulps of 1 per term summed (a sum_to of nine log_softmax
  // gradients that cancel to 1e-15 differs by 1.1e-15 between the engines). 1e-14 is about 45
  // ulps of 1.
  double atol = 1e-14;
};

// Counts over the numbers of the lines compared so far.
struct NumberStats {
  int64_t numbers = 0;   // numbers compared
  int64_t bitwise = 0;   // ... of which bitwise equal
  double max_error = 0;  // largest |x - y| / (atol + rtol * scale) seen
};

// Whether two record lines agree: the same tokens, numbers within the tolerance.
bool lines_agree(const std::string& expected, const std::string& actual, const Tolerance& tolerance,
                 NumberStats& stats);

}  // namespace ag::proptests
