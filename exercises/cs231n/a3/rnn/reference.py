"""The vanilla RNN over a whole sequence: a loop over the T timesteps (the graph language cannot loop)."""

import torch


def rnn(x, h0, Wx, Wh, b, T):
    h = h0
    states = []
    for t in range(T):
        h = torch.tanh(x[:, t] @ Wx + h @ Wh + b)
        states.append(h)
    return {"h": torch.stack(states, dim=1)}
