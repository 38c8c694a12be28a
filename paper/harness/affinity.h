// Pinning the contenders of single-threaded rounds to one CPU (Note [One CPU for single-threaded
// rounds]).
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace ag::paper {

// Note [One CPU for single-threaded rounds]
// On this machine kind (2 vCPUs of a shared host) a single-threaded loop has spells of a second
// or two in which it runs about 1.7x slower, and they hit one vCPU, not the machine: with ours and
// libtorch alternating tiny-graph chunks of 2 ms, unpinned, ours was slowed in some stretches
// and libtorch in others, so the ratio of 200-chunk blocks ranged 10.8x - 30.5x (median 17.9x);
// with both pinned to the same CPU, 17.7x - 18.1x over the same number of chunks. Which core each
// process happened to be on decided the ratio. So the quiet rounds of single-threaded workloads
// pin our measuring thread and every thread of each peer process to the one CPU our thread is on:
// every contender then runs under the same core's conditions. Busy rounds are not pinned: there
// the scheduler's placement beside the load is part of what they measure.
class PinnedToOneCpu {
 public:
  // Pins the calling thread and every thread of `pids` to the CPU the caller is running on.
  explicit PinnedToOneCpu(const std::vector<pid_t>& pids);
  // Puts every pinned thread back on the CPUs it had (threads started since, on its process's).
  ~PinnedToOneCpu();
  PinnedToOneCpu(const PinnedToOneCpu&) = delete;
  PinnedToOneCpu& operator=(const PinnedToOneCpu&) = delete;

  // Whether every thread was pinned; else why not (pinning is then undone).
  bool pinned() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  int cpu() const { return cpu_; }  // the one CPU

 private:
  struct Process {
    pid_t pid;
    cpu_set_t before;  // its main thread's CPUs
  };
  void restore();

  int cpu_ = -1;
  bool active_ = false;  // some thread is pinned (restore() has work to do)
  cpu_set_t caller_before_{};
  std::vector<Process> processes_;
  std::string error_;
};

}  // namespace ag::paper
