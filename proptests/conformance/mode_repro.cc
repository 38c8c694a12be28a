#include "proptests/conformance/mode_repro.h"

#include "proptests/conformance/mode_check.h"
#include "proptests/conformance/torch_script.h"

namespace ag::proptests {
namespace {

std::string py_values(const Tensor& t) {
  std::string out = "torch.tensor([";
  const std::vector<double> xs = t.to_vector();
  for (size_t i = 0; i < xs.size(); ++i) {
    out += (i ? ", " : "") + torch_float(xs[i], TorchSpelling::kPlainTorch);
  }
  out += "], dtype=torch.float64).reshape([";
  for (size_t i = 0; i < t.shape().size(); ++i) {
    out += (i ? ", " : "") + std::to_string(t.shape()[i]);
  }
  return out + "])";
}

}  // namespace

std::string mode_repro_script(const ConformanceProgram& modes) {
  const ModeLayout l = mode_layout(modes);
  std::string f = "def f(";
  for (size_t i = 0; i < l.primals; ++i) f += (i ? ", v" : "v") + std::to_string(i);
  f += "):\n";
  int next = static_cast<int>(l.primals);
  for (const Instr& in : l.body) {
    f += "    v" + std::to_string(next++) + " = " + torch_op_expr(in, TorchSpelling::kPlainTorch) +
         "\n";
  }
  f += "    return v" + std::to_string(next - 1) + "\n";
  auto tensors = [&](size_t from, size_t count) {
    std::string out = "[";
    for (size_t i = from; i < from + count; ++i) {
      out += std::string(i > from ? ",\n     " : "") + py_values(mode_leaf_value(l.leaves.at(i)));
    }
    return out + "]";
  };
  return "# PyTorch's modes on one function (Note [PyTorch against itself], mode_check.h).\n"
         "import torch\n"
         "fwAD = torch.autograd.forward_ad\n\n\n" +
         f + "\n\nx = " + tensors(0, l.primals) +
         "\nc = " + py_values(mode_leaf_value(l.leaves.at(l.primals))) +
         "\nt = " + tensors(l.primals + 1, l.primals) +
         "\n\n\n"
         "def reverse(fn):\n"
         "    xs = [a.clone().requires_grad_(True) for a in x]\n"
         "    out = fn(*xs)\n"
         "    if not out.requires_grad:\n"
         "        return out.detach(), [torch.zeros_like(a) for a in x]\n"
         "    grads = torch.autograd.grad(out, xs, c, allow_unused=True, materialize_grads=True)\n"
         "    return out.detach(), list(grads)\n\n\n"
         "out, pullback = torch.func.vjp(f, *x)\n"
         "backward = {\"torch.func.vjp\": (out, list(pullback(c)))}\n"
         "backward[\"torch.autograd.grad\"] = reverse(f)\n"
         "backward[\"torch.compile(aot_eager)\"] = reverse(torch.compile(f, "
         "backend=\"aot_eager\"))\n"
         "forward = {\"torch.func.jvp\": torch.func.jvp(f, tuple(x), tuple(t))}\n"
         "with fwAD.dual_level():\n"
         "    p, u = fwAD.unpack_dual(f(*[fwAD.make_dual(a, b) for a, b in zip(x, t)]))\n"
         "    forward[\"forward_ad\"] = (p.clone(), torch.zeros_like(p) if u is None else "
         "u.clone())\n"
         "value, grads = backward[\"torch.func.vjp\"]\n"
         "want = sum((g * b).sum() for g, b in zip(grads, t))\n"
         "close = dict(rtol=1e-9, atol=1e-12)\n"
         "for mode, (o, gs) in backward.items():\n"
         "    assert torch.allclose(o, value, **close), f\"{mode}: value {o} against {value}\"\n"
         "    for i, (g, h) in enumerate(zip(gs, grads)):\n"
         "        assert torch.allclose(g, h, **close), f\"{mode}: grad of input {i} {g} against "
         "{h}\"\n"
         "for mode, (o, u) in forward.items():\n"
         "    assert torch.allclose(o, value, **close), f\"{mode}: value {o} against {value}\"\n"
         "    got = (c * u).sum()\n"
         "    assert torch.allclose(got, want, rtol=1e-9, atol=1e-10), f\"{mode}: <c, J t> {got} "
         "against {want}\"\n"
         "print(\"the modes agree\")\n";
}

}  // namespace ag::proptests
