"""Benchmark: what removing a hand-in's leftovers costs (grader/sandbox/removal.py), the measurement its
bounds (MAX_ENTRIES, MAX_SECONDS) and warm.py's start-up budget come from.

Usage: .venv/bin/python bench/removal_cost.py [FOLDER ...]   (default: /tmp and /dev/shm)

In each folder (its file system: the disk for the base layer's scratch, tmpfs for bubblewrap's): a chain of
3,000 folders, and 200,000 names of empty files (hard links, as tests/leftover_attacks/many_files.py makes
them), each removed without bounds; then the 200,000 names with the default bounds, which stop at
MAX_ENTRIES or MAX_SECONDS, whichever comes first.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from grader.sandbox import removal

UNBOUNDED = removal.Bounds(entries=10**9, depth=10**9, seconds=3600.0)
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY


def chain(top: Path, levels: int) -> None:
    top.mkdir()
    fd = os.open(top, _DIRECTORY)
    for _ in range(levels - 1):
        os.mkdir("d", dir_fd=fd)
        deeper = os.open("d", _DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.close(fd)


def files(folder: Path, count: int) -> None:
    """Hard links, 50,000 to a file (ext4 allows 65,000): making 200,000 inodes took 60-80 s on ext4."""
    folder.mkdir()
    fd = os.open(folder, _DIRECTORY)
    source = ""
    for number in range(count):
        if number % 50_000 == 0:
            source = f"f{number}"
            os.close(os.open(source, os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
        else:
            os.link(source, f"f{number}", src_dir_fd=fd, dst_dir_fd=fd)
    os.close(fd)


def _timed(what: str, folder: Path, bounds: removal.Bounds) -> None:
    start = time.perf_counter()
    outcome = removal.remove(folder, bounds)
    seconds = time.perf_counter() - start
    stop = "all" if outcome.stop is None else f"stopped: {outcome.stop.value}"
    print(f"  {what}: {outcome.removed:,} entries in {seconds:.2f} s ({stop})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path, default=[Path("/tmp"), Path("/dev/shm")])
    for place in parser.parse_args().folders:
        with tempfile.TemporaryDirectory(dir=place) as scratch:
            print(place)
            chain(Path(scratch) / "chain", 3000)
            _timed("3,000-level chain", Path(scratch) / "chain", UNBOUNDED)
            files(Path(scratch) / "many", 200_000)
            _timed("200,000 files, unbounded", Path(scratch) / "many", UNBOUNDED)
            files(Path(scratch) / "many", 200_000)
            _timed("200,000 files, default bounds", Path(scratch) / "many", removal.Bounds())
            removal.remove(Path(scratch) / "many", UNBOUNDED)


if __name__ == "__main__":
    main()
