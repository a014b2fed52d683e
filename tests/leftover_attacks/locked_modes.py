"""Leaves folders and files whose modes refuse their own owner: chmod 000, a folder without w, one
without x, one without r, a file chmod 000, nested.

Only the attack is here: the test puts a correct graph2 before it.
"""
import os
for _base in {os.getcwd(), "/tmp"}:
    try:
        _locked = os.path.join(_base, "locked")
        os.makedirs(os.path.join(_locked, "inner"))
        for _name in ("f", "inner/f"):
            with open(os.path.join(_locked, _name), "w") as _handle:
                _handle.write("x")
            os.chmod(os.path.join(_locked, _name), 0)
        os.chmod(os.path.join(_locked, "inner"), 0)
        os.chmod(_locked, 0)
        for _mode in (0o500, 0o300, 0o600, 0o100):
            _folder = os.path.join(_base, f"mode-{_mode:o}")
            os.mkdir(_folder)
            with open(os.path.join(_folder, "f"), "w") as _handle:
                _handle.write("x")
            os.chmod(_folder, _mode)
    except OSError:
        pass
