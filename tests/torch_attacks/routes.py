# A numpy hand-in of CS231n's affine layer that never spells the library's name: its worker has none
# (the grader decides so from its files). At import it tries every route to the library it knows of;
# the backward raises naming each one that got through, so full marks mean every route held. Its own
# derivation is right. Routes through the course's import finder are tried by copier.py: there the
# grader moves the hand-in to a worker with the library. (Run as __control__, it only defines the routes: a test runs each in a process.)
import ctypes
import glob
import importlib
import importlib.util
import os
import sys

import numpy as np

NAME = "to" + "rch"  # never the word itself
SITE = os.path.dirname(os.path.dirname(np.__file__))  # where numpy is: the installed packages' folder
REACHED = []


def attempt(label, route):
    try:
        route()
    except BaseException as exc:  # what held: its output, which the report carries
        print(f"HELD {label}: {type(exc).__name__}: {exc}")
    else:
        REACHED.append(label)
    for name in [n for n in sys.modules if n.split(".")[0] in (NAME, "func" + NAME)]:
        del sys.modules[name]


def by_name():
    importlib.import_module(NAME)


def finders_removed():
    sys.meta_path[:] = [f for f in sys.meta_path if "Course" not in type(f).__name__]
    sys.path_hooks[:] = [h for h in sys.path_hooks if "View" not in repr(h)]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    __import__(NAME)


def folder_on_path_again():
    sys.path.insert(0, SITE)
    importlib.invalidate_caches()
    importlib.import_module(NAME)


def spec_by_path():
    path = os.path.join(SITE, NAME, "__init__.py")
    spec = importlib.util.spec_from_file_location(
        NAME, path, submodule_search_locations=[os.path.dirname(path)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module
    spec.loader.exec_module(module)


def library_through_ctypes():
    (path,) = glob.glob(os.path.join(SITE, NAME, "lib", "lib" + NAME + "_cpu.so"))
    ctypes.CDLL(path)


def files_read():
    with open(os.path.join(SITE, NAME, "autograd", "__init__.py"), "rb") as source:
        source.read(1)


def its_companion():
    importlib.import_module("func" + NAME)


# Held by the worker alone: past the course's import finder, or a package no course provides.
AROUND = {
    "finders removed": finders_removed,
    "a spec made by hand": spec_by_path,
    "its library through ctypes": library_through_ctypes,
    "its files read": files_read,
    "its companion package": its_companion,
}
# Refused by the finder as the library itself, and told: the grader runs the hand-in again where the
# library is (copier.py).
THROUGH = {"by name": by_name, "its folder on sys.path again": folder_on_path_again}
ROUTES = {**AROUND, **THROUGH}
if __name__ != "__control__":
    for label, route in AROUND.items():
        attempt(label, route)


def affine_forward(x, w, b):
    return x.reshape(x.shape[0], -1) @ w + b, (x, w, b)


def affine_backward(dout, cache):
    if REACHED:
        raise RuntimeError("REACHED " + ", ".join(REACHED))
    x, w, _ = cache
    dx = (dout @ w.T).reshape(x.shape)
    return dx, x.reshape(x.shape[0], -1).T @ dout, dout.sum(axis=0)
