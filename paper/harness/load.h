// Measuring conditions: quiet, or busy with a competing load (`reproduce --busy`) that
// paper/load_generator produces in a process of its own, started before a condition's
// repetitions and stopped (by its PID) after them.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ag::paper {

struct Condition {
  std::string name;               // "quiet", "busy: bursty", ...
  std::string description;        // for the tables: what the neighbour does
  std::vector<std::string> load;  // load_generator's arguments; empty when quiet
  bool quiet() const { return load.empty(); }
};

// "quiet", then the loads named in `busy` ("all" or a comma-separated subset of bursty, compile,
// spin; "" for none). Throws std::invalid_argument for an unknown name.
std::vector<Condition> measuring_conditions(const std::string& busy, int threads);

// The competing load of one condition, running while this object lives. It also notes the
// machine's 1-minute load average when it starts and stops (see load_averages_seen()).
class Load {
 public:
  // Starts paper/load_generator for a busy condition (nothing for the quiet one). Throws
  // std::runtime_error when it cannot be started.
  explicit Load(const Condition& condition);
  ~Load();  // SIGTERM to the PID, then waits
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;

 private:
  std::string condition_;
  pid_t pid_ = -1;
};

// The lowest and highest 1-minute load averages noted under each condition so far, in the order
// the conditions first ran: "quiet 0.9-2.1, busy: spin 2.0-3.1". Other users of the machine show
// up here: on a 2-core machine, a quiet load much above 1 is not quiet.
std::string load_averages_seen();

}  // namespace ag::paper
