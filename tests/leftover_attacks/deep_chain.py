"""Leaves a chain of 3,000 folders, one descriptor at a time, everywhere it may write: its scratch
folder, TMPDIR, /tmp (under bubblewrap the sandbox's own). shutil.rmtree recursed into RecursionError.

Only the attack is here: the test puts a correct graph2 before it.
"""
import os
for _place in {os.getcwd(), os.environ.get("TMPDIR", "/tmp"), "/tmp"}:
    try:
        _fd = os.open(_place, os.O_RDONLY | os.O_DIRECTORY)
        os.mkdir("chain", dir_fd=_fd)
        _level = os.open("chain", os.O_RDONLY | os.O_DIRECTORY, dir_fd=_fd)
        os.close(_fd)
        for _ in range(2999):
            os.mkdir("d", dir_fd=_level)
            _deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=_level)
            os.close(_level)
            _level = _deeper
        os.close(_level)
    except OSError:
        pass
