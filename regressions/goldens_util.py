# What the goldens scripts of regressions/ share: float64 tensors, leaves, and printing values
# and the first sentence of an error the way the tests pin them.
import torch

torch.set_default_dtype(torch.float64)


def t(values):
    return torch.tensor(values)


def leaf(values):
    return torch.tensor(values).requires_grad_()


def show(name, *values):
    print(name, "=", *[v.tolist() if isinstance(v, torch.Tensor) else v for v in values])


def error(name, f, *marks):
    """Runs f; prints its error's first sentence, and whether the message holds each of marks."""
    try:
        f()
        print(name, "-> no error")
    except RuntimeError as e:
        extra = [x for m in marks for x in ("|", m in str(e))]
        print(name, "->", str(e).split(". ")[0] + ".", *extra)
