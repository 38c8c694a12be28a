// The mode check (Note [PyTorch against itself]) without PyTorch: the functional core of a
// program, the mode program made of it, and the verdict's input read from records, with this
// engine's records standing in for PyTorch's (a planted change of one mode's value is then an
// inconsistency with the engine as the witness of the others).
#include "proptests/conformance/mode_check.h"

#include <gtest/gtest.h>

#include "proptests/conformance/engine_runner.h"
#include "proptests/conformance/mode_repro.h"
#include "proptests/conformance/text.h"

namespace ag::proptests {
namespace {

// Two leaves and pure ops, then a view and an in-place write that the core leaves out.
const char* const kProgram =
    "v0 = leaf [2,3] seed=17 requires_grad=1\n"
    "v1 = leaf [2,3] seed=18 requires_grad=1\n"
    "v2 = mul v0 v1\n"
    "v3 = sin v2\n"
    "v4 = view v3 [6]\n"
    "v5 = exp v0\n"
    "add_ v4 v4 no_grad=0\n"
    "v6 = sum v4\n";

TEST(ModeCheck, TheCoreIsTheLargestConeOfPureOps) {
  const std::optional<FunctionalCore> core = functional_core(parse_program(kProgram));
  ASSERT_TRUE(core);
  ASSERT_EQ(core->leaves.size(), 2u);
  EXPECT_EQ(core->leaves[1].seed, 18u);
  ASSERT_EQ(core->body.size(), 2u);  // mul, sin: the view's sum is not pure
  EXPECT_EQ(core->body[0].args, (std::vector<int>{0, 1}));
  EXPECT_EQ(core->body[1].args, (std::vector<int>{2}));
}

TEST(ModeCheck, NoPureOpNoCore) {
  EXPECT_FALSE(
      functional_core(parse_program("v0 = leaf [2] seed=1 requires_grad=1\n"
                                    "v1 = view v0 [2]\n"
                                    "v2 = sum v1\n")));
  EXPECT_FALSE(
      functional_core(parse_program("v0 = leaf [2] seed=1 requires_grad=1\n"
                                    "v1 = dropout v0 p=0.5 seed=3\n")));
}

TEST(ModeCheck, TheModeProgramRunsOneBodyInEveryMode) {
  const ConformanceProgram modes = mode_program(*functional_core(parse_program(kProgram)));
  const std::string text = to_text(modes);
  // Primals, the cotangent of sin's [2,3] result, a tangent per primal, five modes.
  EXPECT_NE(text.find("v2 = leaf [2,3] seed="), std::string::npos) << text;
  EXPECT_NE(text.find("v5 v6 v7 = func vjp n=2 v0 v1 v2 body=mul,v0,v1;sin,v2"), std::string::npos)
      << text;
  EXPECT_NE(text.find("func eager_vjp n=2 v0 v1 v2 "), std::string::npos) << text;
  EXPECT_NE(text.find("func compiled_vjp n=2 v0 v1 v2 "), std::string::npos) << text;
  EXPECT_NE(text.find("v14 v15 = func jvp n=2 v0 v1 v3 v4 "), std::string::npos) << text;
  EXPECT_NE(text.find("v16 v17 = func dual_jvp n=2 v0 v1 v3 v4 "), std::string::npos) << text;
  EXPECT_EQ(to_text(parse_program(text)), text);
}

TEST(ModeCheck, TheEngineAgreesWithItselfInEveryMode) {
  const ConformanceProgram modes = mode_program(*functional_core(parse_program(kProgram)));
  const Records ours = run_on_engine(modes);
  std::vector<std::string> raised;
  const ModeCheckInput in = mode_check_input(modes, ours, ours, &raised);
  EXPECT_TRUE(raised.empty());
  ASSERT_EQ(in.quantities.size(), 4u);  // value, grad v0, grad v1, <c, J t>
  EXPECT_EQ(in.quantities[0].answers.size(), 5u);
  EXPECT_EQ(in.quantities[1].answers.size(), 3u);
  EXPECT_EQ(in.quantities[3].answers.size(), 5u);
  EXPECT_TRUE(in.quantities[3].engine.available);
  EXPECT_GT(in.quantities[3].scale, 0);
  EXPECT_TRUE(smooth_at_primals(modes));
  EXPECT_EQ(decide_modes(in, mode_tolerance(false)).kind, ModeVerdictKind::kConsistent);
}

// The engine's records with the first number of the line starting with `prefix` doubled.
Records planted(Records records, const std::string& prefix) {
  for (std::string& line : records.lines) {
    if (line.rfind(prefix, 0) != 0) continue;
    const size_t eq = line.find(" = ");
    const size_t end = line.find(' ', eq + 3);
    const double x = parse_double(line.substr(eq + 3, end - eq - 3));
    line = line.substr(0, eq + 3) + format_double(2 * x) + line.substr(end);
    return records;
  }
  ADD_FAILURE() << "no line " << prefix;
  return records;
}

TEST(ModeCheck, APlantedCompiledGradientIsAnInconsistencyWitnessedByTheEngine) {
  const ConformanceProgram modes = mode_program(*functional_core(parse_program(kProgram)));
  const Records ours = run_on_engine(modes);
  // Statement 7 is compiled_vjp; its results are v11 (the value), v12 (the gradient of v0), v13.
  const Records theirs = planted(ours, "s7 v12 ");
  ModeCheckInput in = mode_check_input(modes, theirs, ours);
  in.smooth = smooth_at_primals(modes);
  const ModeVerdict v = decide_modes(in, mode_tolerance(false));
  ASSERT_EQ(v.kind, ModeVerdictKind::kInconsistent) << v.reason;
  EXPECT_EQ(v.quantity, "grad v0");
  EXPECT_EQ(v.disagreeing, std::vector<std::string>{"torch.compile(aot_eager)"});
  EXPECT_EQ(v.agree_with_engine,
            (std::vector<std::string>{"torch.func.vjp", "torch.autograd.grad"}));
}

TEST(ModeCheck, AModeThatRaisedIsLeftOut) {
  const ConformanceProgram modes = mode_program(*functional_core(parse_program(kProgram)));
  const Records ours = run_on_engine(modes);
  Records theirs;
  for (const std::string& line : ours.lines) {
    if (line.rfind("s8 ", 0) == 0) {
      if (line == "s8 ok") theirs.lines.push_back("s8 raise");
      continue;
    }
    theirs.lines.push_back(line);
  }
  std::vector<std::string> raised;
  const ModeCheckInput in = mode_check_input(modes, theirs, ours, &raised);
  EXPECT_EQ(raised, std::vector<std::string>{"torch.func.jvp"});
  EXPECT_EQ(in.quantities[0].answers.size(), 4u);
  EXPECT_EQ(decide_modes(in, mode_tolerance(false)).kind, ModeVerdictKind::kConsistent);
}

// JAX's records (jax_runtime.py) stand in as the engine's: four more answers per quantity, two
// per gradient; PyTorch's own verdict is not affected by them.
TEST(ModeCheck, JaxAnswersJoinEveryQuantity) {
  const ConformanceProgram modes = mode_program(*functional_core(parse_program(kProgram)));
  const Records ours = run_on_engine(modes);
  ModeCheckInput in = mode_check_input(modes, ours, ours);
  std::vector<std::string> raised;
  // JAX's jit(jvp) (statement 9, results v16 v17) with a doubled tangent.
  add_jax_answers(in, modes, planted(ours, "s9 v17 "), &raised);
  EXPECT_TRUE(raised.empty());
  EXPECT_EQ(in.quantities[0].answers.size(), 9u);
  EXPECT_EQ(in.quantities[1].answers.size(), 5u);
  EXPECT_EQ(in.quantities[1].answers[3].mode, "jax.vjp");
  EXPECT_EQ(in.quantities[1].answers[4].mode, "jax.jit(jax.vjp)");
  in.smooth = smooth_at_primals(modes);
  const ModeVerdict v = decide_modes(in, mode_tolerance(false));
  ASSERT_EQ(v.kind, ModeVerdictKind::kInconsistent) << v.reason;
  EXPECT_EQ(v.quantity, "<c, J t>");
  EXPECT_EQ(v.disagreeing, std::vector<std::string>{"jax.jit(jax.jvp)"});
}

TEST(ModeCheck, TheStandaloneScriptSpellsEveryMode) {
  const std::string script =
      mode_repro_script(mode_program(*functional_core(parse_program(kProgram))));
  EXPECT_NE(script.find("def f(v0, v1):\n    v2 = v0 * v1\n    v3 = torch.sin(v2)\n"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("torch.compile(f, backend=\"aot_eager\")"), std::string::npos);
  EXPECT_NE(script.find("torch.func.jvp(f, tuple(x), tuple(t))"), std::string::npos);
  EXPECT_NE(script.find("fwAD.make_dual"), std::string::npos);
  EXPECT_NE(script.find("dtype=torch.float64).reshape([2, 3])"), std::string::npos);
}

}  // namespace
}  // namespace ag::proptests
