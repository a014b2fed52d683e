"""Operations whose forward is the graph's own and whose backward is a hand-written one's slip.

Internal to the graph language: parse() never accepts them from an author (they are not in FUNCTIONS);
the mistake families of grader/judging/naming/backward_slips.py put them into a changed copy of an exercise's
graph. Each is written in the straight-through form `detach(F) + (G - detach(G))`: the value of F
bit for bit (G - G is an exact 0), the gradient of G, out of differentiable torch operations only, so
that the reference evaluates it as it does any graph (float64, under vmap over the trials of one size,
autograd for the gradients). Shapes are read
at run time: one trial's tensors under vmap, whatever its sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F


def matmul_reshaped(a: torch.Tensor, b: torch.Tensor, side: int) -> torch.Tensor:
    """a @ b, whose backward for one operand multiplies by the other one reshaped where its transpose
    belongs: side 0, d b = a.reshape(k, m) @ g for a.T @ g (a batch of matrices a flattened to (m, k)
    rows first, as x.reshape(N * T, D)); side 1, d a = g @ b.reshape(n, k) for g @ b.T; side 2, d a =
    (b @ g.reshape(n, m)).reshape(m, k) for (b @ g.T).T, the upstream gradient reshaped."""
    product = a @ b
    if side == 0:
        k = a.shape[-1]
        rows = a.detach().reshape(-1, k)  # (m, k)
        wrong = rows.reshape(k, -1).T  # (m, k), where rows belongs: its transpose is a.reshape(k, m)
        through = (wrong @ b).reshape(product.shape)
        return a @ b.detach() + (through - through.detach())
    k, n = b.shape
    if side == 2:
        # d a = (b @ g.reshape(n, m)).reshape(m, k) where (b @ g.T).T belongs (affine's dx from w @ dout
        # reshaped): the linear map's adjoint applied to a, so that autograd's vjp with g is that map.
        rows = a.reshape(-1, k)  # (m, k)
        m = rows.shape[0]
        through = (b.detach().T @ rows.reshape(k, m)).reshape(product.shape)
        return a.detach() @ b + (through - through.detach())
    wrong = b.detach().reshape(n, k).T  # (k, n): its transpose is b.reshape(n, k)
    through = a @ wrong
    return a.detach() @ b + (through - through.detach())


def _pair(value: Any) -> tuple[int, int]:
    if isinstance(value, tuple | list):
        return int(value[0]), int(value[1])
    return int(value), int(value)


def _last_cover(position: torch.Tensor, stride: int, windows: int) -> torch.Tensor:
    """Along one axis, the last window (in loop order) that covers each covered position: the one
    starting at or before it furthest along."""
    return torch.clamp(torch.div(position, stride, rounding_mode="floor"), max=windows - 1)


def max_pool_assigned(x: torch.Tensor, kernel: Any, stride: Any, whole: int) -> torch.Tensor:
    """max_pool2d(x, kernel, stride) (x (N, C, H, W), or (N, C, L) as one row), whose backward assigns
    each window's upstream gradient in loop order (rows, then columns of windows) instead of adding it:
    whole 0, to its maximum only (dx[max] = dout: the last window with its maximum there wins); whole 1,
    to the whole window (dx[window] = mask * dout: the last window covering an entry decides it, zero
    where its maximum is elsewhere)."""
    flat = x.dim() == 3
    x4 = x.unsqueeze(-2) if flat else x
    (kh, kw) = (1, int(kernel)) if flat else _pair(kernel)
    (sh, sw) = (
        (1, int(stride if stride is not None else kernel))
        if flat
        else _pair(stride if stride is not None else kernel)
    )
    pooled, index = F.max_pool2d(x4, (kh, kw), (sh, sw), return_indices=True)
    n, c, h, w = x4.shape
    rows, cols = pooled.shape[-2:]
    count = rows * cols
    picked = index.reshape(n, c, count)
    order = torch.arange(count)
    if whole:
        row = _last_cover(torch.div(picked, w, rounding_mode="floor"), sh, rows)
        col = _last_cover(picked % w, sw, cols)
        kept = (row * cols + col) == order
    else:
        same = picked.unsqueeze(-1) == picked.unsqueeze(-2)  # [.., k, k']: both windows pick one entry
        later = torch.triu(torch.ones(count, count, dtype=torch.bool), diagonal=1)
        kept = ~(same & later).any(dim=-1)  # no later window writes the entry this one wrote
    through = (torch.gather(x4.reshape(n, c, h * w), -1, picked) * kept).reshape(pooled.shape)
    out = pooled.detach() + (through - through.detach())
    return out.squeeze(-2) if flat else out


def conv_assigned(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    filters_summed: int = 0,
) -> torch.Tensor:
    """conv2d(x, w, b, stride, padding) (or conv1d, on (N, C, L)), whose backward assigns each window's
    contribution to dx (dx_pad[n, :, window] = w[f] * dout[n, f, i, j]) instead of adding it, in the loop
    order n, f, i, j (or n, i, j, f): every padded entry keeps the last filter's share from the last
    window that covers it. With `filters_summed`, the loop runs over windows only, each assigning every
    filter's share summed (dx_pad[:, :, window] = (dout[:, :, i, j] @ w.reshape(F, -1)).reshape(...)): the
    last window covering an entry wins, with all its filters. dw and db are the right ones."""
    flat = x.dim() == 3
    x4 = x.unsqueeze(-2) if flat else x
    w4 = weight.unsqueeze(-2) if flat else weight
    (sh, sw) = (1, int(stride)) if flat else _pair(stride)
    (ph, pw) = (0, int(padding)) if flat else _pair(padding)
    out = F.conv2d(x4.detach(), w4, bias, stride=(sh, sw), padding=(ph, pw))
    n, c, _, _ = x4.shape
    filters, _, kh, kw = w4.shape
    rows, cols = out.shape[-2:]
    padded = F.pad(x4, (pw, pw, ph, ph))
    columns = F.unfold(padded, (kh, kw), stride=(sh, sw)).reshape(n, c, kh * kw, rows * cols)
    # Window k's entry at offset (r, s) survives when k is the last window covering it.
    offset_r = torch.arange(kh).repeat_interleave(kw).unsqueeze(-1)
    offset_s = torch.arange(kw).repeat(kh).unsqueeze(-1)
    window = torch.arange(rows * cols).unsqueeze(0)
    at_r = torch.div(window, cols, rounding_mode="floor") * sh + offset_r
    at_s = (window % cols) * sw + offset_s
    kept = (_last_cover(at_r, sh, rows) * cols + _last_cover(at_s, sw, cols)) == window  # (kh * kw, K)
    if filters_summed:
        every = w4.detach().reshape(filters, c, kh * kw)
        through = torch.einsum("ncpk,pk,fcp->nfk", columns, kept.to(columns.dtype), every)
        through = through.reshape(n, filters, rows, cols)
    else:
        last = w4[-1].detach().reshape(c, kh * kw, 1)
        share = (columns * kept * last).sum(dim=(1, 2)).reshape(n, 1, rows, cols)
        through = torch.cat([torch.zeros(n, filters - 1, rows, cols, dtype=share.dtype), share], dim=1)
    result = out + (through - through.detach())
    return result.squeeze(-2) if flat else result


def index_assigned(weight: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """weight[index], whose backward assigns each row's gradient (dW[x] = dout, or numpy's buffered
    dW[x] += dout) where repeated indices add up: the last occurrence in C order wins."""
    index = torch.as_tensor(index, dtype=torch.int64)
    picked = weight[index]
    flat = index.reshape(-1)
    # An occurrence is the last of its index when no later one is equal: comparisons only, so that the
    # reference's vmap over trials can batch it (torch.unique cannot be).
    later = torch.triu(torch.ones(flat.numel(), flat.numel(), dtype=torch.bool), diagonal=1)
    last = ~((flat.unsqueeze(1) == flat.unsqueeze(0)) & later).any(dim=1)
    shape = index.shape + (1,) * (picked.dim() - index.dim())
    through = picked * last.reshape(shape).to(picked.dtype)
    return picked.detach() + (through - through.detach())


INTERNAL: Mapping[str, Callable[..., Any]] = {
    "slip_index_assigned": index_assigned,
    "slip_matmul_reshaped": matmul_reshaped,
    "slip_max_pool_assigned": max_pool_assigned,
    "slip_conv_assigned": conv_assigned,
}
