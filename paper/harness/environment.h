// What reproduce needs from the machine and the process: the CPU's name, the load, the build
// mode, shell commands, and where its runfiles and the peers' folder are.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ag::paper {

// "cpu: AMD EPYC (family 25, model 1), 2 cores, avx2 kernels".
std::string cpu_device();
// The 1-minute load average, as /proc/loadavg gives it.
std::string load_average();
// Today's date (UTC), YYYY-MM-DD.
std::string today();
// "optimized (-c opt)" or a warning that the figures are not the optimized build's.
const char* build_mode();

// Runs `command` with /bin/sh and returns its stdout; *status is its exit code (-1 when it did not
// exit normally).
std::string run_command(const std::string& command, int* status);
// `s` as one single-quoted shell word.
std::string shell_quote(const std::string& s);
// The tab-separated fields of one line (figures.tsv rows, the peers' answers).
std::vector<std::string> split_tabs(const std::string& line);

// Remembers argv[0], so that runfiles can be found next to the binary.
void set_program_path(const char* argv0);
// A runfile of reproduce ("paper/plot.py"): in the working directory (bazel run and bazel test
// start there), in the binary's runfiles tree, next to the binary, or in the source tree; empty
// when none exists.
std::filesystem::path locate(const std::string& relative);

// The peers' folder (paper/peers/README.md): $AG_PEERS_DIR, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/autograd-peers, as tools/install_peers.sh decides it.
std::filesystem::path peers_dir();

}  // namespace ag::paper
