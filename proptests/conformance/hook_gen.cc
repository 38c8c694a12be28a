#include "proptests/conformance/hook_gen.h"

namespace ag::proptests {
namespace {

enum class HookFamily { kTensor, kPre, kPost, kPostAccumulate, kRemove, kRetainGrad };

struct HookWeight {
  HookFamily family;
  int weight;
  const char* name;
};

const HookWeight kHookFamilies[] = {
    {HookFamily::kTensor, 40, "tensor hook"},
    {HookFamily::kPre, 12, "node pre-hook"},
    {HookFamily::kPost, 12, "node post-hook"},
    {HookFamily::kPostAccumulate, 10, "post-accumulate-grad hook"},
    {HookFamily::kRemove, 14, "hook removed"},
    {HookFamily::kRetainGrad, 12, "retain_grad"},
};

const HookWeight& family_of(const HookMove& m) {
  int total = 0;
  for (const HookWeight& w : kHookFamilies) total += w.weight;
  int pick = m.kind % total;
  for (const HookWeight& w : kHookFamilies) {
    if (pick < w.weight) return w;
    pick -= w.weight;
  }
  return kHookFamilies[0];
}

// The factors a tensor hook scales its gradient by; 1 returns None (the gradient as it is).
constexpr double kScales[] = {1.0, 1.0, 0.5, -2.0};

template <typename T>
rc::Gen<T> full_size(rc::Gen<T> g) {
  return rc::gen::resize(100, std::move(g));
}

}  // namespace

rc::Gen<std::vector<HookMove>> hook_moves_gen() {
  const auto move = rc::gen::exec([] {
    HookMove m;
    m.at = *full_size(rc::gen::inRange(0, 64));
    m.kind = *full_size(rc::gen::inRange(0, 1000));
    m.a = *full_size(rc::gen::inRange(0, 64));
    m.param = *full_size(rc::gen::inRange(0, 64));
    return m;
  });
  return rc::gen::exec([move] {
    const int n = *full_size(rc::gen::inRange(1, 7));
    return *rc::gen::container<std::vector<HookMove>>(static_cast<size_t>(n), move);
  });
}

void add_hooks(ConformanceProgram& p, const std::vector<HookMove>& moves) {
  int next_hook = 0;
  for (const HookMove& m : moves) {
    // Three in four go just before a grad()/backward() call (the one `at` picks), so that they
    // may fire; the rest anywhere.
    std::vector<int> calls;
    for (size_t i = 0; i < p.stmts.size(); ++i) {
      const StmtKind k = p.stmts[i].kind;
      if (k == StmtKind::kGrad || k == StmtKind::kBackward) calls.push_back(static_cast<int>(i));
    }
    const int at = !calls.empty() && m.at % 4 != 0
                       ? calls[static_cast<size_t>(m.at / 4) % calls.size()]
                       : m.at % (static_cast<int>(p.stmts.size()) + 1);
    std::vector<int> values, hooks;  // made, and registered, before `at`
    for (int i = 0; i < at; ++i) {
      const Stmt& s = p.stmts[i];
      values.insert(values.end(), s.results.begin(), s.results.end());
      if (s.kind == StmtKind::kHook) hooks.push_back(s.hook);
    }
    Stmt s;
    const HookFamily family = family_of(m).family;
    if (family == HookFamily::kRemove) {
      if (hooks.empty()) continue;
      s.kind = StmtKind::kRemoveHook;
      s.hook = hooks[static_cast<size_t>(m.a) % hooks.size()];
      p.stmts.insert(p.stmts.begin() + at, s);
      // Twice: the second is a no-op.
      if (m.param % 4 == 0) p.stmts.insert(p.stmts.begin() + at + 1, s);
      continue;
    }
    if (values.empty()) continue;
    s.args = {values[static_cast<size_t>(m.a) % values.size()]};
    if (family == HookFamily::kRetainGrad) {
      s.kind = StmtKind::kRetainGrad;
    } else {
      s.kind = StmtKind::kHook;
      s.hook = next_hook++;
      const HookKind kinds[] = {HookKind::kTensor, HookKind::kPre, HookKind::kPost,
                                HookKind::kPostAccumulate};
      s.hook_kind = kinds[static_cast<int>(family)];
      if (family == HookFamily::kTensor) s.scale = kScales[m.param % 4];
    }
    p.stmts.insert(p.stmts.begin() + at, s);
  }
}

const char* hook_move_name(const HookMove& move) { return family_of(move).name; }

}  // namespace ag::proptests
