#include "proptests/conformance/engine_runner.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/forward_ad.h"
#include "engine/grad_mode.h"
#include "engine/node.h"
#include "engine/removable_handle.h"
#include "ops/ops.h"
#include "proptests/conformance/custom_functions.h"
#include "proptests/conformance/text.h"
#include "proptests/conformance/transform_runner.h"

namespace ag::proptests {
namespace {

// "rg=R leaf=L", or "unreadable" for a view made under no_grad whose base was written since (its
// is_leaf raises, as in PyTorch; torch_runtime.py's _flags).
std::string rg_leaf(const Tensor& t) {
  try {
    return std::string("rg=") + (t.requires_grad() ? "1" : "0") +
           " leaf=" + (t.is_leaf() ? "1" : "0");
  } catch (const Error&) {
    return "unreadable";
  }
}

std::string flags(const Tensor& t) {
  const std::string f = rg_leaf(t);
  return f == "unreadable"
             ? f
             : format_shape(std::vector<int64_t>(t.shape().begin(), t.shape().end())) + " " + f;
}

std::string values_text(const Tensor& t) {
  std::string s = " =";
  for (double x : t.to_vector()) s += " " + format_double(x);
  return s;
}

// A gradient a hook is handed, in its firing record: "[2,3] = ..." or "none" (records.h).
std::string handed_text(const Tensor& t) {
  return t.defined() ? format_shape(std::vector<int64_t>(t.shape().begin(), t.shape().end())) +
                           values_text(t)
                     : "none";
}

std::string handed_text(const TensorList& ts) {
  std::string s;
  for (const Tensor& t : ts) s += (s.empty() ? "" : " | ") + handed_text(t);
  return s.empty() ? "empty" : s;
}

// The firings of the program's hooks during one statement, in order (Note [Conformance hooks]).
struct FiringLog {
  std::mutex mutex;
  std::vector<std::string> lines;  // "fire hK ...", without the statement's id
  void add(int hook, const std::string& handed) {
    std::lock_guard<std::mutex> lock(mutex);
    lines.push_back("fire h" + std::to_string(hook) + " " + handed);
  }
  std::vector<std::string> take() {
    std::lock_guard<std::mutex> lock(mutex);
    return std::exchange(lines, {});
  }
};

std::string digest_text(const Tensor& t) {
  const Digest g = digest(t.to_vector());
  return "d=" + format_double(g.d) + " a=" + format_double(g.a) + " n=" + std::to_string(g.n);
}

}  // namespace

TensorList run_view_op(const Stmt& s, const Tensor& a) {
  const auto& i = s.ints;
  switch (s.view_op) {
    case ViewOp::kSelect:
      return {ops::select(a, i.at(0), i.at(1))};
    case ViewOp::kSlice:
      return {ops::slice(a, i.at(0), i.at(1), i.at(2), i.at(3))};
    case ViewOp::kNarrow:
      return {ops::narrow(a, i.at(0), i.at(1), i.at(2))};
    case ViewOp::kPermute:
      return {ops::permute(a, std::vector<int64_t>(s.shape.begin(), s.shape.end()))};
    case ViewOp::kT:
      return {ops::t(a)};
    case ViewOp::kExpand:
      return {ops::expand(a, s.shape)};
    case ViewOp::kUnsqueeze:
      return {ops::unsqueeze(a, i.at(0))};
    case ViewOp::kSqueeze:
      return {i.empty() ? ops::squeeze(a) : ops::squeeze(a, i[0])};
    case ViewOp::kDiagonal:
      return {ops::diagonal(a, i.at(0), i.at(1), i.at(2))};
    case ViewOp::kUnfold:
      return {ops::unfold(a, i.at(0), i.at(1), i.at(2))};
    case ViewOp::kAsStrided:
      return {ops::as_strided(a, s.shape, s.strides, i.at(0))};
    case ViewOp::kAlias:
      return {ops::alias(a)};
    case ViewOp::kSplit:
      return ops::split(a, i.at(0), i.at(1));
    case ViewOp::kChunk:
      return ops::chunk(a, i.at(0), i.at(1));
    case ViewOp::kUnbind:
      return ops::unbind(a, i.at(0));
    case ViewOp::kContiguous:
      return {ops::contiguous(a)};
  }
  return {};
}

namespace {

class Runner {
 public:
  Runner(const ConformanceProgram& p, bool explain)
      : program_(p), explain_(explain), values_(p.num_values) {}

  Records run() {
    needs_log().clear();
    for (size_t i = 0; i < program_.stmts.size(); ++i) run_stmt(static_cast<int>(i));
    for (size_t v = 0; v < values_.size(); ++v) record_end(static_cast<int>(v));
    // A program may make a reference cycle through .grad itself (x.grad = x.view(...), or
    // x.grad.grad = x), which PyTorch leaks as well: no garbage collector sees tensors. Dropping
    // every .grad once the records are taken frees it, so LeakSanitizer reports only the
    // engine's own leaks.
    for (Tensor& t : values_) {
      if (t.defined()) t.set_grad(Tensor());
    }
    // Likewise a leaf and its AccumulateGrad keep each other while it has post-accumulate-grad
    // hooks (engine/hooks.h, NodeHooks::Table::leaf).
    for (const auto& [hook, handle] : handles_) handle.remove();
    // A level still live ends with the program (torch_runtime.py exits it likewise).
    while (!levels_.empty()) levels_.pop_back();
    return std::move(records_);
  }

