import numpy as np
import torch


def graph1(a_np, b_np, c_np):
    a = torch.tensor(a_np, dtype=torch.float16, requires_grad=True)
    b = torch.tensor(b_np, dtype=torch.float16)
    c = torch.tensor(c_np, dtype=torch.float16)
    f = a * c / (a + b)
    f.backward()
    a16, b16, c16 = a_np.astype(np.float16), b_np.astype(np.float16), c_np.astype(np.float16)
    user_grad = b16 * c16 / (a16 + b16) ** 2
    return f, a.grad, user_grad
