// Crash signatures on recorded outputs of PyTorch processes (Note [Crash signatures]): the same
// bug gives the same signature across runs, different bugs different ones.
#include "proptests/foreign/crash_signature.h"

#include <gtest/gtest.h>

#include <csignal>

namespace ag::proptests {
namespace {

// A segfault in PyTorch's backward: faulthandler's Python stack, then glibc's native backtrace.
// `base` and `line` vary the load addresses and the line numbers, as another run does.
std::string segfault_stderr(const std::string& base, const std::string& line) {
  return "Fatal Python error: Segmentation fault\n"
         "\n"
         "Thread 0x00007f" +
         base +
         "1700 (most recent call first):\n"
         "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
         "\n"
         "Current thread 0x00007f" +
         base +
         "2740 (most recent call first):\n"
         "  File \"/venv/lib/python3.11/site-packages/torch/autograd/graph.py\", line " +
         line +
         " in _engine_run_backward\n"
         "  File \"/venv/lib/python3.11/site-packages/torch/autograd/__init__.py\", line 289 in "
         "backward\n"
         "  File \"/work/proptests/conformance/torch_runtime.py\", line 226 in backward\n"
         "  File \"<program>\", line 7 in <module>\n"
         "\n"
         "Extension modules: numpy.core._multiarray_umath, torch._C (total: 20)\n"
         "/venv/lib/python3.11/site-packages/torch/lib/libc10.so(_ZN3c1018FatalSignalHandler"
         "23stacktraceSignalHandlerEb+0x2c) [0x7f" +
         base +
         "0010]\n"
         "/lib/x86_64-linux-gnu/libc.so.6(+0x42520) [0x7f" +
         base +
         "0020]\n"
         "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so("
         "_ZN5torch8autograd4Node4nameB5cxx11Ev+0x13) [0x7f" +
         base +
         "0030]\n"
         "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so("
         "_ZN5torch8autograd6Engine17evaluate_functionERSt10shared_ptrINS0_9GraphTaskEEPNS0_"
         "4NodeERNS0_11InputBufferERKS2_INS0_10ReadyQueueEE+0x5a1) [0x7f" +
         base +
         "0040]\n"
         "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so("
         "_ZN5torch8autograd6Engine11thread_mainERKSt10shared_ptrINS0_9GraphTaskEE.isra.0+0x2e8) "
         "[0x7f" +
         base +
         "0050]\n"
         "python3(+0x1f2a3b) [0x55" +
         base + "0060]\n";
}

TEST(CrashSignature, SegfaultFromTheWaitStatusAndGlibcFrames) {
  const ForeignOutcome o =
      ForeignOutcome::from_wait_status(SIGSEGV, false, segfault_stderr("a1b2c3", "825"));
  ASSERT_EQ(o.signal, SIGSEGV);
  const auto sig = crash_signature(o, 3);
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->kind, CrashKind::kSignal);
  EXPECT_EQ(sig->headline, "SIGSEGV");
  // The handler's frame and libc's and python's are not PyTorch's own; the clone suffix goes.
  EXPECT_EQ(sig->frames, (std::vector<std::string>{"torch::autograd::Node::name[abi:cxx11]",
                                                   "torch::autograd::Engine::evaluate_function",
                                                   "torch::autograd::Engine::thread_main"}));
  EXPECT_EQ(sig->key(),
            "signal: SIGSEGV | torch::autograd::Node::name[abi:cxx11] | "
            "torch::autograd::Engine::evaluate_function | torch::autograd::Engine::thread_main");
}

TEST(CrashSignature, SameCrashWithOtherAddressesHasTheSameSignature) {
  ForeignOutcome a, b;
  a.signal = b.signal = SIGSEGV;
  a.stderr_text = segfault_stderr("a1b2c3", "825");
  b.stderr_text = segfault_stderr("0f9e8d", "811");
  EXPECT_EQ(*crash_signature(a), *crash_signature(b));
}

TEST(CrashSignature, SignalFromFaulthandlerTextOrAShellStatus) {
  ForeignOutcome text_only;  // the exit status was lost (a pipe that died)
  text_only.stderr_text = segfault_stderr("a1b2c3", "825");
  ForeignOutcome shell;
  shell.exit_code = 128 + SIGSEGV;
  shell.stderr_text = text_only.stderr_text;
  ForeignOutcome status;
  status.signal = SIGSEGV;
  status.stderr_text = text_only.stderr_text;
  EXPECT_EQ(*crash_signature(text_only), *crash_signature(status));
  EXPECT_EQ(*crash_signature(shell), *crash_signature(status));
}

TEST(CrashSignature, PythonFramesWhenNoNativeFrameIsTheEngines) {
  ForeignOutcome o;
  o.signal = SIGSEGV;
  o.stderr_text =
      "Fatal Python error: Segmentation fault\n\n"
      "Current thread 0x00007f3a2b1c0740 (most recent call first):\n"
      "  File \"/venv/lib/python3.11/site-packages/torch/autograd/graph.py\", line 825 in "
      "_engine_run_backward\n"
      "  File \"/work/proptests/conformance/torch_runtime.py\", line 226 in backward\n";
  const auto sig = crash_signature(o);
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->frames,
            (std::vector<std::string>{"torch/autograd/graph.py in _engine_run_backward"}));
}