 private:
  void add(const std::string& line) { records_.lines.push_back(line); }

  void run_stmt(int i) {
    const Stmt& s = program_.stmts[i];
    const std::string id = "s" + std::to_string(i);
    for (int r : reads(s)) {
      if (!values_.at(r).defined()) {
        add(id + " skip");
        return;
      }
    }
    try {
      execute(s, i);
    } catch (const Error& e) {
      needs_log().clear();
      firings_->take();
      add(id + " raise" + error_kind(e.what()) + (explain_ ? std::string(" # ") + e.what() : ""));
      return;
    } catch (const std::exception& e) {
      needs_log().clear();
      firings_->take();
      add(id + " crash " + e.what());
      return;
    }
    add(id + " ok");
    for (const std::string& fire : firings_->take()) add(id + " " + fire);
    for (int r : s.results) {
      add(id + " v" + std::to_string(r) + " " + state(values_[r], r, records_values(s)));
    }
    if (records_target(s)) {
      add(id + " v" + std::to_string(s.args[0]) + " " + state(values_[s.args[0]], s.args[0], true));
    }
    for (int v : s.record_flags) {
      add(id + " flags v" + std::to_string(v) + " " +
          (values_[v].defined() ? flags(values_[v]) : "none"));
    }
    for (int v : s.record_grads) {
      add(id + " grad v" + std::to_string(v) + " " +
          state(values_[v].defined() ? values_[v].grad() : Tensor(), -1, true));
    }
    std::vector<std::string> needs;
    for (const NeedsEvent& e : needs_log()) {
      std::string flags;
      for (bool b : e.needs) flags += std::string(flags.empty() ? "" : ",") + (b ? "1" : "0");
      needs.push_back(id + " needs s" + std::to_string(e.stmt) + " [" + flags + "]");
    }
    needs_log().clear();
    std::sort(needs.begin(), needs.end());
    for (const std::string& l : needs) add(l);
  }

  void record_end(int v) {
    const std::string id = "end v" + std::to_string(v);
    const Tensor& t = values_[v];
    if (!t.defined()) {
      add(id + " none");
      return;
    }
    const std::string f = rg_leaf(t);
    add(id + " " + (f == "unreadable" ? f : f + " " + digest_text(t)));
    const Tensor g = t.grad();
    add(id + " grad " + (g.defined() ? same_as(g, -1) + digest_text(g) : "none"));
  }

  // "same=vK " when `t` is the very tensor (not a copy, not a view) that value K names, K the
  // smallest such id other than `self`; else "".
  std::string same_as(const Tensor& t, int self) const {
    for (size_t k = 0; k < values_.size(); ++k) {
      if (values_[k].defined() && values_[k].is_same(t)) {
        return static_cast<int>(k) == self ? "" : "same=v" + std::to_string(k) + " ";
      }
    }
    return "";
  }

  // A result's or .grad's record: shape, flags, identity, values.
  std::string state(const Tensor& t, int self, bool values) const {
    if (!t.defined()) return "none";
    std::string s = flags(t);
    if (s == "unreadable") return s;
    const std::string same = same_as(t, self);
    if (!same.empty()) s += " " + same.substr(0, same.size() - 1);
    return values ? s + values_text(t) : s;
  }

  TensorList gather(const std::vector<int>& ids) const {
    TensorList out;
    for (int v : ids) out.push_back(v < 0 ? Tensor() : values_[v]);
    return out;
  }

