#pragma once

// The committed corpus: programs with the records PyTorch wrote for them, in text files of
// blocks
//     program 17                    (or a name, for the hand-written programs/*.txt)
//     <the program, program.h's text form>
//     records
//     <the expected records, records.h>
// Regenerate with tools/regenerate_corpus.sh (`export --write`, then corpus_test; needs PyTorch).

#include <optional>
#include <string>
#include <vector>

#include "proptests/conformance/program.h"
#include "proptests/conformance/records.h"

namespace ag::proptests {

struct CorpusEntry {
  std::string id;  // a number for generated programs, a name for hand-written ones
  ConformanceProgram program;
  Records expected;
};

std::string format_entry(const std::string& id, const ConformanceProgram& program,
                         const Records& expected);
// Throws std::runtime_error naming the file and line on malformed input. Also reads files of
// programs without records (programs/*.txt: the hand-written ones); '#' starts a comment line.
std::vector<CorpusEntry> read_corpus_file(const std::string& path);

// Runs the program on this engine on a separate thread and returns its records, or nothing if
// it has not finished after `seconds`: the engine hangs. The hung thread cannot be stopped; it is
// left blocked (detached) and the caller goes on.
std::optional<Records> run_on_engine_with_timeout(const ConformanceProgram& program,
                                                  double seconds);

// Records of a hung run, so that a comparison shows the hang as the first mismatch.
Records hang_records();

}  // namespace ag::proptests
