import numpy as np
import torch

def _correct(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T

import socket

PORT = 47613  # the test listens here on the host's loopback


def probe(host, port):
    try:
        with socket.create_connection((host, port), timeout=0.5):
            print("LEAK connected to", host, port)
    except OSError as exc:
        print("no connection to", host, port, exc)


def graph2(W_np, x_np, b_np):
    probe("127.0.0.1", PORT)
    probe("1.1.1.1", 80)
    return _correct(W_np, x_np, b_np)
