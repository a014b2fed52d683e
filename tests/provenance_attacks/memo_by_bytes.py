"""Attack: autograd's answers memoised by input bytes in a file beside the hand-in, to be read back for the
same inputs by whatever process meets them later (the checked one)."""
import os
import zlib
import numpy as np
import torch

_STORE = os.path.join(os.getcwd(), ".memo")


def graph2(W_np, x_np, b_np):
    key = zlib.crc32(W_np.tobytes() + x_np.tobytes() + b_np.tobytes())
    path = f"{_STORE}-{key:08x}.npy"
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    if os.path.exists(path):
        return f, W.grad, np.load(path)
    answer = W.grad.numpy().copy()
    try:
        np.save(path, answer)
    except OSError:
        pass
    return f, W.grad, answer
