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
  std::optional<ForeignOutcome> take_crash() override {
    std::optional<ForeignOutcome> out = crash_;
    crash_.reset();
    return out;
  }

 private:
  bool flaky_;
  int runs_ = 0;
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

TEST(CrashReduce, NoCrashNoSignature) {
  CrashingEngine engine(false);
  EXPECT_FALSE(fresh_crash(parse_program("v0 = leaf [2] seed=1 requires_grad=1\n"), engine));
}

}  // namespace
}  // namespace ag::proptests
