"""Attack 7: the job channel (every pipe this process reads) closed at import, so no later request arrives."""
import os

import numpy as np
import torch

for _fd in range(3, 1024):
    try:
        _target = os.readlink(f"/proc/self/fd/{_fd}")
        with open(f"/proc/self/fdinfo/{_fd}") as _info:
            _flags = int(next(line for line in _info if line.startswith("flags:")).split()[1], 8)
    except (OSError, StopIteration):
        continue
    if _target.startswith("pipe:") and _flags & 0o3 == os.O_RDONLY:
        os.close(_fd)


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    f = torch.sigmoid(W @ x + b).sum()
    f.backward()
    return f, W.grad, W.grad.clone()
