"""Leaves a FIFO (opened for reading, it blocks until a writer comes) and a unix socket, in its scratch
folder and /tmp.

Only the attack is here: the test puts a correct graph2 before it.
"""
import os, socket
for _base in {os.getcwd(), "/tmp"}:
    try:
        os.mkfifo(os.path.join(_base, "fifo"))
        _server = socket.socket(socket.AF_UNIX)
        _server.bind(os.path.join(_base, "socket"))
        _server.close()
    except OSError:
        pass
