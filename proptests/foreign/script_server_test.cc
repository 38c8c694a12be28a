// The live driver's side of crash triage, with stand-in servers (no PyTorch): ScriptServer keeps
// how a server that died or hung on a script ended, with its stderr, for its signature.
#include <gtest/gtest.h>

#include <csignal>

#include "proptests/conformance/foreign_engine.h"
#include "proptests/foreign/crash_signature.h"

namespace ag::proptests {
namespace {

TEST(ScriptServer, KeepsTheSignalAndStderrOfAServerThatDied) {
  ScriptServer server({"/bin/sh", "-c",
                       "echo 'Fatal Python error: Segmentation fault' >&2; "
                       "kill -SEGV $$"});
  EXPECT_FALSE(server.request("x = 1\n"));
  const std::optional<ForeignOutcome> death = server.take_death();
  ASSERT_TRUE(death);
  EXPECT_FALSE(death->timed_out);
  EXPECT_EQ(death->signal, SIGSEGV);
  EXPECT_EQ(death->stderr_text, "Fatal Python error: Segmentation fault\n");
  EXPECT_EQ(crash_signature(*death)->key(), "signal: SIGSEGV");
  EXPECT_FALSE(server.take_death());  // once
}

TEST(ScriptServer, AScriptBeyondTheTimeLimitIsAHang) {
  // It hangs on its first script; the server started in its place ends with its input.
  ScriptServer server({"/bin/sh", "-c", "read line && exec sleep 30"}, 0.2);
  EXPECT_FALSE(server.request("x = 1\n"));
  const std::optional<ForeignOutcome> death = server.take_death();
  ASSERT_TRUE(death);
  EXPECT_TRUE(death->timed_out);
  EXPECT_EQ(crash_signature(*death)->kind, CrashKind::kHang);
}

// An internal assert that PyTorch raised as an exception: the server answers, and what it wrote
// on stderr meanwhile is there for the signature.
TEST(ScriptServer, StderrOfAServerThatAnswered) {
  ScriptServer server({"/bin/sh", "-c",
                       "read n; read line; echo 'RuntimeError: ok() INTERNAL ASSERT FAILED at "
                       "\"/p/torch/csrc/a.cpp\":3, please report a bug to PyTorch.' >&2; "
                       "printf '20\\ns0 reference-failed\\n'"});
  EXPECT_EQ(server.request("x = 1\n"), "s0 reference-failed\n");
  ForeignOutcome o;
  o.stderr_text = server.take_stderr();
  EXPECT_EQ(crash_signature(o)->key(),
            "internal-assert: ok() INTERNAL ASSERT FAILED at \"torch/csrc/a.cpp\", please report a "
            "bug to PyTorch.");
  EXPECT_EQ(server.take_stderr(), "");
  EXPECT_FALSE(server.take_death());
}

}  // namespace
}  // namespace ag::proptests
