#include "proptests/conformance/comparison.h"

#include <algorithm>
#include <climits>
#include <set>

#include "proptests/conformance/deviations.h"
#include "proptests/conformance/text.h"

namespace ag::proptests {
namespace {

using Tokens = std::vector<std::string>;

// "s12" -> 12; "end" -> INT_MAX (after every statement); else -1.
int stmt_of(const std::string& token) {
  if (token == "end") return INT_MAX;
  if (token.size() < 2 || token[0] != 's') return -1;
  return std::atoi(token.c_str() + 1);
}

int value_of(const std::string& token) {
  return token.size() >= 2 && token[0] == 'v' ? std::atoi(token.c_str() + 1) : -1;
}

bool has_prefix(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// What the program and the expected records so far say, for the rules below.
// An op statement whose result views its first operand's memory: reshape (a view here),
// transpose and broadcast_to (an expand), as in PyTorch.
bool op_of_the_list_that_views(const Stmt& s) {
  if (s.kind != StmtKind::kOp) return false;
  const proptests::Op op = s.instr.op;
  return op == proptests::Op::kReshape || op == proptests::Op::kTranspose ||
         op == proptests::Op::kBroadcastTo;
}

class Context {
 public:
  explicit Context(const ConformanceProgram& p) : program_(p) {
    for (size_t i = 0; i < p.stmts.size(); ++i) {
      for (int r : p.stmts[i].results) producer_[r] = static_cast<int>(i);
      if (p.stmts[i].kind == StmtKind::kHook) hooked_[p.stmts[i].hook] = p.stmts[i].args.at(0);
    }
  }

  // Takes in an expected line that was matched (or excused).
  void observe(const std::string& line) {
    const Tokens t = split(line, ' ');
    if (t.size() < 2) return;
    const int stmt = stmt_of(t[0]);
    if (stmt < 0 || stmt == INT_MAX) return;
    // "sN vK [..] rg=.. leaf=X [same=vJ] ..." and "sN flags vK [..] rg=.. leaf=X"
    const size_t v = t[1] == "flags" ? 2 : 1;
    if (v + 1 < t.size() && value_of(t[v]) >= 0) {
      const int value = value_of(t[v]);
      // An unreadable result of contiguous (a stale view, whose history PyTorch refuses to read)
      // is its input itself: a copy is a new tensor, readable, and copying a stale view raises.
      const Stmt* made = producer(value);
      if (t[v + 1] == "unreadable" && stmt < static_cast<int>(program_.stmts.size()) &&
          made == &program_.stmts[stmt] && made->kind == StmtKind::kViewOp &&
          made->view_op == ViewOp::kContiguous) {
        tensor_of_[value] = tensor(made->args[0]);
      }
      if (t[v + 1].front() == '[') {
        const std::string dims = t[v + 1].substr(1, t[v + 1].size() - 2);
        shape_[value] = dims.empty() ? Tokens{} : split(dims, ',');
      }
      for (const std::string& tok : t) {
        if (has_prefix(tok, "same=")) tensor_of_[value] = tensor(value_of(tok.substr(5)));
      }
      // Per tensor, not per value: the values a same= names are one tensor, whose newest record
      // says whether it is a leaf now (v9 = contiguous v8 is v8; a copy_ into v9 gives v8 a
      // history too).
      for (const std::string& tok : t) {
        if (has_prefix(tok, "leaf=")) is_leaf_[tensor(value)] = tok == "leaf=1";
      }
    }
    if ((t[1] != "ok" && t[1] != "raise") || stmt >= static_cast<int>(program_.stmts.size())) {
      return;
    }
    const Stmt& s = program_.stmts[stmt];
    // A backward() that was attempted: PyTorch made its non-leaf inputs retain grad, and so did
    // the engine (Note [Hooks], engine/hooks.h).
    if (s.kind == StmtKind::kBackward) {
      for (int in : s.inputs) {
        const bool interior =
            !leaf(in) || view_of_base_made_to_require_grad(in, stmt) || written_through_a_view(in);
        if (interior && !retained_since_.count(tensor(in))) retained_since_[tensor(in)] = stmt;
      }
    }
    if (t[1] == "ok" && s.kind == StmtKind::kInplace && !s.flag) {
      recorded_inplace_ = true;
      // retains-grad-moved-by-output-nr: writing a retaining non-first output of a custom
      // Function moves output 0's retains-grad hook in PyTorch, while that hook is still on the
      // Function's node (output 0 retains grad and was not written since); else PyTorch fails
      // an internal assert (pytorch-internal-error).
      const int v = tensor(s.args[0]);
      const Stmt* made = producer(v);
      if (made && made->kind == StmtKind::kCustom && made->results.size() > 1 &&
          retained_since_.count(v)) {
        const int first = tensor(made->results[0]);
        const auto retained = retained_since_.find(first);
        const auto written = written_since_.find(first);
        if (first != v && retained != retained_since_.end() &&
            (written == written_since_.end() || written->second < retained->second)) {
          moved_retains_grad_.insert(v);
          moved_retains_grad_.insert(first);
        }
      }
      written_since_[v] = stmt;
      written_values_.insert(s.args[0]);
    }
    // retain_grad() on a tensor with a history: it retains grad in both engines.
    if (s.kind == StmtKind::kRetainGrad && t[1] == "ok") {
      const int in = s.args[0];
      const bool interior =
          !leaf(in) || view_of_base_made_to_require_grad(in, stmt) || written_through_a_view(in);
      if (interior && !retained_since_.count(tensor(in))) retained_since_[tensor(in)] = stmt;
    }
    const bool call = s.kind == StmtKind::kBackward || s.kind == StmtKind::kGrad;
    // extra-executions: a call in which PyTorch may run retains-grad hooks of nodes the engine
    // does not run: a single root's node (PyTorch's graph root, always run), or nodes that reach
    // a requested sibling output (and the other slots of its node).
    if (call) {
      const bool sibling =
          std::any_of(s.inputs.begin(), s.inputs.end(), [&](int in) { return sibling_output(in); });
      for (const auto& [retained, since] : retained_since_) {
        if (sibling || (s.outputs.size() == 1 && same_node(retained, s.outputs[0]))) {
          extra_retained_grads_.insert(retained);
        }
      }
    }
    if (call && t[1] == "raise" && t.size() == 3 && t[2] == "version")
      version_raises_.push_back(stmt);
    // Both raised "freed" after PyTorch may have freed more: which nodes ran before the error,
    // and so the state after it, may differ.
    if (t[1] == "raise" && t.size() == 3 && t[2] == "freed" && extra_frees_)
      freed_after_extra_ = true;
    // A call after which PyTorch may have run (and, without retain_graph, freed) more nodes.
    if ((s.kind == StmtKind::kBackward || s.kind == StmtKind::kGrad) && s.retain_graph != 1 &&
        !(s.retain_graph < 0 && s.create_graph)) {
      for (int in : s.inputs) {
        extra_frees_ =
            extra_frees_ ||
            (t[1] == "ok" && (sibling_output(in) || (s.kind == StmtKind::kBackward && !leaf(in))));
      }
      // It raised: which nodes ran (and freed their saved values) before the error depends on
      // the order ready nodes run in, which the engine follows only for AccumulateGrad nodes.
      extra_frees_ = extra_frees_ || t[1] == "raise";
      if (!version_raised_ && t[1] == "raise" && t.size() == 3 && t[2] == "version") {
        version_raised_ = true;
        version_raised_at_ = stmt;
      }
    }
  }

  bool extra_frees() const { return extra_frees_; }
  bool freed_after_extra_frees() const { return freed_after_extra_; }
  bool recorded_inplace() const { return recorded_inplace_; }
  bool version_raised() const { return version_raised_; }
  int version_raised_at() const { return version_raised_at_; }
  // The calls that raised "version" in both, with or without retain_graph.
  const std::vector<int>& version_raises() const { return version_raises_; }
  // Whether value v retained grad (a non-leaf input of a backward() or retain_grad()) by
  // statement `stmt`.
  bool retains_grad_at(int v, int stmt) const {
    const auto it = retained_since_.find(tensor(v));
    return it != retained_since_.end() && it->second <= stmt;
  }

  const ConformanceProgram& program() const { return program_; }
  const Stmt* stmt(int index) const {
    return index >= 0 && index < static_cast<int>(program_.stmts.size()) ? &program_.stmts[index]
                                                                         : nullptr;
  }
  const Stmt* producer(int v) const {
    const auto it = producer_.find(v);
    return it == producer_.end() ? nullptr : &program_.stmts[it->second];
  }
  bool leaf(int v) const {
    const auto it = is_leaf_.find(tensor(v));
    return it == is_leaf_.end() || it->second;
  }
  int rank(int v) const {
    const auto it = shape_.find(v);
    return it == shape_.end() ? -1 : static_cast<int>(it->second.size());
  }
  // Value v's dims as recorded ("2", "3"), or none if no line showed its shape.
  const Tokens& shape(int v) const {
    static const Tokens unknown;
    const auto it = shape_.find(v);
    return it == shape_.end() ? unknown : it->second;
  }
  // The tensor whose storage value v uses: through views, reshapes and detached aliases.
  int storage_root(int v) const {
    for (const Stmt* made = producer(tensor(v)); made; made = producer(tensor(v))) {
      if (makes_views(*made) || made->kind == StmtKind::kDetach) {
        v = made->args[0];
      } else if (op_of_the_list_that_views(*made)) {
        v = made->instr.args[0];
      } else {
        break;
      }
    }
    return tensor(v);
  }
  // Whether value v is a view (or reshape) of a tensor that requires_grad_(True) was called on
  // before statement `before`. PyTorch regenerates such a view's history when it is stale (its
  // storage was written since it was made), so it may have become no leaf though its last record
  // said leaf=1.
  bool view_of_base_made_to_require_grad(int v, int before) const {
    int root = tensor(v);
    for (const Stmt* made = producer(root); made; made = producer(root)) {
      const bool view = makes_views(*made) || op_of_the_list_that_views(*made);
      if (!view) break;
      root = tensor(made->kind == StmtKind::kOp ? made->instr.args[0] : made->args[0]);
    }
    if (root == tensor(v)) return false;
    for (int i = 0; i < before; ++i) {
      const Stmt& s = program_.stmts[i];
      if (s.kind == StmtKind::kSetRequiresGrad && s.flag && tensor(s.args[0]) == root) {
        return true;
      }
    }
    return false;
  }
  // Whether a recorded in-place write into a view of value v (through views and reshapes) left
  // that view with a history (leaf=0 in its last record): the write gave v's tensor one too
  // (CopySlices), though no record since showed v itself.
  bool written_through_a_view(int v) const {
    for (int w : written_values_) {
      if (leaf(w)) continue;
      int root = tensor(w);
      for (const Stmt* made = producer(root); made; made = producer(root)) {
        const bool view = makes_views(*made) || op_of_the_list_that_views(*made);
        if (!view) break;
        root = tensor(made->kind == StmtKind::kOp ? made->instr.args[0] : made->args[0]);
        if (root == tensor(v)) return true;
      }
    }
    return false;
  }
  // Whether the tensor retains grad (a non-leaf input of an earlier backward()) and PyTorch may
  // have run its retains-grad hook where the engine did not (extra-executions).
  bool extra_retained_grad(int v) const { return extra_retained_grads_.count(tensor(v)) > 0; }
  // Whether an in-place op rewrote the tensor, a retaining non-first output of a custom Function,
  // or its output 0, whose hook PyTorch moved then (retains-grad-moved-by-output-nr).
  bool retains_grad_moved(int v) const { return moved_retains_grad_.count(tensor(v)) > 0; }
  // The statement that made value v as one of several outputs of one node, or null.
  const Stmt* multi_output_producer(int v) const {
    const Stmt* s = producer(v);
    if (!s || s->results.size() < 2) return nullptr;
    const bool recorded_views = s->kind == StmtKind::kViewOp && !s->flag;
    return s->kind == StmtKind::kCustom || recorded_views ? s : nullptr;
  }
  // The smallest value id naming the same tensor as value v (records' same=).
  int tensor(int v) const {
    const auto it = tensor_of_.find(v);
    return it == tensor_of_.end() ? v : it->second;
  }
  // The value hook `hook` was registered on (its kHook statement's), or -1.
  int hooked(int hook) const {
    const auto it = hooked_.find(hook);
    return it == hooked_.end() ? -1 : it->second;
  }
  // Whether value v is one of several outputs of one node: a custom Function's, or a split,
  // chunk or unbind recorded with grad mode on (Note [Several views, one node], ops/split.cc).
  bool sibling_output(int v) const { return multi_output_producer(tensor(v)) != nullptr; }
  // Whether tensors a and b have one node: one tensor, or outputs of one such statement.
  bool same_node(int a, int b) const {
    if (tensor(a) == tensor(b)) return true;
    const Stmt* s = multi_output_producer(tensor(a));
    return s && s == producer(tensor(b));
  }

 private:
  const ConformanceProgram& program_;
  std::map<int, int> producer_;
  std::map<int, bool> is_leaf_;
  std::map<int, Tokens> shape_;
  std::map<int, int> tensor_of_;        // value -> smallest value naming the same tensor
  std::map<int, int> hooked_;           // hook number -> the value it was registered on
  std::map<int, int> retained_since_;   // tensor -> the backward() that made it retain grad
  std::set<int> extra_retained_grads_;  // retaining tensors PyTorch may have hooked alone
  std::set<int> moved_retains_grad_;    // tensors retains-grad-moved-by-output-nr befell
  std::map<int, int> written_since_;    // tensor -> its last recorded in-place write
  std::set<int> written_values_;        // the values recorded in-place ops wrote, as named
  bool extra_frees_ = false;            // PyTorch may have freed saved tensors the engine kept
  bool recorded_inplace_ = false;       // an in-place op ran with grad mode on
  bool freed_after_extra_ = false;      // a call raised "freed" in both after extra frees
  bool version_raised_ = false;         // a call without retain_graph raised "version" in both
  int version_raised_at_ = -1;          // the first such call
  std::vector<int> version_raises_;     // every call that raised "version" in both
};

enum class Excuse { kNone, kSkipExpected, kSkipActual, kSkipBoth, kStop };

// One mismatching pair of lines, for the rules.
struct Pair {
  const Context& c;
  const Tokens& e;                       // expected
  const Tokens& a;                       // actual
  const std::vector<std::string>& rest;  // the actual lines after `a`
  int index;                             // the statement (INT_MAX: end of program)
  const Stmt* s;                         // it, or null
  // The status lines "sN <expected> [kind]" and "sN <actual> [kind]".
  bool status(const char* expected, const char* actual) const {
    return e.size() >= 2 && e.size() <= 3 && a.size() >= 2 && a.size() <= 3 && e[0] == a[0] &&
           e[1] == expected && a[1] == actual;
  }
  // The kind of the expected error ("freed", "version", or "").
  std::string error() const { return e.size() == 3 && e[1] == "raise" ? e[2] : ""; }
  bool op(proptests::Op o) const { return s && s->kind == StmtKind::kOp && s->instr.op == o; }
  bool inputs_any(bool (*pred)(const Context&, int)) const {
    return s && std::any_of(s->inputs.begin(), s->inputs.end(), [&](int v) { return pred(c, v); });
  }
  // The value whose .grad an expected line records ("sN grad vK ...", "end vK grad ..."), or -1.
  int grad_line_value() const {
    if (e.size() < 3) return -1;
    if (e[1] == "grad") return value_of(e[2]);
    return e[0] == "end" && e[2] == "grad" ? value_of(e[1]) : -1;
  }
  // A result line of this statement ("sN vK ...") on both sides.
  bool result_line() const {
    return e.size() > 2 && a.size() > 2 && e[0] == a[0] && e[1] == a[1] && value_of(e[1]) >= 0;
  }
};

struct Rule {
  const char* id;
  Excuse (*apply)(const Pair&);
};

// ---- deviations --------------------------------------------------------------------------------

// PyTorch runs nodes whose gradients reach no requested tensor: the grad_fn of backward()'s
// non-leaf inputs (issue 92331) and nodes that reach only a sibling output of a requested
// tensor's node. So it logs custom Functions' backward calls that need nothing, and may raise
// where such a node cannot run (saved tensors freed or modified), then or in a later call
// (saved tensors it freed then); the states differ after that.
// And so it runs the retains-grad hooks on those nodes (Note [Hooks]): the .grad of a tensor that
// retains grad may be updated in PyTorch alone. Its .grad records are not compared then, and the
// comparison ends where the program reads such a .grad into a value.
Excuse extra_executions(const Pair& p) {
  if (p.c.freed_after_extra_frees()) return Excuse::kStop;
  if (p.s && p.s->kind == StmtKind::kReadGrad && p.result_line() &&
      p.c.extra_retained_grad(p.s->args[0])) {
    return Excuse::kStop;
  }
  const int retained = p.grad_line_value();
  if (retained >= 0 && p.a.size() >= 3 && p.a[0] == p.e[0] && p.a[1] == p.e[1] &&
      p.a[2] == p.e[2] && p.c.extra_retained_grad(retained)) {
    return Excuse::kSkipBoth;
  }
  if (!p.s || (p.s->kind != StmtKind::kGrad && p.s->kind != StmtKind::kBackward)) {
    return Excuse::kNone;
  }
  if (p.e.size() == 4 && p.e[1] == "needs" && p.e[3].find('1') == std::string::npos) {
    return Excuse::kSkipExpected;
  }
  const bool sibling = p.inputs_any([](const Context& c, int v) { return c.sibling_output(v); });
  // A hook that fired in PyTorch alone, on a node the engine does not run (Note [Conformance
  // hooks]): the single root's node (a tensor hook on the root or on another output of its node,
  // a pre- or post-hook on it, a post-accumulate-grad hook on a leaf root), or, in a call with a
  // requested sibling output, a node on a path to that output's node.
  if (p.e.size() >= 3 && p.e[1] == "fire" && p.e[2].size() > 1) {
    const int on = p.c.hooked(std::atoi(p.e[2].c_str() + 1));
    const bool root = p.s->outputs.size() == 1 && on >= 0 && p.c.same_node(on, p.s->outputs[0]);
    // The grad_fn of a non-leaf input of backward(inputs=...) (issue 92331).
    const bool input_node = p.s->kind == StmtKind::kBackward && on >= 0 &&
                            std::any_of(p.s->inputs.begin(), p.s->inputs.end(), [&](int in) {
                              return !p.c.leaf(in) && p.c.same_node(on, in);
                            });
    if (!(root || input_node || sibling)) return Excuse::kNone;
    // The engine fired the same hook there with no gradient: the one PyTorch handed it came
    // through a node the engine does not run. Both firing lines are skipped.
    const bool fired_without_gradient = p.a.size() >= 4 && p.a[0] == p.e[0] && p.a[1] == "fire" &&
                                        p.a[2] == p.e[2] && p.a[3] == "none";
    return fired_without_gradient ? Excuse::kSkipBoth : Excuse::kSkipExpected;
  }
  const bool backward_non_leaf = p.s->kind == StmtKind::kBackward &&
                                 p.inputs_any([](const Context& c, int v) { return !c.leaf(v); });
  if (p.status("raise", "ok") && (backward_non_leaf || sibling || p.c.extra_frees())) {
    return Excuse::kStop;
  }
  // Both raise, PyTorch an error of its own at a node on a path to a requested sibling output's
  // node, which it runs before the engine's later raise of the version error (GatherBackward0
  // unpacking a tensor detached in place: pin-extra-execution-raises-first).
  if (p.status("raise", "raise") && sibling && p.e.size() == 2 && p.a.size() == 3 &&
      p.a[2] == "version") {
    return Excuse::kStop;
  }
  // Both raise, PyTorch "freed" because an earlier call ran (and freed) more than the engine
  // did, or because it runs such a node now, whose saved values an earlier call freed (the
  // engine raises at a later node, or another error).
  return p.status("raise", "raise") && p.error() == "freed" &&
                 (p.c.extra_frees() || backward_non_leaf || sibling)
             ? Excuse::kStop
             : Excuse::kNone;
}

bool autograd_call(const Pair& p) {
  return p.s && (p.s->kind == StmtKind::kGrad || p.s->kind == StmtKind::kBackward);
}

// A node checks the versions of the saved tensors that this call's formulas read; PyTorch's
// nodes unpack (and check) every saved tensor whenever they run. So a tensor modified in place
// raises in PyTorch even where no requested gradient needs it. Only where the program's in-place
// ops all ran under no_grad (on leaves and their views): a recorded in-place op's own saves are
// compared (issue 15's mul_(a, a) raises in both).
// Where a recorded in-place op ran, only when some leaf is not requested (one that does not
// require grad counts: PyTorch's pow saves its result for the exponent's gradient even then):
// then some node's formulas for an unrequested input may be all that reads the modified tensor.
// Likewise PyTorch finds a freed saved tensor that no formula of this call reads (addmm's node
// run for the bias's gradient alone): that raise ends the comparison where some leaf is not
// requested.
// The tensor whose storage value v uses: through views, reshapes and detached aliases.
// Whether an in-place op before statement `before` wrote into the storage of an earlier pow's
// result. PyTorch's pow saves its result whether or not the exponent requires grad, and unpacks
// it whenever the node runs; the engine's formula for the exponent alone reads it. (Both read the
// exponent in either formula: Note [pow's gradients select] in ops/elementwise.cc.)
bool pow_saved_value_written(const Context& c, int before) {
  const auto& stmts = c.program().stmts;
  for (int i = 0; i < before; ++i) {
    if (stmts[i].kind != StmtKind::kOp || stmts[i].instr.op != proptests::Op::kPow) continue;
    const int result = c.storage_root(stmts[i].results[0]);
    for (int j = i + 1; j < before; ++j) {
      if (stmts[j].kind != StmtKind::kInplace) continue;
      if (c.storage_root(stmts[j].args[0]) == result) return true;
    }
  }
  return false;
}

// Whether, before statement `before`, a call with create_graph ran after an in-place write into
// the storage of a tensor that has views (so that a view's regenerated gradient was recorded).
// PyTorch records as_strided_backward's ops there, some of which save tensors, and a later call
// through them after a call without retain_graph raises "freed"; the engine's copied gradient
// saves nothing.
bool differentiated_regenerated_view(const Context& c, int before) {
  const auto& stmts = c.program().stmts;
  std::set<int> viewed;  // storage with a view
  bool written = false;
  for (int i = 0; i < before && i < static_cast<int>(stmts.size()); ++i) {
    const Stmt& s = stmts[i];
    if (makes_views(s)) viewed.insert(c.storage_root(s.args[0]));
    if (s.kind == StmtKind::kInplace && viewed.count(c.storage_root(s.args[0]))) written = true;
    if (written && (s.kind == StmtKind::kGrad || s.kind == StmtKind::kBackward) && s.create_graph)
      return true;
  }
  return false;
}

// Whether some leaf is not among the inputs of `call` (statement `index`): then some node's
// formulas for an unrequested input may be all that reads a modified tensor. backward() without
// inputs runs no node whose gradient reaches only leaves that stopped requiring grad (per-call
// needs: requires_grad_(False), or detach_() of a leaf or of a tensor that stands for one);
// PyTorch runs (and unpacks) every node.
bool some_leaf_unrequested(const Context& c, const Stmt& call, int index) {
  const auto& stmts = c.program().stmts;
  if (call.kind == StmtKind::kBackward && call.inputs.empty()) {
    // Or a view made under no_grad: it has no gradient edge, so a node whose gradient goes only
    // there reaches no leaf (pin-version-error-behind-a-no-grad-view).
    return std::any_of(stmts.begin(), stmts.begin() + index, [](const Stmt& s) {
      return (s.kind == StmtKind::kSetRequiresGrad && !s.flag) ||
             s.kind == StmtKind::kDetachInplace || (s.kind == StmtKind::kViewOp && s.flag);
    });
  }
  for (int i = 0; i < index; ++i) {
    if (stmts[i].kind != StmtKind::kLeaf) continue;
    const int leaf = c.tensor(stmts[i].results[0]);
    if (std::none_of(call.inputs.begin(), call.inputs.end(),
                     [&](int v) { return c.tensor(v) == leaf; })) {
      return true;
    }
  }
  return false;
}

// Whether a call raised the version error in both, where the two may have run different nodes
// before it, and could have accumulated into value v's .grad on the way: v is among the inputs of
// that backward() (a leaf, for one without inputs) or retains grad. They may where a pow's saved
// result was written (PyTorch's pow node unpacks it, the engine's, its exponent not needing a
// gradient, does not, so the engine's raise comes at a later node) or where the call has several
// roots (which branches run first follows the order ready nodes run in).
bool accumulated_before_a_raise_elsewhere(const Context& c, int v) {
  const auto& stmts = c.program().stmts;
  return std::any_of(c.version_raises().begin(), c.version_raises().end(), [&](int at) {
    const Stmt& call = stmts[at];
    const bool accumulates =
        c.retains_grad_at(v, at) ||
        (call.kind == StmtKind::kBackward &&
         (call.inputs.empty() ? c.leaf(v)
                              : std::any_of(call.inputs.begin(), call.inputs.end(),
                                            [&](int in) { return c.tensor(in) == c.tensor(v); })));
    // Or the call had several roots: which of their branches ran before the raise depends on the
    // order ready nodes run in, which the engine follows PyTorch in only for AccumulateGrad nodes.
    return accumulates && (pow_saved_value_written(c, at) || call.outputs.size() >= 2);
  });
}

// Whether PyTorch's unpack of a saved view may raise a view error where the engine's raises the
// version error (no-grad-view-saved-error), before statement `before`: SavedVariable::unpack reads
// the saved view's grad_fn before its version check, and regenerating a stale view's history
// refuses a view made under no_grad with the CreationMeta error meant for a write under grad
// mode, also where the write into its storage was not one autograd records (under no_grad, or
// into a detached alias: paper/results/foreign_findings.md F6), and a view made by split, chunk
// or unbind with the error of a write into such a view ("This view is the output of a function
// that returns multiple views"), where the write was into its base or under no_grad, both
// allowed.
bool view_error_for_version(const Context& c, int before) {
  const auto& stmts = c.program().stmts;
  std::set<int> no_grad_viewed;       // storage roots of views made under no_grad
  std::set<int> multi_output_viewed;  // ... and of views made by split, chunk or unbind
  for (int i = 0; i < before && i < static_cast<int>(stmts.size()); ++i) {
    const Stmt& s = stmts[i];
    if (s.kind == StmtKind::kViewOp && s.flag) no_grad_viewed.insert(c.storage_root(s.args[0]));
    if (s.kind == StmtKind::kViewOp &&
        (s.view_op == ViewOp::kSplit || s.view_op == ViewOp::kChunk ||
         s.view_op == ViewOp::kUnbind)) {
      multi_output_viewed.insert(c.storage_root(s.args[0]));
    }
    if (s.kind != StmtKind::kInplace) continue;
    // Any write into a no_grad view's storage: one autograd records (under grad mode, into the
    // view's base) is what the CreationMeta error is meant for (pin-no-grad-view-base-written).
    const int root = c.storage_root(s.args[0]);
    if (no_grad_viewed.count(root) || multi_output_viewed.count(root)) return true;
  }
  return false;
}

// Whether a detach_() before statement `before` cut a non-leaf (a value no `leaf` statement made)
// off its history.
bool detached_a_non_leaf(const Context& c, int before) {
  const auto& stmts = c.program().stmts;
  for (int i = 0; i < before && i < static_cast<int>(stmts.size()); ++i) {
    if (stmts[i].kind != StmtKind::kDetachInplace || stmts[i].args.empty()) continue;
    const Stmt* made = c.producer(c.tensor(stmts[i].args[0]));
    if (made && made->kind != StmtKind::kLeaf) return true;
  }
  return false;
}

Excuse version_check_per_formula(const Pair& p) {
  // Both raised the version error in a call, PyTorch's at a pow node whose saved result was
  // written, the engine's at a later one: on the way the engine's call may have accumulated
  // gradients into .grad (a leaf's, a retained input's) where PyTorch's had not
  // (pin-version-raised-after-accumulating).
  const int grad_of = p.grad_line_value();
  if (grad_of >= 0 && accumulated_before_a_raise_elsewhere(p.c, grad_of)) return Excuse::kStop;
  if (!autograd_call(p)) return Excuse::kNone;
  // Likewise PyTorch's unpack refuses a saved non-leaf input detached in place since ("Trying to
  // use a saved tensor that has been detached in-place") in every node that runs, the engine only
  // in the formulas this call runs (Note [Saved values detached in place]; pin
  // s59_unneeded_saved_value_detached_in_place).
  if (p.status("raise", "ok") && p.error().empty() && detached_a_non_leaf(p.c, p.index)) {
    return Excuse::kStop;
  }
  // PyTorch's unpack may raise a view error in place of the version error there
  // (view_error_for_version): as the version error.
  const std::string error =
      p.status("raise", "ok") && p.e.size() == 2 && view_error_for_version(p.c, p.index)
          ? "version"
          : p.error();
  const bool freed_here = p.a.size() == 3 && p.a[1] == "raise" && p.a[2] == "freed";
  // An earlier call without retain_graph raised the version error in both, PyTorch's at the first
  // node holding the modified tensor, the engine's maybe later, after running (and freeing) nodes
  // PyTorch did not: a later call that needs them raises "freed" here, where PyTorch goes on or
  // raises the version error again.
  if (freed_here && (p.status("ok", "raise") || error == "version") && p.c.version_raised()) {
    const int at = p.c.version_raised_at();
    if (pow_saved_value_written(p.c, p.index) || !p.c.recorded_inplace() ||
        some_leaf_unrequested(p.c, p.c.program().stmts[at], at)) {
      return Excuse::kStop;
    }
  }
  // Both raise in this call: PyTorch the version error at a pow node whose saved result was
  // written, the engine, whose formulas there read nothing written, another error at a later
  // node: an AccumulateGrad of a leaf that an in-place op moved into the graph interior after the
  // graph was built (after detach_() or requires_grad_(False);
  // pin-pow-version-before-interior-leaf).
  if (error == "version" && p.status("raise", "raise") && p.a.size() == 2 &&
      pow_saved_value_written(p.c, p.index)) {
    return Excuse::kStop;
  }
  const bool freed = error == "freed";
  // Or the engine's call goes on to a node whose saved values were freed, and raises that.
  if (!(p.status("raise", "ok") || (p.status("raise", "raise") && freed_here)) ||
      (error != "version" && !freed)) {
    return Excuse::kNone;
  }
  if (freed && freed_here) return Excuse::kNone;
  // Both raise in this call: PyTorch the version error at a node that unpacks every saved value,
  // the engine "freed" at a later node, the formulas it needed at the first reading nothing
  // written (threshold_backward's for its result, a constant, under guarded saves: fuzz seed 33).
  if (!freed && freed_here) return Excuse::kStop;
  if (!freed && pow_saved_value_written(p.c, p.index)) return Excuse::kStop;
  const bool unrequested_leaf = some_leaf_unrequested(p.c, *p.s, p.index);
  if (freed) {
    return unrequested_leaf || differentiated_regenerated_view(p.c, p.index) ? Excuse::kStop
                                                                             : Excuse::kNone;
  }
  return !p.c.recorded_inplace() || unrequested_leaf ? Excuse::kStop : Excuse::kNone;
}

// What too-hard-overlaps-read-first leaves: the script passes PyTorch a copy of an in-place op's
// operand that overlaps the target's memory in a way PyTorch cannot tell, the engine the operand
// itself, which its node saves and the write then changes. So a later call that runs that node
// raises the version error here alone (PyTorch's call goes on, and may raise "freed" at a later
// node), or, the graphs differing there, in PyTorch alone; the comparison ends there.
// The same where the target reaches one element at several indices (unfold's windows that
// overlap, size above step, or an as_strided whose indices share elements), written with grad
// mode on: PyTorch's CopySlices copies the write's gradient into those indices element by
// element, so at an element two indices share the last copy wins; the engine's gradient differs
// there. The comparison ends at the first differing .grad line, or grad() result line, after such
// a write.
bool reaches_an_element_twice(const Stmt& made) {
  if (made.kind != StmtKind::kViewOp) return false;
  if (made.view_op == ViewOp::kUnfold) return made.ints.size() == 3 && made.ints[1] > made.ints[2];
  if (made.view_op != ViewOp::kAsStrided || made.shape.size() != made.strides.size()) return false;
  std::vector<int64_t> offsets = {0};
  for (size_t d = 0; d < made.shape.size(); ++d) {
    std::vector<int64_t> next;
    for (int64_t o : offsets) {
      for (int64_t i = 0; i < made.shape[d]; ++i) next.push_back(o + i * made.strides[d]);
    }
    offsets = std::move(next);
  }
  std::sort(offsets.begin(), offsets.end());
  return std::adjacent_find(offsets.begin(), offsets.end()) != offsets.end();
}

bool wrote_into_overlapping_indices(const Context& c, int before) {
  const auto& stmts = c.program().stmts;
  for (int i = 0; i < before && i < static_cast<int>(stmts.size()); ++i) {
    const Stmt& s = stmts[i];
    if (s.kind != StmtKind::kInplace || s.flag || s.args.empty()) continue;
    const Stmt* made = c.producer(c.tensor(s.args[0]));
    if (made && reaches_an_element_twice(*made)) return true;
  }
  return false;
}

Excuse overlapping_operand_saved(const Pair& p) {
  const bool gradient_line =
      p.grad_line_value() >= 0 || (p.s && p.s->kind == StmtKind::kGrad && p.result_line());
  if (gradient_line && wrote_into_overlapping_indices(p.c, p.index)) return Excuse::kStop;
  // Here: the engine raises the version error at the node, where PyTorch's call runs past it,
  // and succeeds or raises another error at a later node (its freed saved values).
  const bool engine_version = p.a.size() == 3 && p.a[2] == "version";
  const bool here = engine_version && (p.status("ok", "raise") ||
                                       (p.status("raise", "raise") && p.error() != "version"));
  const bool there = p.status("raise", "ok") && p.error() == "version";
  if (!autograd_call(p) || !(here || there)) return Excuse::kNone;
  for (int i = 0; i < p.index; ++i) {
    const Stmt& s = p.c.program().stmts[i];
    if (s.kind != StmtKind::kInplace || s.flag || s.args.size() < 2) continue;
    const int target = s.args[0], operand = s.args[1];
    if (p.c.tensor(target) != p.c.tensor(operand) &&
        p.c.storage_root(target) == p.c.storage_root(operand)) {
      return Excuse::kStop;
    }
  }
  return Excuse::kNone;
}

// A consequence of backward-grad-tensors-copied that the scripts cannot render: a gradient
// given to backward() without create_graph that shares storage with some leaf's .grad reaches
// PyTorch as it is, and PyTorch's AccumulateGrad may keep a view of it (made by a view's
// backward) as another leaf's .grad, which an in-place accumulation into the first .grad then
// changes too. Here every .grad is a copy. The comparison ends at the first difference from such
// a backward() on.
Excuse held_grad_tensors(const Pair& p) {
  const auto& stmts = p.c.program().stmts;
  const int last = std::min(p.index, static_cast<int>(stmts.size()) - 1);
  std::set<int> held;  // storage of a tensor that was some leaf's .grad
  for (int i = 0; i <= last; ++i) {
    const Stmt& s = stmts[i];
    if (s.kind == StmtKind::kSetGrad && s.args.size() == 2)
      held.insert(p.c.storage_root(s.args[1]));
    if (s.kind == StmtKind::kReadGrad) held.insert(p.c.storage_root(s.results[0]));
    if (s.kind != StmtKind::kBackward || s.create_graph) continue;
    for (int g : s.grad_outputs) {
      if (g >= 0 && held.count(p.c.storage_root(g))) return Excuse::kStop;
    }
  }
  return Excuse::kNone;
}

// grad() without allow_unused gives zeros for a requested sibling output that gets no gradient,
// where PyTorch raises "appears to not have been used in the graph".
Excuse unused_input_zeros(const Pair& p) {
  if (!p.s || p.s->kind != StmtKind::kGrad || p.s->allow_unused || !p.status("raise", "ok")) {
    return Excuse::kNone;
  }
  // The engine's result for some sibling input is all zeros.
  for (size_t k = 0; k < p.s->inputs.size() && k < p.rest.size(); ++k) {
    if (!p.c.sibling_output(p.s->inputs[k])) continue;
    const Tokens r = split(p.rest[k], ' ');
    const auto eq = std::find(r.begin(), r.end(), "=");
    const bool zeros = eq != r.end() && std::all_of(eq + 1, r.end(), [](const std::string& x) {
                         return x == "0" || x == "-0";
                       });
    if (zeros) return Excuse::kStop;
  }
  return Excuse::kNone;
}

// Whether the expected line agrees with `fixed` (the actual line with some tokens replaced).
bool agrees_with_expected(const Pair& p, const Tokens& fixed) {
  auto join = [](const Tokens& t) {
    std::string s;
    for (const std::string& x : t) s += x + " ";
    return s;
  };
  NumberStats ignored;
  return lines_agree(join(p.e), join(fixed), Tolerance{}, ignored);
}

// Whether the lines agree once the actual one's rg= and leaf= are the expected one's, and differ
// in one of them.
bool differ_in_flags_alone(const Pair& p) {
  Tokens fixed = p.a;
  bool replaced = false;
  for (std::string& t : fixed) {
    for (const char* flag : {"rg=", "leaf="}) {
      if (!has_prefix(t, flag)) continue;
      for (const std::string& want : p.e) {
        if (has_prefix(want, flag) && want != t) t = want, replaced = true;
      }
    }
  }
  return replaced && agrees_with_expected(p, fixed);
}

// Whether requires_grad_() was called on `tensor` after statement `from` and before `to`.
bool requires_grad_set_between(const Context& c, int tensor, int from, int to) {
  const auto& stmts = c.program().stmts;
  for (int j = from + 1; j < to; ++j) {
    if (stmts[j].kind == StmtKind::kSetRequiresGrad && c.tensor(stmts[j].args[0]) == tensor) {
      return true;
    }
  }
  return false;
}

// Whether value v is a grad() result for a tensor that an op statement before that grad() read,
// as `read(op statement, tensor)` says.
template <typename Read>
bool gradient_of_a_tensor_read(const Context& c, int v, Read read) {
  const Stmt* g = c.producer(c.tensor(v));
  if (!g || g->kind != StmtKind::kGrad) return false;
  const auto& stmts = c.program().stmts;
  for (size_t k = 0; k < g->results.size() && k < g->inputs.size(); ++k) {
    if (c.tensor(g->results[k]) != c.tensor(v)) continue;
    for (const Stmt* s = stmts.data(); s < g; ++s) {
      if (s->kind == StmtKind::kOp && read(*s, c.tensor(g->inputs[k]))) return true;
    }
  }
  return false;
}

// Whether value v is a grad() result for a tensor that a linear read as its weight before that
// grad() (linear-saves-weight).
bool linear_weight_gradient(const Context& c, int v) {
  return gradient_of_a_tensor_read(c, v, [&](const Stmt& s, int t) {
    return s.instr.op == proptests::Op::kLinear && c.tensor(s.instr.args[1]) == t;
  });
}

// PyTorch's linear saves weight.t(), a view made then (with a history of its own if the weight
// required grad), where the engine saves the weight. After requires_grad_(False) on the weight,
// the gradient that reads it under create_graph requires grad in PyTorch (through the view's
// history), not here; after requires_grad_(True) on a weight that is itself a view (a leaf, so
// the flag is its own), here and not in PyTorch (the transposed view follows the root base).
// And a gradient through the saved weight reaches the weight's .grad here, where PyTorch's goes
// into a view made before the weight required grad, which has no AccumulateGrad: nowhere. The
// comparison ends at such a line (only rg= and leaf= differ, in a call with create_graph; or a
// .grad line of the weight), in a program that ran linear with a weight whose requires_grad was
// changed since. The same view makes PyTorch's gradient for the weight a view (TBackward's t() of
// the product), which detach_() refuses ("Can't detach views in-place"); here it is the product
// itself: the comparison ends at a detach_() that raises in PyTorch alone on a grad() result for
// a weight that a linear read before that grad().
Excuse linear_saves_weight(const Pair& p) {
  if (p.s && p.s->kind == StmtKind::kDetachInplace && !p.s->args.empty() &&
      p.status("raise", "ok") && linear_weight_gradient(p.c, p.s->args[0])) {
    return Excuse::kStop;
  }
  const bool flags = autograd_call(p) && p.s->create_graph && differ_in_flags_alone(p);
  const int grad_of = p.grad_line_value();
  if (!flags && grad_of < 0) return Excuse::kNone;
  const auto& stmts = p.c.program().stmts;
  const int upto = std::min(p.index, static_cast<int>(stmts.size()));
  for (int i = 0; i < upto; ++i) {
    if (stmts[i].kind != StmtKind::kOp || stmts[i].instr.op != proptests::Op::kLinear) continue;
    const int weight = p.c.tensor(stmts[i].instr.args[1]);
    if (!flags && p.c.tensor(grad_of) != weight) continue;
    if (requires_grad_set_between(p.c, weight, i, upto)) return Excuse::kStop;
  }
  return Excuse::kNone;
}

// PyTorch's matmul of a matrix by a batch (`[n, k] @ [..., k, m]`) with a first operand that
// requires grad folds the batch into one mm on the transposed operands and returns
// `output.mT().contiguous()`: a transposed view of the product where that is contiguous already
// (a dim of size 1), whose in-place writes then go through CopySlices on the product. Here the
// result is never a view. After an in-place op on such a result (or on a view of it) the two
// graphs differ, and detach_() on it raises in PyTorch alone: the comparison ends at the first line
// that differs from then on.
Excuse matmul_result_view(const Pair& p) {
  const auto& stmts = p.c.program().stmts;
  const int upto = std::min(p.index, static_cast<int>(stmts.size()) - 1);
  for (int i = 0; i <= upto; ++i) {
    const Stmt& m = stmts[i];
    if (m.kind != StmtKind::kOp || m.instr.op != proptests::Op::kMatmul) continue;
    if (p.c.rank(m.instr.args[0]) != 2 || p.c.rank(m.instr.args[1]) < 3) continue;
    const int result = p.c.tensor(m.results[0]);
    for (int j = i + 1; j <= upto; ++j) {
      // An in-place op on it, or detach_(), which refuses a view.
      const bool writes =
          stmts[j].kind == StmtKind::kInplace || stmts[j].kind == StmtKind::kDetachInplace;
      if (writes && p.c.storage_root(stmts[j].args[0]) == result) return Excuse::kStop;
    }
  }
  return Excuse::kNone;
}

// PyTorch's mm gives the gradient of an operand laid out column-major (a transposed view, a
// [1, 1] tensor) as a transposed view of a product (mm_mat1_backward, mm_mat2_backward), which
// detach_() refuses ("Can't detach views in-place"); here it is the product itself. The comparison
// ends at a detach_() that raises in PyTorch alone on a grad() result for a tensor that an mm (or
// a matmul of two matrices, which is one, or an addmm's mat1 or mat2, whose gradients are the
// same functions') read before that grad().
Excuse mm_gradient_view(const Pair& p) {
  if (!p.s || p.s->kind != StmtKind::kDetachInplace || p.s->args.empty() ||
      !p.status("raise", "ok")) {
    return Excuse::kNone;
  }
  const bool read = gradient_of_a_tensor_read(p.c, p.s->args[0], [&](const Stmt& s, int t) {
    const auto& args = s.instr.args;
    const bool mm = s.instr.op == proptests::Op::kMm ||
                    (s.instr.op == proptests::Op::kMatmul && args.size() == 2 &&
                     p.c.rank(args[0]) == 2 && p.c.rank(args[1]) == 2);
    if (s.instr.op == proptests::Op::kAddmm && args.size() == 3) {
      return p.c.tensor(args[1]) == t || p.c.tensor(args[2]) == t;
    }
    return mm && args.size() == 2 && (p.c.tensor(args[0]) == t || p.c.tensor(args[1]) == t);
  });
  return read ? Excuse::kStop : Excuse::kNone;
}

Excuse pytorch_internal_error(const Pair& p) {
  return p.e.size() >= 2 && p.e[1] == "reference-failed" ? Excuse::kStop : Excuse::kNone;
}

// PyTorch's in-place op on a tensor that retains grad moves the retains-grad hook of its old
// node's slot numbered by the tensor's new output_nr (0), not its own: for a non-first output of
// a custom Function it takes output 0's hook, when output 0 retains grad too (else it fails the
// internal assert above), and leaves the written tensor's own on the old node. The .grad records
// of both are not compared from there on, and the comparison ends where the program reads either
// into a value.
Excuse retains_grad_moved_by_output_nr(const Pair& p) {
  if (p.s && p.s->kind == StmtKind::kReadGrad && p.result_line() &&
      p.c.retains_grad_moved(p.s->args[0])) {
    return Excuse::kStop;
  }
  const int v = p.grad_line_value();
  return v >= 0 && p.a.size() >= 3 && p.a[0] == p.e[0] && p.a[1] == p.e[1] && p.a[2] == p.e[2] &&
                 p.c.retains_grad_moved(v)
             ? Excuse::kSkipBoth
             : Excuse::kNone;
}

// A write through a view gives the base a new node whose edges are the engine's (Note [In-place
// ops on views]: the view after the write, then the base's history before it), not CopySlices'
// (the base's history, then the in-place op's other inputs). A post-hook on that node is handed
// other grad_inputs: both firing records of such a hook are skipped.
Excuse rebased_base_node_edges(const Pair& p) {
  if (p.e.size() < 3 || p.a.size() < 3 || p.e[1] != "fire" || p.a[1] != "fire" ||
      p.e[0] != p.a[0] || p.e[2] != p.a[2]) {
    return Excuse::kNone;
  }
  const int hook = std::atoi(p.e[2].c_str() + 1);
  const auto& stmts = p.c.program().stmts;
  for (size_t r = 0; r < stmts.size(); ++r) {
    const Stmt& s = stmts[r];
    if (s.kind != StmtKind::kHook || s.hook != hook || s.hook_kind != HookKind::kPost) continue;
    const int base = p.c.tensor(s.args[0]);
    if (p.c.storage_root(base) != base) return Excuse::kNone;
    // The last recorded write into the base's storage before the hook: through a view?
    for (size_t i = r; i-- > 0;) {
      const Stmt& w = stmts[i];
      if (w.kind != StmtKind::kInplace || w.flag || p.c.storage_root(w.args[0]) != base) continue;
      return p.c.tensor(w.args[0]) != base ? Excuse::kSkipBoth : Excuse::kNone;
    }
    return Excuse::kNone;
  }
  return Excuse::kNone;
}

// PyTorch 2.15's forward-mode formula of mul_ reads its operand's primal after the write: where
// the operand is the target or views the target's memory (`x.mul_(x)`, `x.mul_(x.view(...))`),
// the new tangent is t x + t x^2 (x = 3, t = 1: 12, not 6). The comparison ends at the first
// difference after such a mul_ run inside a dual level.
Excuse inplace_mul_aliased_tangent(const Pair& p) {
  const auto& stmts = p.c.program().stmts;
  const int upto = std::min(p.index, static_cast<int>(stmts.size()) - 1);
  int levels = 0;
  for (int i = 0; i <= upto; ++i) {
    const Stmt& s = stmts[i];
    if (s.kind == StmtKind::kDualLevel) levels = s.flag ? levels + 1 : std::max(levels - 1, 0);
    if (levels > 0 && s.kind == StmtKind::kInplace && s.inplace == InplaceKind::kMul &&
        s.args.size() == 2 && p.c.storage_root(s.args[0]) == p.c.storage_root(s.args[1])) {
      return Excuse::kStop;
    }
  }
  return Excuse::kNone;
}

// Whether, before statement `before`, a tensor was detached in place after a write into its
// storage: PyTorch's unpack of it (saved as the object) finds no history and raises "Trying to use
// a saved tensor that has been detached in-place" before it checks the version, where the engine
// (which keeps an alias: Note [Saved values detached in place]) finds the version error first.
bool detached_after_write(const Context& c, int before) {
  const auto& stmts = c.program().stmts;
  std::set<int> written;  // storage roots written in place
  for (int i = 0; i < before && i < static_cast<int>(stmts.size()); ++i) {
    const Stmt& s = stmts[i];
    if (s.kind == StmtKind::kInplace) written.insert(c.storage_root(s.args[0]));
    if (s.kind == StmtKind::kDetachInplace && written.count(c.storage_root(s.args[0]))) return true;
  }
  return false;
}

// The other way round: whether, before statement `before`, a tensor detached in place was then
// written in place with grad mode on, which gave it a history again: PyTorch's unpack of it reads
// that history and goes on to the version error, where the engine (whose mark on the old node
// cannot tell) raises the detached error (pin-saved-value-detached-then-written).
bool written_after_detach(const Context& c, int before) {
  const auto& stmts = c.program().stmts;
  std::set<int> detached;
  for (int i = 0; i < before && i < static_cast<int>(stmts.size()); ++i) {
    const Stmt& s = stmts[i];
    if (s.kind == StmtKind::kDetachInplace) detached.insert(c.tensor(s.args[0]));
    if (s.kind == StmtKind::kInplace && !s.flag && detached.count(c.tensor(s.args[0]))) return true;
  }
  return false;
}

// PyTorch 2.15 refuses a backward that unpacks a saved view made under no_grad, after a write
// into its storage that autograd does not record, with the CreationMeta error meant for a write
// under grad mode (view_error_for_version); the engine raises the version error a saved tensor
// written after its save gets. Likewise a saved tensor written and then detached in place
// (detached_after_write). Both raise: the pair of raise lines is skipped.
Excuse no_grad_view_saved_error(const Pair& p) {
  if (!p.s || (p.s->kind != StmtKind::kBackward && p.s->kind != StmtKind::kGrad) ||
      !p.status("raise", "raise")) {
    return Excuse::kNone;
  }
  // PyTorch's view error against the engine's version error; or the other way round where the
  // engine reads the stale view's history first (a grad_tensors value, before any node runs).
  const bool view_vs_version = p.e.size() == 2 && p.a.size() == 3 && p.a[2] == "version";
  const bool version_vs_view = p.e.size() == 3 && p.e[2] == "version" && p.a.size() == 2;
  if (!view_vs_version && !version_vs_view) return Excuse::kNone;
  // A saved tensor detached in place after a write raises PyTorch's error only at unpack; one
  // written with grad mode on after detach_() raises PyTorch's version error there.
  const bool explained = view_error_for_version(p.c, p.index) ||
                         (view_vs_version && detached_after_write(p.c, p.index)) ||
                         (version_vs_view && written_after_detach(p.c, p.index));
  return explained ? Excuse::kSkipBoth : Excuse::kNone;
}

// In order: the first rule that excuses a pair names it. A PyTorch bug that changed the
// program's state for good comes first.
const Rule kRules[] = {
    {"retains-grad-moved-by-output-nr", retains_grad_moved_by_output_nr},
    {"unused-input-zeros", unused_input_zeros},
    {"extra-executions", extra_executions},
    {"version-check-per-formula", version_check_per_formula},
    {"held-grad-tensors", held_grad_tensors},
    {"overlapping-operand-saved", overlapping_operand_saved},
    {"linear-saves-weight", linear_saves_weight},
    {"matmul-result-view", matmul_result_view},
    {"mm-gradient-view", mm_gradient_view},
    {"rebased-base-node-edges", rebased_base_node_edges},
    {"pytorch-internal-error", pytorch_internal_error},
    {"inplace-mul-aliased-tangent", inplace_mul_aliased_tangent},
    {"no-grad-view-saved-error", no_grad_view_saved_error},
};

}  // namespace

Comparison compare(const ConformanceProgram& program, const Records& expected,
                   const Records& actual, const Tolerance& tolerance) {
  Comparison out;
  Context context(program);
  size_t i = 0, j = 0;
  const std::string none = "(no line)";
  while (i < expected.lines.size() || j < actual.lines.size()) {
    const std::string& e = i < expected.lines.size() ? expected.lines[i] : none;
    const std::string& a = j < actual.lines.size() ? actual.lines[j] : none;
    if (lines_agree(e, a, tolerance, out.numbers)) {
      context.observe(e);
      ++i, ++j;
      continue;
    }
    const Tokens et = split(e, ' '), at = split(a, ' ');
    const std::vector<std::string> rest(
        actual.lines.begin() + static_cast<std::ptrdiff_t>(std::min(j + 1, actual.lines.size())),
        actual.lines.end());
    const int index = et.empty() ? -1 : stmt_of(et[0]);
    const Pair pair{context, et, at, rest, index, context.stmt(index)};
    Excuse excuse = Excuse::kNone;
    for (const Rule& rule : kRules) {
      if (!find_explanation(rule.id)) throw std::logic_error("unlisted rule");
      excuse = rule.apply(pair);
      if (excuse == Excuse::kNone) continue;
      ++out.deviations[rule.id];
      if (excuse == Excuse::kStop) out.stopped_by = rule.id;
      break;
    }
    switch (excuse) {
      case Excuse::kNone:
        out.mismatches.push_back({i, e, a});
        return out;
      case Excuse::kStop:
        return out;
      case Excuse::kSkipExpected:
        context.observe(e);
        ++i;
        break;
      case Excuse::kSkipActual:
        ++j;
        break;
      case Excuse::kSkipBoth:
        context.observe(e);
        ++i, ++j;
        break;
    }
  }
  return out;
}

std::string explain(const Comparison& c) {
  std::string out;
  for (const auto& [id, n] : c.deviations) {
    out += "excused by " + id + ": " + std::to_string(n) + (n == 1 ? " line" : " lines") +
           (id == c.stopped_by ? " (the rest is not compared)" : "") + "\n";
  }
  if (c.ok()) return out + "records agree\n";
  const Mismatch& m = c.mismatches.front();
  return out + "first mismatch at record line " + std::to_string(m.line + 1) +
         ":\n  expected: " + m.expected + "\n  actual:   " + m.actual + "\n";
}

}  // namespace ag::proptests
