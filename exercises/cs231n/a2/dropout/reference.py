"""The expected values of CS231n's inverted dropout: the mask is the one a student's dropout_forward
draws from numpy's legacy global generator after `np.random.seed(dropout_param['seed'])`, that is
`np.random.rand(*x.shape) < p`, reproduced here from the seed by a RandomState of its own (the same
Mersenne Twister stream and the same doubles, without touching the grader's global generator)."""

from functools import lru_cache

import numpy as np
import torch


def dropout(x, p, seed):
    keep = (_Uniform.apply(seed, x) < p).to(x.dtype)  # 1 with probability p (p keeps)
    return {"out": x * keep / p}


def dropout_drop_probability(x, p, seed):
    """The 2016-17 handouts' convention (the exercise's `conventions:`): p the probability to DROP a unit,
    mask = rand >= p (rand > p draws the same mask: no double of the stream equals p), kept entries scaled
    by 1 / (1 - p)."""
    keep = (_Uniform.apply(seed, x) >= p).to(x.dtype)
    return {"out": x * keep / (1 - p)}


@lru_cache(maxsize=4096)  # the Monte Carlo copies of a trial draw the same numbers
def _uniform(seed, shape):
    return np.random.RandomState(seed).rand(*shape)


class _Uniform(torch.autograd.Function):
    """The seed's uniform numbers in x's shape. numpy needs the seed as an int, which a trial batched by
    vmap does not give (`int(seed)` fails there): the vmap rule draws each trial's from the batch's
    seeds, so the grader evaluates this reference batched, not one trial at a time."""

    @staticmethod
    def forward(seed, like):
        return torch.from_numpy(_uniform(int(seed), tuple(like.shape)).copy())

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad):
        return None, None

    @staticmethod
    def vmap(info, in_dims, seed, like):
        seed_dim, like_dim = in_dims
        like = like.movedim(like_dim, 0) if like_dim is not None else like.expand(info.batch_size, *like.shape)
        seeds = seed.movedim(seed_dim, 0) if seed_dim is not None else seed.expand(info.batch_size)
        shape = tuple(like.shape[1:])
        drawn = np.stack([_uniform(int(s), shape) for s in seeds.tolist()])
        return torch.from_numpy(drawn), 0
