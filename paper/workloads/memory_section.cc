// Seed 003 (PR 16583, issue 16577): Dropout2d's extra live bytes with guarded saves off and on,
// PyTorch's saved bytes beside them, and the hessian step's peak bytes per option set.
#include <cmath>
#include <iostream>

#include "paper/harness/published.h"
#include "paper/workloads/dropout_memory.h"
#include "paper/workloads/hessian.h"
#include "paper/workloads/sections.h"

namespace ag::paper {

void memory_section(const Context& context, Report& report) {
  progress(4, "Dropout2d memory (seed 003): guard_saves off / on; the hessian step's peak bytes");
  Results& results = *context.results;
  const Peers& peers = *context.peers;
  EngineOptions off;
  off.guard_saves = false;
  const EngineOptions on;
  const DropoutMemory mask[2] = {measure_dropout_memory(off), measure_dropout_memory(on)};
  const DropoutMemory op[2] = {measure_dropout2d_op_memory(off), measure_dropout2d_op_memory(on)};
  for (int v = 0; v < 2; ++v) {
    const std::string variant = v ? "guard_saves on" : "guard_saves off";
    results.add("dropout_memory", variant, "extra live bytes", mask[v].extra_live_bytes, "B");
    results.add("dropout_memory", variant, "bytes saved for backward", mask[v].bytes_saved, "B");
    results.add("dropout2d_op_memory", variant, "extra live bytes", op[v].extra_live_bytes, "B");
    results.add("dropout2d_op_memory", variant, "bytes saved for backward", op[v].bytes_saved, "B");
  }
  const std::string peer_name = peers.torch ? peers.torch->short_name() : "PyTorch";
  if (const auto saved = peers.torch ? peers.torch->value({"saved_bytes"}) : std::nullopt) {
    results.add("dropout_memory", peer_name, "bytes saved for backward", *saved, "B");
  }
  const double peer_saved = results.get("dropout_memory", peer_name, "bytes saved for backward");
  std::cout << "  ((x+2)*m).sum(): extra live bytes " << mask[0].extra_live_bytes << " (off), "
            << mask[1].extra_live_bytes << " (on)" << std::endl;

  // Peak bytes of the hessian step per option set; deterministic, one run each. Tanh: the
  // workload whose every phase does work (see paper/workloads/hessian.h).
  HessianConfig hc;
  if (context.quick) {
    hc.batch = 100;
    hc.hidden = 64;
  }
  hc.activation = Activation::kTanh;
  const Mlp mlp = make_mlp(hc);
  Tensor x = make_hessian_input(hc);  // not const: each measured step clears its .grad
  EngineOptions guard_off, per_call_off;
  guard_off.guard_saves = false;
  per_call_off.per_call_needs_input_grad = false;
  const std::vector<std::pair<std::string, EngineOptions>> option_sets = {
      {"all on", EngineOptions()},
      {"guard_saves off", guard_off},
      {"per-call off", per_call_off},
      {"all off", EngineOptions::all_off()}};
  const char* final_backward[2] = {"no final backward", "with final backward"};
  for (int fb = 0; fb < 2; ++fb) {
    for (const auto& [name, options] : option_sets) {
      // Every row's step starts without gradients, so each counts the ones it makes: a step
      // after another would start with the last one's, which it frees before it makes its own.
      mlp.clear_grads();
      x.set_grad(Tensor());
      results.add("hessian_memory", name, std::string("peak bytes, ") + final_backward[fb],
                  static_cast<double>(measure_hessian_step(mlp, x, fb, options).peak_bytes), "B");
    }
  }

  const Published& pub = published("seed003/extra_live_bytes");
  std::ostringstream& s = report.body;
  s << "Published: " << pub.source
    << "'s test `test_free_unneeded_tensor` (CUDA memory "
       "statistics; "
    << pub.hardware
    << ") asserts that `((x + 2) * m).sum()` leaves as many bytes allocated as `x.sum()`. Ours: "
       "the CPU allocator's exact live-byte count, no GPU needed. PyTorch has no CPU allocator "
       "statistics, so its column counts the bytes autograd saves for backward (saved-tensor "
       "hooks).\n\n"
    << peers.describe() << "\n";
  s << "x [2,3,10,10] requires grad, m [1,3,1,1] does not. base = live bytes after z = x.sum(); "
       "end = live bytes after z = ((x + 2) * m).sum().\n\n";
  Table t({"figure", "guard_saves off", "guard_saves on", peer_name + " here",
           "published (" + std::string(pub.source) + ")"});
  t.row({"extra live bytes (end - base)", with_unit(mask[0].extra_live_bytes, "B"),
         with_unit(mask[1].extra_live_bytes, "B"), "no CPU statistics", pub.text});
  t.row({"bytes saved for backward", with_unit(mask[0].bytes_saved, "B"),
         with_unit(mask[1].bytes_saved, "B"),
         std::isnan(peer_saved) ? peers.missing(peers.torch.get()) : with_unit(peer_saved, "B"),
         published("seed003/saved").text});
  t.row({"same with ops::dropout2d(x + 2, p=0.5): extra live bytes",
         with_unit(op[0].extra_live_bytes, "B"), with_unit(op[1].extra_live_bytes, "B"), "", ""});
  s << t.str() << "\n";
  s << "### Peak bytes of the hessian step (seed 001's Tanh workload"
    << (context.quick ? ", quick size" : "")
    << ")\n\nAllocator peak during one step above the live bytes before it (model and input "
       "excluded), from no gradients: a step counts the gradients it makes. In this MLP every "
       "saved value is needed (every input of every op requires "
       "grad), so guard_saves changes nothing; the peak is reached while the forward, first- and "
       "second-grad graphs hold their saved activations, which per-call needs_input_grad does not "
       "change either: the weight gradients it skips are small, short-lived temporaries.\n\n";
  Table p({"option set", final_backward[0], final_backward[1]});
  for (const auto& [name, options] : option_sets) {
    std::vector<std::string> r = {name};
    for (const char* fb : final_backward) {
      r.push_back(with_unit(
          results.get("hessian_memory", name, std::string("peak bytes, ") + fb) / 1024, "KiB"));
    }
    p.row(r);
  }
  s << p.str();
}

}  // namespace ag::paper
