"""Leaves links a clean-up must remove, never follow: a loop, and links to the grader's package, the
job's other folders, the root, its parent and a folder of the grader's outside (the test's canary,
visible in the base layer).

Only the attack is here: the test puts a correct graph2 before it.
"""
import os
_targets = {"loop-a": "loop-b", "loop-b": "loop-a", "root": "/", "up": "..", "job": "/job",
            "canary": "__CANARY__", "canary-slash": "__CANARY__/", "here": "."}
try:
    import grader
    _targets["grader"] = os.path.dirname(grader.__file__)
except Exception:
    pass
_targets["submission"] = os.path.dirname(os.path.abspath(__file__))
for _base in {os.getcwd(), "/tmp"}:
    try:
        os.mkdir(os.path.join(_base, "links"))
        for _name, _target in _targets.items():
            os.symlink(_target, os.path.join(_base, "links", _name))
            os.symlink(_target, os.path.join(_base, f"link-{_name}"))
    except OSError:
        pass
