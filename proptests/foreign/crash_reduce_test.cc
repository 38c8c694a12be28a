// Crash reduction and confirmation with a stand-in foreign engine (no PyTorch) that segfaults on
// every program with a copy_ into a custom Function's output, always or every other run.
#include "proptests/foreign/crash_reduce.h"

#include <gtest/gtest.h>

#include <csignal>

namespace ag::proptests {
namespace {

class CrashingEngine final : public ForeignEngine {
 public:
  explicit CrashingEngine(bool flaky) : flaky_(flaky) {}
  std::string name() const override { return "crashing"; }
  std::string version() override { return "crashing 1"; }
  std::string script(const ConformanceProgram& p, const std::string&) const override {
    return to_text(p);
  }
  std::string runtime_path() const override { return ""; }
  std::string explain(const std::string&) override { return ""; }
  Records run(const std::string& script) override { return run_fresh(script); }
  Records run_fresh(const std::string& script) override {
    ++runs_;
    const bool custom = script.find("custom") != std::string::npos;
    if (custom && script.find("copy_") != std::string::npos && (!flaky_ || runs_ % 2 == 0)) {
      ForeignOutcome o;
      o.signal = SIGSEGV;
      o.stderr_text =
          "/venv/torch/lib/libtorch_cpu.so(_ZN5torch8autograd4Node4nameB5cxx11Ev+0x13) "
          "[0x7f00000000" +
          std::to_string(runs_ % 100) + "]\n";
      crash_ = o;
      return Records{{"s0 reference-failed"}};
    }
    return Records{{"s0 ok"}};
  }
  // A standalone script crashes as the program does; the stand-in counts the runs.
  std::optional<ForeignOutcome> run_standalone(const std::string& script) override {
    ++standalone_runs_;
    ForeignOutcome o;
    if (script.find(".copy_(") != std::string::npos && (!flaky_ || standalone_runs_ % 3 != 0)) {
      o.signal = SIGSEGV;
      o.stderr_text = "frame #3: torch::autograd::CopySlices::apply() + 0x1 (0x7f0" +
                      std::to_string(standalone_runs_) + " in /venv/torch/lib/libtorch_cpu.so)\n";
    }
    return o;
  }
  std::optional<ForeignOutcome> take_crash() override {
    std::optional<ForeignOutcome> out = crash_;
    crash_.reset();
    return out;
  }

