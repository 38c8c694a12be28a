// Checks the API model itself against PyTorch: prints random command sequences as one Python
// script that runs each under PyTorch and asserts, after every call, what the model predicts
// (raise or not, values, requires_grad, is_leaf, versions, .grad, shared storage, identity).
//   bazel run //proptests/api_model:model_vs_pytorch -- --seed 1 --sequences 300 > /tmp/check.py
//   python3 /tmp/check.py            # needs torch; prints each disagreement and a summary
// The engine is not involved. Disagreements are either model bugs or the engine's deliberate
// differences from PyTorch (README.md lists them; the script tags the known ones).
#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "proptests/api_model/command_util.h"
#include "proptests/api_model/commands.h"

namespace ag::proptests {
namespace {

std::string py_list(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + num(v[i]);
  return s + "]";
}

const char* py_bool(bool b) { return b ? "True" : "False"; }

// Whether the engine refuses this grad() call before running it (an input not reached), where
// PyTorch raises only after running the graph.
bool refused_before_running(const Outcome& out) {
  return out.expect == Expect::kRaise && out.rule.find("not used") != std::string::npos;
}

// The call as PyTorch should run it to end in the engine's state: a call refused before running
// runs in PyTorch with retain_graph=True, since running the graph frees it (README.md).
std::string pytorch_call(const std::string& text, const Outcome& out) {
  if (!refused_before_running(out)) return text;
  std::string t = text;
  for (const char* r : {", retain_graph=False", ", retain_graph=True"}) {
    const size_t at = t.find(r);
    if (at != std::string::npos) t.erase(at, std::string(r).size());
  }
  return t.substr(0, t.size() - 1) + ", retain_graph=True)";
}

// For a grad() call "tA, tB, = torch.autograd.grad(..., grad_outputs=[tC, None], ...)": a
// Python statement that flags PyTorch returning one of the grad_outputs.
std::string grad_outputs_check(const std::string& text) {
  const size_t call = text.find("= torch.autograd.grad(");
  const size_t gos = text.find("grad_outputs=[");
  if (call == std::string::npos || gos == std::string::npos) return "";
  std::string results = text.substr(0, call);
  const size_t open = gos + std::string("grad_outputs=").size();
  const std::string list = text.substr(open, text.find(']', open) - open + 1);
  const bool create_graph = text.find("create_graph=True") != std::string::npos;
  return "    if not raised: " + results + "= returned_grad_outputs([" + results + "], " + list +
         ", " + (create_graph ? "True" : "False") + ")\n";
}

// The names in a printed list "[t1, None, t3]" that follows `key`.
std::vector<std::string> names_after(const std::string& text, const std::string& key) {
  std::vector<std::string> out;
  const size_t at = text.find(key);
  if (at == std::string::npos) return out;
  std::istringstream list(text.substr(at + key.size(), text.find(']', at) - at - key.size()));
  std::string item;
  while (std::getline(list, item, ',')) {
    item.erase(0, item.find_first_not_of(' '));
    if (!item.empty() && item != "None") out.push_back(item);
  }
  return out;
}

// Python that keeps PyTorch and the engine comparable after a call, or that flags the
// differences the engine makes on purpose (README.md).
std::string after_call(const Model& m, const std::string& text) {
  std::string s;
  if (text.find("= torch.autograd.grad(") != std::string::npos) {
    s += grad_outputs_check(text);
    const std::string results = text.substr(0, text.find("= torch.autograd.grad("));
    const size_t inputs = text.find("], [") + 3;
    s += "    if not raised: " + results + "= norm([" + results + "], " +
         text.substr(inputs, text.find(']', inputs) - inputs + 1) + ")\n";
  }
  if (text.rfind("torch.autograd.backward(", 0) == 0) {
    std::vector<std::string> targets = names_after(text, "inputs=[");
    if (targets.empty()) {
      for (int n : m.names()) targets.push_back(tname(n));
    }
    std::string list;
    for (const std::string& t : targets) list += t + ", ";
    s += "    if not raised: stole_grad_tensors([" + list + "], [" + [&] {
      std::string g;
      for (const std::string& t : names_after(text, "grad_tensors=[")) g += t + ", ";
      return g;
    }() + "])\n";
  }
  return s;
}

// Whether PyTorch fails in this call where the model cannot follow it: then the sequence stops
// here. An in-place op that gives a tensor retaining grad a new history, where the tensor is not
// the first output of its node, moves the wrong retains-grad hook in PyTorch 2.15 (DEVIATIONS.md,
// retains-grad-moved-by-output-nr): an internal assert, another tensor's hook moved, or (written
// through a view) a hook on a slot the new node does not have, which crashes a later backward.
// `before` and `after` are the model's states around the call.
std::string pytorch_diverges(const Model& before, const Model& after) {
  for (int i = 0; i < before.num_impls(); ++i) {
    const ImplState& t = before.impl(i);
    if (t.retains_grad && !t.dead && !before.is_view(i) && t.grad_fn.slot != 0 &&
        !(after.impl(i).grad_fn == t.grad_fn)) {
      return "retains-grad-moved-by-output-nr";
    }
  }
  return "";
}

// "t1, t4, ": a name of each live tensor that retains grad.
std::string retaining_names(const Model& m) {
  std::string out;
  std::set<int> seen;
  for (const auto& [name, impl] : m.handles()) {
    if (m.impl(impl).retains_grad && !m.impl(impl).dead && seen.insert(impl).second) {
      out += tname(name) + ", ";
    }
  }
  return out;
}

// "    chk_hooks(line, {id: [value or None, ...], ...}, [[a, b], ...])": what each hook is handed
// (HookFire, model.h) and the pairs that must run in that order (Model::runs_before).
std::string hook_checks(const Model& m, const Outcome& out, int line) {
  std::string want, order;
  for (const auto& [id, f] : out.hooks) {
    want += std::to_string(id) + ": [";
    for (const HookValue& v : f.values) want += (v.defined ? py_list(v.grad) : "None") + ", ";
    want += "], ";
    for (const auto& [id2, f2] : out.hooks) {
      if (m.runs_before(id, id2))
        order += "[" + std::to_string(id) + ", " + std::to_string(id2) + "], ";
    }
  }
  return "    chk_hooks(" + std::to_string(line) + ", {" + want + "}, [" + order + "])\n";
}

// A version Python checks exactly, or as a change from when it first saw the storage.
std::string version(const Model& m, int impl) {
  if (m.version_from_zero(impl)) return std::to_string(m.version_of(impl));
  return "(" + std::to_string(m.impl(impl).storage) + ", " + std::to_string(m.version_of(impl)) +
         ")";
}

// "    chk_packs(line, {id: calls, ...})": how often each saved-tensor-hooks scope's pack ran
// (Note [Model saved-tensor hooks]).
std::string pack_checks(const Model& m, int line) {
  if (m.saved_hooks().empty()) return "";
  std::string want;
  for (size_t id = 0; id < m.saved_hooks().size(); ++id) {
    want += std::to_string(id) + ": " + std::to_string(m.saved_hooks()[id].packs) + ", ";
  }
  return "    chk_packs(" + std::to_string(line) + ", {" + want + "})\n";
}

// Where a call the model says raises ran inside a saved-tensor-hooks scope: PyTorch saves (and
// packs) before its kernel checks shapes and overlaps, the engine checks first (README.md), so
// a differing count there stops the sequence as a known deviation.
std::string packs_before_raise(const Model& m, const Outcome& out, int line) {
  if (out.expect != Expect::kRaise || m.innermost_saved_hooks() < 0) return "";
  std::string want;
  for (size_t id = 0; id < m.saved_hooks().size(); ++id) {
    want += std::to_string(id) + ": " + std::to_string(m.saved_hooks()[id].packs) + ", ";
  }
  return "    packs_before_raise(" + std::to_string(line) + ", {" + want + "})\n";
}

// Python statements asserting the model's state.
std::string state_checks(const Model& m, int line) {
  std::ostringstream os;
  os << pack_checks(m, line);
  std::vector<std::pair<std::string, int>> live;  // (expression, impl)
  auto chk = [&](const std::string& what, int impl) {
    os << "    chk(" << line << ", '" << what << "', " << what << ", " << py_list(m.values_of(impl))
       << ", " << py_bool(m.requires_grad(impl)) << ", "
       << (m.unreadable(impl) ? "None" : py_bool(m.is_leaf(impl))) << ", " << version(m, impl)
       << ", " << py_bool(m.impl(impl).retains_grad) << ")\n";
    live.emplace_back(what, impl);
  };
  // Note [Model dual levels]: every tangent the model knows, inside a level.
  auto chk_tan = [&](const std::string& what, int impl) {
    const ImplState& s = m.impl(impl);
    if (m.dual_live() && s.tangent_kind != Tangent::kUnknown && !m.unreadable(impl) &&
        !m.edgeless(impl)) {
      os << "    chk_tan(" << line << ", '" << what << "', " << what << ", "
         << (s.tangent_kind == Tangent::kKnown ? py_list(s.tangent) : "None") << ")\n";
    }
  };
  for (const auto& [name, impl] : m.handles()) {
    const ImplState& s = m.impl(impl);
    if (s.dead) continue;
    const std::string t = tname(name);
    chk(t, impl);
    chk_tan(t, impl);
    if (s.grad < 0) {
      os << "    nograd(" << line << ", '" << t << "', " << t << ")\n";
    } else if (!m.impl(s.grad).dead) {
      chk(t + ".grad", s.grad);
      chk_tan(t + ".grad", s.grad);
    }
  }
  for (size_t a = 0; a < live.size(); ++a) {
    for (size_t b = a + 1; b < live.size(); ++b) {
      const int ia = live[a].second, ib = live[b].second;
      os << "    rel(" << line << ", '" << live[a].first << "', '" << live[b].first << "', "
         << live[a].first << ", " << live[b].first << ", "
         << py_bool(m.impl(ia).storage == m.impl(ib).storage) << ", " << py_bool(ia == ib) << ")\n";
    }
  }
  return os.str();
}

const char* kHelpers = R"PY(
import sys
sys.path.insert(0, 'proptests/api_model')
from replay_prelude import *

class Mismatch(Exception):
    pass

def same_memory(a, b):
    return a.untyped_storage()._cdata == b.untyped_storage()._cdata

def norm(results, inputs):
    """One gradient object per input tensor of a grad() call, contiguous (as the engine's runner
    makes them): which results share memory, or are one object, is not part of the contract."""
    out = list(results)
    for k in range(len(out)):
        if out[k] is None:
            continue
        if not out[k].is_contiguous():  # e.g. an expanded ones: the engine's are contiguous
            out[k] = out[k].contiguous()
        if out[k]._is_view():  # made by a view op in backward (no_grad): the engine has none
            out[k] = out[k].clone()
        same = [j for j in range(k) if inputs[j] is inputs[k]]
        if same:
            out[k] = out[same[0]]
        elif any(out[j] is not None and same_memory(out[j], out[k]) for j in range(k)):
            out[k] = out[k].clone()
    return out

def stole_grad_tensors(targets, gts):
    """PyTorch's AccumulateGrad steals an incoming gradient nobody else references, even when it
    is a view of a caller's grad_tensors entry: then .grad shares its memory. The contract (and
    the engine) never lets .grad share memory with the caller's tensors (README.md)."""
    for t in targets:
        for g in gts:
            if t.grad is not None and g is not None and same_memory(t.grad, g):
                raise Deviation('.grad shares memory with a grad_tensors entry')

def close(a, b):
    if a != a or b != b:
        return a != a and b != b
    if abs(a) == float('inf') or abs(b) == float('inf'):
        return a == b
    return abs(a - b) <= 1e-8 * max(1.0, abs(a), abs(b))

def chk(line, name, t, values, rg, leaf, version, retains):
    got = t.detach().flatten().tolist()
    if len(got) != len(values) or not all(close(x, y) for x, y in zip(got, values)):
        raise Mismatch(f"line {line}: {name} = {got}, model {values}")
    if t.requires_grad != rg:
        raise Mismatch(f"line {line}: {name}.requires_grad = {t.requires_grad}, model {rg}")
    if leaf is None:  # the model: reading its grad_fn raises (Note [Model view kinds])
        try:
            got_leaf = t.is_leaf
        except RuntimeError:
            got_leaf = None
        if got_leaf is not None:
            raise Mismatch(f"line {line}: {name}.is_leaf = {got_leaf}, model: raises")
    elif t.is_leaf != leaf:
        raise Mismatch(f"line {line}: {name}.is_leaf = {t.is_leaf}, model {leaf}")
    if t.retains_grad != retains:
        raise Mismatch(f"line {line}: {name}.retains_grad = {t.retains_grad}, model {retains}")
    if isinstance(version, tuple):  # (storage, version): only changes are checked
        version = version[1] + offsets.setdefault(version[0], t._version - version[1])
    if t._version != version:
        raise Mismatch(f"line {line}: {name}._version = {t._version}, model {version}")

def nograd(line, name, t):
    if t.grad is not None:
        raise Mismatch(f"line {line}: {name}.grad is defined, model None")

def rel(line, a, b, ta, tb, same_storage, same_object):
    if (ta is tb) != same_object:
        raise Mismatch(f"line {line}: {a} is {b}: {ta is tb}, model {same_object}")
    if True:
        s = same_memory(ta, tb)
        if s != same_storage:
            raise Mismatch(f"line {line}: {a} and {b} share storage: {s}, model {same_storage}")

def expect(line, raised, want, rule):
    if want == 'ok' and raised:
        raise Mismatch(f"line {line}: raised '{raised}', model: succeeds")
    if want == 'raise' and not raised:
        raise Mismatch(f"line {line}: succeeded, model: raises ({rule})")
    results['calls compared'] += 1

class Deviation(Exception):
    pass

def returned_grad_outputs(results, gos, create_graph):
    """The engine never returns the caller's grad_outputs; PyTorch does when the gradient
    passes through unchanged (README.md). Replace such results by what the engine returns: a
    new tensor, with the same history under create_graph and none otherwise, and the same
    tangent inside a dual level (a clone keeps it, a detach() would drop it)."""
    out = list(results)
    for k, r in enumerate(out):
        if r is not None and any(g is not None and (r is g or same_memory(r, g)) for g in gos):
            if create_graph:
                out[k] = r.clone()
            else:
                with torch.no_grad():
                    out[k] = r.clone()
    return out

def put_back(t, g):
    """Puts back a retained .grad that a grad() call the engine refuses wrote in PyTorch. The
    setter reads grad_fn, which raises for a view whose grad_fn cannot be read (Note [Model view
    kinds]): such a .grad that did change cannot be put back, and the sequence stops there."""
    if t.grad is g:
        return
    try:
        t.grad = g
    except RuntimeError:
        raise Deviation('retained .grad of an unreadable view cannot be put back')

def same_tangent(line, what, got, want):
    """Whether `got` (a tangent or None) is the model's `want` (values or None); raises if not."""
    if want is None:
        if got is not None:
            raise Mismatch(f"line {line}: {what} is a tensor, model None")
        return False
    if got is None:
        raise Mismatch(f"line {line}: {what} is None, model {want}")
    g = got.reshape(-1).tolist()
    if len(g) != len(want) or any(not close(a, b) for a, b in zip(g, want)):
        raise Mismatch(f"line {line}: {what} is {g}, model {want}")
    return True

def chk_tan(line, what, t, want):
    if same_tangent(line, f"{what}'s tangent", fwAD.unpack_dual(t).tangent, want):
        results['tangents checked in state'] += 1

def chk_tangent(line, got, want):
    results['tangents compared'] += 1
    if same_tangent(line, "the tangent", got, want):
        results['tangents with values'] += 1

def chk_packs(line, want):
    if pack_calls != want:
        raise Mismatch(f"line {line}: pack calls {pack_calls}, model {want}")
    results['pack calls compared'] += sum(want.values())

def packs_before_raise(line, want):
    if pack_calls != want:
        raise Deviation('PyTorch packed before its kernel raised')

def chk_hooks(line, want, groups):
    got = {}
    for i, g in hook_log:
        if i in got:
            raise Mismatch(f"line {line}: hook h{i} fired twice")
        got[i] = g
    if set(got) != set(want):
        raise Mismatch(f"line {line}: hooks fired {sorted(got)}, model {sorted(want)}")
    def same(g, w):
        if (g is None) != (w is None):
            return False
        return w is None or (len(g) == len(w) and all(close(x, y) for x, y in zip(g, w)))
    for i, w in want.items():
        g = got[i]
        if len(g) != len(w) or not all(same(a, b) for a, b in zip(g, w)):
            raise Mismatch(f"line {line}: hook h{i} was handed {g}, model {w}")
    order = [i for i, _ in hook_log]
    for grp in groups:
        pos = [order.index(i) for i in grp if i in got]
        if pos != sorted(pos):
            raise Mismatch(f"line {line}: hooks {grp} ran out of order: {order}")
    results['hooks fired'] += len(hook_log)
    results['hooks handed None'] += sum(1 for _, g in hook_log for v in g if v is None)

offsets = {}
deviations = {}
results = {'ok': 0, 'mismatch': 0, 'deviation': 0, 'calls compared': 0, 'hooks fired': 0,
           'hooks handed None': 0, 'tangents compared': 0, 'tangents with values': 0,
           'tangents checked in state': 0, 'pack calls compared': 0}
def run(seq, lines):
    offsets.clear()
    pack_calls.clear()
    try:
        seq()
        results['ok'] += 1
    except Deviation as e:
        results['deviation'] += 1
        reason = str(e).split(':')[0]
        deviations[reason] = deviations.get(reason, 0) + 1
    except (Mismatch, TypeError, NameError, AttributeError) as e:
        results['mismatch'] += 1
        print('---- mismatch:', e)
        for i, l in enumerate(lines):
            print(f'{i:3d}  {l}')
    finally:
        # A sequence may end (or stop) inside saved-tensor-hooks scopes or a dual level: the
        # next starts outside any.
        while open_scopes:
            open_scopes[-1].__exit__(None, None, None)
        try:
            while True:
                fwAD.exit_dual_level()
        except RuntimeError:
            pass
)PY";

int main_impl(int argc, char** argv) {
  uint64_t seed = 1;
  int sequences = 100, size = 40;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--sequences") sequences = std::atoi(argv[i + 1]);
    if (flag == "--size") size = std::atoi(argv[i + 1]);
  }
  std::cout << kHelpers;
  const auto gen = rc::state::gen::commands(Model(Semantics::pytorch()), &gen_command);
  rc::Random random(seed);
  std::map<std::string, int> events;  // how often each coverage label came up (printed to stderr)
  for (int k = 0; k < sequences; ++k) {
    const auto commands = gen(random.split(), size).value();
    Model m(Semantics::pytorch());
    std::ostringstream body, lines;
    int line = 0;
    std::vector<std::string> texts;
    for (const auto& c : commands) {
      const auto& cmd = static_cast<const ApiCommand&>(*c);
      const std::string text = cmd.text();
      texts.push_back(text);
      const Model before = m;
      Outcome out;
      try {
        out = cmd.predict(m);
      } catch (const std::exception& e) {
        std::cerr << "the model failed (" << e.what() << ") in:\n";
        for (const std::string& t : texts) std::cerr << "  " << t << "\n";
        return 1;
      }
      const std::string diverges = pytorch_diverges(before, m);
      if (!diverges.empty()) {
        body << "    raise Deviation(\"" << diverges << ": " << text << "\")\n";
        break;
      }
      for (const std::string& e : out.events) ++events[e];
      // Running the graph, PyTorch's refused call also writes retained .grads: put them back.
      const std::string kept = refused_before_running(out) ? retaining_names(m) : "";
      if (!kept.empty()) body << "    kept = [(t, t.grad) for t in [" << kept << "]]\n";
      body << "    hook_log.clear()\n    raised = None\n    try:\n        "
           << pytorch_call(text, out)
           << "\n    except (RuntimeError, IndexError, ValueError) as e:\n        raised = "
              "str(e).splitlines()[0]\n";
      if (!kept.empty()) body << "    for t, g in kept:\n        put_back(t, g)\n";
      const char* want = out.expect == Expect::kOk      ? "ok"
                         : out.expect == Expect::kRaise ? "raise"
                                                        : "maybe";
      std::string rule = out.rule;
      for (char& ch : rule) {
        if (ch == '\'') ch = '"';
      }
      body << "    expect(" << line << ", raised, '" << want << "', '" << rule << "')\n";
      body << packs_before_raise(m, out, line);
      if (out.expect == Expect::kOk && out.hooks_known) body << hook_checks(m, out, line);
      if (out.expect == Expect::kOk && out.tangent_checked) {
        body << "    chk_tangent(" << line << ", tangent, "
             << (out.tangent.defined ? py_list(out.tangent.grad) : "None") << ")\n";
      }
      body << after_call(m, text);
      for (int impl : out.dropped) {
        for (const auto& [name, i] : m.handles()) {
          if (i == impl) {
            body << "    " << tname(name) << ".grad = None\n";
            break;
          }
        }
      }
      body << state_checks(m, line);
      std::string quoted = text;
      for (char& ch : quoted) {
        if (ch == '\'') ch = '"';
      }
      lines << "'" << quoted << "', ";
      ++line;
    }
    std::cout << "\ndef seq" << k << "():\n" << body.str() << "    pass\n";
    std::cout << "run(seq" << k << ", [" << lines.str() << "])\n";
  }
  std::cout << "print(results)\nprint(deviations)\n";
  for (const auto& [e, n] : events) std::cerr << e << ": " << n << " calls\n";
  return 0;
}

}  // namespace
}  // namespace ag::proptests

int main(int argc, char** argv) { return ag::proptests::main_impl(argc, argv); }
