"""Leaves names that are not plain text: a newline, an escape sequence, bytes that are not UTF-8, a
leading dash, 255 bytes, "...".

Only the attack is here: the test puts a correct graph2 before it.
"""
import os
for _base in {os.getcwd().encode(), b"/tmp"}:
    for _name in (b"new\nline", b"\x1b[2Jclear", b"\xff\xfe not utf-8", b"-rf", b"x" * 255, b"..."):
        try:
            os.mkdir(_base + b"/" + _name)
            with open(_base + b"/" + _name + b"/" + _name, "wb") as _handle:
                _handle.write(b"x")
        except OSError:
            pass
