// Issue 46: forward mode (paper/workloads/forward_workloads.h). Seed 001's y_xx by
// forward-over-reverse beside our nested grads, torch.func's jvp(grad) and jax.hessian; the jvp of
// seed 001's MLP forward beside the forward alone and PyTorch's forward_ad; jacfwd and jacrev of a
// 16 -> 16 net beside torch.func's. Every table's variants in the same interleaved rounds, under
// every measuring condition, at the run's thread count for all.
#include <cmath>
#include <iterator>
#include <sstream>

#include "ops/ops.h"
#include "paper/workloads/forward_workloads.h"
#include "paper/workloads/hessian.h"
#include "paper/workloads/hooks_baseline.h"
#include "paper/workloads/sections.h"
#include "paper/workloads/timing.h"
#include "paper/workloads/traced_workloads.h"
#include "paper/workloads/variant_rounds.h"

namespace ag::paper {
namespace {

constexpr double kPeerTarget = 0.8;    // issue 46: ours at most 0.8x the peer's, every row
constexpr double kJvpTarget = 1.3;     // issue 46: a jvp at most 1.3x the forward alone
constexpr double kNestedTarget = 1.0;  // issue 46: forward-over-reverse faster than nested grads
constexpr double kJaxTarget = 1.0;     // issue 46: ours at most jax.hessian's, jit
constexpr int kJacobianWidth = 16;
const char* kJvp = "forward_jvp_tanh";
const char* kJacobian = "jacobian_16";
const char* kCompiled = "ours forward-over-reverse, compiled";

std::string hvp_workload(Activation a) {
  return std::string("forward_hvp_") + (a == Activation::kRelu ? "relu" : "tanh");
}

double checksum(const Tensor& t) { return ops::sum(t).item(); }

}  // namespace

void forward_section(const Context& context, Report& report) {
  progress(8, "forward mode: forward-over-reverse y_xx, jvp, jacfwd, jacrev (issue 46)");
  Results& results = *context.results;
  const Peers& peers = *context.peers;
  PeerProcess* torch = peers.torch.get();
  const std::string peer = torch ? torch->short_name() : "PyTorch";
  PeerProcess* jax = peers.jax.get();
  const std::string peer_jax = (jax ? jax->short_name() : std::string("JAX")) + " jax.hessian, jit";
  HessianConfig base;
  if (context.quick) {
    base.batch = 16;
    base.hidden = 32;
  }
  const int rounds = context.quick ? 2 : 7, busy_rounds = context.quick ? 2 : 5;
  const double stretch = context.quick ? 0 : kStretchSeconds;  // Note [A stretch of steps]
  const std::string s_stretch = std::to_string(stretch);
  const std::string peer_hvp = peer + " torch.func jvp(grad)";
  const std::string peer_forward = peer + " forward", peer_jvp = peer + " forward_ad jvp";
  const std::string peer_jacfwd = peer + " torch.func.jacfwd";
  const std::string peer_jacrev = peer + " torch.func.jacrev";

  // 1. y_xx by forward-over-reverse, per activation.
  struct HvpStep {
    Activation activation;
    HessianConfig config;
    Mlp mlp;
    Tensor x;
    std::unique_ptr<JitHessianStep> compiled;  // the same y_xx as one jit::CompiledFunction
  };
  const Activation activations[] = {Activation::kRelu, Activation::kTanh};
  std::vector<HvpStep> hvp_steps;
  hvp_steps.reserve(std::size(activations));  // the compiled steps and the variants refer to them
  for (const Activation a : activations) {
    HessianConfig hc = base;
    hc.activation = a;
    HvpStep& step =
        hvp_steps.emplace_back(HvpStep{a, hc, make_mlp(hc), make_hessian_input(hc), nullptr});
    step.compiled = std::make_unique<JitHessianStep>(step.mlp, step.x, false, jit::CompileOptions(),
                                                     YxxBy::kForwardOverReverse);
  }
  std::vector<std::vector<Variant>> hvp_variants;
  for (const HvpStep& step : hvp_steps) {
    const std::string w = hvp_workload(step.activation);
    hvp_variants.push_back(
        {{w,
          "ours forward-over-reverse",
          [&step] { return checksum(forward_over_reverse_y_xx(step.mlp, step.x)); },
          nullptr,
          {}},
         {w,
          "ours nested grads",
          [&step] { return hessian_step(step.mlp, step.x, false); },
          nullptr,
          {}},
         {w,
          peer_hvp,
          {},
          torch,
          hessian_peer_task({"hessian", "func_hvp"}, step.config, false, stretch)},
         {w,
          peer_jax,
          {},
          jax,
          hessian_peer_task({"hessian", "hessian", "1"}, step.config, false, stretch)},
         {w, kCompiled, [&step] { return step.compiled->step(); }, nullptr, {}}});
  }

  // 2. The jvp of the Tanh MLP's forward along one tangent (ones).
  HessianConfig jc = base;
  jc.activation = Activation::kTanh;
  const Mlp jvp_mlp = make_mlp(jc);
  const Tensor jvp_x = make_hessian_input(jc).detach();
  const Tensor jvp_tangent = ops::ones_like(jvp_x);
  const std::vector<std::string> jvp_task = {"mlp_jvp", "tanh", std::to_string(jc.batch),
                                             std::to_string(jc.hidden)};
  auto with = [](std::vector<std::string> head, const std::vector<std::string>& tail) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  const std::vector<Variant> jvp_variants = {
      {kJvp, "ours forward", [&] { return checksum(mlp_forward(jvp_mlp, jvp_x)); }, nullptr, {}},
      {kJvp,
       "ours jvp",
       [&] { return checksum(mlp_jvp(jvp_mlp, jvp_x, jvp_tangent)); },
       nullptr,
       {}},
      {kJvp, peer_forward, {}, torch, with(jvp_task, {"0", s_stretch})},
      {kJvp, peer_jvp, {}, torch, with(jvp_task, {"1", s_stretch})}};

  // 3. jacfwd and jacrev of the 16 -> 16 net.
  const SmallNet net = make_small_net(kJacobianWidth);
  const std::string width = std::to_string(kJacobianWidth);
  const std::vector<Variant> jacobian_variants = {
      {kJacobian, "ours jacfwd", [&] { return checksum(small_net_jacfwd(net)); }, nullptr, {}},
      {kJacobian, "ours jacrev", [&] { return checksum(small_net_jacrev(net)); }, nullptr, {}},
      {kJacobian, peer_jacfwd, {}, torch, {"jacobian", "jacfwd", width, s_stretch}},
      {kJacobian, peer_jacrev, {}, torch, {"jacobian", "jacrev", width, s_stretch}}};

  for (const Condition& condition : context.conditions) {
    const Load load(condition);
    const int n = condition.quiet() ? rounds : busy_rounds;
    for (const std::vector<Variant>& variants : hvp_variants) {
      const std::string& w = variants.front().workload;
      const Rounds r = measure_variants(context, variants, condition, n, stretch);
      add_middle_half(context, r, 0, 1, w, "ours forward-over-reverse / nested grads", condition);
      add_middle_half(context, r, 0, 2, w, "ours forward-over-reverse / " + peer_hvp, condition);
      add_middle_half(context, r, 4, 3, w, std::string(kCompiled) + " / " + peer_jax, condition);
    }
    const Rounds jr = measure_variants(context, jvp_variants, condition, n, stretch);
    add_middle_half(context, jr, 1, 0, kJvp, "ours jvp / forward", condition);
    add_middle_half(context, jr, 1, 3, kJvp, "ours jvp / " + peer_jvp, condition);
    const Rounds cr = measure_variants(context, jacobian_variants, condition, n, stretch);
    add_middle_half(context, cr, 0, 2, kJacobian, "ours jacfwd / " + peer_jacfwd, condition);
    add_middle_half(context, cr, 1, 3, kJacobian, "ours jacrev / " + peer_jacrev, condition);
  }

  // The report.
  auto peer_ms = [&](double v) {
    return std::isnan(v) ? peers.missing(torch) : with_unit(v, "ms");
  };
  auto target = [](double r, double t) { return std::isnan(r) ? "n/a" : verdict_at_most(r, t); };
  std::ostringstream& s = report.body;
  s << peers.describe() << "\n";
  s << "Every variant of a table in the same interleaved rounds (median of " << rounds
    << " quiet and " << busy_rounds
    << " under each load), all engines at this run's thread count; in a round each variant runs "
       "steps back to back for at least "
    << stretch
    << " s and counts the mean per step (Note [A stretch of steps], paper/workloads/timing.h). "
       "The machine is shared: compare the ratios, and the middle half of the ratios taken round "
       "by round.\n\n";

  s << "### Seed 001's y_xx by forward-over-reverse\n\n"
    << "Seed 001's MLP (input 16, " << base.layers << " hidden Linear + activation layers of "
    << base.hidden << ", output 1), x [" << base.batch
    << ", 16] float32 requiring grad. y_xx = grad(grad(y, x, ones, create_graph), x, ones) is "
       "H 1 per sample, H the Hessian of sum(y) w.r.t. x (Note [Forward-over-reverse y_xx], "
       "paper/workloads/forward_workloads.h). Ours forward-over-reverse: in a DualLevel, xd = "
       "make_dual(x, ones), y = mlp(xd), y_x = grad(y, xd, ones), y_xx = unpack_dual(y_x)."
       "tangent. Ours nested grads: seed 001's step without its final backward. "
    << peer
    << ": torch.func.jvp(torch.func.grad(lambda x: mlp(x).sum()), (x,), (ones,)), the same "
       "shapes. "
    << peer_jax
    << ": seed 001's y_xx by jax.hessian under jax.jit, as the seed 001 section measures it, "
       "beside ours compiled: the forward-over-reverse step as one jit::CompiledFunction (Note "
       "[Compiled functions], engine/jit/compile.h; both fold ReLU's y_xx, zeros by construction, "
       "to a constant). Both of ours give the same y_xx to rounding "
       "(paper/forward_workloads_test.cc). Issue 46's "
       "targets: ours at most "
    << format(kPeerTarget) << "x torch.func's and " << format(kJaxTarget)
    << "x jax.hessian's (ours compiled), and below our nested grads.\n\n";
  Table h({"condition", "activation", "ours forward-over-reverse", "ours nested grads",
           "fwd-over-rev / nested (middle half)", "target < 1x", peer_hvp,
           "ours / its (middle half)", "target <= " + format(kPeerTarget) + "x", "ours compiled",
           peer_jax, "ours compiled / jax (middle half)", "target <= " + format(kJaxTarget) + "x"});
  for (const Condition& condition : context.conditions) {
    for (const HvpStep& step : hvp_steps) {
      const std::string w = hvp_workload(step.activation);
      const double f = step_ms(results, w, "ours forward-over-reverse", condition);
      const double n = step_ms(results, w, "ours nested grads", condition);
      const double p = step_ms(results, w, peer_hvp, condition);
      const double jx = step_ms(results, w, peer_jax, condition);
      const double c = step_ms(results, w, kCompiled, condition);
      const std::string jax_ms = std::isnan(jx) ? peers.missing(jax) : with_unit(jx, "ms");
      h.row(
          {condition.name, activation_name(step.activation), with_unit(f, "ms"), with_unit(n, "ms"),
           ratio(f, n) + " (" +
               middle_half(results, w, "ours forward-over-reverse / nested grads", condition) + ")",
           target(f / n, kNestedTarget), peer_ms(p),
           ratio(f, p) + " (" +
               middle_half(results, w, "ours forward-over-reverse / " + peer_hvp, condition) + ")",
           target(f / p, kPeerTarget), with_unit(c, "ms"), jax_ms,
           ratio(c, jx) + " (" +
               middle_half(results, w, std::string(kCompiled) + " / " + peer_jax, condition) + ")",
           target(c / jx, kJaxTarget)});
    }
  }
  s << h.str() << "\n";

  s << "### The jvp of the MLP's forward\n\n"
    << "The Tanh MLP above on x [" << jc.batch
    << ", 16] not requiring grad (the weights do, as a module's), one tangent (ones). Ours jvp: "
       "in a DualLevel, unpack_dual(mlp(make_dual(x, ones))).tangent; "
    << peer
    << ": the same under torch.autograd.forward_ad's dual_level, make_dual and unpack_dual. The "
       "forward alone: the same call without the level. Issue 46's targets: ours jvp at most "
    << format(kJvpTarget) << "x our forward alone, and at most " << format(kPeerTarget) << "x "
    << peer << "'s forward_ad jvp.\n\n";
  Table j({"condition", "ours forward", "ours jvp", "jvp / forward (middle half)",
           "target <= " + format(kJvpTarget) + "x", peer_forward, peer_jvp,
           "ours jvp / its (middle half)", "target <= " + format(kPeerTarget) + "x"});
  for (const Condition& condition : context.conditions) {
    const double f = step_ms(results, kJvp, "ours forward", condition),
                 v = step_ms(results, kJvp, "ours jvp", condition);
    const double pf = step_ms(results, kJvp, peer_forward, condition),
                 pv = step_ms(results, kJvp, peer_jvp, condition);
    j.row({condition.name, with_unit(f, "ms"), with_unit(v, "ms"),
           ratio(v, f) + " (" + middle_half(results, kJvp, "ours jvp / forward", condition) + ")",
           target(v / f, kJvpTarget), peer_ms(pf), peer_ms(pv),
           ratio(v, pv) + " (" + middle_half(results, kJvp, "ours jvp / " + peer_jvp, condition) +
               ")",
           target(v / pv, kPeerTarget)});
  }
  s << j.str() << "\n";

  s << "### jacfwd and jacrev of a " << kJacobianWidth << " -> " << kJacobianWidth << " net\n\n"
    << "f(x) = tanh(W2 tanh(W1 x)), x of " << kJacobianWidth << " float32 elements, W1 and W2 ["
    << kJacobianWidth << ", " << kJacobianWidth
    << "] float32 not requiring grad; one step is the whole [16, 16] Jacobian. Ours "
       "jacfwd (ag::func::jacfwd) runs one jvp in one batched dual level whose 16 tangents are "
       "the unit vectors (Note [Batched tangents]); ours jacrev runs one vjp of one forward "
       "whose zero cotangent carries the 16 unit cotangents as a batched tangent (Note "
       "[Batched cotangents]); torch.func's jacfwd and jacrev vmap one jvp or vjp over "
       "the 16 unit vectors, so each runs one batched computation. Issue 46's targets: each of "
       "ours at most "
    << format(kPeerTarget) << "x torch.func's.\n\n";
  Table c({"condition", "transform", "ours", peer, "ours / its (middle half)",
           "target <= " + format(kPeerTarget) + "x"});
  for (const Condition& condition : context.conditions) {
    for (const auto& [name, ours, its] :
         {std::tuple<std::string, std::string, std::string>{"jacfwd", "ours jacfwd", peer_jacfwd},
          {"jacrev", "ours jacrev", peer_jacrev}}) {
      const double o = step_ms(results, kJacobian, ours, condition),
                   p = step_ms(results, kJacobian, its, condition);
      c.row({condition.name, name, with_unit(o, "ms"), peer_ms(p),
             ratio(o, p) + " (" + middle_half(results, kJacobian, ours + " / " + its, condition) +
                 ")",
             target(o / p, kPeerTarget)});
    }
  }
  s << c.str() << "\n";
  for (const Condition& condition : context.conditions) {
    if (!condition.quiet()) s << "- " << condition.name << ": " << condition.description << "\n";
  }
  if (context.conditions.size() > 1) s << "\n";
}

}  // namespace ag::paper