TEST(CrashSignature, DifferentNativeStacksAreDifferentSignatures) {
  ForeignOutcome a, b;
  a.signal = b.signal = SIGSEGV;
  a.stderr_text = segfault_stderr("a1b2c3", "825");
  b.stderr_text =
      "/venv/torch/lib/libtorch_cpu.so(_ZN2at6native3addERKNS_6TensorES3_RKN3c106ScalarE+0x44) "
      "[0x7f0000000010]\n";
  EXPECT_NE(*crash_signature(a), *crash_signature(b));
  EXPECT_EQ(crash_signature(b)->frames, (std::vector<std::string>{"at::native::add"}));
}

// PyTorch's own fatal signal handler (torch._C._set_print_stack_traces_on_fatal_signal, as the
// runtime turns it on): every thread's native stack, the faulting thread's (through
// fatalSignalHandler) not necessarily first. `faulting_first` orders the blocks.
std::string c10_handler_stderr(bool faulting_first) {
  const std::string idle =
      "SIGSEGV(11), PID: 23055, Thread 23106: \n"
      " frame #0: c10::FatalSignalHandler::stacktraceSignalHandler(bool) + 0x8f (0x7fee41f7371f "
      "in /venv/torch/lib/libc10.so)\n"
      "frame #1: <unknown function> + 0x3c050 (0x7fee42c5a050 in /lib/libc.so.6)\n"
      "frame #2: pthread_cond_wait + 0x1e8 (0x7fee42ca65d8 in /lib/libc.so.6)\n"
      "frame #3: c10::ThreadPool::main_loop(unsigned long) + 0x1d2 (0x7fee41f50000 in "
      "/venv/torch/lib/libc10.so)\n"
      "\n";
  const std::string faulting =
      "SIGSEGV(11), PID: 23055, Thread 23055: \n"
      " frame #0: c10::FatalSignalHandler::stacktraceSignalHandler(bool) + 0x8f (0x7fee41f7371f "
      "in /venv/torch/lib/libc10.so)\n"
      "frame #1: c10::FatalSignalHandler::fatalSignalHandler(int, siginfo_t*) + 0x2da "
      "(0x7fee41f73d4a in /venv/torch/lib/libc10.so)\n"
      "frame #2: <unknown function> + 0x3c050 (0x7fee42c5a050 in /lib/libc.so.6)\n"
      "frame #3: torch::autograd::CopySlices::apply(std::vector<at::Tensor>&&) + 0x3a1 "
      "(0x7fee40000010 in /venv/torch/lib/libtorch_cpu.so)\n"
      "frame #4: torch::autograd::Node::operator()(std::vector<at::Tensor>&&) + 0x66 "
      "(0x7fee40000020 in /venv/torch/lib/libtorch_cpu.so)\n"
      "<omitting python frames>\n"
      "frame #21: __libc_start_main + 0x85 (0x7fee42c45305 in /lib/libc.so.6)\n"
      "\n";
  return "Fatal Python error: Segmentation fault\n\n"
         "Current thread 0x00007fee43476b80 (most recent call first):\n"
         "  File \"/venv/torch/autograd/__init__.py\", line 503 in grad\n\n"
         "Extension modules: torch._C (total: 1)\n" +
         (faulting_first ? faulting + idle : idle + faulting);
}

