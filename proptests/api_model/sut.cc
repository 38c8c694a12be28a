#include "proptests/api_model/sut.h"

#include <rapidcheck.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <thread>

#include "engine/error.h"

namespace ag::proptests {

bool close(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  // An infinity only equals itself (inf - inf is NaN, and inf - x is within 1e-8 of inf).
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::abs(a - b) <= 1e-8 * std::max({1.0, std::abs(a), std::abs(b)});
}

HookValue hook_value(const Tensor& t) {
  return t.defined() ? HookValue{true, t.to_vector()} : HookValue{};
}

std::vector<HookValue> hook_values(const TensorList& ts) {
  std::vector<HookValue> out;
  for (const Tensor& t : ts) out.push_back(hook_value(t));
  return out;
}

Sut::~Sut() {
  while (!saved_hooks.empty()) saved_hooks.pop_back();  // innermost first, as scopes close
  for (auto& [name, t] : tensors) {
    if (t.defined()) t.set_grad(Tensor());
  }
}

Tensor& Sut::tensor_of(const Model& m, int impl) {
  for (const auto& [name, i] : m.handles()) {
    if (i == impl) return tensors.at(name);
  }
  throw std::logic_error("tensor_of: no name is bound to this impl");
}

namespace {

std::string label(int name) { return "t" + std::to_string(name); }

void check_tensor(const std::string& what, const Tensor& t, const Model& m, int impl,
                  const std::string& after, std::map<int, int64_t>& offsets) {
  auto fail = [&](const std::string& msg) { RC_FAIL(what + ": " + msg + "\n  after: " + after); };
  if (!t.defined()) fail("undefined, but the model has a tensor");
  const ImplState& s = m.impl(impl);
  if (Dims(t.shape().begin(), t.shape().end()) != s.shape) {
    fail("shape " + dims_str(Dims(t.shape().begin(), t.shape().end())) + ", model " +
         dims_str(s.shape));
  }
  if (t.dtype() != DType::kFloat64) fail("dtype is not float64");
  const std::vector<double> got = t.to_vector();
  const std::vector<double>& want = m.values_of(impl);
  for (size_t k = 0; k < want.size(); ++k) {
    if (!close(got[k], want[k])) {
      std::ostringstream os;
      os.precision(17);
      os << "element " << k << " is " << got[k] << ", model " << want[k];
      fail(os.str());
    }
  }
  if (t.requires_grad() != m.requires_grad(impl)) {
    fail(std::string("requires_grad is ") + (t.requires_grad() ? "true" : "false") + ", model " +
         (m.requires_grad(impl) ? "true" : "false"));
  }
  if (t.retains_grad() != s.retains_grad) {
    fail(std::string("retains_grad is ") + (t.retains_grad() ? "true" : "false") + ", model " +
         (s.retains_grad ? "true" : "false"));
  }
  if (m.unreadable(impl)) {  // Note [Model view kinds]: reading its grad_fn raises
    bool raised = false;
    try {
      (void)t.is_leaf();
    } catch (const Error&) {
      raised = true;
    }
    if (!raised) fail("is_leaf was read; the model says reading its grad_fn raises");
  } else if (t.is_leaf() != m.is_leaf(impl)) {
    fail(std::string("is_leaf is ") + (t.is_leaf() ? "true" : "false") + ", model " +
         (m.is_leaf(impl) ? "true" : "false"));
  }
  int64_t offset = 0;
  if (!m.version_from_zero(impl)) {
    offset = offsets.emplace(s.storage, int64_t{t.version()} - m.version_of(impl)).first->second;
  }
  if (int64_t{t.version()} != m.version_of(impl) + offset) {
    fail("version " + std::to_string(t.version()) + ", model " +
         std::to_string(m.version_of(impl) + offset));
  }
}

// Engine identity (storage or tensor object) must be the same relation as the model's.
class SameRelation {
 public:
  SameRelation(const char* what, const std::string& after) : what_(what), after_(after) {}
  void add(const std::string& who, const void* engine, int model) {
    auto e = by_engine_.find(engine);
    if (e != by_engine_.end() && e->second.first != model) {
      RC_FAIL(who + " and " + e->second.second + " share " + what_ +
              " in the engine; the model says they must not\n  after: " + after_);
    }
    auto mm = by_model_.find(model);
    if (mm != by_model_.end() && mm->second.first != engine) {
      RC_FAIL(who + " and " + mm->second.second + " must share " + what_ +
              " (model); in the engine they do not\n  after: " + after_);
    }
    by_engine_.emplace(engine, std::make_pair(model, who));
    by_model_.emplace(model, std::make_pair(engine, who));
  }

