"""An LSTM over a whole sequence (gates i, f, o, g; c0 = 0): a loop over the T timesteps."""

import torch


def lstm(x, h0, Wx, Wh, b, T, H):
    h = h0
    c = torch.zeros_like(h0)
    states = []
    for t in range(T):
        a = x[:, t] @ Wx + h @ Wh + b
        i = torch.sigmoid(a[:, :H])
        f = torch.sigmoid(a[:, H:2 * H])
        o = torch.sigmoid(a[:, 2 * H:3 * H])
        g = torch.tanh(a[:, 3 * H:])
        c = f * c + i * g
        h = o * torch.tanh(c)
        states.append(h)
    return {"h": torch.stack(states, dim=1)}
