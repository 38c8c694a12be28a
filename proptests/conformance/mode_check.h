#pragma once

// Note [PyTorch against itself]
// PyTorch has several ways to differentiate one function: eager autograd (torch.autograd.grad),
// torch.func (vjp, jvp), forward_ad, and torch.compile (backend="aot_eager", which traces the
// function and its backward with AOTAutograd). They must agree; where they do not, PyTorch is its
// own witness of a wrong result (F5 in paper/results/foreign_findings.md is one: forward AD
// against the out-of-place product). The mode check (`fuzz --against pytorch --modes`) runs a
// generated program's functional core through each of them:
//   1. the core: the largest cone of pure ops (the op list's, no dropout with p > 0) from the
//      program's leaves to one op's result: no views, in-place writes, .grad state, hooks or
//      custom Functions, so every mode applies (functional_core);
//   2. the mode program: the core's leaves as primals, a cotangent c and a tangent t per primal
//      (leaves of their own), then one transform statement per mode over the core as its body
//      (Note [Conformance forward mode], program.h): func vjp, eager_vjp, compiled_vjp, func jvp,
//      dual_jvp (mode_program). PyTorch runs it through torch_runtime.py's transform(); this
//      engine runs every reverse mode as its vjp and every forward mode as its jvp, the witness;
//   3. the verdict (proptests/foreign/mode_verdict.h, Note [Mode verdicts]) on the value (every
//      mode), each input's gradient (the reverse modes) and <c, J t> (reverse: sum_i <g_i, t_i>,
//      forward: <c, jvp>), with a kink tested by finite differences of <c, f(x)> on this engine's
//      forward (as Note [Independent answers for a grad() result] does for grad() results).
// An inconsistency is a finding of the bug class "mode inconsistency" (Note [Bug classes]); its
// standalone script (mode_repro_script, mode_repro.h) needs only PyTorch and asserts that the modes
// agree. With `--modes-jax` the same script also runs on JAX (jax_runtime.py: jax.vjp and jax.jvp,
// jit off and on), whose answers join PyTorch's in a second verdict (add_jax_answers): a
// disagreement there is logged apart, as it may be JAX's or a convention (a subgradient at a tie is
// a kink).

#include <optional>
#include <string>
#include <vector>

#include "engine/tensor.h"
#include "proptests/conformance/foreign_engine.h"
#include "proptests/conformance/program.h"
#include "proptests/conformance/records.h"
#include "proptests/foreign/mode_verdict.h"

namespace ag::proptests {

// A program's functional core: the statements of its leaves (the primals, in program order) and
// its ops (the body, numbered as a transform's: primals first, then the body's own values).
struct FunctionalCore {
  std::vector<Stmt> leaves;
  std::vector<Instr> body;
};
std::optional<FunctionalCore> functional_core(const ConformanceProgram& program);

// The mode program's parts: its leaves (the primals, the cotangent, a tangent per primal) and its
// transform statements' body.
struct ModeLayout {
  size_t primals = 0;  // k: primals v0..v(k-1), cotangent vk, tangents v(k+1)..v(2k)
  std::vector<Stmt> leaves;
  std::vector<Instr> body;
};
ModeLayout mode_layout(const ConformanceProgram& modes);
// A leaf statement's values (float64, as the engine and torch_runtime.py's leaf() make them).
Tensor mode_leaf_value(const Stmt& leaf);

// PyTorch's modes in the mode program's order, with the names the verdict uses.
struct Mode {
  TransformKind transform;
  const char* name;  // "torch.func.vjp", ...
  bool reverse;      // results: value, one gradient per primal; else value, tangent
};
const std::vector<Mode>& pytorch_modes();

// The mode program of a core: primals v0..v(k-1), cotangent vk, tangents v(k+1)..v(2k), then one
// transform statement per mode.
ConformanceProgram mode_program(const FunctionalCore& core);

// The verdict's input from the records of both engines for the mode program (no kink test: the
// caller's, below); `raised` gets the modes whose statement PyTorch raised on.
ModeCheckInput mode_check_input(const ConformanceProgram& modes, const Records& pytorch,
                                const Records& engine, std::vector<std::string>* raised = nullptr);
// Adds JAX's answers from its records for the mode program (foreign_engine.h, jax_runtime.py):
// "jax.vjp", "jax.jit(jax.vjp)", "jax.jvp", "jax.jit(jax.jvp)" (its eager_vjp is its vjp again,
// left out); `raised` gets those that raised (an op JAX's namespace lacks, say).
void add_jax_answers(ModeCheckInput& input, const ConformanceProgram& modes, const Records& jax,
                     std::vector<std::string>* raised = nullptr);

// Whether <c, f(x)> is smooth at the primals: the one-sided differences of every element agree
// with the central one.
bool smooth_at_primals(const ConformanceProgram& modes, double step = 1e-6);

struct ModeCheckRun {
  // Why the program was not run in the modes: "no functional core", "the core raises" (one of its
  // ops raises on this engine, as it did in the program); empty when it ran.
  std::string skipped;
  ConformanceProgram modes;
  std::vector<std::string> raised;  // modes that raised in PyTorch
  ModeVerdict verdict;              // PyTorch's modes against each other
  // With JAX: PyTorch's modes and JAX's, jit off and on, against each other (a disagreement of
  // JAX's is not a finding about PyTorch; the driver logs it apart), and JAX's modes that raised.
  std::optional<ModeVerdict> with_jax;
  std::vector<std::string> jax_raised;
};
ModeCheckRun run_mode_check(const ConformanceProgram& program, ForeignEngine& pytorch,
                            ForeignEngine* jax = nullptr);

}  // namespace ag::proptests
