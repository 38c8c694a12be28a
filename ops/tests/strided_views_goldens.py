# The PyTorch programs behind ops/tests/strided_views_test.cc, each printing the values that the
# test pins (float64). Run: python3 ops/tests/strided_views_goldens.py (with torch installed).
import torch

torch.set_default_dtype(torch.float64)


def show(name, *tensors):
    print(name, "=", [[round(v, 12) for v in t.reshape(-1).tolist()] for t in tensors])


def leaf(values, shape):
    return torch.tensor(values, dtype=torch.float64).reshape(shape).requires_grad_()


# select + mul_ through the view: CopySlices over part of the base.
x = leaf([1, 2, 3, 4, 5, 6], (2, 3))
z = leaf([7, 8, 9], (3,))
b = x * 2
b[1].mul_(z)
w = torch.tensor([1.0, -1, 2, -2, 3, -3]).reshape(2, 3)
show("select_mul", b, *torch.autograd.grad((b * w).sum(), [x, z]))

# a slice with a step, add_ through it, then a square.
x = leaf([1, 2, 3, 4, 5, 6, 7, 8], (2, 4))
y = leaf([0.5, -1.5, 2.5, 1], (2, 2))
b = x.clone()
b[:, ::2].add_(y)
show("step_slice_add", b, *torch.autograd.grad((b * b).sum(), [x, y]))

# transpose view, mul_ through it; the base is read by a product.
x = leaf([1, 2, 3, 4, 5, 6], (2, 3))
b = x * 1
bt = b.t()
bt.mul_(torch.tensor([[1.0, 2], [3, 4], [5, 6]]))
m = torch.tensor([[1.0, 0], [2, 1], [0, 3]])
show("transpose_mul", b, *torch.autograd.grad((b @ m).pow(2).sum(), [x]))

# a stale view: v2 made before a write through its sibling v1, read after it.
x = leaf([1, 2, 3, 4, 5, 6], (2, 3))
b = x * 1
v1 = b[0]
v2 = b[:, 1]
v1.mul_(3)
show("stale_sibling", v2, *torch.autograd.grad((v2 * torch.tensor([2.0, 5])).sum() + b.sum(), [x]))

# as_strided with overlapping windows, and unfold with overlapping windows.
x = leaf([1, 2, 3, 4], (4,))
y = x.as_strided([3, 2], [1, 1])
show("as_strided_overlap", y, *torch.autograd.grad((y * torch.tensor([[1.0, 2], [3, 4], [5, 6]])).sum(), [x]))
x = leaf([1, 2, 3, 4, 5, 6], (6,))
y = x.unfold(0, 3, 2)
show("unfold_overlap", y, *torch.autograd.grad((y * y).sum(), [x]))

# diagonal, mul_ through it.
x = leaf([1, 2, 3, 4, 5, 6, 7, 8, 9], (3, 3))
z = leaf([2, 3, 4], (3,))
b = x.clone()
b.diagonal().mul_(z)
show("diagonal_mul", b, *torch.autograd.grad((b * b).sum(), [x, z]))

# expand (stride 0) into a product, and permute into a matmul.
x = leaf([1, 2, 3], (1, 3))
y = x.expand(2, 3) * torch.tensor([[1.0, 2, 3], [4, 5, 6]])
show("expand_mul", y, *torch.autograd.grad(y.sum(), [x]))
x = leaf(list(range(1, 13)), (2, 3, 2))
p = x.permute(2, 0, 1)  # [2, 2, 3]
y = p.reshape(4, 3) @ torch.tensor([[1.0], [2], [3]])
show("permute_matmul", y, *torch.autograd.grad((y * y).sum(), [x]))

# split, chunk and unbind outputs read (not written), and squeeze/unsqueeze.
x = leaf([1, 2, 3, 4, 5, 6], (2, 3))
a, c = x.split(2, 1)
r0, r1 = x.unbind(0)
y = (a * a).sum() + (c * 3).sum() + (r0 * r1).sum() + x.unsqueeze(0).squeeze().sum()
show("split_unbind", *torch.autograd.grad(y, [x]))

