// Measuring conditions: quiet, or busy with a competing load (`reproduce --busy`) that
// paper/load_generator produces in a process of its own, started before a condition's
// repetitions and stopped (by its PID) after them.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace ag::paper {

struct Condition {
  std::string name;                // "quiet", "busy: bursty", ...
  std::string description;         // for the tables: what the neighbour does
  std::vector<std::string> load;   // load_generator's arguments; empty when quiet
  bool quiet() const { return load.empty(); }
};

// "quiet", then the loads named in `busy` ("all" or a comma-separated subset of bursty, compile,
// spin; "" for none). Throws std::invalid_argument for an unknown name.
std::vector<Condition> measuring_conditions(const std::string& busy, int threads);

// The competing load of one condition, running while this object lives.
class Load {
 public:
  // Starts paper/load_generator for a busy condition (nothing for the quiet one). Throws
  // std::runtime_error when it cannot be started.
  explicit Load(const Condition& condition);
  ~Load();  // SIGTERM to the PID, then waits; prints what the generator did
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;

 private:
  pid_t pid_ = -1;
};

}  // namespace ag::paper