TEST(CrashSignature, C10HandlerStacksGiveTheFaultingThreadsFrames) {
  for (const bool faulting_first : {true, false}) {
    ForeignOutcome o;
    o.signal = SIGSEGV;
    o.stderr_text = c10_handler_stderr(faulting_first);
    const auto sig = crash_signature(o);
    ASSERT_TRUE(sig);
    // Not the idle thread's c10::ThreadPool::main_loop, nor the Python frame.
    EXPECT_EQ(sig->frames, (std::vector<std::string>{"torch::autograd::CopySlices::apply",
                                                     "torch::autograd::Node::operator()"}))
        << "faulting thread first: " << faulting_first;
  }
}

// A TORCH_INTERNAL_ASSERT that reached Python: the message and PyTorch's own C++ stack.
std::string internal_assert_stderr(const std::string& root, int line, const std::string& addr) {
  return "Traceback (most recent call last):\n"
         "  File \"<program>\", line 9, in <module>\n"
         "RuntimeError: !grad_accumulator_.expired() INTERNAL ASSERT FAILED at \"" +
         root + "/torch/csrc/autograd/variable.cpp\":" + std::to_string(line) +
         ", please report a bug to PyTorch. No grad accumulator for a saved leaf\n"
         "Exception raised from grad_accumulator at " +
         root + "/torch/csrc/autograd/variable.cpp:" + std::to_string(line) +
         " (most recent call first):\n"
         "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f" +
         addr +
         "a36 in /venv/torch/lib/libc10.so)\n"
         "frame #1: c10::detail::torchInternalAssertFail(char const*, char const*, unsigned int, "
         "char const*, std::string const&) + 0x3f (0x7f" +
         addr +
         "b10 in "
         "/venv/torch/lib/libc10.so)\n"
         "frame #2: torch::autograd::impl::grad_accumulator(at::TensorBase const&) + 0x4d5 (0x7f" +
         addr +
         "c20 in /venv/torch/lib/libtorch_cpu.so)\n"
         "frame #3: <unknown function> + 0x4a1b2c (0x7f" +
         addr +
         "d30 in "
         "/venv/torch/lib/libtorch_cpu.so)\n"
         "frame #4: torch::autograd::SavedVariable::unpack(std::shared_ptr<torch::autograd::Node>) "
         "const + 0x1f1 (0x7f" +
         addr +
         "e40 in /venv/torch/lib/libtorch_cpu.so)\n"
         "frame #5: <unknown function> + 0x1d4b (0x55" +
         addr + "f50 in python3)\n";
}

TEST(CrashSignature, InternalAssertIsNormalized) {
  ForeignOutcome o;
  o.exit_code = 1;
  o.stderr_text = internal_assert_stderr("/pytorch", 456, "8b5c6e2");
  const auto sig = crash_signature(o, 4);
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->kind, CrashKind::kInternalAssert);
  EXPECT_EQ(sig->headline,
            "!grad_accumulator_.expired() INTERNAL ASSERT FAILED at "
            "\"torch/csrc/autograd/variable.cpp\", please report a bug to PyTorch. No grad "
            "accumulator for a saved leaf");
  EXPECT_EQ(sig->frames, (std::vector<std::string>{"torch::autograd::impl::grad_accumulator",
                                                   "torch::autograd::SavedVariable::unpack"}));
}

// Two c10::Error stacks in one message (seed 5801's `old_fn` asserts): the first one's frames.
TEST(CrashSignature, OnlyTheFirstOfTwoStacksInAMessageCounts) {
  ForeignOutcome one, two;
  one.exit_code = two.exit_code = 1;
  one.stderr_text = internal_assert_stderr("/pytorch", 456, "8b5c6e2");
  std::string second = internal_assert_stderr("/pytorch", 456, "8b5c6e2");
  const std::string other_frame = "torch::autograd::SavedVariable::unpack";
  second.replace(second.find(other_frame), other_frame.size(), "at::_ops::mul__Tensor::call");
  two.stderr_text = one.stderr_text + second.substr(second.find("frame #0:"));
  const auto sig = crash_signature(two, 8);
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->frames, (std::vector<std::string>{"torch::autograd::impl::grad_accumulator",
                                                   "torch::autograd::SavedVariable::unpack"}));
  EXPECT_EQ(*sig, *crash_signature(one, 8));
}

TEST(CrashSignature, InternalAssertWithOtherLineNumbersAndPathsIsTheSame) {
  ForeignOutcome a, b;
  a.exit_code = b.exit_code = 1;
  a.stderr_text = internal_assert_stderr("/pytorch", 456, "8b5c6e2");
  b.stderr_text = internal_assert_stderr("/home/ci/build/pytorch-2.5", 471, "1234567");
  EXPECT_EQ(*crash_signature(a), *crash_signature(b));
}

