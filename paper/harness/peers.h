// The peers: PyTorch from Python, JAX, and libtorch's C++ API, each one long-running process that
// reproduce starts once and sends tasks to, so that every repetition of a peer sits between two
// of ours, under the same load (protocol: paper/peers/common.py; setup: paper/peers/README.md).
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ag::paper {

class PeerProcess {
 public:
  // Starts argv[0] with `argv` and the thread count in OMP_NUM_THREADS / MKL_NUM_THREADS, and
  // reads its description. When it cannot start or says `unavailable`, available() is false and
  // reason() says why.
  PeerProcess(std::string label, const std::vector<std::string>& argv, int threads);
  // A peer that cannot run here, and why.
  PeerProcess(std::string label, std::string reason)
      : label_(std::move(label)), reason_(std::move(reason)) {}
  ~PeerProcess();
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  bool available() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }  // -1 when not running
  const std::string& label() const { return label_; }
  // What the peer says it is: "PyTorch 2.15.0 (PyPI wheel, Python 3.11), MKL 2024.2, 2 ...".
  const std::string& description() const { return description_; }
  const std::string& reason() const { return reason_; }
  // The description up to its first " (" or ",": "PyTorch 2.15.0"; the label when there is none.
  std::string short_name() const;

  // Runs one task (its fields, tab-joined) and returns the values of its answer; nullopt when the
  // peer answered `error` (printed) or did not answer within `timeout_s` (then it is stopped).
  std::optional<std::vector<double>> run(const std::vector<std::string>& task,
                                         double timeout_s = 900);
  // The first value of run(task).
  std::optional<double> value(const std::vector<std::string>& task, double timeout_s = 900);

 private:
  bool read_line(std::string* line, double timeout_s);
  void stop(const std::string& why);

  std::string label_, description_, reason_;
  pid_t pid_ = -1;
  int to_peer_ = -1, from_peer_ = -1;
  std::string buffer_;
};

struct Peers {
  std::unique_ptr<PeerProcess> torch;     // paper/peers/torch_peer.py
  std::unique_ptr<PeerProcess> jax;       // paper/peers/jax_peer.py
  std::unique_ptr<PeerProcess> libtorch;  // paper/peers/libtorch_peer.cc, built from the wheel
  std::string skipped;                    // why no peer runs at all ("" when they were tried)

  // A table cell for a missing figure of `peer`: why it is missing.
  std::string missing(const PeerProcess* peer) const;
  // One line per peer for a report: who it is, or why it is missing.
  std::string describe() const;
};

// Starts every peer at `threads` intra-op threads; with `skip_reason` non-empty starts none.
Peers start_peers(int threads, const std::string& skip_reason);

}  // namespace ag::paper
