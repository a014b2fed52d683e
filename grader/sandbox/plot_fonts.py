"""matplotlib's font list, built once per machine and matplotlib release, for every worker to copy.

matplotlib builds its font list on its first import where its config folder holds none: seconds of CPU,
paid by every hand-in whose scratch folder is fresh. The grader builds it once, outside the sandbox, in
its own cache ($XDG_CACHE_HOME/grader/matplotlib/VERSION); each job gets a copy among its support files
(never the original: the sandbox may write in its config folder) and the worker points MPLCONFIGDIR at
its scratch folder with the copy in it (worker/plots.py).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from importlib import metadata
from pathlib import Path

STAGED = ".matplotlib"  # the copy's folder among a job's support files
_BUILD_SECONDS = 120.0


@cache
def font_list() -> Path | None:
    """The folder holding the prepared font list; None where matplotlib is not installed or building it
    failed (each worker then builds its own, slowly, as matplotlib does)."""
    if importlib.util.find_spec("matplotlib") is None:
        return None
    try:
        version = metadata.version("matplotlib")
    except metadata.PackageNotFoundError:
        return None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    folder = Path(base) / "grader" / "matplotlib" / version
    if any(folder.glob("fontlist-*.json")):
        return folder
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        folder.parent.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=folder.parent))
        environment = {**os.environ, "MPLCONFIGDIR": str(building), "MPLBACKEND": "Agg"}
        subprocess.run(
            [sys.executable, "-I", "-c", "import matplotlib.font_manager"],
            env=environment,
            check=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=_BUILD_SECONDS,
        )
        try:
            building.rename(folder)  # atomic: another grader building at once loses the race harmlessly
        except OSError:
            shutil.rmtree(building, ignore_errors=True)
    return folder if any(folder.glob("fontlist-*.json")) else None


def stage(target: Path) -> None:
    """Copy the font list into a job's support folder `target`, where there is one."""
    prepared = font_list()
    if prepared is None:
        return
    staged = target / STAGED
    staged.mkdir(exist_ok=True)
    for path in prepared.glob("fontlist-*.json"):
        shutil.copyfile(path, staged / path.name)


if __name__ == "__main__":
    # A setup script builds the font list once, in the image, so that no grading pays for it:
    # `python -m grader.sandbox.plot_fonts` (nothing to do where matplotlib is not installed).
    font_list()
