import numpy as np
import torch


def graph2(W_np, x_np, b_np)
    return W_np
