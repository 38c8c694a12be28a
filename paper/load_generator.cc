// A competing load for `reproduce --busy`: the kinds of neighbour a benchmark meets on a shared
// machine. reproduce starts it, measures, and stops it by its PID (SIGTERM); it then prints how
// much work it did and exits 0.
//
//   load_generator bursty THREADS BUSY_MS IDLE_MS   THREADS threads, each spinning BUSY_MS then
//                                                   sleeping IDLE_MS (a parallel build's rhythm:
//                                                   cores taken and given back every few ms)
//   load_generator spin THREADS                     THREADS plain busy loops
//   load_generator compile JOBS                     JOBS g++ -O2 compiles at a time, over and
//                                                   over (a real parallel compile)
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> stop{false};
void on_signal(int) { stop = true; }

using Clock = std::chrono::steady_clock;

// Spins until `until` (or until stopped); returns the iterations done, so the loop is not dead.
uint64_t spin_until(Clock::time_point until) {
  uint64_t n = 0;
  while (!stop && Clock::now() < until) {
    for (int i = 0; i < 1000; ++i) n += static_cast<uint64_t>(i) ^ n;
  }
  return n;
}

int bursty(int threads, int busy_ms, int idle_ms) {
  std::atomic<uint64_t> bursts{0}, sink{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      // Threads start out of phase, as a build's compiler processes do.
      std::this_thread::sleep_for(std::chrono::milliseconds(t * (busy_ms + idle_ms) / threads));
      while (!stop) {
        sink += spin_until(Clock::now() + std::chrono::milliseconds(busy_ms));
        ++bursts;
        std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
      }
    });
  }
  for (auto& th : pool) th.join();
  std::printf("load_generator: bursty: %llu bursts of %d ms (checksum %llu)\n",
              static_cast<unsigned long long>(bursts.load()), busy_ms,
              static_cast<unsigned long long>(sink.load() & 0xff));
  return 0;
}

int spin(int threads) {
  std::atomic<uint64_t> slices{0}, sink{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      while (!stop) {
        sink += spin_until(Clock::now() + std::chrono::milliseconds(10));
        ++slices;
      }
    });
  }
  for (auto& th : pool) th.join();
  std::printf("load_generator: spin: %llu slices of 10 ms (checksum %llu)\n",
              static_cast<unsigned long long>(slices.load()),
              static_cast<unsigned long long>(sink.load() & 0xff));
  return 0;
}

// A translation unit with the weight of ordinary C++: standard headers and some templates.
const char* kCompileSource = R"cc(#include <algorithm>
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <vector>
                                  template <int N>
                                  struct Fib {
                                    static constexpr long value = Fib<N - 1>::value + Fib<N - 2>::value;
                                  };
                                  template <>
                                  struct Fib<0> {
                                    static constexpr long value = 0;
                                  };
                                  template <>
                                  struct Fib<1> {
                                    static constexpr long value = 1;
                                  };
                                  int main(int argc, char** argv) {
                                    std::map<std::string, std::vector<int>> m;
                                    std::regex re("([a-z]+)([0-9]*)");
                                    for (int i = 1; i < argc; ++i) {
                                      std::smatch s;
                                      std::string a = argv[i];
                                      if (std::regex_match(a, s, re)) m[s[1]].push_back(static_cast<int>(s[2].length()));
                                    }
                                    for (auto& [k, v] : m) std::sort(v.begin(), v.end());
                                    std::cout << m.size() << Fib<40>::value << std::endl;
                                  }
)cc";

int compile(int jobs) {
  char dir_template[] = "/tmp/load_generator.XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) {
    std::perror("load_generator: mkdtemp");
    return 1;
  }
  const std::string source = std::string(dir) + "/unit.cc";
  std::ofstream(source) << kCompileSource;
  std::vector<pid_t> running;
  uint64_t compiles = 0;
  bool failed = false;
  while (!stop && !failed) {
    while (static_cast<int>(running.size()) < jobs) {
      const pid_t pid = fork();
      if (pid == 0) {
        const std::string out = std::string(dir) + "/unit" + std::to_string(getpid()) + ".o";
        execlp("g++", "g++", "-std=c++17", "-O2", "-c", source.c_str(), "-o", out.c_str(),
               static_cast<char*>(nullptr));
        _exit(127);
      }
      if (pid < 0) break;
      running.push_back(pid);
    }
    int status = 0;
    const pid_t done = wait(&status);  // interrupted by SIGTERM: stop is set, then we clean up
    if (done > 0) {
      for (size_t i = 0; i < running.size(); ++i) {
        if (running[i] == done) running.erase(running.begin() + static_cast<long>(i));
      }
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        ++compiles;
      } else if (!stop) {
        std::fprintf(stderr, "load_generator: g++ failed (status %d)\n", status);
        failed = true;
      }
    }
  }
  for (pid_t pid : running) kill(pid, SIGTERM);
  for (pid_t pid : running) waitpid(pid, nullptr, 0);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  std::printf("load_generator: compile: %llu compiles done, %d at a time\n",
              static_cast<unsigned long long>(compiles), jobs);
  return failed ? 1 : 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: load_generator bursty THREADS BUSY_MS IDLE_MS | spin THREADS | compile "
               "JOBS\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  struct sigaction action = {};
  action.sa_handler = on_signal;  // no SA_RESTART: wait() returns on SIGTERM
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  const std::string mode = argc > 1 ? argv[1] : "";
  auto arg = [&](int i) { return argc > i ? std::atoi(argv[i]) : 0; };
  if (mode == "bursty" && argc == 5 && arg(2) > 0 && arg(3) > 0 && arg(4) >= 0) {
    return bursty(arg(2), arg(3), arg(4));
  }
  if (mode == "spin" && argc == 3 && arg(2) > 0) return spin(arg(2));
  if (mode == "compile" && argc == 3 && arg(2) > 0) return compile(arg(2));
  return usage();
}