TEST(CrashSignature, AbortWithCxxWhat) {
  ForeignOutcome o;
  o.signal = SIGABRT;
  o.stderr_text =
      "terminate called after throwing an instance of 'c10::Error'\n"
      "  what():  Expected 3 dims but got 12 at /pytorch/aten/src/ATen/native/Foo.cpp:88\n"
      "frame #0: at::native::foo(at::Tensor const&) + 0x10 (0x7f0000001000 in "
      "/venv/torch/lib/libtorch_cpu.so)\n"
      "Fatal Python error: Aborted\n";
  const auto sig = crash_signature(o);
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->kind, CrashKind::kAbort);
  EXPECT_EQ(sig->headline, "SIGABRT: Expected N dims but got N at aten/src/ATen/native/Foo.cpp");
  EXPECT_EQ(sig->frames, (std::vector<std::string>{"at::native::foo"}));
}

TEST(CrashSignature, AbortByGlibcHeapCheck) {
  ForeignOutcome o;
  o.signal = SIGABRT;
  o.stderr_text = "double free or corruption (fasttop)\n";
  EXPECT_EQ(crash_signature(o)->headline, "SIGABRT: double free or corruption (fasttop)");
}

TEST(CrashSignature, HangWithAStackDump) {
  ForeignOutcome o;
  o.timed_out = true;
  o.signal = SIGKILL;  // killed at the limit
  o.stderr_text =
      "Timeout (0:00:10)!\n"
      "Thread 0x00007f3a2b1c0740 (most recent call first):\n"
      "  File \"/venv/site-packages/torch/autograd/graph.py\", line 825 in _engine_run_backward\n";
  const auto sig = crash_signature(o);
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->kind, CrashKind::kHang);
  EXPECT_EQ(sig->key(),
            "hang: no result within the time limit | torch/autograd/graph.py in "
            "_engine_run_backward");
}

TEST(CrashSignature, NativeFrameForms) {
  // PyTorch's CapturedTraceback and gdb.
  EXPECT_EQ(engine_frames("#4 c10::TensorImpl::~TensorImpl() from ??:0\n"
                          "#0  0x00007f00aa in torch::autograd::Engine::execute (this=0x1, "
                          "roots=...) at /pytorch/torch/csrc/autograd/engine.cpp:1200\n"
                          "#1  0x00007f00bb in PyEval_EvalFrame () from /lib/libpython3.11.so\n",
                          5),
            (std::vector<std::string>{"c10::TensorImpl::~TensorImpl",
                                      "torch::autograd::Engine::execute"}));
  // Python 3.13's faulthandler C stack.
  EXPECT_EQ(engine_frames("  Binary file \"/venv/torch/lib/libtorch_cpu.so\", at "
                          "_ZN2at6native3addERKNS_6TensorES3_RKN3c106ScalarE+0x44 "
                          "[0x7f0000000010]\n",
                          5),
            (std::vector<std::string>{"at::native::add"}));
}

TEST(CrashSignature, NormalCompletionIsNoCrash) {
  ForeignOutcome ok;
  EXPECT_FALSE(crash_signature(ok));
  ForeignOutcome exception;  // an ordinary Python error is the driver's problem, not a crash
  exception.exit_code = 1;
  exception.stderr_text = "Traceback (most recent call last):\nValueError: bad script\n";
  EXPECT_FALSE(crash_signature(exception));
}

TEST(CrashSignature, Normalization) {
  EXPECT_EQ(normalize_message("size [2, 3] at 0x7ffd1234 in /a/b/torch/csrc/x.cpp:12:5 float64"),
            "size [N, N] at 0x? in torch/csrc/x.cpp float64");
  EXPECT_EQ(normalize_message("see /tmp/tmpab12/file.py:3"), "see file.py");
  EXPECT_EQ(normalize_symbol("_ZN5torch8autograd6Engine11thread_mainERKSt10shared_ptrINS0_"
                             "9GraphTaskEE"),
            "torch::autograd::Engine::thread_main");
  EXPECT_EQ(normalize_symbol("at::Tensor::foo(int) const [clone .cold]"), "at::Tensor::foo");
  EXPECT_EQ(normalize_symbol("c10::(anonymous namespace)::f(long)"),
            "c10::(anonymous namespace)::f");
}

