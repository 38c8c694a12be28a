#include "proptests/api_model/op_rules.h"

namespace ag::proptests {

OpRules op_rules(OpKind kind, const OpAttrs& attrs) {
  constexpr uint32_t kSelf = 1, kOther = 2;
  if (const proptests::OpTraits* t = unary_traits(kind)) {  // its row (Note [Op traits])
    switch (t->saves) {
      case proptests::Saves::kNothing:
        return {};
      case proptests::Saves::kSelf:
        return {{{0, kSelf}}};
      case proptests::Saves::kResult:
        return {{{kFromResult, kSelf}}};
    }
  }
  switch (kind) {
    // mul: self's gradient is grad * other, other's is grad * self.
    case OpKind::kMul:
    case OpKind::kMatmul:
    case OpKind::kLinear:  // input: grad @ weight; weight: grad^T @ input; bias: grad
      return {{{0, kOther}, {1, kSelf}}};
    case OpKind::kCustomMul:
    case OpKind::kCustomTwo:
      return {{{0, kOther}, {1, kSelf}}, 0, /*unpack_all=*/true};
    case OpKind::kDiv:  // self: grad / other; other: -grad * self / other^2
      return {{{0, kOther}, {1, kSelf | kOther}}};
    case OpKind::kPowScalar:  // e x^(e-1); constant zeros for e == 0
      return {{{0, kSelf}}, attrs.scalar == 0.0 ? kSelf : 0u};
    case OpKind::kMulInplace:  // other's gradient needs self's value before the write
      return {{{kSelfBefore, kOther}, {1, kSelf}}};
    case OpKind::kCopyInplace:  // the overwritten self gets zeros
      return {{}, kSelf};
    case OpKind::kInplaceOnView: {
      // CopySlices writes the op's self gradient into a copy of the incoming one: never a
      // constant, even copy_'s.
      OpRules rules = op_rules(attrs.inner, attrs);
      rules.constant_formulas &= ~kSelf;
      return rules;
    }
    case OpKind::kStridedView:  // a regenerated zero-size view passes on constant zeros
      return {{}, attrs.regenerated && count(attrs.shape) == 0 ? kSelf : 0u};
    default:
      return {};
  }
}

}  // namespace ag::proptests
