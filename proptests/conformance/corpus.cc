#include "proptests/conformance/corpus.h"

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "proptests/conformance/engine_runner.h"
#include "proptests/conformance/text.h"

namespace ag::proptests {

std::string format_entry(const std::string& id, const ConformanceProgram& program,
                         const Records& expected) {
  return "program " + id + "\n" + to_text(program) + "records\n" + expected.text();
}

std::vector<CorpusEntry> read_corpus_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<CorpusEntry> out;
  std::string line, program_text, records_text;
  bool in_records = false;
  int line_no = 0, entry_line = 0;
  auto finish = [&] {
    if (out.empty()) return;
    try {
      out.back().program = parse_program(program_text);
      out.back().expected = Records::parse(records_text);
    } catch (const std::exception& e) {
      throw std::runtime_error(path + ":" + std::to_string(entry_line) + ": " + e.what());
    }
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (line.rfind("#", 0) == 0) continue;
    if (line.rfind("program ", 0) == 0) {
      finish();
      out.push_back({trim(line.substr(8)), {}, {}});
      program_text.clear();
      records_text.clear();
      in_records = false;
      entry_line = line_no;
    } else if (line == "records") {
      in_records = true;
    } else if (!out.empty()) {
      (in_records ? records_text : program_text) += line + "\n";
    }
  }
  finish();
  return out;
}

std::optional<Records> run_on_engine_with_timeout(const ConformanceProgram& program,
                                                  double seconds) {
  struct Shared {
    explicit Shared(const ConformanceProgram& p) : program(p) {}
    const ConformanceProgram program;  // the worker's own copy: a hung worker outlives the caller's
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    Records records;
  };
  auto shared = std::make_shared<Shared>(program);
  std::thread worker([shared] {
    Records r = run_on_engine(shared->program);
    std::lock_guard<std::mutex> lock(shared->mutex);
    shared->records = std::move(r);
    shared->done = true;
    shared->done_cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(shared->mutex);
  if (!shared->done_cv.wait_for(lock, std::chrono::duration<double>(seconds),
                                [&] { return shared->done; })) {
    worker.detach();
    return std::nullopt;
  }
  lock.unlock();
  worker.join();
  return std::move(shared->records);
}

Records hang_records() { return Records{{"hang: the engine did not finish the program"}}; }

}  // namespace ag::proptests
