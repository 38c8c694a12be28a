#include "paper/harness/published.h"

#include <cmath>
#include <stdexcept>

namespace ag::paper {
namespace {

constexpr double kNone = NAN;
constexpr const char* kPr52180 = "PR 52180";
constexpr const char* kPr52180Cpu = "the PR author's CPU, PyTorch master of March 2021 (not named)";
constexpr const char* kPr82544 = "PR 82544";
constexpr const char* kA100 = "NVIDIA A100, FP32, batch 10000";
// Measured on this project's machine kind before PyTorch 2.x was installed: Debian's
// python3-torch 1.13.1 with OpenBLAS at 1 intra-op thread (its C++ API for the overhead rows).
constexpr const char* kDebian113 = "PyTorch 1.13.1 (Debian), OpenBLAS, 1 thread; history";
constexpr const char* kThisMachine = "this machine kind (2-core x86-64), earlier runs";

const Published kPublished[] = {
    // Seed 000: the unrolled loop, time per 100 steps, and the tiny graph.
    {"seed000/loop/first/before", "470 ms (incl. warm-up); steps 101-200: 64 ms", 64, kPr52180,
     kPr52180Cpu},
    {"seed000/loop/first/after", "490 ms (incl. warm-up); 31 ms", 31, kPr52180, kPr52180Cpu},
    {"seed000/loop/middle/before", "steps 901-1000: 240 ms", 240, kPr52180, kPr52180Cpu},
    {"seed000/loop/middle/after", "31 ms", 31, kPr52180, kPr52180Cpu},
    {"seed000/loop/last/before", "steps 1901-2000: 500 ms", 500, kPr52180, kPr52180Cpu},
    {"seed000/loop/last/after", "32 ms", 32, kPr52180, kPr52180Cpu},
    {"seed000/loop/growth/before", "7.8x (2000 vs 200)", 7.8, kPr52180, kPr52180Cpu},
    {"seed000/loop/growth/after", "1.03x (2000 vs 200)", 1.03, kPr52180, kPr52180Cpu},
    {"seed000/tiny/time/before", "12.74 us", 12.74, kPr52180, kPr52180Cpu},
    {"seed000/tiny/time/after", "13.12 us", 13.12, kPr52180, kPr52180Cpu},
    {"seed000/tiny/instructions/before", "80,790 instr", 80790, kPr52180, kPr52180Cpu},
    {"seed000/tiny/instructions/after", "80,918 instr", 80918, kPr52180, kPr52180Cpu},
    // The C++ anchors of the overhead targets, and the hessian's CPU anchors (history).
    {"history/tiny/libtorch", "9.4 us", 9.4, kDebian113, kThisMachine},
    {"history/chain/libtorch", "7.4 ms", 7.4, kDebian113, kThisMachine},
    {"history/hessian/relu", "33 ms", 33, kDebian113, kThisMachine},
    {"history/hessian/relu/final_backward", "66 ms", 66, kDebian113, kThisMachine},
    // Seed 001: PR 82544's hessian benchmark (FP32 table), with functorch v0.1.1's
    // vmap(jacfwd(jacrev)) column.
    {"seed001/relu/before", "55.658 ms", 55.658, kPr82544, kA100},
    {"seed001/relu/after", "29.392 ms", 29.392, kPr82544, kA100},
    {"seed001/relu/speedup", "1.90x", 1.90, kPr82544, kA100},
    {"seed001/relu/functorch", "29.547 ms", 29.547, kPr82544, kA100},
    {"seed001/relu/final_backward/before", "81.173 ms", 81.173, kPr82544, kA100},
    {"seed001/relu/final_backward/after", "54.917 ms", 54.917, kPr82544, kA100},
    {"seed001/relu/final_backward/speedup", "1.47x", 1.47, kPr82544, kA100},
    {"seed001/relu/final_backward/functorch", "68.988 ms", 68.988, kPr82544, kA100},
    // Seed 003: PR 16583's test_free_unneeded_tensor (CUDA memory statistics).
    {"seed003/extra_live_bytes", "0 (base_mem == end_mem)", 0, "PR 16583",
     "a CUDA GPU the PR does not name"},
    {"seed003/saved", "m only", kNone, "PR 16583", "a CUDA GPU the PR does not name"},
};

}  // namespace

const Published& published(const std::string& key) {
  for (const Published& p : kPublished) {
    if (key == p.key) return p;
  }
  throw std::out_of_range("no published figure named '" + key + "' (paper/harness/published.cc)");
}

}  // namespace ag::paper
