from __future__ import annotations

from grader.cli import entry

entry()
