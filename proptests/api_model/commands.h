#pragma once

// The commands of the API state machine (RapidCheck's rc::state): each is one call a user makes
// (create a leaf, run an op, write in place, toggle requires_grad, backward, grad, touch .grad).
// A command is generated from the model's state, applies to the model (apply: Model::...), runs
// on the engine (run: the same call on ag:: tensors, then the comparison of everything the
// user can observe), and prints itself as a line of PyTorch (replay_prelude.py defines the few
// helpers it uses), so a shrunk failure reads, and replays, as a short PyTorch program.
//
// Note [Preconditions must not throw]
// While shrinking, RapidCheck re-checks every later command's preconditions against the state
// left by a shorter sequence, where the tensors a command names may not exist. A precondition
// that throws there (anything but RC_PRE's discard) silently ends the shrinking of the whole
// sequence, leaving a long counterexample. RC_PRE captures `a && b` operand by operand and
// evaluates both, so a guard (`m.has(x) && m.shape(x) == ...`) is written in parentheses,
// RC_PRE((a && b)), to keep C++'s short-circuit.

#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <memory>
#include <ostream>
#include <string>

#include "proptests/api_model/model.h"
#include "proptests/api_model/sut.h"

namespace ag::proptests {

class ApiCommand : public rc::state::Command<Model, Sut> {
 public:
  void apply(Model& m) const final { predict(m); }
  void run(const Model& before, Sut& sut) const final;
  void show(std::ostream& os) const final { os << text(); }

  // The call, as the model sees it, and what the runner's check after it leaves
  // (Model::end_call).
  Outcome predict(Model& m) const {
    Outcome out = step(m);
    m.end_call();
    return out;
  }
  virtual Outcome step(Model& m) const = 0;
  // The call on the engine. It binds the tensors it creates to the names `after` binds.
  virtual void exec(Sut& sut, const Model& after) const = 0;
  // Checks what the call returned (beyond the state every command checks), when it succeeded.
  virtual void verify(const Outcome& /*expected*/, const Sut& /*sut*/) const {}
  // The call as one line of PyTorch.
  virtual std::string text() const = 0;
};

using CommandPtr = std::shared_ptr<const rc::state::Command<Model, Sut>>;

// A random command that is valid in state `m` (rc::state::gen::commands calls it per step).
rc::Gen<CommandPtr> gen_command(const Model& m);

}  // namespace ag::proptests
