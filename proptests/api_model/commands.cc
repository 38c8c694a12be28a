#include "proptests/api_model/commands.h"

#include "engine/error.h"
#include "proptests/api_model/command_gens.h"
#include "proptests/api_model/custom_functions.h"

namespace ag::proptests {

namespace {

std::string needs_str(const std::vector<bool>& needs) {
  std::string s = "(";
  for (size_t i = 0; i < needs.size(); ++i)
    s += (i ? ", " : "") + std::string(needs[i] ? "1" : "0");
  return s + ")";
}

// The custom Functions that ran, and what each saw as needs_input_grad, against the model.
void check_needs(const Outcome& expected, const std::string& call) {
  const std::map<int, std::vector<bool>>& seen = custom_needs_log();
  for (const auto& [tag, needs] : expected.needs) {
    auto it = seen.find(tag);
    if (it == seen.end()) {
      RC_FAIL("the custom Function recorded as node " + std::to_string(tag) +
              " did not run; it lies on a path to a requested input\n  in: " + call);
    }
    if (it->second != needs) {
      RC_FAIL("the custom Function recorded as node " + std::to_string(tag) +
              " saw needs_input_grad " + needs_str(it->second) + ", the ideal is " +
              needs_str(needs) +
              " (input i is needed iff its edge leads to a requested input)\n  in: " + call);
    }
  }
  for (const auto& [tag, needs] : seen) {
    if (!expected.needs.count(tag)) {
      RC_FAIL("the custom Function recorded as node " + std::to_string(tag) +
              " ran, though no requested input lies beyond it\n  in: " + call);
    }
  }
}

// Note [Model hooks], Note [Model node hooks]: which hooks fired, what each was handed, and
// their order (Model::runs_before).
void check_hooks(const Model& m, const Outcome& expected, const std::vector<FiredHook>& log,
                 const std::string& call) {
  std::map<int, size_t> at;  // id -> position in the log
  for (size_t k = 0; k < log.size(); ++k) {
    if (!at.emplace(log[k].id, k).second) {
      RC_FAIL("hook h" + std::to_string(log[k].id) + " fired twice\n  in: " + call);
    }
    if (!expected.hooks.count(log[k].id)) {
      RC_FAIL("hook h" + std::to_string(log[k].id) +
              " fired; the model says it does not\n  in: " + call);
    }
  }
  for (const auto& [id, want] : expected.hooks) {
    const std::string who = "hook h" + std::to_string(id);
    if (!at.count(id)) RC_FAIL(who + " did not fire; the model says it does\n  in: " + call);
    const std::vector<HookValue>& got = log[at[id]].values;
    if (got.size() != want.values.size()) {
      RC_FAIL(who + " was handed " + std::to_string(got.size()) + " tensors, model " +
              std::to_string(want.values.size()) + "\n  in: " + call);
    }
    for (size_t j = 0; j < got.size(); ++j) {
      const HookValue &g = got[j], &w = want.values[j];
      const std::string what = who + " value " + std::to_string(j);
      if (g.defined != w.defined) {
        RC_FAIL(what + (g.defined ? " is a tensor" : " is None") +
                "; the model says the opposite\n  in: " + call);
      }
      for (size_t i = 0; i < w.grad.size(); ++i) {
        if (i >= g.grad.size() || !close(g.grad[i], w.grad[i])) {
          RC_FAIL(what + " element " + std::to_string(i) + " is " +
                  (i < g.grad.size() ? std::to_string(g.grad[i]) : "missing") + ", model " +
                  std::to_string(w.grad[i]) + "\n  in: " + call);
        }
      }
    }
    for (const auto& [id2, want2] : expected.hooks) {
      if (m.runs_before(id2, id) && at[id2] > at[id]) {
        RC_FAIL(who + " ran before h" + std::to_string(id2) + "\n  in: " + call);
      }
    }
  }
}

// Coverage labels: which rules a sequence exercised.
void note_events(const std::string& call, const Outcome& expected, Sut& sut) {
  if (expected.expect == Expect::kRaise) {
    const std::string& r = expected.rule;
    sut.events.insert(r.find("memory location") != std::string::npos     ? "raised: overlap"
                      : r.find("inplace operation") != std::string::npos ? "raised: version"
                      : r.find("second time") != std::string::npos       ? "raised: freed graph"
                      : r.find("interior") != std::string::npos          ? "raised: leaf moved"
                      : r.find("not used") != std::string::npos          ? "raised: not reached"
                                                                         : "raised: other");
  }
  if (expected.expect == Expect::kMaybe) sut.events.insert("may raise");
  if (call.find("create_graph=True") != std::string::npos) sut.events.insert("create_graph");
  if (call.find("Two.apply") != std::string::npos) sut.events.insert("two-output Function");
  if (call.find("_(") != std::string::npos) sut.events.insert("in-place op");
  const bool slice = call.find('[') != std::string::npos && call.find(':') != std::string::npos &&
                     call.find("with ") == std::string::npos;
  for (const char* view : {".transpose(", ".permute(", ".select(", ".narrow(", ".expand(",
                           ".unsqueeze(", ".squeeze(", ".diagonal(", ".t()"}) {
    if (slice || call.find(view) != std::string::npos) sut.events.insert("strided view");
  }
  if (call.find("retain_grad") != std::string::npos) sut.events.insert("retain_grad");
  if (!expected.dropped.empty()) sut.events.insert(".grad dropped (uncertain)");
  sut.events.insert(expected.events.begin(), expected.events.end());
}

}  // namespace

void ApiCommand::run(const Model& before, Sut& sut) const {
  Model after = before;
  const Outcome expected = predict(after);
  const std::string call = text();
  sut.shown.push_back(call);
  custom_needs_log().clear();
  sut.hook_log->clear();
  bool raised = false;
  std::string error;
  {
    HangGuard guard(sut, 120.0);
    try {
      exec(sut, after);
    } catch (const Error& e) {
      raised = true;
      error = e.what();
    } catch (const std::exception& e) {
      RC_FAIL(call + " threw " + e.what() + ", which is not an ag::Error");
    }
  }
  if (raised && expected.expect == Expect::kOk) {
    RC_FAIL(call + " raised, but PyTorch's rules say it succeeds. It said: " + error);
  }
  if (!raised && expected.expect == Expect::kRaise) {
    RC_FAIL(call + " succeeded, but must raise: " + expected.rule);
  }
  if (!raised && expected.expect == Expect::kOk) {
    verify(expected, sut);
    check_needs(expected, call);
    if (expected.hooks_known) check_hooks(after, expected, *sut.hook_log, call);
  }
  note_events(call, expected, sut);
  // Note [Uncertain state] (model.h).
  for (int impl : expected.dropped) sut.tensor_of(after, impl).set_grad(Tensor());
  sut.check(after, call);
}

rc::Gen<CommandPtr> gen_command(const Model& m) {
  auto model = std::make_shared<const Model>(m);
  // At full size whatever the test's size: that only sets how long sequences are.
  return rc::gen::resize(100, rc::gen::exec([model] {
                           const Model& s = *model;
                           if (s.names().empty()) return make_leaf(s);
                           for (;;) {
                             CommandPtr c;
                             switch (*rc::gen::weightedElement<int>({{14, 0},
                                                                     {38, 1},
                                                                     {6, 2},
                                                                     {5, 3},
                                                                     {12, 4},
                                                                     {4, 5},
                                                                     {5, 6},
                                                                     {3, 7},
                                                                     {3, 8},
                                                                     {9, 9},
                                                                     {9, 10},
                                                                     {8, 11},
                                                                     {6, 12},
                                                                     {5, 13},
                                                                     {14, 14},
                                                                     {5, 15}})) {
                               case 0:
                                 c = make_leaf(s);
                                 break;
                               case 1:
                                 c = make_op(s);
                                 break;
                               case 2:
                                 c = make_view(s);
                                 break;
                               case 3:
                                 c = make_alias(s);
                                 break;
                               case 4:
                                 c = make_inplace(s);
                                 break;
                               case 5:
                                 c = make_custom(s);
                                 break;
                               case 6:
                                 c = make_set_requires_grad(s);
                                 break;
                               case 7:
                                 c = make_set_grad(s);
                                 break;
                               case 8:
                                 c = make_take_grad(s);
                                 break;
                               case 9:
                                 c = make_backward(s);
                                 break;
                               case 11:
                                 c = make_retain_grad(s);
                                 break;
                               case 12:
                                 c = make_register_hook(s);
                                 break;
                               case 13:
                                 c = make_node_hook(s);
                                 break;
                               case 14:
                                 c = make_dual_call(s);
                                 break;
                               case 15:
                                 c = make_saved_hooks(s);
                                 break;
                               default:
                                 c = make_grad(s);
                                 break;
                             }
                             if (c) return c;
                           }
                         }));
}

}  // namespace ag::proptests
