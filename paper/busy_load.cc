// A competing load for measuring on a busy machine (paper/busy_compare.py starts it beside the
// benchmarks and kills it afterwards). Runs until killed.
//   busy_load spin             one thread in a plain busy loop
//   busy_load bursty [T [B I]] T threads (default 2), each busy B ms then idle I ms (default
//                              20 / 20), in phase: the pattern of a parallel build's compile jobs
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

volatile unsigned long long sink;

void spin_until(Clock::time_point end) {
  unsigned long long x = 0;
  while (Clock::now() < end) {
    for (int i = 0; i < 1000; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  }
  sink = x;
}

void bursty(std::chrono::milliseconds busy, std::chrono::milliseconds idle) {
  // Phases are aligned to a common clock so that all threads burst together.
  const Clock::time_point start = Clock::now();
  const auto period = busy + idle;
  for (long n = 1;; ++n) {
    const Clock::time_point burst = start + (n - 1) * period;
    spin_until(burst + busy);
    std::this_thread::sleep_until(start + n * period);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "spin" && argc == 2) {
    spin_until(Clock::time_point::max());
  } else if (mode == "bursty" && (argc == 2 || argc == 3 || argc == 5)) {
    const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
    const std::chrono::milliseconds busy(argc > 3 ? std::atoi(argv[3]) : 20),
        idle(argc > 4 ? std::atoi(argv[4]) : 20);
    if (threads < 1 || busy.count() < 1 || idle.count() < 0) {
      std::fprintf(stderr, "busy_load: threads and busy ms must be positive\n");
      return 2;
    }
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(bursty, busy, idle);
    for (std::thread& t : pool) t.join();
  } else {
    std::fprintf(stderr, "usage: busy_load spin | busy_load bursty [THREADS [BUSY_MS IDLE_MS]]\n");
    return 2;
  }
  return 0;
}
