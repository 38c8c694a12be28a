#include "paper/harness/affinity.h"

#include <dirent.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ag::paper {
namespace {

// The thread ids of process `pid`, from /proc (empty if it is gone).
std::vector<pid_t> threads_of(pid_t pid) {
  std::vector<pid_t> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') out.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
    }
    closedir(d);
  }
  return out;
}

// sched_setaffinity() on one thread: "" or why it failed.
std::string set_cpus(pid_t tid, const cpu_set_t& cpus) {
  if (sched_setaffinity(tid, sizeof(cpus), &cpus) == 0) return "";
  return "sched_setaffinity(" + std::to_string(tid) + "): " + std::strerror(errno);
}

}  // namespace

PinnedToOneCpu::PinnedToOneCpu(const std::vector<pid_t>& pids) {
  cpu_ = sched_getcpu();
  if (cpu_ < 0 || sched_getaffinity(0, sizeof(caller_before_), &caller_before_) != 0) {
    error_ = std::string("cannot read this thread's CPU: ") + std::strerror(errno);
    return;
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu_, &one);
  active_ = true;
  error_ = set_cpus(0, one);
  for (pid_t pid : pids) {
    if (!error_.empty()) break;
    Process p{pid, {}};
    if (sched_getaffinity(pid, sizeof(p.before), &p.before) != 0) continue;  // it has ended
    processes_.push_back(p);
    for (pid_t tid : threads_of(pid)) {
      error_ = set_cpus(tid, one);
      if (!error_.empty()) break;
    }
  }
  if (!error_.empty()) restore();
}

PinnedToOneCpu::~PinnedToOneCpu() { restore(); }

void PinnedToOneCpu::restore() {
  if (!active_) return;
  sched_setaffinity(0, sizeof(caller_before_), &caller_before_);
  for (const Process& p : processes_) {
    for (pid_t tid : threads_of(p.pid)) sched_setaffinity(tid, sizeof(p.before), &p.before);
  }
  processes_.clear();
  active_ = false;
}

}  // namespace ag::paper
