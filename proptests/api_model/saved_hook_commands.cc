// Saved-tensor hooks (Note [Model saved-tensor hooks], model.h): opening a
// torch.autograd.graph.saved_tensors_hooks(pack, unpack) scope and closing the innermost one.
// Every pack counts its calls (compared after every call, Sut::check); it keeps its input or a
// clone of it; unpack gives back what pack returned, or it times a constant.
#include "ops/ops.h"
#include "proptests/api_model/command_gens.h"
#include "proptests/api_model/command_util.h"

namespace ag::proptests {
namespace {

constexpr double kUnpackScale = 2.0;  // exact in float64: gradients stay comparable

PackHook counting_pack(PackKind kind, std::shared_ptr<int> calls) {
  return [kind, calls](const Tensor& t) -> std::any {
    ++*calls;
    return kind == PackKind::kClone ? ops::clone(t) : t;
  };
}

UnpackHook scaling_unpack(double scale) {
  return [scale](const std::any& packed) {
    const Tensor& t = std::any_cast<const Tensor&>(packed);
    return scale == 1.0 ? t : ops::mul(t, scale);
  };
}

class OpenSavedHooks final : public ApiCommand {
 public:
  OpenSavedHooks(int id, PackKind pack, double scale) : id_(id), pack_(pack), scale_(scale) {}
  void checkPreconditions(const Model& m) const override {
    RC_PRE(static_cast<int>(m.saved_hooks().size()) == id_);
    RC_PRE(!m.dual_live());  // tangents are computed by recorded ops, which would pack
  }
  Outcome step(Model& m) const override { return m.open_saved_hooks(pack_, scale_); }
  void exec(Sut& sut, const Model&) const override {
    auto calls = std::make_shared<int>(0);
    sut.pack_calls[id_] = calls;
    sut.saved_hooks.push_back(
        std::make_unique<SavedTensorsHooks>(counting_pack(pack_, calls), scaling_unpack(scale_)));
  }
  std::string text() const override {
    const std::string s = "s" + std::to_string(id_);
    return s + " = saved_hooks(" + std::to_string(id_) + ", '" +
           (pack_ == PackKind::kClone ? "clone" : "keep") + "', " +
           (scale_ == 1.0 ? "None" : num(scale_)) + "); " + s + ".__enter__()";
  }

 private:
  int id_;
  PackKind pack_;
  double scale_;
};

class CloseSavedHooks final : public ApiCommand {
 public:
  explicit CloseSavedHooks(int id) : id_(id) {}
  void checkPreconditions(const Model& m) const override {
    RC_PRE(m.innermost_saved_hooks() == id_);
  }
  Outcome step(Model& m) const override { return m.close_saved_hooks(); }
  void exec(Sut& sut, const Model&) const override { sut.saved_hooks.pop_back(); }
  std::string text() const override {
    return "s" + std::to_string(id_) + ".__exit__(None, None, None)";
  }

 private:
  int id_;
};

}  // namespace

CommandPtr make_saved_hooks(const Model& m) {
  const int open = m.innermost_saved_hooks();
  // Mostly one scope at a time, now and then two nested; closing is as likely as opening.
  int depth = 0;
  for (const SavedHooksScope& s : m.saved_hooks()) depth += s.open ? 1 : 0;
  if (open >= 0 && (depth >= 2 || *rc::gen::inRange(0, 2) == 0)) {
    return std::make_shared<CloseSavedHooks>(open);
  }
  if (m.dual_live()) return nullptr;
  const PackKind pack = *rc::gen::element(PackKind::kKeep, PackKind::kClone);
  const double scale = *rc::gen::inRange(0, 3) == 0 ? kUnpackScale : 1.0;
  return std::make_shared<OpenSavedHooks>(static_cast<int>(m.saved_hooks().size()), pack, scale);
}

}  // namespace ag::proptests
