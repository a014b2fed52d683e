"""Plots drawn headless: matplotlib on its Agg backend (`plt.show()` draws nothing and returns), its config
and cache folder in the job's scratch folder, the only place the sandbox writes (so a `plt.savefig` lands
there too), seeded with the grader's prepared font list so that its first import does not build one.

The folder is made when matplotlib is first imported, not before: a hand-in that does not plot finds its
scratch folder empty, as every hand-in finds it (tests/attacks check that nothing is inherited).
"""

from __future__ import annotations

import importlib.abc
import os
import shutil
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

from grader.sandbox.plot_fonts import STAGED


class _BeforeMatplotlib(importlib.abc.MetaPathFinder):
    """Finds nothing; prepares matplotlib's folder the first time it is looked for."""

    def __init__(self, support_dir: Path, scratch_dir: Path) -> None:
        self._support_dir = support_dir
        self._scratch_dir = scratch_dir
        self._done = False

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name == "matplotlib" and not self._done:
            self._done = True
            _config_folder(self._support_dir, self._scratch_dir)
        return None


def headless(support_dir: Path, scratch_dir: Path) -> None:
    os.environ["MPLBACKEND"] = "Agg"
    sys.meta_path.insert(0, _BeforeMatplotlib(support_dir, scratch_dir))


def _config_folder(support_dir: Path, scratch_dir: Path) -> None:
    config = scratch_dir / STAGED
    try:
        config.mkdir(exist_ok=True)
        for path in (support_dir / STAGED).glob("fontlist-*.json"):
            shutil.copyfile(path, config / path.name)
    except OSError:
        return  # matplotlib then finds a folder of its own, and builds its font list there
    os.environ["MPLCONFIGDIR"] = str(config)