 private:
  const char* what_;
  const std::string& after_;
  std::map<const void*, std::pair<int, std::string>> by_engine_;
  std::map<int, std::pair<const void*, std::string>> by_model_;
};

}  // namespace

namespace {

// Note [Model dual levels]: inside a level, the tensor's tangent (None or values) is the model's.
void check_tangent(const std::string& what, const Tensor& t, const Model& m, int impl,
                   const std::string& after) {
  const ImplState& s = m.impl(impl);
  if (!m.dual_live() || s.tangent_kind == Tangent::kUnknown) return;
  const HookValue got = hook_value(forward_ad::tangent(t, 0));
  const bool want = s.tangent_kind == Tangent::kKnown;
  if (got.defined != want) {
    RC_FAIL(what + (got.defined ? " has a tangent" : " has no tangent") +
            "; the model says the opposite\n  after: " + after);
  }
  if (!want) return;
  if (got.grad.size() != s.tangent.size()) {
    RC_FAIL(what + ": the tangent has " + std::to_string(got.grad.size()) + " elements, model " +
            std::to_string(s.tangent.size()) + "\n  after: " + after);
  }
  for (size_t i = 0; i < s.tangent.size(); ++i) {
    if (!close(got.grad[i], s.tangent[i])) {
      RC_FAIL(what + ": tangent element " + std::to_string(i) + " is " +
              std::to_string(got.grad[i]) + ", model " + std::to_string(s.tangent[i]) +
              "\n  after: " + after);
    }
  }
}

}  // namespace

namespace {

// Note [Model saved-tensor hooks]: how often each scope's pack ran.
void check_pack_calls(const Model& m, const Sut& sut, const std::string& after) {
  const std::vector<SavedHooksScope>& scopes = m.saved_hooks();
  for (size_t id = 0; id < scopes.size(); ++id) {
    const int got = *sut.pack_calls.at(static_cast<int>(id));
    if (got != scopes[id].packs) {
      RC_FAIL("saved-tensor hooks s" + std::to_string(id) + ": pack ran " + std::to_string(got) +
              " times, the model says " + std::to_string(scopes[id].packs) + "\n  after: " + after);
    }
  }
}

}  // namespace

void Sut::check(const Model& m, const std::string& after) {
  check_pack_calls(m, *this, after);
  SameRelation storage("storage", after), object("the tensor object", after);
  for (const auto& [name, impl] : m.handles()) {
    const ImplState& s = m.impl(impl);
    if (s.dead) continue;
    const Tensor& t = tensors.at(name);
    check_tensor(label(name), t, m, impl, after, version_offsets);
    check_tangent(label(name), t, m, impl, after);
    storage.add(label(name), t.impl()->storage.get(), s.storage);
    object.add(label(name), t.impl().get(), impl);
    const Tensor g = t.grad();
    if (s.grad < 0) {
      if (g.defined())
        RC_FAIL(label(name) + ".grad is defined; the model says None\n  after: " + after);
      continue;
    }
    if (!g.defined())
      RC_FAIL(label(name) + ".grad is None; the model has a gradient\n  after: " + after);
    if (m.impl(s.grad).dead) continue;
    check_tensor(label(name) + ".grad", g, m, s.grad, after, version_offsets);
    check_tangent(label(name) + ".grad", g, m, s.grad, after);
    storage.add(label(name) + ".grad", g.impl()->storage.get(), m.impl(s.grad).storage);
    object.add(label(name) + ".grad", g.impl().get(), s.grad);
  }
}

namespace {

// A thread that looks once a second whether the armed command has run past its deadline
// (polling: waking it on every command would cost more than the commands).
struct Watchdog {
  std::mutex mutex;
  const Sut* sut = nullptr;
  std::chrono::steady_clock::time_point deadline;

  Watchdog() {
    std::thread([this] { loop(); }).detach();
  }
  void loop() {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      std::lock_guard<std::mutex> lock(mutex);
      if (sut == nullptr || std::chrono::steady_clock::now() < deadline) continue;
      std::fprintf(stderr, "\nThe engine hangs in the last of these calls:\n");
      for (const std::string& line : sut->shown) std::fprintf(stderr, "  %s\n", line.c_str());
      std::fflush(stderr);
      std::_Exit(1);
    }
  }
};

Watchdog& watchdog() {
  static Watchdog* w = new Watchdog();  // never destroyed: its thread outlives main
  return *w;
}

}  // namespace

HangGuard::HangGuard(const Sut& sut, double seconds) {
  Watchdog& w = watchdog();
  std::lock_guard<std::mutex> lock(w.mutex);
  w.sut = &sut;
  w.deadline = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(seconds));
}

HangGuard::~HangGuard() {
  Watchdog& w = watchdog();
  std::lock_guard<std::mutex> lock(w.mutex);
  w.sut = nullptr;
}

}  // namespace ag::proptests
