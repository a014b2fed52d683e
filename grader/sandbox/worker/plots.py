"""Plots drawn headless: matplotlib on its Agg backend (`plt.show()` draws nothing and returns), its config
and cache folder in the job's scratch folder, the only place the sandbox writes (so a `plt.savefig` lands
there too), seeded with the grader's prepared font list so that the first import does not build one.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from grader.sandbox.plot_fonts import STAGED


def headless(support_dir: Path, scratch_dir: Path) -> None:
    os.environ["MPLBACKEND"] = "Agg"
    config = scratch_dir / STAGED
    try:
        config.mkdir(exist_ok=True)
        for path in (support_dir / STAGED).glob("fontlist-*.json"):
            shutil.copyfile(path, config / path.name)
    except OSError:
        return  # matplotlib then finds a folder of its own, and builds its font list there
    os.environ["MPLCONFIGDIR"] = str(config)