 private:
  bool flaky_;
  int runs_ = 0, standalone_runs_ = 0;
  std::optional<ForeignOutcome> crash_;
};

const char* const kProgram =
    "v0 = leaf [2] seed=1 requires_grad=1\n"
    "v1 = leaf [2] seed=2 requires_grad=1\n"
    "v2 = exp v0\n"
    "v3 v4 = custom Two v0 v1\n"
    "v5 = mul v2 v1\n"
    "v6 = view v3 [2]\n"
    "copy_ v6 v1 no_grad=0\n"
    "v7 = sum v5\n";

TEST(CrashReduce, ReducesWithTheSameSignatureAndConfirmsTenTimes) {
  CrashingEngine engine(false);
  const ConformanceProgram program = parse_program(kProgram);
  const std::optional<Signature> sig = fresh_crash(program, engine);
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->key(), "signal: SIGSEGV | torch::autograd::Node::name[abi:cxx11]");
  const ReducedCrash r = reduce_crash(program, *sig, engine);
  EXPECT_EQ(to_text(r.program),
            "v0 = leaf [2] seed=1 requires_grad=1\n"
            "v1 = leaf [2] seed=2 requires_grad=1\n"
            "v2 v3 = custom Two v0 v1\n"
            "v4 = view v2 [2]\n"
            "copy_ v4 v1 no_grad=0\n");
  EXPECT_EQ(r.runs, 10);
  EXPECT_EQ(r.crashes, 10);
  EXPECT_TRUE(r.confirmed());
}

TEST(CrashReduce, ACrashThatDoesNotRepeatIsNotConfirmed) {
  CrashingEngine engine(true);
  const ConformanceProgram program = parse_program(kProgram);
  std::optional<Signature> sig = fresh_crash(program, engine);
  if (!sig) sig = fresh_crash(program, engine);
  ASSERT_TRUE(sig);
  const ReducedCrash r = reduce_crash(program, *sig, engine);
  EXPECT_EQ(r.runs, 10);
  EXPECT_EQ(r.crashes, 5);
  EXPECT_FALSE(r.confirmed());
}

TEST(CrashReduce, StandaloneScriptConfirmedInEveryRun) {
  CrashingEngine engine(false);
  const StandaloneConfirmation c = confirm_standalone("import torch\nv1.copy_(v0)\n", engine);
  EXPECT_EQ(c.runs, 10);
  EXPECT_EQ(c.crashes, 10);
  ASSERT_TRUE(c.signature);
  EXPECT_EQ(c.signature->key(), "signal: SIGSEGV | torch::autograd::CopySlices::apply");
  EXPECT_TRUE(c.confirmed());
}

TEST(CrashReduce, StandaloneScriptThatCrashesSometimesIsNotConfirmed) {
  CrashingEngine engine(true);  // every third run passes
  const StandaloneConfirmation c = confirm_standalone("import torch\nv1.copy_(v0)\n", engine);
  EXPECT_EQ(c.runs, 10);
  EXPECT_EQ(c.crashes, 7);
  EXPECT_FALSE(c.confirmed());
}

TEST(CrashReduce, StandaloneScriptThatPassesIsNotConfirmed) {
  CrashingEngine engine(false);
  const StandaloneConfirmation c = confirm_standalone("import torch\nv1.add_(v0)\n", engine);
  EXPECT_EQ(c.runs, 10);
  EXPECT_EQ(c.crashes, 0);
  EXPECT_FALSE(c.signature);
  EXPECT_FALSE(c.confirmed());
}

TEST(CrashReduce, NoCrashNoSignature) {
  CrashingEngine engine(false);
  EXPECT_FALSE(fresh_crash(parse_program("v0 = leaf [2] seed=1 requires_grad=1\n"), engine));
}

TEST(CrashReduce, RaisingStatementsFromTheRecords) {
  Records r;
  r.lines = {"s0 ok",    "s0 v0 [2] rg=1 leaf=1", "s1 raise version", "s2 skip",
             "s3 raise", "s12 raise freed",       "end v0 grad none"};
  EXPECT_EQ(raising_statements(r), (std::set<size_t>{1, 3, 12}));
}

// The stand-in crashes on any script with a copy_: the first style tried (compact Functions,
// random leaves) is the one kept, confirmed 10 times with the group's signature.
TEST(CrashReduce, StandaloneReproInTheFirstStyleThatCrashes) {
  CrashingEngine engine(false);
  const ConformanceProgram program = parse_program(
      "v0 = leaf [2] seed=1 requires_grad=1\n"
      "v1 = leaf [2] seed=2 requires_grad=1\n"
      "v2 v3 = custom Two v0 v1\n"
      "v4 = view v2 [2]\n"
      "copy_ v4 v1 no_grad=0\n");
  const Signature sig = signature_of_key("signal: SIGSEGV | torch::autograd::CopySlices::apply");
  const StandaloneRepro r = find_standalone(program, sig, {}, engine);
  EXPECT_EQ(r.why_none, "");
  EXPECT_EQ(r.script.rfind("import torch\nclass Two(torch.autograd.Function):\n", 0), 0u)
      << r.script;
  EXPECT_NE(r.script.find("v0 = torch.rand([2], dtype=torch.float64, requires_grad=True)\n"),
            std::string::npos)
      << r.script;
  EXPECT_EQ(r.confirmation.runs, 10);
  EXPECT_EQ(r.confirmation.crashes, 10);
  EXPECT_TRUE(r.confirmation.confirmed());
}

TEST(CrashReduce, NoStandaloneReproWhenItsSignatureDiffers) {
  CrashingEngine engine(false);
  const ConformanceProgram program = parse_program(
      "v0 = leaf [2] seed=1 requires_grad=1\n"
      "v1 = view v0 [2]\n"
      "copy_ v1 v0 no_grad=1\n");
  const Signature other = signature_of_key("signal: SIGSEGV | at::native::add");
  const StandaloneRepro r = find_standalone(program, other, {}, engine);
  EXPECT_EQ(r.script, "");
  EXPECT_EQ(r.why_none,
            "no style crashes with the signature (signal: SIGSEGV | "
            "torch::autograd::CopySlices::apply; signal: SIGSEGV | "
            "torch::autograd::CopySlices::apply; signal: SIGSEGV | "
            "torch::autograd::CopySlices::apply)");
}

}  // namespace
}  // namespace ag::proptests
