#pragma once

// `bazel run -c opt //proptests:fuzz -- --against pytorch [--seconds T]`: the fuzz driver runs
// fresh conformance programs (program_gen.h) on this engine and on a live foreign engine
// (foreign_engine.h), compares their records (comparison.h), and on a mismatch prints the program
// shrunk by RapidCheck, its first differing record, its script for the foreign engine, and the
// command that replays the batch.

#include <string>

namespace ag::proptests {

// Starts the foreign engine (its interpreter: $AG_PEER_PYTHON or found, see foreign_engine.h)
// and registers the property that fuzzes against it; returns the property's name. Prints why and
// exits with status 2 when the engine cannot be started (no PyTorch, unknown engine).
std::string register_against(const std::string& engine);

// After a failing batch: the batch's counterexample (the last program that mismatched, which
// RapidCheck has shrunk) reduced further by dropping statements (reduce.h), with the command
// that replays it; empty if nothing mismatched since the last call.
std::string reduced_last_mismatch();

// The programs the foreign engine crashed, aborted, asserted or hung on since the start, grouped
// by signature (proptests/foreign/crash_signature.h), each group's first program with its
// standalone script, reduced and confirmed in fresh processes (proptests/foreign/crash_reduce.h);
// empty if none.
std::string crash_report();

}  // namespace ag::proptests
