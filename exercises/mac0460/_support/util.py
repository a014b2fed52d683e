"""MAC0460's helper module, as the course's notebooks and basic_functions.py import it.

Written for the grader (not the course's file): the same names and behaviour, without matplotlib, so
that a hand-in's `from util import randomize_in_place` (EP3a's basic_functions.py) or the notebook's
`from util import r_squared, randomize_in_place, get_housing_prices_data, add_feature_ones` succeeds.
`sigmoid` is added for convenience: the course defines it in the notebook and in basic_functions.py.
"""

import numpy as np


def sigmoid(x):
    """The logistic function, elementwise on a number or numpy array, without overflow warnings."""
    x = np.asarray(x)
    if x.dtype.kind != "f":
        x = x.astype(float)  # integers and booleans; float32 stays float32
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def add_feature_ones(X):
    """X (N, d) with a first column of ones: (N, d + 1)."""
    X = np.asarray(X)
    return np.hstack([np.ones((X.shape[0], 1), dtype=X.dtype), X])


def get_housing_prices_data(N, verbose=True):
    """Artificial linear data: N areas in square metres from 90 to 1200 and their prices, each (N, 1)
    float32, prices positive."""
    area = np.linspace(90, 1200, N)
    while True:
        price = 50 * area + 400 * np.random.normal(30, 10, N)
        if N == 0 or price.min() > 0:
            break
    x = area.astype("float32").reshape(N, 1)
    y = price.astype("float32").reshape(N, 1)
    if verbose:
        print("X shape = {}, y shape = {}".format(x.shape, y.shape))
    return x, y


get_hausing_prices_data = get_housing_prices_data  # the spelling of the course's first version


def r_squared(y, y_hat):
    """The coefficient of determination of the prediction y_hat for the targets y, as the course's
    helper computes it: 1 - explained / (residual + explained), both about the mean of y."""
    y = np.asarray(y)
    y_hat = np.asarray(y_hat)
    centre = np.mean(y)
    residual = np.sum((y - centre) ** 2)
    explained = np.sum((y_hat - centre) ** 2)
    return 1 - explained / (residual + explained)


def randomize_in_place(list1, list2, init=0):
    """Shuffle list1 and list2 in place with the same permutation (seeded by init)."""
    np.random.RandomState(init).shuffle(list1)
    np.random.RandomState(init).shuffle(list2)


def plot_points_regression(*args, **kwargs):
    """The course's first util.py plotted here; the grader draws nothing."""
    return None