  void execute(const Stmt& s, int index) {
    const TensorList args = gather(s.args);
    auto set_results = [&](const TensorList& ts) {
      for (size_t k = 0; k < s.results.size(); ++k) values_[s.results[k]] = ts.at(k);
    };
    switch (s.kind) {
      case StmtKind::kLeaf:
        set_results(
            {ops::uniform(s.shape, -1.0, 1.0, s.seed, DType::kFloat64).set_requires_grad(s.flag)});
        return;
      case StmtKind::kOp:
        set_results({proptests::run_instr(s.instr, gather(s.instr.args))});
        return;
      case StmtKind::kView:
        set_results({ops::view(args[0], s.shape)});
        return;
      case StmtKind::kViewOp: {
        std::optional<NoGradGuard> no_grad;
        if (s.flag) no_grad.emplace();
        const TensorList out = run_view_op(s, args[0]);
        // Python's unpacking of a split into the statement's names.
        AG_CHECK(out.size() == s.results.size(), "cannot unpack ", out.size(), " views into ",
                 s.results.size(), " names");
        set_results(out);
        return;
      }
      case StmtKind::kDetach:
        set_results({ops::detach(args[0])});
        return;
      case StmtKind::kDetachInplace:
        values_[s.args[0]].detach_();
        return;
      case StmtKind::kInplace: {
        std::optional<NoGradGuard> no_grad;
        if (s.flag) no_grad.emplace();
        Tensor& target = values_[s.args[0]];
        if (s.inplace == InplaceKind::kAdd) ops::add_(target, args[1]);
        if (s.inplace == InplaceKind::kMul) ops::mul_(target, args[1]);
        if (s.inplace == InplaceKind::kCopy) ops::copy_(target, args[1]);
        return;
      }
      case StmtKind::kSetRequiresGrad:
        values_[s.args[0]].set_requires_grad(s.flag);
        return;
      case StmtKind::kCustom:
        set_results(apply_custom(s.custom, args, index));
        return;
      case StmtKind::kGrad: {
        GradArgs g;
        g.grad_outputs(gather(s.grad_outputs))
            .create_graph(s.create_graph)
            .allow_unused(s.allow_unused);
        if (s.retain_graph >= 0) g.retain_graph(s.retain_graph == 1);  // -1: the default
        set_results(grad(gather(s.outputs), gather(s.inputs), g));
        return;
      }
      case StmtKind::kBackward: {
        BackwardArgs b;
        b.grad_tensors(gather(s.grad_outputs))
            .inputs(gather(s.inputs))
            .create_graph(s.create_graph);
        if (s.retain_graph >= 0) b.retain_graph(s.retain_graph == 1);
        backward(gather(s.outputs), b);
        return;
      }
      case StmtKind::kReadGrad:
        set_results({args[0].grad()});
        return;
      case StmtKind::kSetGrad:
        values_[s.args[0]].set_grad(args.size() > 1 ? args[1] : Tensor());
        return;
      case StmtKind::kHook:
        handles_[s.hook] = register_hook(s, args[0]);
        return;
      case StmtKind::kRemoveHook: {
        const auto it = handles_.find(s.hook);
        AG_CHECK(it != handles_.end(), "no hook h", s.hook);  // Python: a NameError
        it->second.remove();
        return;
      }
      case StmtKind::kRetainGrad:
        args[0].retain_grad();
        return;
      case StmtKind::kDualLevel:
        if (s.flag) {
          levels_.push_back(std::make_unique<DualLevel>());
        } else {
          // PyTorch: exit_dual_level() with no level live raises.
          AG_CHECK(!levels_.empty(), "no dual level to exit");
          levels_.pop_back();
        }
        return;
      case StmtKind::kMakeDual:
        set_results({make_dual(args[0], args[1])});
        return;
      case StmtKind::kUnpackDual: {
        const UnpackedDual u = unpack_dual(args[0]);
        set_results({u.primal, u.tangent});
        return;
      }
      case StmtKind::kTransform:
        set_results(run_transform(s, args));
        return;
    }
  }

  // The hook of a kHook statement, as torch_runtime.py's tensor_hook, pre_hook, post_hook and
  // post_accumulate_hook: each logs what it is handed (Note [Conformance hooks]).
  RemovableHandle register_hook(const Stmt& s, const Tensor& t) {
    const std::shared_ptr<FiringLog> log = firings_;
    const int hook = s.hook;
    switch (s.hook_kind) {
      case HookKind::kTensor: {
        const double scale = s.scale;
        return t.register_hook([log, hook, scale](const Tensor& g) {
          log->add(hook, handed_text(g));
          return scale == 1.0 || !g.defined() ? Tensor() : ops::mul(g, scale);
        });
      }
      case HookKind::kPre:
      case HookKind::kPost: {
        const std::shared_ptr<Node>& node = t.grad_fn();
        // Python: None has no register_prehook (an AttributeError).
        AG_CHECK(node != nullptr, "a leaf has no grad_fn");
        if (s.hook_kind == HookKind::kPre) {
          return node->register_prehook([log, hook](const TensorList& grad_outputs) {
            log->add(hook, handed_text(grad_outputs));
            return TensorList();
          });
        }
        return node->register_hook(
            [log, hook](const TensorList& grad_inputs, const TensorList& grad_outputs) {
              log->add(hook, handed_text(grad_inputs) + " / " + handed_text(grad_outputs));
              return TensorList();
            });
      }
      case HookKind::kPostAccumulate:
        return t.register_post_accumulate_grad_hook(
            [log, hook](const Tensor& leaf) { log->add(hook, handed_text(leaf.grad())); });
    }
    return RemovableHandle();  // not reached
  }

  const ConformanceProgram& program_;
  const bool explain_;
  TensorList values_;
  Records records_;
  std::shared_ptr<FiringLog> firings_ = std::make_shared<FiringLog>();
  std::map<int, RemovableHandle> handles_;          // hook number -> its handle
  std::vector<std::unique_ptr<DualLevel>> levels_;  // the live dual levels, innermost last
};

}  // namespace

Records run_on_engine(const ConformanceProgram& program, bool explain) {
  return Runner(program, explain).run();
}

}  // namespace ag::proptests