TEST(CrashGroups, GroupsByCountAndKeepsTheFirstProgram) {
  ForeignOutcome a, b, c;
  a.signal = b.signal = SIGSEGV;
  a.stderr_text = segfault_stderr("a1b2c3", "825");
  b.stderr_text = segfault_stderr("0f9e8d", "811");
  c.exit_code = 1;
  c.stderr_text = internal_assert_stderr("/pytorch", 456, "8b5c6e2");
  CrashGroups groups;
  EXPECT_TRUE(groups.add(*crash_signature(c), "seed 1 program 3", "v0 = leaf [2] seed=1"));
  EXPECT_TRUE(groups.add(*crash_signature(a), "seed 1 program 7", "program 7"));
  EXPECT_FALSE(groups.add(*crash_signature(b), "seed 2 program 1", "program 1"));
  ASSERT_EQ(groups.groups().size(), 2u);
  const CrashGroups::Group* g = groups.find(*crash_signature(b));
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->count, 2);
  EXPECT_EQ(g->first_id, "seed 1 program 7");
  EXPECT_EQ(g->first_program, "program 7");
  EXPECT_EQ(g->examples, (std::vector<std::string>{"seed 1 program 7", "seed 2 program 1"}));
  EXPECT_EQ(groups.crashes(), 3);
  const std::string report = groups.report();
  EXPECT_EQ(report.rfind("3 crashing programs, 2 signatures\n  2 x signal: SIGSEGV\n", 0), 0u)
      << report;
  EXPECT_NE(report.find("1 x internal-assert: !grad_accumulator_"), std::string::npos) << report;
}

// A crash log written by two campaigns, read back: the same groups as the live ones, by key.
TEST(CrashLog, EntriesReadBackIntoTheSameGroups) {
  ForeignOutcome a, b, c;
  a.signal = b.signal = SIGSEGV;
  a.stderr_text = c10_handler_stderr(true);
  b.stderr_text = c10_handler_stderr(false);
  c.exit_code = 1;
  c.stderr_text = internal_assert_stderr("/pytorch", 456, "8b5c6e2");
  const std::string log = crash_log_entry(*crash_signature(a), "seed 34 program 7",
                                          "v0 = leaf [2] seed=1 requires_grad=1\n") +
                          crash_log_entry(*crash_signature(c), "seed 34 program 9",
                                          "v0 = leaf [] seed=2 requires_grad=1\n") +
                          "\n" +  // a blank line between two logs
                          crash_log_entry(*crash_signature(b), "seed 35 program 1",
                                          "v0 = leaf [3] seed=3 requires_grad=0\n");
  const CrashGroups groups = read_crash_log(log);
  EXPECT_EQ(groups.crashes(), 3);
  ASSERT_EQ(groups.groups().size(), 2u);
  const CrashGroups::Group& segv = groups.groups()[0];
  EXPECT_EQ(segv.signature, *crash_signature(a));
  EXPECT_EQ(segv.signature.kind, CrashKind::kSignal);
  EXPECT_EQ(segv.count, 2);
  EXPECT_EQ(segv.first_id, "seed 34 program 7");
  EXPECT_EQ(segv.first_program, "v0 = leaf [2] seed=1 requires_grad=1\n");
  EXPECT_EQ(segv.examples, (std::vector<std::string>{"seed 34 program 7", "seed 35 program 1"}));
  EXPECT_EQ(groups.groups()[1].signature.kind, CrashKind::kInternalAssert);
  EXPECT_EQ(groups.groups()[1].signature, *crash_signature(c));
  const auto entries = read_crash_log_entries(log);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[1].first, "seed 34 program 9");
  EXPECT_EQ(entries[2].second, "v0 = leaf [3] seed=3 requires_grad=0\n");
}

TEST(CrashLog, MalformedLogsAreErrors) {
  EXPECT_THROW(read_crash_log("crash seed 1 program 2\nsignature signal: SIGSEGV\nv0 = leaf\n"),
               std::runtime_error);  // no end
  EXPECT_THROW(read_crash_log("crash seed 1 program 2\nv0 = leaf [] seed=1 requires_grad=1\nend\n"),
               std::runtime_error);  // no signature
  EXPECT_THROW(read_crash_log("crash a\nsignature crashed: x\nend\n"), std::runtime_error);
  EXPECT_THROW(read_crash_log("v0 = leaf [] seed=1 requires_grad=1\n"), std::runtime_error);
  EXPECT_EQ(read_crash_log("").crashes(), 0);
}

}  // namespace
}  // namespace ag::proptests