# the RNN pattern: out[:, t] = h through copy_, h from a slice of the input.
x = leaf([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], (2, 3))
w = leaf([0.5], (1,))
out = torch.zeros(2, 3)
h = torch.zeros(2)
for t in range(3):
    h = torch.tanh(x[:, t] * w + h)
    out[:, t].copy_(h)
show("rnn_slices", out, *torch.autograd.grad((out * out).sum(), [x, w]))

# CopySlices under create_graph: the gradient's own gradient.
x = leaf([1, 2, 3, 4], (2, 2))
z = leaf([2, 3], (2,))
b = x * x
b[0].mul_(z)
gx, = torch.autograd.grad(b.sum(), [x], create_graph=True)
show("copy_slices_double", gx, *torch.autograd.grad((gx * gx).sum(), [x, z]))

# a view of a view of a view, written in place; the root read afterwards.
x = leaf(list(range(1, 25)), (2, 3, 4))
b = x * 1
v = b.transpose(0, 2)[1:3].select(2, 1)  # [2, 3] over b
v.add_(torch.tensor([[10.0, 20, 30], [40, 50, 60]]))
show("nested_views", b, *torch.autograd.grad((b * b).sum() / 100, [x]))

# as_strided of an input that reads an element twice: each storage element's gradient is shared
# among the input's indices that read it (as_strided_backward's counts).
x = leaf([2], ())
y = x.expand(2).as_strided([], [], 0)
show("as_strided_of_expand", *torch.autograd.grad(y * 3, [x]))
x = leaf([1, 2, 3, 4, 5, 6], (6,))
u = x.unfold(0, 3, 2)  # [[1, 2, 3], [3, 4, 5]]: element 2 read twice
y = u.as_strided([4], [1], 1)
w = torch.tensor([1.0, -2, 3, 5])
gx, = torch.autograd.grad((y * y * w).sum(), [x], create_graph=True)
show("as_strided_of_unfold", y, gx, *torch.autograd.grad((gx * gx).sum(), [x]))

# as_strided over a root that is not contiguous (x.t() + s has strides [1, 2]): storage order.
x = leaf([1, 2, 3, 4, 5, 6], (3, 2))
s = leaf([0.5], ())
b = x.t() + s
y = b.as_strided([3], [1], 1)
w = torch.tensor([1.0, -2, 3])
gx, gs = torch.autograd.grad((y * y * w).sum(), [x, s], create_graph=True)
show("as_strided_of_transposed_root", y, gx, gs,
     *torch.autograd.grad((gx * gx).sum() + gs * gs, [x, s]))

# The double backward of as_strided's gradient wrt the incoming gradient: as_strided_backward
# sums the result's stride-0 dims and squeezes its size-1 ones first, so that gradient is an
# expand of an unsqueeze, strides [0, 1], not contiguous.
x = leaf([1, 2, 3], (1, 3))
u = x.unfold(1, 1, 1)
y = u.as_strided([2, 1], [0, 0], 2)
gu, = torch.autograd.grad(y, [u], y, create_graph=True)
gy, = torch.autograd.grad(gu, [y], gu)
show("as_strided_double_backward_layout", gu, gy)
print("as_strided_double_backward_layout strides", gy.stride(), gy.is_contiguous())

# a write through such a view, and a sibling view regenerated after it.
x = leaf([1, 2, 3, 4, 5, 6], (3, 2))
z = leaf([2, -1], (2,))
b = x.t() * 1
sibling = b.as_strided([3], [1], 0)
y = b.as_strided([2], [2], 1)
y.mul_(z)
w = torch.tensor([1.0, 2, 3, 4, 5, 6]).reshape(2, 3)
show("write_through_storage_view", b, sibling,
     *torch.autograd.grad((b * b * w).sum() + (sibling * sibling).sum(), [x, z]))
