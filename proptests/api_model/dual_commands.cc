// Forward mode (Note [Model dual levels], model.h): entering and exiting a dual level,
// make_dual with a fresh tangent, unpack_dual observing the tangent.
#include "engine/forward_ad.h"
#include "ops/ops.h"
#include "proptests/api_model/command_gens.h"
#include "proptests/api_model/command_util.h"

namespace ag::proptests {
namespace {

Shape to_engine_shape(const Dims& d) { return Shape(d.begin(), d.end()); }

class EnterDualLevel final : public ApiCommand {
 public:
  void checkPreconditions(const Model& m) const override {
    RC_PRE(!m.dual_live());
    // Tangents are computed by recorded ops, whose saves a saved-tensor hook would pack: no
    // level inside a scope (Note [Model saved-tensor hooks]).
    RC_PRE(m.innermost_saved_hooks() < 0);
  }
  Outcome step(Model& m) const override { return m.enter_dual_level(); }
  void exec(Sut& sut, const Model&) const override {
    sut.dual_level = std::make_unique<DualLevel>();
  }
  std::string text() const override { return "fwAD.enter_dual_level()"; }
};

class ExitDualLevel final : public ApiCommand {
 public:
  void checkPreconditions(const Model& m) const override { RC_PRE(m.dual_live()); }
  Outcome step(Model& m) const override { return m.exit_dual_level(); }
  void exec(Sut& sut, const Model&) const override { sut.dual_level.reset(); }
  std::string text() const override { return "fwAD.exit_dual_level()"; }
};

class MakeDual final : public ApiCommand {
 public:
  MakeDual(int name, int of, Dims shape, std::vector<double> tangent)
      : name_(name), of_(of), shape_(std::move(shape)), tangent_(std::move(tangent)) {}
  void checkPreconditions(const Model& m) const override {
    RC_PRE(fresh(m, name_));
    RC_PRE(m.has(of_));
    RC_PRE(m.tangent_kind(of_) != Tangent::kUnknown);
    RC_PRE(!m.unreadable(m.impl_of(of_)) && !m.edgeless(m.impl_of(of_)));
  }
  Outcome step(Model& m) const override { return m.make_dual(name_, of_, shape_, tangent_); }
  void exec(Sut& sut, const Model&) const override {
    const Tensor tangent = ops::from_vector(tangent_, to_engine_shape(shape_), DType::kFloat64);
    sut.tensors[name_] = ag::make_dual(sut.tensors.at(of_), tangent);
  }
  std::string text() const override {
    std::string v = "[";
    for (size_t i = 0; i < tangent_.size(); ++i) v += (i ? ", " : "") + num(tangent_[i]);
    return tname(name_) + " = fwAD.make_dual(" + tname(of_) + ", tan(" + dims_py(shape_) + ", " +
           v + "]))";
  }

 private:
  int name_, of_;
  Dims shape_;
  std::vector<double> tangent_;
};

class UnpackDual final : public ApiCommand {
 public:
  explicit UnpackDual(int of) : of_(of) {}
  void checkPreconditions(const Model& m) const override {
    RC_PRE(m.has(of_));
    RC_PRE(m.tangent_kind(of_) != Tangent::kUnknown);
    RC_PRE(!m.unreadable(m.impl_of(of_)) && !m.edgeless(m.impl_of(of_)));
  }
  Outcome step(Model& m) const override { return m.unpack_dual(of_); }
  void exec(Sut& sut, const Model&) const override {
    sut.returned = {ag::unpack_dual(sut.tensors.at(of_)).tangent};
  }
  void verify(const Outcome& expected, const Sut& sut) const override {
    if (!expected.tangent_checked) return;
    const HookValue got = hook_value(sut.returned.at(0));
    const std::string call = text();
    if (got.defined != expected.tangent.defined) {
      RC_FAIL(std::string("the tangent is ") + (got.defined ? "a tensor" : "None") +
              "; the model says the opposite\n  in: " + call);
    }
    const std::vector<double>& want = expected.tangent.grad;
    if (got.grad.size() != want.size()) {
      RC_FAIL("the tangent has " + std::to_string(got.grad.size()) + " elements, model " +
              std::to_string(want.size()) + "\n  in: " + call);
    }
    for (size_t i = 0; i < want.size(); ++i) {
      if (!close(got.grad[i], want[i])) {
        RC_FAIL("tangent element " + std::to_string(i) + " is " + std::to_string(got.grad[i]) +
                ", model " + std::to_string(want[i]) + "\n  in: " + call);
      }
    }
  }
  std::string text() const override {
    return "tangent = fwAD.unpack_dual(" + tname(of_) + ").tangent";
  }

 private:
  int of_;
};

CommandPtr gen_make_dual(const Model& m) {
  int of = -1;
  if (*rc::gen::inRange(0, 8) == 0) {  // a tensor that has a tangent already: raises
    of = pick(m, [&](int n) { return m.tangent_kind(n) == Tangent::kKnown; });
  }
  // Often one that requires grad: a backward through the dual then reads its tangent (Note
  // [Tangents of gradients], program.h).
  if (of < 0 && *rc::gen::arbitrary<bool>()) {
    of = pick(m, [&](int n) {
      return m.tangent_kind(n) == Tangent::kNone && m.requires_grad(m.impl_of(n));
    });
  }
  if (of < 0) of = pick(m, [&](int n) { return m.tangent_kind(n) == Tangent::kNone; });
  if (of < 0) return nullptr;
  Dims shape = m.shape(of);
  if (*rc::gen::inRange(0, 10) == 0) shape.push_back(1);  // the wrong shape: raises
  std::vector<double> tangent;
  for (int64_t i = 0; i < count(shape); ++i) tangent.push_back(*rc::gen::inRange(-16, 17) / 8.0);
  return std::make_shared<MakeDual>(m.next_name(), of, std::move(shape), std::move(tangent));
}

CommandPtr gen_unpack_dual(const Model& m) {
  int of = -1;
  if (*rc::gen::inRange(0, 3) != 0) {  // mostly one that has a tangent
    of = pick(m, [&](int n) { return m.tangent_kind(n) == Tangent::kKnown; });
  }
  if (of < 0) of = pick(m, [&](int n) { return m.tangent_kind(n) != Tangent::kUnknown; });
  if (of < 0) return nullptr;
  return std::make_shared<UnpackDual>(of);
}

}  // namespace

CommandPtr make_dual_call(const Model& m) {
  if (!m.dual_live()) {
    switch (*rc::gen::inRange(0, 10)) {
      case 0:
        return gen_unpack_dual(m);  // None outside a level
      case 1:
        return gen_make_dual(m);  // raises outside a level
      default:
        if (m.innermost_saved_hooks() >= 0) return nullptr;
        return std::make_shared<EnterDualLevel>();
    }
  }
  // More make_dual while no dual requires grad: a backward through one is forward over reverse.
  bool dual_rg = false;
  for (int n : m.names()) {
    dual_rg = dual_rg || (m.tangent_kind(n) == Tangent::kKnown && m.requires_grad(m.impl_of(n)));
  }
  switch (*rc::gen::weightedElement<int>({{1, 0}, {dual_rg ? 4 : 12, 1}, {5, 2}, {5, 3}})) {
    case 0:
      return std::make_shared<ExitDualLevel>();
    case 1:
      return gen_make_dual(m);
    case 3:
      return make_inplace_reaching_tangents(m);
    default:
      return gen_unpack_dual(m);
  }
}

}  // namespace ag::proptests
