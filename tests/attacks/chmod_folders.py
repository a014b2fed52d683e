"""Attack: makes its scratch folder and /tmp read-only.

Only the attack is here: the test puts a correct graph2 before it.
"""
import os, tempfile
for folder in (os.getcwd(), tempfile.gettempdir(), "/tmp"):
    try:
        os.chmod(folder, 0o555)
    except OSError:
        pass
