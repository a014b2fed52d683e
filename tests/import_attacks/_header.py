# Shared by every import attack (tests/test_import_walls.py puts it first): each variant runs at import;
# what it reached is told by graph2, which raises naming it. Nothing reached: full marks.
import glob
import importlib
import importlib.machinery
import importlib.util
import os
import sys

import numpy as np
import torch

SITE = os.path.dirname(os.path.dirname(np.__file__))  # where numpy is: the installed packages' folder
REACHED = []


def attempt(label, variant):
    loaded = set(sys.modules)
    try:
        variant()
    except BaseException as exc:  # what held, for the reader of --show-output
        print(f"HELD {label}: {type(exc).__name__}: {exc}", file=sys.stderr)
    else:
        REACHED.append(label)
    for name in set(sys.modules) - loaded:  # each variant on its own: nothing left for the next
        del sys.modules[name]


def without_the_finders():
    """The course's finder off sys.meta_path, its path hook off sys.path_hooks, their caches gone."""
    sys.meta_path[:] = [f for f in sys.meta_path if "Course" not in type(f).__name__]
    sys.path_hooks[:] = [h for h in sys.path_hooks if "View" not in repr(h)]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
