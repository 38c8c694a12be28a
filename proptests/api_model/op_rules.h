#pragma once

// What each op's backward keeps and uses, as PyTorch's derivatives.yaml states it (and the
// engine's specs in ops/ follow): which values are saved, which input's formula reads each one,
// and which formulas are constant (their gradient has no history even under create_graph).
// These decide three things the API model predicts: which in-place writes make a later backward
// raise (a saved value changed), what a backward without retain_graph frees, and which
// create_graph gradients require grad.

#include <cstdint>
#include <vector>

#include "proptests/api_model/program.h"

namespace ag::proptests {

enum : int { kFromResult = -1, kSelfBefore = -2 };

struct SlotRule {
  int source;        // an input index, kFromResult, or kSelfBefore (an in-place op's old self)
  uint32_t used_by;  // bit i: input i's formula uses it
};

struct OpRules {
  std::vector<SlotRule> slots;
  uint32_t constant_formulas = 0;  // bit i: input i's gradient is a constant (zeros)
  bool unpack_all = false;         // custom Functions: saved_tensors() unpacks every slot
};

OpRules op_rules(OpKind kind, const OpAttrs& attrs);

}  // namespace ag::proptests
