#pragma once

// `bazel run -c opt //proptests:fuzz -- --against pytorch [--seconds T]`: the fuzz driver runs
// fresh conformance programs (program_gen.h) on this engine and on a live foreign engine
// (foreign_engine.h), compares their records (comparison.h), and on a mismatch prints the program
// shrunk by RapidCheck, its first differing record, its script for the foreign engine, and the
// command that replays the batch.

#include <cstdint>
#include <string>
#include <vector>

#include "proptests/foreign/crash_signature.h"

namespace ag::proptests {

struct AgainstOptions {
  std::string engine;  // "pytorch"
  uint64_t seed = 0;   // the campaign's, for the ids of crashing programs ("seed 34 program 12")
  // Where the crashes go, when not empty: crashes.txt (every crashing program with its signature,
  // as it happens) and, at the end, finding_NN/ per signature: signature.txt, program.txt (the
  // reduced program), repro.py (its standalone script) and confirmation.txt.
  std::string findings_dir;
  // Reduce the crash groups at the end of the run (crash_report); off, they are only logged.
  bool reduce = true;
  // Programs with hook statements too (hook_gen.h, Note [Conformance hooks]): --hooks.
  bool hooks = false;
  // The mode check (mode_check.h, Note [PyTorch against itself]) on every `modes_every`th
  // program's functional core: --modes [--modes-every N]. An inconsistency is written to
  // findings_dir/mode_NN/ (program.txt, modes.txt, repro.py, verdict.txt).
  bool modes = false;
  int modes_every = 1;
  // The mode check with JAX's answers too (jax_runtime.py; jit off and on): --modes-jax. Where JAX
  // disagrees, the program goes to findings_dir/jax_disagreements.txt (not a PyTorch finding).
  bool modes_jax = false;
};

// Starts the foreign engine (its interpreter: $AG_PEER_PYTHON or found, see foreign_engine.h)
// and registers the property that fuzzes against it; returns the property's name. Prints why and
// exits with status 2 when the engine cannot be started (no PyTorch, unknown engine).
std::string register_against(const AgainstOptions& options);

// After a failing batch: the batch's counterexample (the last program that mismatched, which
// RapidCheck has shrunk) reduced further by dropping statements (reduce.h), with the command
// that replays it; empty if nothing mismatched since the last call.
std::string reduced_last_mismatch();

// The programs the foreign engine crashed, aborted, asserted or hung on since the start, grouped
// by signature (proptests/foreign/crash_signature.h), each group's first program with its
// standalone script, reduced and confirmed in fresh processes (proptests/foreign/crash_reduce.h);
// empty if none.
std::string crash_report();

// Reduces the crashes logged in `logs` (their groups, the first `max_groups`) as crash_report()
// does, against the engine `options` names; the report, and the findings in its findings_dir.
std::string reduce_logged_crashes(const AgainstOptions& options,
                                  const std::vector<std::string>& logs, size_t max_groups);

// The programs run per bug class (proptests/foreign/bug_class.h, Note [Bug classes]), and with
// --modes the mode check's counts and its inconsistencies.
std::string bug_class_report();

}  // namespace ag::proptests
