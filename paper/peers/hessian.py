"""PyTorch peer of the hessian benchmark (seed 001, PR 82544's script on the CPU): MLP, input 16,
six hidden Linear+activation layers of width 256, output 1 (ReLU as published, and Tanh); y_xx by
two nested grad(create_graph=True) w.r.t. x, without and with a final backward to the weights."""

from common import figure, import_torch, median_time, parse_args

args = parse_args(__doc__)
torch = import_torch()

batch, hidden, reps = (100, 64, 3) if args.quick else (1000, 256, 15)
x = (torch.rand(batch, 16) * 2 - 1).requires_grad_()


def make_model(activation):
    layers = [torch.nn.Linear(16, hidden), activation()]
    for _ in range(5):
        layers += [torch.nn.Linear(hidden, hidden), activation()]
    layers += [torch.nn.Linear(hidden, 1)]
    return torch.nn.Sequential(*layers)


def step(model, final_backward):
    y = model(x)
    y_x = torch.autograd.grad(y, x, torch.ones_like(y), create_graph=True)[0]
    y_xx = torch.autograd.grad(y_x, x, torch.ones_like(y_x), create_graph=True)[0]
    if final_backward:
        model.zero_grad(set_to_none=True)
        y_xx.sum().backward()
    return y_xx


for name, activation in (("ReLU", torch.nn.ReLU), ("Tanh", torch.nn.Tanh)):
    model = make_model(activation)
    for final_backward, label in ((False, "no final backward"), (True, "with final backward")):
        step(model, final_backward)  # warm-up
        seconds = median_time(lambda: step(model, final_backward), 1, reps)
        figure("pytorch", "%s step time, %s" % (name, label), seconds * 1e3, "ms")
