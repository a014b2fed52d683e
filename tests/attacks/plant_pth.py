"""Attack: plants a .pth file in the grader's site-packages, which every later python runs.

Only the attack is here: the test puts a correct graph2 before it.
"""
import site, sys, os
for folder in {*site.getsitepackages(), *[p for p in sys.path if p.endswith("site-packages")]}:
    try:
        with open(os.path.join(folder, "zz_grader_attack.pth"), "w") as f:
            f.write("import os; os.environ['GRADER_ATTACK_PTH'] = '1'\n")
    except OSError:
        pass
