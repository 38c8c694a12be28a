import torch
fwAD = torch.autograd.forward_ad
with fwAD.dual_level():
    d = fwAD.make_dual(torch.tensor(3.0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64))
    e = d * d  # out of place: tangent 2 * 3 * 1 = 6
    d.mul_(d)  # the same product in place
    want, got = fwAD.unpack_dual(e).tangent.item(), fwAD.unpack_dual(d).tangent.item()
assert got == want, f"d.mul_(d) has tangent {got}; d * d has {want}"
