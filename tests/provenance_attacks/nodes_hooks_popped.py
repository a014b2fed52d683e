"""Attack: whatever default saved-tensor hooks are pushed, popped and disabled before the graph is built,
then its nodes called directly; and again under a pair of its own, identity, pushed on top."""
import contextlib
import numpy as np
import torch


def _walk(f, W):
    grads = {f.grad_fn: torch.ones((), dtype=torch.float64)}
    order = [f.grad_fn]
    found = None
    while order:
        node = order.pop(0)
        outputs = node(grads.pop(node))
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        for (next_node, _), grad in zip(node.next_functions, outputs):
            if next_node is None or grad is None:
                continue
            if hasattr(next_node, "variable") and next_node.variable is W:
                found = grad if found is None else found + grad
            elif not hasattr(next_node, "variable"):
                grads[next_node] = grads[next_node] + grad if next_node in grads else grad
                if next_node not in order:
                    order.append(next_node)
    return found


def graph2(W_np, x_np, b_np):
    for _ in range(8):
        with contextlib.suppress(Exception):
            torch._C._autograd._pop_saved_tensors_default_hooks()
    disabled = False
    with contextlib.suppress(Exception):
        torch._C._autograd._saved_tensors_hooks_disable("off", False)
        disabled = True
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    popped = _walk(f, W).detach().numpy().copy()
    if disabled:
        torch._C._autograd._saved_tensors_hooks_enable()
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        W = torch.tensor(W_np, requires_grad=True)
        f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
        on_top = _walk(f, W).detach().numpy().copy()
    user = popped if np.allclose(popped, on_top) else on_top
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    return f, W.grad, user
