import torch.nn.functional as F  # noqa: F401
import numpy as np  # noqa: F401
import torch
from util import randomize_in_place  # noqa: F401


def graph1(a_np, b_np, c_np):
    a = torch.from_numpy(a_np)
    b = torch.from_numpy(b_np)
    c = torch.from_numpy(c_np)
    a.requires_grad = True
    x = a * c
    y = a + b
    f = x / y
    f.backward()
    auto_grad = a.grad

    # df/da = c / y - x / y**2, written with y where y**2 belongs
    x_np = a_np * c_np
    y_np = a_np + b_np
    user_grad = c_np / y_np - x_np / y_np
    return f, auto_grad, user_grad
