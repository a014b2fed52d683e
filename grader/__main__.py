from __future__ import annotations

from grader.launch import entry

entry()
